#!/bin/bash
# Same sitting: Triton 3.6 and two tl builds (OLD, NEW: copies of build/ with libtl.so,
# bench/tl-bench-compile), interleaved: Triton, old, new, Triton, new, old, Triton.
#   OLD=/tmp/old NEW=/tmp/new OUT=/tmp/out bash bench/results/compile-time-2026-11-28c/same_sitting.sh
O=$(realpath "${OUT:-.}")
cd "$(dirname "$0")/../../.."
tlbench() {  # $1 label, $2 snapshot
  echo "## $1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/tl_$1.txt"
  LD_LIBRARY_PATH=$2 TL_CACHE_DIR=$(mktemp -d) "$2/bench/tl-bench-compile" --benchmark_filter='phases_' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >> "$O/tl_$1.txt" 2>&1
}
tri() {
  echo "## triton $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/triton.txt"
  python3 bench/triton_compile_time.py --repeats 7 --kernels rmsnorm,matmul,attention --targets gfx942,gfx950 >> "$O/triton.txt" 2>&1
}
tri
tlbench old "${OLD:?}"
tlbench new "${NEW:?}"
tri
tlbench new "$NEW"
tlbench old "$OLD"
tri
echo done > "$O/DONE"

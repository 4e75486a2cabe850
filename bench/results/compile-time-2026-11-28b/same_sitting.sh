#!/bin/bash
# Same sitting: Triton 3.6 and tl (TL_AMDGPU_REUSE_IR_PASSES=0, then the default), interleaved.
#   SNAP=/tmp/snap OUT=/tmp/out bash bench/results/compile-time-2026-11-28b/same_sitting.sh
O=$(realpath "${OUT:-.}")
S=$(realpath "${SNAP:?a copy of build/ (libtl.so, bench/tl-bench-compile)}")
cd "$(dirname "$0")/../../.."
tlbench() {  # $1 label, rest env
  local label=$1; shift
  echo "## $label $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/tl_$label.txt
  env "$@" LD_LIBRARY_PATH=$S TL_CACHE_DIR=$(mktemp -d) $S/bench/tl-bench-compile --benchmark_filter='phases_' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >> $O/tl_$label.txt 2>&1
}
tri() {
  echo "## triton $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/triton.txt
  python3 bench/triton_compile_time.py --repeats 7 --kernels rmsnorm,matmul,attention --targets gfx942,gfx950 >> $O/triton.txt 2>&1
}
tri
tlbench whole TL_AMDGPU_REUSE_IR_PASSES=0
tlbench shared
tri
tlbench shared
tlbench whole TL_AMDGPU_REUSE_IR_PASSES=0
tri
echo done > $O/DONE

#!/bin/bash
# Same sitting for the attention's schedules: Triton 3.6, OLD (2afa8af + the tmpfs link, 3277e8a's
# code), NEW (that + maxocc set aside past 256 VGPRs); Triton, old, new, Triton, new, old, Triton.
#   OLD=/tmp/h43-cmpold NEW=/tmp/h43-cmpnew OUT=dir bash same_sitting.sh   (run from the repository root)
O=$(realpath "${OUT:-.}")
tlbench() {
  echo "## $1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/tl_$1.txt"
  LD_LIBRARY_PATH=$2 TL_CACHE_DIR=$(mktemp -d) "$2/bench/tl-bench-compile" --benchmark_filter='phases_attention' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >> "$O/tl_$1.txt" 2>&1
}
tri() {
  echo "## triton $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/triton.txt"
  python3 bench/triton_compile_time.py --repeats 7 --kernels attention --targets gfx942,gfx950 >> "$O/triton.txt" 2>&1
}
tri; tlbench old "${OLD:-/tmp/h43-cmpold}"; tlbench new "${NEW:-/tmp/h43-cmpnew}"
tri; tlbench new "${NEW:-/tmp/h43-cmpnew}"; tlbench old "${OLD:-/tmp/h43-cmpold}"
tri
echo done > "$O/DONE"

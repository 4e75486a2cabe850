#!/bin/bash
# Same sitting for the persistent compile worker (issue 44): Triton 3.6, OLD (e5be35d: a fork of
# the application a compile), NEW (a persistent worker fed the lowered module as bitcode) and NEW
# with TL_COMPILE_IN_PROCESS=1 (no worker), in the order
#   Triton, old, new, in-process, Triton, in-process, new, old, Triton.
# tl: `tl-bench-compile --benchmark_filter=phases_`, 5 repetitions, a fresh cache each run;
# Triton: bench/triton_compile_time.py --repeats 7 --kernels rmsnorm,matmul,attention (a fresh cache,
# a warm process).
#   OLD=/work/wt-44old/build NEW=/work/wt-44new/build OUT=dir bash same_sitting.sh   (from the repository root)
# OLD and NEW: the build folders of two worktrees (e5be35d, and e5be35d with the change), so that
# other sessions' uncommitted changes reach neither.
O=$(realpath "${OUT:-.}")
tlbench() {  # name build [env...]
  local name=$1 build=$2; shift 2
  echo "## $name $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/tl_$name.txt"
  env "$@" LD_LIBRARY_PATH="$build" TL_CACHE_DIR="$(mktemp -d)" "$build/bench/tl-bench-compile" \
    --benchmark_filter='phases_' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    >> "$O/tl_$name.txt" 2>&1
}
tri() {
  echo "## triton $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$O/triton.txt"
  python3 bench/triton_compile_time.py --repeats 7 --kernels rmsnorm,matmul,attention --targets gfx942,gfx950 >> "$O/triton.txt" 2>&1
}
OLD=${OLD:-/work/wt-44old/build} NEW=${NEW:-/work/wt-44new/build}
tri; tlbench old "$OLD"; tlbench new "$NEW"; tlbench inproc "$NEW" TL_COMPILE_IN_PROCESS=1
tri; tlbench inproc "$NEW" TL_COMPILE_IN_PROCESS=1; tlbench new "$NEW"; tlbench old "$OLD"
tri
echo done > "$O/DONE"

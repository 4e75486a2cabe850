#!/bin/bash
# Same-sitting compile times: Triton 3.6 and tl (before, all, occupancy), interleaved.
#   OLD_BUILD: a build of the commit before this change (its libtl.so and bench/tl-bench-compile);
#   NEW_BUILD: a build with it; OUT: a folder for the raw output. Run from the source root.
# (As run on 2026-11-28, OLD_BUILD was an interim build of this change in which
# TL_AMDGPU_ALL_SCHEDULES=1 restored the old sequential choice exactly; with a build of the
# commit before, leave that variable out.)
O=OUT
tlbench() {  # $1 label, $2 libdir, rest env
  local label=$1 lib=$2; shift 2
  echo "## $label $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/tl_$label.txt
  env "$@" LD_LIBRARY_PATH=$lib TL_CACHE_DIR=$(mktemp -d) $lib/bench/tl-bench-compile --benchmark_filter='phases_' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >> $O/tl_$label.txt 2>&1
}
tri() {
  echo "## triton $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> $O/triton.txt
  python3 bench/triton_compile_time.py --repeats 7 --kernels rmsnorm,matmul,attention --targets gfx942,gfx950 >> $O/triton.txt 2>&1
}
tri
tlbench before OLD_BUILD TL_AMDGPU_ALL_SCHEDULES=1
tlbench all NEW_BUILD TL_AMDGPU_SCHEDULES=all
tlbench occupancy NEW_BUILD TL_AMDGPU_SCHEDULES=occupancy
tri
tlbench occupancy NEW_BUILD TL_AMDGPU_SCHEDULES=occupancy
tlbench all NEW_BUILD TL_AMDGPU_SCHEDULES=all
tlbench before OLD_BUILD TL_AMDGPU_ALL_SCHEDULES=1
tri
echo done > $O/DONE

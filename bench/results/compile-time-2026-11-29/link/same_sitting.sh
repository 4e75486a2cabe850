#!/bin/bash
# OLD = /tmp/h43-old, NEW = /tmp/h43-new: each a libtl.so and bench/tl-bench-compile of one snapshot;
# /tmp/h43-linkbench, /tmp/h43-linkfork: link_bench.cpp, link_in_fork_child.cpp built against libtl.so;
# /tmp/h43-rms.o: the RMSNorm row kernel for gfx942 (tl-cache ir KEY --llvm | llc-22 -O3 -mcpu=gfx942 -filetype=obj).
cd "$(dirname "$0")"
run(){ echo "## $1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> tl_$1.txt; LD_LIBRARY_PATH=/tmp/h43-$1 TL_CACHE_DIR=$(mktemp -d) /tmp/h43-$1/bench/tl-bench-compile --benchmark_filter='phases_' --benchmark_repetitions=5 --benchmark_report_aggregates_only=true >> tl_$1.txt 2>&1; }
lf(){ echo "## $1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> link_$1.txt; LD_LIBRARY_PATH=/tmp/h43-$1 /tmp/h43-linkbench /tmp/h43-rms.o 200 >> link_$1.txt; LD_LIBRARY_PATH=/tmp/h43-$1 /tmp/h43-linkfork /tmp/h43-rms.o 100 >> link_$1.txt; }
lf old; lf new; lf new; lf old
run old; run new; run new; run old
echo done > DONE

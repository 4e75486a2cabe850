#!/usr/bin/env bash
# On the GPU machine (issue 41, tl::sort / tl::topk / tl::histogram): sort_test (every sort,
# topk and histogram case against std::stable_sort and C++ counts, on the device) and the
# conformance suite's Core.Sort / Core.Topk / Core.Histogram, under compute-sanitizer's
# racecheck and synccheck where it is installed (the network's shared-memory exchanges and
# the histogram's atomics), then the MoE top-k routing benchmark beside Triton.
#   OUT=... bash bench/gpu_sort.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
{
  timeout 600 /tmp/tl/bin/sort_test --gtest_brief=1; echo "sort_test exit $?"
  timeout 600 /tmp/tl/bin/conformance_test --gtest_filter='Core.Sort:Core.Topk:Core.Histogram' --gtest_brief=1
  echo "conformance exit $?"
  if command -v compute-sanitizer >/dev/null; then
    for tool in racecheck synccheck memcheck; do
      timeout 900 compute-sanitizer --tool $tool --error-exitcode 9 /tmp/tl/bin/sort_test --gtest_brief=1 \
        --gtest_filter='Sort.OneDimensionalDefaults:Topk.AlongDimZero:Topk.EveryKeyTypePackedOrNot:Histogram.*' 2>&1 | tail -5
      echo "sort_test under $tool exit ${PIPESTATUS[0]}"
    done
  fi
} 2>&1 | tee "$OUT/sort_gpu.txt" | grep -a "exit\|FAILED\|PASSED\|ERROR SUMMARY\|RACECHECK SUMMARY"
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
cd /tmp/tl/bench
PYTHONUNBUFFERED=1 python3 run_moe_topk_bench.py --tl /tmp/tl/bin/tl-bench-moe-topk --out "$OUT" ||
  echo "moe topk bench failed"

#!/usr/bin/env bash
# On the GPU machine (issue 44, launches): programmatic dependent launch and the cached
# launch path. The tests on the GPU (tutorial 11 with launch_pdl, the cached path, FP8
# decode with its dependent combine), gdc_test under compute-sanitizer; then host time per
# cached launch by phase (tl-bench-launch) and the FP8 decode benchmark with and without
# PDL (TL_NO_PDL=1 launches the combine plainly).
#   OUT=... bash bench/gpu_launch.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
run() {  # name, command...
  echo "== $*" >> "$OUT/gpu_tests.log"
  timeout 600 "$@" >> "$OUT/gpu_tests.log" 2>&1
  echo "$* exit $?" | tee -a "$OUT/gpu_tests.log"
}
run /tmp/tl/bin/gdc_test --gtest_brief=1
run /tmp/tl/bin/cached_launch_test --gtest_brief=1
run /tmp/tl/bin/conformance_test --gtest_brief=1 --gtest_filter='Tutorial11*:Tutorial01*'
run /tmp/tl/bin/fp8_decode_test --gtest_brief=1
run /tmp/tl/bin/jit_cache_test --gtest_brief=1
run /tmp/tl/bin/multi_gpu_test --gtest_brief=1
grep -a "FAILED\|PASSED\|SKIPPED \]" "$OUT/gpu_tests.log" | sort | uniq -c | sort -rn | head -20
if [[ -n $SAN ]]; then
  for tool in memcheck racecheck synccheck; do
    echo "== compute-sanitizer --tool $tool gdc_test" >> "$OUT/sanitizer.log"
    timeout 600 "$SAN" --tool $tool --error-exitcode 99 /tmp/tl/bin/gdc_test --gtest_brief=1 >> "$OUT/sanitizer.log" 2>&1
    echo "$tool gdc_test exit $?" | tee -a "$OUT/sanitizer.log"
  done
  grep -a "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/sanitizer.log"
fi
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
/tmp/tl/bin/tl-bench-launch --json "$OUT/launch.json" | tee "$OUT/launch.txt"
cd /tmp/tl/bench
mkdir -p "$OUT/fp8_decode_pdl" "$OUT/fp8_decode_no_pdl"
PYTHONUNBUFFERED=1 python3 run_fp8_decode_bench.py --tl /tmp/tl/bin/tl-bench-fp8-decode --out "$OUT/fp8_decode_pdl" ||
  echo "fp8 decode bench failed"
TL_NO_PDL=1 PYTHONUNBUFFERED=1 python3 run_fp8_decode_bench.py --tl /tmp/tl/bin/tl-bench-fp8-decode \
  --out "$OUT/fp8_decode_no_pdl" || echo "fp8 decode bench (no PDL) failed"

#!/usr/bin/env bash
# On the GPU machine (issue 38, the language core): the language suites on the GPU (while
# loops and the spin lock, compiler hints, pointers as values, the conformance suite of
# Triton's tutorials and language tests, and the suites they touch), the new ones under
# compute-sanitizer memcheck, racecheck and synccheck, then the GEMM and attention samples
# beside Triton (no-regression figures).
#   OUT=... bash bench/gpu_language.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for t in ${TL_GPU_TESTS:-while_test random_test hints_test pointer_values_test conformance_test semantics_test trace_errors_test \
         misuse_catalogue_test pipeline_test matmul_tutorial_test attention_test dot_test ops_test}; do
  echo "== $t" >> "$OUT/gpu_tests.log"
  timeout 300 /tmp/tl/bin/$t --gtest_brief=1 >> "$OUT/gpu_tests.log" 2>&1
  echo "$t exit $?" | tee -a "$OUT/gpu_tests.log"
done
grep -a "FAILED\|PASSED\|SKIPPED \]" "$OUT/gpu_tests.log" | sort | uniq -c | sort -rn | head -20
for tool in memcheck racecheck synccheck; do
  for t in ${TL_SANITIZE_TESTS:-while_test pointer_values_test hints_test}; do
    echo "== compute-sanitizer --tool $tool $t" >> "$OUT/sanitizer.log"
    timeout 300 "$SAN" --tool $tool --error-exitcode 99 /tmp/tl/bin/$t --gtest_brief=1 >> "$OUT/sanitizer.log" 2>&1
    echo "$tool $t exit $?" | tee -a "$OUT/sanitizer.log"
  done
done
grep -a "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/sanitizer.log"
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
cd /tmp/tl/bench
PYTHONUNBUFFERED=1 python3 run_gemm_bench.py --tl /tmp/tl/bin/tl-bench-gemm --sizes 4096 --out "$OUT" || echo "gemm bench failed"
PYTHONUNBUFFERED=1 python3 run_attention_sample_bench.py --tl /tmp/tl/bin/tl-bench-attention-sample --out "$OUT" ||
  echo "attention bench failed"

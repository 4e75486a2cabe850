#!/usr/bin/env bash
# On the GPU machine (issue 40, math and dot precision): the math library's accuracy on the
# device (math_test: every function's max ulp against double references, the precise
# exp/log/log2/sin/cos, the target's exp2 and the fast_ variants; the sweep of every f32
# of the peak binades with TL_MATH_EXHAUSTIVE=1; math_f64_test, the f64 functions), tl::dot's input_precision
# (dot_precision_test: ieee within an f32 FMA chain's bound, tf32 the default, tf32x3 near
# ieee; the dot suites), then the GELU-tanh / SwiGLU benchmark beside Triton.
#   OUT=... bash bench/gpu_math.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
TL_MATH_EXHAUSTIVE=1 timeout 600 /tmp/tl/bin/math_test 2>&1 | tee "$OUT/math_gpu.txt" | grep -a "\[ math \]\|FAILED\|PASSED"
# f64 math on the device (tl's f64 compositions: exp log log2 tanh sigmoid expm1 log1p sinh cosh)
[[ -x /tmp/tl/bin/math_f64_test ]] &&
  timeout 300 /tmp/tl/bin/math_f64_test 2>&1 | tee "$OUT/math_f64_gpu.txt" | grep -a "\[ math \]\|FAILED\|PASSED"
for t in ${TL_GPU_TESTS:-fp_fusion_test dot_precision_test dot_test warpgroup_dot_test conformance_test}; do
  echo "== $t" >> "$OUT/gpu_tests.log"
  timeout 300 /tmp/tl/bin/$t --gtest_brief=1 >> "$OUT/gpu_tests.log" 2>&1
  echo "$t exit $?" | tee -a "$OUT/gpu_tests.log"
done
grep -a "DotPrecision\|relative to sum" "$OUT/gpu_tests.log"
grep -a "FAILED\|PASSED\|SKIPPED \]" "$OUT/gpu_tests.log" | sort | uniq -c | sort -rn | head -20
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
cd /tmp/tl/bench
PYTHONUNBUFFERED=1 python3 run_activation_bench.py --tl /tmp/tl/bin/tl-bench-activation --out "$OUT" ||
  echo "activation bench failed"

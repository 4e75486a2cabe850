#!/usr/bin/env bash
# On the GPU machine (issue 43, samples/moe and tl::dot_scaled): moe_test (the MXFP4
# quantization, the layer against the double reference, the tuned configuration, on the
# device), dot_scaled_test and mx_formats_test, the conformance suite's Tutorial10 cases,
# the sample itself at gpt-oss-20b's layer (its own checks), then the MoE and tutorial-10
# benchmark beside Triton's tl.dot_scaled and a bf16 grouped GEMM (bench/run_moe_bench.py).
#   OUT=... bash bench/gpu_moe.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
{
  timeout 900 /tmp/tl/bin/moe_test --gtest_brief=1; echo "moe_test exit $?"
  timeout 900 /tmp/tl/bin/dot_scaled_test --gtest_brief=1; echo "dot_scaled_test exit $?"
  timeout 600 /tmp/tl/bin/mx_formats_test --gtest_brief=1; echo "mx_formats_test exit $?"
  timeout 600 /tmp/tl/bin/conformance_test --gtest_filter='Tutorial10.*' --gtest_brief=1; echo "conformance exit $?"
  timeout 1200 /tmp/tl/bin/tl-sample-moe --format both; echo "tl-sample-moe exit $?"
} 2>&1 | tee "$OUT/moe_gpu.txt" | grep -a "exit\|FAILED\|PASSED\|WRONG\|TFLOP"
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
cd /tmp/tl/bench
PYTHONUNBUFFERED=1 python3 run_moe_bench.py --tl /tmp/tl/bin/tl-bench-moe --out "$OUT" 2>&1 | tee "$OUT/moe_bench.txt" ||
  echo "moe bench failed"

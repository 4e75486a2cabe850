#!/usr/bin/env bash
# On the GPU machine (issue 41, Triton's tutorial 09): the conformance suite's Tutorial09
# cases on the device (tl's transcription against double references at ragged sizes) and
# descriptor_test, then
# the persistent-matmul benchmark beside Triton 3.6's same kernels
# (bench/run_persistent_matmul_bench.py: persistent, descriptor persistent with and without
# EPILOGUE_SUBTILE, TMA persistent with host descriptors, f16, 8192x8192 at K = 1024 and
# 4096, fixed configurations both sides).
#   OUT=... bash bench/gpu_persistent_matmul.sh            (TL_SKIP_BENCH=1: the tests only)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
{
  timeout 600 /tmp/tl/bin/conformance_test --gtest_filter='Tutorial09.*' --gtest_brief=1
  echo "conformance Tutorial09 exit $?"
  # tensor descriptors on the device: made in the kernel and on the host, NaN padding, edges
  timeout 600 /tmp/tl/bin/descriptor_test --gtest_brief=1
  echo "descriptor_test exit $?"
  # the CUtensorMap of host descriptors against the driver's cuTensorMapEncodeTiled
  timeout 600 /tmp/tl/bin/tensor_map_test --gtest_brief=1
  echo "tensor_map_test exit $?"
  # descriptor loads through TMA (launch_options::tma): boxes at every corner, every swizzle,
  # TMA stores, the pipeliner's TMA stages (tutorial 09's kernel, a loop's own stages);
  # each case alone (a faulting copy poisons the context; a copy that never lands hangs its
  # wait)
  for t in BoxesAtRaggedNegativeAndOutsideCorners NanFill OneAndThreeDims StoresAtRaggedNegativeAndOutsideCorners \
           PipelinedBoxesSummedAcrossARow Tutorial09PersistentMatmul; do
    timeout 120 /tmp/tl/bin/tma_descriptor_test --gtest_filter="TmaDescriptor.$t" --gtest_brief=1
    echo "tma_descriptor_test $t exit $?"
  done
} 2>&1 | tee "$OUT/persistent_matmul_tests.txt" | grep -a "exit\|FAILED\|PASSED"
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
cd /tmp/tl/bench
PYTHONUNBUFFERED=1 python3 run_persistent_matmul_bench.py --tl /tmp/tl/bin/tl-bench-persistent-matmul --out "$OUT" 2>&1 |
  tee "$OUT/persistent_matmul.txt" || echo "persistent matmul bench failed"

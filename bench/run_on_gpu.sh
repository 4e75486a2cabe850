#!/usr/bin/env bash
# On the GPU machine: unpack the bundle, run the operation tests on the GPU, then the
# side-by-side benchmarks (TL_BENCHES: "rmsnorm fp8_quant" by default, or any of rmsnorm, fp8_quant,
# pipeline, amd_quality, tune, gemm, fp8_decode, attention, attention_sample, fuzz_differential).
# Logs and results go to $OUT (the device tool's folder) or bench/results.
set -uo pipefail
OUT=${OUT:-bench/results}
mkdir -p /tmp/tl "$OUT" && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
date -u +%Y-%m-%dT%H:%MZ >> "$OUT/machine.txt"
for t in ${TL_GPU_TESTS:-ops_test trace_errors_test misuse_catalogue_test driver_test fp8_quant_test}; do
  /tmp/tl/bin/$t --gtest_brief=1 2>&1 | tee -a "$OUT/gpu_tests.log" | tail -3
done
# TL_GPU_SANITIZE="memcheck racecheck synccheck": the same suites again under each of
# compute-sanitizer's tools (shared memory, barriers and shuffles are where a race
# hides that a passing test can miss); TL_SANITIZE_FILTER narrows the tests (gtest filter).
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for tool in ${TL_GPU_SANITIZE:-}; do
  for t in ${TL_GPU_TESTS:-ops_test trace_errors_test misuse_catalogue_test driver_test fp8_quant_test}; do
    echo "== compute-sanitizer --tool $tool $t" | tee -a "$OUT/sanitizer.log"
    timeout ${TL_SANITIZE_TIMEOUT:-300} "$SAN" --tool "$tool" --error-exitcode 99 /tmp/tl/bin/$t --gtest_brief=1 \
      ${TL_SANITIZE_FILTER:+--gtest_filter=$TL_SANITIZE_FILTER} >> "$OUT/sanitizer.log" 2>&1
    echo "exit $?" | tee -a "$OUT/sanitizer.log"
    tail -4 "$OUT/sanitizer.log" | grep -E "ERROR SUMMARY|PASSED|FAILED" || true
  done
done
[[ ${TL_SKIP_BENCH:-0} == 1 ]] && exit 0
BENCHES=" ${TL_BENCHES:-rmsnorm fp8_quant} "
rc=0
if [[ $BENCHES == *" rmsnorm "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_gpu_bench.py --tl /tmp/tl/bin/tl-bench-gpu --out "$OUT" || rc=1
fi
if [[ $BENCHES == *" pipeline "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_pipeline_bench.py --tl /tmp/tl/bin/tl-bench-pipeline --out "$OUT" || rc=1
fi
# The AMD code-quality suite's kernels, tl beside Triton (TL_BENCHES=amd_quality).
if [[ $BENCHES == *" amd_quality "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/amd_quality/gpu_bench.py --tl /tmp/tl/bin/tl-amd-quality --out "$OUT" || rc=1
fi
# tl::autotune on the RMSNorm forward beside @triton.autotune (TL_BENCHES=tune).
if [[ $BENCHES == *" tune "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_tune_bench.py --tl /tmp/tl/bin/tl-bench-tune --out "$OUT" || rc=1
fi
# samples/gemm beside Triton's tutorial matmul (mma.sync and wgmma) and torch (TL_BENCHES=gemm).
if [[ $BENCHES == *" gemm "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_gemm_bench.py --tl /tmp/tl/bin/tl-bench-gemm --out "$OUT" || rc=1
fi
# samples/fp8_decode beside the anchor's Triton kernel and torch's SDPA (TL_BENCHES=fp8_decode;
# TL_DECODE_ARGS: extra tl-bench-fp8-decode arguments, e.g. "--config 64,3,4").
if [[ $BENCHES == *" fp8_decode "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_fp8_decode_bench.py --tl /tmp/tl/bin/tl-bench-fp8-decode --out "$OUT" \
    --tl-args "${TL_DECODE_ARGS:-}" || rc=1
fi
# Triton's tutorial-06 attention forward transcribed into tl beside Triton's (mma.sync and default)
# and torch's SDPA (TL_BENCHES=attention; TL_ATTENTION_ARGS: extra tl-bench-attention arguments).
if [[ $BENCHES == *" attention "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_attention_bench.py --tl /tmp/tl/bin/tl-bench-attention --out "$OUT" \
    --tl-args "${TL_ATTENTION_ARGS:-}" || rc=1
fi
# samples/attention's forward and backward beside Triton's tutorial-06 kernels (mma.sync and
# default) and torch's SDPA (TL_BENCHES=attention_sample).
if [[ $BENCHES == *" attention_sample "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_attention_sample_bench.py --tl /tmp/tl/bin/tl-bench-attention-sample \
    --out "$OUT" || rc=1
fi
# Random tile programs (tests/fuzz/differential) run on the GPU and the CPU against one
# reference (TL_BENCHES=fuzz_differential; TL_FUZZ_PROGRAMS, default 2000).
if [[ $BENCHES == *" fuzz_differential "* ]]; then
  TL_FUZZ_BIN=/tmp/tl/bin/tl-fuzz-differential TL_FUZZ_DEVICE=cuda OUT="$OUT" \
    bash /tmp/tl/bench/fuzz_differential.sh "${TL_FUZZ_PROGRAMS:-2000}" || rc=1
fi
if [[ $BENCHES == *" fp8_quant "* ]]; then
  PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/run_fp8_quant_bench.py --tl /tmp/tl/bin/tl-bench-fp8-quant --out "$OUT" || rc=1
fi
exit $rc

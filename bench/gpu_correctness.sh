#!/usr/bin/env bash
# On the GPU machine (issue 45): the correctness suites on the GPU, the semantics tests
# under compute-sanitizer memcheck (the negative-division kernels that once read 16-byte
# vectors past x's end among them), a run-time zero step trapping in a process of its
# own, and the differential tester's random programs on the GPU against the reference.
#   OUT=... bash bench/gpu_correctness.sh [fuzz programs]
set -uo pipefail
OUT=${OUT:-bench/results}
mkdir -p /tmp/tl "$OUT" && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%Y-%m-%dT%H:%MZ; } | tee "$OUT/machine.txt"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
for t in ${TL_GPU_TESTS:-semantics_test ops_test trace_errors_test misuse_catalogue_test pipeline_test shared_test async_copy_test dot_test attention_test matmul_tutorial_test}; do
  echo "== $t" >> "$OUT/gpu_tests.log"
  timeout 300 /tmp/tl/bin/$t --gtest_brief=1 >> "$OUT/gpu_tests.log" 2>&1
  echo "$t exit $?" | tee -a "$OUT/gpu_tests.log"
done
echo "== zero step, alone" >> "$OUT/gpu_tests.log"
TL_TEST_GPU_TRAP=1 timeout 120 /tmp/tl/bin/semantics_test --gtest_filter='Loops.ZeroStep*' >> "$OUT/gpu_tests.log" 2>&1
echo "zero step exit $?" | tee -a "$OUT/gpu_tests.log"
grep -a "zero step on the GPU" "$OUT/gpu_tests.log"
for tool in memcheck racecheck; do
  echo "== compute-sanitizer --tool $tool semantics_test" >> "$OUT/sanitizer.log"
  timeout 300 "$SAN" --tool $tool --error-exitcode 99 /tmp/tl/bin/semantics_test --gtest_brief=1 >> "$OUT/sanitizer.log" 2>&1
  echo "$tool exit $?" | tee -a "$OUT/sanitizer.log"
done
grep -a "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/sanitizer.log"
TL_FUZZ_BIN=/tmp/tl/bin/tl-fuzz-differential TL_FUZZ_DEVICE=cuda OUT="$OUT" bash /tmp/tl/bench/fuzz_differential.sh "${1:-1000}"
echo "fuzz exit $?"

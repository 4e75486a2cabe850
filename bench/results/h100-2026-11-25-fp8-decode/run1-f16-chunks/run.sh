set -u
mkdir -p /tmp/tl && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt; date -u +%Y-%m-%dT%H:%MZ >> $OUT/machine.txt
(cd /tmp/tl/bench && timeout 240 python3 run_fp8_decode_bench.py --tl /tmp/tl/bin/tl-bench-fp8-decode --out $OUT > $OUT/bench.txt 2>&1)
for t in fp8_decode_test dot_test; do timeout 90 /tmp/tl/bin/$t --gtest_brief=1 >> $OUT/gpu_tests.log 2>&1; echo "$t exit $?" >> $OUT/gpu_tests.log; done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool fp8_decode_test" >> $OUT/sanitizer.log
  timeout 70 $SAN --tool $tool --error-exitcode 99 /tmp/tl/bin/fp8_decode_test --gtest_brief=1 --gtest_filter="*Groups*:*F16*:*Empty*" >> $OUT/sanitizer.log 2>&1
  echo "exit $?" >> $OUT/sanitizer.log
done
tail -8 $OUT/bench.txt; grep -E "PASSED|FAILED|exit" $OUT/gpu_tests.log; grep -E "ERROR SUMMARY|exit|==" $OUT/sanitizer.log

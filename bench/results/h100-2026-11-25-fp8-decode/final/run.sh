set -u
mkdir -p /tmp/tl && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
B=/tmp/tl/bin/tl-bench-fp8-decode
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt; date -u +%Y-%m-%dT%H:%MZ >> $OUT/machine.txt
timeout 60 /tmp/tl/bin/fp8_decode_test --gtest_brief=1 > $OUT/gpu_tests.log 2>&1; echo "fp8_decode_test exit $?" >> $OUT/gpu_tests.log
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck synccheck; do
  echo "== compute-sanitizer --tool $tool fp8_decode_test" >> $OUT/sanitizer.log
  timeout 60 $SAN --tool $tool --error-exitcode 99 /tmp/tl/bin/fp8_decode_test --gtest_brief=1 --gtest_filter="*Repeated*:*F16*:*Empty*" >> $OUT/sanitizer.log 2>&1
  echo "exit $?" >> $OUT/sanitizer.log
done
(cd /tmp/tl/bench && timeout 200 python3 run_fp8_decode_bench.py --tl $B --out $OUT > $OUT/bench.txt 2>&1)
timeout 60 $B --merge off --repeats 100 --json $OUT/tl_merge_off.json > /dev/null 2>&1
timeout 30 $B --merge on --repeats 100 --shape 1,32768,64,8,128 --json $OUT/tl_merge_on_b1.json > /dev/null 2>&1
tail -8 $OUT/bench.txt; grep -E "PASSED|FAILED|exit" $OUT/gpu_tests.log; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit|==" $OUT/sanitizer.log
set -u
mkdir -p /tmp/tl && [ -x /tmp/tl/bin/fp8_decode_test ] || tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
B=/tmp/tl/bin/tl-bench-fp8-decode
timeout 60 $B --merge off --repeats 100 --json $OUT/tl_merge_off.json > /dev/null 2>&1
timeout 30 $B --merge on --repeats 100 --shape 1,32768,64,8,128 --json $OUT/tl_merge_on_b1.json > /dev/null 2>&1
timeout 250 /tmp/tl/bin/fp8_decode_test > $OUT/gpu_tests.log 2>&1; echo "fp8_decode_test exit $?" >> $OUT/gpu_tests.log
grep -E "OK|FAILED|PASSED|exit" $OUT/gpu_tests.log | tail -16

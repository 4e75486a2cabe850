#!/usr/bin/env bash
# Session 13's GPU run on one lent 2x H200 host, from the repository root with the bundle
# (bench/make_bundle.sh) in .bundle: the bundle unpacked once (bench/gpu_env.sh), then two
# lanes side by side, GPU 0 and GPU 1 (CUDA_VISIBLE_DEVICES). PART=1: the GPU tests the
# session's changes touch on GPU 0, the attention sample's tl side and the MoE bench on GPU 1.
# PART=2: Triton's attention sample (default and mma.sync) on GPU 0, the persistent matmul,
# activation and fp8_decode benches on GPU 1. Logs and JSON go to $OUT (tarred by the caller).
set -uo pipefail
source bench/gpu_env.sh
B=/tmp/tl/bin
lane() { (export CUDA_VISIBLE_DEVICES=$1; shift; "$@") ; }
tests() {
  for t in moe_test dot_scaled_test mx_formats_test attention_sample_test autotune_test descriptor_test math_f64_test \
           fp_fusion_test pipeline_test matmul_tutorial_test hand_staged_attention_test gemm_test fp8_decode_test \
           warpgroup_dot_test attention_test gdc_test math_test; do
    echo "== $t"; timeout 240 $B/$t --gtest_brief=1 2>&1 | tail -40; echo "$t exit ${PIPESTATUS[0]}"
  done > "$OUT/gpu_tests.log" 2>&1
  timeout 200 $B/conformance_test --gtest_brief=1 > "$OUT/conformance.log" 2>&1; echo "conformance exit $?" >> "$OUT/gpu_tests.log"
}
if [[ ${PART:-1} == 1 ]]; then
  lane 0 tests &
  lane 1 bash -c "cd /tmp/tl/bench && timeout 300 $B/tl-bench-attention-sample --json $OUT/tl_attention_sample.json > $OUT/tl_att.log 2>&1;
                  PYTHONUNBUFFERED=1 timeout 240 python3 run_moe_bench.py --tl $B/tl-bench-moe --repeats 10 --out $OUT > $OUT/moe_bench.log 2>&1" &
  wait
  grep -a "exit\|FAILED" "$OUT/gpu_tests.log" | grep -v "exit 0" ; grep -ac "exit 0" "$OUT/gpu_tests.log"
else
  lane 0 bash -c "cd /tmp/tl/bench && PYTHONUNBUFFERED=1 timeout 500 python3 run_attention_sample_bench.py --out $OUT > $OUT/triton_att.log 2>&1" &
  lane 1 bash -c "cd /tmp/tl/bench && PYTHONUNBUFFERED=1 timeout 200 python3 run_persistent_matmul_bench.py --tl $B/tl-bench-persistent-matmul --repeats 20 --out $OUT > $OUT/pm.log 2>&1;
                  PYTHONUNBUFFERED=1 timeout 120 python3 run_activation_bench.py --tl $B/tl-bench-activation --out $OUT > $OUT/act.log 2>&1;
                  for m in on off; do timeout 60 $B/tl-bench-fp8-decode --shape 1,32768,64,8,128 --split 16 --split 24 --split 32 --split 64 --merge \$m --repeats 200 --json $OUT/b1_merge_\$m.json > $OUT/fp8_\$m.log 2>&1; done;
                  timeout 120 $B/tl-bench-fp8-decode --repeats 200 --json $OUT/fp8_auto.json > $OUT/fp8_auto.log 2>&1" &
  wait
fi
ls "$OUT"

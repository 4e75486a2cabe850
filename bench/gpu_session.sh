#!/usr/bin/env bash
# A session's GPU run on a lent H200 host, from the repository root with the bundle
# (bench/make_bundle.sh) in .bundle: two lanes side by side on GPU 0 and GPU 1
# (CUDA_VISIBLE_DEVICES) of a 2-GPU host, or one after the other on a 1-GPU host (the
# lanes then take turns through a lock, so no timing shares the GPU). Three calls of under
# ten minutes each (written in session 15, whose device budget was spent before it ran):
#   PART=1  lane 0: the TMA path's first run (tutorial 09 conformance, descriptor and tensor-map
#           tests, each TMA case alone), then the attention and warpgroup tests;
#           lane 1: the attention sample's tl side, then moe_test and dot_scaled_test.
#   PART=2  lane 0: Triton's attention sample (run_attention_sample_bench.py, both modes);
#           lane 1: the math tests (f64 ulp figures printed), conformance, gemm, pipeline, then
#           the activation bench three times (medians of medians).
#   PART=3  lane 0: the persistent matmul bench (tl's tma_persistent_tma rows beside Triton);
#           lane 1: the MoE bench, then compute-sanitizer on the TMA, attention-backward and
#           MoE cases.
# Logs and JSON go to $OUT.   Usage (device tool, carry .bundle):  PART=1 OUT=$OUT bash bench/gpu_session.sh
set -uo pipefail
source bench/gpu_env.sh
B=/tmp/tl/bin
NGPU=$(nvidia-smi -L | grep -c '^GPU')
if [[ $NGPU -ge 2 ]]; then
  lane() { (export CUDA_VISIBLE_DEVICES=$1; shift; "$@") ; }
else
  lane() { (export CUDA_VISIBLE_DEVICES=0; shift; flock /tmp/tl-gpu-lane.lock "$@") ; }
fi
t() { local limit=$1 name=$2; shift 2; echo "== $name $*"; timeout "$limit" "$B/$name" --gtest_brief=1 "$@" 2>&1 | tail -60; echo "$name $* exit ${PIPESTATUS[0]}"; }
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
case ${PART:-1} in
1)
  lane 0 bash -c "$(declare -f t); B=$B
    { t 120 conformance_test --gtest_filter='Tutorial09.*'; t 120 descriptor_test; t 60 tensor_map_test
      for c in BoxesAtRaggedNegativeAndOutsideCorners NanFill OneAndThreeDims StoresAtRaggedNegativeAndOutsideCorners PipelinedBoxesSummedAcrossARow Tutorial09PersistentMatmul; do
        t 60 tma_descriptor_test --gtest_filter=TmaDescriptor.\$c; done
      t 150 attention_sample_test; t 60 attention_test; t 60 hand_staged_attention_test; t 60 warpgroup_dot_test
      t 30 compile_worker_test; t 30 gdc_test; } > $OUT/lane0_tests.log 2>&1" &
  lane 1 bash -c "$(declare -f t); B=$B; cd /tmp/tl/bench
    timeout 280 $B/tl-bench-attention-sample --json $OUT/tl_attention_sample.json > $OUT/tl_att.log 2>&1; echo \"tl att exit \$?\" >> $OUT/tl_att.log
    { TL_PRINT_AUTOTUNING=1 t 200 moe_test; t 90 dot_scaled_test; } > $OUT/lane1_tests.log 2>&1" &
  wait ;;
2)
  lane 0 bash -c "cd /tmp/tl/bench && PYTHONUNBUFFERED=1 timeout 520 python3 run_attention_sample_bench.py --out $OUT > $OUT/triton_att.log 2>&1" &
  lane 1 bash -c "$(declare -f t); B=$B
    { t 60 math_test; t 90 math_f64_test; t 40 fp_fusion_test; t 40 random_test; t 40 dot_precision_test
      t 150 conformance_test; t 60 gemm_test; t 60 pipeline_test; } > $OUT/lane1_math.log 2>&1
    cd /tmp/tl/bench; for r in 1 2 3; do mkdir -p $OUT/act\$r; PYTHONUNBUFFERED=1 timeout 60 python3 run_activation_bench.py --tl $B/tl-bench-activation --out $OUT/act\$r > $OUT/act\$r.log 2>&1; done" &
  wait ;;
3)
  lane 0 bash -c "cd /tmp/tl/bench && PYTHONUNBUFFERED=1 timeout 400 python3 run_persistent_matmul_bench.py --tl $B/tl-bench-persistent-matmul --repeats 20 --out $OUT > $OUT/pm.log 2>&1" &
  lane 1 bash -c "cd /tmp/tl/bench && TL_PRINT_AUTOTUNING=1 PYTHONUNBUFFERED=1 timeout 240 python3 run_moe_bench.py --tl $B/tl-bench-moe --repeats 10 --out $OUT > $OUT/moe_bench.log 2>&1
    for x in 'racecheck tma_descriptor_test TmaDescriptor.BoxesAtRaggedNegativeAndOutsideCorners' \
             'racecheck tma_descriptor_test TmaDescriptor.PipelinedBoxesSummedAcrossARow' \
             'synccheck tma_descriptor_test TmaDescriptor.Tutorial09PersistentMatmul' \
             'racecheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations' \
             'synccheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations' \
             'racecheck moe_test MoeSample.Mxfp4LayerAgainstDoubles'; do
      set -- \$x; echo \"== \$x\"; timeout 100 $SAN --tool \$1 --error-exitcode 99 $B/\$2 --gtest_brief=1 --gtest_filter=\$3 2>&1 | tail -8; echo \"exit \${PIPESTATUS[0]}\"
    done > $OUT/sanitizer.log 2>&1" &
  wait ;;
esac
ls "$OUT"

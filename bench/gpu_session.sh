#!/usr/bin/env bash
# A session's GPU run on one lent H200, from the repository root with the bundle
# (bench/make_bundle.sh) in .bundle: three calls of under ten minutes each, which together
# with the machine's start fit a session's 30 minutes of device time.
#   PART=1  correctness only, three streams at once (nothing here is timed): the TMA path
#           (tutorial 09 conformance, descriptor and tensor-map tests, each TMA case in its own
#           process), attention, warpgroup, MoE and dot_scaled tests, the math tests (their f64
#           ulp figures printed), conformance, gemm, pipeline; then compute-sanitizer racecheck /
#           synccheck / memcheck on the TMA, attention-backward and MoE cases.
#   PART=2  timing, one thing at a time: the attention sample, tl beside Triton's default
#           (wgmma) build (TL_TRITON_MODES=default) and torch.
#   PART=3  timing, one thing at a time: the activation bench three times (medians of medians),
#           the MoE bench, dQ with its A operands staged (issue 42's experiment), then the
#           persistent matmul (tutorial 09) at one size.
#   PART=4  a second bundle's check: the TMA, attention, MoE and compile-worker tests at once
#           (racecheck and memcheck of the attention backward beside them),
#           the TMA probe's second run, then the MoE bench alone (MOE_S seconds).
# On a host with more GPUs the streams of PART=1 still share GPU 0 (correctness only).
# Logs and JSON go to $OUT.   Usage (device tool, carry .bundle):  PART=1 OUT=$OUT bash bench/gpu_session.sh
set -uo pipefail
source bench/gpu_env.sh
B=/tmp/tl/bin
R=$PWD
export CUDA_VISIBLE_DEVICES=0
t() { local limit=$1 name=$2; shift 2; echo "== $name $*"; timeout "$limit" "$B/$name" --gtest_brief=1 "$@" 2>&1 | tail -60; echo "$name $* exit ${PIPESTATUS[0]}"; }
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
san() { local tool=$1 bin=$2 filter=$3; echo "== $tool $bin $filter"; timeout ${SAN_S:-150} "$SAN" --tool "$tool" --error-exitcode 99 "$B/$bin" --gtest_brief=1 --gtest_filter="$filter" 2>&1 | tail -8; echo "$tool $bin $filter exit ${PIPESTATUS[0]}"; }
case ${PART:-1} in
1)
  { t 120 conformance_test --gtest_filter='Tutorial09.*'; t 120 descriptor_test; t 60 tensor_map_test
    for c in BoxesAtRaggedNegativeAndOutsideCorners NanFill OneAndThreeDims StoresAtRaggedNegativeAndOutsideCorners PipelinedBoxesSummedAcrossARow Tutorial09PersistentMatmul; do
      t 60 tma_descriptor_test --gtest_filter=TmaDescriptor.$c; done
    t 60 attention_test; t 60 hand_staged_attention_test; t 60 warpgroup_dot_test; t 30 compile_worker_test; t 30 gdc_test
    san racecheck tma_descriptor_test TmaDescriptor.BoxesAtRaggedNegativeAndOutsideCorners
    san racecheck tma_descriptor_test TmaDescriptor.PipelinedBoxesSummedAcrossARow
    san synccheck tma_descriptor_test TmaDescriptor.Tutorial09PersistentMatmul; } > "$OUT/stream1.log" 2>&1 &
  { t 200 attention_sample_test; TL_PRINT_AUTOTUNING=1 t 200 moe_test; t 90 dot_scaled_test; } > "$OUT/stream2.log" 2>&1 &
  { t 60 math_test; t 90 math_f64_test; t 40 fp_fusion_test; t 40 random_test; t 40 dot_precision_test
    t 150 conformance_test --gtest_filter=-Tutorial09.*; t 60 gemm_test; t 60 pipeline_test
    san racecheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations
    san synccheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations
    san racecheck moe_test MoeSample.Mxfp4LayerAgainstDoubles; } > "$OUT/stream3.log" 2>&1 &
  wait
  grep -ah "exit" "$OUT"/stream*.log | grep -v "exit 0$" ; echo "exit 0: $(cat "$OUT"/stream*.log | grep -ac 'exit 0$')" ;;
2)
  PYTHONUNBUFFERED=1 TL_TRITON_MODES=default timeout 580 python3 bench/run_attention_sample_bench.py \
    --tl $B/tl-bench-attention-sample --out "$OUT" > "$OUT/attention.log" 2>&1; echo "attention exit $?"
  tail -30 "$OUT/attention_sample.md" 2>/dev/null ;;
3)
  for r in 1 2 3; do mkdir -p "$OUT/act$r"; PYTHONUNBUFFERED=1 timeout 60 python3 bench/run_activation_bench.py --tl $B/tl-bench-activation --out "$OUT/act$r" > "$OUT/act$r.log" 2>&1; echo "act$r exit $?"; done
  TL_PRINT_AUTOTUNING=1 PYTHONUNBUFFERED=1 timeout 180 python3 bench/run_moe_bench.py --tl $B/tl-bench-moe --repeats 10 --out "$OUT" > "$OUT/moe_bench.log" 2>&1; echo "moe exit $?"
  (cd bench/results/sm90-2026-11-29-attention-bwd-regs/dq_staged_a && OUT=$OUT JSON=dq_staged_d64.json BENCH=$R/bench ROUNDS=3 timeout 90 python3 ../time_bwd.py . > "$OUT/dq_staged.log" 2>&1); echo "dq staged exit $?"
  TL_PM_SIZES=8192x8192x4096 PYTHONUNBUFFERED=1 timeout 150 python3 bench/run_persistent_matmul_bench.py --tl $B/tl-bench-persistent-matmul --repeats 10 --out "$OUT" > "$OUT/pm.log" 2>&1; echo "pm exit $?"
  cat "$OUT"/act*/activation.md 2>/dev/null | grep -i "swiglu\|gelu"; tail -20 "$OUT/persistent_matmul.md" 2>/dev/null ;;
4)
  # A session's second bundle: its fixes' tests at once (correctness only), then the MoE
  # bench alone with what is left of the ten minutes.
  { t 150 tma_descriptor_test; t 60 tensor_map_test; t 120 conformance_test --gtest_filter='Tutorial09.*'
    san racecheck tma_descriptor_test TmaDescriptor.PipelinedBoxesSummedAcrossARow
    (cd bench/results/h200-2026-11-29-session16/tma_probe && PROBE=2 timeout 60 python3 tma_probe.py)
    t 60 compile_worker_test; t 90 warpgroup_dot_test; t 60 attention_test; } > "$OUT/stream1.log" 2>&1 &
  { t 240 attention_sample_test; t 150 moe_test; t 60 dot_scaled_test; } > "$OUT/stream2.log" 2>&1 &
  { SAN_S=280 san racecheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations; } > "$OUT/stream3.log" 2>&1 &
  { SAN_S=280 san memcheck attention_sample_test AttentionSample.BackwardAtTheBenchConfigurations; } > "$OUT/stream4.log" 2>&1 &
  wait
  grep -ah "exit" "$OUT"/stream*.log | grep -v "exit 0$"; echo "exit 0: $(cat "$OUT"/stream*.log | grep -ac 'exit 0$')"
  grep -a "corner" "$OUT/stream1.log"
  PYTHONUNBUFFERED=1 timeout ${MOE_S:-240} python3 bench/run_moe_bench.py --tl $B/tl-bench-moe --repeats 10 --out "$OUT" > "$OUT/moe_bench.log" 2>&1; echo "moe exit $?"
  tail -20 "$OUT/moe.md" 2>/dev/null ;;
esac
ls "$OUT"

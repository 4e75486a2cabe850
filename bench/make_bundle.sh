#!/usr/bin/env bash
# Builds what runs on the GPU machine into .bundle/tl.tar.xz: libtl with LLVM linked
# statically (one stripped library), the test and benchmark programs, the samples and
# the Python harness. The GPU machine has no LLVM and no network.
#   bash bench/make_bundle.sh          then, on the GPU machine:   bash bench/run_on_gpu.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${TL_BUNDLE_BUILD:-$ROOT/build-bundle}
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTL_STATIC_LLVM=ON -DTL_BUILD_TESTS=ON >/dev/null
TESTS=(ops_test trace_errors_test numeric_test driver_test misuse_catalogue_test jit_cache_test cache_test rmsnorm_test
       fp8_quant_test shared_test buffer_ops_test async_copy_test pipeline_test nvidia_report_test rmsnorm_tune_test
       mx_formats_test dot_scaled_test moe_test
       dot_test warpgroup_dot_test gemm_test fp8_decode_test attention_test matmul_tutorial_test cpu_launch_test
       attention_sample_test semantics_test tl-fuzz-differential while_test
       hints_test pointer_values_test conformance_test random_test math_test math_f64_test fp_fusion_test dot_precision_test shape_ops_test
       cache_modifier_test inline_asm_test combine_test sort_test descriptor_test tensor_map_test tma_descriptor_test tiles_5d_test hand_staged_attention_test
       multi_gpu_test compile_worker_test compile_profile_test gdc_test cached_launch_test autotune_test)
cmake --build "$BUILD" -j"$(nproc)" --target tl tl-bench-gpu tl-bench-launch tl-bench-fp8-quant tl-bench-activation tl-bench-moe-topk tl-bench-moe tl-bench-persistent-matmul tl-bench-pipeline tl-amd-quality tl-bench-tune \
  tl-bench-gemm tl-bench-fp8-decode tl-bench-attention tl-bench-attention-sample tl-sample-attention tl-sample-rmsnorm tl-sample-vector_add tl-sample-fp8_quant tl-sample-gemm tl-sample-fp8_decode tl-sample-moe tl-cache "${TESTS[@]}"
STAGE=$ROOT/.bundle/stage
rm -rf "$STAGE" && mkdir -p "$STAGE"/{bin,lib,bench}
cp "$BUILD"/libtl.so "$STAGE"/lib/
for t in "${TESTS[@]}"; do cp "$BUILD"/tests/"$t" "$STAGE"/bin/; done
cp "$BUILD"/bench/tl-bench-gpu "$BUILD"/bench/tl-bench-launch "$BUILD"/bench/tl-bench-fp8-quant "$BUILD"/bench/tl-bench-activation "$BUILD"/bench/tl-bench-moe-topk "$BUILD"/bench/tl-bench-moe "$BUILD"/bench/tl-bench-pipeline \
  "$BUILD"/bench/tl-amd-quality "$BUILD"/bench/tl-bench-tune "$BUILD"/bench/tl-bench-gemm "$BUILD"/bench/tl-bench-fp8-decode \
  "$BUILD"/bench/tl-bench-attention "$BUILD"/bench/tl-bench-attention-sample "$BUILD"/bench/tl-bench-persistent-matmul "$BUILD"/samples/tl-sample-* \
  "$BUILD"/tools/tl-cache "$STAGE"/bin/
# the few shared libraries the GPU machine's Ubuntu may lack
cp -L /usr/lib/x86_64-linux-gnu/libfmt.so.9 /usr/lib/x86_64-linux-gnu/libxxhash.so.0 "$STAGE"/lib/
strip "$STAGE"/lib/libtl.so "$STAGE"/bin/*
cp "$ROOT"/bench/run_gpu_bench.py "$ROOT"/bench/run_fp8_quant_bench.py "$ROOT"/bench/run_pipeline_bench.py \
  "$ROOT"/bench/nvidia_report.py "$ROOT"/bench/run_tune_bench.py "$ROOT"/bench/run_gemm_bench.py \
  "$ROOT"/bench/run_fp8_decode_bench.py "$ROOT"/bench/fp8_decode_sweep.py "$ROOT"/bench/fp8_decode_triton.py \
  "$ROOT"/bench/run_attention_bench.py "$ROOT"/bench/run_attention_sample_bench.py "$ROOT"/bench/run_activation_bench.py "$ROOT"/bench/run_moe_topk_bench.py "$ROOT"/bench/run_persistent_matmul_bench.py "$ROOT"/bench/run_moe_bench.py "$ROOT"/bench/fuzz_differential.sh "$STAGE"/bench/
cp "$ROOT"/tests/fuzz/regressions/differential_seeds.txt "$STAGE"/bench/
mkdir -p "$STAGE"/data && cp "$ROOT"/tests/data/*.json "$STAGE"/data/  # (TL_TEST_DATA_DIR=/tmp/tl/data)
mkdir -p "$STAGE"/bench/amd_quality && cp "$ROOT"/bench/amd_quality/*.py "$STAGE"/bench/amd_quality/
tar -C "$STAGE" -cJf "$ROOT"/.bundle/tl.tar.xz .
rm -rf "$STAGE"
ls -la "$ROOT"/.bundle/tl.tar.xz

// gfx950 (MI350/MI355X, CDNA4): 160 KiB of LDS per workgroup, 12- and 16-byte global
// and buffer loads to LDS, the same v_cvt_*_fp8/bf8 instructions converting the OCP
// formats (e4m3fn, e5m2) instead of the FNUZ ones, and v_permlane32_swap, which
// exchanges the halves of a wave64 without going through the LDS crossbar (ds_bpermute).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
constexpr llvm::ArrayRef<llvm::Type*> kNoTypes;  // non-overloaded intrinsics

gpu::TargetCapabilities gfx950_capabilities() {
  gpu::TargetCapabilities c = cdna_capabilities("gfx950");
  // LLVM: FeatureAddressableLocalMemorySize163840 (gfx942 has ...65536); the MI350
  // series has 160 KiB of LDS per CU, and one workgroup may allocate all of it.
  c.shared_bytes_per_program = 160 * 1024;
  c.static_shared_limit = 160 * 1024;
  // Banks: LLVM 22 still gives gfx950 FeatureLDSBankCount32, so 32 x 4 bytes stays.
  // CDNA4's larger LDS may come with more banks (64?); not verified against the CDNA4
  // ISA guide, so this follows LLVM.
  // FeatureGFX950Insts adds global_load_lds_dwordx3/dwordx4 (LLVM 22 selects
  // llvm.amdgcn.global.load.lds with sizes 12 and 16 here, and on no earlier chip), and
  // the same widths for buffer_load ... lds (buffer_load_dwordx4 ... lds assembles for
  // gfx950 only).
  c.direct_to_shared_widths = {1, 2, 4, 12, 16};
  c.buffer_load_to_shared = true;
  c.buffer_copy_widths = {4, 12, 16};
  // ds_read_b64_tr_b8 / _b16 (llvm.amdgcn.ds.read.tr8.b64 / tr16.b64, FeatureGFX950Insts).
  c.transposed_shared_read_bits = {8, 16};
  c.hardware_fp8 = {DType::f8e4m3fn, DType::f8e5m2};
  // MFMAs: gfx942's (its FP8 ones now read the OCP formats: AMD's CDNA4 notes, Triton's
  // MfmaGroup table), plus the double-rate 16-bit and i8 forms (8 and 16 a lane) and
  // f8f6f4 at K = 128 / 64 (32 FP8 a lane; format codes 0 = e4m3, 1 = e5m2 in cbsz/blgp,
  // scales 0: the unscaled v_mfma_f32_*_f8f6f4).
  c.matrix_instructions = cdna_mfma_16bit_and_f32(false);
  for (auto& mi : cdna3_mfma_fp8(DType::f8e4m3fn, DType::f8e5m2)) c.matrix_instructions.push_back(mi);
  using D = DType;
  for (auto mi : {mfma("v_mfma_i32_16x16x32_i8", "llvm.amdgcn.mfma.i32.16x16x32.i8", 16, 16, 32, D::i8, D::i8, D::i32),
                  mfma("v_mfma_i32_32x32x16_i8", "llvm.amdgcn.mfma.i32.32x32x16.i8", 32, 32, 16, D::i8, D::i8, D::i32),
                  mfma("v_mfma_f32_16x16x32_bf16", "llvm.amdgcn.mfma.f32.16x16x32.bf16", 16, 16, 32, D::bf16, D::bf16, D::f32),
                  mfma("v_mfma_f32_32x32x16_bf16", "llvm.amdgcn.mfma.f32.32x32x16.bf16", 32, 32, 16, D::bf16, D::bf16, D::f32),
                  mfma("v_mfma_f32_16x16x32_f16", "llvm.amdgcn.mfma.f32.16x16x32.f16", 16, 16, 32, D::f16, D::f16, D::f32),
                  mfma("v_mfma_f32_32x32x16_f16", "llvm.amdgcn.mfma.f32.32x32x16.f16", 32, 32, 16, D::f16, D::f16, D::f32),
                  mfma("v_mfma_i32_16x16x64_i8", "llvm.amdgcn.mfma.i32.16x16x64.i8", 16, 16, 64, D::i8, D::i8, D::i32),
                  mfma("v_mfma_i32_32x32x32_i8", "llvm.amdgcn.mfma.i32.32x32x32.i8", 32, 32, 32, D::i8, D::i8, D::i32)})
    c.matrix_instructions.push_back(mi);
  for (D a : {D::f8e4m3fn, D::f8e5m2})
    for (D b : {D::f8e4m3fn, D::f8e5m2}) {
      c.matrix_instructions.push_back(mfma("v_mfma_f32_16x16x128_f8f6f4",
                                           "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32", 16, 16, 128, a, b,
                                           D::f32));
      c.matrix_instructions.push_back(mfma("v_mfma_f32_32x32x64_f8f6f4",
                                           "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v8i32", 32, 32, 64, a, b,
                                           D::f32));
    }
  // Block-scaled (tl::dot_scaled; CDNA4 ISA, v_mfma_scale_f32_*_f8f6f4; LLVM 22's
  // llvm.amdgcn.mfma.scale.*): the same instructions with an e8m0 scale a lane for A and
  // for B (each the scale of its row and of one 32 of k). FP8 x FP8 in any pair, and
  // e2m1 x e2m1, whose 32 values a lane are 16 bytes (<4 x i32>): k counts bytes there.
  // (A mixed FP4 x FP8 pair is upcast: its operands' bytes disagree on K.)
  auto scaled = [&](const char* name, const char* intrinsic, int m, int k, D a, D b) {
    gpu::MatrixInstruction mi = mfma(name, intrinsic, m, m, k, a, b, D::f32);
    mi.scaled = true;
    c.matrix_instructions.push_back(mi);
  };
  for (D a : {D::f8e4m3fn, D::f8e5m2})
    for (D b : {D::f8e4m3fn, D::f8e5m2}) {
      scaled("v_mfma_scale_f32_16x16x128_f8f6f4", "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v8i32.v8i32", 16, 128,
             a, b);
      scaled("v_mfma_scale_f32_32x32x64_f8f6f4", "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v8i32.v8i32", 32, 64, a,
             b);
    }
  scaled("v_mfma_scale_f32_16x16x128_f8f6f4", "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4.v4i32.v4i32", 16, 64,
         D::f4e2m1, D::f4e2m1);
  scaled("v_mfma_scale_f32_32x32x64_f8f6f4", "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4.v4i32.v4i32", 32, 32,
         D::f4e2m1, D::f4e2m1);
  return c;
}

class Gfx950 final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx950"; }
  uint32_t buffer_cache_bits(cache_modifier c, bool load) const override { return cdna3_buffer_cache_bits(c, load); }
  const gpu::TargetCapabilities& capabilities() const override {
    static const gpu::TargetCapabilities c = gfx950_capabilities();
    return c;
  }
  llvm::Value* swap_wave_halves(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* lane) const override {
    // permlane32.swap(old, src): lanes 32..63 of the first result take src's lanes 0..31,
    // lanes 0..31 of the second take old's lanes 32..63.
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_permlane32_swap, kNoTypes,
                                       {v, v, b.getFalse(), b.getFalse()});
    llvm::Value* upper = b.CreateExtractValue(r, 0);
    llvm::Value* lower = b.CreateExtractValue(r, 1);
    return b.CreateSelect(b.CreateICmpULT(lane, b.getInt32(32)), lower, upper);
  }
};
}  // namespace

const ArchOverlay& gfx950_overlay() {
  static const Gfx950 o;
  return o;
}

}  // namespace tl::amd

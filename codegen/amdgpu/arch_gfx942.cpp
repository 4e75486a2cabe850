// gfx942 (MI300X, CDNA3): the CDNA baseline (arch.cpp: 64 KiB LDS, global_load_lds_
// {ubyte,ushort,dword}, no 16-byte direct-to-LDS load) plus hardware converts for the
// FNUZ FP8 formats (e4m3fnuz, e5m2fnuz; bias 8/16, one NaN at 0x80), which are what
// v_cvt_*_fp8/bf8 mean on this chip (LLVM: FeatureFP8ConversionInsts).
#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {

gpu::TargetCapabilities gfx942_capabilities() {
  gpu::TargetCapabilities c = cdna_capabilities("gfx942");
  c.hardware_fp8 = {DType::f8e4m3fnuz, DType::f8e5m2fnuz};
  // MFMAs: gfx90a's 16-bit and f32 ones, i8 at 8 a lane (the 4-a-lane forms are gone),
  // FP8 in the FNUZ formats (fp8 = e4m3fnuz, bf8 = e5m2fnuz).
  c.matrix_instructions = cdna_mfma_16bit_and_f32(false);
  for (auto& mi : cdna3_mfma_fp8(DType::f8e4m3fnuz, DType::f8e5m2fnuz)) c.matrix_instructions.push_back(mi);
  c.matrix_instructions.push_back(
      mfma("v_mfma_i32_16x16x32_i8", "llvm.amdgcn.mfma.i32.16x16x32.i8", 16, 16, 32, DType::i8, DType::i8, DType::i32));
  c.matrix_instructions.push_back(
      mfma("v_mfma_i32_32x32x16_i8", "llvm.amdgcn.mfma.i32.32x32x16.i8", 32, 32, 16, DType::i8, DType::i8, DType::i32));
  return c;
}

class Gfx942 final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx942"; }
  uint32_t buffer_cache_bits(cache_modifier c, bool load) const override { return cdna3_buffer_cache_bits(c, load); }
  const gpu::TargetCapabilities& capabilities() const override {
    static const gpu::TargetCapabilities c = gfx942_capabilities();
    return c;
  }
};
}  // namespace

const ArchOverlay& gfx942_overlay() {
  static const Gfx942 o;
  return o;
}

}  // namespace tl::amd

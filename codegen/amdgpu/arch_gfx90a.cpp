// gfx90a (MI200, CDNA2): the CDNA baseline (arch.cpp): 64 KiB LDS, global loads to LDS
// of 1, 2 and 4 bytes, no FP8 hardware (FP8 goes through the portable software path),
// MFMAs for f16, bf16 (the 1k forms), f32 and i8; none for FP8.
#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
class Gfx90a final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx90a"; }
  const gpu::TargetCapabilities& capabilities() const override {
    static const gpu::TargetCapabilities c = [] {
      gpu::TargetCapabilities c = cdna_capabilities("gfx90a");
      c.matrix_instructions = cdna_mfma_16bit_and_f32(true);
      // i8 at 4 a lane (one dword): removed from gfx940 on (LLVM 22 selects them for
      // gfx90a only).
      c.matrix_instructions.push_back(
          mfma("v_mfma_i32_32x32x8i8", "llvm.amdgcn.mfma.i32.32x32x8i8", 32, 32, 8, DType::i8, DType::i8, DType::i32));
      c.matrix_instructions.push_back(mfma("v_mfma_i32_16x16x16i8", "llvm.amdgcn.mfma.i32.16x16x16i8", 16, 16, 16,
                                           DType::i8, DType::i8, DType::i32));
      return c;
    }();
    return c;
  }
};
}  // namespace

const ArchOverlay& gfx90a_overlay() {
  static const Gfx90a o;
  return o;
}

}  // namespace tl::amd

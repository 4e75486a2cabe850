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
  return c;
}

class Gfx942 final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx942"; }
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

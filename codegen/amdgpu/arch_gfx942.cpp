// gfx942 (MI300X, CDNA3): hardware converts for the FNUZ FP8 formats (e4m3fnuz, e5m2fnuz;
// bias 8/16, one NaN at 0x80), which are what v_cvt_*_fp8/bf8 mean on this chip.
#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
class Gfx942 final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx942"; }
  bool hardware_fp8(DType fmt) const override {
    return fmt == DType::f8e4m3fnuz || fmt == DType::f8e5m2fnuz;
  }
};
}  // namespace

const ArchOverlay& gfx942_overlay() {
  static const Gfx942 o;
  return o;
}

}  // namespace tl::amd

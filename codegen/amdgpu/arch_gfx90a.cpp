// gfx90a (MI200, CDNA2): the CDNA baseline (arch.cpp): 64 KiB LDS, global loads to LDS
// of 1, 2 and 4 bytes, no FP8 hardware (FP8 goes through the portable software path).
#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
class Gfx90a final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx90a"; }
  const gpu::TargetCapabilities& capabilities() const override {
    static const gpu::TargetCapabilities c = cdna_capabilities("gfx90a");
    return c;
  }
};
}  // namespace

const ArchOverlay& gfx90a_overlay() {
  static const Gfx90a o;
  return o;
}

}  // namespace tl::amd

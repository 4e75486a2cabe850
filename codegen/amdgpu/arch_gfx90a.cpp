// gfx90a (MI200, CDNA2): no FP8 hardware; FP8 goes through the portable software path.
#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
class Gfx90a final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx90a"; }
};
}  // namespace

const ArchOverlay& gfx90a_overlay() {
  static const Gfx90a o;
  return o;
}

const ArchOverlay& overlay_for(const std::string& arch) {
  static const ArchOverlay base;
  if (arch == "gfx90a") return gfx90a_overlay();
  if (arch == "gfx940" || arch == "gfx941" || arch == "gfx942") return gfx942_overlay();
  if (arch == "gfx950") return gfx950_overlay();
  return base;
}

}  // namespace tl::amd

// Per-architecture overlays: what differs between AMD chips lives in one small file
// per chip (arch_gfx90a.cpp, arch_gfx942.cpp, arch_gfx950.cpp) instead of `if (arch ==`
// scattered through the lowering. The base class is the conservative CDNA default.
#pragma once

#include <string>

#include "tl/dtype.hpp"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace tl::amd {

class ArchOverlay {
 public:
  virtual ~ArchOverlay() = default;
  virtual const char* name() const { return "amdgcn"; }
  // FP8 formats the chip converts in hardware (v_cvt_f32_fp8/bf8, v_cvt_pk_fp8/bf8_f32):
  // the FNUZ formats on gfx942, the OCP formats on gfx950, none before.
  virtual bool hardware_fp8(DType fmt) const { return false; }
  // The value of lane (lane ^ 32) in a wave64 when the chip has something cheaper than
  // ds_bpermute (gfx950: v_permlane32_swap); nullptr otherwise.
  virtual llvm::Value* swap_wave_halves(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* lane) const {
    return nullptr;
  }
};

// The overlay of `arch` ("gfx942"); unknown chips get the base class.
const ArchOverlay& overlay_for(const std::string& arch);

// Defined one per overlay file.
const ArchOverlay& gfx90a_overlay();
const ArchOverlay& gfx942_overlay();
const ArchOverlay& gfx950_overlay();

}  // namespace tl::amd

// Per-architecture overlays: what differs between AMD chips lives in one small file
// per chip (arch_gfx90a.cpp, arch_gfx942.cpp, arch_gfx950.cpp) instead of `if (arch ==`
// scattered through the lowering: the chip's capability table (codegen/gpu/
// capabilities.hpp: LDS budget, direct-to-LDS widths, buffer descriptor flags, FP8) and
// the few code sequences only it has. The base class is the conservative CDNA default.
#pragma once

#include <string>
#include <vector>

#include "codegen/gpu/capabilities.hpp"
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
  // What the chip can do; the base is the conservative default (see
  // default_capabilities). hardware_fp8 there drives the FP8 hooks (v_cvt_f32_fp8/bf8,
  // v_cvt_pk_fp8/bf8_f32): the FNUZ formats on gfx942, the OCP formats on gfx950.
  virtual const gpu::TargetCapabilities& capabilities() const;
  // The value of lane (lane ^ 32) in a wave64 when the chip has something cheaper than
  // ds_bpermute (gfx950: v_permlane32_swap); nullptr otherwise.
  virtual llvm::Value* swap_wave_halves(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* lane) const {
    return nullptr;
  }
};

// One MFMA for the table (wave64: a lane holds m * k / 64 elements of A and of B).
gpu::MatrixInstruction mfma(std::string name, std::string intrinsic, int m, int n, int k, DType a, DType b,
                            DType acc);
// The MFMAs gfx90a, gfx942 and gfx950 share: f16 and bf16 (the 1k forms) at 32x32x8 and
// 16x16x16, f32 at 32x32x2 and 16x16x4. `gfx90a` picks the mnemonics' older spelling.
std::vector<gpu::MatrixInstruction> cdna_mfma_16bit_and_f32(bool gfx90a);
// gfx942's FP8 MFMAs (16x16x32, 32x32x16, every pair of fp8/bf8) for the formats the
// chip reads the bytes as: `fp8` (e4m3) and `bf8` (e5m2).
std::vector<gpu::MatrixInstruction> cdna3_mfma_fp8(DType fp8, DType bf8);

// The conservative default for a chip tl has no table for (RDNA, or a CDNA chip newer
// than this file): 64 KiB of LDS, 16-byte accesses, nothing direct-to-LDS, no buffer
// descriptor flags (so no buffer instructions), no FP8 hardware.
gpu::TargetCapabilities default_capabilities(const std::string& arch, int wave_size);
// The table the chip files start from: the facts gfx90a, gfx942 and gfx950 share.
gpu::TargetCapabilities cdna_capabilities(const std::string& arch);

// The overlay of `arch` ("gfx942", "gfx942:sramecc+"); unknown chips get the base class.
const ArchOverlay& overlay_for(const std::string& arch);
// The capability table of `arch`: its overlay's, or default_capabilities(arch,
// wave_size) for a chip without one.
gpu::TargetCapabilities capabilities_for(const std::string& arch, int wave_size);

// Defined one per overlay file.
const ArchOverlay& gfx90a_overlay();
const ArchOverlay& gfx942_overlay();
const ArchOverlay& gfx950_overlay();

}  // namespace tl::amd

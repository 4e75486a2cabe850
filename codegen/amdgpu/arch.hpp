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
#include "tl/opcode.hpp"

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
  // The cache-policy operand (LLVM's aux) of a raw buffer load or store for tl's cache
  // modifier `c` (docs/language.md, "Cache modifiers"). The base is gfx90a's: glc (bit 0)
  // and slc (bit 1) both for a streaming access, what LLVM gives the global access Triton
  // marks nontemporal; .cv and .wt the volatile bit (31), handled by LLVM as it handles a
  // volatile global access (glc, and a wait for it), as Triton marks those volatile.
  virtual uint32_t buffer_cache_bits(cache_modifier c, bool load) const;
};

// gfx942's and gfx950's buffer cache bits, Triton's table (sc0 bit 0, nt bit 1, sc1 bit 4):
// loads .cg/.cs/.lu sc0 nt, .cv sc0 sc1; stores .cs sc0 nt, .wt sc0 sc1; .ca/.wb/.cg
// (store) none.
uint32_t cdna3_buffer_cache_bits(cache_modifier c, bool load);

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

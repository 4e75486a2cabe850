// The CDNA facts every chip shares, and the lookup from a chip name to its overlay.
// Each fact names where it was checked: the ISA guides, LLVM's AMDGPU target (the
// subtarget features LLVM 22 gives each processor, read with MCSubtargetInfo, and what
// its assembler and instruction selection accept), or Triton's AMD backend.
#include "codegen/amdgpu/arch.hpp"

#include <fmt/format.h>

namespace tl::amd {

gpu::TargetCapabilities default_capabilities(const std::string& arch, int wave_size) {
  gpu::TargetCapabilities c;
  c.arch = arch;
  c.wave_size = wave_size;
  // The largest flat workgroup LLVM's AMDGPU target accepts
  // ("amdgpu-flat-work-group-size" is capped at 1024, AMDGPUUsage).
  c.max_threads_per_program = 1024;
  // 256 VGPRs per lane per SIMD before CDNA2 (GCN, CDNA1's arch VGPRs; RDNA's wave64).
  c.registers_per_lane = 256;
  c.registers_per_thread = 256;
  // 64 KiB of LDS per workgroup (LLVM: FeatureAddressableLocalMemorySize65536 on gfx90a,
  // gfx942 and RDNA; MI200/MI300 ISA guides: 64 KiB LDS per CU), all of it static: AMD
  // has no separate dynamic limit, a launch's dynamic LDS shares the same 64 KiB.
  c.shared_bytes_per_program = 64 * 1024;
  c.static_shared_limit = 64 * 1024;
  // 32 banks of 4 bytes (LLVM: FeatureLDSBankCount32; AMD's "Avoiding LDS Bank
  // Conflicts on AMD GPUs Using CK-Tile" says the same for the MI series).
  c.shared_banks = 32;
  c.shared_bank_bytes = 4;
  // global_load_dwordx4 / global_store_dwordx4.
  c.max_global_access_bytes = 16;
  return c;
}

gpu::TargetCapabilities cdna_capabilities(const std::string& arch) {
  // CDNA runs wave64 only (LLVM: FeatureWavefrontSize64 on every gfx9 processor).
  gpu::TargetCapabilities c = default_capabilities(arch, 64);
  // gfx90a and later: one unified file of 512 per lane per SIMD, 256 arch VGPRs and 256
  // AGPRs, which LLVM fills before it spills to scratch (AMDGPUUsage; the CDNA2/3 ISA
  // guides; kArchLimits in code_object.cpp for occupancy).
  c.registers_per_lane = 512;
  c.registers_per_thread = 512;
  // 4 SIMDs of at most 8 waves each (CDNA2/3/4 ISA guides; kArchLimits).
  c.waves_per_compute_unit = 32;
  // Global loads that write LDS instead of VGPRs: gfx90a's global_load_{ubyte,sbyte,
  // ushort,sshort,dword} with the `lds` bit, renamed global_load_lds_* on gfx940+. LLVM
  // 22 selects llvm.amdgcn.global.load.lds for sizes 1, 2 and 4 on gfx90a and gfx942.
  // The 1- and 2-byte forms still fill a whole dword of LDS per lane (which is why
  // Triton's supportsDirectToLdsLoadBitWidth enables only 32 bits on CDNA3): a user
  // packing sub-dword elements wants width 4.
  c.direct_to_shared_widths = {1, 2, 4};
  // buffer_load_dword ... lds exists on these chips too (LLVM 22 assembles it for
  // gfx90a and gfx942), but Gluon offers buffer_load_to_shared only on CDNA4
  // (triton python/triton/experimental/gluon/language/amd/cdna4/async_copy.py), where
  // the dwordx3/x4 forms make it worth having; tl follows that.
  c.buffer_load_to_shared = false;
  // The compiler's own copies may still use the dword form (copy_zeros_to_shared's
  // buffer_load_dword ... lds assembles on gfx90a and gfx942 with LLVM 22).
  c.buffer_copy_widths = {4};
  c.copy_waits_count_loads = true;  // s_waitcnt vmcnt
  c.register_pressure_rules = true;
  c.padded_shared = true;
  // Word 3 of the V# for raw buffer access: DATA_FORMAT = 4 (32 bit, bits 18:15) and
  // NUM_FORMAT = 7 (float, bits 14:12). The raw buffer instructions ignore both, but
  // DATA_FORMAT must not be 0 (Triton: "ignored, must be nonzero"; accesses through a
  // V# with DATA_FORMAT 0 are dropped). Every other field stays 0 on CDNA (bit 24 and
  // OOB_SELECT, bits 29:28, exist on RDNA only).
  // This is the value Triton's AMD backend uses for all CDNA chips
  // (third_party/amd/lib/TritonAMDGPUToLLVM/BufferOpsEmitter.cpp,
  // BufferEmitter::createResourceDescriptor: (7 << 12) | (4 << 15)).
  c.buffer_resource_flags = 0x00027000;
  // No FP8 converts before gfx942; no matrix instructions listed yet (tl::dot fills them).
  return c;
}

gpu::MatrixInstruction mfma(std::string name, std::string intrinsic, int m, int n, int k, DType a, DType b,
                            DType acc) {
  gpu::MatrixInstruction mi;
  mi.name = std::move(name);
  mi.intrinsic = std::move(intrinsic);
  mi.family = gpu::MatrixFamily::amd_mfma;
  mi.m = m, mi.n = n, mi.k = k, mi.a = a, mi.b = b, mi.acc = acc;
  mi.k_per_lane = m * k / 64;
  return mi;
}

// Names and signatures: LLVM 22's IntrinsicsAMDGPU.td, each compiled with llc for the
// chip and its mnemonic read back (the `_1k` bf16 forms are `v_mfma_f32_32x32x8_bf16` from
// gfx940 on); operand layouts: AMD's Matrix Instruction Calculator (CDNA2, CDNA3).
std::vector<gpu::MatrixInstruction> cdna_mfma_16bit_and_f32(bool gfx90a) {
  auto n = [&](const char* old_name, const char* new_name) { return std::string(gfx90a ? old_name : new_name); };
  using D = DType;
  return {
      mfma(n("v_mfma_f32_32x32x8bf16_1k", "v_mfma_f32_32x32x8_bf16"), "llvm.amdgcn.mfma.f32.32x32x8bf16.1k", 32, 32, 8,
           D::bf16, D::bf16, D::f32),
      mfma(n("v_mfma_f32_16x16x16bf16_1k", "v_mfma_f32_16x16x16_bf16"), "llvm.amdgcn.mfma.f32.16x16x16bf16.1k", 16, 16,
           16, D::bf16, D::bf16, D::f32),
      mfma(n("v_mfma_f32_32x32x8f16", "v_mfma_f32_32x32x8_f16"), "llvm.amdgcn.mfma.f32.32x32x8f16", 32, 32, 8, D::f16,
           D::f16, D::f32),
      mfma(n("v_mfma_f32_16x16x16f16", "v_mfma_f32_16x16x16_f16"), "llvm.amdgcn.mfma.f32.16x16x16f16", 16, 16, 16,
           D::f16, D::f16, D::f32),
      mfma(n("v_mfma_f32_32x32x2f32", "v_mfma_f32_32x32x2_f32"), "llvm.amdgcn.mfma.f32.32x32x2f32", 32, 32, 2, D::f32,
           D::f32, D::f32),
      mfma(n("v_mfma_f32_16x16x4f32", "v_mfma_f32_16x16x4_f32"), "llvm.amdgcn.mfma.f32.16x16x4f32", 16, 16, 4, D::f32,
           D::f32, D::f32),
  };
}

std::vector<gpu::MatrixInstruction> cdna3_mfma_fp8(DType fp8, DType bf8) {
  std::vector<gpu::MatrixInstruction> v;
  const std::pair<const char*, DType> kinds[] = {{"fp8", fp8}, {"bf8", bf8}};
  for (auto [an, at] : kinds)
    for (auto [bn, bt] : kinds)
      for (int nonk : {16, 32}) {
        int k = nonk == 16 ? 32 : 16;
        std::string shape = fmt::format("{}x{}x{}", nonk, nonk, k);
        v.push_back(mfma(fmt::format("v_mfma_f32_{}_{}_{}", shape, an, bn),
                         fmt::format("llvm.amdgcn.mfma.f32.{}.{}.{}", shape, an, bn), nonk, nonk, k, at, bt, DType::f32));
      }
  return v;
}

const gpu::TargetCapabilities& ArchOverlay::capabilities() const {
  static const gpu::TargetCapabilities c = default_capabilities("amdgcn", 64);
  return c;
}

namespace {
const ArchOverlay* known_overlay(const std::string& arch) {
  std::string cpu = arch.substr(0, arch.find(':'));  // "gfx942:sramecc+" names gfx942
  if (cpu == "gfx90a") return &gfx90a_overlay();
  if (cpu == "gfx940" || cpu == "gfx941" || cpu == "gfx942") return &gfx942_overlay();
  if (cpu == "gfx950") return &gfx950_overlay();
  return nullptr;
}
}  // namespace

uint32_t ArchOverlay::buffer_cache_bits(cache_modifier c, bool load) const {
  constexpr uint32_t glc = 1u << 0, slc = 1u << 1, volatile_bit = 1u << 31;
  switch (c) {
    case cache_modifier::cg: return load ? glc | slc : 0;
    case cache_modifier::cs: case cache_modifier::lu: return glc | slc;
    case cache_modifier::cv: case cache_modifier::wt: return volatile_bit;
    default: return 0;
  }
}

uint32_t cdna3_buffer_cache_bits(cache_modifier c, bool load) {
  constexpr uint32_t sc0 = 1u << 0, nt = 1u << 1, sc1 = 1u << 4;
  switch (c) {
    case cache_modifier::cg: return load ? sc0 | nt : 0;
    case cache_modifier::cs: case cache_modifier::lu: return sc0 | nt;
    case cache_modifier::cv: case cache_modifier::wt: return sc0 | sc1;
    default: return 0;
  }
}

const ArchOverlay& overlay_for(const std::string& arch) {
  static const ArchOverlay base;
  const ArchOverlay* o = known_overlay(arch);
  return o ? *o : base;
}

gpu::TargetCapabilities capabilities_for(const std::string& arch, int wave_size) {
  const ArchOverlay* o = known_overlay(arch);
  return o ? o->capabilities() : default_capabilities(arch, wave_size);
}

}  // namespace tl::amd

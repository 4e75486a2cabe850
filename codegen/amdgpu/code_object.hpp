// The AMD code-object layer: relocatable AMDGPU object -> HSACO (the shared ELF the
// HIP runtime loads), and the questions we ask of a HSACO afterwards: which ISA, which
// kernels, how many registers, does it spill, what does the machine code look like.
//
// Everything here runs in-process on the host: lld's ELF driver links, LLVM's Object and
// MsgPack libraries read the metadata note, LLVM's MC disassembler prints the code. No
// GPU and no ROCm install are needed; comgr is an optional second linker, loaded with
// dlopen because it carries its own LLVM (see /work/shared/design.md).
//
// The header uses std types only so that nothing outside codegen sees LLVM. Errors are
// tl::compile_error (tl/error.hpp) with a message that says which step failed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tl::amd {

// Compiles one LLVM IR module (text or bitcode) for amdgcn-amd-amdhsa into a
// relocatable ELF object. `mcpu` is a processor ("gfx942") or a target ID with
// feature settings ("gfx90a:xnack-:sramecc+"); `features` is an LLVM feature string
// ("+xnack") added after those. `opt_level` 0..3 is the code generator's level only:
// no IR optimization pipeline runs here, the caller has already optimized the IR.
// The code object version is whatever the module's "amdhsa_code_object_version" flag
// says (LLVM 22 defaults to 6). The tests use it to make objects; the real pipeline
// may have its own emitter. Thread-safe: every call has its own LLVMContext.
std::vector<uint8_t> compile_ir_to_object(const std::string& llvm_ir, const std::string& mcpu,
                                          const std::string& features = "", int opt_level = 3);

// Links a relocatable AMDGPU object into a HSACO with lld's ELF driver in-process
// (`ld.lld -shared --no-undefined`). lld reads and writes files, so the object and the
// result pass through a private mkdtemp directory (mode 0700) that is removed before
// returning: under $TMPDIR where it is set, else in memory (/dev/shm) where it can be,
// else under /tmp. lld is not reentrant: calls are serialized with a process-wide mutex.
std::vector<uint8_t> link_hsaco(const std::vector<uint8_t>& relocatable);

// The same link done by comgr, loaded with dlopen ($TL_COMGR_PATH if set, then
// libamd_comgr.so.3, .so.2, .so, then /opt/rocm/lib); comgr 2.x and 3.x both work.
// Returns std::nullopt, with the reason in *log (when log is given), when comgr cannot
// do it: library missing, ISA unknown to it (Debian's comgr 5.2 knows
// gfx90a but not gfx942/gfx950), or its link failed (Debian's comgr only links code
// object v4: `!{i32 1, !"amdhsa_code_object_version", i32 400}`). A fallback, so it
// never throws for those; *log also receives comgr's own log on success.
// `isa_name` is comgr's full name, e.g. "amdgcn-amd-amdhsa--gfx90a".
std::optional<std::vector<uint8_t>> link_hsaco_with_comgr(const std::vector<uint8_t>& relocatable,
                                                          const std::string& isa_name,
                                                          std::string* log = nullptr);

// The version of the comgr link_hsaco_with_comgr loads ("2.4" for Debian's comgr 5.2,
// "2.8" for ROCm 6.2's, "3.0" for ROCm 7's), or "" with the reason in *why when none
// loads.
std::string comgr_version(std::string* why = nullptr);
// Whether that comgr lists the processor of `isa_name` ("amdgcn-amd-amdhsa--gfx90a"):
// what a ROCm installation's comgr does for every current ISA, and Debian's 5.2 only up
// to gfx90a. False, with the reason in *why, when comgr is missing or does not.
bool comgr_knows_isa(const std::string& isa_name, std::string* why = nullptr);

// What the metadata note (NT_AMDGPU_METADATA) says about one kernel, plus what follows
// from it for a given workgroup size.
struct ResourceReport {
  std::string kernel;   // the kernel's .name
  std::string isa;      // from e_flags: "amdgcn-amd-amdhsa--gfx942" plus ":sramecc±:xnack±"
                        // when the object pins them (absent means "any")
  int vgpr = 0;         // .vgpr_count verbatim (what Triton reports as n_regs). On gfx90a+
                        // it is the unified total: roundup(arch VGPRs, 4) + agpr.
  int agpr = 0;         // .agpr_count: accumulation VGPRs (0 before gfx908)
  int vgpr_allocated = 0;  // VGPRs per lane the hardware reserves, from the kernel
                           // descriptor ((GRANULATED_WORKITEM_VGPR_COUNT + 1) * 8). It is
                           // >= vgpr, and larger when "amdgpu-waves-per-eu" asked for fewer
                           // waves: the metadata note does not show that, the descriptor does.
  int sgpr = 0;         // .sgpr_count
  int spill_vgpr = 0;   // .vgpr_spill_count: VGPRs spilled to scratch memory
  int spill_sgpr = 0;   // .sgpr_spill_count
  int lds_bytes = 0;    // .group_segment_fixed_size (static LDS)
  int scratch_bytes = 0;// .private_segment_fixed_size, per work-item
  int wavefront_size = 0;
  int max_flat_workgroup_size = 0;
  int waves_per_workgroup = 0;  // ceil(workgroup_size / wavefront_size)
  int occupancy = 0;            // waves per SIMD: occupancy() with the larger of vgpr and
                                // vgpr_allocated as the total, lds_bytes, waves_per_workgroup;
                                // at most 7 when sgpr > 100 (gfx9's SGPR file, as LLVM counts)
  int code_object_version = 0;  // 4, 5, 6: EI_ABIVERSION + 2
};

// Reads the report for `kernel` (empty: the object's only or first kernel) launched with
// `workgroup_size` work-items. Throws when the note is missing, the kernel is absent,
// or workgroup_size is not in 1..max_flat_workgroup_size (the launch would fail).
// For processors occupancy() does not know, vgpr_allocated and occupancy stay 0.
ResourceReport read_report(const std::vector<uint8_t>& hsaco, int workgroup_size,
                           const std::string& kernel = "");

// The whole metadata note as YAML text (what `llvm-readelf --notes` prints), for dumps
// and for comparing two builds of a kernel. Throws when there is no metadata note.
std::string metadata_yaml(const std::vector<uint8_t>& hsaco);

// Occupancy in waves per SIMD (4 SIMDs per CU) for gfx90a, gfx942 and gfx950, the way
// AMD's Triton optimization guide computes it, made exact for whole workgroups:
//   total  = agpr > 0 ? roundup(vgpr, 4) + agpr : vgpr   (unified VGPR+AGPR file)
//   w_vgpr = min(8, 512 / roundup(total, 8))              (512 per lane per SIMD, granule 8;
//                                                          0 when total > 512)
//   wg_cu  = (4 * w_vgpr) / waves_per_workgroup          (whole workgroups in the register
//                                                          files of one CU)
//   if lds_bytes > 0: wg_cu = min(wg_cu, LDS_CU / lds_bytes)   (LDS_CU = 64 KiB on
//                                                          gfx90a/gfx942, 160 KiB on gfx950)
//   occupancy = min(8, ceil(wg_cu * waves_per_workgroup / 4))
// ceil: the busiest SIMD holds that many waves (one 1-wave workgroup per CU is 1, not 0).
// 0 means the workgroup cannot be resident at all (too many registers or too much LDS).
// With waves_per_workgroup <= 4 this equals the guide's min(w_vgpr, w_lds, 8). It ignores
// the LDS allocation granule, and SGPRs (read_report applies their one limit: more than
// 100 per wave allows 7 waves).
// `arch` may be a target ID ("gfx942:xnack-"); other processors throw.
int occupancy(const std::string& arch, int vgpr, int agpr, int lds_bytes, int waves_per_workgroup);

// Disassembles every function symbol in the executable sections, like
// `llvm-objdump -d --mcpu=<mcpu>`: a "<name>:" line per kernel, then one instruction per
// line, "\t<mnemonic> <operands>  // <address>: <encoding>". `mcpu` empty: taken from
// e_flags. Bytes that do not decode print as ".long 0x...".
std::string disassemble(const std::vector<uint8_t>& hsaco, const std::string& mcpu = "");

// Header facts the tests and the loader check before handing a HSACO to the runtime.
struct ElfInfo {
  bool is_amdgpu = false;        // ELF64, little-endian, EM_AMDGPU, OS/ABI AMDGPU_HSA
  int abi_version = -1;          // EI_ABIVERSION: 2, 3, 4 for code object v4, v5, v6
  int code_object_version = 0;   // abi_version + 2
  std::string mach;              // processor from e_flags (EF_AMDGPU_MACH_*), "gfx942"
  std::string target_id;         // mach plus pinned features: "gfx90a:sramecc+:xnack-"
  bool has_metadata_note = false;// an "AMDGPU" note of type NT_AMDGPU_METADATA
  std::vector<std::string> kernels;  // names whose "<name>.kd" descriptor symbol exists
};

// Never throws: bytes that are not an AMDGPU ELF give is_amdgpu == false.
ElfInfo inspect_elf(const std::vector<uint8_t>& hsaco);

}  // namespace tl::amd

// Tests for the AMD code-object layer (codegen/amdgpu/code_object.hpp). No GPU needed:
// kernels are small hand-written LLVM IR compiled with LLVM 22 in the test, linked with
// lld in-process, and then read back (ELF header, metadata note, machine code).
#include "codegen/amdgpu/code_object.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tl/error.hpp"

namespace {

using tl::amd::compile_ir_to_object;
using tl::amd::disassemble;
using tl::amd::inspect_elf;
using tl::amd::link_hsaco;
using tl::amd::link_hsaco_with_comgr;
using tl::amd::occupancy;
using tl::amd::read_report;

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx950"};

// Two float atomic adds on global memory at agent scope, one relaxed and one acq_rel.
// The two metadata nodes tell the backend the memory is coarse-grained and denormal
// flushing is acceptable: without them gfx90a expands fadd into a CAS loop, and then
// there would be no global_atomic_add_f32 to look for.
const char* const kAtomicsIR = R"IR(
define amdgpu_kernel void @relaxed_add(ptr addrspace(1) %p, float %v) {
  %r = atomicrmw fadd ptr addrspace(1) %p, float %v syncscope("agent") monotonic, align 4, !amdgpu.no.fine.grained.memory !0, !amdgpu.ignore.denormal.mode !0
  ret void
}
define amdgpu_kernel void @acq_rel_add(ptr addrspace(1) %p, float %v) {
  %r = atomicrmw fadd ptr addrspace(1) %p, float %v syncscope("agent") acq_rel, align 4, !amdgpu.no.fine.grained.memory !0, !amdgpu.ignore.denormal.mode !0
  ret void
}
!0 = !{}
)IR";

// n values loaded with volatile loads, then stored back in reverse order with volatile
// stores. Volatile accesses keep their order, so all n values are live at once: the
// kernel needs about n VGPRs and cannot be rescheduled into needing fewer.
std::string pressure_ir(int n, const std::string& attributes, const std::string& name = "pressure") {
  std::ostringstream ir;
  ir << "define amdgpu_kernel void @" << name
     << "(ptr addrspace(1) %in, ptr addrspace(1) %out) #0 {\n";
  for (int i = 0; i < n; ++i)
    ir << "  %p" << i << " = getelementptr inbounds float, ptr addrspace(1) %in, i64 " << i
       << "\n  %v" << i << " = load volatile float, ptr addrspace(1) %p" << i << ", align 4\n";
  for (int i = 0; i < n; ++i)
    ir << "  %q" << i << " = getelementptr inbounds float, ptr addrspace(1) %out, i64 " << i
       << "\n  store volatile float %v" << (n - 1 - i) << ", ptr addrspace(1) %q" << i
       << ", align 4\n";
  ir << "  ret void\n}\nattributes #0 = { " << attributes << " }\n";
  return ir.str();
}

// 16 KiB of LDS, written and read so that it is not optimized away.
const char* const kLdsIR = R"IR(
@tile = internal addrspace(3) global [4096 x float] poison, align 16
declare i32 @llvm.amdgcn.workitem.id.x()
define amdgpu_kernel void @lds_kernel(ptr addrspace(1) %out) {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %slot = getelementptr inbounds [4096 x float], ptr addrspace(3) @tile, i32 0, i32 %tid
  store float 1.0, ptr addrspace(3) %slot, align 4
  fence syncscope("workgroup") release
  call void @llvm.amdgcn.s.barrier()
  fence syncscope("workgroup") acquire
  %other = xor i32 %tid, 1
  %slot2 = getelementptr inbounds [4096 x float], ptr addrspace(3) @tile, i32 0, i32 %other
  %v = load float, ptr addrspace(3) %slot2, align 4
  %dst = getelementptr inbounds float, ptr addrspace(1) %out, i32 %tid
  store float %v, ptr addrspace(1) %dst, align 4
  ret void
}
declare void @llvm.amdgcn.s.barrier()
)IR";

// Clobbering a31 makes the kernel own 32 AGPRs (the LLVM test agpr-register-count.ll
// does the same): the metadata must report them.
const char* const kAgprIR = R"IR(
define amdgpu_kernel void @agpr_kernel() {
  call void asm sideeffect "", "~{v8}"()
  call void asm sideeffect "", "~{a31}"()
  ret void
}
)IR";

std::string with_code_object_version(const std::string& ir, int version) {
  return ir + "\n!llvm.module.flags = !{!100}\n!100 = !{i32 1, !\"amdhsa_code_object_version\", i32 " +
         std::to_string(version * 100) + "}\n";
}

// The lines of one kernel in disassemble()'s output: from "<name>:" to the next blank line.
std::string kernel_text(const std::string& dis, const std::string& kernel) {
  size_t start = dis.find("<" + kernel + ">:");
  if (start == std::string::npos) return {};
  size_t end = dis.find("\n\n", start);
  return dis.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Compiled and linked atomics kernels, per arch; compiling is most of the test's time.
const std::vector<uint8_t>& atomics_hsaco(const std::string& arch) {
  static std::mutex m;
  static std::map<std::string, std::vector<uint8_t>> cache;
  std::lock_guard<std::mutex> lock(m);
  auto& slot = cache[arch];
  if (slot.empty()) slot = link_hsaco(compile_ir_to_object(kAtomicsIR, arch, "", 3));
  return slot;
}

class PerArch : public ::testing::TestWithParam<const char*> {};

// The HSACO is a shared ELF64 for EM_AMDGPU / AMDGPU_HSA, its e_flags name the processor
// we compiled for, both kernels have descriptors, and the metadata note is there.
TEST_P(PerArch, LinkedHsacoHasAmdgpuHeaderKernelsAndNote) {
  const std::string arch = GetParam();
  const auto& hsaco = atomics_hsaco(arch);
  ASSERT_GT(hsaco.size(), 64u);
  tl::amd::ElfInfo info = inspect_elf(hsaco);
  EXPECT_TRUE(info.is_amdgpu);
  EXPECT_EQ(info.mach, arch);
  EXPECT_EQ(info.target_id, arch);  // xnack/sramecc left at "any"
  EXPECT_EQ(info.abi_version, 4);   // LLVM 22's default: code object v6
  EXPECT_EQ(info.code_object_version, 6);
  EXPECT_TRUE(info.has_metadata_note);
  EXPECT_EQ(info.kernels, (std::vector<std::string>{"relaxed_add", "acq_rel_add"}));
  // The relocatable input is an AMDGPU object too, but no HSACO (ET_REL, not linked).
  auto reloc = compile_ir_to_object(kAtomicsIR, arch, "", 3);
  EXPECT_TRUE(inspect_elf(reloc).is_amdgpu);
  EXPECT_EQ(inspect_elf(reloc).mach, arch);
  EXPECT_NE(reloc, hsaco);
}

// An e_flags processor value that names no processor (reserved 0x27, or 0xff) is read as
// none: LLVM's own lookup would hit llvm_unreachable (found by the code-object fuzzer,
// tests/fuzz/regressions/code_object_fuzz/).
TEST_P(PerArch, UnknownProcessorInEflagsIsNoProcessor) {
  for (uint8_t mach : {uint8_t(0x27), uint8_t(0xff)}) {
    auto hsaco = atomics_hsaco(GetParam());
    hsaco[48] = mach;  // e_flags (offset 48 in ELF64): the low byte is EF_AMDGPU_MACH
    tl::amd::ElfInfo info = inspect_elf(hsaco);
    EXPECT_TRUE(info.is_amdgpu);
    EXPECT_EQ(info.mach, "") << int(mach);
    EXPECT_EQ(info.kernels, (std::vector<std::string>{"relaxed_add", "acq_rel_add"}));
  }
}

// The metadata note gives registers for a trivial kernel: some VGPRs, no spills, wave64,
// the default workgroup limit, and full occupancy.
TEST_P(PerArch, ReportFromMetadataNote) {
  const std::string arch = GetParam();
  for (const char* kernel : {"relaxed_add", "acq_rel_add"}) {
    tl::amd::ResourceReport r = read_report(atomics_hsaco(arch), 256, kernel);
    EXPECT_EQ(r.kernel, kernel);
    EXPECT_EQ(r.isa, "amdgcn-amd-amdhsa--" + arch);
    EXPECT_GT(r.vgpr, 0);
    EXPECT_LT(r.vgpr, 16);
    EXPECT_EQ(r.vgpr_allocated, 8);  // one granule
    EXPECT_EQ(r.agpr, 0);
    EXPECT_GT(r.sgpr, 0);
    EXPECT_EQ(r.spill_vgpr, 0);
    EXPECT_EQ(r.spill_sgpr, 0);
    EXPECT_EQ(r.lds_bytes, 0);
    EXPECT_EQ(r.scratch_bytes, 0);
    EXPECT_EQ(r.wavefront_size, 64);
    EXPECT_EQ(r.max_flat_workgroup_size, 1024);
    EXPECT_EQ(r.waves_per_workgroup, 4);
    EXPECT_EQ(r.occupancy, 8);
    EXPECT_EQ(r.code_object_version, 6);
    std::cout << "[measured] " << arch << " " << kernel << ": vgpr=" << r.vgpr
              << " agpr=" << r.agpr << " sgpr=" << r.sgpr << " occupancy=" << r.occupancy
              << "\n";
  }
  // Empty kernel name: the first kernel.
  EXPECT_EQ(read_report(atomics_hsaco(arch), 64).kernel, "relaxed_add");
  EXPECT_EQ(read_report(atomics_hsaco(arch), 65).waves_per_workgroup, 2);
}

// Relaxed agent-scope atomics must not pay for cache maintenance; acq_rel must. gfx942
// and gfx950 write back L2 before (buffer_wbl2 sc1) and invalidate after (buffer_inv
// sc1). gfx90a's L2 is coherent at agent scope, so its release needs no write-back and
// its acquire invalidates L1 only (buffer_wbinvl1_vol), as llvm-objdump-22 shows.
TEST_P(PerArch, AtomicOrderingShowsInDisassembly) {
  const std::string arch = GetParam();
  std::string dis = disassemble(atomics_hsaco(arch), arch);
  std::string relaxed = kernel_text(dis, "relaxed_add");
  std::string acq_rel = kernel_text(dis, "acq_rel_add");
  ASSERT_FALSE(relaxed.empty()) << dis;
  ASSERT_FALSE(acq_rel.empty()) << dis;
  for (const std::string& k : {relaxed, acq_rel}) {
    EXPECT_TRUE(has(k, "global_atomic_add_f32")) << k;
    EXPECT_TRUE(has(k, "s_endpgm")) << k;
    EXPECT_FALSE(has(k, ".long")) << "undecodable bytes:\n" << k;
  }
  for (const char* fence : {"buffer_wbl2", "buffer_inv", "buffer_wbinvl1"})
    EXPECT_FALSE(has(relaxed, fence)) << fence << " in relaxed atomic:\n" << relaxed;
  if (arch == "gfx90a") {
    EXPECT_TRUE(has(acq_rel, "buffer_wbinvl1_vol")) << acq_rel;
    EXPECT_FALSE(has(acq_rel, "buffer_wbl2")) << acq_rel;
  } else {
    EXPECT_TRUE(has(acq_rel, "buffer_wbl2")) << acq_rel;
    EXPECT_TRUE(has(acq_rel, "buffer_inv")) << acq_rel;
    // Release before the atomic, acquire after it.
    EXPECT_LT(acq_rel.find("buffer_wbl2"), acq_rel.find("global_atomic_add_f32"));
    EXPECT_GT(acq_rel.find("buffer_inv"), acq_rel.find("global_atomic_add_f32"));
  }
  // With no mcpu the processor comes from e_flags: same text.
  EXPECT_EQ(disassemble(atomics_hsaco(arch)), dis);
}

// "amdgpu-waves-per-eu"="4,4" limits the kernel to 512/4 = 128 VGPR+AGPR. Both builds
// allow workgroups of at most 256 ("amdgpu-flat-work-group-size"="1,256"): with the
// default 1024 LLVM already keeps 4 waves per SIMD for a whole workgroup, and the
// attribute would change nothing. A kernel that wants ~160 live values then reports a
// different, smaller register count in the metadata note.
TEST_P(PerArch, WavesPerEuChangesMetadata) {
  const std::string arch = GetParam();
  auto build = [&](const std::string& attrs) {
    return link_hsaco(compile_ir_to_object(
        pressure_ir(160, "\"amdgpu-flat-work-group-size\"=\"1,256\" " + attrs), arch, "", 2));
  };
  auto free_hsaco = build("");
  auto limited_hsaco = build("\"amdgpu-waves-per-eu\"=\"4,4\"");
  EXPECT_NE(tl::amd::metadata_yaml(free_hsaco), tl::amd::metadata_yaml(limited_hsaco));
  auto free = read_report(free_hsaco, 256);
  auto limited = read_report(limited_hsaco, 256);
  std::cout << "[measured] " << arch << " pressure(160), workgroup <= 256: vgpr=" << free.vgpr
            << " agpr=" << free.agpr << " spill=" << free.spill_vgpr
            << " occupancy=" << free.occupancy << " | with waves-per-eu 4,4: vgpr=" << limited.vgpr
            << " agpr=" << limited.agpr << " spill=" << limited.spill_vgpr
            << " occupancy=" << limited.occupancy << "\n";
  EXPECT_GT(free.vgpr, 128);
  EXPECT_EQ(free.spill_vgpr, 0);
  EXPECT_LT(free.occupancy, 4);
  EXPECT_LE(limited.vgpr, 128);
  EXPECT_EQ(limited.occupancy, 4);
}

// A small kernel fits 8 waves either way, and the metadata note's .vgpr_count does not
// move; what "amdgpu-waves-per-eu"="4,4" changes is the kernel descriptor, which reserves
// enough VGPRs (LLVM picks 97, granule 8: 104) that no more than 4 waves fit.
TEST_P(PerArch, WavesPerEuReachesKernelDescriptor) {
  const std::string arch = GetParam();
  const std::string ir = R"IR(
define amdgpu_kernel void @small(ptr addrspace(1) %p, float %v) #0 {
  store float %v, ptr addrspace(1) %p, align 4
  ret void
}
)IR";
  auto plain = read_report(
      link_hsaco(compile_ir_to_object(ir + "attributes #0 = { nounwind }\n", arch, "", 3)), 256);
  auto limited = read_report(
      link_hsaco(compile_ir_to_object(ir + "attributes #0 = { \"amdgpu-waves-per-eu\"=\"4,4\" }\n",
                                      arch, "", 3)),
      256);
  std::cout << "[measured] " << arch << " small kernel: vgpr=" << plain.vgpr
            << " allocated=" << plain.vgpr_allocated << " occupancy=" << plain.occupancy
            << " | waves-per-eu 4,4: vgpr=" << limited.vgpr
            << " allocated=" << limited.vgpr_allocated << " occupancy=" << limited.occupancy
            << "\n";
  EXPECT_EQ(plain.vgpr, limited.vgpr);
  EXPECT_EQ(plain.occupancy, 8);
  EXPECT_GT(limited.vgpr_allocated, 512 / 5);
  EXPECT_LE(limited.vgpr_allocated, 128);
  EXPECT_EQ(limited.occupancy, 4);
}

// 300 live values in a budget of 64 VGPRs ("amdgpu-waves-per-eu"="8,8" and
// "amdgpu-num-vgpr"="64") must spill to scratch, and the report must say so.
TEST_P(PerArch, RegisterHungryKernelReportsSpills) {
  const std::string arch = GetParam();
  auto hsaco = link_hsaco(compile_ir_to_object(
      pressure_ir(300, "\"amdgpu-waves-per-eu\"=\"8,8\" \"amdgpu-num-vgpr\"=\"64\""), arch, "", 2));
  auto r = read_report(hsaco, 256);
  std::cout << "[measured] " << arch << " pressure(300) budget 64: vgpr=" << r.vgpr
            << " agpr=" << r.agpr << " spill_vgpr=" << r.spill_vgpr
            << " scratch=" << r.scratch_bytes << " occupancy=" << r.occupancy << "\n";
  EXPECT_LE(r.vgpr, 64);  // the unified VGPR+AGPR total fits the 8-wave budget
  EXPECT_EQ(r.occupancy, 8);
  EXPECT_GT(r.spill_vgpr, 0);
  EXPECT_GT(r.scratch_bytes, 0);
  // Spills show in the code as scratch (or buffer) stores.
  std::string dis = disassemble(hsaco);
  EXPECT_TRUE(has(dis, "scratch_store") || has(dis, "buffer_store")) << dis.substr(0, 2000);
}

// Static LDS shows in the report and limits occupancy: 16 KiB per workgroup of 4 waves
// fits 4 workgroups in gfx90a/gfx942's 64 KiB (4 waves per SIMD), 10 in gfx950's 160 KiB
// (capped at 8).
TEST_P(PerArch, LdsBytesAndOccupancy) {
  const std::string arch = GetParam();
  auto r = read_report(link_hsaco(compile_ir_to_object(kLdsIR, arch, "", 3)), 256);
  EXPECT_EQ(r.lds_bytes, 16384);
  EXPECT_EQ(r.occupancy, arch == "gfx950" ? 8 : 4);
  EXPECT_TRUE(has(disassemble(link_hsaco(compile_ir_to_object(kLdsIR, arch, "", 3))), "ds_"));
}

// AGPRs are reported separately and count toward the unified register file.
TEST_P(PerArch, AgprsAreReported) {
  const std::string arch = GetParam();
  auto r = read_report(link_hsaco(compile_ir_to_object(kAgprIR, arch, "", 3)), 64);
  // v8 is used: 9 VGPRs, aligned to 12, then the 32 AGPRs: .vgpr_count is the total.
  EXPECT_EQ(r.agpr, 32);
  EXPECT_EQ(r.vgpr, 12 + 32);
  EXPECT_EQ(r.vgpr_allocated, 48);
  EXPECT_EQ(r.occupancy, occupancy(arch, 9, 32, 0, 1));
}

// More than 100 SGPRs per wave (s97 used: 98, plus VCC and friends) costs one wave.
TEST_P(PerArch, ManySgprsCostAWave) {
  const std::string arch = GetParam();
  auto r = read_report(link_hsaco(compile_ir_to_object(R"IR(
define amdgpu_kernel void @sgpr_kernel() {
  call void asm sideeffect "", "~{s97}"()
  ret void
}
)IR", arch, "", 3)), 256);
  EXPECT_GT(r.sgpr, 100);
  EXPECT_EQ(r.occupancy, 7);
}

// The code object version the module asks for reaches the ELF header.
TEST_P(PerArch, CodeObjectVersionFollowsModuleFlag) {
  const std::string arch = GetParam();
  for (int v : {4, 5, 6}) {
    auto hsaco = link_hsaco(compile_ir_to_object(with_code_object_version(kAtomicsIR, v), arch, "", 3));
    auto info = inspect_elf(hsaco);
    EXPECT_EQ(info.code_object_version, v);
    EXPECT_EQ(info.abi_version, v - 2);
    EXPECT_EQ(read_report(hsaco, 64).code_object_version, v);
    EXPECT_EQ(info.kernels.size(), 2u);
  }
}

INSTANTIATE_TEST_SUITE_P(Amdgpu, PerArch, ::testing::ValuesIn(kArchs),
                         [](const auto& info) { return std::string(info.param); });

// Target-ID feature settings become e_flags bits and come back in the ISA name.
TEST(CodeObject, TargetIdFeaturesRoundTrip) {
  auto hsaco = link_hsaco(compile_ir_to_object(kAtomicsIR, "gfx90a:sramecc+:xnack-", "", 3));
  auto info = inspect_elf(hsaco);
  EXPECT_EQ(info.mach, "gfx90a");
  EXPECT_EQ(info.target_id, "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(read_report(hsaco, 64).isa, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  auto xnack_on = link_hsaco(compile_ir_to_object(kAtomicsIR, "gfx942", "+xnack", 3));
  EXPECT_EQ(inspect_elf(xnack_on).target_id, "gfx942:xnack+");
}

// Our disassembler prints the same instructions as llvm-objdump-22 (when installed).
TEST(CodeObject, DisassemblyMatchesLlvmObjdump) {
  const char* objdump = "/usr/lib/llvm-22/bin/llvm-objdump";
  if (access(objdump, X_OK) != 0) GTEST_SKIP() << objdump << " not installed";
  const auto& hsaco = atomics_hsaco("gfx942");
  char dir_template[] = "/tmp/tl-objdump-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template, file = dir + "/k.hsaco", out = dir + "/k.txt";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(hsaco.data()), hsaco.size());
  std::string cmd = std::string(objdump) + " -d --mcpu=gfx942 " + file + " > " + out;
  int rc = std::system(cmd.c_str());
  std::ifstream in(out);
  std::stringstream reference;
  reference << in.rdbuf();
  unlink(file.c_str());
  unlink(out.c_str());
  rmdir(dir.c_str());
  ASSERT_EQ(rc, 0);
  // Instruction text only: drop comments, blank lines, headers and s_nop padding.
  auto instructions = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) {
      if (line.empty() || line[0] != '\t') continue;
      line = line.substr(1, line.find("//") == std::string::npos ? std::string::npos
                                                                 : line.find("//") - 1);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      if (line != "s_nop 0") lines.push_back(line);
    }
    return lines;
  };
  auto ours = instructions(disassemble(hsaco, "gfx942"));
  auto theirs = instructions(reference.str());
  EXPECT_GT(ours.size(), 20u);
  EXPECT_EQ(ours, theirs);
}

// lld runs under a mutex: links from several threads at once all succeed and agree.
TEST(CodeObject, ConcurrentLinksAreSerializedAndIdentical) {
  auto object = compile_ir_to_object(kAtomicsIR, "gfx942", "", 3);
  const auto expected = link_hsaco(object);
  std::vector<std::vector<uint8_t>> results(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 3; ++i) results[t] = link_hsaco(object);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[t], "");
    EXPECT_EQ(results[t], expected);
  }
}

// The private temporary directory is gone after a link, whether it worked or not.
TEST(CodeObject, LinkLeavesNoTemporaryFiles) {
  char dir_template[] = "/tmp/tl-tmpdir-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string dir = dir_template;
  const char* old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", dir.c_str(), 1);
  auto object = compile_ir_to_object(kAtomicsIR, "gfx90a", "", 3);
  EXPECT_NO_THROW(link_hsaco(object));
  // An object with an undefined symbol fails to link (--no-undefined).
  auto broken = compile_ir_to_object(R"IR(
declare void @missing()
define amdgpu_kernel void @calls_missing() {
  call void @missing()
  ret void
}
)IR", "gfx90a", "", 3);
  EXPECT_THROW(link_hsaco(broken), tl::compile_error);
  if (old) setenv("TMPDIR", saved.c_str(), 1); else unsetenv("TMPDIR");
  int entries = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) entries += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
  }
  EXPECT_EQ(entries, 0);
  rmdir(dir.c_str());
}

TEST(CodeObject, ErrorsSayWhatFailed) {
  try {
    compile_ir_to_object("define void @f( {", "gfx942", "", 3);
    ADD_FAILURE() << "bad IR accepted";
  } catch (const tl::compile_error& e) {
    EXPECT_TRUE(has(e.what(), "parse")) << e.what();
  }
  EXPECT_THROW(compile_ir_to_object(kAtomicsIR, "gfx9999", "", 3), tl::compile_error);
  // A backend error (96 KiB of LDS on a 64 KiB chip) is an exception, not exit(1).
  try {
    compile_ir_to_object(R"IR(
@big = internal addrspace(3) global [24576 x float] poison, align 16
define amdgpu_kernel void @too_much_lds(ptr addrspace(1) %out, i32 %i) {
  %p = getelementptr inbounds [24576 x float], ptr addrspace(3) @big, i32 0, i32 %i
  store float 1.0, ptr addrspace(3) %p, align 4
  %v = load float, ptr addrspace(3) %p, align 4
  store float %v, ptr addrspace(1) %out, align 4
  ret void
}
)IR", "gfx942", "", 3);
    ADD_FAILURE() << "96 KiB of LDS accepted on gfx942";
  } catch (const tl::compile_error& e) {
    EXPECT_TRUE(has(e.what(), "local memory")) << e.what();
  }
  EXPECT_THROW(compile_ir_to_object(kAtomicsIR, "gfx942", "", 7), tl::compile_error);
  std::vector<uint8_t> garbage = {1, 2, 3, 4, 5};
  EXPECT_FALSE(inspect_elf(garbage).is_amdgpu);
  EXPECT_FALSE(inspect_elf({}).is_amdgpu);
  EXPECT_THROW(link_hsaco(garbage), tl::compile_error);
  EXPECT_THROW(read_report(garbage, 64), tl::compile_error);
  EXPECT_THROW(disassemble(garbage, "gfx942"), tl::compile_error);
  EXPECT_THROW(disassemble(atomics_hsaco("gfx942"), "gfx9999"), tl::compile_error);
  EXPECT_THROW(compile_ir_to_object(kAtomicsIR, "gfx942:xnack", "", 3), tl::compile_error);
  const auto& hsaco = atomics_hsaco("gfx942");
  try {
    read_report(hsaco, 64, "no_such_kernel");
    ADD_FAILURE() << "unknown kernel accepted";
  } catch (const tl::compile_error& e) {
    EXPECT_TRUE(has(e.what(), "relaxed_add")) << "the message lists the kernels: " << e.what();
  }
  EXPECT_THROW(read_report(hsaco, 0), tl::compile_error);
  EXPECT_THROW(read_report(hsaco, 1025), tl::compile_error);
  EXPECT_THROW(occupancy("gfx1100", 32, 0, 0, 1), tl::compile_error);
  // A relocatable object has the note too; a HSACO is what the reader is for, but the
  // note is the same, so reading the object works as well.
  EXPECT_NO_THROW(read_report(compile_ir_to_object(kAtomicsIR, "gfx942", "", 3), 64));
}

// The occupancy formula against AMD's table for CDNA2/CDNA3 (VGPRs -> waves per SIMD:
// <=64: 8, <=72: 7, <=80: 6, <=96: 5, <=128: 4, <=168: 3, <=256: 2, <=512: 1).
TEST(Occupancy, VgprTable) {
  for (const char* arch : kArchs) {
    const std::pair<int, int> table[] = {{1, 8},   {64, 8},   {65, 7},  {72, 7},  {73, 6},
                                         {80, 6},  {81, 5},   {96, 5},  {97, 4},  {128, 4},
                                         {129, 3}, {168, 3},  {169, 2}, {256, 2}, {257, 1},
                                         {512, 1}, {513, 0}};
    for (auto [vgpr, waves] : table)
      EXPECT_EQ(occupancy(arch, vgpr, 0, 0, 4), waves) << arch << " vgpr=" << vgpr;
  }
}

TEST(Occupancy, AgprsShareTheRegisterFile) {
  // 100 VGPRs (aligned to 100) + 28 AGPRs = 128 -> 4 waves; 101 -> 104 + 27 = 131 -> 3.
  EXPECT_EQ(occupancy("gfx942", 100, 28, 0, 4), 4);
  EXPECT_EQ(occupancy("gfx942", 101, 27, 0, 4), 3);
  EXPECT_EQ(occupancy("gfx90a", 256, 256, 0, 4), 1);
  EXPECT_EQ(occupancy("gfx950", 9, 32, 0, 4), occupancy("gfx950", 44, 0, 0, 4));
}

TEST(Occupancy, LdsLimitsWorkgroupsPerCu) {
  // 64 KiB per CU on gfx90a/gfx942: one 64 KiB workgroup of 4 waves is 1 wave per SIMD.
  EXPECT_EQ(occupancy("gfx942", 32, 0, 65536, 4), 1);
  EXPECT_EQ(occupancy("gfx942", 32, 0, 32768, 4), 2);
  EXPECT_EQ(occupancy("gfx942", 32, 0, 16384, 8), 8);  // 4 workgroups x 8 waves / 4
  EXPECT_EQ(occupancy("gfx942", 32, 0, 65537, 4), 0);  // does not fit at all
  EXPECT_EQ(occupancy("gfx90a", 32, 0, 65536, 4), 1);
  // 160 KiB on gfx950: two 64 KiB workgroups.
  EXPECT_EQ(occupancy("gfx950", 32, 0, 65536, 4), 2);
  EXPECT_EQ(occupancy("gfx950", 32, 0, 163840, 4), 1);
  // One 1-wave workgroup per CU still puts a wave on a SIMD.
  EXPECT_EQ(occupancy("gfx942", 32, 0, 40000, 1), 1);
  // Target IDs are accepted.
  EXPECT_EQ(occupancy("gfx942:sramecc+:xnack-", 32, 0, 0, 4), 8);
}

TEST(Occupancy, WholeWorkgroups) {
  // 72 VGPRs allow 7 waves per SIMD = 28 per CU; workgroups of 8 waves fit 3 times
  // (24 waves), so 6 waves per SIMD, not 7.
  EXPECT_EQ(occupancy("gfx942", 72, 0, 0, 8), 6);
  EXPECT_EQ(occupancy("gfx942", 72, 0, 0, 4), 7);
  // 512 VGPRs: one wave per SIMD, so a 16-wave workgroup cannot be resident.
  EXPECT_EQ(occupancy("gfx942", 512, 0, 0, 16), 0);
  EXPECT_EQ(occupancy("gfx942", 512, 0, 0, 4), 1);
}

// comgr is optional. Where it is installed it must link a code object v4 gfx90a object
// (Debian's comgr 5.2 does, design.md), and give the same kernels and registers as lld.
TEST(Comgr, LinksCodeObjectV4ForGfx90aOrSaysWhyNot) {
  auto object = compile_ir_to_object(with_code_object_version(kAtomicsIR, 4), "gfx90a", "", 3);
  std::string log;
  auto hsaco = link_hsaco_with_comgr(object, "amdgcn-amd-amdhsa--gfx90a", &log);
  if (!hsaco) {
    ASSERT_FALSE(log.empty()) << "nullopt without a reason";
    if (has(log, "not installed")) GTEST_SKIP() << "comgr absent: " << log;
    FAIL() << "comgr is installed but did not link a v4 gfx90a object: " << log;
  }
  std::cout << "[measured] comgr linked gfx90a v4 (" << hsaco->size() << " bytes)\n";
  auto info = inspect_elf(*hsaco);
  EXPECT_TRUE(info.is_amdgpu);
  EXPECT_EQ(info.mach, "gfx90a");
  EXPECT_EQ(info.code_object_version, 4);
  EXPECT_TRUE(info.has_metadata_note);
  EXPECT_EQ(info.kernels, (std::vector<std::string>{"relaxed_add", "acq_rel_add"}));
  auto by_lld = read_report(link_hsaco(object), 256, "acq_rel_add");
  auto by_comgr = read_report(*hsaco, 256, "acq_rel_add");
  EXPECT_EQ(by_comgr.vgpr, by_lld.vgpr);
  EXPECT_EQ(by_comgr.sgpr, by_lld.sgpr);
  EXPECT_TRUE(has(kernel_text(disassemble(*hsaco), "acq_rel_add"), "buffer_wbinvl1_vol"));
}

// For what comgr cannot do (an ISA it does not know, a code object version its lld does
// not read) the answer is nullopt with a reason, never a crash or a throw.
TEST(Comgr, UnsupportedInputGivesNulloptWithReason) {
  struct Case { const char* arch; int version; };
  for (Case c : {Case{"gfx942", 4}, Case{"gfx950", 4}, Case{"gfx90a", 6}}) {
    auto object = compile_ir_to_object(with_code_object_version(kAtomicsIR, c.version), c.arch, "", 3);
    std::string why;
    auto hsaco = link_hsaco_with_comgr(object, std::string("amdgcn-amd-amdhsa--") + c.arch, &why);
    if (hsaco) {
      EXPECT_EQ(inspect_elf(*hsaco).mach, c.arch);  // a newer comgr can do it
      std::cout << "[measured] comgr linked " << c.arch << " v" << c.version << "\n";
    } else {
      if (has(why, "not installed")) GTEST_SKIP() << "comgr absent: " << why;
      EXPECT_FALSE(why.empty());
      std::cout << "[measured] comgr refused " << c.arch << " v" << c.version << ": "
                << why.substr(0, 200) << "\n";
    }
  }
}

}  // namespace

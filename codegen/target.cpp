// Target names: what "gfx942:sramecc+:xnack-", "sm_90" or "cpu" mean to the compiler.
#include <fmt/format.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <cctype>
#include <cstdlib>

#include "codegen/amdgpu/arch.hpp"
#include "codegen/gpu/capabilities.hpp"
#include "codegen/nvptx/nvptx_capabilities.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace tl::codegen {

std::string TargetDesc::str() const {
  switch (kind) {
    case cpu: return fmt::format("cpu-{}{}{}", arch, features.empty() ? "" : ":", features);
    case amdgpu: return fmt::format("amdgcn-amd-amdhsa--{}{}{}", arch, features.empty() ? "" : ":", features);
    case nvptx: return fmt::format("nvptx64-nvidia-cuda-{}", arch);
  }
  return "?";
}

std::string CompileOptions::key() const {
  std::string k = fmt::format("w{}s{}e{}b{}o{}", num_warps, num_stages, waves_per_eu, bounds_check ? 1 : 0, opt_level);
  // Only where set, so that the keys of kernels without them stay what they were.
  if (matrix_instr_nonkdim || kpack != 1) k += fmt::format("m{}k{}", matrix_instr_nonkdim, kpack);
  if (mma_version) k += fmt::format("v{}", mma_version);
  if (!enable_fp_fusion) k += "nf";
  return k;
}

std::string Target::lowering_state() const {
  throw compile_error(fmt::format("the {} target cannot emit in another process", desc().str()));
}

void Target::restore_lowering_state(const std::string&, const CompileOptions&) {
  throw compile_error(fmt::format("the {} target cannot emit in another process", desc().str()));
}

llvm::TargetMachine& thread_machine(const std::string& key,
                                    const std::function<std::unique_ptr<llvm::TargetMachine>()>& make) {
  thread_local std::map<std::string, std::unique_ptr<llvm::TargetMachine>> machines;
  auto& tm = machines[key];
  if (!tm) tm = make();
  return *tm;
}

TargetDesc host_target() {
  // Asked on every CPU launch (the target is part of the specialization key), and
  // getHostCPUFeatures runs cpuid, which traps to the hypervisor in a VM: ask once.
  static const TargetDesc host = [] {
    TargetDesc d;
    d.kind = TargetDesc::cpu;
    d.arch = llvm::sys::getHostCPUName().str();
    // The features are part of the target (and so of the cache key): two machines with
    // the same CPU name can differ in them (a VM without AVX-512, say).
    std::string feats;
    for (auto& [name, on] : llvm::sys::getHostCPUFeatures())
      if (on) feats += (feats.empty() ? "+" : ",+") + name.str();
    d.features = feats;
    d.wave_size = 1;
    return d;
  }();
  return host;
}

// "gfx942" / "gfx942:sramecc+:xnack-" (HIP's gcnArchName), "sm_90", "cpu" or "host".
TargetDesc parse_target(const std::string& name) {
  if (name.empty() || name == "cpu" || name == "host") return host_target();
  TargetDesc d;
  if (name.rfind("gfx", 0) == 0) {
    d.kind = TargetDesc::amdgpu;
    auto colon = name.find(':');
    d.arch = name.substr(0, colon);
    // gfx10+ (RDNA) runs wave32 by default; CDNA (gfx9xx) is wave64.
    d.wave_size = d.arch.rfind("gfx9", 0) == 0 ? 64 : 32;
    std::string rest = colon == std::string::npos ? "" : name.substr(colon + 1);
    // HIP spells features "sramecc+:xnack-"; LLVM wants "+sramecc,-xnack".
    std::string feats;
    size_t pos = 0;
    while (pos < rest.size()) {
      size_t next = rest.find(':', pos);
      std::string f = rest.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
      if (!f.empty() && (f.back() == '+' || f.back() == '-'))
        feats += (feats.empty() ? "" : ",") + std::string(1, f.back()) + f.substr(0, f.size() - 1);
      if (next == std::string::npos) break;
      pos = next + 1;
    }
    d.features = feats;
    static const char* known[] = {"gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1100", "gfx1101",
                                  "gfx1200", "gfx1201", "gfx1030"};
    bool ok = false;
    for (const char* k : known) ok |= d.arch == k;
    if (!ok) throw compile_error(fmt::format("unknown AMD target '{}' (known: gfx90a, gfx942, gfx950, gfx1030, gfx1100, gfx1200)", name));
    return d;
  }
  if (name.rfind("sm_", 0) == 0) {
    d.kind = TargetDesc::nvptx;
    d.arch = name;
    d.wave_size = 32;
    // "sm_" then the compute capability (no leading zero) and at most one suffix letter:
    // 'a' (sm_90a: the architecture-specific features) or 'f' (a family). Anything else
    // (sm_1000, sm_90x, sm_080) is no processor LLVM's NVPTX backend knows: LLVM would
    // only warn and emit code for a default processor, so it is refused here.
    size_t end = 3;
    while (end < name.size() && end < 7 && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    const std::string digits = name.substr(3, end - 3), suffix = name.substr(end);
    const int cc = digits.empty() ? -1 : std::atoi(digits.c_str());
    const bool well_formed = !digits.empty() && std::to_string(cc) == digits && (suffix.empty() || suffix == "a" || suffix == "f");
    if (well_formed && cc < 80)
      throw compile_error(fmt::format("NVIDIA target '{}' is older than sm_80, which tl requires", name));
    // The sm_80+ processors of LLVM 22's NVPTX backend, and which of them take each suffix.
    struct Known {
      int cc;
      bool a, f;
    };
    static const Known known[] = {{80, false, false},  {86, false, false}, {87, false, false}, {88, false, false},
                                  {89, false, false},  {90, true, false},  {100, true, true},  {101, true, true},
                                  {103, true, true},   {110, true, true},  {120, true, true},  {121, true, true}};
    bool ok = false;
    for (const Known& k : known)
      ok |= well_formed && k.cc == cc && (suffix.empty() || (suffix == "a" && k.a) || (suffix == "f" && k.f));
    if (!ok)
      throw compile_error(fmt::format("unknown NVIDIA target '{}' (known: sm_80, sm_86, sm_87, sm_88, sm_89, sm_90, "
                                      "sm_90a, sm_100, sm_101, sm_103, sm_110, sm_120, sm_121, the sm_100 and later "
                                      "with an 'a' or 'f' suffix)",
                                      name));
    return d;
  }
  throw compile_error(fmt::format("unknown target '{}': expected cpu, gfxNNN or sm_NN", name));
}

gpu::TargetCapabilities capabilities_for(const TargetDesc& d) {
  switch (d.kind) {
    case TargetDesc::amdgpu: return amd::capabilities_for(d.arch, d.wave_size);
    case TargetDesc::nvptx: return nvptx::capabilities(d.arch);
    case TargetDesc::cpu: break;
  }
  // The CPU: a program is one thread with no shared memory and nothing to copy into it;
  // a pass asking about shared-memory budgets or copies gets "none" without a special case.
  gpu::TargetCapabilities c;
  c.arch = d.arch;
  c.wave_size = 1;
  c.max_threads_per_program = 1;
  c.shared_bytes_per_program = 0;
  c.static_shared_limit = 0;
  c.shared_banks = 0;
  c.shared_bank_bytes = 0;
  c.max_global_access_bytes = 0;  // no per-lane access width to plan for
  return c;
}

}  // namespace tl::codegen

// choose_link: see link_choice.hpp.
#include "codegen/amdgpu/link_choice.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace tl::amd {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// comgr's API version as major * 100 + minor; 0 when unknown.
int version_number(const std::string& v) {
  int major = 0, minor = 0;
  return std::sscanf(v.c_str(), "%d.%d", &major, &minor) == 2 ? major * 100 + minor : 0;
}

}  // namespace

std::string LinkChoice::key() const {
  // (strict too: an entry that lld linked after comgr failed must not satisfy a strict run.)
  return fmt::format("link={}{}{},cov={}", comgr ? "comgr-" : "lld", comgr ? comgr_version : "", strict ? ",strict" : "",
                     code_object_version);
}

LinkChoice choose_link(const std::string& arch) {
  LinkChoice c;
  const std::string processor = arch.substr(0, arch.find(':'));
  const std::string forced = env("TL_AMDGPU_LINKER");
  if (forced == "lld") {
    c.reason = "TL_AMDGPU_LINKER=lld";
  } else if (forced == "comgr") {
    c.comgr = true;
    c.comgr_version = comgr_version();
    c.strict = env("TL_AMDGPU_LINKER_STRICT") == "1";
    c.reason = "TL_AMDGPU_LINKER=comgr";
  } else if (forced.empty()) {
    std::string why;
    if (comgr_knows_isa("amdgcn-amd-amdhsa--" + processor, &why)) {
      c.comgr = true;
      c.comgr_version = comgr_version();
      c.reason = fmt::format("comgr {} lists {}", c.comgr_version, processor);
    } else {
      c.reason = why;  // "comgr 2.4 does not know the ISA ...gfx942 (...)", "libamd_comgr is not installed ..."
    }
  } else {
    throw compile_error(fmt::format("TL_AMDGPU_LINKER must be comgr or lld, got '{}'", forced));
  }

  const std::string cov = env("TL_AMDGPU_CODE_OBJECT_VERSION");
  if (!cov.empty()) {
    c.code_object_version = std::atoi(cov.c_str());
    if (c.code_object_version < 4 || c.code_object_version > 6 || cov.size() != 1)
      throw compile_error(fmt::format("TL_AMDGPU_CODE_OBJECT_VERSION must be 4, 5 or 6, got '{}'", cov));
  } else {
    // An unknown version (comgr forced but missing: lld links) keeps v4, which every
    // comgr and runtime tl meets takes.
    c.code_object_version = c.comgr && version_number(c.comgr_version) < 206 ? 4 : 5;
  }
  return c;
}

}  // namespace tl::amd

namespace tl::codegen {
// Here rather than in target.cpp: only AMD has such a choice, and target.cpp stays free of
// comgr (tests/fuzz builds it alone).
// (TL_AMDGPU_SCHEDULE forcing one machine schedule, codegen/amdgpu/schedule.hpp, and
// TL_AMDGPU_SCHEDULES choosing among fewer, and TL_AMDGPU_REUSE_IR_PASSES=0 copying the
// module for each alternative before its IR passes, are part of it too: code scheduled
// another way is another entry.)
std::string build_identity(const TargetDesc& d) {
  if (d.kind != TargetDesc::amdgpu) return std::string();
  std::string id = amd::choose_link(d.arch).key();
  if (std::string forced = amd::env("TL_AMDGPU_SCHEDULE"); !forced.empty()) id += "|schedule=" + forced;
  if (std::string mode = amd::env("TL_AMDGPU_SCHEDULES"); !mode.empty() && mode != "all") id += "|schedules=" + mode;
  if (amd::env("TL_AMDGPU_REUSE_IR_PASSES") == "0") id += "|reuse_ir_passes=0";
  return id;
}
}  // namespace tl::codegen

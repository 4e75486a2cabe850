// Which linker makes a HSACO, and which code object version it gets: comgr (the design's
// linker, AMD's code-object manager) wherever the installed comgr lists the target's ISA
// (a ROCm installation: every current ISA), the in-process lld otherwise (Debian's comgr
// 5.2 stops at gfx90a). TL_AMDGPU_LINKER=comgr|lld forces one; the choice, comgr's
// version and the reason go into the cache entry (`tl-cache show`) and its key.
#pragma once

#include <string>

namespace tl::amd {

struct LinkChoice {
  bool comgr = false;         // link with comgr, else with lld in-process
  bool strict = false;        // TL_AMDGPU_LINKER_STRICT=1: a comgr failure is an error, not lld
  std::string comgr_version;  // "2.4"; empty when comgr does not load
  int code_object_version = 5;
  std::string reason;         // "comgr 2.4 lists gfx90a", "TL_AMDGPU_LINKER=lld", ...
  // What the choice adds to a cache key: the same program linked another way, or as
  // another code object version, is another entry.
  std::string key() const;
};

// The choice for `arch` ("gfx90a", "gfx942:sramecc+") under the current environment.
// Throws tl::compile_error for a TL_AMDGPU_LINKER or TL_AMDGPU_CODE_OBJECT_VERSION it does
// not understand. Code object version: TL_AMDGPU_CODE_OBJECT_VERSION, else 4 with a comgr
// older than 2.6 (ROCm 5's: its LLVM 15 lld refuses v5 with "unknown abi version"), else
// 5 (what ROCm 6 produces; LLVM 22 would default to 6, which older runtimes reject).
LinkChoice choose_link(const std::string& arch);

}  // namespace tl::amd

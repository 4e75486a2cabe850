// Compiling traced kernels for a named target in the lowering tests, and counting what
// the disassembly or PTX holds.
#pragma once

#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "codegen/target.hpp"
#include "runtime/cache.hpp"

namespace tltest {

inline tl::codegen::CodeObject compile_for(const std::string& arch, tl::ir::Function& f, int num_warps = 4) {
  tl::codegen::CompileOptions o;
  o.num_warps = num_warps;
  return tl::codegen::compile(f, tl::codegen::parse_target(arch), o);
}

inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The PTX of a kernel's (first) loop: from its label to the branch back to it.
inline std::string ptx_loop(const std::string& ptx) {
  std::regex back(R"(bra(\.uni)?\s+(\$L__BB\d+_\d+);)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), back); it != std::sregex_iterator(); ++it) {
    size_t label = ptx.find((*it)[2].str() + ":");
    if (label != std::string::npos && label < size_t(it->position())) return ptx.substr(label, size_t(it->position()) - label);
  }
  return "";
}

// The ISA text (PTX, or AMD disassembly) of what a kernel's compile() made, from the
// cache entry its metadata names.
inline std::string isa_of_compiled(const std::string& meta) {
  auto entry = tl::cache::DiskCache::global().load(nlohmann::json::parse(meta).at("key").get<std::string>());
  if (!entry) throw std::runtime_error("no cache entry for " + meta);
  return tl::cache::isa_provider()(*entry);
}

}  // namespace tltest

// Compiling traced kernels for a named target in the lowering tests, and counting what
// the disassembly or PTX holds.
#pragma once

#include <string>

#include "codegen/target.hpp"

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

}  // namespace tltest

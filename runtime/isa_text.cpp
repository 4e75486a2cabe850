// Gives `tl-cache isa` its text on demand: the disassembly of an AMD code object, or
// the PTX of an NVIDIA one (which is its own ISA text). CPU objects have none.
#include "codegen/amdgpu/code_object.hpp"
#include "runtime/cache.hpp"

namespace tl::runtime {
namespace {

std::string isa_text(const cache::Entry& e) {
  auto code = e.artifacts.find("code");
  if (code == e.artifacts.end()) return "";
  std::string format = e.meta.value("format", "");
  if (format == "ptx") return std::string(code->second.begin(), code->second.end());
  if (format == "hsaco") return amd::disassemble(code->second, e.meta.value("target", ""));
  return "";
}

// Registered when libtl loads, so every program linking it (tl-cache included) has it.
const bool registered = [] {
  cache::set_isa_provider(isa_text);
  return true;
}();

}  // namespace
}  // namespace tl::runtime

// Gives `tl-cache isa` its text on demand: the disassembly of an AMD code object, or
// the PTX of an NVIDIA one (which is its own ISA text). CPU objects have none.
#include "codegen/amdgpu/code_object.hpp"
#include "runtime/cache.hpp"
#include "runtime/kernel_entry.hpp"

namespace tl::runtime {
namespace {

// tl-cache shows any entry, well-formed or not: only one read_kernel_entry accepts is
// disassembled, so a hostile field cannot throw out of the tool.
std::string isa_text(const cache::Entry& e) {
  auto code = read_kernel_entry(e);
  if (!code) return "";
  if (code->format == "ptx") return std::string(code->binary.begin(), code->binary.end());
  if (code->format == "hsaco") return amd::disassemble(code->binary, e.meta["target"].get<std::string>());
  return "";
}

// Registered when libtl loads, so every program linking it (tl-cache included) has it.
const bool registered = [] {
  cache::set_isa_provider(isa_text);
  return true;
}();

}  // namespace
}  // namespace tl::runtime

// libFuzzer target: the AMD code-object readers (ELF header, the MessagePack metadata
// note, the disassembler) on arbitrary bytes. A cache entry's code object is read
// by tl-cache and the resource report, so it is input too.
#include <cstdint>
#include <vector>

#include "codegen/amdgpu/code_object.hpp"
#include "tl/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  try {
    (void)tl::amd::inspect_elf(bytes);
  } catch (const tl::error&) {
  }
  try {
    (void)tl::amd::read_report(bytes, 256);
  } catch (const tl::error&) {
  }
  try {
    (void)tl::amd::disassemble(bytes, "gfx942");
  } catch (const tl::error&) {
  }
  return 0;
}

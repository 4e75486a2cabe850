// libFuzzer target: target-name parsing (TL_TARGET, --target, HIP's gcnArchName).
#include <cstdint>
#include <string>

#include "codegen/target.hpp"
#include "tl/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  try {
    (void)tl::codegen::parse_target(s);
  } catch (const tl::error&) {
  }
  return 0;
}

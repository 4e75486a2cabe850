// libFuzzer target: the cache-entry reader on arbitrary bytes. It must never crash,
// hang or allocate without bound, whatever a hostile or broken file holds.
#include <cstdint>
#include <span>

#include "runtime/cache.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first 32 bytes double as the expected key, so the fuzzer can reach the paths
  // behind a matching key as well as the mismatch.
  std::string key(reinterpret_cast<const char*>(data), size < 32 ? size : 32);
  (void)tl::cache::parse_entry(std::span<const uint8_t>(data, size), key);
  (void)tl::cache::parse_entry(std::span<const uint8_t>(data, size), "0123456789abcdef0123456789abcdef");
  return 0;
}

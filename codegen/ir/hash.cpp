// The stable hash of a tile program: its canonical text (locations left out, values
// numbered in order) through XXH3-128. Two traces of the same program hash equal.
#include <fmt/format.h>
#include <xxhash.h>

#include "codegen/ir/ir.hpp"

namespace tl::ir {

std::string hash(const Function& f) {
  std::string text = f.str(/*with_locations=*/false);
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace tl::ir

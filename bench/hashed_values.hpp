// Input values the benchmarks and their Python harnesses build alike: a 32-bit hash of
// each element's flat index (arithmetic that int64 torch tensors do without overflow), so
// that tl's and Triton's kernels read the same data and their outputs can be compared.
#pragma once

#include <cstdint>

namespace tlbench {

inline uint32_t hash32(uint64_t i) {
  uint64_t x = i & 0xffffffffu;
  x ^= x >> 16, x = (x * 0x7feb352du) & 0xffffffffu;
  x ^= x >> 15, x = (x * 0x2c1b3c6du) & 0xffffffffu;
  x ^= x >> 16;
  return uint32_t(x);
}

}  // namespace tlbench

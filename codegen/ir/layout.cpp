// The layout attribute's own accessors (layout.hpp); the algebra is codegen/gpu/layout.cpp.
#include "codegen/ir/layout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tl::ir {

int64_t Layout::numel() const {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

uint32_t Layout::reg_part(uint32_t r) const {
  uint32_t f = 0;
  for (size_t i = 0; i < reg.size(); ++i)
    if (r >> i & 1) f ^= reg[i];
  return f;
}

uint32_t Layout::thread_part(uint32_t l, uint32_t w) const {
  uint32_t f = 0;
  for (size_t i = 0; i < lane.size(); ++i)
    if (l >> i & 1) f ^= lane[i];
  for (size_t i = 0; i < warp.size(); ++i)
    if (w >> i & 1) f ^= warp[i];
  return f;
}

uint32_t Layout::duplicate_reg_mask() const {
  uint32_t m = 0;
  for (size_t i = 0; i < reg.size(); ++i)
    if (reg[i] == 0) m |= 1u << i;
  return m;
}

std::string Layout::str() const {
  auto list = [](const std::vector<uint32_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); };
  return fmt::format("shape=[{}] reg={} lane={} warp={}", fmt::join(shape, ","), list(reg), list(lane), list(warp));
}

std::string SharedEncoding::str() const {
  std::vector<std::string> pads;
  for (auto [interval, amount] : padding) pads.push_back(fmt::format("{}:+{}", interval, amount));
  return fmt::format("order=[{}] vec={} swizzle=[{}]{}{}", fmt::join(order, ","), vec, fmt::join(swizzle, ","),
                     row ? fmt::format(" row={}", row) : std::string(),
                     pads.empty() ? std::string() : fmt::format(" padding=[{}]", fmt::join(pads, ",")));
}

}  // namespace tl::ir

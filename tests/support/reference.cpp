#include "support/reference.hpp"

namespace tltest {

tl::device test_device() { return tl::default_device(); }
bool on_gpu() { return test_device().kind() != tl::device_kind::cpu; }

std::mt19937_64& rng() {
  static std::mt19937_64 r(0x5eed ^ std::random_device{}());
  return r;
}

std::vector<float> random_floats(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng());
  return v;
}

}  // namespace tltest

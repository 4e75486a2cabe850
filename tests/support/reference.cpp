#include "support/reference.hpp"

#include <cstdio>
#include <cstdlib>

namespace tltest {

tl::device test_device() { return tl::default_device(); }
bool on_gpu() { return test_device().kind() != tl::device_kind::cpu; }

// Random inputs differ from run to run (a bound holds for the function, not for one draw);
// the seed is printed with the test's output, so a failure in CI is reproduced with
// TL_TEST_SEED=<seed>.
std::mt19937_64& rng() {
  static std::mt19937_64 r([] {
    const char* env = std::getenv("TL_TEST_SEED");
    uint64_t seed = env && *env ? std::strtoull(env, nullptr, 0) : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("[ seed ] TL_TEST_SEED=%llu\n", (unsigned long long)seed);
    return seed;
  }());
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

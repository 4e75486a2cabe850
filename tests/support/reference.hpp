// Test support: the device under test, random inputs, poisoned outputs, and error
// measures against double-precision references written as plain C++ loops.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tl/tl.hpp"

namespace tltest {

// The device the operation tests run on: TL_DEVICE picks it (cpu, hip, cuda), else
// the detected default. The same tests run on the CPU in CI and on a GPU elsewhere.
tl::device test_device();
bool on_gpu();

std::mt19937_64& rng();
std::vector<float> random_floats(size_t n, float lo = -2.0f, float hi = 2.0f);
std::vector<int32_t> random_ints(size_t n, int32_t lo, int32_t hi);

// Fills a buffer with a pattern no kernel here computes (0xAB bytes: -1.2e-12 as f32 and
// bf16, -0.059 as f16, 0xABAB... as integers), so an element the kernel failed to write
// shows up: no test's reference lands on exactly these values.
template <class E> void poison(const tl::buffer<E>& b) {
  std::vector<typename tl::buffer<E>::host_t> h(b.size());
  std::memset(static_cast<void*>(h.data()), 0xAB, h.size() * sizeof(h[0]));
  b.upload(h);
}

template <class E> tl::buffer<E> upload(const std::vector<typename tl::buffer<E>::host_t>& h) {
  auto b = test_device().alloc<E>(h.size());
  b.upload(h);
  return b;
}

inline double to_double(float v) { return v; }
inline double to_double(double v) { return v; }
inline double to_double(tl::bfloat16 v) { return tl::to_float(v); }
inline double to_double(tl::half v) { return tl::to_float(v); }
template <class I> requires std::is_integral_v<I> double to_double(I v) { return double(v); }

// Asserts |got - want| <= atol + rtol * |want| elementwise; NaN never passes.
template <class T>
::testing::AssertionResult near(const std::vector<T>& got, const std::vector<double>& want, double rtol, double atol) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = to_double(got[i]);
    if (!(std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tltest

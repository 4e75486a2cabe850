// What every conformance case shares: the device (tltest::test_device(): the CPU in CI,
// a GPU where one is present or TL_DEVICE names one), random inputs, outputs poisoned with
// 0xFF bytes before each launch (NaN in every float type, -1 / all ones in every integer
// type, so an element a kernel failed to write never matches a reference), host element
// types and comparisons against double-precision references written as plain loops.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "conformance/gaps.hpp"
#include "support/reference.hpp"
#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace conformance {

using tltest::rng;
using tltest::test_device;

template <class E> using host_t = typename tl::elem_t<E>::host;

template <class E> void poison(const tl::buffer<E>& b) {
  std::vector<typename tl::buffer<E>::host_t> h(b.size());
  std::memset(static_cast<void*>(h.data()), 0xFF, h.size() * sizeof(h[0]));
  b.upload(h);
}

// A buffer of n elements, poisoned.
template <class E> tl::buffer<tl::elem_t<E>> output(size_t n) {
  auto b = test_device().alloc<tl::elem_t<E>>(n);
  poison(b);
  return b;
}

template <class E> tl::buffer<tl::elem_t<E>> upload(const std::vector<host_t<E>>& h) {
  auto b = test_device().alloc<tl::elem_t<E>>(h.size());
  b.upload(h);
  return b;
}

// Host values of an element type from and to double (exact where the type holds the value;
// narrow floats rounded to nearest even).
template <class E> host_t<E> from_double(double x) {
  using H = host_t<E>;
  if constexpr (std::is_same_v<H, tl::half>) return tl::to_f16(x);
  else if constexpr (std::is_same_v<H, tl::bfloat16>) return tl::to_bf16(x);
  else if constexpr (std::is_same_v<H, bool>) return x != 0;
  else if constexpr (std::is_floating_point_v<H>) return H(x);
  else if constexpr (std::is_integral_v<H>) return H(int64_t(x));
  else return tl::fp8<tl::elem_t<E>::dtype>(x);
}
template <class H> double to_double(H v) {
  if constexpr (std::is_same_v<H, tl::half> || std::is_same_v<H, tl::bfloat16>) return tl::to_float(v);
  else if constexpr (std::is_arithmetic_v<H>) return double(v);
  else return tl::to_double(v);
}

// n random values of E drawn uniformly from [lo, hi] (integers: whole numbers in it),
// each exact in E.
template <class E> std::vector<host_t<E>> random_values(size_t n, double lo, double hi) {
  using H = host_t<E>;
  std::vector<H> h(n);
  if constexpr (std::is_integral_v<H>) {
    std::uniform_int_distribution<int64_t> d{int64_t(lo), int64_t(hi)};
    for (auto& v : h) v = H(d(rng()));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& v : h) v = from_double<E>(d(rng()));
  }
  return h;
}

template <class H> std::vector<double> doubles(const std::vector<H>& h) {
  std::vector<double> r(h.size());
  for (size_t i = 0; i < h.size(); ++i) r[i] = to_double(h[i]);
  return r;
}

// The unit roundoff of a float element type (0 for integers: exact).
inline double epsilon_of(tl::DType t) {
  switch (t) {
    case tl::DType::f16: return 0x1p-11;
    case tl::DType::bf16: return 0x1p-8;
    case tl::DType::f32: return 0x1p-24;
    case tl::DType::f64: return 0x1p-53;
    case tl::DType::f8e4m3fn: case tl::DType::f8e4m3fnuz: return 0x1p-4;
    case tl::DType::f8e5m2: case tl::DType::f8e5m2fnuz: return 0x1p-3;
    default: return 0;
  }
}

// |got - want| <= atol + rtol |want| elementwise (NaN only where want is NaN); the first
// few mismatches are reported with `what`.
template <class H>
::testing::AssertionResult close(const std::vector<H>& got, const std::vector<double>& want, double rtol, double atol,
                                 const std::string& what = "") {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " elements, want " << want.size();
  int bad = 0;
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = to_double(got[i]);
    bool ok = std::isnan(want[i]) ? std::isnan(g) : std::fabs(g - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (!ok && bad++ < 5) r << what << "[" << i << "] = " << g << ", want " << want[i] << "\n";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return r << bad << " of " << got.size() << " elements differ";
}

// Bit-exact equality for integer and boolean outputs.
template <class H> ::testing::AssertionResult same(const std::vector<H>& got, const std::vector<H>& want, const std::string& what = "") {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": size " << got.size();
  int bad = 0;
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(H)) != 0 && bad++ < 5)
      r << what << "[" << i << "] = " << to_double(got[i]) << ", want " << to_double(want[i]) << "\n";
  if (bad == 0) return ::testing::AssertionSuccess();
  return r << bad << " of " << got.size() << " elements differ";
}

// i1 buffers hold a byte an element (C++ bool), which std::vector<bool> cannot carry (and
// poisoned 0xFF bytes are no bool): these move them as bytes.
inline tl::buffer<tl::ty::i1> upload_bools(const std::vector<uint8_t>& bytes) {
  auto b = test_device().alloc<tl::ty::i1>(bytes.size());
  test_device().copy_to_device(b.data(), bytes.data(), bytes.size());
  return b;
}
inline tl::buffer<tl::ty::i1> bool_output(size_t n) { return upload_bools(std::vector<uint8_t>(n, 0xFF)); }
inline std::vector<uint8_t> download_bools(const tl::buffer<tl::ty::i1>& b) {
  std::vector<uint8_t> h(b.size());
  test_device().copy_to_host(h.data(), b.data(), h.size());
  return h;
}

}  // namespace conformance

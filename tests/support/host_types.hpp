// Host element types of tile dtypes for the dot tests: the host type a tile's elements
// upload as, conversions from and to double, and random matrices exact in the type.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "support/reference.hpp"
#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace tltest {

template <class E> struct Host;  // the host element type of a tile type, and its conversions
template <> struct Host<tl::bf16> { using T = tl::bfloat16; static T from(double x) { return tl::to_bf16(x); } static double to(T v) { return tl::to_float(v); } };
template <> struct Host<tl::f16> { using T = tl::half; static T from(double x) { return tl::to_f16(x); } static double to(T v) { return tl::to_float(v); } };
template <> struct Host<tl::f32> { using T = float; static T from(double x) { return float(x); } static double to(T v) { return v; } };
template <> struct Host<tl::tile<tl::ty::i8>> { using T = int8_t; static T from(double x) { return int8_t(std::lround(x)); } static double to(T v) { return v; } };
template <tl::DType D> struct HostFp8 {
  using T = tl::float8<D>;
  static T from(double x) { return tl::fp8<D>(x); }
  static double to(T v) { return tl::to_double(v); }
};
template <> struct Host<tl::f8e4m3fn> : HostFp8<tl::DType::f8e4m3fn> {};
template <> struct Host<tl::f8e5m2> : HostFp8<tl::DType::f8e5m2> {};
template <> struct Host<tl::f8e4m3fnuz> : HostFp8<tl::DType::f8e4m3fnuz> {};
template <> struct Host<tl::f8e5m2fnuz> : HostFp8<tl::DType::f8e5m2fnuz> {};

// Inputs drawn so that every value is exact in its type: FP8 and i8 from a small range.
template <class E> std::vector<typename Host<E>::T> random_matrix(size_t n, double range) {
  std::vector<float> f = random_floats(n, float(-range), float(range));
  std::vector<typename Host<E>::T> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = Host<E>::from(f[i]);
  return h;
}

}  // namespace tltest

// Host element types of tile dtypes for the dot tests: the host type a tile's elements
// upload as, conversions from and to double, and random matrices exact in the type.
#pragma once

#include <algorithm>
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

// C = A.B in double (A [M, K]; B [K, N], or [N, K] when `b_transposed`) and `scale`, the
// largest sum of |a||b| over C's elements, for the summation error bound.
struct ReferenceProduct {
  std::vector<double> c;
  double scale = 0;
};
template <class EA, class EB>
ReferenceProduct reference_product(const std::vector<typename Host<EA>::T>& a, const std::vector<typename Host<EB>::T>& b,
                                   int M, int N, int K, bool b_transposed) {
  ReferenceProduct r;
  r.c.assign(size_t(M) * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = Host<EA>::to(a[size_t(m) * K + k]);
        double y = Host<EB>::to(b_transposed ? b[size_t(n) * K + k] : b[size_t(k) * N + n]);
        acc += x * y;
        mag += std::fabs(x * y);
      }
      r.c[size_t(m) * N + n] = acc;
      r.scale = std::max(r.scale, mag);
    }
  return r;
}

// Random A [M, K] and B ([K, N], or [N, K] when `b_transposed`) exact in their types, and
// their product in double.
template <class EA, class EB> struct DotProblem {
  std::vector<typename Host<EA>::T> a;
  std::vector<typename Host<EB>::T> b;
  ReferenceProduct want;
};
template <class EA, class EB>
DotProblem<EA, EB> random_dot_problem(int M, int N, int K, bool b_transposed, double range) {
  DotProblem<EA, EB> p;
  p.a = random_matrix<EA>(size_t(M) * K, range);
  p.b = random_matrix<EB>(size_t(K) * N, range);
  p.want = reference_product<EA, EB>(p.a, p.b, M, N, K, b_transposed);
  return p;
}

// A problem on the test device: A and B uploaded, C (M x N of type C) allocated and
// poisoned.
template <class EA, class EB, class C> struct DeviceDot {
  tl::buffer<typename EA::elem> a;
  tl::buffer<typename EB::elem> b;
  tl::buffer<typename C::elem> c;
};
template <class C, class EA, class EB> DeviceDot<EA, EB, C> on_device(const DotProblem<EA, EB>& p, int M, int N) {
  DeviceDot<EA, EB, C> d{upload<typename EA::elem>(p.a), upload<typename EB::elem>(p.b),
                         test_device().alloc<typename C::elem>(size_t(M) * N)};
  poison(d.c);
  return d;
}

}  // namespace tltest

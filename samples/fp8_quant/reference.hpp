// The host reference for samples/fp8_quant (the sample, its tests and the benchmark
// check against it): amax in double, exact; scales as the correctly rounded f32 of the
// double quotient (which is what an IEEE f32 division gives); values two ways:
//   - by FP8 rounding: the code must be the FP8 rounding (tl::to_fp8) of the exact
//     w * FP8_MAX / amax, or of it moved by 2^-21 relative either way (room for the
//     kernel's f32 roundings of 1/scale and of the product, 2^-24 each);
//   - bit for bit against the kernel's own arithmetic done on the host (f32 1/scale,
//     f32 product, then tl::to_fp8), for the tests.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tl/numeric.hpp"

namespace fp8_quant {

struct Reference {
  int64_t E, K, N;
  tl::DType fp8;
  double fp8_max;
  std::vector<double> amax;  // [E, N]: max over k of |W[e, k, n]|; NaN if any is NaN
  std::vector<float> scale;  // [E, N]: what the kernel must store, bit for bit
  std::vector<float> inv;    // [E, N]: the kernel's FP8_MAX / clamped amax, in f32

  Reference(const std::vector<tl::bfloat16>& w, int64_t E, int64_t K, int64_t N, tl::DType fp8)
      : E(E), K(K), N(N), fp8(fp8), fp8_max(tl::max_finite(fp8)) {
    amax.assign(size_t(E * N), 0.0);
    for (int64_t e = 0; e < E; ++e)
      for (int64_t k = 0; k < K; ++k) {
        const tl::bfloat16* row = &w[size_t((e * K + k) * N)];
        double* a = &amax[size_t(e * N)];
        for (int64_t n = 0; n < N; ++n) {
          double v = std::fabs(double(tl::to_float(row[n])));
          if (std::isnan(v) || std::isnan(a[n])) a[n] = NAN;
          else a[n] = std::max(a[n], v);
        }
      }
    scale.resize(amax.size()), inv.resize(amax.size());
    for (size_t i = 0; i < amax.size(); ++i) {
      double a = clamped(amax[i]);
      // A quotient of two floats rounded to double and then to float is the correctly
      // rounded float quotient (53 >= 2 * 24 + 2): an IEEE f32 division.
      scale[i] = float(a / fp8_max);
      inv[i] = float(fp8_max / a);
    }
  }

  // The amax the kernels scale by: floor 1e-12f, +inf -> FLT_MAX, NaN kept.
  static double clamped(double a) {
    if (std::isnan(a)) return a;
    return std::min(std::max(a, double(1e-12f)), double(FLT_MAX));
  }

  double exact_quotient(tl::bfloat16 w, int64_t e, int64_t n) const {
    return double(tl::to_float(w)) * fp8_max / clamped(amax[size_t(e * N + n)]);
  }

  // The kernel's arithmetic: the f32 product of w and the f32 1/scale (the double product
  // of an 8-bit and a 24-bit significand is exact; rounding it to float is the f32 mul),
  // then the saturating conversion.
  uint8_t emulated(tl::bfloat16 w, int64_t e, int64_t n) const {
    float p = float(double(tl::to_float(w)) * double(inv[size_t(e * N + n)]));
    return tl::to_fp8(fp8, double(p));
  }

  bool is_nan(uint8_t code) const { return std::isnan(tl::to_double(fp8, code)); }

  // True if `code` is an FP8 rounding of the exact quotient (within the slack above);
  // any NaN code of the format stands for a NaN.
  bool rounds_right(uint8_t code, tl::bfloat16 w, int64_t e, int64_t n) const {
    double x = exact_quotient(w, e, n);
    if (std::isnan(x)) return is_nan(code);
    const double d = std::ldexp(1.0, -21);
    return code == tl::to_fp8(fp8, x) || code == tl::to_fp8(fp8, x * (1 + d)) || code == tl::to_fp8(fp8, x * (1 - d));
  }
  bool bit_exact(uint8_t code, tl::bfloat16 w, int64_t e, int64_t n) const {
    uint8_t want = emulated(w, e, n);
    return code == want || (is_nan(want) && is_nan(code));
  }
};

// What a run got wrong: scales not bit for bit, values not an FP8 rounding (every
// `stride`-th column n of each expert checked; 1: all), values not bit-exact with the
// emulation (counted only when `exact` is asked).
struct Mismatches {
  int64_t scales = 0, values = 0, not_exact = 0;
  int64_t first_e = -1, first_k = -1, first_n = -1;  // the first bad value
  bool ok() const { return scales == 0 && values == 0 && not_exact == 0; }
};

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b)); }

// q: the [E, N, K] codes; s: the [E, N] scales.
inline Mismatches compare(const Reference& r, const std::vector<tl::bfloat16>& w, const std::vector<uint8_t>& q,
                          const std::vector<float>& s, int64_t stride = 1, bool exact = false) {
  Mismatches m;
  for (size_t i = 0; i < s.size(); ++i) m.scales += !same_bits(s[i], r.scale[i]);
  for (int64_t e = 0; e < r.E; ++e)
    for (int64_t n = 0; n < r.N; n += stride)
      for (int64_t k = 0; k < r.K; ++k) {
        tl::bfloat16 x = w[size_t((e * r.K + k) * r.N + n)];
        uint8_t code = q[size_t((e * r.N + n) * r.K + k)];
        bool bad = !r.rounds_right(code, x, e, n);
        bool inexact = exact && !r.bit_exact(code, x, e, n);
        m.values += bad, m.not_exact += inexact;
        if ((bad || inexact) && m.first_e < 0) m.first_e = e, m.first_k = k, m.first_n = n;
      }
  return m;
}

}  // namespace fp8_quant

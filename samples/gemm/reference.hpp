// The host reference for samples/gemm (the sample, its test and the benchmark check
// against it): C in double precision from the operands' exact values (bf16 and FP8 are
// exact in float), and an error bound per element:
//
//   |got - want| <= 2^-8 |want| + (1 + 2^-8) * K * u * sum_k |a_mk b_kn| (* |scales|)
//                   + 2^-22 |want| (FP8: the two f32 multiplies by the scales)
//
// 2^-8: bf16's rounding of the output (8 significant bits). K * u * sum |a b|: the f32
// summation of K exact products in whatever order the device adds them (products of
// bf16 or FP8 are exact in f32): u = 2^-23 allows twice the error of round-to-nearest
// additions, and so truncating ones too (tensor cores align with truncation). NVIDIA's
// FP8 MMAs add into the accumulator with about 13 fraction bits (DeepSeek-V3, sec.
// 3.3.2, measured ~14 on the H800): there u = 2^-18, 2^-13 per k = 32 instruction
// (fp8_sum_unit says which).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace gemm {

// Random operands: H-typed (tl::bfloat16, tl::float8<D>) for the device and their exact
// values as floats for the reference. A: M*K values, B: K*N (i.i.d., so the same for
// B [K, N] and B^T [N, K]); the scales (`scaled`: FP8) in [0.25, 4).
template <class H> struct Operands {
  std::vector<H> a, b;
  std::vector<float> fa, fb, row_scale, col_scale;
};

// `range`: values uniform in [-range, range) before rounding to H (bf16: 1; FP8: 4,
// which e4m3 holds at 3 significant bits).
template <class H, class Encode>
Operands<H> random_operands(int64_t M, int64_t N, int64_t K, bool scaled, double range, uint64_t seed,
                            Encode encode) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-range, range), s(-2.0, 2.0);
  Operands<H> o;
  auto fill = [&](std::vector<H>& h, std::vector<float>& f, size_t n) {
    h.resize(n), f.resize(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = encode(u(rng));
      f[i] = float(tl::to_float(h[i]));
    }
  };
  fill(o.a, o.fa, size_t(M * K));
  fill(o.b, o.fb, size_t(K * N));
  if (scaled) {
    for (int64_t m = 0; m < M; ++m) o.row_scale.push_back(float(std::exp2(s(rng))));
    for (int64_t n = 0; n < N; ++n) o.col_scale.push_back(float(std::exp2(s(rng))));
  }
  return o;
}

// The summation unit u above for a device kind and dtype.
inline double sum_unit(bool fp8, bool nvidia) { return fp8 && nvidia ? 0x1p-18 : 0x1p-23; }

struct Errors {
  int64_t checked = 0, bad = 0;
  double worst = 0;     // max over checked elements of |got - want| / bound (<= 1 passes)
  double max_abs = 0;   // max |got - want|
  double rel_norm = 0;  // ||got - want|| / ||want|| over the checked rows (the anchor's measure)
  int64_t first_m = -1, first_n = -1;  // the first bad element
  bool ok() const { return bad == 0 && checked > 0; }
};

// The rows checked: all of them, or (for large problems, where the double reference
// would take minutes) every `stride`-th row and the last one, so that ragged edges are
// always in.
inline std::vector<int64_t> rows_to_check(int64_t M, int64_t N, int64_t K, double max_macs = 0x1p31) {
  int64_t per_row = N * K;
  int64_t want = std::max<int64_t>(1, int64_t(max_macs / double(per_row)));
  int64_t stride = want >= M ? 1 : (M + want - 1) / want;
  std::vector<int64_t> rows;
  for (int64_t m = 0; m < M; m += stride) rows.push_back(m);
  if (rows.back() != M - 1) rows.push_back(M - 1);
  return rows;
}

// a: [M, K] row-major; b: [K, N] row-major, or [N, K] row-major when b_t; the scales
// empty (bf16) or [M] and [N] (FP8); got: the device's C [M, N]. Values as floats (the
// exact values of the bf16 / FP8 operands).
inline Errors check(const std::vector<float>& a, const std::vector<float>& b, bool b_t,
                    const std::vector<float>& row_scale, const std::vector<float>& col_scale,
                    const std::vector<tl::bfloat16>& got, int64_t M, int64_t N, int64_t K,
                    const std::vector<int64_t>& rows, double u) {
  Errors e;
  const bool scaled = !row_scale.empty();
  std::vector<double> want(static_cast<size_t>(N)), mag(static_cast<size_t>(N));
  double err2 = 0, ref2 = 0;
  for (int64_t m : rows) {
    std::fill(want.begin(), want.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    const float* ar = &a[size_t(m * K)];
    if (b_t) {
      for (int64_t n = 0; n < N; ++n) {
        const float* bc = &b[size_t(n * K)];
        double s = 0, g = 0;
        for (int64_t k = 0; k < K; ++k) {
          double p = double(ar[k]) * double(bc[k]);
          s += p, g += std::fabs(p);
        }
        want[size_t(n)] = s, mag[size_t(n)] = g;
      }
    } else {
      // Row by row of B: the inner loop runs along N, contiguous.
      for (int64_t k = 0; k < K; ++k) {
        double x = ar[k];
        if (x == 0) continue;
        const float* br = &b[size_t(k * N)];
        for (int64_t n = 0; n < N; ++n) {
          double p = x * double(br[n]);
          want[size_t(n)] += p, mag[size_t(n)] += std::fabs(p);
        }
      }
    }
    for (int64_t n = 0; n < N; ++n) {
      double w = want[size_t(n)], g = mag[size_t(n)];
      double extra = 0;
      if (scaled) {
        double s = double(row_scale[size_t(m)]) * double(col_scale[size_t(n)]);
        w *= s, g *= std::fabs(s);
        extra = 0x1p-22 * std::fabs(w);
      }
      double bound = 0x1p-8 * std::fabs(w) + (1 + 0x1p-8) * double(K) * u * g + extra + 1e-30;
      double v = tl::to_float(got[size_t(m * N + n)]);
      double d = std::fabs(v - w);
      ++e.checked;
      err2 += (v - w) * (v - w), ref2 += w * w;
      if (!(d <= bound)) {  // NaN fails
        if (e.bad++ == 0) e.first_m = m, e.first_n = n;
      }
      e.worst = std::max(e.worst, std::isnan(d) ? INFINITY : d / bound);
      e.max_abs = std::max(e.max_abs, std::isnan(d) ? INFINITY : d);
    }
  }
  e.rel_norm = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return e;
}

// Poisons C (0xAB bytes: no GEMM here computes that bf16 pattern, so an element the
// kernel failed to write shows up), runs `go` once and waits: the first launch's
// milliseconds, compile or cache lookup included.
inline double poison_and_run_once(tl::device dev, const tl::buffer<tl::ty::bf16>& C, const std::function<void()>& go) {
  std::vector<uint8_t> junk(C.bytes(), 0xAB);
  dev.copy_to_device(C.data(), junk.data(), junk.size());
  auto t0 = std::chrono::steady_clock::now();
  go();
  dev.synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace gemm

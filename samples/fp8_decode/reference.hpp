// The host side of samples/fp8_decode (the sample, its test and the benchmark use it):
// random inputs shaped like a quantized KV cache, and the attention in double precision
// from the inputs' exact values (bf16 and FP8 are exact in double) with an error bound
// per output element:
//
//   |got - want| <= (2^-8 + 2^-14 + 4 e_s) * sum_t p_t |v_t| / sum_t p_t + 2^-8 |want|
//
// 2^-8 (twice 2^-9) on the first term: P * v_scale is rounded to bf16 before the PV dot
// (relative 2^-9 per term of the sum); on the second: the bf16 output. 2^-14: the f32
// sums of BLOCK_N products inside the matrix instructions, which may truncate. e_s: a
// bound on a score's f32 error (D * 2^-23 * sum_d |q_d k_td| * sm_scale, its largest over
// t), which moves p_t by a factor exp(+-e_s) (the exp's own error, 2^-21 relative at
// most on every target, is inside the 2^-14).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "samples/fp8_decode/decode.hpp"
#include "tl/numeric.hpp"

namespace fp8_decode {

// The largest finite value of an FP8 format.
inline double fp8_max(tl::DType f) { return f == tl::DType::f8e4m3fnuz ? 240.0 : 448.0; }

// Host copies of the inputs: the bytes for the device and, for the reference, the
// dequantized values (K[b, t, h, :] * k_scale[b, t, h]).
template <tl::DType F> struct Inputs {
  std::vector<tl::bfloat16> q;
  std::vector<tl::float8<F>> k, v;
  std::vector<float> k_scale, v_scale;
  std::vector<int32_t> seq_lens;
};

// Q ~ N(0, 1) in bf16. K and V: FP8 codes distributed as N(0, (max / 4)^2) (a quantizer's
// output: each token's values scaled to the format's range), drawn through a 4096-entry
// quantile table (a bench's 268M-element cache in seconds), per-token scales
// 2^U(-1, 1) / (max / 4), so the dequantized values are about N(0, 2^(2U)).
template <tl::DType F> Inputs<F> random_inputs(const Problem& p, std::vector<int32_t> seq_lens, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double fmax = fp8_max(F), sigma = fmax / 4;
  std::array<uint8_t, 4096> table{};
  for (int i = 0; i < 4096; ++i) {
    // The normal quantile at (i + 0.5) / 4096 by bisection on erfc.
    double u = (i + 0.5) / 4096, lo = -8, hi = 8;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < u ? lo : hi) = mid;
    }
    table[size_t(i)] = tl::to_fp8(F, std::clamp(lo * sigma, -fmax, fmax));
  }
  Inputs<F> in;
  in.seq_lens = std::move(seq_lens);
  std::normal_distribution<double> normal;
  in.q.resize(size_t(p.B * p.Hq * p.D));
  for (auto& x : in.q) x = tl::to_bf16(normal(rng));
  const size_t n = size_t(p.B * p.S_max * p.Hkv * p.D);
  for (auto* t : {&in.k, &in.v}) {
    t->resize(n);
    for (size_t i = 0; i < n; i += 5) {
      uint64_t r = rng();
      for (size_t j = i; j < std::min(n, i + 5); ++j, r >>= 12) (*t)[j] = tl::float8<F>{table[size_t(r & 4095)]};
    }
  }
  std::uniform_real_distribution<double> e(-1, 1);
  for (auto* s : {&in.k_scale, &in.v_scale}) {
    s->resize(size_t(p.B * p.S_max * p.Hkv));
    for (auto& x : *s) x = float(std::exp2(e(rng)) / sigma);
  }
  return in;
}

struct Errors {
  int64_t checked = 0, bad = 0, nan = 0;
  double worst = 0;     // max over checked elements of |got - want| / bound (<= 1 passes)
  double rel_norm = 0;  // ||got - want|| / ||want|| (the anchor's measure)
  int64_t first = -1;   // the first bad element's index in out
  bool ok() const { return bad == 0 && nan == 0 && checked > 0; }
};

// Checks `out` (bf16 [B, Hq, D]) against the double reference, for the batches in
// `batches` (all when empty: a bench's large problems check a few).
template <tl::DType F>
Errors check(const Problem& p, const Inputs<F>& in, const std::vector<tl::bfloat16>& out,
             std::vector<int64_t> batches = {}) {
  if (batches.empty())
    for (int64_t b = 0; b < p.B; ++b) batches.push_back(b);
  const int64_t G = p.G(), D = p.D;
  const double scale = p.scale();
  // Every code's value, once (a bench checks a billion elements of its large shapes).
  std::array<double, 256> decoded{};
  for (int c = 0; c < 256; ++c) decoded[size_t(c)] = tl::to_double(F, uint8_t(c));
  Errors e;
  double diff2 = 0, want2 = 0;
  std::vector<double> s, w(static_cast<size_t>(D)), wabs(static_cast<size_t>(D)), qd(static_cast<size_t>(D));
  for (int64_t b : batches)
    for (int64_t h = 0; h < p.Hq; ++h) {
      const int64_t hk = h / G, len = in.seq_lens[size_t(b)];
      const tl::bfloat16* qrow = &in.q[size_t((b * p.Hq + h) * D)];
      for (int64_t d = 0; d < D; ++d) qd[size_t(d)] = tl::to_float(qrow[d]);
      s.assign(size_t(len), 0);
      double smax = -INFINITY, es = 0;
      for (int64_t t = 0; t < len; ++t) {
        const size_t row = size_t((b * p.S_max + t) * p.Hkv + hk);
        double dot = 0, absdot = 0;
        for (int64_t d = 0; d < D; ++d) {
          double kv = decoded[in.k[row * size_t(D) + size_t(d)].bits];
          dot += qd[size_t(d)] * kv, absdot += std::fabs(qd[size_t(d)] * kv);
        }
        s[size_t(t)] = dot * in.k_scale[row] * scale;
        smax = std::max(smax, s[size_t(t)]);
        es = std::max(es, double(D) * 0x1p-23 * absdot * in.k_scale[row] * scale);
      }
      std::fill(w.begin(), w.end(), 0.0), std::fill(wabs.begin(), wabs.end(), 0.0);
      double l = 0;
      for (int64_t t = 0; t < len; ++t) {
        const size_t row = size_t((b * p.S_max + t) * p.Hkv + hk);
        double pt = std::exp(s[size_t(t)] - smax);
        l += pt;
        for (int64_t d = 0; d < D; ++d) {
          double vv = decoded[in.v[row * size_t(D) + size_t(d)].bits] * in.v_scale[row];
          w[size_t(d)] += pt * vv, wabs[size_t(d)] += pt * std::fabs(vv);
        }
      }
      for (int64_t d = 0; d < D; ++d) {
        const size_t i = size_t((b * p.Hq + h) * D + d);
        double want = len ? w[size_t(d)] / l : 0.0, got = tl::to_float(out[i]);
        double bound = (0x1p-8 + 0x1p-14 + 4 * es) * (len ? wabs[size_t(d)] / l : 0.0) + 0x1p-8 * std::fabs(want);
        ++e.checked;
        if (std::isnan(got)) {
          ++e.nan;
          if (e.first < 0) e.first = int64_t(i);
          continue;
        }
        double err = std::fabs(got - want);
        diff2 += err * err, want2 += want * want;
        double r = bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0);
        e.worst = std::max(e.worst, r);
        if (r > 1) {
          ++e.bad;
          if (e.first < 0) e.first = int64_t(i);
        }
      }
    }
  e.rel_norm = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  return e;
}

// The bytes the kernels must move at the least: K, V, their scales (of the tokens
// attended) and Q and the output. The floor of a run is these over the copy bandwidth.
inline double floor_bytes(const Problem& p, const std::vector<int32_t>& seq_lens) {
  double tokens = 0;
  for (int32_t l : seq_lens) tokens += l;
  return tokens * double(p.Hkv) * (2.0 * double(p.D) + 8.0) + 2.0 * 2.0 * double(p.B * p.Hq * p.D);
}

}  // namespace fp8_decode

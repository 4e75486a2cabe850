// The host reference for samples/moe (the sample, its test and the benchmark check against
// it), in double precision:
// - quantize_mxfp4: the sample's MXFP4 quantization, bit for bit (it is integer
//   arithmetic on the bf16 values' bits, then e2m1's round to nearest even);
// - route: each token's top_k experts (a stable sort of its logits, largest first: equal
//   logits keep the smaller expert first, as tl::topk) and their softmax;
// - layer: y from the dequantized weights (exact values of e2m1 x 2^s) and the reference
//   routing, with an error bound per element of y built from what the device rounds:
//
//   gate, up  f32 sums of exact products (bf16 x the upcast weights):  K 2^-23 sum |x w|
//   h = silu(gate) up, to bf16: the sums' errors through silu (|silu'| < 1.1), sigmoid's
//             own (2^-20 relative), bf16's rounding (2^-8 relative)
//   down      h's errors times |w2|, f32 sums (I 2^-23 sum |h w2|), bf16 (2^-8)
//   y         the routing weights' (fast exp: 2^-17 relative), top_k f32 sums, bf16 (2^-8)
//
//   2^-23 is twice round-to-nearest's unit: tensor cores that truncate are within it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "samples/moe/moe.hpp"
#include "tl/numeric.hpp"

namespace moe {

// bf16 rows [R, K] (their values) as the sample's MXFP4: packed e2m1 bytes [R, K / 2]
// (element 2i in the low nibble) and e8m0 codes [R, K / 32].
struct Mxfp4 {
  std::vector<uint8_t> q, s;
};
inline Mxfp4 quantize_mxfp4_ref(const std::vector<tl::bfloat16>& w, int64_t R, int64_t K) {
  Mxfp4 m;
  m.q.assign(size_t(R * K / 2), 0);
  m.s.assign(size_t(R * K / 32), 0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t b = 0; b < K / 32; ++b) {
      const tl::bfloat16* x = &w[size_t(r * K + b * 32)];
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(tl::to_float(x[i])));
      uint32_t bits;
      std::memcpy(&bits, &amax, 4);
      const int code = std::max(int(bits >> 23) - 2 + ((bits & 0x7FFFFF) > 0x400000 ? 1 : 0), 0);
      m.s[size_t(r * (K / 32) + b)] = uint8_t(code);
      for (int i = 0; i < 32; ++i) {
        const uint8_t c = tl::to_e2m1(std::ldexp(double(tl::to_float(x[i])), 127 - code));
        m.q[size_t((r * K + b * 32 + i) / 2)] |= uint8_t(i % 2 ? c << 4 : c);
      }
    }
  return m;
}

// The values MXFP4 rows hold, [R, K].
inline std::vector<double> dequantize(const Mxfp4& m, int64_t R, int64_t K) {
  std::vector<double> v(size_t(R * K));
  for (int64_t i = 0; i < R * K; ++i) {
    const uint8_t byte = m.q[size_t(i / 2)];
    v[size_t(i)] = tl::e2m1_to_double(i % 2 ? byte >> 4 : byte & 15) * std::ldexp(1.0, int(m.s[size_t(i / 32)]) - 127);
  }
  return v;
}

struct Routing {
  std::vector<int32_t> ids;  // [T, top_k]
  std::vector<double> w;     // [T, top_k]
};
inline Routing route_ref(const std::vector<float>& logits, const Problem& p) {
  Routing r;
  std::vector<int> order(size_t(p.E));
  for (int64_t t = 0; t < p.T; ++t) {
    const float* row = &logits[size_t(t * p.E)];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    double sum = 0;
    for (int64_t j = 0; j < p.top_k; ++j) sum += std::exp(double(row[order[size_t(j)]]) - row[order[0]]);
    for (int64_t j = 0; j < p.top_k; ++j) {
      r.ids.push_back(order[size_t(j)]);
      r.w.push_back(std::exp(double(row[order[size_t(j)]]) - row[order[0]]) / sum);
    }
  }
  return r;
}

struct Errors {
  int64_t checked = 0, bad = 0;
  double worst = 0;  // max |got - want| / bound (<= 1 passes)
  int64_t first_t = -1, first_n = -1;
  bool ok() const { return bad == 0 && checked > 0; }
};

// Checks y [T, H] (bf16) for the tokens `tokens` against the layer's value from x [T, H],
// the weights' values w1 [E, 2I, H], w2 [E, H, I] and the routing.
inline Errors check_layer(const Problem& p, const std::vector<float>& x, const std::vector<double>& w1,
                          const std::vector<double>& w2, const Routing& r, const std::vector<tl::bfloat16>& y,
                          const std::vector<int64_t>& tokens) {
  Errors e;
  const double u = 0x1p-23;
  std::vector<double> h(size_t(p.I)), dh(size_t(p.I)), want(size_t(p.H)), bound(size_t(p.H));
  for (int64_t t : tokens) {
    std::fill(want.begin(), want.end(), 0.0);
    std::fill(bound.begin(), bound.end(), 0.0);
    const float* xt = &x[size_t(t * p.H)];
    for (int64_t j = 0; j < p.top_k; ++j) {
      const int64_t ex = r.ids[size_t(t * p.top_k + j)];
      const double wj = r.w[size_t(t * p.top_k + j)];
      for (int64_t i = 0; i < p.I; ++i) {
        const double* gr = &w1[size_t((ex * 2 * p.I + i) * p.H)];
        const double* ur = &w1[size_t((ex * 2 * p.I + p.I + i) * p.H)];
        double g = 0, G = 0, up = 0, U = 0;
        for (int64_t k = 0; k < p.H; ++k) {
          g += xt[k] * gr[k], G += std::fabs(xt[k] * gr[k]);
          up += xt[k] * ur[k], U += std::fabs(xt[k] * ur[k]);
        }
        const double dg = double(p.H) * u * G, du = double(p.H) * u * U;
        const double silu = g / (1 + std::exp(-g));
        h[size_t(i)] = silu * up;
        const double prop = 1.1 * dg * (std::fabs(up) + du) + (std::fabs(silu) + 1.1 * dg) * du + 0x1p-20 * std::fabs(h[size_t(i)]);
        dh[size_t(i)] = prop + 0x1p-8 * (std::fabs(h[size_t(i)]) + prop);
      }
      for (int64_t n = 0; n < p.H; ++n) {
        const double* dr = &w2[size_t((ex * p.H + n) * p.I)];
        double d = 0, D = 0, err = 0;
        for (int64_t i = 0; i < p.I; ++i) {
          d += h[size_t(i)] * dr[i];
          D += (std::fabs(h[size_t(i)]) + dh[size_t(i)]) * std::fabs(dr[i]);
          err += dh[size_t(i)] * std::fabs(dr[i]);
        }
        err += double(p.I) * u * D;
        err += 0x1p-8 * (std::fabs(d) + err);  // the down output in bf16
        want[size_t(n)] += wj * d;
        bound[size_t(n)] += wj * (1 + 0x1p-17) * err + 0x1p-17 * wj * std::fabs(d) +
                            double(p.top_k) * u * wj * (std::fabs(d) + err);
      }
    }
    for (int64_t n = 0; n < p.H; ++n) {
      const double b = bound[size_t(n)] + 0x1p-8 * (std::fabs(want[size_t(n)]) + bound[size_t(n)]) + 1e-30;
      const double got = tl::to_float(y[size_t(t * p.H + n)]);
      const double d = std::fabs(got - want[size_t(n)]);
      ++e.checked;
      if (!(d <= b) && e.bad++ == 0) e.first_t = t, e.first_n = n;
      e.worst = std::max(e.worst, std::isnan(d) ? INFINITY : d / b);
    }
  }
  return e;
}

// The tokens checked: all, or (large problems, where the double reference would take
// minutes) every stride-th and the last.
inline std::vector<int64_t> tokens_to_check(const Problem& p, double max_macs = 0x1p31) {
  const double per_token = 3.0 * double(p.top_k) * double(p.H) * double(p.I);
  const int64_t want = std::max<int64_t>(1, int64_t(max_macs / per_token));
  const int64_t stride = want >= p.T ? 1 : (p.T + want - 1) / want;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < p.T; i += stride) t.push_back(i);
  if (t.back() != p.T - 1) t.push_back(p.T - 1);
  return t;
}

// A layer's random inputs: x in [-1, 1); logits N(0, 1); weights whose 32-value blocks
// have magnitudes 2^-3 .. 2^3 of a 1/sqrt(K) scale (so that the scales vary) in bf16.
struct Inputs {
  std::vector<tl::bfloat16> x, w1, w2;
  std::vector<float> fx, logits;
};
inline Inputs random_inputs(const Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<int> mag(-3, 3);
  std::normal_distribution<float> n(0, 1);
  Inputs in;
  for (int64_t i = 0; i < p.T * p.H; ++i) {
    in.x.push_back(tl::to_bf16(u(rng)));
    in.fx.push_back(tl::to_float(in.x.back()));
  }
  for (int64_t i = 0; i < p.T * p.E; ++i) in.logits.push_back(n(rng));
  auto weights = [&](std::vector<tl::bfloat16>& w, int64_t count, int64_t K) {
    double block = 1;
    for (int64_t i = 0; i < count; ++i) {
      if (i % 32 == 0) block = std::ldexp(1.0, mag(rng)) / std::sqrt(double(K));
      w.push_back(tl::to_bf16(u(rng) * block));
    }
  };
  weights(in.w1, p.E * 2 * p.I * p.H, p.H);
  weights(in.w2, p.E * p.H * p.I, p.I);
  return in;
}

inline std::vector<double> values_of(const std::vector<tl::bfloat16>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = tl::to_float(v[i]);
  return d;
}

}  // namespace moe

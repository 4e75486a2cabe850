// The host side of samples/attention (the sample, its test and the benchmark use it):
// random inputs, and attention forward and backward in double precision from the inputs'
// exact values, with an error bound per output element. Each bound is a multiple of the
// sum of the magnitudes of the terms that make the element (A below), which is what the
// kernels' roundings scale with:
//
//   O_id   = sum_j p_ij v_jd                 A = sum_j p_ij |v_jd|
//   dV_jd  = sum_i p_ij dO_id                A = sum_i p_ij |dO_id|
//   dK_jd  = scale sum_i dS_ij q_id          A = scale sum_i a_ij |q_id|
//   dQ_id  = scale sum_j dS_ij k_jd          A = scale sum_j a_ij |k_jd|
//   dS_ij  = p_ij (dP_ij - Delta_i)          a_ij = p_ij (sum_d |dO_id v_jd| + sum_d |dO_id| (A^O_id + |O_id|))
//
//   |got - want| <= (c + 4 e_s) A + 2^-8 |want|
//
// c = 2^-8 for O and dV: P is rounded to the input type before its dot (2^-9 relative, bf16),
// twice that for margin. c = 2^-7 for dK and dQ: dS is rounded (2^-9 of a_ij) and Delta comes
// from the kernel's rounded O (within O's own bound, the A^O term of a_ij). 2^-8 |want|: the
// output's own rounding. e_s: a bound on a score's f32 error (D 2^-23 scale sum_d |q_id k_jd|,
// its largest over the head), which moves p by a factor exp(+-e_s), or 2 e_s with the LSE's
// own error. LSE: |got - want| <= 2^-12 + 4 e_s (f32 sums of exponentials).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "samples/attention/attention.hpp"
#include "tl/numeric.hpp"

namespace attention {

// The host type of an element type: tl::bfloat16 for tl::ty::bf16, tl::half for tl::ty::f16.
template <class E> using host_t = std::conditional_t<std::is_same_v<E, tl::ty::bf16>, tl::bfloat16, tl::half>;
inline tl::bfloat16 from_double(double x, tl::bfloat16*) { return tl::to_bf16(x); }
inline tl::half from_double(double x, tl::half*) { return tl::to_f16(x); }

// Q, K, V and dO ~ N(0, 1), rounded to the element type.
template <class H> struct Inputs {
  std::vector<H> q, k, v, d_o;
};
template <class H> Inputs<H> random_inputs(const Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Inputs<H> in;
  auto fill = [&](std::vector<H>& t, int64_t n) {
    t.resize(size_t(n));
    for (auto& x : t) x = from_double(normal(rng), static_cast<H*>(nullptr));
  };
  fill(in.q, p.q_elems()), fill(in.k, p.kv_elems()), fill(in.v, p.kv_elems()), fill(in.d_o, p.q_elems());
  return in;
}

// Values and bounds of every output; the elements of heads not computed are NaN (their
// bound too: compare() skips them).
struct Reference {
  std::vector<double> o, o_bound, lse, lse_bound;
  std::vector<double> dq, dq_bound, dk, dk_bound, dv, dv_bound;  // empty without the backward
};

// `groups`: the key/value heads (b * Hkv + hkv) to compute, with all their query heads
// (all when empty: a benchmark's large problems check a few).
template <class H>
Reference reference(const Problem& p, const Inputs<H>& in, bool backward, std::vector<int64_t> groups = {}) {
  if (groups.empty())
    for (int64_t g = 0; g < p.B * p.Hkv; ++g) groups.push_back(g);
  const int64_t D = p.D, Sq = p.S_q, Sk = p.S_k, G = p.G();
  const double scale = p.scale(), nan = std::numeric_limits<double>::quiet_NaN();
  Reference r;
  r.o.assign(size_t(p.q_elems()), nan), r.o_bound = r.o;
  r.lse.assign(size_t(p.rows()), nan), r.lse_bound = r.lse;
  if (backward) {
    r.dq.assign(size_t(p.q_elems()), nan), r.dq_bound = r.dq;
    r.dk.assign(size_t(p.kv_elems()), nan), r.dk_bound = r.dk;
    r.dv.assign(size_t(p.kv_elems()), nan), r.dv_bound = r.dv;
  }
  auto f = [](const auto& t, int64_t i) { return double(tl::to_float(t[size_t(i)])); };
  std::vector<double> P(size_t(Sq * Sk)), A(size_t(Sq * Sk)), dS(size_t(Sq * Sk)), o_abs(size_t(Sq * D));
  for (int64_t bkv : groups) {
    const int64_t kv0 = bkv * Sk * D;
    std::vector<double> dk(size_t(Sk * D), 0.0), dk_abs = dk, dv = dk, dv_abs = dk;
    double es_group = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t bh = bkv * G + g, q0 = bh * Sq * D;
      double es = 0;
      for (int64_t i = 0; i < Sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) {
          double s = 0, sa = 0;
          for (int64_t d = 0; d < D; ++d) {
            double t = f(in.q, q0 + i * D + d) * f(in.k, kv0 + j * D + d);
            s += t, sa += std::fabs(t);
          }
          es = std::max(es, double(D) * 0x1p-23 * scale * sa);
          bool valid = !p.causal || j <= i + Sk - Sq;
          P[size_t(i * Sk + j)] = valid ? s * scale : -INFINITY;
          mx = std::max(mx, P[size_t(i * Sk + j)]);
        }
        double l = 0;
        for (int64_t j = 0; j < Sk; ++j) l += mx == -INFINITY ? 0.0 : std::exp(P[size_t(i * Sk + j)] - mx);
        const double lse = l > 0 ? mx + std::log(l) : INFINITY;
        r.lse[size_t(bh * Sq + i)] = lse;
        r.lse_bound[size_t(bh * Sq + i)] = 0x1p-12 + 4 * es;
        for (int64_t j = 0; j < Sk; ++j) P[size_t(i * Sk + j)] = l > 0 ? std::exp(P[size_t(i * Sk + j)] - lse) : 0.0;
        for (int64_t d = 0; d < D; ++d) {
          double o = 0, oa = 0;
          for (int64_t j = 0; j < Sk; ++j) {
            double v = f(in.v, kv0 + j * D + d);
            o += P[size_t(i * Sk + j)] * v, oa += P[size_t(i * Sk + j)] * std::fabs(v);
          }
          r.o[size_t(q0 + i * D + d)] = o;
          r.o_bound[size_t(q0 + i * D + d)] = (0x1p-8 + 4 * es) * oa + 0x1p-8 * std::fabs(o);
          o_abs[size_t(i * D + d)] = oa;
        }
      }
      es_group = std::max(es_group, es);
      if (!backward) continue;
      // dS and its magnitude a_ij, then dQ of this head and its share of dK and dV.
      for (int64_t i = 0; i < Sq; ++i) {
        double delta = 0, delta_abs = 0;
        for (int64_t d = 0; d < D; ++d) {
          double go = f(in.d_o, q0 + i * D + d), o = r.o[size_t(q0 + i * D + d)];
          delta += go * o, delta_abs += std::fabs(go) * (o_abs[size_t(i * D + d)] + std::fabs(o));
        }
        for (int64_t j = 0; j < Sk; ++j) {
          const double pij = P[size_t(i * Sk + j)];
          double dp = 0, dpa = 0;
          if (pij != 0)
            for (int64_t d = 0; d < D; ++d) {
              double t = f(in.d_o, q0 + i * D + d) * f(in.v, kv0 + j * D + d);
              dp += t, dpa += std::fabs(t);
            }
          dS[size_t(i * Sk + j)] = pij * (dp - delta);
          A[size_t(i * Sk + j)] = pij * (dpa + delta_abs);
        }
      }
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t d = 0; d < D; ++d) {
          double v = 0, va = 0;
          for (int64_t j = 0; j < Sk; ++j) {
            double k = f(in.k, kv0 + j * D + d);
            v += dS[size_t(i * Sk + j)] * k, va += A[size_t(i * Sk + j)] * std::fabs(k);
          }
          r.dq[size_t(q0 + i * D + d)] = scale * v;
          r.dq_bound[size_t(q0 + i * D + d)] = (0x1p-7 + 4 * es) * scale * va + 0x1p-8 * std::fabs(scale * v);
        }
      for (int64_t j = 0; j < Sk; ++j)
        for (int64_t i = 0; i < Sq; ++i) {
          const double pij = P[size_t(i * Sk + j)], ds = dS[size_t(i * Sk + j)], a = A[size_t(i * Sk + j)];
          if (pij == 0) continue;
          for (int64_t d = 0; d < D; ++d) {
            double q = f(in.q, q0 + i * D + d), go = f(in.d_o, q0 + i * D + d);
            dk[size_t(j * D + d)] += ds * q, dk_abs[size_t(j * D + d)] += a * std::fabs(q);
            dv[size_t(j * D + d)] += pij * go, dv_abs[size_t(j * D + d)] += pij * std::fabs(go);
          }
        }
    }
    if (!backward) continue;
    for (int64_t x = 0; x < Sk * D; ++x) {
      const size_t at = size_t(kv0 + x), xs = size_t(x);
      r.dk[at] = scale * dk[xs];
      r.dk_bound[at] = (0x1p-7 + 4 * es_group) * scale * dk_abs[xs] + 0x1p-8 * std::fabs(r.dk[at]);
      r.dv[at] = dv[xs];
      r.dv_bound[at] = (0x1p-8 + 4 * es_group) * dv_abs[xs] + 0x1p-8 * std::fabs(dv[xs]);
    }
  }
  return r;
}

struct Errors {
  int64_t checked = 0, bad = 0, nan = 0;
  double worst = 0;    // max over checked elements of |got - want| / bound (<= 1 passes)
  int64_t first = -1;  // the first bad element's index
  bool ok() const { return bad == 0 && nan == 0 && checked > 0; }
};

// `got` against `want` within `bound`, where the reference computed them (bound not NaN).
// Infinite wants (an LSE of a row that sees no key) must be matched exactly.
template <class T>
Errors compare(const std::vector<T>& got, const std::vector<double>& want, const std::vector<double>& bound) {
  Errors e;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (std::isnan(bound[i])) continue;
    ++e.checked;
    double g;
    if constexpr (std::is_same_v<T, float>) g = got[i];
    else g = double(tl::to_float(got[i]));
    double r;
    if (std::isnan(g)) {
      ++e.nan;
      r = INFINITY;
    } else if (std::isinf(want[i])) {
      r = g == want[i] ? 0.0 : INFINITY;
    } else {
      const double err = std::fabs(g - want[i]);
      r = bound[i] > 0 ? err / bound[i] : (err > 0 ? INFINITY : 0.0);
    }
    e.worst = std::max(e.worst, r);
    if (r > 1 && !std::isnan(g)) ++e.bad;
    if (r > 1 && e.first < 0) e.first = int64_t(i);
  }
  if (got.size() != want.size()) e.bad += 1;
  return e;
}

}  // namespace attention

// Flash attention in tl (issue 28): Triton's tutorial 06 (forward and backward) written as
// a user writes it (plain tl::load into tl::dot, the loops' loads left to the pipeliner),
// with what the tutorial leaves out: grouped-query attention, ragged and unequal sequence
// lengths, bf16 and f16, and the row log-sum-exp as an output.
//
//   Q, dQ       [B, H,   S_q, D]   bf16 or f16, contiguous
//   K, V, dK, dV [B, Hkv, S_k, D]  query head h reads key/value head h / G, G = H / Hkv
//   O, dO       [B, H,   S_q, D]
//   LSE         [B, H,   S_q]      f32: log(sum_j exp(s_ij)), s = sm_scale * Q.K^T
//
// Causal masking is bottom-right aligned (FlashAttention's convention, the one a KV cache
// needs): query row i sees key j when j <= i + S_k - S_q; with S_q == S_k that is the usual
// lower triangle. A query row that sees no key (S_q > S_k, causal) gets O = 0 and LSE = +inf,
// so the backward's exp(s - LSE) is 0 there with no case of its own.
//
// Forward (attn_fwd): a program owns BLOCK_M query rows of one (batch, head). It runs two
// loops over BLOCK_N blocks of keys: the first over the keys every row of the block sees
// (no mask at all: all keys below the block's diagonal, and below S_k rounded down to
// BLOCK_N), the second over the rest up to the last key any row sees (the diagonal
// blocks, and the ragged last block of S_k), masked. So a causal program stops at its
// diagonal and only the diagonal blocks pay for the mask, as in the tutorial's two
// stages. Online softmax in exp2 (scores scaled by sm_scale * log2(e)); P rounded to the
// input type for the P.V dot.
//
// Backward (Triton's tutorial algorithm, three kernels):
//   attn_bwd_preprocess  Delta_i = sum_d O_id dO_id and LSE_i * log2(e) (f32, the backward's
//                        scratch: per (batch, head) S_q of each)
//   attn_bwd_dkdv        a program owns BLOCK_N keys of one key/value head and loops over
//                        the G query heads of its group and their BLOCK_M blocks of query
//                        rows (the masked diagonal blocks first, then the rest unmasked;
//                        at D <= 64 the ragged last block of S_q apart, where the
//                        diagonal's loop did not take it):
//                        P^T = exp2(K.Q^T * scale*log2e - LSE*log2e), dV += P^T.dO,
//                        dP^T = V.dO^T, dS^T = P^T * (dP^T - Delta), dK += dS^T.Q. The
//                        group's sum of dK and dV stays in registers: no atomics.
//   attn_bwd_dq          a program owns BLOCK_M query rows and loops over the keys as the
//                        forward does: dQ += dS.K.
// Ragged rows and keys are handled by the loads' masks (a row past S_q loads zeros for Q, dO,
// LSE and Delta, so it adds exactly 0 to dK and dV), only in the blocks that may hold them;
// scores are masked only in the diagonal and ragged blocks. Offsets are 32-bit: each tensor has fewer than 2^31 elements (check()).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "tl/autotune.hpp"
#include "tl/tl.hpp"

namespace attention {

// ---- the problem ---------------------------------------------------------------------

struct Problem {
  int64_t B = 1, H = 1, Hkv = 1, S_q = 1, S_k = 1, D = 64;
  bool causal = false;
  double sm_scale = -1;  // < 0: 1 / sqrt(D)

  int64_t G() const { return H / Hkv; }
  double scale() const { return sm_scale < 0 ? 1.0 / std::sqrt(double(D)) : sm_scale; }
  int64_t q_elems() const { return B * H * S_q * D; }
  int64_t kv_elems() const { return B * Hkv * S_k * D; }
  int64_t rows() const { return B * H * S_q; }
  // The backward's scratch (f32): Delta and LSE * log2(e) of every query row.
  int64_t scratch_elems() const { return 2 * rows(); }
  std::string str() const {
    return fmt::format("B={} H={} Hkv={} S_q={} S_k={} D={}{}", B, H, Hkv, S_q, S_k, D, causal ? " causal" : "");
  }
  // The forward's FLOPs as the tutorial counts them (two dots of 2*S_q*S_k*D a head), the
  // pairs a causal mask removes left out; the backward does 2.5 times the forward's work.
  double fwd_flops() const {
    double pairs = double(S_q) * double(S_k);
    if (causal) {
      // Row i sees min(max(i + S_k - S_q + 1, 0), S_k) keys.
      pairs = 0;
      for (int64_t i = 0; i < S_q; ++i) pairs += double(std::clamp<int64_t>(i + S_k - S_q + 1, 0, S_k));
    }
    return 4.0 * double(B * H) * pairs * double(D);
  }
};

// Shapes, D and the head grouping, before anything is compiled or launched.
inline void check(const Problem& p) {
  auto fail = [&](const std::string& why) { throw std::invalid_argument("attention (" + p.str() + "): " + why); };
  if (p.B < 1 || p.H < 1 || p.Hkv < 1) fail("B, H and Hkv must be positive");
  if (p.S_q < 1 || p.S_k < 1) fail("S_q and S_k must be positive");
  if (p.H % p.Hkv) fail("H must be a multiple of Hkv (grouped-query attention: H / Hkv query heads share a key head)");
  if (p.D != 16 && p.D != 32 && p.D != 64 && p.D != 128 && p.D != 256) fail("D must be 16, 32, 64, 128 or 256");
  const int64_t lim = int64_t(1) << 31;
  if (p.q_elems() >= lim || p.kv_elems() >= lim) fail("Q and K must have fewer than 2^31 elements (32-bit offsets)");
  if (!(std::isfinite(p.sm_scale) && (p.sm_scale > 0 || p.sm_scale == -1)))
    fail("sm_scale must be positive and finite (or -1 for 1/sqrt(D))");
}

// A buffer's length against what the problem needs ("lengths" of the issue): raw device
// pointers cannot be checked.
template <class P> void check_length(const Problem& p, const P& buf, int64_t want, const char* name) {
  if constexpr (requires { buf.size(); }) {
    if (int64_t(buf.size()) != want)
      throw std::invalid_argument(fmt::format("attention ({}): {} has {} elements, the problem needs {}", p.str(), name,
                                              buf.size(), want));
  }
}

// ---- configurations -------------------------------------------------------------------

// One kernel's launch configuration, Triton's names. Forward and dQ: BLOCK_M query rows a
// program, BLOCK_N keys an iteration. dK/dV: BLOCK_N keys a program, BLOCK_M query rows an
// iteration (the tutorial's BLOCK_N1 / BLOCK_M1). matrix_instr_nonkdim and waves_per_eu
// are AMD's knobs (0: the compiler's choice), ignored elsewhere.
struct Config {
  BOOST_HANA_DEFINE_STRUCT(Config, (int, block_m), (int, block_n), (int, num_warps), (int, num_stages),
                           (int, matrix_instr_nonkdim), (int, waves_per_eu));
};

inline std::string str(const Config& c) {
  std::string s = fmt::format("{}x{} w{} s{}", c.block_m, c.block_n, c.num_warps, c.num_stages);
  if (c.matrix_instr_nonkdim) s += fmt::format(" mfma{}", c.matrix_instr_nonkdim);
  if (c.waves_per_eu) s += fmt::format(" wpe{}", c.waves_per_eu);
  return s;
}

inline void check(const Config& c, const char* kernel) {
  auto pow2 = [](int x) { return x >= 16 && x <= 256 && (x & (x - 1)) == 0; };
  if (!pow2(c.block_m) || !pow2(c.block_n))
    throw std::invalid_argument(fmt::format("attention {}: BLOCK_M and BLOCK_N must be powers of two from 16 to 256 ({})",
                                            kernel, str(c)));
  if (c.num_warps < 1 || c.num_warps > 16 || (c.num_warps & (c.num_warps - 1)))
    throw std::invalid_argument(fmt::format("attention {}: num_warps must be 1, 2, 4, 8 or 16 ({})", kernel, str(c)));
  if (c.num_stages < 1 || c.num_stages > 8)
    throw std::invalid_argument(fmt::format("attention {}: num_stages must be 1 to 8 ({})", kernel, str(c)));
}

inline tl::launch_options options_of(const Config& c) { return tl::options_from(c); }

// ---- the kernels -----------------------------------------------------------------------

constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;

// The key blocks a program of query rows [m0, m0 + BLOCK_M) visits, as two loops: [0, lo)
// where every row sees every key (no mask), [lo, hi) the diagonal and ragged blocks. lo is
// a multiple of BLOCK_N at most S_k rounded down to one, so the first loop never reads past
// S_k.
struct KeyRange {
  tl::i32 lo, hi;
};
inline KeyRange key_range(const tl::i32& m0, const tl::i32& S_q, const tl::i32& S_k, int BLOCK_M, int BLOCK_N,
                          bool causal) {
  tl::i32 full = S_k / BLOCK_N * BLOCK_N;
  if (!causal) return {full, S_k};
  auto shift = S_k - S_q;  // row i sees keys j <= i + shift
  tl::i32 lo = tl::minimum(tl::maximum(m0 + shift, 0) / BLOCK_N * BLOCK_N, full);
  tl::i32 hi = tl::minimum(tl::maximum(m0 + BLOCK_M + shift, 0), S_k);
  return {lo, hi};
}

// A tile of keys loaded from `ptrs`: in a masked block the keys kn past S_k read 0 (kn
// along `axis` of the tile), in the others every key exists and the load has no mask.
template <class Ptrs> auto load_keys(const Ptrs& ptrs, const tl::i32& kn, const tl::i32& S_k, int axis, bool masked) {
  return masked ? tl::load(ptrs, tl::expand_dims(kn < S_k, axis), 0.0f) : tl::load(ptrs);
}

// The [BLOCK_M, BLOCK_N] pairs (query row, key) of a masked block that exist: keys before
// S_k and, causal, at or before the row's diagonal (key j <= row i + shift).
inline auto visible(const tl::i32& offs_m, const tl::i32& kn, const tl::i32& S_k, const tl::i32& shift, bool causal) {
  auto valid = tl::expand_dims(kn < S_k, 0);
  if (causal) valid = valid & (tl::expand_dims(offs_m + shift, 1) >= tl::expand_dims(kn, 0));
  return valid;
}

// attn_fwd. E: tl::ty::bf16 or tl::ty::f16. CAUSAL, D, the blocks and STAGES are trace-time
// (Triton's constexprs); S_q, S_k and G run-time.
template <class E>
void fwd_body(const tl::ptr<E>& Q, const tl::ptr<E>& K, const tl::ptr<E>& V, const tl::ptr<E>& O,
              const tl::ptr<tl::ty::f32>& LSE, const tl::i32& S_q, const tl::i32& S_k, const tl::i32& G,
              const tl::f32& sm_scale, int BLOCK_M, int BLOCK_N, int D, int CAUSAL, int STAGES) {
  const float inf = std::numeric_limits<float>::infinity();
  auto start_m = tl::program_id(0);
  auto bh = tl::program_id(1);  // b * H + h; its key/value head is b * Hkv + h / G = bh / G
  auto m0 = start_m * BLOCK_M;
  auto offs_m = m0 + tl::arange(0, BLOCK_M);
  auto offs_n = tl::arange(0, BLOCK_N);
  auto offs_d = tl::arange(0, D);
  auto q_base = bh * S_q * D;
  auto kv_base = bh / G * S_k * D;
  auto row_ok = tl::expand_dims(offs_m < S_q, 1);
  auto q = tl::load(Q + q_base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0), row_ok, 0.0f);
  auto m_i = tl::full<tl::f32>({BLOCK_M}, -inf);
  auto l_i = tl::zeros<tl::f32>({BLOCK_M});
  auto acc = tl::zeros<tl::f32>({BLOCK_M, D});
  auto qk_scale = sm_scale * kLog2e;
  auto shift = S_k - S_q;
  KeyRange r = key_range(m0, S_q, S_k, BLOCK_M, BLOCK_N, CAUSAL);

  // One loop over key blocks [lo, hi); `masked`: the blocks where some (row, key) pair is
  // out (past S_k, or after the row's diagonal).
  auto keys = [&](const tl::i32& lo, const tl::i32& hi, bool masked) {
    for (auto n : tl::range(lo, hi, BLOCK_N, tl::num_stages(STAGES))) {
      auto kn = n + offs_n;
      auto k_ptrs = K + kv_base + tl::expand_dims(kn, 0) * D + tl::expand_dims(offs_d, 1);  // K^T [D, BLOCK_N]
      auto v_ptrs = V + kv_base + tl::expand_dims(kn, 1) * D + tl::expand_dims(offs_d, 0);  // [BLOCK_N, D]
      auto kt = load_keys(k_ptrs, kn, S_k, 0, masked);
      auto qk = tl::dot(q, kt) * qk_scale;
      if (masked) qk = tl::where(visible(offs_m, kn, S_k, shift, CAUSAL), qk, -inf);
      auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
      // What the scores are measured from. A row that has seen no key yet (only in a
      // masked causal block) has m = -inf: measure from 0 there, so that exp2(-inf - m)
      // is 0, not NaN.
      auto m_sub = masked && CAUSAL ? tl::where(m_ij == -inf, 0.0f, m_ij) : m_ij;
      auto p = tl::exp2(qk - tl::expand_dims(m_sub, 1));
      auto alpha = tl::exp2(m_i - m_sub);
      l_i = l_i * alpha + tl::sum(p, 1);
      acc = acc * tl::expand_dims(alpha, 1);
      auto v = load_keys(v_ptrs, kn, S_k, 1, masked);
      acc = tl::dot(p.template to<E>(), v, acc);
      m_i = m_ij;
    }
  };
  keys(0, r.lo, false);
  keys(r.lo, r.hi, true);

  // l = 0 only for a row that saw no key: O = 0 and LSE = +inf there.
  auto seen = l_i > 0.0f;
  auto l_safe = tl::where(seen, l_i, 1.0f);
  acc = acc / tl::expand_dims(l_safe, 1);
  tl::store(O + q_base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0), acc.template to<E>(), row_ok);
  auto lse = tl::where(seen, (m_i + tl::log2(l_safe)) * kLn2, inf);
  tl::store(LSE + bh * S_q + offs_m, lse, offs_m < S_q);
}

// The row statistics the backward's loops read, per query row, in f32: Delta = rowsum(O * dO)
// and LSE * log2(e), the scores' exponent in exp2 (the forward's LSE is the natural log a
// user reads). Stats [B*H, 2, S_q]: a head's Delta, then its LSE * log2(e). Scaled here once
// a row: scaled where dK/dV reads it, each lane multiplies every column it holds (16 FMULs an
// iteration at 64x64 on sm_90), the same product each time.
template <class E>
void bwd_preprocess_body(const tl::ptr<E>& O, const tl::ptr<E>& DO, const tl::ptr<tl::ty::f32>& LSE,
                         const tl::ptr<tl::ty::f32>& Stats, const tl::i32& S_q, int BLOCK_M, int D) {
  auto bh = tl::program_id(1);
  auto offs_m = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_d = tl::arange(0, D);
  auto m_ok = offs_m < S_q;
  auto ok = tl::expand_dims(m_ok, 1);
  auto at = bh * S_q * D + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0);
  auto o = tl::load(O + at, ok, 0.0f).template to<tl::f32>();
  auto d_o = tl::load(DO + at, ok, 0.0f).template to<tl::f32>();
  auto stats = Stats + bh * 2 * S_q + offs_m;
  tl::store(stats, tl::sum(o * d_o, 1), m_ok);
  tl::store(stats + S_q, tl::load(LSE + bh * S_q + offs_m, m_ok, 0.0f) * kLog2e, m_ok);
}

// dK, dV for BLOCK_N keys of one key/value head, summed over its G query heads.
template <class E>
void bwd_dkdv_body(const tl::ptr<E>& Q, const tl::ptr<E>& K, const tl::ptr<E>& V, const tl::ptr<E>& DO,
                   const tl::ptr<tl::ty::f32>& Stats, const tl::ptr<E>& DK,
                   const tl::ptr<E>& DV, const tl::i32& S_q, const tl::i32& S_k, const tl::i32& G,
                   const tl::f32& sm_scale, int BLOCK_M, int BLOCK_N, int D, int CAUSAL, int STAGES) {
  auto n0 = tl::program_id(0) * BLOCK_N;
  auto bhkv = tl::program_id(1);  // b * Hkv + hkv; its query heads are bhkv * G + g
  auto offs_n = n0 + tl::arange(0, BLOCK_N);
  auto offs_d = tl::arange(0, D);
  auto kv_base = bhkv * S_k * D;
  auto kv_at = tl::expand_dims(offs_n, 1) * D + tl::expand_dims(offs_d, 0);
  auto key_ok = tl::expand_dims(offs_n < S_k, 1);
  auto k = tl::load(K + kv_base + kv_at, key_ok, 0.0f);
  auto v = tl::load(V + kv_base + kv_at, key_ok, 0.0f);
  auto dk = tl::zeros<tl::f32>({BLOCK_N, D});
  auto dv = tl::zeros<tl::f32>({BLOCK_N, D});
  auto qk_scale = sm_scale * kLog2e;
  auto shift = S_k - S_q;
  auto offs_mb = tl::arange(0, BLOCK_M);

  // The query rows that see some of these keys start at n0 - shift; those that see all of
  // them at n0 + BLOCK_N - 1 - shift. Rows [m_lo, m_mid) are masked, [m_mid, S_q) not.
  // At D <= 64 the unmasked loop stops at S_q rounded down to BLOCK_M, so that its loads need
  // no row mask, and the ragged last block, where the diagonal's loop has not taken it, is a
  // loop of its own: there the loop is issue-bound (on sm_90, 64x64: 352 -> 325 SASS
  // instructions, the row masks' ISETPs and selected copy sizes). At D = 128 the other loop's
  // registers cost more than the masks (sm_90 64x128 w8 would spill 56 bytes).
  const bool ragged_loop = D <= 64;
  tl::i32 rows_end = tl::cdiv(S_q, BLOCK_M) * BLOCK_M, rows_full = S_q / BLOCK_M * BLOCK_M;
  tl::i32 m_lo = 0, m_mid = 0;
  if (CAUSAL) {
    m_lo = tl::minimum(tl::maximum(n0 - shift, 0) / BLOCK_M * BLOCK_M, rows_end);
    m_mid = tl::minimum(m_lo + tl::cdiv(tl::maximum(n0 + BLOCK_N - shift - m_lo, 0), BLOCK_M) * BLOCK_M, rows_end);
  }

  for (auto g : tl::range(0, G, 1, tl::num_stages(1))) {
    auto bh = bhkv * G + g;
    auto q_base = bh * S_q * D;
    auto delta_at = Stats + bh * 2 * S_q, lse2_at = delta_at + S_q;  // bwd_preprocess_body's rows
    // `masked`: the diagonal's causal mask; `ragged`: rows past S_q may be in the block.
    auto rows = [&](const tl::i32& lo, const tl::i32& hi, bool masked, bool ragged) {
      for (auto m : tl::range(lo, hi, BLOCK_M, tl::num_stages(STAGES))) {
        auto offs_m = m + offs_mb;
        auto m_ok = offs_m < S_q;
        auto load_rows = [&](const auto& ptrs, int axis) {
          return ragged ? tl::load(ptrs, tl::expand_dims(m_ok, axis), 0.0f) : tl::load(ptrs);
        };
        auto load_row = [&](const auto& ptrs) { return ragged ? tl::load(ptrs, m_ok, 0.0f) : tl::load(ptrs); };
        // Q^T [D, BLOCK_M], as the tutorial loads it.
        auto qT = load_rows(Q + q_base + tl::expand_dims(offs_m, 0) * D + tl::expand_dims(offs_d, 1), 0);
        auto lse2 = load_row(lse2_at + offs_m);
        auto qkT = tl::dot(k, qT);
        auto pT = tl::exp2(qkT * qk_scale - tl::expand_dims(lse2, 0));
        if (masked) pT = tl::where(tl::expand_dims(offs_m + shift, 0) >= tl::expand_dims(offs_n, 1), pT, 0.0f);
        auto d_o = load_rows(DO + q_base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0), 1);
        dv = tl::dot(pT.template to<E>(), d_o, dv);
        auto delta = load_row(delta_at + offs_m);
        auto dpT = tl::dot(v, tl::trans(d_o));
        auto dsT = pT * (dpT - tl::expand_dims(delta, 0));
        dk = tl::dot(dsT.template to<E>(), tl::trans(qT), dk);
      }
    };
    if (CAUSAL) rows(m_lo, m_mid, true, true);
    if (ragged_loop) {
      rows(m_mid, rows_full, false, false);
      rows(tl::maximum(m_mid, rows_full), rows_end, false, true);
    } else {
      rows(m_mid, rows_end, false, true);
    }
  }
  dk = dk * sm_scale;
  tl::store(DK + kv_base + kv_at, dk.template to<E>(), key_ok);
  tl::store(DV + kv_base + kv_at, dv.template to<E>(), key_ok);
}

// dQ for BLOCK_M query rows of one head.
template <class E>
void bwd_dq_body(const tl::ptr<E>& Q, const tl::ptr<E>& K, const tl::ptr<E>& V, const tl::ptr<E>& DO,
                 const tl::ptr<tl::ty::f32>& Stats, const tl::ptr<E>& DQ,
                 const tl::i32& S_q, const tl::i32& S_k, const tl::i32& G, const tl::f32& sm_scale, int BLOCK_M,
                 int BLOCK_N, int D, int CAUSAL, int STAGES) {
  auto m0 = tl::program_id(0) * BLOCK_M;
  auto bh = tl::program_id(1);
  auto offs_m = m0 + tl::arange(0, BLOCK_M);
  auto offs_n = tl::arange(0, BLOCK_N);
  auto offs_d = tl::arange(0, D);
  auto q_base = bh * S_q * D;
  auto kv_base = bh / G * S_k * D;
  auto m_ok = offs_m < S_q;
  auto q_at = tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0);
  auto q = tl::load(Q + q_base + q_at, tl::expand_dims(m_ok, 1), 0.0f);
  auto d_o = tl::load(DO + q_base + q_at, tl::expand_dims(m_ok, 1), 0.0f);
  auto delta = tl::load(Stats + bh * 2 * S_q + offs_m, m_ok, 0.0f);  // bwd_preprocess_body's rows
  auto lse2 = tl::load(Stats + bh * 2 * S_q + S_q + offs_m, m_ok, 0.0f);
  auto dq = tl::zeros<tl::f32>({BLOCK_M, D});
  auto qk_scale = sm_scale * kLog2e;
  auto shift = S_k - S_q;
  KeyRange r = key_range(m0, S_q, S_k, BLOCK_M, BLOCK_N, CAUSAL);
  // The row statistics as columns once, before the loops (as the tutorial makes m[:, None]):
  // on AMD the loaded row vector and the scores' rows lie on different lanes and warps, so
  // the column is a trip through shared memory, which a loop would pay each iteration.
  auto lse2_col = tl::expand_dims(lse2, 1), delta_col = tl::expand_dims(delta, 1);
  auto keys = [&](const tl::i32& lo, const tl::i32& hi, bool masked) {
    for (auto n : tl::range(lo, hi, BLOCK_N, tl::num_stages(STAGES))) {
      auto kn = n + offs_n;
      auto t_ptrs = tl::expand_dims(kn, 0) * D + tl::expand_dims(offs_d, 1);  // [D, BLOCK_N]
      auto kT = load_keys(K + kv_base + t_ptrs, kn, S_k, 0, masked);
      auto vT = load_keys(V + kv_base + t_ptrs, kn, S_k, 0, masked);
      auto qk = tl::dot(q, kT);
      auto p = tl::exp2(qk * qk_scale - lse2_col);
      if (masked) p = tl::where(visible(offs_m, kn, S_k, shift, CAUSAL), p, 0.0f);
      auto dp = tl::dot(d_o, vT);
      auto ds = p * (dp - delta_col);
      dq = tl::dot(ds.template to<E>(), tl::trans(kT), dq);
    }
  };
  keys(0, r.lo, false);
  keys(r.lo, r.hi, true);
  dq = dq * sm_scale;
  tl::store(DQ + q_base + q_at, dq.template to<E>(), tl::expand_dims(m_ok, 1));
}

template <class E> constexpr const char* type_name() { return std::is_same_v<E, tl::ty::bf16> ? "bf16" : "f16"; }

template <class E> auto& fwd_kernel() {
  static auto k = tl::kernel(std::string("attn_fwd_") + type_name<E>(),
                             [](tl::ptr<E> Q, tl::ptr<E> K, tl::ptr<E> V, tl::ptr<E> O, tl::ptr<tl::ty::f32> LSE,
                                tl::i32 S_q, tl::i32 S_k, tl::i32 G, tl::f32 sm_scale, int BLOCK_M, int BLOCK_N, int D,
                                int CAUSAL, int STAGES) {
                               fwd_body<E>(Q, K, V, O, LSE, S_q, S_k, G, sm_scale, BLOCK_M, BLOCK_N, D, CAUSAL, STAGES);
                             });
  return k;
}

template <class E> auto& bwd_preprocess_kernel() {
  static auto k = tl::kernel(std::string("attn_bwd_preprocess_") + type_name<E>(),
                             [](tl::ptr<E> O, tl::ptr<E> DO, tl::ptr<tl::ty::f32> LSE, tl::ptr<tl::ty::f32> Stats,
                                tl::i32 S_q, int BLOCK_M,
                                int D) { bwd_preprocess_body<E>(O, DO, LSE, Stats, S_q, BLOCK_M, D); });
  return k;
}

template <class E> auto& bwd_dkdv_kernel() {
  static auto k = tl::kernel(std::string("attn_bwd_dkdv_") + type_name<E>(),
                             [](tl::ptr<E> Q, tl::ptr<E> K, tl::ptr<E> V, tl::ptr<E> DO, tl::ptr<tl::ty::f32> Stats,
                                tl::ptr<E> DK, tl::ptr<E> DV, tl::i32 S_q, tl::i32 S_k,
                                tl::i32 G, tl::f32 sm_scale, int BLOCK_M, int BLOCK_N, int D, int CAUSAL, int STAGES) {
                               bwd_dkdv_body<E>(Q, K, V, DO, Stats, DK, DV, S_q, S_k, G, sm_scale, BLOCK_M,
                                                BLOCK_N, D, CAUSAL, STAGES);
                             });
  return k;
}

template <class E> auto& bwd_dq_kernel() {
  static auto k = tl::kernel(std::string("attn_bwd_dq_") + type_name<E>(),
                             [](tl::ptr<E> Q, tl::ptr<E> K, tl::ptr<E> V, tl::ptr<E> DO, tl::ptr<tl::ty::f32> Stats,
                                tl::ptr<E> DQ, tl::i32 S_q, tl::i32 S_k, tl::i32 G,
                                tl::f32 sm_scale, int BLOCK_M, int BLOCK_N, int D, int CAUSAL, int STAGES) {
                               bwd_dq_body<E>(Q, K, V, DO, Stats, DQ, S_q, S_k, G, sm_scale, BLOCK_M, BLOCK_N, D,
                                              CAUSAL, STAGES);
                             });
  return k;
}

// ---- launches with a given configuration ------------------------------------------------

constexpr int kPreprocessRows = 64;  // rows a program of attn_bwd_preprocess

inline tl::grid fwd_grid(const Config& c, const Problem& p) { return tl::grid(tl::cdiv(p.S_q, c.block_m), p.B * p.H); }
inline tl::grid dkdv_grid(const Config& c, const Problem& p) {
  return tl::grid(tl::cdiv(p.S_k, c.block_n), p.B * p.Hkv);
}
inline tl::grid dq_grid(const Config& c, const Problem& p) { return tl::grid(tl::cdiv(p.S_q, c.block_m), p.B * p.H); }

// O, LSE = attention(Q, K, V). Buffers: tl::buffer of E (LSE: f32) or raw device pointers.
template <class E, class PQ, class PK, class PV, class PO, class PL>
void forward(const Config& c, const Problem& p, const PQ& q, const PK& k, const PV& v, const PO& o, const PL& lse) {
  check(p), check(c, "forward");
  check_length(p, q, p.q_elems(), "Q"), check_length(p, k, p.kv_elems(), "K"), check_length(p, v, p.kv_elems(), "V");
  check_length(p, o, p.q_elems(), "O"), check_length(p, lse, p.rows(), "LSE");
  fwd_kernel<E>()[fwd_grid(c, p)].with(options_of(c))(q, k, v, o, lse, int(p.S_q), int(p.S_k), int(p.G()),
                                                        float(p.scale()), c.block_m, c.block_n, int(p.D), int(p.causal),
                                                        c.num_stages);
}

// dQ, dK, dV from dO and the forward's O and LSE. `stats`: Problem::scratch_elems() f32 of
// scratch (2 * B*H*S_q: the preprocess's Delta and LSE * log2(e)).
template <class E, class PQ, class PK, class PV, class PO, class PDO, class PL, class PD, class PDQ, class PDK, class PDV>
void backward(const Config& dkdv, const Config& dq, const Problem& p, const PQ& q, const PK& k, const PV& v,
              const PO& o, const PDO& d_o, const PL& lse, const PD& stats, const PDQ& dq_out, const PDK& dk_out,
              const PDV& dv_out) {
  check(p), check(dkdv, "backward dK/dV"), check(dq, "backward dQ");
  check_length(p, q, p.q_elems(), "Q"), check_length(p, k, p.kv_elems(), "K"), check_length(p, v, p.kv_elems(), "V");
  check_length(p, o, p.q_elems(), "O"), check_length(p, d_o, p.q_elems(), "dO"), check_length(p, lse, p.rows(), "LSE");
  check_length(p, stats, p.scratch_elems(), "the scratch (Delta, LSE * log2(e))");
  check_length(p, dq_out, p.q_elems(), "dQ");
  check_length(p, dk_out, p.kv_elems(), "dK"), check_length(p, dv_out, p.kv_elems(), "dV");
  const int S_q = int(p.S_q), S_k = int(p.S_k), G = int(p.G()), D = int(p.D), causal = int(p.causal);
  const float scale = float(p.scale());
  bwd_preprocess_kernel<E>()[tl::grid(tl::cdiv(p.S_q, kPreprocessRows), p.B * p.H)].with({.num_warps = 4})(
      o, d_o, lse, stats, S_q, kPreprocessRows, D);
  bwd_dkdv_kernel<E>()[dkdv_grid(dkdv, p)].with(options_of(dkdv))(q, k, v, d_o, stats, dk_out, dv_out, S_q, S_k,
                                                                  G, scale, dkdv.block_m, dkdv.block_n, D, causal,
                                                                  dkdv.num_stages);
  bwd_dq_kernel<E>()[dq_grid(dq, p)].with(options_of(dq))(q, k, v, d_o, stats, dq_out, S_q, S_k, G, scale,
                                                          dq.block_m, dq.block_n, D, causal, dq.num_stages);
}

}  // namespace attention

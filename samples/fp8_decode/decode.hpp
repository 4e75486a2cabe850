// FP8 split-K decode attention in tl (issue 15, seed 002): one new query token per
// sequence attending over an FP8 KV cache.
//
//   Q        bf16 [B, Hq, D]
//   K, V     FP8 [B, S_max, Hkv, D] (e4m3fnuz on gfx942; e4m3fn on gfx950, NVIDIA, the CPU)
//   k_scale, v_scale  f32 [B, S_max, Hkv]: token t of batch b in KV head h is K[b, t, h, :] * k_scale[b, t, h]
//   seq_lens i32 [B]: batch b attends over tokens [0, seq_lens[b]) (0: its output is zeros)
//   out      bf16 [B, Hq, D] = softmax(Q K^T * sm_scale) V, query head h reading KV head h / G (GQA, G = Hq / Hkv)
//
// Two kernels, the algorithm of ../shared/anchors/fp8_decode_anchor.py:
// - decode_partial, one program per (batch, KV head, slice of the sequence): the G query
//   heads of the KV head are the M rows of both dots (padded to BLOCK_M >= 16, tl::dot's
//   smallest M), and the program runs the online softmax over its slice BLOCK_N tokens at a
//   time, writing its normalized output and its log-sum-exp per query head. Where the
//   slices are few, the last program of each (batch, KV head) to finish merges them too
//   (merges_in_partial), and the combine is not launched.
// - decode_combine, one program per query head: merges the slices by their log-sum-exp.
//   On sm_90+ it is a programmatic dependent launch of the partial kernel (launch_pdl,
//   tl::gdc_wait at its start, tl::gdc_launch_dependents after the partial's main loop).
// On NVIDIA the dots run in f16 (Config::dot_f16: e4m3 converts to f16 in one instruction a
// pair); elsewhere in bf16.
//
// Seed 002's lessons, as code:
// - K goes straight into the QK^T dot and is dequantized there: its FP8 tile is copied
//   into shared memory, read as the dot's operand, and its per-token scale multiplies the
//   dot's f32 result (a column scale), so no dequantized K tile is ever built.
// - V is loaded where the accumulator is updated (its scale folded into P's columns).
// - Nothing lives across iterations but the accumulator and the running max and sum: the
//   K and V tiles of the iterations ahead are in shared memory, not registers. The loop is
//   `tl::range(start, end, BLOCK_N, tl::num_stages(S))`; each tile is a load stored into a
//   one-stage tl::shared buffer, which the pipeliner turns into S stages of direct copies
//   (cp.async on NVIDIA, buffer loads into LDS on AMD) issued S-1 iterations ahead.
// - Per-target candidate configurations (seed 002's two kernels first on AMD) and a
//   guardrail: a configuration whose compile report shows spills (or, on AMD, more than
//   the seed's 108 VGPRs) is never launched, the next candidate is (guarded_choice). On
//   tl's gfx942 / gfx950 code the seed's tuple (BLOCK_N=64, 1 warp) needs 93 / 88 VGPRs at
//   D=64 and is chosen; at D=128 it needs 131 / 124, so 4 warps are chosen (74 / 74).
//
// Offsets are 32-bit: check_problem refuses caches of 2^31 elements or more.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace fp8_decode {

// "cpu" (--target), "cpu-skylake" (a CPU device's target()), "host".
inline bool is_cpu(const std::string& target) { return target.rfind("cpu", 0) == 0 || target == "host"; }
inline bool is_amd(const std::string& target) { return target.rfind("gfx", 0) == 0; }

// The KV cache's FP8 format on a target: gfx942's matrix cores and converters take the
// FNUZ formats, every other target the OCP ones.
inline std::string fp8_format_for(const std::string& target) {
  return target.rfind("gfx942", 0) == 0 ? "e4m3fnuz" : "e4m3fn";
}

// The problem's sizes (the tensors' shapes above) and the softmax scale.
struct Problem {
  int64_t B = 1, S_max = 1, Hq = 1, Hkv = 1, D = 128;
  float sm_scale = 0;  // 0: 1/sqrt(D)
  int64_t G() const { return Hkv > 0 ? Hq / Hkv : 0; }
  float scale() const { return sm_scale != 0 ? sm_scale : float(1.0 / std::sqrt(double(D))); }
  std::string str() const { return fmt::format("B={} S_max={} Hq={} Hkv={} D={}", B, S_max, Hq, Hkv, D); }
};

// A launch configuration of decode_partial (Triton's names). BLOCK_M is the query heads
// of one KV head padded to a power of two of at least 16.
struct Config {
  int block_n = 64;
  int num_stages = 2;
  int num_warps = 1;
  int via_shared = 1;  // K and V tiles staged through tl::shared (else loaded into registers)
  // The dots in f16 instead of bf16: e4m3 is exact in both, but on NVIDIA the hardware
  // converts e4m3 pairs to f16 (cvt.rn.f16x2.e4m3x2) and reaching bf16 from there costs
  // three more instructions a pair. Q (bf16) is exact in f16 for |q| in [2^-17, 65504]
  // (smaller magnitudes lose bits below 2^-24; larger ones overflow to infinity, and the
  // output is NaN), and P * v_scale rounds to f16 (2^-11, finer than bf16's 2^-8) for
  // v_scale up to 65504: a model's queries and an FP8 cache's scales sit far inside.
  int dot_f16 = 0;
  std::string str() const {
    return fmt::format("BLOCK_N={} num_stages={} num_warps={}{}{}", block_n, num_stages, num_warps,
                       via_shared ? " via shared" : "", dot_f16 ? " f16 dots" : "");
  }
};

inline int block_m_for(int64_t G) {
  int m = 16;
  while (m < G) m *= 2;
  return m;
}

// Refuses what the kernels cannot run, with the reason, before anything is launched.
inline void check_problem(const Problem& p) {
  auto bad = [&](const std::string& why) { throw std::invalid_argument("fp8_decode: " + why + " (" + p.str() + ")"); };
  if (p.B < 1 || p.S_max < 1 || p.Hq < 1 || p.Hkv < 1) bad("B, S_max, Hq and Hkv must be positive");
  if (p.D != 64 && p.D != 128 && p.D != 256) bad("D must be 64, 128 or 256");
  if (p.Hq % p.Hkv != 0) bad("Hq must be a multiple of Hkv");
  if (p.G() > 16) bad("at most 16 query heads per KV head (G = Hq / Hkv)");
  if (!(p.scale() > 0) || !std::isfinite(p.scale())) bad("the softmax scale must be positive and finite");
  const int64_t lim = int64_t(1) << 31;
  if (p.B * p.S_max * p.Hkv * p.D >= lim) bad("K and V must have fewer than 2^31 elements (32-bit offsets)");
}

inline void check_seq_lens(const Problem& p, std::span<const int32_t> seq_lens) {
  if (int64_t(seq_lens.size()) != p.B)
    throw std::invalid_argument(fmt::format("fp8_decode: {} sequence lengths for B={}", seq_lens.size(), p.B));
  for (size_t b = 0; b < seq_lens.size(); ++b)
    if (seq_lens[b] < 0 || seq_lens[b] > p.S_max)
      throw std::invalid_argument(fmt::format("fp8_decode: seq_lens[{}] = {} is outside [0, S_max = {}]", b,
                                              seq_lens[b], p.S_max));
}

// ---- the kernels -------------------------------------------------------------------------

// The merge of slices by their log-sum-exp, shared by the combine kernel and the merge in
// the partial kernel: a slice's weight against the largest log-sum-exp (an empty slice,
// -inf, weighs nothing: lse - mx is NaN where both are -inf), and the weighted sum over the
// weights' sum (zeros where every slice is empty: a sequence of length 0).
template <class L, class M> auto slice_weight(const L& lse, const M& mx) {
  const float inf = std::numeric_limits<float>::infinity();
  return tl::where(lse > -inf, tl::fast_expf(lse - mx), 0.0f);
}
template <class N, class S> auto merged(const N& num, const S& den) {
  return tl::where(den > 0.0f, num / tl::where(den > 0.0f, den, 1.0f), 0.0f);
}

// decode_partial's body with its dots in DT (bf16 or f16).
template <class F8, class DT>
void partial_body(tl::ptr<tl::bf16> q, tl::ptr<F8> kc, tl::ptr<F8> vc, tl::ptr<tl::f32> k_scale,
                  tl::ptr<tl::f32> v_scale, tl::ptr<tl::i32> seq_lens, tl::ptr<tl::f32> part_o,
                  tl::ptr<tl::f32> part_lse, tl::ptr<tl::i32> tickets, tl::ptr<tl::bf16> out, tl::i32 S_max,
                  tl::i32 split, tl::i32 chunk, tl::f32 sm_scale, int HKV, int G, int D, int BLOCK_M, int BLOCK_N,
                  int STAGES, int VIA_SHARED, int MERGE) {
  const float inf = std::numeric_limits<float>::infinity();
  auto bh = tl::program_id(0), sp = tl::program_id(1);
  auto b = bh / HKV, hk = bh % HKV;
  auto len = tl::load(seq_lens + b);
  auto m = tl::arange(0, BLOCK_M), d = tl::arange(0, D);
  auto row_ok = tl::expand_dims(m < G, 1);
  // The G query heads of KV head hk are rows bh * G .. bh * G + G - 1 of Q [B * Hq, D].
  auto qt = tl::load(q + tl::expand_dims((bh * G + m) * D, 1) + tl::expand_dims(d, 0), row_ok, 0).template to<DT>();
  // This program's slice: [start, end), `chunk` tokens (whole BLOCK_N blocks) but the last
  // of the sequence; a slice past the sequence's end is empty.
  auto start = sp * chunk;
  auto end = tl::minimum(start + chunk, len);

  auto m_i = tl::full<tl::f32>({BLOCK_M}, -inf);  // running max of the scaled scores
  auto l_i = tl::zeros<tl::f32>({BLOCK_M});       // running softmax denominator
  auto acc = tl::zeros<tl::f32>({BLOCK_M, D});    // running softmax-weighted V
  // K's and V's tiles through shared memory (VIA_SHARED) or straight from global memory.
  std::optional<tl::shared_tile<tl::elem_t<F8>>> sk, sv;
  if (VIA_SHARED) sk = tl::shared<F8>({1, BLOCK_N, D}), sv = tl::shared<F8>({1, BLOCK_N, D});
  for (auto n0 : tl::range(start, end, BLOCK_N, tl::num_stages(STAGES))) {
    auto n = n0 + tl::arange(0, BLOCK_N);
    auto n_ok = n < end;  // the loop's own bound check: the copies ahead need no other mask
    auto token = (b * S_max + n) * HKV + hk;  // row of K, V and the scales
    auto tile = tl::expand_dims(token * D, 1) + tl::expand_dims(d, 0);
    auto tile_ok = tl::expand_dims(n_ok, 1);
    // The tile of K or V as the dot's operand (e4m3 values are exact in bf16 and f16).
    auto operand = [&](const tl::ptr<F8>& cache, const std::optional<tl::shared_tile<tl::elem_t<F8>>>& buf) {
      auto t = tl::load(cache + tile, tile_ok, 0);
      if (!buf) return t.template to<DT>();
      (*buf)[0].store(t);
      return (*buf)[0].load().template to<DT>();
    };
    // Scores: Q.K^T on the matrix cores, then K's per-token scale and the softmax scale
    // on the f32 columns.
    auto kt = operand(kc, sk);
    auto ks = tl::load(k_scale + token, n_ok, 0.0f);
    auto qk = tl::dot(qt, tl::trans(kt)) * tl::expand_dims(ks * sm_scale, 0);
    qk = tl::where(tl::expand_dims(n_ok, 0), qk, -inf);
    // Online softmax: every block has a valid token, so m_new is finite. The exponentials
    // are the hardware's (Triton's tl.exp: exp2 of x log2 e; arguments <= 0, so a few ulp).
    auto m_new = tl::maximum(m_i, tl::max(qk, 1));
    auto p = tl::fast_expf(qk - tl::expand_dims(m_new, 1));
    auto alpha = tl::fast_expf(m_i - m_new);
    l_i = l_i * alpha + tl::sum(p, 1);
    // V's per-token scale scales P's columns (the rows of V), in f32 before P is rounded.
    auto vt = operand(vc, sv);
    auto vs = tl::load(v_scale + token, n_ok, 0.0f);
    auto pv = (p * tl::expand_dims(vs, 0)).template to<DT>();
    acc = acc * tl::expand_dims(alpha, 1) + tl::dot(pv, vt);
    m_i = m_new;
  }
  // Programmatic dependent launch (sm_90+; a no-op elsewhere): the combine, launched with
  // launch_pdl, may be scheduled from here on, so that its launch and start overlap this
  // grid's epilogue instead of following the grid's last program; its tl::gdc_wait() still
  // waits for every store below. After the main loop, where Triton's kernels put it: earlier,
  // the combine's waiting programs would hold SM slots the partial programs still need.
  if (!MERGE) tl::gdc_launch_dependents();
  auto nonempty = l_i > 0.0f;
  auto o = acc / tl::expand_dims(tl::where(nonempty, l_i, 1.0f), 1);
  auto lse = tl::where(nonempty, m_i + tl::log(tl::where(nonempty, l_i, 1.0f)), -inf);
  auto part = (bh * split + sp) * G + m;  // [BLOCK_M]
  tl::store(part_o + tl::expand_dims(part * D, 1) + tl::expand_dims(d, 0), o, row_ok);
  tl::store(part_lse + part, lse, m < G);
  if (!MERGE) return;
  // The merge folded in (MERGE: the split count's tile, a power of two): the last program
  // of (b, hk) to finish merges the slices of its G heads into `out`, as combine_kernel
  // does. The barrier puts every thread's partial stores before the ticket; the ticket
  // (acq_rel, device scope) puts every program's before the last one's reads.
  tl::barrier();
  auto ticket = tl::atomic_add(tickets + bh, 1);
  tl::if_(ticket == split - 1, [&] {
    tl::atomic_xchg(tickets + bh, 0);  // ready for the next call
    auto lse_of = [&](int s) {
      return tl::load(part_lse + ((bh * split + s) * G + m), (m < G) & (s < split), -inf);
    };
    auto mx = tl::full<tl::f32>({BLOCK_M}, -inf);
    for (int s : tl::static_range(MERGE)) mx = tl::maximum(mx, lse_of(s));
    auto num = tl::zeros<tl::f32>({BLOCK_M, D});
    auto den = tl::zeros<tl::f32>({BLOCK_M});
    for (int s : tl::static_range(MERGE)) {
      auto l = lse_of(s);
      auto w = slice_weight(l, mx);
      auto rows = (bh * split + s) * G + m;
      auto os = tl::load(part_o + tl::expand_dims(rows * D, 1) + tl::expand_dims(d, 0), row_ok & (s < split), 0.0f);
      num = num + os * tl::expand_dims(w, 1);
      den = den + w;
    }
    auto res = merged(num, tl::expand_dims(den, 1));
    tl::store(out + tl::expand_dims((bh * G + m) * D, 1) + tl::expand_dims(d, 0), res.template to<tl::bf16>(), row_ok);
  });
}

// Partial results, for slice s of (batch b, KV head h) and query head g of the group:
//   part_o   f32 [B * Hkv, split, G, D]: that slice's softmax-weighted V (normalized)
//   part_lse f32 [B * Hkv, split, G]: log of the slice's softmax denominator, in units
//            of the scaled scores (-inf for an empty slice)
template <class F8> auto& partial_kernel() {
  static auto k = tl::kernel("fp8_decode_partial", [](tl::ptr<tl::bf16> q, tl::ptr<F8> kc, tl::ptr<F8> vc,
                                                      tl::ptr<tl::f32> k_scale, tl::ptr<tl::f32> v_scale,
                                                      tl::ptr<tl::i32> seq_lens, tl::ptr<tl::f32> part_o,
                                                      tl::ptr<tl::f32> part_lse, tl::ptr<tl::i32> tickets,
                                                      tl::ptr<tl::bf16> out, tl::i32 S_max, tl::i32 split,
                                                      tl::i32 chunk, tl::f32 sm_scale, int HKV, int G, int D, int BLOCK_M,
                                                      int BLOCK_N, int STAGES, int VIA_SHARED, int DOT_F16, int MERGE) {
    if (DOT_F16)
      partial_body<F8, tl::f16>(q, kc, vc, k_scale, v_scale, seq_lens, part_o, part_lse, tickets, out, S_max, split,
                                chunk, sm_scale, HKV, G, D, BLOCK_M, BLOCK_N, STAGES, VIA_SHARED, MERGE);
    else
      partial_body<F8, tl::bf16>(q, kc, vc, k_scale, v_scale, seq_lens, part_o, part_lse, tickets, out, S_max, split,
                                 chunk, sm_scale, HKV, G, D, BLOCK_M, BLOCK_N, STAGES, VIA_SHARED, MERGE);
  });
  return k;
}

// Merges the slices of one query head by their log-sum-exp: weights exp(lse_s - max lse),
// empty slices (lse = -inf) weigh nothing, and a head whose slices are all empty (seq_len
// 0) writes zeros. SPLIT_P2: the split count padded to a power of two (the tile size).
inline auto& combine_kernel() {
  static auto k = tl::kernel("fp8_decode_combine", [](tl::ptr<tl::f32> part_o, tl::ptr<tl::f32> part_lse,
                                                      tl::ptr<tl::bf16> out, tl::i32 split, int G, int D,
                                                      int SPLIT_P2) {
    const float inf = std::numeric_limits<float>::infinity();
    auto head = tl::program_id(0);  // b * Hq + h = (b * Hkv + h / G) * G + h % G
    auto bh = head / G, g = head % G;
    auto s = tl::arange(0, SPLIT_P2), d = tl::arange(0, D);
    auto s_ok = s < split;
    auto part = (bh * split + s) * G + g;
    // Launched dependent on the partial kernel (launch_pdl): the partial results are read
    // only once that grid has finished and its stores are visible.
    tl::gdc_wait();
    auto lse = tl::load(part_lse + part, s_ok, -inf);
    auto w = slice_weight(lse, tl::max(lse, 0));
    auto o = tl::load(part_o + tl::expand_dims(part * D, 1) + tl::expand_dims(d, 0), tl::expand_dims(s_ok, 1), 0.0f);
    auto res = merged(tl::sum(o * tl::expand_dims(w, 1), 0), tl::sum(w, 0));
    tl::store(out + head * D + d, res.to<tl::bf16>());
  });
  return k;
}

// ---- split count, configurations, the guardrail -----------------------------------------

// How each (batch, KV head)'s tokens are sliced among programs: `split` programs, each
// over `chunk` tokens (whole BLOCK_N blocks) from sp * chunk, the last of a sequence
// shorter and those past its end empty (they write an empty slice's -inf and exit).
struct Slicing {
  int split = 1;
  int32_t chunk = 0;
};

// The shortest chunk (whole BLOCK_N blocks, at least 4 of them: each slice's partial
// output costs a [G, D] f32 write and read, and a short slice never gets its pipeline
// going) for which the non-empty programs of the whole batch number at most about four per
// compute unit, and at most 64 slices a sequence. Four a compute unit is what one wave
// holds on the H100 at the chosen configuration: a partial second wave of programs is a
// tail (16x16384 ran 382 us at 5 slices, 640 programs, against 334 at 3 and 330 at 6; at
// 1x32768 57 us at 64 slices against 65 at 33: bench/results/h100-2026-11-23-fp8-decode
// run4/, sweep3.txt). With ragged lengths every program still gets the same chunk, so the
// longest sequences get the most programs and no program is the others' tail (a chunk per
// sequence of len / split left the longest sequences' programs the critical path).
// `force_split`: that many slices of the longest sequence instead.
inline Slicing choose_slicing(const Problem& p, int compute_units, const Config& c,
                              std::span<const int32_t> seq_lens = {}, int force_split = 0) {
  std::vector<int32_t> lens(seq_lens.begin(), seq_lens.end());
  if (lens.empty()) lens.assign(size_t(p.B), int32_t(p.S_max));
  const int64_t longest = *std::max_element(lens.begin(), lens.end());
  const int64_t bn = c.block_n;
  auto blocks = [&](int64_t tokens) { return (tokens + bn - 1) / bn * bn; };
  if (longest < 1) return {1, int32_t(bn)};
  if (force_split) return {force_split, int32_t(std::max(bn, blocks((longest + force_split - 1) / force_split)))};
  const int64_t budget = 4 * int64_t(compute_units);
  int64_t chunk = std::max(4 * bn, blocks((longest + 63) / 64));
  for (; chunk < longest; chunk += bn) {
    int64_t programs = 0;
    for (int32_t l : lens) programs += (l + chunk - 1) / chunk;
    if (programs * p.Hkv <= budget) break;
  }
  chunk = std::min(chunk, blocks(longest));
  return {int((longest + chunk - 1) / chunk), int32_t(chunk)};
}

// The candidates for a target, in order of preference; the guardrail takes the first that
// passes. AMD: seed 002's two kernels first, so that they are judged on every target (a
// compiler that fits them would run them): its first kernel (K and V tiles held in
// registers, a 128-token tile, 1 warp: 512 VGPRs and 56 spills under Triton on MI350) and
// its fixed tuple (BLOCK_N=64, num_stages=2, num_warps=1: 108 VGPRs on MI350; tl's
// gfx942 / gfx950 code: 93 / 88 VGPRs at D=64, chosen there; 131 / 124 at D=128 and 224 on
// gfx950 at D=256, over the budget; its stages exceed gfx942's LDS at D=256). Then what
// fits tl's budget on gfx942 and gfx950 (bench/results/amd-2026-11-23-fp8-decode): 32- and
// 16-token tiles over 4 warps (8 at D=256, whose accumulator is twice as large; 74 / 74
// VGPRs at D=128, 86 / 76 at D=256).
// NVIDIA: 64-token tiles, 3 stages, 2 warps (fewer warps, fewer barriers an iteration:
// 336 us against 4 warps' 425 on 16x16384, sweep2.txt) where ptxas fits it without spills,
// else 4 (bench/results/h100-2026-11-23-fp8-decode/sweep*.txt); the dots in f16, whose
// conversion from e4m3 is one instruction a pair (the loop's 1321 instructions a thread
// become 936; 116.9 -> 105.9 us at 16x8192, 42.0 -> 36.5 at 1x32768 on the H100:
// bench/results/h100-2026-11-25-fp8-decode). 1 warp a program (no conversion through shared
// memory at all) measured slower: 264 us against 203 at 16x16384. The CPU: one program is
// a loop nest on a thread, nothing to hide.
inline std::vector<Config> candidates(const std::string& target, int64_t D) {
  if (is_cpu(target)) return {{64, 1, 1}};
  if (is_amd(target)) {
    const int w = D >= 256 ? 8 : 4;
    return {{128, 2, 1, 0}, {64, 2, 1, 1}, {32, 2, w, 1}, {16, 2, w, 1}};
  }
  return {{64, 3, 2, 1, 1}, {64, 3, 4, 1, 1}, {64, 2, 4, 1, 1}, {32, 2, 4, 1, 1}};
}

// The register budget of the guardrail: on AMD, seed 002's fixed kernel's 108 VGPRs
// (AGPRs included; four waves a SIMD's worth of the 512 a lane has), so the kernel keeps
// the occupancy that hides its memory latency; elsewhere only spills refuse (ptxas caps a
// thread at 255 registers and spills past them).
inline int64_t vgpr_budget(const std::string& target) { return is_amd(target) ? 108 : 0; }

// The combine's tile along the slices: the split count padded to a power of two.
inline int split_tile(int split) { return int(std::bit_ceil(unsigned(split))); }

inline tl::launch_options options_of(const Config& c) { return {.num_warps = c.num_warps, .num_stages = c.num_stages}; }
// The combine's [split, D] f32 tile over one warp up to 4096 elements, else 4 (64 x 256
// over one warp would be 512 registers a lane on NVIDIA). Launched dependent on the
// partial kernel (programmatic dependent launch on sm_90+, ignored elsewhere): its launch
// overlaps the partial grid's tail (the combine was 4.2 us of a 37 us call at batch 1).
inline tl::launch_options combine_options(const Problem& p, int split) {
  return {.num_warps = split_tile(split) * p.D > 4096 ? 4 : 1, .launch_pdl = true};
}

// Compiles decode_partial (runs nothing) for `target` (a name: "gfx942", "sm_90", "cpu";
// or a tl::device) and returns its metadata (JSON: the resource report, the pipeliner's
// remarks). The pointers only shape the specialization (16-byte aligned like device
// buffers).
template <class F8, class Target>
std::string compile_partial(const Config& c, const Target& target, const Problem& p, int merge = 0) {
  using H = typename tl::elem_t<F8>::host;
  auto* bf = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  auto* f8 = reinterpret_cast<H*>(uintptr_t(1) << 21);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 22);
  auto* i = reinterpret_cast<int32_t*>(uintptr_t(1) << 23);
  return partial_kernel<F8>().compile(target, options_of(c), bf, f8, f8, f, f, i, f, f, i, bf, int(p.S_max), 1,
                                      c.block_n, p.scale(), int(p.Hkv), int(p.G()), int(p.D), block_m_for(p.G()),
                                      c.block_n, c.num_stages, c.via_shared, c.dot_f16, merge);
}
template <class Target> std::string compile_combine(const Target& target, const Problem& p, int split) {
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 22);
  auto* bf = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  return combine_kernel().compile(target, combine_options(p, split), f, f, bf, split, int(p.G()), int(p.D),
                                  split_tile(split));
}

inline std::string target_name(const std::string& t) { return t; }
inline std::string target_name(const tl::device& d) { return d.target(); }

// Spills in a compile report (AMD: VGPRs and SGPRs spilled; NVIDIA: the driver's spill
// stores and loads; the CPU reports none).
inline int64_t spills_of(const nlohmann::json& report) {
  int64_t n = 0;
  for (const char* k : {"spill_vgpr", "spill_sgpr", "spill_store_bytes", "spill_load_bytes"})
    if (report.contains(k)) n += report[k].get<int64_t>();
  return n;
}

// One candidate's verdict, for the report: refused when its report shows spills or it
// does not compile for the target (its stages over the shared memory, a tile over a
// lane's registers).
struct Verdict {
  Config config;
  nlohmann::json report;  // null when it did not compile
  std::string refused;    // why, or empty
};

// The guardrail: the first of `list` that compiles without spills and within the target's
// register budget, and the verdicts of those tried (the refused ones first). When every
// one is refused, the error says why.
template <class F8, class Target>
std::pair<Config, std::vector<Verdict>> guarded_choice(const std::vector<Config>& list, const Target& target,
                                                       const Problem& p) {
  std::vector<Verdict> seen;
  for (const Config& c : list) {
    Verdict v{c, nullptr, ""};
    try {
      v.report = nlohmann::json::parse(compile_partial<F8>(c, target, p))["report"];
      const int64_t budget = vgpr_budget(target_name(target));
      if (int64_t n = spills_of(v.report)) v.refused = fmt::format("{} spilled", n);
      else if (budget && v.report.contains("vgpr") && v.report["vgpr"].template get<int64_t>() > budget)
        v.refused = fmt::format("{} VGPRs, over the budget of {}", v.report["vgpr"].template get<int64_t>(), budget);
    } catch (const tl::error& e) {  // over the shared memory or a lane's registers
      v.refused = e.what();
    }
    seen.push_back(v);
    if (v.refused.empty()) return {c, seen};
  }
  std::string why;
  for (const Verdict& v : seen) why += fmt::format("; {}: {}", v.config.str(), v.refused);
  throw std::runtime_error("fp8_decode: no configuration passes the guardrail for " + p.str() + why);
}

// The configuration for a problem on a device, decided once per (target, F8, D, G, Hkv)
// and remembered.
template <class F8> Config choose_config(tl::device dev, const Problem& p) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, Config> chosen;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::tuple{dev.target(), p.D, p.G(), p.Hkv};
  if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  Config c = guarded_choice<F8>(candidates(dev.target(), p.D), dev, p).first;
  chosen[key] = c;
  return c;
}

// ---- launching ---------------------------------------------------------------------------

// Whether the partial kernel merges the slices itself (its last program of each (batch,
// KV head)), saving the combine's launch (3.4-4.4 us on the H100): where the slices are
// few, as that program reads split x G x D f32 alone, where the combine spreads them over
// B x Hq programs. Not on AMD: the ticket's ordering of the other waves' stores before the
// last program's reads has not run on an AMD GPU here.
inline bool merges_in_partial(const std::string& target, int split) { return !is_amd(target) && split <= 8; }

// What one problem's launches need besides the tensors: the checked lengths on the
// device, the split count and the partial results' buffers. Made once, reused by every
// call (the decode step of a model calls it per layer), one call at a time: the partial
// results and the merge's tickets are the workspace's, so calls on two streams at once
// need a workspace each.
struct Workspace {
  Problem problem;
  Config config;
  int split = 1;        // slices a sequence (the grid's second dimension)
  int32_t chunk = 0;    // tokens a slice
  int merge = 0;        // non-zero: the partial kernel merges (the split's tile), no combine launch
  tl::buffer<tl::ty::i32> seq_lens;
  tl::buffer<tl::ty::f32> part_o, part_lse;
  tl::buffer<tl::ty::i32> tickets;  // [B * Hkv] slices finished, back to 0 after each call
};

// The KV cache's formats: e4m3, OCP or FNUZ (anything else does not compile).
template <class F8>
concept KvFormat = std::is_same_v<F8, tl::f8e4m3fn> || std::is_same_v<F8, tl::f8e4m3fnuz>;

template <class F8>
  requires KvFormat<F8>
Workspace make_workspace(tl::device dev, const Problem& p, std::span<const int32_t> seq_lens, const Config* force = nullptr,
                         int force_split = 0) {
  check_problem(p);
  check_seq_lens(p, seq_lens);
  Workspace w{p, force ? *force : choose_config<F8>(dev, p)};
  if (w.config.block_n < 16 || (w.config.block_n & (w.config.block_n - 1)) != 0)
    throw std::invalid_argument("fp8_decode: BLOCK_N must be a power of two of at least 16");
  if (force_split < 0 || force_split > 64) throw std::invalid_argument("fp8_decode: the split count must be 1 to 64");
  const Slicing sl = choose_slicing(p, dev.compute_units(), w.config, seq_lens, force_split);
  w.split = sl.split, w.chunk = sl.chunk;
  w.seq_lens = dev.alloc<tl::i32>(size_t(p.B));
  w.seq_lens.upload(std::vector<int32_t>(seq_lens.begin(), seq_lens.end()));
  const size_t parts = size_t(p.B * p.Hkv * w.split * p.G());
  w.part_o = dev.alloc<tl::f32>(parts * size_t(p.D));
  w.part_lse = dev.alloc<tl::f32>(parts);
  w.merge = merges_in_partial(dev.target(), w.split) ? split_tile(w.split) : 0;
  w.tickets = dev.alloc<tl::i32>(size_t(p.B * p.Hkv));
  w.tickets.upload(std::vector<int32_t>(size_t(p.B * p.Hkv), 0));
  return w;
}

// The launches of decode(), each on its own (the benchmark times the partial kernel alone):
// the partial results of every slice (and, where the workspace says so, their merge into
// `out`), then the combine (only where the partial kernel does not merge).
template <class F8, class PQ, class PK, class PV, class PS, class PO>
  requires KvFormat<F8>
void decode_partial(const Workspace& w, const PQ& q, const PK& k, const PV& v, const PS& k_scale, const PS& v_scale,
                    const PO& out) {
  const Problem& p = w.problem;
  const Config& c = w.config;
  partial_kernel<F8>()[tl::grid(p.B * p.Hkv, w.split)].with(options_of(c))(
      q, k, v, k_scale, v_scale, w.seq_lens, w.part_o, w.part_lse, w.tickets, out, int(p.S_max), w.split, w.chunk,
      p.scale(), int(p.Hkv), int(p.G()), int(p.D), block_m_for(p.G()), c.block_n, c.num_stages, c.via_shared,
      c.dot_f16, w.merge);
}
template <class PO> void decode_combine(const Workspace& w, const PO& out) {
  const Problem& p = w.problem;
  combine_kernel()[tl::grid(p.B * p.Hq)].with(combine_options(p, w.split))(w.part_o, w.part_lse, out, w.split, int(p.G()),
                                                                int(p.D), split_tile(w.split));
}

// out = attention(q, K, V) for the workspace's problem. The tensors: tl::buffers of the
// device (or raw device pointers) of the shapes above.
template <class F8, class PQ, class PK, class PV, class PS, class PO>
  requires KvFormat<F8>
void decode(const Workspace& w, const PQ& q, const PK& k, const PV& v, const PS& k_scale, const PS& v_scale,
            const PO& out) {
  decode_partial<F8>(w, q, k, v, k_scale, v_scale, out);
  if (!w.merge) decode_combine(w, out);
}

}  // namespace fp8_decode

// An MXFP4 mixture-of-experts layer in tl (issue 43): the serving side of models that ship
// their expert weights in OCP MX FP4 (gpt-oss, ...), as vLLM's fused_moe and Triton's
// triton_kernels run it, with tl::dot_scaled.
//
//   y[t] = sum_{j < top_k} w[t, j] * down_e(silu(gate_e(x[t])) * up_e(x[t])),  e = ids[t, j]
//
// x: bf16 [T, H] activations; logits: f32 [T, E] router outputs (vLLM's gating_output);
// w1: each expert's gate and up projections [E, 2I, H] (rows 0..I-1 gate, I..2I-1 up),
// w2: its down projection [E, H, I]; both as MXFP4 (f4e2m1, two values a byte along K,
// and an e8m0 scale per 32 values of K), quantized by the sample from bf16
// (quantize_mxfp4), or kept in bf16 (the bf16 grouped GEMM the benchmark compares with).
//
// The kernels, in the order forward() launches them:
// 1. route: per token, the top_k largest logits (tl::topk, equal logits: the smaller
//    expert first) and the softmax over the kept ones (Mixtral's renormalized weights).
// 2. plan (one program): vLLM's moe_align_block_size. The tokens each expert received
//    (tl::histogram over the [T, top_k] expert ids), each expert's segment of the sorted
//    order padded to a multiple of BLOCK_M (a program's rows never mix experts), and per
//    block of BLOCK_M sorted rows: its expert and how many of its rows are real.
// 3. scatter: each (token, slot) pair takes the next row of its expert's segment
//    (tl::atomic_add on the segment's cursor, relaxed): `sorted` holds pair ids. Within a
//    segment the order is whatever the atomics made it; every pair has its own output row,
//    so the results do not depend on it.
// 4. experts_gemm<gate_up>: the grouped GEMM, one program per (block, N tile) in Triton's
//    grouped order: its BLOCK_M rows of x gathered through `sorted` (row = pair / top_k),
//    times its expert's weights, tl::dot_scaled(x, nullptr, "bf16", trans(w), scale,
//    "e2m1", acc) in a K loop (the weights upcast in registers where the target has no
//    scaled matrix instruction: Hopper, gfx942). Gate and up are two accumulators of the
//    same program, SwiGLU in the epilogue: h = silu(gate) * up, bf16 [T * top_k, I].
// 5. experts_gemm<down>: the same kernel on h (one row per pair): bf16 [T * top_k, H].
// 6. combine: y[t] = sum_j w[t, j] * down[t * top_k + j] in f32, to bf16.
//
// Blocks past the last expert's segment (the grid is sized on the host for the worst
// routing, so nothing waits for the device) have no real rows: their K loop runs zero
// times and they store nothing. Offsets are 32-bit (check()).
#pragma once

#include <boost/hana/define_struct.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tl/autotune.hpp"
#include "tl/tl.hpp"

namespace moe {

struct Problem {
  int64_t T = 128;     // tokens
  int64_t H = 256;     // hidden size (K of the gate/up GEMM, N of the down one)
  int64_t I = 128;     // the experts' intermediate size
  int64_t E = 8;       // experts
  int64_t top_k = 2;   // experts a token goes to
  int64_t pairs() const { return T * top_k; }
  std::string str() const { return fmt::format("T={} H={} I={} E={} top_k={}", T, H, I, E, top_k); }
  // The FLOPs of the two grouped GEMMs (2 I H for gate and up each, 2 H I down, a pair).
  double flops() const { return 6.0 * double(pairs()) * double(H) * double(I); }
};

inline int next_pow2(int64_t n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// Sizes before anything is compiled or launched.
inline void check(const Problem& p) {
  auto fail = [&](const std::string& why) { throw std::invalid_argument("moe (" + p.str() + "): " + why); };
  if (p.T < 1 || p.H < 1 || p.I < 1 || p.E < 1) fail("T, H, I and E must be positive");
  if (p.top_k < 1 || p.top_k > p.E) fail("top_k must be between 1 and E");
  if (p.E > 256) fail("at most 256 experts (the router holds a token's logits in one tile)");
  if (p.H % 32 || p.I % 32)
    fail("H and I must be multiples of 32 (MXFP4 has one scale per 32 values along K)");
  const int64_t lim = int64_t(1) << 31;
  if (p.E * 2 * p.I * p.H >= lim || p.pairs() * std::max(p.H, p.I) >= lim || p.T * p.E >= lim)
    fail("the weights and activations must have fewer than 2^31 elements (32-bit offsets)");
}

// ---- configurations -------------------------------------------------------------------

// The grouped GEMMs' launch configuration, Triton's (and vLLM's fused_moe config files')
// names: BLOCK_SIZE_M sorted rows a program (also the alignment of each expert's segment),
// BLOCK_SIZE_N output columns, BLOCK_SIZE_K along K (a multiple of 32: whole scale
// blocks), GROUP_SIZE_M, num_stages, num_warps; AMD's matrix_instr_nonkdim (0: tl's
// choice, ignored elsewhere). operands_in_shared: each K step's operand tiles (x, the
// packed weights, their scales) go through one-stage tl::shared buffers, which the
// pipeliner turns into copies straight into num_stages buffers issued ahead (cp.async,
// global_load_lds), as Triton stages tl.dot_scaled's operands on Hopper; 0: the loads
// are prefetched into registers. The tuner tries both. (With 0 the compiler stages them
// itself: x and the packed weight tiles are copied into the pipeliner's buffers, the upcast
// reading them back; the scales, rows of K / 32 bytes, are copied where 4-byte aligned. With
// 1 the packed weights and scales pass through a bitcast to bytes between their load and
// store, which is not a copy: the pipeliner prefetches them into registers.)
struct Config {
  BOOST_HANA_DEFINE_STRUCT(Config, (int, block_m), (int, block_n), (int, block_k), (int, group_m), (int, num_stages),
                           (int, num_warps), (int, matrix_instr_nonkdim), (int, operands_in_shared));
};

inline std::string str(const Config& c) {
  std::string s = fmt::format("{}x{}x{} g{} s{} w{}", c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages,
                              c.num_warps);
  if (c.matrix_instr_nonkdim) s += fmt::format(" mfma{}", c.matrix_instr_nonkdim);
  if (c.operands_in_shared) s += " smem";
  return s;
}

// The largest BLOCK_M a configuration may have (the workspace's sorted rows are sized for it).
constexpr int kMaxBlockM() { return 256; }

inline void check(const Config& c) {
  auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!pow2(c.block_m) || c.block_m < 16 || c.block_m > kMaxBlockM())
    throw std::invalid_argument(fmt::format("moe: block_m {} must be a power of two from 16 to {}", c.block_m, kMaxBlockM()));
  if (!pow2(c.block_n) || c.block_n < 16) throw std::invalid_argument(fmt::format("moe: block_n {} must be a power of two of at least 16", c.block_n));
  if (!pow2(c.block_k) || c.block_k < 32) throw std::invalid_argument(fmt::format("moe: block_k {} must be a power of two of at least 32", c.block_k));
}

inline tl::launch_options options_of(const Config& c) { return tl::options_from(c); }

// Blocks of BLOCK_M sorted rows the grouped GEMMs may need, whatever the routing: each
// expert's segment pads its last block, so at most one partial block an expert that
// received anything.
inline int64_t max_blocks(const Problem& p, int block_m) {
  return tl::cdiv(p.pairs(), int64_t(block_m)) + std::min(p.E, p.pairs());
}

// ---- kernels ----------------------------------------------------------------------------

// bf16 rows [R, K] to MXFP4: per 32 values, the scale 2^s with s the smallest exponent
// such that the block's largest magnitude is at most 6 * 2^s (e2m1's largest; so no value
// saturates), as triton_kernels' downcast_to_mxfp rounds its scale up; then each value
// over 2^s to e2m1, to nearest even. s comes from the bits of the largest magnitude
// m * 2^p (m in [1, 2)): p - 2 when m <= 1.5, p - 1 above: integer operations, the same
// bits on every target. q: f4e2m1 [R, K / 2], scales: e8m0 [R, K / 32].
inline auto& quantize_kernel() {
  static auto k = tl::kernel("moe_quantize_mxfp4", [](tl::ptr<tl::bf16> w, tl::ptr<tl::f4e2m1> q, tl::ptr<tl::e8m0> s,
                                                      tl::i32 R, tl::i32 K, int BLOCK_R, int BLOCK_K) {
    auto r = tl::program_id(0) * BLOCK_R + tl::arange(0, BLOCK_R);
    auto c = tl::program_id(1) * BLOCK_K + tl::arange(0, BLOCK_K);
    auto r_ok = tl::expand_dims(r < R, 1);
    auto x = tl::load(w + tl::expand_dims(r * K, 1) + tl::expand_dims(c, 0), r_ok & tl::expand_dims(c < K, 0), 0);
    auto blocks = tl::reshape(x.to<tl::f32>(), {BLOCK_R, BLOCK_K / 32, 32});
    auto bits = tl::max(tl::abs(blocks), 2).bitcast<tl::i32>();  // [BLOCK_R, BLOCK_K / 32], non-negative
    auto above_1_5 = ((bits & 0x7FFFFF) > 0x400000).to<tl::i32>();
    auto code = tl::maximum((bits >> 23) - 2 + above_1_5, 0);  // e8m0: s + 127; at most 253 from bf16
    auto inv = ((254 - code) << 23).bitcast<tl::f32>();       // 2^-s, exact
    auto values = tl::reshape(blocks * tl::expand_dims(inv, 2), {BLOCK_R, BLOCK_K});
    auto cq = tl::program_id(1) * (BLOCK_K / 2) + tl::arange(0, BLOCK_K / 2);
    tl::store(q + tl::expand_dims(r * (K / 2), 1) + tl::expand_dims(cq, 0), values.to<tl::f4e2m1>(),
              r_ok & tl::expand_dims(cq < K / 2, 0));
    auto cs = tl::program_id(1) * (BLOCK_K / 32) + tl::arange(0, BLOCK_K / 32);
    tl::store(s + tl::expand_dims(r * (K / 32), 1) + tl::expand_dims(cs, 0), code.to<tl::u8>().bitcast<tl::e8m0>(),
              r_ok & tl::expand_dims(cs < K / 32, 0));
  });
  return k;
}

// Per token: the top_k largest logits' experts and their softmax. E_P2 / K_P2: E and top_k
// rounded up to powers of two (tl::topk's sizes): the padding logits are -inf, the padding
// slots masked out of the softmax and the stores.
inline auto& route_kernel() {
  static auto k = tl::kernel("moe_route", [](tl::ptr<tl::f32> logits, tl::ptr<tl::i32> ids, tl::ptr<tl::f32> weights,
                                             tl::i32 T, int E, int TOP_K, int E_P2, int K_P2, int BLOCK_T) {
    auto rows = tl::expand_dims(tl::program_id(0) * BLOCK_T + tl::arange(0, BLOCK_T), 1);
    auto cols = tl::expand_dims(tl::arange(0, E_P2), 0);
    auto x = tl::load(logits + rows * E + cols, (rows < T) & (cols < E), -INFINITY);
    auto [top, expert] = tl::topk(x, K_P2, tl::return_indices);  // [BLOCK_T, K_P2], largest first
    auto slot = tl::expand_dims(tl::arange(0, K_P2), 0);
    auto kept = slot < TOP_K;
    auto e = tl::where(kept, tl::fast_expf(top - tl::max(top, 1, tl::keep_dims)), 0.0f);
    auto w = e / tl::sum(e, 1, tl::keep_dims);
    auto out = rows * TOP_K + slot;
    tl::store(ids + out, expert, (rows < T) & kept);
    tl::store(weights + out, w, (rows < T) & kept);
  });
  return k;
}

// One program (vLLM's moe_align_block_size): counts, padded segments, and per block of
// BLOCK_M sorted rows its expert and real rows. cursor[e]: where scatter puts expert e's
// next pair (its segment's start); the blocks past the last segment get 0 rows.
inline auto& plan_kernel() {
  static auto k = tl::kernel("moe_plan", [](tl::ptr<tl::i32> ids, tl::ptr<tl::i32> cursor, tl::ptr<tl::i32> block_expert,
                                            tl::ptr<tl::i32> block_rows, tl::i32 P, tl::i32 num_blocks, int E, int E_P2,
                                            int BLOCK_M, int CHUNK_P, int CHUNK_B) {
    auto counts = tl::zeros<tl::i32>({E_P2});
    for (auto i : tl::range(0, P, CHUNK_P)) {
      auto at = i + tl::arange(0, CHUNK_P);
      counts = counts + tl::histogram(tl::load(ids + at, at < P, 0), E_P2, at < P);
    }
    auto padded = (counts + (BLOCK_M - 1)) / BLOCK_M * BLOCK_M;
    auto ends = tl::cumsum(padded, 0);
    auto starts = ends - padded;
    auto ex = tl::arange(0, E_P2);
    tl::store(cursor + ex, starts, ex < E);
    // Block b starts at sorted row b * BLOCK_M: its expert is the number of segments
    // ending at or before that row (empty experts end where they start).
    auto seg_end = tl::expand_dims(starts + counts, 0);  // [1, E_P2]: the real rows' end
    for (auto b0 : tl::range(0, num_blocks, CHUNK_B)) {
      auto b = b0 + tl::arange(0, CHUNK_B);
      auto row = tl::expand_dims(b * BLOCK_M, 1);  // [CHUNK, 1]
      auto e = tl::sum((tl::expand_dims(ends, 0) <= row).to<tl::i32>(), 1);
      auto mine = tl::expand_dims(ex, 0) == tl::expand_dims(e, 1);
      auto end = tl::sum(tl::where(mine, tl::broadcast_to(seg_end, {CHUNK_B, E_P2}), 0), 1);  // 0 past the last
      auto rows = tl::minimum(tl::maximum(end - b * BLOCK_M, 0), BLOCK_M);
      tl::store(block_expert + b, tl::minimum(e, E - 1), b < num_blocks);
      tl::store(block_rows + b, rows, b < num_blocks);
    }
  });
  return k;
}

// Each pair (token t, slot j: id t * top_k + j) takes the next row of its expert's segment.
inline auto& scatter_kernel() {
  static auto k = tl::kernel("moe_scatter", [](tl::ptr<tl::i32> ids, tl::ptr<tl::i32> cursor, tl::ptr<tl::i32> sorted,
                                               tl::i32 P, int BLOCK) {
    auto at = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto ok = at < P;
    auto e = tl::load(ids + at, ok, 0);
    auto row = tl::atomic_add(cursor + e, tl::full<tl::ty::i32>({BLOCK}, 1), ok, tl::sem::relaxed, tl::scope::gpu);
    tl::store(sorted + row, at, ok);
  });
  return k;
}

// The weights' storage: MXFP4 (tl::ty::f4e2m1 with e8m0 scales) or bf16 (no scales).
template <class W> constexpr bool is_fp4 = std::is_same_v<W, tl::ty::f4e2m1>;
template <class W> constexpr const char* format_name() { return is_fp4<W> ? "mxfp4" : "bf16"; }

// The grouped GEMM: out[pair, n] for the pairs of a block, A rows x[pair / A_DIV] (A_DIV =
// top_k for the gate/up GEMM, whose A is per token; 1 for the down GEMM), weights w[e]
// [N_w, K] (K packed two a byte for MXFP4) with scales ws[e] [N_w, K / 32]. GATE_UP: N_w =
// 2N, rows n (gate) and N + n (up) into two accumulators, out = silu(gate) * up.
template <class W, bool GATE_UP> auto& experts_gemm_kernel() {
  static auto k = tl::kernel(
      fmt::format("moe_{}_{}", GATE_UP ? "gate_up" : "down", format_name<W>()),
      [](tl::ptr<tl::bf16> a, tl::ptr<W> w, tl::ptr<tl::e8m0> ws, tl::ptr<tl::bf16> out, tl::ptr<tl::i32> sorted,
         tl::ptr<tl::i32> block_expert, tl::ptr<tl::i32> block_rows, tl::i32 num_blocks, tl::i32 N, tl::i32 K,
         int A_DIV, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_M, int STAGES, int SHARED) {
        constexpr int PACK = is_fp4<W> ? 2 : 1;  // K values a weight element holds
        const char* w_format = is_fp4<W> ? "e2m1" : "bf16";
        // The staging buffers (SHARED): packed weights and scales as their bytes.
        using WB = std::conditional_t<is_fp4<W>, tl::ty::u8, W>;
        std::optional<tl::shared_tile<tl::ty::bf16>> sx;
        std::optional<tl::shared_tile<WB>> sw, sw_up;
        std::optional<tl::shared_tile<tl::ty::u8>> ss, ss_up;
        if (SHARED) {
          sx.emplace(tl::shared<tl::ty::bf16>({1, BLOCK_M, BLOCK_K}));
          sw.emplace(tl::shared<WB>({1, BLOCK_N, BLOCK_K / PACK}));
          if (GATE_UP) sw_up.emplace(tl::shared<WB>({1, BLOCK_N, BLOCK_K / PACK}));
          if (is_fp4<W>) {
            ss.emplace(tl::shared<tl::ty::u8>({1, BLOCK_N, BLOCK_K / 32}));
            if (GATE_UP) ss_up.emplace(tl::shared<tl::ty::u8>({1, BLOCK_N, BLOCK_K / 32}));
          }
        }
        // A weight tile and its scales through their buffers (or straight), into the dot.
        auto staged = [&](const auto& v, auto& buf) {
          if constexpr (std::is_same_v<tl::elem_t<std::decay_t<decltype(v)>>, tl::ty::f4e2m1> ||
                        std::is_same_v<tl::elem_t<std::decay_t<decltype(v)>>, tl::ty::e8m0>) {
            auto b = v.template bitcast<tl::u8>();
            buf->operator[](0).store(b);
            return buf->operator[](0).load();
          } else {
            buf->operator[](0).store(v);
            return buf->operator[](0).load();
          }
        };
        // Grouped order (Triton's tutorial matmul, vLLM's fused_moe): GROUP_M blocks down,
        // then the next N tile, so programs running together share weight tiles in L2.
        auto pid = tl::program_id(0);
        auto num_pid_n = tl::cdiv(N, BLOCK_N);
        auto num_pid_in_group = num_pid_n * GROUP_M;
        auto first_pid_m = (pid / num_pid_in_group) * GROUP_M;
        auto group_size_m = tl::minimum(num_blocks - first_pid_m, GROUP_M);
        auto pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
        auto pid_n = (pid % num_pid_in_group) / group_size_m;

        auto e = tl::load(block_expert + pid_m);
        auto rows = tl::load(block_rows + pid_m);
        auto rm = tl::arange(0, BLOCK_M);
        auto m_ok = tl::expand_dims(rm < rows, 1);  // [BLOCK_M, 1]
        auto pair = tl::load(sorted + pid_m * BLOCK_M + rm, rm < rows, 0);
        auto a_rows = a + tl::expand_dims(pair / A_DIV * K, 1);
        auto rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
        auto n_ok = tl::expand_dims(rn < N, 1);  // [BLOCK_N, 1]
        const int n_w = GATE_UP ? 2 : 1;
        auto w_rows = w + e * (n_w * N * (K / PACK)) + tl::expand_dims(rn * (K / PACK), 1);
        auto s_rows = ws + e * (n_w * N * (K / 32)) + tl::expand_dims(rn * (K / 32), 1);
        auto up_w = N * (K / PACK), up_s = N * (K / 32);  // the up rows' offset from the gate rows'

        auto acc = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
        auto acc_up = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
        // A block without real rows (past the last segment) runs no iteration.
        auto k_end = tl::minimum(rows, 1) * K;
        for (auto k0 : tl::range(0, k_end, BLOCK_K, tl::num_stages(STAGES))) {
          auto kk = k0 + tl::arange(0, BLOCK_K);
          auto x = tl::load(a_rows + tl::expand_dims(kk, 0), m_ok & tl::expand_dims(kk < K, 0), 0);
          if (SHARED) {
            (*sx)[0].store(x);
            x = (*sx)[0].load();
          }
          auto kw = tl::expand_dims(k0 / PACK + tl::arange(0, BLOCK_K / PACK), 0);
          auto w_ok = n_ok & (kw < K / PACK);
          auto ks = tl::expand_dims(k0 / 32 + tl::arange(0, BLOCK_K / 32), 0);
          auto s_ok = n_ok & (ks < K / 32);
          // One dot: the weight tile at `w_at` (and its scales at `s_at`) into `c`.
          auto step = [&](const tl::f32& c, const auto& w_at, const auto& s_at, auto& wbuf, auto& sbuf) {
            auto wt = tl::load(w_at + kw, w_ok, 0);
            if constexpr (is_fp4<W>) {
              auto st = tl::load(s_at + ks, s_ok, 127);
              if (SHARED) return tl::dot_scaled(x, nullptr, "bf16", tl::trans(staged(wt, wbuf)), staged(st, sbuf), w_format, c);
              return tl::dot_scaled(x, nullptr, "bf16", tl::trans(wt), st, w_format, c);
            } else {
              if (SHARED) return tl::dot_scaled(x, nullptr, "bf16", tl::trans(staged(wt, wbuf)), nullptr, w_format, c);
              return tl::dot_scaled(x, nullptr, "bf16", tl::trans(wt), nullptr, w_format, c);
            }
          };
          acc = step(acc, w_rows, s_rows, sw, ss);
          if constexpr (GATE_UP) acc_up = step(acc_up, w_rows + up_w, s_rows + up_s, sw_up, ss_up);
        }
        auto h = acc;
        if constexpr (GATE_UP) h = acc * tl::sigmoid(acc) * acc_up;
        tl::store(out + tl::expand_dims(pair * N, 1) + tl::expand_dims(rn, 0), h.to<tl::bf16>(),
                  m_ok & tl::expand_dims(rn < N, 0));
      });
  return k;
}

// y[t] = sum_j w[t, j] * down[t * top_k + j], f32 sums in slot order, bf16 out.
inline auto& combine_kernel() {
  static auto k = tl::kernel("moe_combine", [](tl::ptr<tl::bf16> down, tl::ptr<tl::f32> weights, tl::ptr<tl::bf16> y,
                                               tl::i32 T, tl::i32 H, int TOP_K, int BLOCK_T, int BLOCK_H) {
    auto t = tl::program_id(0) * BLOCK_T + tl::arange(0, BLOCK_T);
    auto h = tl::expand_dims(tl::program_id(1) * BLOCK_H + tl::arange(0, BLOCK_H), 0);
    auto ok = tl::expand_dims(t < T, 1) & (h < H);
    auto acc = tl::zeros<tl::f32>({BLOCK_T, BLOCK_H});
    for (int j = 0; j < TOP_K; ++j) {
      auto w = tl::load(weights + t * TOP_K + j, t < T, 0.0f);
      auto v = tl::load(down + tl::expand_dims((t * TOP_K + j) * H, 1) + h, ok, 0);
      acc = acc + tl::expand_dims(w, 1) * v.to<tl::f32>();
    }
    tl::store(y + tl::expand_dims(t * H, 1) + h, acc.to<tl::bf16>(), ok);
  });
  return k;
}

// ---- host side --------------------------------------------------------------------------

// One layer's expert weights on a device: W = tl::ty::f4e2m1 (MXFP4, with scales) or
// tl::ty::bf16 (the scales empty).
template <class W> struct Weights {
  tl::buffer<W> w1, w2;            // [E, 2I, H], [E, H, I] (MXFP4: K halved)
  tl::buffer<tl::ty::e8m0> s1, s2;  // [E, 2I, H / 32], [E, H, I / 32]
  Weights(const tl::device& d, const Problem& p)
      : w1(d, size_t(p.E * 2 * p.I * p.H / (is_fp4<W> ? 2 : 1))), w2(d, size_t(p.E * p.H * p.I / (is_fp4<W> ? 2 : 1))),
        s1(d, is_fp4<W> ? size_t(p.E * 2 * p.I * p.H / 32) : 1), s2(d, is_fp4<W> ? size_t(p.E * p.H * p.I / 32) : 1) {}
};

// What a forward pass writes besides y: the routing, the plan and the two GEMMs' outputs
// (sized for any configuration and any routing).
struct Workspace {
  tl::buffer<tl::ty::i32> ids;        // [T, top_k] expert ids
  tl::buffer<tl::ty::f32> weights;    // [T, top_k] routing weights
  tl::buffer<tl::ty::i32> cursor;     // [E]
  tl::buffer<tl::ty::i32> block_expert, block_rows;  // [max_blocks(16)]
  tl::buffer<tl::ty::i32> sorted;     // pair ids in expert order, [max_blocks(kMaxBlockM) * kMaxBlockM]
  tl::buffer<tl::ty::bf16> h;         // [T * top_k, I]: silu(gate) * up
  tl::buffer<tl::ty::bf16> down;      // [T * top_k, H]
  Workspace(const tl::device& d, const Problem& p)
      : ids(d, size_t(p.pairs())), weights(d, size_t(p.pairs())), cursor(d, size_t(p.E)),
        block_expert(d, size_t(max_blocks(p, 16))), block_rows(d, size_t(max_blocks(p, 16))),
        sorted(d, size_t(max_blocks(p, kMaxBlockM()) * kMaxBlockM())), h(d, size_t(p.pairs() * p.I)),
        down(d, size_t(p.pairs() * p.H)) {}
};

// bf16 [R, K] rows to MXFP4 q [R, K / 2] and scales [R, K / 32] (K a multiple of 32).
template <class B, class Q, class S> void quantize_mxfp4(const B& w, const Q& q, const S& s, int64_t R, int64_t K) {
  if (K % 32) throw std::invalid_argument(fmt::format("moe::quantize_mxfp4: K = {} is not a multiple of 32", K));
  const int BR = 32, BK = 128;
  quantize_kernel()[tl::grid(tl::cdiv(R, int64_t(BR)), tl::cdiv(K, int64_t(BK)))].with({.num_warps = 4})(
      w, q, s, int(R), int(K), BR, BK);
}

// Quantizes a layer's bf16 weights w1 [E, 2I, H] and w2 [E, H, I] into `out`.
template <class B> void quantize_weights(const Problem& p, const B& w1, const B& w2, const Weights<tl::ty::f4e2m1>& out) {
  check(p);
  quantize_mxfp4(w1, out.w1, out.s1, p.E * 2 * p.I, p.H);
  quantize_mxfp4(w2, out.w2, out.s2, p.E * p.H, p.I);
}

inline void route(const Problem& p, const tl::buffer<tl::ty::f32>& logits, const Workspace& ws) {
  const int e_p2 = next_pow2(p.E), k_p2 = next_pow2(p.top_k);
  const int block_t = std::max(1, 2048 / e_p2);  // 2048 logits a program (bench/moe_topk_bench.cpp)
  route_kernel()[tl::grid(tl::cdiv(p.T, int64_t(block_t)))].with({.num_warps = 4})(
      logits, ws.ids, ws.weights, int(p.T), int(p.E), int(p.top_k), e_p2, k_p2, block_t);
}

// The kernels after the routing, with one configuration; `launch(kernel, grid, options,
// args...)` launches (a plain launch, or tl::tuning::launch while tuning).
template <class W, class L> void experts_with(L&& launch, const Config& c, const Problem& p, const tl::buffer<tl::ty::bf16>& x,
                                              const Weights<W>& w, const Workspace& ws) {
  check(c);
  const int64_t blocks = max_blocks(p, c.block_m);
  // The plan's block loop compares CHUNK_B blocks with every expert: [CHUNK_B, E_P2], 8192
  // elements (64 a thread at 4 warps).
  const int e_p2 = next_pow2(p.E), chunk_b = std::max(32, 8192 / e_p2);
  launch(plan_kernel(), tl::grid(1), tl::launch_options{.num_warps = 4}, ws.ids, ws.cursor, ws.block_expert,
         ws.block_rows, int(p.pairs()), int(blocks), int(p.E), e_p2, c.block_m, 1024, chunk_b);
  launch(scatter_kernel(), tl::grid(tl::cdiv(p.pairs(), int64_t(1024))), tl::launch_options{.num_warps = 4}, ws.ids,
         ws.cursor, ws.sorted, int(p.pairs()), 1024);
  auto gemm_grid = [&](int64_t N) { return tl::grid(blocks * tl::cdiv(N, int64_t(c.block_n))); };
  launch(experts_gemm_kernel<W, true>(), gemm_grid(p.I), options_of(c), x, w.w1, w.s1, ws.h, ws.sorted,
         ws.block_expert, ws.block_rows, int(blocks), int(p.I), int(p.H), int(p.top_k), c.block_m, c.block_n, c.block_k,
         c.group_m, c.num_stages, c.operands_in_shared);
  launch(experts_gemm_kernel<W, false>(), gemm_grid(p.H), options_of(c), ws.h, w.w2, w.s2, ws.down, ws.sorted,
         ws.block_expert, ws.block_rows, int(blocks), int(p.H), int(p.I), 1, c.block_m, c.block_n, c.block_k, c.group_m,
         c.num_stages, c.operands_in_shared);
}

inline const auto plain_launch = [](auto& kernel, const tl::grid& g, const tl::launch_options& o, auto&&... a) {
  kernel[g].with(o)(a...);
};

template <class W>
void experts(const Config& c, const Problem& p, const tl::buffer<tl::ty::bf16>& x, const Weights<W>& w, const Workspace& ws) {
  experts_with<W>(plain_launch, c, p, x, w, ws);
}

inline void combine(const Problem& p, const Workspace& ws, const tl::buffer<tl::ty::bf16>& y) {
  const int BT = 16, BH = 128;
  combine_kernel()[tl::grid(tl::cdiv(p.T, int64_t(BT)), tl::cdiv(p.H, int64_t(BH)))].with({.num_warps = 4})(
      ws.down, ws.weights, y, int(p.T), int(p.H), int(p.top_k), BT, BH);
}

// The checks of the buffers' lengths against the problem.
template <class W>
void check_buffers(const Problem& p, const tl::buffer<tl::ty::bf16>& x, const tl::buffer<tl::ty::f32>& logits,
                   const Weights<W>& w, const Workspace& ws, const tl::buffer<tl::ty::bf16>& y) {
  auto need = [&](size_t have, int64_t want, const char* what) {
    if (int64_t(have) < want)
      throw std::invalid_argument(fmt::format("moe ({}): {} has {} elements, the problem needs {}", p.str(), what, have, want));
  };
  need(x.size(), p.T * p.H, "x"), need(y.size(), p.T * p.H, "y"), need(logits.size(), p.T * p.E, "logits");
  need(w.w1.size(), p.E * 2 * p.I * p.H / (is_fp4<W> ? 2 : 1), "w1");
  need(w.w2.size(), p.E * p.H * p.I / (is_fp4<W> ? 2 : 1), "w2");
  need(ws.ids.size(), p.pairs(), "the workspace (made for another problem)");
  need(ws.h.size(), p.pairs() * p.I, "the workspace (made for another problem)");
  need(ws.down.size(), p.pairs() * p.H, "the workspace (made for another problem)");
  need(ws.cursor.size(), p.E, "the workspace (made for another problem)");
}

// The layer with one configuration: route, plan, scatter, the two grouped GEMMs, combine.
template <class W>
void forward(const Config& c, const Problem& p, const tl::buffer<tl::ty::bf16>& x, const tl::buffer<tl::ty::f32>& logits,
             const Weights<W>& w, const Workspace& ws, const tl::buffer<tl::ty::bf16>& y) {
  check(p);
  check_buffers(p, x, logits, w, ws, y);
  route(p, logits, ws);
  experts(c, p, x, w, ws);
  combine(p, ws, y);
}

// Compiles (runs nothing) the two grouped GEMMs for `target` ("gfx942", "sm_90", "cpu")
// with configuration `c` and returns their metadata (JSON: the resource report, the
// pipeliner's remarks): gate/up, then down. The pointers only shape the specialization
// (16-byte aligned, like device buffers).
template <class W> std::vector<std::string> compile_experts(const std::string& target, const Config& c, const Problem& p) {
  check(p), check(c);
  auto* x = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  auto* w = reinterpret_cast<typename W::host*>(uintptr_t(1) << 21);
  auto* s = reinterpret_cast<tl::float8_e8m0*>(uintptr_t(1) << 22);
  auto* i = reinterpret_cast<int32_t*>(uintptr_t(1) << 23);
  const int blocks = int(max_blocks(p, c.block_m));
  return {experts_gemm_kernel<W, true>().compile(target, options_of(c), x, w, s, x, i, i, i, blocks, int(p.I), int(p.H),
                                                 int(p.top_k), c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages,
                                                 c.operands_in_shared),
          experts_gemm_kernel<W, false>().compile(target, options_of(c), x, w, s, x, i, i, i, blocks, int(p.H), int(p.I),
                                                  1, c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages,
                                                  c.operands_in_shared)};
}

}  // namespace moe

// Triton's tutorial 06 fused attention, FORWARD pass, transcribed into tl statement for
// statement as a Triton user would write it (the reference kernel is attn_fwd in
// ../shared/anchors/attention_anchor.py). No tl-specific tuning: no tl::shared staging,
// no buffer loads; only the tutorial's own `tl.range(..., num_stages=STAGES)`.
//
//   Q, K, V, O   bf16 [BH, S, D], contiguous (one [S, D] matrix per batch*head)
//   O = softmax(Q.K^T * sm_scale) . V per batch*head, causal or not
//
// One program: a BLOCK_M block of query rows of one batch*head (grid (cdiv(S, BLOCK_M),
// BH)). The Q block is loaded once; the loop over BLOCK_N blocks of keys loads K^T and V
// from pointers computed from the induction variable, computes Q.K^T on tl::dot in f32,
// scales it by sm_scale * log2(e) and runs the online softmax in exp2 (running row max
// m_i, running denominator l_i, accumulator acc rescaled by exp2(m_i - m_ij)); P is
// rounded to bf16 for the P.V dot. Causal: the loop stops at the block's last row
// (min((start_m + 1) * BLOCK_M, S)) and keys after the query are masked to -inf. Rows
// and keys past S are masked (ragged S). Offsets are 32-bit: BH * S * D < 2^31.
//
// What this header gives:
//   attn::fwd_body(...)         the kernel body (tl statements), shared by:
//   attn::kernel()              the tl::kernel object (traced and compiled at first launch)
//   attn::forward(dev, ...)     a launch with a Config {block_m, block_n, num_warps, num_stages}
//   attn::compile(target, ...)  compile without running (JSON metadata: report, remarks, key;
//                               `tl-cache isa KEY` prints the PTX / disassembly)
//   attn::trace_ir(...)         the body traced straight into tile IR, with no device and no
//                               cache, for compile-only codegen tests
//                               (tltest::compile_for("sm_90", *attn::trace_ir(c, 128, false),
//                               c.num_warps) in tests/support/compile.hpp, then the
//                               CodeObject's PTX (binary) or amd::disassemble(binary)).
// It includes no test framework. trace_ir uses tl's tracer (dsl/src/trace.hpp, the same
// one tests/support/traced_kernels.hpp uses): include paths of the source tree.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "codegen/ir/ir.hpp"
#include "dsl/src/trace.hpp"
#include "tl/tl.hpp"

namespace attn {

// A launch configuration: Triton's names (BLOCK_M, BLOCK_N, num_warps, num_stages; the
// kernel's STAGES is num_stages).
struct Config {
  int block_m = 128, block_n = 64;
  int num_warps = 4;
  int num_stages = 2;
};

// The tutorial's attn_fwd. CAUSAL and STAGES are trace-time ints (Triton's constexprs).
inline void fwd_body(const tl::ptr<tl::bf16>& Q, const tl::ptr<tl::bf16>& K, const tl::ptr<tl::bf16>& V,
                     const tl::ptr<tl::bf16>& O, const tl::i32& S, const tl::f32& sm_scale, int BLOCK_M, int BLOCK_N,
                     int D, int CAUSAL, int STAGES) {
  const float inf = std::numeric_limits<float>::infinity();
  auto start_m = tl::program_id(0);
  auto bh = tl::program_id(1);
  auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = tl::arange(0, BLOCK_N);
  auto offs_d = tl::arange(0, D);
  auto base = bh * S * D;
  // q = load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=(offs_m < S)[:, None], other=0)
  auto q = tl::load(Q + base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0),
                    tl::expand_dims(offs_m < S, 1), 0.0f);
  auto m_i = tl::full<tl::f32>({BLOCK_M}, -inf);
  auto l_i = tl::zeros<tl::f32>({BLOCK_M});
  auto acc = tl::zeros<tl::f32>({BLOCK_M, D});
  auto qk_scale = sm_scale * 1.44269504f;
  tl::i32 hi = S;
  if (CAUSAL) hi = tl::minimum((start_m + 1) * BLOCK_M, S);
  for (auto n : tl::range(0, hi, BLOCK_N, tl::num_stages(STAGES))) {
    auto kn = n + offs_n;
    // kt = load(K + base + kn[None, :] * D + offs_d[:, None], mask=(kn < S)[None, :], other=0)
    auto kt = tl::load(K + base + tl::expand_dims(kn, 0) * D + tl::expand_dims(offs_d, 1),
                       tl::expand_dims(kn < S, 0), 0.0f);
    auto qk = tl::dot(q, kt) * qk_scale;
    auto valid = tl::expand_dims(kn < S, 0);
    if (CAUSAL) valid = valid & (tl::expand_dims(offs_m, 1) >= tl::expand_dims(kn, 0));
    qk = tl::where(valid, qk, -inf);
    auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
    auto p = tl::exp2(qk - tl::expand_dims(m_ij, 1));
    auto alpha = tl::exp2(m_i - m_ij);
    l_i = l_i * alpha + tl::sum(p, 1);
    acc = acc * tl::expand_dims(alpha, 1);
    // v = load(V + base + kn[:, None] * D + offs_d[None, :], mask=(kn < S)[:, None], other=0)
    auto v = tl::load(V + base + tl::expand_dims(kn, 1) * D + tl::expand_dims(offs_d, 0),
                      tl::expand_dims(kn < S, 1), 0.0f);
    acc = tl::dot(p.to<tl::bf16>(), v, acc);
    m_i = m_ij;
  }
  acc = acc / tl::expand_dims(l_i, 1);
  tl::store(O + base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0), acc.to<tl::bf16>(),
            tl::expand_dims(offs_m < S, 1));
}

inline auto& kernel() {
  static auto k = tl::kernel("attn_fwd", [](tl::ptr<tl::bf16> Q, tl::ptr<tl::bf16> K, tl::ptr<tl::bf16> V,
                                            tl::ptr<tl::bf16> O, tl::i32 S, tl::f32 sm_scale, int BLOCK_M,
                                            int BLOCK_N, int D, int CAUSAL, int STAGES) {
    fwd_body(Q, K, V, O, S, sm_scale, BLOCK_M, BLOCK_N, D, CAUSAL, STAGES);
  });
  return k;
}

inline double default_scale(int D) { return 1.0 / std::sqrt(double(D)); }

// FLOPs of the forward (the tutorial's count): 2 dots of 2*S*S*D each per batch*head,
// half of that when causal.
inline double flops(int64_t BH, int64_t S, int64_t D, bool causal) {
  return 4.0 * double(BH) * double(S) * double(S) * double(D) * (causal ? 0.5 : 1.0);
}

inline void check_problem(int64_t BH, int64_t S, int64_t D, const Config& c) {
  if (BH < 1 || S < 1) throw std::invalid_argument("attention: BH and S must be positive");
  if (D < 16 || (D & (D - 1))) throw std::invalid_argument("attention: D must be a power of two, at least 16");
  if (BH * S * D >= (int64_t(1) << 31)) throw std::invalid_argument("attention: BH*S*D must be below 2^31");
  if (c.block_m < 16 || c.block_n < 16) throw std::invalid_argument("attention: BLOCK_M and BLOCK_N must be >= 16");
}

inline tl::grid grid_of(const Config& c, int64_t BH, int64_t S) { return tl::grid(tl::cdiv(S, c.block_m), BH); }
inline tl::launch_options options_of(const Config& c) {
  return {.num_warps = c.num_warps, .num_stages = c.num_stages};
}

// O = attention(Q, K, V) on `dev`. Q, K, V, O: BH*S*D bf16 (tl::buffer<tl::bf16> or raw
// device pointers). sm_scale < 0: 1/sqrt(D).
template <class PQ, class PK, class PV, class PO>
void forward(tl::device dev, const Config& c, const PQ& q, const PK& k, const PV& v, const PO& o, int64_t BH,
             int64_t S, int64_t D, bool causal, double sm_scale = -1) {
  check_problem(BH, S, D, c);
  if (sm_scale < 0) sm_scale = default_scale(int(D));
  kernel()[grid_of(c, BH, S)].on(dev).with(options_of(c))(q, k, v, o, int(S), float(sm_scale), c.block_m, c.block_n,
                                                          int(D), int(causal), c.num_stages);
}

// Compiles without running, for `target` (a name: "sm_90", "gfx942", "gfx950", "cpu"; or
// a tl::device: its own target, whose report on NVIDIA then has the driver's registers
// and spills) and returns the metadata (JSON text: "report", "remarks", "key"). The
// pointers only shape the specialization (16-byte aligned, like device buffers); S
// decides the divisibility the compiler sees.
template <class Target>
std::string compile(const Target& target, const Config& c, int64_t S, int64_t D, bool causal) {
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  return kernel().compile(target, options_of(c), p, p, p, p, int(S), float(default_scale(int(D))), c.block_m,
                          c.block_n, int(D), int(causal), c.num_stages);
}

// The body traced into tile IR (what a launch would trace, before any pass), without a
// device: Q, K, V, O 16-byte aligned; `s_div16`: S is divisible by 16 (the launch
// specializes on that, as Triton's divisibility 16). Compile it with
// tl::codegen::compile(f, parse_target("sm_90"), {.num_warps = c.num_warps}).
inline std::unique_ptr<tl::ir::Function> trace_ir(const Config& c, int D, bool causal, bool s_div16 = true) {
  tl::detail::Trace t("attn_fwd", tl::ir::SrcLoc{__FILE__, unsigned(__LINE__)});
  auto ptr = [&](const char* name) {
    return tl::ptr<tl::bf16>(t.add_argument(tl::ir::Type{tl::DType::ptr, tl::DType::bf16, {}}, name, true));
  };
  auto Q = ptr("Q"), K = ptr("K"), V = ptr("V"), O = ptr("O");
  tl::i32 S(t.add_argument(tl::ir::Type{tl::DType::i32, tl::DType::i32, {}}, "S", s_div16));
  tl::f32 sm_scale(t.add_argument(tl::ir::Type{tl::DType::f32, tl::DType::f32, {}}, "sm_scale", false));
  fwd_body(Q, K, V, O, S, sm_scale, c.block_m, c.block_n, D, int(causal), c.num_stages);
  return t.finish();
}

}  // namespace attn

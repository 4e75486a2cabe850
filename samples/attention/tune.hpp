// The attention sample's configurations through tl::autotune: the forward, dK/dV and dQ
// kernels each tuned on their own, per (S_q, S_k, D, causal, G), remembered in the cache
// directory. The candidate list is one for every target (a decision is stored per list);
// predicates keep each target to its own part of it, and on AMD a configuration whose
// compile report spills is dropped without running (tune_rules::max_spills), as is one that
// does not fit the LDS or reaches no occupancy at all.
//
//   target    tiles (candidates())                      num_stages, AMD knobs
//   NVIDIA    those whose accumulators fit (runs_on)     2 and 3
//   AMD       the same                                   1 and 2 (the LDS holds two stages at
//                                                        most); MFMA 16 and 32; waves_per_eu
//                                                        0 and 2 at 4 warps
//   CPU       forward/dQ 64x64, 32x64; dK/dV 32 rows x 64 or 128 keys; 1 stage
#pragma once

#include <array>
#include <string>
#include <vector>

#include "samples/attention/attention.hpp"
#include "tl/autotune.hpp"

namespace attention {

inline bool is_amd(const std::string& target) { return target.rfind("gfx", 0) == 0; }
inline bool is_nvidia(const std::string& target) { return target.rfind("sm_", 0) == 0; }

// The kernels tuned: the forward and dQ own BLOCK_M query rows and step over BLOCK_N keys;
// dK/dV own BLOCK_N keys and step over BLOCK_M query rows (its f32 accumulators dK and dV
// are [BLOCK_N, D] each).
enum class Kernel { fwd, dkdv, dq };

// Every candidate of a kernel, every target's: runs_on() sorts them out. The tiles are
// Triton's tutorial ones (forward 128x64 w4, 64x64 w4, 128x128 w8; backward 32 rows x 128
// keys for dK/dV and 128 x 32 for dQ) and their neighbours, in order of preference (--report
// shows the first kept as the choice without timing).
inline std::vector<Config> candidates(Kernel k) {
  const std::vector<std::array<int, 3>> row_tiles = {{128, 64, 4}, {64, 64, 4}, {128, 64, 8}, {128, 128, 8},
                                                     {128, 32, 4}, {64, 32, 4}, {32, 64, 4}};
  const std::vector<std::array<int, 3>> key_tiles = {{32, 128, 4}, {64, 64, 4}, {32, 64, 4}, {64, 128, 8},
                                                     {16, 64, 4},  {64, 32, 4}};
  std::vector<Config> s;
  for (const auto& t : k == Kernel::dkdv ? key_tiles : row_tiles)
    for (int stages : {1, 2, 3}) {
      s.push_back({t[0], t[1], t[2], stages, 0, 0});  // NVIDIA (2, 3), CPU (1)
      if (stages <= 2)
        for (int mfma : {16, 32})
          for (int wpe : {0, 2})
            if (!(wpe && t[2] == 8)) s.push_back({t[0], t[1], t[2], stages, mfma, wpe});  // AMD
    }
  return s;
}

// Which candidates a target runs. `D` decides the tiles whose accumulators fit: at most 128
// f32 accumulator elements a lane ([BLOCK_M, D] for the forward and dQ, two [BLOCK_N, D]
// for dK/dV).
inline bool runs_on(const Config& c, Kernel k, const std::string& target, int64_t D) {
  const bool amd = is_amd(target), nv = is_nvidia(target), cpu = !amd && !nv;
  if (cpu)  // one thread a program: no latency to hide; rows along the vectorized D
    return c.num_stages == 1 && !c.matrix_instr_nonkdim && !c.waves_per_eu && c.num_warps == 4 &&
           (k == Kernel::dkdv ? c.block_m == 32 && (c.block_n == 64 || c.block_n == 128)
                              : c.block_n == 64 && (c.block_m == 64 || c.block_m == 32));
  if (k != Kernel::dkdv && c.block_m == 32) return false;
  if (nv && (c.matrix_instr_nonkdim || c.waves_per_eu || c.num_stages == 1)) return false;
  if (amd && (!c.matrix_instr_nonkdim || c.num_stages > 2)) return false;
  const int64_t acc = k == Kernel::dkdv ? 2 * int64_t(c.block_n) * D : int64_t(c.block_m) * D;
  return acc / (c.num_warps * (amd ? 64 : 32)) <= 128;
}

// The element type (tl::ty::bf16, tl::ty::f16) of a launch's Q: a tl::buffer, or a raw
// pointer (what --report compiles with, where nothing runs).
template <class X> struct element_of { using type = typename X::elem; };
template <> struct element_of<tl::bfloat16*> { using type = tl::ty::bf16; };
template <> struct element_of<tl::half*> { using type = tl::ty::f16; };
template <class X> using element_t = typename element_of<std::decay_t<X>>::type;

// The tuned launches. Arguments: the buffers (tl::buffer, or raw pointers while only
// compiling for --report), then the problem's numbers (the key).
inline const auto fwd_launch = [](tl::tuning& t, const Config& c, auto& q, auto& k, auto& v, auto& o, auto& lse,
                                  int64_t B, int64_t H, int64_t Hkv, int64_t S_q, int64_t S_k, int64_t D, bool causal,
                                  double sm_scale) {
  using E = element_t<decltype(q)>;
  if (!runs_on(c, Kernel::fwd, t.target(), D)) t.skip("not a configuration for " + t.target() + " at D=" + std::to_string(D));
  Problem p{B, H, Hkv, S_q, S_k, D, causal, sm_scale};
  t.launch(fwd_kernel<E>(), fwd_grid(c, p), options_of(c), q, k, v, o, lse, int(S_q), int(S_k), int(p.G()),
           float(p.scale()), c.block_m, c.block_n, int(D), int(causal), c.num_stages);
};

inline const auto dkdv_launch = [](tl::tuning& t, const Config& c, auto& q, auto& k, auto& v, auto& d_o,
                                   auto& stats, auto& dk, auto& dv, int64_t B, int64_t H, int64_t Hkv, int64_t S_q,
                                   int64_t S_k, int64_t D, bool causal, double sm_scale) {
  using E = element_t<decltype(q)>;
  if (!runs_on(c, Kernel::dkdv, t.target(), D)) t.skip("not a configuration for " + t.target() + " at D=" + std::to_string(D));
  Problem p{B, H, Hkv, S_q, S_k, D, causal, sm_scale};
  t.launch(bwd_dkdv_kernel<E>(), dkdv_grid(c, p), options_of(c), q, k, v, d_o, stats, dk, dv, int(S_q), int(S_k),
           int(p.G()), float(p.scale()), c.block_m, c.block_n, int(D), int(causal), c.num_stages);
};

inline const auto dq_launch = [](tl::tuning& t, const Config& c, auto& q, auto& k, auto& v, auto& d_o,
                                 auto& stats, auto& dq, int64_t B, int64_t H, int64_t Hkv, int64_t S_q, int64_t S_k,
                                 int64_t D, bool causal, double sm_scale) {
  using E = element_t<decltype(q)>;
  if (!runs_on(c, Kernel::dq, t.target(), D)) t.skip("not a configuration for " + t.target() + " at D=" + std::to_string(D));
  Problem p{B, H, Hkv, S_q, S_k, D, causal, sm_scale};
  t.launch(bwd_dq_kernel<E>(), dq_grid(c, p), options_of(c), q, k, v, d_o, stats, dq, int(S_q), int(S_k),
           int(p.G()), float(p.scale()), c.block_m, c.block_n, int(D), int(causal), c.num_stages);
};

// Rules for every target: no spills (AMD reports them; NVIDIA's driver report when the
// tuner compiles for the device), and on AMD at least one wave a SIMD.
inline tl::tune_rules rules() { return {.max_spills = 0, .max_shared_bytes = -1, .min_occupancy = 1, .max_vgprs = 0}; }

const std::vector<std::string> kProblemArgs = {"B", "H", "Hkv", "S_q", "S_k", "D", "causal", "sm_scale"};
const std::vector<std::string> kKey = {"S_q", "S_k", "D", "causal", "H", "Hkv"};

inline std::vector<std::string> args_with(std::vector<std::string> buffers) {
  buffers.insert(buffers.end(), kProblemArgs.begin(), kProblemArgs.end());
  return buffers;
}

template <class E> auto& fwd_tuner() {
  static auto t = tl::autotune(std::string("attention_fwd_") + type_name<E>(), candidates(Kernel::fwd),
                               {.args = args_with({"q", "k", "v", "o", "lse"}), .key = kKey, .rules = rules(),
                                .warmup = 1, .repeats = 5},
                               fwd_launch);
  return t;
}
template <class E> auto& dkdv_tuner() {
  static auto t = tl::autotune(std::string("attention_bwd_dkdv_") + type_name<E>(), candidates(Kernel::dkdv),
                               {.args = args_with({"q", "k", "v", "d_o", "stats", "dk", "dv"}), .key = kKey,
                                .rules = rules(), .warmup = 1, .repeats = 5},
                               dkdv_launch);
  return t;
}
template <class E> auto& dq_tuner() {
  static auto t = tl::autotune(std::string("attention_bwd_dq_") + type_name<E>(), candidates(Kernel::dq),
                               {.args = args_with({"q", "k", "v", "d_o", "stats", "dq"}), .key = kKey,
                                .rules = rules(), .warmup = 1, .repeats = 5},
                               dq_launch);
  return t;
}

// forward() and backward() with the tuned configurations (tuning first for a new key).
template <class E, class B, class L>
void forward_tuned(const Problem& p, const B& q, const B& k, const B& v, const B& o, const L& lse) {
  check(p);
  check_length(p, q, p.q_elems(), "Q"), check_length(p, k, p.kv_elems(), "K"), check_length(p, v, p.kv_elems(), "V");
  check_length(p, o, p.q_elems(), "O"), check_length(p, lse, p.rows(), "LSE");
  fwd_tuner<E>().on(q.dev())(q, k, v, o, lse, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D, p.causal, p.sm_scale);
}

// Tuning dK/dV and dQ times them on whatever the scratch (Delta, LSE * log2(e)) holds at the
// first call of a key (the preprocess runs inside backward(), after the choice): their time
// does not depend on the values, and backward() recomputes everything with the chosen
// configurations. `stats`: Problem::scratch_elems() f32.
template <class E, class B, class L>
void backward_tuned(const Problem& p, const B& q, const B& k, const B& v, const B& o, const B& d_o, const L& lse,
                    const L& stats, const B& dq, const B& dk, const B& dv) {
  check(p), check_length(p, stats, p.scratch_elems(), "the scratch (Delta, LSE * log2(e))");  // read by tuning
  const Config& a = dkdv_tuner<E>().best_on(q.dev(), q, k, v, d_o, stats, dk, dv, p.B, p.H, p.Hkv, p.S_q, p.S_k,
                                             p.D, p.causal, p.sm_scale);
  const Config& b = dq_tuner<E>().best_on(q.dev(), q, k, v, d_o, stats, dq, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D,
                                           p.causal, p.sm_scale);
  backward<E>(a, b, p, q, k, v, o, d_o, lse, stats, dq, dk, dv);
}

}  // namespace attention

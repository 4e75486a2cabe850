// The MoE sample's configurations through tl::autotune: the kernels after the routing (plan,
// scatter and the two grouped GEMMs, which share BLOCK_M: it is also the alignment of the
// experts' segments) tuned as one, per (T, H, I, E, top_k), the decision remembered in the
// cache directory (vLLM keeps the same choice in its fused_moe config files, per E, N and
// batch size). One candidate list for every target; runs_on keeps each target to its part,
// and a configuration whose compile report spills (AMD) is dropped without running.
//
//   target   tiles (BLOCK_M x BLOCK_N x BLOCK_K, warps)              num_stages, AMD
//   NVIDIA   16-128 x 64-256 x 128-256 (vLLM's fused_moe configs'    3 (2 at BLOCK_K 256)
//            range for small and large batches), 4 or 8 warps;
//            each with its operands in registers and staged in shared memory
//   AMD      16-128 x 64-128 x 128-256, 4 or 8 waves                 2; MFMA 16 or 32
//   CPU      32x64x64 and 16x128x128, 1 stage (a program is a loop nest on one thread)
//
// At gpt-oss-20b's layer (H = I = 2880) the AMD candidates compile to (gate/up, down; VGPRs
// with AGPRs, spills: `tl-sample-moe --target T --report --candidate all`), through the
// upcast to bf16 MFMA on both (bf16 x e2m1 has no scaled MFMA):
//   gfx942  64x128x128 w4 mfma32   510 / 258, none: the one kept
//           64x128x128 w4 mfma16   326 / 328, down spills 14 SGPRs; 32x128x128: 26 SGPRs;
//           16x64x128: gate/up 8 SGPRs; 128x128x128 w8 and 64x64x256: VGPRs; 16x128x256:
//           128 KiB of LDS for the weights' conversion (more than gfx942's 64)
//   gfx950  64x128x128 w4 mfma16   451 / 294, none (what --report shows)
//           16x64x128 w4 mfma16    146 / 124, none
//           the others spill (VGPRs, or 12-13 SGPRs at 32x128x128)
#pragma once

#include <string>
#include <vector>

#include "samples/moe/moe.hpp"
#include "tl/autotune.hpp"

namespace moe {

inline bool is_amd(const std::string& target) { return target.rfind("gfx", 0) == 0; }
inline bool is_nvidia(const std::string& target) { return target.rfind("sm_", 0) == 0; }

inline std::vector<Config> candidates() {
  std::vector<Config> c = {
      // NVIDIA (each also with its operands staged through shared memory, below)
      {64, 128, 128, 8, 3, 4, 0, 0}, {32, 128, 128, 8, 3, 4, 0, 0}, {16, 128, 256, 8, 2, 4, 0, 0},
      {128, 128, 128, 8, 3, 8, 0, 0}, {64, 64, 256, 8, 2, 4, 0, 0}, {128, 256, 128, 8, 3, 8, 0, 0},
      {16, 64, 128, 1, 3, 4, 0, 0},
      // AMD
      {64, 128, 128, 8, 2, 4, 16, 0}, {32, 128, 128, 8, 2, 4, 16, 0}, {16, 128, 256, 8, 2, 4, 16, 0},
      {128, 128, 128, 8, 2, 8, 32, 0}, {64, 64, 256, 8, 2, 4, 16, 0}, {64, 128, 128, 8, 2, 4, 32, 0},
      {16, 64, 128, 1, 2, 4, 16, 0},
      // CPU
      {32, 64, 64, 8, 1, 4, 0, 0}, {16, 128, 128, 8, 1, 4, 0, 0},
  };
  for (int i = 0; i < 7; ++i) {
    Config s = c[size_t(i)];
    s.operands_in_shared = 1;
    c.push_back(s);
  }
  return c;
}

inline bool runs_on(const Config& c, const std::string& target) {
  if (is_amd(target)) return c.matrix_instr_nonkdim != 0 && c.num_stages <= 2;
  if (is_nvidia(target)) return c.matrix_instr_nonkdim == 0 && c.num_stages >= 2;
  return c.num_stages == 1 && c.matrix_instr_nonkdim == 0;
}

// The first candidate a target runs: what --report shows without timing.
inline Config first_for(const std::string& target) {
  for (const Config& c : candidates())
    if (runs_on(c, target)) return c;
  throw std::logic_error("moe: no candidate for " + target);
}

// AMD: no spills (the code object's VGPR and SGPR spills). NVIDIA: up to 256 bytes of
// ptxas's spill stores (the driver's report), where tl::tune_rules' default would drop
// any: with the weights upcast into wgmma's A registers while the other dot runs, the
// large tiles sit at 255 registers and store a few registers once before the K loop
// (128x128x128 w8 gate/up: 144 B, ptxas 12.8), as Triton's own best configuration at
// this layer does (16 B); dropping them left only the small tiles.
inline tl::tune_rules rules() { return {.max_spills = -1, .max_shared_bytes = -1, .min_occupancy = 1, .max_vgprs = 0}; }
inline std::vector<tl::report_rule> report_rules() {
  auto get = [](const tl::compile_report& r, const char* k) {
    auto it = r.find(k);
    return it == r.end() ? int64_t(0) : std::max<int64_t>(0, it->second);
  };
  return {{"no AMD spills", [get](const tl::compile_report& r) { return get(r, "spill_vgpr") + get(r, "spill_sgpr") == 0; }},
          {"NVIDIA spill stores <= 256 B", [get](const tl::compile_report& r) {
             return (r.count("spill_store_bytes") ? get(r, "spill_store_bytes") : get(r, "local_bytes")) <= 256;
           }}};
}

inline const auto experts_launch = [](tl::tuning& t, const Config& c, const tl::buffer<tl::ty::bf16>& x, const auto& w,
                                      const Workspace& ws, int64_t T, int64_t H, int64_t I, int64_t E, int64_t top_k) {
  using W = typename std::decay_t<decltype(w.w1)>::elem;
  if (!runs_on(c, t.target())) t.skip("not a configuration for " + t.target());
  experts_with<W>([&](auto& k, const tl::grid& g, const tl::launch_options& o, auto&&... a) { t.launch(k, g, o, a...); },
                  c, Problem{T, H, I, E, top_k}, x, w, ws);
};

template <class W> auto& experts_tuner() {
  static auto t = tl::autotune(std::string("moe_experts_") + format_name<W>(), candidates(),
                               {.args = {"x", "w", "ws", "T", "H", "I", "E", "top_k"},
                                .key = {"T", "H", "I", "E", "top_k"}, .rules = rules(), .report_rules = report_rules(),
                                .warmup = 1, .repeats = 5},
                               experts_launch);
  return t;
}

// The configuration the tuner picks for this problem on x's device (tuning it first if new).
template <class W>
const Config& tuned_config(const Problem& p, const tl::buffer<tl::ty::bf16>& x, const Weights<W>& w, const Workspace& ws) {
  return experts_tuner<W>().best_on(x.dev(), x, w, ws, p.T, p.H, p.I, p.E, p.top_k);
}

// The layer with the tuned configuration. Tuning (the first call of a new problem) times the
// expert kernels on the routing the call has just computed.
template <class W>
void forward_tuned(const Problem& p, const tl::buffer<tl::ty::bf16>& x, const tl::buffer<tl::ty::f32>& logits,
                   const Weights<W>& w, const Workspace& ws, const tl::buffer<tl::ty::bf16>& y) {
  check(p);
  check_buffers(p, x, logits, w, ws, y);
  route(p, logits, ws);
  experts_tuner<W>().on(x.dev())(x, w, ws, p.T, p.H, p.I, p.E, p.top_k);
  combine(p, ws, y);
}

}  // namespace moe

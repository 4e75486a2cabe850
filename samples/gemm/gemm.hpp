// GEMM in tl (issue 14): C = A.B with tl::dot, Triton's tutorial matmul
// (../shared/anchors/gemm_anchor.py) written in tl, for two cases:
//
//   gemm_bf16   A bf16 [M, K] row-major, B bf16 [K, N] row-major  ->  C bf16 [M, N]
//   gemm_fp8    A FP8 [M, K] row-major, B FP8 stored column-major, i.e. B^T [N, K]
//               row-major (the layout torch._scaled_mm and the anchor's FP8 case use), and
//               f32 scales: C[m, n] = (A.B)[m, n] * row_scale[m] * col_scale[n], into bf16
//
// in f32 accumulators. The FP8 format is a template parameter: tl::f8e4m3fn (OCP) on
// NVIDIA (sm_89+), gfx950 and the CPU, tl::f8e4m3fnuz on gfx942 (fp8_format_for says
// which; gfx90a and NVIDIA below sm_89 have no FP8 matrix instructions).
//
// One program computes a [BLOCK_M, BLOCK_N] tile of C:
// - Program order: grouped, as the anchor (GROUP_SIZE_M programs down M before moving
//   along N), so that the programs running together share A's rows and B's columns in
//   L2 instead of each streaming a different row block of A.
// - K loop: `tl::range(0, K, BLOCK_K, tl::num_stages(S))` with the tiles' pointers
//   computed from the induction variable (not carried `a += BLOCK_K`, which the pipeliner
//   cannot look ahead through). Each operand tile is staged through a one-stage
//   `tl::shared` buffer: the pipeliner (codegen/passes/pipeline_loops.cpp) turns the
//   load + store into direct copies (cp.async on NVIDIA, global_load_lds on AMD) into
//   an S-stage version of the buffer, issued S-1 iterations ahead, and tl::dot reads its
//   operands straight from it. `--report` of tl-sample-gemm prints its remark
//   ("pipelined: loop at gemm.hpp:N num_stages=3: yes (0 loads into registers, 2 into
//   shared memory)").
// - Ragged M, N and K: every load is masked with zeros past the edges (zeros add nothing
//   to the dot), the store is masked on M and N.
// Offsets are 32-bit (M*K, K*N, M*N below 2^31: check_shape).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace gemm {

// "cpu" (--target), "cpu-skylake" (a CPU device's target()), "host".
inline bool is_cpu(const std::string& target) { return target.rfind("cpu", 0) == 0 || target == "host"; }

// The FP8 format whose matrix instructions the target has: e4m3fnuz on gfx942, OCP
// e4m3fn on gfx950, sm_89 and later, and the CPU; none ("") on gfx90a and NVIDIA before
// sm_89 (tl::dot refuses FP8 there while tracing).
inline std::string fp8_format_for(const std::string& target) {
  if (target.rfind("gfx942", 0) == 0) return "e4m3fnuz";
  if (target.rfind("gfx950", 0) == 0 || is_cpu(target)) return "e4m3fn";
  if (target.rfind("sm_", 0) == 0) return std::stoi(target.substr(3)) >= 89 ? "e4m3fn" : "";
  return "";
}

// A program's tile of A.B in f32, and the rows and columns of C it covers.
struct Accumulated {
  tl::f32 acc;   // [BLOCK_M, BLOCK_N]
  tl::i32 rm, rn;  // [BLOCK_M], [BLOCK_N]: the rows and columns of C
};

// The K loop both kernels share. B_T: B is stored transposed ([N, K], row-major).
template <class E, bool B_T>
Accumulated accumulate(const tl::ptr<E>& a, const tl::ptr<E>& b, const tl::i32& M, const tl::i32& N, const tl::i32& K,
                       int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_SIZE_M, int STAGES) {
  // Grouped order (the anchor's arithmetic): program ids run down a group of
  // GROUP_SIZE_M row blocks, then on to the next column block; the last group may be
  // shorter.
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_M), num_pid_n = tl::cdiv(N, BLOCK_N);
  auto num_pid_in_group = num_pid_n * GROUP_SIZE_M;
  auto first_pid_m = (pid / num_pid_in_group) * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  auto rm = pid_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto rn = pid_n * BLOCK_N + tl::arange(0, BLOCK_N);
  auto rk = tl::arange(0, BLOCK_K);
  auto m_ok = tl::expand_dims(rm < M, 1);  // [BLOCK_M, 1]
  auto n_ok = rn < N;
  auto a_rows = a + tl::expand_dims(rm * K, 1);

  // One stage each: the pipeliner makes STAGES of them.
  auto sa = tl::shared<E>({1, BLOCK_M, BLOCK_K});
  auto sb = tl::shared<E>(B_T ? tl::shape_t{1, BLOCK_N, BLOCK_K} : tl::shape_t{1, BLOCK_K, BLOCK_N});
  auto acc = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
  for (auto k : tl::range(0, K, BLOCK_K, tl::num_stages(STAGES))) {
    // `k + rk < K` is the loop's own bound check, so the loads the pipeliner issues
    // ahead need no mask of their own.
    auto kk = k + rk;
    auto k_ok = kk < K;
    sa[0].store(tl::load(a_rows + tl::expand_dims(kk, 0), m_ok & tl::expand_dims(k_ok, 0), 0));
    if constexpr (B_T) {
      // [BLOCK_N, BLOCK_K], contiguous along K like A's tile; transposed for the dot.
      auto p = b + tl::expand_dims(rn * K, 1) + tl::expand_dims(kk, 0);
      sb[0].store(tl::load(p, tl::expand_dims(n_ok, 1) & tl::expand_dims(k_ok, 0), 0));
      acc = tl::dot(sa[0].load(), tl::trans(sb[0].load()), acc);
    } else {
      auto p = b + tl::expand_dims(kk * N, 1) + tl::expand_dims(rn, 0);
      sb[0].store(tl::load(p, tl::expand_dims(k_ok, 1) & tl::expand_dims(n_ok, 0), 0));
      acc = tl::dot(sa[0].load(), sb[0].load(), acc);
    }
  }
  return {acc, rm, rn};
}

// Stores a program's [BLOCK_M, BLOCK_N] tile of C as bf16, masked on M and N.
inline void store_c(const tl::ptr<tl::bf16>& c, const tl::f32& v, const tl::i32& rm, const tl::i32& rn,
                    const tl::i32& M, const tl::i32& N) {
  tl::store(c + tl::expand_dims(rm * N, 1) + tl::expand_dims(rn, 0), v.to<tl::bf16>(),
            tl::expand_dims(rm < M, 1) & tl::expand_dims(rn < N, 0));
}

inline auto& bf16_kernel() {
  static auto k = tl::kernel("gemm_bf16", [](tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> b, tl::ptr<tl::bf16> c,
                                             tl::i32 M, tl::i32 N, tl::i32 K, int BLOCK_M, int BLOCK_N, int BLOCK_K,
                                             int GROUP_SIZE_M, int STAGES) {
    auto r = accumulate<tl::ty::bf16, false>(a, b, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, STAGES);
    store_c(c, r.acc, r.rm, r.rn, M, N);
  });
  return k;
}

// The scales multiply the f32 accumulator (torch._scaled_mm's row-wise scaling): the
// scaled product is rounded to bf16 once. The scales load straight into slices of the
// accumulator's layout (assign_layouts makes a broadcast combined with a dot's
// accumulator in its layout), as Triton's do: no [BLOCK_M, BLOCK_N] conversion.
template <class F8> auto& fp8_kernel() {
  static auto k = tl::kernel("gemm_fp8", [](tl::ptr<F8> a, tl::ptr<F8> b_t, tl::ptr<tl::f32> row_scale,
                                            tl::ptr<tl::f32> col_scale, tl::ptr<tl::bf16> c, tl::i32 M, tl::i32 N,
                                            tl::i32 K, int BLOCK_M, int BLOCK_N, int BLOCK_K, int GROUP_SIZE_M,
                                            int STAGES) {
    auto r = accumulate<tl::elem_t<F8>, true>(a, b_t, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, STAGES);
    auto rs = tl::load(row_scale + r.rm, r.rm < M, 0.0f), cs = tl::load(col_scale + r.rn, r.rn < N, 0.0f);
    store_c(c, r.acc * tl::expand_dims(rs, 1) * tl::expand_dims(cs, 0), r.rm, r.rn, M, N);
  });
  return k;
}

// A launch configuration: Triton's names (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_stages,
// num_warps).
struct Config {
  int block_m = 128, block_n = 128, block_k = 64;
  int group_m = 8;
  int num_stages = 3;
  int num_warps = 4;
  // NVIDIA's matrix instructions (tl::launch_options::mma_version): 0 lets tl choose
  // (wgmma on sm_90 at these tiles), 2 mma.sync, 3 wgmma.
  int mma_version = 0;
};

// The configuration for a shape on a target ("sm_90", "gfx942", "cpu", ...), with
// `compute_units` SMs / CUs. A small set, from the anchor's (Triton's tutorial
// configurations) and tl's compile reports at 4096^3 (`tl-sample-gemm --target T
// --report`; NVIDIA registers from ptxas 13.0 -v on the PTX, as the driver would):
//
//   target          bf16                               FP8
//   sm_90 (wgmma)   128x256x64, 3 stages, 8 warps      128x256x128, 3 stages, 8 warps
//                   (4 stages' buffers for the async  (4 x 48 KiB, 2 warpgroups of
//                   dot: 192 KiB; 184 registers)       m64n256k32)
//   (H100, tl-bench-gemm --config: FP8 1100 / 1120 TFLOP/s at 4096^3 / 8192^3 against 830
//   / 947 at 128x128x128; bf16 591 / 639 against 504 / 524 at 128x128x64 s4 w4:
//   bench/results/h100-2026-11-25-wgmma)
//   other NVIDIA    128x256x64, 3 stages, 8 warps      128x128x128, 3 stages, 8 warps
//   (mma.sync)      (144 KiB of stages, 250 registers, (195 registers, no spills)
//                   no spills)
//   (H100 on mma.sync, 8192^3, bench/gemm_sweep.sh: bf16 399 TFLOP/s against 366 at
//   128x128x64 s3 w4; FP8 345 against 303 at 128x128x64 s3 w8; 4 warps at 128x128 spill
//   on FP8: bench/results/h100-2026-11-23-gemm/sweep.txt)
//   gfx950          256x128x64, 2 stages, 8 warps      128x128x64, 2 stages, 4 warps
//                   (204 VGPRs, 96 KiB LDS; the        (198 VGPRs, 96 KiB LDS; BLOCK_K
//                   anchor's 256x256 spills 35 VGPRs,  128 took 354 VGPRs + AGPRs)
//                   Triton's 40)
//   gfx942, gfx90a  128x128x64, 2 stages, 4 warps      128x128x64, 2 stages, 4 warps
//                   (202 VGPRs; the stages fill the    (gfx942: 136 VGPRs, 32 KiB LDS)
//                   64 KiB LDS exactly)
//   CPU             64x128x32, 1 stage, both: a program is a loop nest on one thread with
//                   no latency to hide; the accumulator's rows along N are what the
//                   vectorizer runs over (on 2 cores at 512^3: 32x32 tiles 2x slower,
//                   128x128 and 128x256 within the noise of it)
//
// GPU shapes too small to give every compute unit a program at those tiles halve the
// block (4 warps) until they do or a side is 32, trading reuse for parallelism.
inline Config choose(int64_t M, int64_t N, int64_t K, const std::string& target, int compute_units, bool fp8) {
  (void)K;
  if (is_cpu(target)) return {64, 128, 32, 8, 1, 4};
  Config c;
  if (target.rfind("sm_90", 0) == 0) c = fp8 ? Config{128, 256, 128, 8, 3, 8} : Config{128, 256, 64, 8, 3, 8};
  else if (target.rfind("sm_", 0) == 0) c = fp8 ? Config{128, 128, 128, 8, 3, 8} : Config{128, 256, 64, 8, 3, 8};
  else if (target.rfind("gfx950", 0) == 0) c = fp8 ? Config{128, 128, 64, 8, 2, 4} : Config{256, 128, 64, 8, 2, 8};
  else c = Config{128, 128, 64, 8, 2, 4};
  while (c.block_m > 32 && c.block_n > 32 && tl::cdiv(M, c.block_m) * tl::cdiv(N, c.block_n) < compute_units) {
    c.block_m /= 2, c.block_n /= 2;
    c.num_warps = 4;
  }
  return c;
}

inline void check_shape(int64_t M, int64_t N, int64_t K) {
  if (M < 1 || N < 1 || K < 1) throw std::invalid_argument("gemm: M, N and K must be positive");
  const int64_t lim = int64_t(1) << 31;
  if (M * K >= lim || K * N >= lim || M * N >= lim)
    throw std::invalid_argument("gemm: M*K, K*N and M*N must be below 2^31 (32-bit offsets)");
}

inline tl::grid grid_of(const Config& c, int64_t M, int64_t N) {
  return tl::grid(tl::cdiv(M, c.block_m) * tl::cdiv(N, c.block_n));
}
inline tl::launch_options options_of(const Config& c) {
  return {.num_warps = c.num_warps, .num_stages = c.num_stages, .mma_version = c.mma_version};
}

// C = A.B, bf16. A: M*K, B: K*N, C: M*N (tl::buffer<tl::bf16> or raw device pointers).
template <class PA, class PB, class PC>
void gemm_bf16(const Config& c, const PA& a, const PB& b, const PC& out, int64_t M, int64_t N, int64_t K) {
  check_shape(M, N, K);
  bf16_kernel()[grid_of(c, M, N)].with(options_of(c))(a, b, out, int(M), int(N), int(K), c.block_m, c.block_n,
                                                       c.block_k, c.group_m, c.num_stages);
}

// C = (A.B) * row_scale[m] * col_scale[n] into bf16. A: M*K of F8, b_t: N*K of F8 (B
// column-major), row_scale: M f32, col_scale: N f32, C: M*N bf16.
template <class F8, class PA, class PB, class PS, class PT, class PC>
void gemm_fp8(const Config& c, const PA& a, const PB& b_t, const PS& row_scale, const PT& col_scale, const PC& out,
              int64_t M, int64_t N, int64_t K) {
  check_shape(M, N, K);
  fp8_kernel<F8>()[grid_of(c, M, N)].with(options_of(c))(a, b_t, row_scale, col_scale, out, int(M), int(N), int(K),
                                                          c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages);
}

// Compiles (runs nothing) for `target` (a name: "sm_90", "gfx942", "cpu"; or a
// tl::device: its own target, whose report on NVIDIA then has the driver's registers and
// spills) and returns the metadata (JSON: the resource report, the pipeliner's remarks).
// The pointers only shape the specialization (16-byte aligned, like device buffers);
// M, N and K decide the divisibility the compiler sees.
template <class Target>
std::string compile_bf16(const Config& c, const Target& target, int64_t M, int64_t N, int64_t K) {
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  return bf16_kernel().compile(target, options_of(c), p, p, p, int(M), int(N), int(K), c.block_m, c.block_n,
                               c.block_k, c.group_m, c.num_stages);
}
template <class F8, class Target>
std::string compile_fp8(const Config& c, const Target& target, int64_t M, int64_t N, int64_t K) {
  auto* p = reinterpret_cast<typename tl::elem_t<F8>::host*>(uintptr_t(1) << 20);
  auto* s = reinterpret_cast<float*>(uintptr_t(1) << 21);
  auto* o = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 22);
  return fp8_kernel<F8>().compile(target, options_of(c), p, p, s, s, o, int(M), int(N), int(K), c.block_m, c.block_n,
                                  c.block_k, c.group_m, c.num_stages);
}

}  // namespace gemm

// Row-wise FP8 quantization of MoE weights with a transpose (seed 000, torchao's
// "3-D transpose RHS" case), in tl:
//
//   W bf16 [E, K, N]  ->  Q = fp8(W^T / scale) [E, N, K],  scale f32 [E, N],
//   scale[e, n] = clamp(amax over k of |W[e, k, n]|, 1e-12, FLT_MAX) / FP8_MAX
//
// in the FP8 format of the target (e4m3fnuz, max 240, on gfx942; e4m3fn, max 448,
// elsewhere). Three launches, all over the same [BLOCK_K, BLOCK_N] tiles of W:
//   fp8_amax_zero             zeroes the [E, N] amax workspace (torchao: torch.full)
//   fp8_rowwise_amax          each tile's column maxima, combined with atomic_max
//   fp8_rowwise_cast_transpose  scales, converts, transposes, stores 16 FP8 a lane
//
// The atomics are the subject of seed 000: the amax kernel's `atomic_max` takes its
// semantics as a trace-time constant (`tl::sem::relaxed` by default, `acq_rel` to
// compare). A max needs no ordering with anything else (the next launch sees every
// result), so relaxed is enough; on gfx942/gfx950 acq_rel wraps each atomic in
// buffer_wbl2 / buffer_inv cache maintenance.
//
// The amax is computed on the bits of |w| as i32, not as floats, for two reasons:
//  - there is no 32-bit float atomic max instruction on gfx942, gfx950 or sm_90: LLVM
//    expands `atomicrmw fmax` into a compare-and-swap loop. The bits of non-negative
//    floats order like the floats, so an i32 atomic_max is one global_atomic_smax
//    (Triton's own float atomic_max uses the same trick).
//  - NaN. tl's float max reductions and float atomic max are maxnum (docs/ir.md,
//    docs/language.md; on the CPU a float atomic_max leaves the other value whether the
//    NaN is the operand or already in memory): a NaN would be dropped, and the column
//    quantized as if it were not there. |NaN| has the
//    largest bits of all (above +inf), so the integer max keeps it: a column holding a
//    NaN gets a NaN amax, a NaN scale and all-NaN values, as torch's amax/divide/cast
//    gives. The integer max is also exact and order-independent, so the result is the
//    same bit for bit whatever the order of the atomics.
// Infinities: an infinite amax is clamped to FLT_MAX, so the scale stays finite
// (FLT_MAX / FP8_MAX), the inf itself saturates to FP8_MAX and the finite values of its
// column scale by 1/scale (most become 0). An all-zero column's amax is floored at
// 1e-12 (torchao's EPS): scale 1e-12 / FP8_MAX, values 0, never a division by zero.
//
// Values: q = fp8(w * inv), inv = FP8_MAX / amax in f32 (one division per column, a
// multiply per element, as torchao); the conversion rounds to nearest even and
// saturates (docs/ir.md), so no clamp is needed. NaN stays NaN.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tl/numeric.hpp"
#include "tl/tl.hpp"

namespace fp8_quant {

// The amax floor and ceiling, as f32 bit patterns (non-negative floats order like
// their bits): 1e-12f and FLT_MAX; anything above kInfBits is a NaN.
inline constexpr int32_t kFloorBits = 0x2b8cbccc;  // 1e-12f
inline constexpr int32_t kFltMaxBits = 0x7f7fffff;
inline constexpr int32_t kInfBits = 0x7f800000;

// The output format: e4m3fnuz on gfx942 (its hardware converts and MFMA take that one),
// OCP e4m3fn elsewhere (gfx950, NVIDIA, the CPU).
inline bool uses_fnuz(const std::string& target) { return target.rfind("gfx942", 0) == 0; }

// The largest finite value of an FP8 element type (240 or 448), a trace-time constant.
template <class O> float fp8_max() { return float(tl::max_finite(tl::elem_t<O>::dtype)); }

inline auto& zero_kernel() {
  static auto k = tl::kernel("fp8_amax_zero", [](tl::ptr<tl::i32> amax, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(amax + i, tl::zeros<tl::i32>({BLOCK}), i < n);
  });
  return k;
}

// Program (pid_n, pid_k, e) reads the tile W[e, k0:k0+BLOCK_K, n0:n0+BLOCK_N]
// (contiguous along N), reduces |w| over its K rows, and folds the column maxima into
// amax[e, n0:n0+BLOCK_N] (f32 bits in an i32 workspace, zeroed first).
inline auto& amax_kernel() {
  static auto k = tl::kernel("fp8_rowwise_amax", [](tl::ptr<tl::bf16> w, tl::ptr<tl::i32> amax, tl::i32 K,
                                                    tl::i32 N, int BLOCK_K, int BLOCK_N, tl::sem SEM) {
    auto e = tl::program_id(2).to<tl::i64>();
    auto n = tl::program_id(0) * BLOCK_N + tl::arange(0, BLOCK_N);
    auto k = tl::program_id(1) * BLOCK_K + tl::arange(0, BLOCK_K);
    auto nm = n < N;
    auto m = tl::expand_dims(k < K, 1) & tl::expand_dims(nm, 0);
    // Offsets within an expert in i32 (K * N < 2^31, checked by the launch); the
    // expert's base in i64.
    auto we = w + e * K.to<tl::i64>() * N.to<tl::i64>();
    auto x = tl::load(we + (tl::expand_dims(k * N, 1) + tl::expand_dims(n, 0)), m, 0.0f);
    // bf16 -> f32 is exact; masked-off elements are 0, the identity of a max of |w|.
    auto bits = tl::abs(x.to<tl::f32>()).bitcast<tl::i32>();
    tl::atomic_max(amax + e * N.to<tl::i64>() + n, tl::max(bits, 0), nm, SEM);
  });
  return k;
}

// Same grid and tiles. Each program loads the finished amax of its columns, turns it
// into 1/scale, converts its tile to FP8, transposes it to [BLOCK_N, BLOCK_K] and stores
// it to Q[e, n, k] (contiguous along K: with K a multiple of 16, 16 FP8 a lane). The
// programs of the first K tile also store the scales.
template <class O> auto& cast_transpose_kernel() {
  static auto k = tl::kernel("fp8_rowwise_cast_transpose", [](tl::ptr<tl::bf16> w, tl::ptr<tl::i32> amax,
                                                              tl::ptr<O> q, tl::ptr<tl::f32> scale, tl::i32 K,
                                                              tl::i32 N, int BLOCK_K, int BLOCK_N) {
    const float FP8_MAX = fp8_max<O>();
    auto e = tl::program_id(2).to<tl::i64>();
    auto n = tl::program_id(0) * BLOCK_N + tl::arange(0, BLOCK_N);
    auto k = tl::program_id(1) * BLOCK_K + tl::arange(0, BLOCK_K);
    auto nm = n < N, km = k < K;
    auto en = e * N.to<tl::i64>();
    // The clamp on the bits: +inf -> FLT_MAX, anything below the floor (0 included) ->
    // the floor, NaN (above +inf) kept. (maximum/minimum on floats would drop the NaN.)
    auto bits = tl::load(amax + en + n, nm, 0);
    bits = tl::where(bits == kInfBits, tl::full<tl::i32>({BLOCK_N}, kFltMaxBits), tl::maximum(bits, kFloorBits));
    auto a = bits.bitcast<tl::f32>();
    auto inv = FP8_MAX / a;
    tl::store(scale + en + n, a / FP8_MAX, nm & (tl::program_id(1) == 0));
    auto m = tl::expand_dims(km, 1) & tl::expand_dims(nm, 0);
    auto we = w + e * K.to<tl::i64>() * N.to<tl::i64>();
    auto x = tl::load(we + (tl::expand_dims(k * N, 1) + tl::expand_dims(n, 0)), m, 0.0f);
    // Convert before transposing: the transpose (through shared memory on a GPU) then
    // moves 1 byte an element instead of 2 or 4.
    auto v = (x.to<tl::f32>() * tl::expand_dims(inv, 0)).to<O>();
    auto qe = q + e * N.to<tl::i64>() * K.to<tl::i64>();
    tl::store(qe + (tl::expand_dims(n * K, 1) + tl::expand_dims(k, 0)), tl::trans(v),
              tl::expand_dims(nm, 1) & tl::expand_dims(km, 0));
  });
  return k;
}

// [64, 64] tiles: on the H100 they ran 17-20% faster than torchao's [128, 128] on all three
// MoE shapes (the sample's host-timed runs: 2876 against 2462 GB/s at E=16, K=5120,
// N=8192; 2764 against 2340 at 64, 2048, 1408; 2399 against 2007 at 1, 8192, 8192; 2 and 4
// warps within 2%; [128, 32], [64, 32] and [32, 64] slower). Triton prefers [128, 128]
// (3028 against 2841 GB/s at 16, 5120, 8192); tl's cast kernel is what held it back there
// (its FP8 converts, one an element until they were paired, and its transpose through
// shared memory, still written a byte at a time). On AMD's
// wave64 a [64, 64] tile over 4 waves is exactly one 16-byte store of 16 FP8 a lane.
struct Config {
  int block_k = 64, block_n = 64;
  int num_warps = 4;
  tl::sem sem = tl::sem::relaxed;
};

inline void check_shape(int64_t E, int64_t K, int64_t N) {
  if (E < 1 || K < 1 || N < 1) throw std::invalid_argument("fp8_quant: E, K and N must be positive");
  if (K * N >= (int64_t(1) << 31)) throw std::invalid_argument("fp8_quant: K * N must be below 2^31");
  if (E > 65535) throw std::invalid_argument("fp8_quant: at most 65535 experts (the grid's z)");
}

// The three launches. W: E*K*N bf16; amax: an E*N i32 workspace; Q: E*N*K of the FP8
// type O; S: E*N f32. Buffers (tl::buffer) or raw device pointers.
template <class O, class PW, class PA, class PQ, class PS>
void quantize(const Config& c, const PW& w, const PA& amax, const PQ& q, const PS& s, int64_t E, int64_t K,
              int64_t N) {
  check_shape(E, K, N);
  const int zb = 1024;
  zero_kernel()[tl::grid(tl::cdiv(E * N, zb))].with({.num_warps = 4})(amax, int(E * N), zb);
  const tl::grid g(tl::cdiv(N, c.block_n), tl::cdiv(K, c.block_k), E);
  amax_kernel()[g].with({.num_warps = c.num_warps})(w, amax, int(K), int(N), c.block_k, c.block_n, c.sem);
  cast_transpose_kernel<O>()[g].with({.num_warps = c.num_warps})(w, amax, q, s, int(K), int(N), c.block_k,
                                                                  c.block_n);
}

// Compiles (without running) the amax kernel (`cast` false) or the cast kernel for
// `target` and returns its metadata (JSON: the resource report and more). The pointers
// only shape the specialization (16-byte aligned, like device buffers); K and N decide
// the divisibility the vectorizer sees.
template <class O>
std::string compile(const Config& c, const std::string& target, int64_t K, int64_t N, bool cast) {
  auto* w = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  auto* a = reinterpret_cast<int32_t*>(uintptr_t(1) << 21);
  auto* q = reinterpret_cast<typename tl::elem_t<O>::host*>(uintptr_t(1) << 22);
  auto* s = reinterpret_cast<float*>(uintptr_t(1) << 23);
  const tl::launch_options o{.num_warps = c.num_warps};
  if (!cast) return amax_kernel().compile(target, o, w, a, int(K), int(N), c.block_k, c.block_n, c.sem);
  return cast_transpose_kernel<O>().compile(target, o, w, a, q, s, int(K), int(N), c.block_k, c.block_n);
}

}  // namespace fp8_quant

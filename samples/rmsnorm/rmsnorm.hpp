// RMSNorm in tl, forward and backward, with the launch heuristics of seed 004:
// narrow rows pack ROWS_PER_PID rows per program (only when rows divide evenly and
// enough programs remain for the compute units), wide rows never pack, gamma is loaded
// once per program, and offsets are 64-bit only when 32-bit ones would overflow.
//
//   y = x / sqrt(mean(x^2) + eps) * g,   g = w (or 1 + w when zero-centered)
#pragma once

#include <algorithm>
#include <cstdint>

#include "tl/tl.hpp"

namespace rmsnorm {

// The row index in the integer width the offsets need.
template <bool WIDE> auto offset_of(const tl::i32& row, const tl::i32& cols) {
  if constexpr (WIDE) return row.to<tl::i64>() * cols.to<tl::i64>();
  else return row * cols;
}

template <class E> auto& forward_kernel() {
  static auto k = tl::kernel("rmsnorm_fwd", [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<E> w, tl::ptr<tl::f32> rstd,
                                               tl::i32 cols, tl::f32 eps, int BLOCK, int ROWS_PER_PID,
                                               bool ZERO_CENTERED, bool OFFSETS64) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    if (ZERO_CENTERED) g = g + 1.0f;
    for (int i : tl::static_range(ROWS_PER_PID)) {
      auto row = tl::program_id(0) * ROWS_PER_PID + i;
      auto run = [&](auto base) {
        auto v = tl::load(x + base + c, m, 0.0f).template to<tl::f32>();
        auto inv = tl::rsqrt(tl::sum(v * v, 0) / cols.to<tl::f32>() + eps);
        tl::store(y + base + c, (v * inv * g).template to<typename tl::elem_t<E>>(), m);
        tl::store(rstd + row, inv);
      };
      if (OFFSETS64) run(offset_of<true>(row, cols));
      else run(offset_of<false>(row, cols));
    }
  });
  return k;
}

// dx = r*g*dy - x * r^3/N * sum(dy*g*x); per-program partial dgamma = sum over its rows of dy*x*r.
template <class E> auto& backward_kernel() {
  static auto k = tl::kernel("rmsnorm_bwd", [](tl::ptr<E> x, tl::ptr<E> dy, tl::ptr<E> w, tl::ptr<tl::f32> rstd,
                                               tl::ptr<E> dx, tl::ptr<tl::f32> dw_partial, tl::i32 cols,
                                               int BLOCK, int ROWS_PER_PID, bool ZERO_CENTERED, bool OFFSETS64) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    if (ZERO_CENTERED) g = g + 1.0f;
    auto dg = tl::zeros<tl::f32>({BLOCK});
    for (int i : tl::static_range(ROWS_PER_PID)) {
      auto row = tl::program_id(0) * ROWS_PER_PID + i;
      auto run = [&](auto base) {
        auto xv = tl::load(x + base + c, m, 0.0f).template to<tl::f32>();
        auto gv = tl::load(dy + base + c, m, 0.0f).template to<tl::f32>();
        auto r = tl::load(rstd + row);
        auto dot = tl::sum(gv * g * xv, 0) / cols.to<tl::f32>();
        auto d = r * g * gv - xv * (r * r * r * dot);
        tl::store(dx + base + c, d.template to<typename tl::elem_t<E>>(), m);
        dg = dg + gv * xv * r;
      };
      if (OFFSETS64) run(offset_of<true>(row, cols));
      else run(offset_of<false>(row, cols));
    }
    tl::store(dw_partial + tl::program_id(0) * cols + c, dg, m);
  });
  return k;
}

// dgamma[j] = sum over programs of the partials: deterministic, no atomics.
inline auto& dgamma_kernel() {
  static auto k = tl::kernel("rmsnorm_dgamma", [](tl::ptr<tl::f32> partial, tl::ptr<tl::f32> dw, tl::i32 programs,
                                                  tl::i32 cols, int BLOCK) {
    auto c = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = c < cols;
    auto acc = tl::zeros<tl::f32>({BLOCK});
    for (auto p : tl::range(0, programs)) acc += tl::load(partial + p * cols + c, m, 0.0f);
    tl::store(dw + c, acc, m);
  });
  return k;
}

struct Config {
  int block = 0;
  int rows_per_pid = 1;
  int num_warps = 4;
  bool offsets64 = false;
};

inline int next_pow2(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The launch configuration. Packing only applies to narrow rows (BLOCK <= 512) and
// only when it keeps at least two programs per compute unit: it exists to amortize
// per-program overhead, and must never cost the wide shapes (seed 004's regression).
inline Config choose(int64_t rows, int64_t cols, int compute_units, bool backward) {
  Config c;
  c.block = next_pow2(cols);
  c.num_warps = c.block <= 256 ? 1 : c.block <= 1024 ? 2 : c.block <= 4096 ? 4 : 8;
  c.offsets64 = rows * cols >= (int64_t(1) << 31);
  if (c.block <= 512) {
    int cap = std::min(backward ? 4 : 16, 2048 / c.block);
    for (int r = cap; r > 1; r /= 2)
      if (rows % r == 0 && rows / r >= 2 * int64_t(compute_units)) {
        c.rows_per_pid = r;
        break;
      }
    if (c.rows_per_pid * c.block >= 1024) c.num_warps = 4;
  }
  return c;
}

}  // namespace rmsnorm

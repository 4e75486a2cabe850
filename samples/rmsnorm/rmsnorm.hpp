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

// Forward. One row per program is a 1-D tile; ROWS_PER_PID > 1 loads the rows as one
// [ROWS_PER_PID, BLOCK] tile, so that all their loads are in flight together (a loop
// over rows would wait for each row's reduction before loading the next).
template <class E> auto& forward_kernel() {
  static auto k = tl::kernel("rmsnorm_fwd", [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<E> w, tl::ptr<tl::f32> rstd,
                                               tl::i32 cols, tl::f32 eps, int BLOCK, int ROWS_PER_PID,
                                               bool ZERO_CENTERED, bool OFFSETS64) {
    using Out = typename tl::elem_t<E>;
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    if (ZERO_CENTERED) g = g + 1.0f;
    auto n = cols.to<tl::f32>();
    if (ROWS_PER_PID == 1) {
      auto row = tl::program_id(0);
      auto run = [&](auto base) {
        auto v = tl::load(x + base + c, m, 0.0f).template to<tl::f32>();
        auto inv = tl::rsqrt(tl::sum(v * v, 0) / n + eps);
        tl::store(y + base + c, (v * inv * g).template to<Out>(), m);
        tl::store(rstd + row, inv);
      };
      if (OFFSETS64) run(offset_of<true>(row, cols));
      else run(offset_of<false>(row, cols));
      return;
    }
    auto rows = tl::program_id(0) * ROWS_PER_PID + tl::arange(0, ROWS_PER_PID);
    auto m2 = tl::broadcast_to(tl::expand_dims(m, 0), {ROWS_PER_PID, BLOCK});
    auto run = [&](auto offs) {
      auto v = tl::load(x + offs, m2, 0.0f).template to<tl::f32>();
      auto inv = tl::rsqrt(tl::sum(v * v, 1) / n + eps);
      tl::store(y + offs, (v * tl::expand_dims(inv, 1) * tl::expand_dims(g, 0)).template to<Out>(), m2);
      tl::store(rstd + rows, inv);
    };
    if (OFFSETS64) run(tl::expand_dims(rows.to<tl::i64>() * cols.to<tl::i64>(), 1) + tl::expand_dims(c, 0));
    else run(tl::expand_dims(rows * cols, 1) + tl::expand_dims(c, 0));
  });
  return k;
}

// Backward, persistent: each program walks blocks of ROWS_PER_PID rows with a stride of
// the grid, accumulating its partial dgamma in registers, so the partials to reduce
// afterwards number a few per compute unit rather than one per row.
//   dx = r*g*dy - x * r^3/N * sum(dy*g*x),   dgamma = sum over rows of dy*x*r
template <class E> auto& backward_kernel() {
  static auto k = tl::kernel("rmsnorm_bwd", [](tl::ptr<E> x, tl::ptr<E> dy, tl::ptr<E> w, tl::ptr<tl::f32> rstd,
                                               tl::ptr<E> dx, tl::ptr<tl::f32> dw_partial, tl::i32 rows,
                                               tl::i32 cols, int BLOCK, int ROWS_PER_PID, bool ZERO_CENTERED,
                                               bool OFFSETS64) {
    using Out = typename tl::elem_t<E>;
    const int R = ROWS_PER_PID;
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    if (ZERO_CENTERED) g = g + 1.0f;
    auto g2 = tl::expand_dims(g, 0);
    auto n = cols.to<tl::f32>();
    auto dg = tl::zeros<tl::f32>({BLOCK});
    auto pid = tl::program_id(0);
    for (auto first : tl::range(pid * R, rows, tl::num_programs(0) * R)) {
      auto r_idx = first + tl::arange(0, R);
      auto rm = r_idx < rows;
      auto m2 = tl::expand_dims(rm, 1) & tl::expand_dims(m, 0);
      auto run = [&](auto offs) {
        auto xv = tl::load(x + offs, m2, 0.0f).template to<tl::f32>();
        auto gv = tl::load(dy + offs, m2, 0.0f).template to<tl::f32>();
        auto r = tl::load(rstd + r_idx, rm, 0.0f);
        auto dot = tl::sum(gv * g2 * xv, 1) / n;
        auto d = tl::expand_dims(r, 1) * g2 * gv - xv * tl::expand_dims(r * r * r * dot, 1);
        tl::store(dx + offs, d.template to<Out>(), m2);
        dg = dg + tl::sum(gv * xv * tl::expand_dims(r, 1), 0);
      };
      if (OFFSETS64) run(tl::expand_dims(r_idx.to<tl::i64>() * cols.to<tl::i64>(), 1) + tl::expand_dims(c, 0));
      else run(tl::expand_dims(r_idx * cols, 1) + tl::expand_dims(c, 0));
    }
    tl::store(dw_partial + pid * cols + c, dg, m);
  });
  return k;
}

// dgamma[j] = sum over the backward's programs of their partials: deterministic (no
// atomics), reading [32, 64] tiles so that many partial rows are in flight.
inline auto& dgamma_kernel() {
  static auto k = tl::kernel("rmsnorm_dgamma", [](tl::ptr<tl::f32> partial, tl::ptr<tl::f32> dw, tl::i32 programs,
                                                  tl::i32 cols, int BLOCK_P, int BLOCK_C) {
    auto c = tl::program_id(0) * BLOCK_C + tl::arange(0, BLOCK_C);
    auto cm = tl::expand_dims(c < cols, 0);
    auto p = tl::arange(0, BLOCK_P);
    auto acc = tl::zeros<tl::f32>({BLOCK_P, BLOCK_C});
    for (auto p0 : tl::range(0, programs, BLOCK_P)) {
      auto rows = p0 + p;
      auto offs = tl::expand_dims(rows * cols, 1) + tl::expand_dims(c, 0);
      acc += tl::load(partial + offs, tl::expand_dims(rows < programs, 1) & cm, 0.0f);
    }
    tl::store(dw + c, tl::sum(acc, 0), c < cols);
  });
  return k;
}

struct Config {
  int block = 0;
  int rows_per_pid = 1;
  int num_warps = 4;
  bool offsets64 = false;
  int64_t programs = 0;  // the grid
};

inline int next_pow2(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The launch configuration. Forward packing only applies to narrow rows (BLOCK <= 512)
// and only when the rows divide evenly and it keeps at least two programs per compute
// unit: it exists to amortize per-program overhead, and must never cost the wide
// shapes (seed 004's regression). The backward is persistent: a few programs per
// compute unit, each looping over blocks of up to 4 rows (narrow rows only).
inline Config choose(int64_t rows, int64_t cols, int compute_units, bool backward) {
  Config c;
  c.block = next_pow2(cols);
  c.num_warps = c.block <= 256 ? 1 : c.block <= 1024 ? 2 : c.block <= 4096 ? 4 : 8;
  c.offsets64 = rows * cols >= (int64_t(1) << 31);
  if (c.block <= 512) {
    int cap = std::min(backward ? 4 : 16, 2048 / c.block);
    // Both directions keep at least two blocks of rows per compute unit; the forward
    // also needs r to divide the rows (it has no row mask; the backward masks its last block).
    for (int r = cap; r > 1; r /= 2)
      if ((backward || rows % r == 0) && (rows + r - 1) / r >= 2 * int64_t(compute_units)) {
        c.rows_per_pid = r;
        break;
      }
    if (c.rows_per_pid * c.block >= 1024) c.num_warps = 4;
  }
  int64_t blocks = (rows + c.rows_per_pid - 1) / c.rows_per_pid;
  c.programs = backward ? std::min<int64_t>(blocks, 4 * int64_t(std::max(compute_units, 1))) : blocks;
  return c;
}

// Launches. E is the element type (tl::bf16 or tl::f16); buffers come from device::alloc.
template <class E, class B, class F>
void forward(const Config& c, const B& x, const B& y, const B& w, const F& rstd, int64_t cols, float eps,
             bool zero_centered) {
  forward_kernel<E>()[tl::grid(c.programs)].with({.num_warps = c.num_warps})(
      x, y, w, rstd, int(cols), eps, c.block, c.rows_per_pid, zero_centered, c.offsets64);
}

// `dw_partial` holds c.programs * cols floats.
template <class E, class B, class F>
void backward(const Config& c, const B& x, const B& dy, const B& w, const F& rstd, const B& dx, const F& dw_partial,
              const F& dw, int64_t rows, int64_t cols, bool zero_centered) {
  backward_kernel<E>()[tl::grid(c.programs)].with({.num_warps = c.num_warps})(
      x, dy, w, rstd, dx, dw_partial, int(rows), int(cols), c.block, c.rows_per_pid, zero_centered, c.offsets64);
  dgamma_kernel()[tl::grid(tl::cdiv(cols, 64))].with({.num_warps = 4})(dw_partial, dw, int(c.programs), int(cols), 32, 64);
}

}  // namespace rmsnorm

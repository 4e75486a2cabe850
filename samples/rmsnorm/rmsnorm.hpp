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
    auto n = cols.to<tl::f32>();
    auto gamma = [&] {
      auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
      if (ZERO_CENTERED) g = g + 1.0f;
      return g;
    };
    if (ROWS_PER_PID == 1) {
      auto row = tl::program_id(0);
      auto run = [&](auto base) {
        auto v = tl::load(x + base + c, m, 0.0f).template to<tl::f32>();
        auto inv = tl::rsqrt(tl::sum(v * v, 0) / n + eps);
        // gamma only after the reduction: one row has no reuse for it, and a wide row's
        // registers are better spent on the row (gamma comes from L2 by then).
        auto g = gamma();
        tl::store(y + base + c, (v * inv * g).template to<Out>(), m);
        tl::store(rstd + row, inv);
      };
      if (OFFSETS64) run(offset_of<true>(row, cols));
      else run(offset_of<false>(row, cols));
      return;
    }
    auto g = gamma();  // loaded once, used for every packed row
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
// afterwards number a few per compute unit rather than one per row. With STAGES = 2 the
// loop is software-pipelined (tl::num_stages): the next block's x, dy and rstd are
// loaded before the current one is computed, so that the loads of one iteration overlap
// the arithmetic and stores of the previous, at the cost of a second block in registers.
//   dx = r*g*dy - x * r^3/N * sum(dy*g*x),   dgamma = sum over rows of dy*x*r
template <class E> auto& backward_kernel() {
  static auto k = tl::kernel("rmsnorm_bwd", [](tl::ptr<E> x, tl::ptr<E> dy, tl::ptr<E> w, tl::ptr<tl::f32> rstd,
                                               tl::ptr<E> dx, tl::ptr<tl::f32> dw_partial, tl::i32 rows,
                                               tl::i32 cols, int BLOCK, int ROWS_PER_PID, bool ZERO_CENTERED,
                                               bool OFFSETS64, int STAGES) {
    using Out = typename tl::elem_t<E>;
    const int R = ROWS_PER_PID;
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    if (ZERO_CENTERED) g = g + 1.0f;
    auto g2 = tl::expand_dims(g, 0);
    auto n = cols.to<tl::f32>();
    // The partial dgamma, one row per row of a block: summed over the block's rows only
    // once, after the loop (summing every iteration would cross warps through shared
    // memory, with barriers, on every block).
    auto dg = tl::zeros<tl::f32>({R, BLOCK});
    auto pid = tl::program_id(0);
    auto step = tl::num_programs(0) * R;
    auto body = [&](auto offsets_of) {
      auto mask_of = [&](const auto& r_idx) { return tl::expand_dims(r_idx < rows, 1) & tl::expand_dims(m, 0); };
      for (auto first : tl::range(pid * R, rows, step, tl::num_stages(STAGES))) {
        auto r_idx = first + tl::arange(0, R);
        auto m2 = mask_of(r_idx);
        auto offs = offsets_of(r_idx);
        auto xv = tl::load(x + offs, m2, 0.0f).template to<tl::f32>();
        auto gv = tl::load(dy + offs, m2, 0.0f).template to<tl::f32>();
        auto r = tl::load(rstd + r_idx, r_idx < rows, 0.0f);
        auto dot = tl::sum(gv * g2 * xv, 1) / n;
        auto d = tl::expand_dims(r, 1) * g2 * gv - xv * tl::expand_dims(r * r * r * dot, 1);
        tl::store(dx + offs, d.template to<Out>(), m2);
        dg = dg + gv * xv * tl::expand_dims(r, 1);
      }
    };
    if (OFFSETS64)
      body([&](const auto& r_idx) {
        return tl::expand_dims(r_idx.template to<tl::i64>() * cols.to<tl::i64>(), 1) + tl::expand_dims(c, 0);
      });
    else
      body([&](const auto& r_idx) { return tl::expand_dims(r_idx * cols, 1) + tl::expand_dims(c, 0); });
    tl::store(dw_partial + pid * cols + c, tl::sum(dg, 0), m);
  });
  return k;
}

// Backward for rows too wide for registers (every lane would hold x, dy, gamma and the
// partial dgamma of its share of the row: spills on AMD at 32768 columns), in column
// chunks of CHUNK: per row, a first pass over the chunks sums dy*g*x, a second reloads
// them (from L2: just read) and writes dx. The program's partial dgamma row lives in
// dw_partial itself, read and written back chunk by chunk; each lane rereads exactly
// what it wrote (same tile, same layout), so no barrier is needed.
template <class E> auto& backward_chunked_kernel() {
  static auto k = tl::kernel("rmsnorm_bwd_chunked", [](tl::ptr<E> x, tl::ptr<E> dy, tl::ptr<E> w,
                                                       tl::ptr<tl::f32> rstd, tl::ptr<E> dx,
                                                       tl::ptr<tl::f32> dw_partial, tl::i32 rows, tl::i32 cols,
                                                       int CHUNK, bool ZERO_CENTERED, bool OFFSETS64) {
    using Out = typename tl::elem_t<E>;
    auto c = tl::arange(0, CHUNK);
    auto n = cols.to<tl::f32>();
    auto pid = tl::program_id(0);
    auto partial = dw_partial + pid.to<tl::i64>() * cols.to<tl::i64>();
    for (auto c0 : tl::range(0, cols, CHUNK)) tl::store(partial + c0 + c, tl::zeros<tl::f32>({CHUNK}), c0 + c < cols);
    auto gamma = [&](const auto& cc, const auto& m) {
      auto g = tl::load(w + cc, m, 0.0f).template to<tl::f32>();
      if (ZERO_CENTERED) g = g + 1.0f;
      return g;
    };
    auto run = [&](auto base_of) {
      for (auto row : tl::range(pid, rows, tl::num_programs(0))) {
        auto base = base_of(row);
        auto r = tl::load(rstd + row);
        auto acc = tl::zeros<tl::f32>({CHUNK});
        for (auto c0 : tl::range(0, cols, CHUNK)) {
          auto cc = c0 + c;
          auto m = cc < cols;
          auto xv = tl::load(x + base + cc, m, 0.0f).template to<tl::f32>();
          auto gv = tl::load(dy + base + cc, m, 0.0f).template to<tl::f32>();
          acc = acc + gv * gamma(cc, m) * xv;
        }
        auto k3 = r * r * r * (tl::sum(acc, 0) / n);
        for (auto c0 : tl::range(0, cols, CHUNK)) {
          auto cc = c0 + c;
          auto m = cc < cols;
          auto xv = tl::load(x + base + cc, m, 0.0f).template to<tl::f32>();
          auto gv = tl::load(dy + base + cc, m, 0.0f).template to<tl::f32>();
          tl::store(dx + base + cc, (r * gamma(cc, m) * gv - xv * k3).template to<Out>(), m);
          tl::store(partial + cc, tl::load(partial + cc, m, 0.0f) + gv * xv * r, m);
        }
      }
    };
    if (OFFSETS64) run([&](const auto& row) { return offset_of<true>(row, cols); });
    else run([&](const auto& row) { return offset_of<false>(row, cols); });
  });
  return k;
}

// dgamma[j] = sum over the backward's programs of their partials: deterministic (no
// atomics), reading [BLOCK_P, BLOCK_C] tiles so that many partial rows are in flight
// (dgamma_tile picks them).
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
  int num_stages = 1;     // backward only: 2 loads the next block of rows while computing this one
  int chunk = 0;          // backward only: > 0 runs backward_chunked_kernel with chunks of this many columns
  bool offsets64 = false;
  int64_t programs = 0;  // the grid
};

// The tile width for a row of n columns (n <= 2^30: tl tiles are far smaller anyway).
inline int next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t(1) << 30)) p <<= 1;
  return int(p);
}

// The launch configuration. Forward packing only applies to narrow rows (BLOCK <= 512)
// and only when the rows divide evenly and it keeps at least two programs per compute
// unit: it exists to amortize per-program overhead, and must never cost the wide
// shapes (seed 004's regression).
//
// The backward is persistent. Its settings come from measuring every nearby
// configuration on the H100 (tl-bench-gpu --sweep; bench/results/h100-2026-11-22/):
// narrow rows take blocks of up to 16 rows (2048 elements) with 2 warps and 4 programs
// per compute unit; wider rows use more warps and fewer programs as they grow (one
// program per compute unit from 8192 columns), and every row that leaves registers to
// spare loads the next block ahead (num_stages 2, rows up to 8192 columns). Rows wider than 16384
// columns go through backward_chunked_kernel (chunks of 8192): it does not spill on
// AMD, and measured 3.9x the one-pass kernel at 1024x32768 on the H100.
inline Config choose(int64_t rows, int64_t cols, int compute_units, bool backward) {
  Config c;
  c.block = next_pow2(cols);
  c.offsets64 = rows * cols >= (int64_t(1) << 31);
  const int64_t cus = std::max(compute_units, 1);
  if (!backward) {
    // Up to 64 elements a thread (NVIDIA's warp of 32; 32 a lane on AMD's wave64): 8
    // warps at 32768 columns held 128 a thread and ran at 2344 GB/s on the H100, 16 warps
    // at 2653-2677 (bench/results/h100-2026-11-23/sweep_fwd.*).
    c.num_warps = c.block <= 256 ? 1 : c.block <= 1024 ? 2 : c.block <= 4096 ? 4 : c.block <= 16384 ? 8 : 16;
    if (c.block <= 512) {
      // At least two programs per compute unit, and r must divide the rows (no row mask).
      // Up to 32 rows and 4096 elements: 32 rows of 128 measured 1977 GB/s at 32768x128
      // on the H100 against 1919-1956 for 16.
      for (int r = std::min(32, 4096 / c.block); r > 1; r /= 2)
        if (rows % r == 0 && rows / r >= 2 * cus) {
          c.rows_per_pid = r;
          break;
        }
      if (c.rows_per_pid * c.block >= 1024) c.num_warps = 4;
    }
    c.programs = rows / c.rows_per_pid;
    return c;
  }
  int per_cu = 4;
  if (c.block <= 512) {
    // Blocks of r rows (the last one masked), still at least two per compute unit.
    for (int r = std::min(16, 2048 / c.block); r > 1; r /= 2)
      if ((rows + r - 1) / r >= 2 * cus) {
        c.rows_per_pid = r;
        break;
      }
    c.num_warps = c.rows_per_pid * c.block >= 1024 ? 2 : 1;
  } else if (c.block <= 2048) {
    c.num_warps = 4;
  } else if (c.block <= 4096) {
    c.num_warps = 8, per_cu = 2;
  } else {
    c.num_warps = 16, per_cu = 1;
  }
  c.num_stages = c.block <= 8192 ? 2 : 1;
  if (c.block > 16384) c.chunk = 8192;
  int64_t blocks = (rows + c.rows_per_pid - 1) / c.rows_per_pid;
  c.programs = std::min<int64_t>(blocks, per_cu * cus);
  return c;
}

// The dgamma reduction's tile: [BLOCK_P, BLOCK_C] = 4096 partials, with column blocks
// narrow enough for ~128 programs (16 to 64 columns), each of a few iterations. A fixed
// [32, 64] made the reduction a latency-bound tail of the backward on the H100 (at 128
// columns: 2 programs of 17 dependent iterations over 528 partial rows); sizing it per
// width took the backward from 883 to 1364 GB/s at 32768x128 and from 2212 to 2548 at
// 16384x2048, where [64, 64] tiles (32 programs) had taken 14.7 us of 91.
struct DgammaTile {
  int rows, cols;
};
inline DgammaTile dgamma_tile(int64_t cols) {
  int c = std::clamp(next_pow2(cols) / 128, 16, 64);
  return {4096 / c, c};
}

// Launches. E is the element type (tl::bf16 or tl::f16); buffers come from device::alloc.
template <class E, class B, class F>
void forward(const Config& c, const B& x, const B& y, const B& w, const F& rstd, int64_t cols, float eps,
             bool zero_centered) {
  forward_kernel<E>()[tl::grid(c.programs)].with({.num_warps = c.num_warps})(
      x, y, w, rstd, int(cols), eps, c.block, c.rows_per_pid, zero_centered, c.offsets64);
}

// The backward's two launches: dx and the per-program partial dgamma rows
// (`dw_partial`, c.programs * cols floats), then their reduction into dw.
template <class E, class B, class F>
void backward_partials(const Config& c, const B& x, const B& dy, const B& w, const F& rstd, const B& dx,
                       const F& dw_partial, int64_t rows, int64_t cols, bool zero_centered) {
  if (c.chunk > 0)
    backward_chunked_kernel<E>()[tl::grid(c.programs)].with({.num_warps = c.num_warps})(
        x, dy, w, rstd, dx, dw_partial, int(rows), int(cols), c.chunk, zero_centered, c.offsets64);
  else
    backward_kernel<E>()[tl::grid(c.programs)].with({.num_warps = c.num_warps})(
        x, dy, w, rstd, dx, dw_partial, int(rows), int(cols), c.block, c.rows_per_pid, zero_centered,
        c.offsets64, c.num_stages);
}

template <class F> void reduce_dgamma(const Config& c, const F& dw_partial, const F& dw, int64_t cols) {
  const DgammaTile t = dgamma_tile(cols);
  dgamma_kernel()[tl::grid(tl::cdiv(cols, t.cols))].with({.num_warps = 4})(dw_partial, dw, int(c.programs), int(cols),
                                                                            t.rows, t.cols);
}

template <class E, class B, class F>
void backward(const Config& c, const B& x, const B& dy, const B& w, const F& rstd, const B& dx, const F& dw_partial,
              const F& dw, int64_t rows, int64_t cols, bool zero_centered) {
  backward_partials<E>(c, x, dy, w, rstd, dx, dw_partial, rows, cols, zero_centered);
  reduce_dgamma(c, dw_partial, dw, cols);
}

// Compiles (without running) the kernel a launch with config c would run, for `target`
// ("gfx942", "sm_90", ...), and returns its metadata (JSON: the resource report and more).
// The pointers only shape the specialization (16-byte aligned, like device buffers).
template <class E>
std::string compile(const Config& c, const std::string& target, int64_t rows, int64_t cols, bool zero_centered,
                    bool backward) {
  using H = typename tl::buffer<E>::host_t;
  auto* p = reinterpret_cast<H*>(uintptr_t(1) << 20);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 21);
  const tl::launch_options o{.num_warps = c.num_warps};
  if (!backward)
    return forward_kernel<E>().compile(target, o, p, p, p, f, int(cols), 1e-6f, c.block, c.rows_per_pid,
                                       zero_centered, c.offsets64);
  if (c.chunk > 0)
    return backward_chunked_kernel<E>().compile(target, o, p, p, p, f, p, f, int(rows), int(cols), c.chunk,
                                                zero_centered, c.offsets64);
  return backward_kernel<E>().compile(target, o, p, p, p, f, p, f, int(rows), int(cols), c.block, c.rows_per_pid,
                                      zero_centered, c.offsets64, c.num_stages);
}

}  // namespace rmsnorm

// The RMSNorm forward's configuration space, offered through tl::autotune: rows per
// program and warps. rmsnorm::choose stays the default (no tuning); forward_tuned is the
// same launch with the configuration the tuner picked for (rows, cols, zero-centered) on
// this device, tuned once and remembered in the cache directory.
#pragma once

#include <string>
#include <vector>

#include "samples/rmsnorm/rmsnorm.hpp"
#include "tl/autotune.hpp"

namespace rmsnorm {

struct ForwardTune {
  BOOST_HANA_DEFINE_STRUCT(ForwardTune, (int, rows_per_pid), (int, num_warps));
};

// Rows per program 1..32, warps 1..16: 30 configurations, of which a shape keeps those its
// rows allow (forward_launch skips the rest without compiling them).
inline std::vector<ForwardTune> forward_space() {
  std::vector<ForwardTune> s;
  for (int r = 1; r <= 32; r *= 2)
    for (int w = 1; w <= 16; w *= 2) s.push_back({r, w});
  return s;
}

// The Config a tuned configuration stands for, at this shape.
inline Config forward_config(const ForwardTune& t, int64_t rows, int64_t cols) {
  Config c;
  c.block = next_pow2(cols);
  c.offsets64 = rows * cols >= (int64_t(1) << 31);
  c.rows_per_pid = t.rows_per_pid;
  c.num_warps = t.num_warps;
  c.programs = rows / t.rows_per_pid;
  return c;
}

// The element type (tl::bf16, tl::f16) of a launch's x: a tl::buffer, or a raw pointer
// (what --report compiles with, where nothing runs).
template <class X> struct element_of { using type = tl::tile<typename X::elem>; };
template <> struct element_of<tl::bfloat16*> { using type = tl::bf16; };
template <> struct element_of<tl::half*> { using type = tl::f16; };

// Launches one configuration, or skips it where the kernel cannot run it: packed rows
// have no row mask (the rows must divide evenly) and are for narrow rows only (seed 004:
// packing must never cost wide rows), a packed program holds at most 8192 elements (the sweep's
// range: beyond it every lane holds a wide row's worth), and a program has at least one
// element a thread.
inline const auto forward_launch = [](tl::tuning& t, const ForwardTune& f, auto& x, auto& y, auto& w, auto& rstd,
                                      int64_t rows, int64_t cols, float eps, bool zero_centered) {
  using E = typename element_of<std::decay_t<decltype(x)>>::type;  // tl::bf16 or tl::f16, as forward() names it
  const Config c = forward_config(f, rows, cols);
  const int lanes = t.target().rfind("gfx9", 0) == 0 ? 64 : 32;
  if (f.rows_per_pid > 1 && c.block > 512) t.skip("rows are packed only up to 512 columns");
  if (rows % f.rows_per_pid) t.skip("rows_per_pid must divide the rows");
  if (f.rows_per_pid > 1 && int64_t(f.rows_per_pid) * c.block > 8192) t.skip("more than 8192 elements a packed program");
  if (int64_t(f.rows_per_pid) * c.block < int64_t(f.num_warps) * lanes) t.skip("fewer elements than threads");
  t.launch(forward_kernel<E>(), tl::grid(c.programs), {.num_warps = c.num_warps}, x, y, w, rstd, int(cols), eps,
           c.block, c.rows_per_pid, zero_centered, c.offsets64);
};

template <class E> auto& forward_tuner() {
  static auto t = tl::autotune(
      std::is_same_v<tl::elem_t<E>, tl::ty::bf16> ? "rmsnorm_fwd_bf16" : "rmsnorm_fwd_f16", forward_space(),
      {.args = {"x", "y", "w", "rstd", "rows", "cols", "eps", "zero_centered"},
       .key = {"rows", "cols", "zero_centered"},
       .warmup = 2,
       .repeats = 10},
      forward_launch);
  return t;
}

// forward() with the tuned configuration (tuning first for a new shape).
template <class E, class B, class F>
void forward_tuned(const B& x, const B& y, const B& w, const F& rstd, int64_t rows, int64_t cols, float eps,
                   bool zero_centered) {
  forward_tuner<E>().on(x.dev())(x, y, w, rstd, rows, cols, eps, zero_centered);
}

}  // namespace rmsnorm

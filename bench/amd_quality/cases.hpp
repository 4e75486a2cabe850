// The suite's cases: each kernel of kernels.hpp at two tile configurations, with its
// benchmark problem, a cheap problem for the CPU check, and a double-precision
// reference. `params` is what the Triton twin (triton_kernels.py) is compiled with, and
// the problem sizes its GPU runner (gpu_bench.py) builds inputs for.
#pragma once

#include <algorithm>
#include <limits>

#include "bench/amd_quality/kernels.hpp"
#include "bench/matmul_tutorial.hpp"
#include "samples/attention/attention.hpp"
#include "samples/attention/reference.hpp"

namespace amd_quality {

namespace detail {

template <class E> constexpr const char* triton_dtype() {
  using H = host_t<E>;
  if constexpr (std::is_same_v<H, tl::bfloat16>) return "bf16";
  else if constexpr (std::is_same_v<H, tl::half>) return "fp16";
  else return "fp32";
}
template <class E> constexpr double elem_bytes() { return double(sizeof(host_t<E>)); }
// Output tolerances: bf16/f16 outputs are one rounding away from the reference.
template <class E> constexpr double rtol() { return sizeof(host_t<E>) == 2 ? 1e-2 : 1e-4; }

inline tl::launch_options warps(int w) { return {.num_warps = w}; }

// The FP8 format each target has in hardware: gfx942's fnuz, the OCP one elsewhere.
inline bool fnuz_target(const std::string& target) { return target.rfind("gfx942", 0) == 0; }

// Row-wise reference helpers.
inline std::vector<double> softmax_ref(const std::vector<double>& x, int64_t rows, int64_t cols) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* v = &x[r * cols];
    double mx = *std::max_element(v, v + cols), s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(v[c] - mx);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(v[c] - mx) / s;
  }
  return y;
}
inline double lse_ref(const double* v, int64_t n) {
  double mx = *std::max_element(v, v + n), s = 0;
  for (int64_t c = 0; c < n; ++c) s += std::exp(v[c] - mx);
  return std::log(s) + mx;
}

}  // namespace detail

using detail::fake;
using detail::warps;

// Row softmax of E: one row of `cols` per program in a tile of BLOCK.
template <class E> Case softmax_case(const char* family, int64_t rows, int64_t cols, int block, int w) {
  Case c{family, fmt::format("{}.B{}_w{}", family, block, w), w};
  c.params = {{"dtype", detail::triton_dtype<E>()}, {"cols", cols}, {"stride", cols}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} {}", rows, cols, detail::triton_dtype<E>());
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(softmax_kernel<E>(), tl::grid(rows), fake<E>(0), fake<E>(1), int(cols),
                                              int(cols), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 8;
    auto x = input<E>(dev, uniform(R * cols, 11, -4, 4));
    auto y = output<E>(dev, R * cols);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(softmax_kernel<E>(), tl::grid(R), x.data(), y.data(), int(cols), int(cols), block);
    };
    auto check = [&] { return close("y", fetch(y), detail::softmax_ref(x.v, R, cols), 1e-6, detail::rtol<E>()); };
    return detail::finish(dev, launch, check, 2 * R * cols * detail::elem_bytes<E>(), timer);
  };
  return c;
}

inline Case layernorm_fwd_case(int64_t rows, int64_t cols, int block, int w) {
  using E = tl::bf16;
  Case c{"layernorm_fwd", fmt::format("layernorm_fwd.B{}_w{}", block, w), w};
  c.params = {{"dtype", "bf16"}, {"cols", cols}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} bf16", rows, cols);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(layernorm_fwd_kernel<E>(), tl::grid(rows), fake<E>(0), fake<E>(1),
                                              fake<E>(2), fake<E>(3), fake<tl::f32>(4), fake<tl::f32>(5), int(cols),
                                              1e-5f, block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 8;
    const float eps = 1e-5f;
    auto x = input<E>(dev, uniform(R * cols, 21, -2, 3));
    auto wt = input<E>(dev, uniform(cols, 22, 0.5, 1.5));
    auto b = input<E>(dev, uniform(cols, 23, -0.5, 0.5));
    auto y = output<E>(dev, R * cols);
    auto mean = output<tl::f32>(dev, R), rstd = output<tl::f32>(dev, R);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(layernorm_fwd_kernel<E>(), tl::grid(R), x.data(), y.data(), wt.data(), b.data(),
                                      mean.data(), rstd.data(), int(cols), eps, block);
    };
    auto check = [&] {
      std::vector<double> wy(R * cols), wm(R), wr(R);
      for (int64_t r = 0; r < R; ++r) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < cols; ++j) mu += x.v[r * cols + j];
        mu /= cols;
        for (int64_t j = 0; j < cols; ++j) var += (x.v[r * cols + j] - mu) * (x.v[r * cols + j] - mu);
        double rs = 1.0 / std::sqrt(var / cols + eps);
        wm[r] = mu, wr[r] = rs;
        for (int64_t j = 0; j < cols; ++j) wy[r * cols + j] = (x.v[r * cols + j] - mu) * rs * wt.v[j] + b.v[j];
      }
      auto e = close("y", fetch(y), wy, 2e-2, 1e-2);
      if (e.empty()) e = close("mean", fetch(mean), wm, 1e-5, 1e-4);
      if (e.empty()) e = close("rstd", fetch(rstd), wr, 1e-5, 1e-4);
      return e;
    };
    return detail::finish(dev, launch, check, (2.0 * R * cols + 2.0 * cols) * 2 + 8.0 * R, timer);
  };
  return c;
}

inline Case layernorm_bwd_case(int64_t rows, int64_t cols, int block, int w) {
  using E = tl::bf16;
  Case c{"layernorm_bwd", fmt::format("layernorm_bwd.B{}_w{}", block, w), w};
  c.params = {{"dtype", "bf16"}, {"cols", cols}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} bf16", rows, cols);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(layernorm_bwd_kernel<E>(), tl::grid(rows), fake<E>(0), fake<E>(1),
                                              fake<E>(2), fake<tl::f32>(3), fake<tl::f32>(4), fake<E>(5), int(cols),
                                              block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 8;
    auto x = input<E>(dev, uniform(R * cols, 31, -2, 2));
    auto dy = input<E>(dev, uniform(R * cols, 32, -1, 1));
    auto wt = input<E>(dev, uniform(cols, 33, 0.5, 1.5));
    auto mean = input<tl::f32>(dev, uniform(R, 34, -0.1, 0.1));
    auto rstd = input<tl::f32>(dev, uniform(R, 35, 0.8, 1.2));
    auto dx = output<E>(dev, R * cols);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(layernorm_bwd_kernel<E>(), tl::grid(R), x.data(), dy.data(), wt.data(),
                                      mean.data(), rstd.data(), dx.data(), int(cols), block);
    };
    auto check = [&] {
      std::vector<double> want(R * cols);
      for (int64_t r = 0; r < R; ++r) {
        double c1 = 0, c2 = 0, rs = rstd.v[r];
        for (int64_t j = 0; j < cols; ++j) {
          double xh = (x.v[r * cols + j] - mean.v[r]) * rs, wdy = wt.v[j] * dy.v[r * cols + j];
          c1 += xh * wdy, c2 += wdy;
        }
        c1 /= cols, c2 /= cols;
        for (int64_t j = 0; j < cols; ++j) {
          double xh = (x.v[r * cols + j] - mean.v[r]) * rs, wdy = wt.v[j] * dy.v[r * cols + j];
          want[r * cols + j] = (wdy - (xh * c1 + c2)) * rs;
        }
      }
      return close("dx", fetch(dx), want, 2e-2, 1e-2);
    };
    return detail::finish(dev, launch, check, (3.0 * R * cols + cols) * 2 + 8.0 * R, timer);
  };
  return c;
}

inline Case cross_entropy_case(int64_t rows, int64_t vocab, int block, int w) {
  using E = tl::bf16;
  Case c{"cross_entropy_fwd", fmt::format("cross_entropy_fwd.B{}_w{}", block, w), w};
  c.params = {{"dtype", "bf16"}, {"vocab", vocab}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} bf16 logits, i64 targets", rows, vocab);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(cross_entropy_kernel<E>(), tl::grid(rows), fake<E>(0),
                                              fake<tl::i64>(1), fake<tl::f32>(2), int(vocab), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 8;
    auto x = input<E>(dev, uniform(R * vocab, 41, -6, 6));
    auto t = input<tl::i64>(dev, integers(R, 42, 0, vocab - 1));
    auto loss = output<tl::f32>(dev, R);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(cross_entropy_kernel<E>(), tl::grid(R), x.data(), t.data(), loss.data(),
                                      int(vocab), block);
    };
    auto check = [&] {
      std::vector<double> want(R);
      for (int64_t r = 0; r < R; ++r) want[r] = detail::lse_ref(&x.v[r * vocab], vocab) - x.v[r * vocab + int64_t(t.v[r])];
      return close("loss", fetch(loss), want, 1e-4, 1e-4);
    };
    return detail::finish(dev, launch, check, R * vocab * 2.0 + 12.0 * R, timer);
  };
  return c;
}

inline Case rotary_case(int64_t tokens, int heads, int dim, int w) {
  Case c{"rotary", fmt::format("rotary.H{}_D{}_w{}", heads, dim, w), w};
  c.params = {{"H", heads}, {"D", dim}, {"grid", {tokens}}};
  c.problem = fmt::format("{} tokens x {} heads x {} bf16, f32 cos/sin", tokens, heads, dim);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(rotary_kernel(), tl::grid(tokens), fake<tl::bf16>(0), fake<tl::f32>(1),
                                              fake<tl::f32>(2), fake<tl::bf16>(3), heads, dim);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t T = bench ? tokens : 4, half = dim / 2, n = T * heads * dim;
    auto x = input<tl::bf16>(dev, uniform(n, 51, -2, 2));
    auto cs = input<tl::f32>(dev, uniform(T * half, 52));
    auto sn = input<tl::f32>(dev, uniform(T * half, 53));
    auto y = output<tl::bf16>(dev, n);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(rotary_kernel(), tl::grid(T), x.data(), cs.data(), sn.data(), y.data(), heads,
                                      dim);
    };
    auto check = [&] {
      std::vector<double> want(n);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t d = 0; d < half; ++d) {
            int64_t o = (t * heads + h) * dim + d;
            double x1 = x.v[o], x2 = x.v[o + half], cv = cs.v[t * half + d], sv = sn.v[t * half + d];
            want[o] = x1 * cv - x2 * sv;
            want[o + half] = x2 * cv + x1 * sv;
          }
      return close("y", fetch(y), want, 2e-2, 1e-2);
    };
    return detail::finish(dev, launch, check, n * 4.0 + T * half * 8.0, timer);
  };
  return c;
}

inline Case swiglu_case(int64_t rows, int64_t n, int block, int w) {
  Case c{"swiglu", fmt::format("swiglu.B{}_w{}", block, w), w};
  c.params = {{"n", n}, {"BLOCK", block}, {"grid", {rows, tl::cdiv(n, block)}}};
  c.problem = fmt::format("{}x(2x{}) bf16", rows, n);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(swiglu_kernel(), tl::grid(rows, tl::cdiv(n, block)), fake<tl::bf16>(0),
                                              fake<tl::bf16>(1), int(n), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 4;
    auto a = input<tl::bf16>(dev, uniform(R * n * 2, 61, -5, 5));
    auto out = output<tl::bf16>(dev, R * n);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(swiglu_kernel(), tl::grid(R, tl::cdiv(n, block)), a.data(), out.data(), int(n),
                                      block);
    };
    auto check = [&] {
      std::vector<double> want(R * n);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < n; ++j) {
          double g = a.v[r * 2 * n + j], u = a.v[r * 2 * n + n + j];
          want[r * n + j] = g * detail::sigmoid(g) * u;
        }
      return close("out", fetch(out), want, 2e-2, 1e-2);
    };
    return detail::finish(dev, launch, check, R * n * 6.0, timer);
  };
  return c;
}

inline Case sum_argmax_case(int64_t rows, int64_t cols, int bm, int bn, int w) {
  Case c{"sum_argmax", fmt::format("sum_argmax.{}x{}_w{}", bm, bn, w), w};
  c.params = {{"rows", rows}, {"cols", cols}, {"BM", bm}, {"BN", bn}, {"grid", {tl::cdiv(rows, bm)}}};
  c.problem = fmt::format("{}x{} f32", rows, cols);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(sum_argmax_kernel(), tl::grid(tl::cdiv(rows, bm)), fake<tl::f32>(0),
                                              fake<tl::f32>(1), fake<tl::i32>(2), int(rows), int(cols), bm, bn);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 3 * bm + 1;  // a partial last tile of rows
    auto x = input<tl::f32>(dev, uniform(R * cols, 71, -1, 1));
    auto sums = output<tl::f32>(dev, R);
    auto idx = output<tl::i32>(dev, R);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(sum_argmax_kernel(), tl::grid(tl::cdiv(R, bm)), x.data(), sums.data(),
                                      idx.data(), int(R), int(cols), bm, bn);
    };
    auto check = [&] {
      std::vector<double> ws(R), wi(R);
      for (int64_t r = 0; r < R; ++r) {
        const double* v = &x.v[r * cols];
        ws[r] = 0;
        for (int64_t j = 0; j < cols; ++j) ws[r] += v[j];
        wi[r] = double(std::max_element(v, v + cols) - v);  // the first maximum
      }
      auto e = close("sums", fetch(sums), ws, 1e-4, 1e-4);
      if (e.empty()) e = close("argmax", fetch(idx), wi, 0, 0);
      return e;
    };
    return detail::finish(dev, launch, check, R * cols * 4.0 + R * 8.0, timer);
  };
  return c;
}

inline Case cumsum_case(int64_t rows, int64_t cols, int block, int w) {
  Case c{"cumsum", fmt::format("cumsum.B{}_w{}", block, w), w};
  c.params = {{"cols", cols}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} f32", rows, cols);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(cumsum_kernel(), tl::grid(rows), fake<tl::f32>(0), fake<tl::f32>(1),
                                              int(cols), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 4;
    auto x = input<tl::f32>(dev, uniform(R * cols, 81));
    auto y = output<tl::f32>(dev, R * cols);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(cumsum_kernel(), tl::grid(R), x.data(), y.data(), int(cols), block);
    };
    auto check = [&] {
      std::vector<double> want(R * cols);
      for (int64_t r = 0; r < R; ++r) {
        double s = 0;
        for (int64_t j = 0; j < cols; ++j) want[r * cols + j] = s += x.v[r * cols + j];
      }
      return close("y", fetch(y), want, 1e-3, 1e-4);  // f32 sums of up to 4096 terms
    };
    return detail::finish(dev, launch, check, R * cols * 8.0, timer);
  };
  return c;
}

inline Case transpose_case(int64_t M, int64_t N, int bm, int bn, int w) {
  Case c{"transpose", fmt::format("transpose.{}x{}_w{}", bm, bn, w), w};
  c.params = {{"M", M}, {"N", N}, {"BM", bm}, {"BN", bn}, {"grid", {tl::cdiv(M, bm), tl::cdiv(N, bn)}}};
  c.problem = fmt::format("{}x{} f32", M, N);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(transpose_kernel(), tl::grid(tl::cdiv(M, bm), tl::cdiv(N, bn)),
                                              fake<tl::f32>(0), fake<tl::f32>(1), int(M), int(N), bm, bn);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t m = bench ? M : 2 * bm + 3, n = bench ? N : 2 * bn + 5;  // partial tiles in the check
    auto x = input<tl::f32>(dev, uniform(m * n, 91));
    auto y = output<tl::f32>(dev, m * n);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(transpose_kernel(), tl::grid(tl::cdiv(m, bm), tl::cdiv(n, bn)), x.data(),
                                      y.data(), int(m), int(n), bm, bn);
    };
    auto check = [&] {
      std::vector<double> want(m * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) want[j * m + i] = x.v[i * n + j];
      return close("y", fetch(y), want, 0, 0);
    };
    return detail::finish(dev, launch, check, m * n * 8.0, timer);
  };
  return c;
}

inline Case embedding_case(int64_t tokens, int64_t vocab, int64_t D, int bt, int bd, int w) {
  Case c{"embedding", fmt::format("embedding.{}x{}_w{}", bt, bd, w), w};
  c.params = {{"D", D}, {"BT", bt}, {"BD", bd}, {"vocab", vocab}, {"grid", {tokens / bt}}};
  c.problem = fmt::format("{} tokens of a {}x{} bf16 table", tokens, vocab, D);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(embedding_kernel(), tl::grid(tokens / bt), fake<tl::i32>(0),
                                              fake<tl::bf16>(1), fake<tl::bf16>(2), int(D), bt, bd);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t T = bench ? tokens : 4 * bt, V = bench ? vocab : 97;
    auto ids = input<tl::i32>(dev, integers(T, 101, 0, V - 1));
    auto table = input<tl::bf16>(dev, uniform(V * D, 102));
    auto out = output<tl::bf16>(dev, T * D);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(embedding_kernel(), tl::grid(T / bt), ids.data(), table.data(), out.data(),
                                      int(D), bt, bd);
    };
    auto check = [&] {
      std::vector<double> want(T * D);
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) want[t * D + d] = table.v[int64_t(ids.v[t]) * D + d];
      return close("out", fetch(out), want, 0, 0);
    };
    return detail::finish(dev, launch, check, T * 4.0 + T * D * 4.0, timer);
  };
  return c;
}

inline Case histogram_case(int64_t n, int bins, int block, int w) {
  Case c{"histogram", fmt::format("histogram.B{}_w{}", block, w), w};
  c.params = {{"n", n}, {"bins", bins}, {"BLOCK", block}, {"grid", {tl::cdiv(n, block)}}};
  c.problem = fmt::format("{} i32 values into {} bins", n, bins);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(histogram_kernel(), tl::grid(tl::cdiv(n, block)), fake<tl::i32>(0),
                                              fake<tl::i32>(1), int(n), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t N = bench ? n : 3 * block + 7;
    auto x = input<tl::i32>(dev, integers(N, 111, 0, bins - 1));
    auto hist = input<tl::i32>(dev, std::vector<double>(bins, 0.0));
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(histogram_kernel(), tl::grid(tl::cdiv(N, block)), x.data(), hist.data(), int(N),
                                      block);
    };
    auto check = [&] {
      std::vector<double> want(bins, 0.0);
      for (double v : x.v) want[int64_t(v)] += 1;
      return close("hist", fetch(hist.buf), want, 0, 0);
    };
    // Timed launches keep adding to the histogram; it is checked after the first.
    return detail::finish(dev, launch, check, N * 4.0, timer);
  };
  return c;
}

// FP8 (e4m3: gfx942's fnuz, the OCP format elsewhere) times a per-row scale, to bf16.
inline Case fp8_dequant_case(int64_t rows, int64_t cols, int block, int w) {
  Case c{"fp8_dequant", fmt::format("fp8_dequant.B{}_w{}", block, w), w};
  c.params = {{"cols", cols}, {"BLOCK", block}, {"grid", {rows, tl::cdiv(cols, block)}}};
  c.problem = fmt::format("{}x{} e4m3 (fnuz on gfx942), f32 row scales, bf16 out", rows, cols);
  c.compile = [=](const std::string& target) {
    detail::Compiler k{target, warps(w)};
    tl::grid g(rows, tl::cdiv(cols, block));
    if (detail::fnuz_target(target))
      return k(fp8_dequant_kernel<tl::f8e4m3fnuz>(), g, fake<tl::f8e4m3fnuz>(0), fake<tl::f32>(1), fake<tl::bf16>(2),
               int(cols), block);
    return k(fp8_dequant_kernel<tl::f8e4m3fn>(), g, fake<tl::f8e4m3fn>(0), fake<tl::f32>(1), fake<tl::bf16>(2),
             int(cols), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 4;
    auto go = [&](auto* f8) {
      using F8 = std::remove_pointer_t<decltype(f8)>;
      auto q = input<F8>(dev, uniform(R * cols, 121, -200, 200));
      auto s = input<tl::f32>(dev, uniform(R, 122, 0.001, 0.01));
      auto out = output<tl::bf16>(dev, R * cols);
      auto launch = [&] {
        detail::Launcher{dev, warps(w)}(fp8_dequant_kernel<F8>(), tl::grid(R, tl::cdiv(cols, block)), q.data(),
                                        s.data(), out.data(), int(cols), block);
      };
      auto check = [&] {
        std::vector<double> want(R * cols);
        for (int64_t r = 0; r < R; ++r)
          for (int64_t j = 0; j < cols; ++j) want[r * cols + j] = q.v[r * cols + j] * s.v[r];
        return close("out", fetch(out), want, 1e-6, 1e-2);
      };
      return detail::finish(dev, launch, check, R * cols * 3.0 + R * 4.0, timer);
    };
    if (detail::fnuz_target(dev.target())) return go(static_cast<tl::f8e4m3fnuz*>(nullptr));
    return go(static_cast<tl::f8e4m3fn*>(nullptr));
  };
  return c;
}

inline Case lse_stream_case(int64_t rows, int64_t cols, int block, int w) {
  Case c{"lse_stream", fmt::format("lse_stream.B{}_w{}", block, w), w};
  c.params = {{"cols", cols}, {"BLOCK", block}, {"grid", {rows}}};
  c.problem = fmt::format("{}x{} f32", rows, cols);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(lse_stream_kernel(), tl::grid(rows), fake<tl::f32>(0), fake<tl::f32>(1),
                                              int(cols), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t R = bench ? rows : 4, C = bench ? cols : 2 * block + 37;  // a ragged last block
    auto x = input<tl::f32>(dev, uniform(R * C, 131, -20, 20));
    auto out = output<tl::f32>(dev, R);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(lse_stream_kernel(), tl::grid(R), x.data(), out.data(), int(C), block);
    };
    auto check = [&] {
      std::vector<double> want(R);
      for (int64_t r = 0; r < R; ++r) want[r] = detail::lse_ref(&x.v[r * C], C);
      return close("lse", fetch(out), want, 1e-4, 1e-5);
    };
    return detail::finish(dev, launch, check, R * C * 4.0 + R * 4.0, timer);
  };
  return c;
}

inline Case segment_sum_case(int64_t segments, int64_t max_len, int block, int w) {
  Case c{"segment_sum", fmt::format("segment_sum.B{}_w{}", block, w), w};
  c.params = {{"BLOCK", block}, {"max_len", max_len}, {"grid", {segments}}};
  c.problem = fmt::format("{} f32 segments of 0..{} values", segments, max_len);
  c.compile = [=](const std::string& target) {
    return detail::Compiler{target, warps(w)}(segment_sum_kernel(), tl::grid(segments), fake<tl::f32>(0),
                                              fake<tl::i32>(1), fake<tl::f32>(2), block);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    int64_t S = bench ? segments : 9;
    auto len = integers(S, 141, 0, bench ? max_len : 3 * block);
    std::vector<double> offs(S + 1, 0.0);
    for (int64_t s = 0; s < S; ++s) offs[s + 1] = offs[s] + len[s];
    int64_t total = int64_t(offs[S]);
    auto v = input<tl::f32>(dev, uniform(std::max<int64_t>(total, 1), 142));
    auto o = input<tl::i32>(dev, offs);
    auto out = output<tl::f32>(dev, S);
    auto launch = [&] {
      detail::Launcher{dev, warps(w)}(segment_sum_kernel(), tl::grid(S), v.data(), o.data(), out.data(), block);
    };
    auto check = [&] {
      std::vector<double> want(S, 0.0);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t i = int64_t(offs[s]); i < int64_t(offs[s + 1]); ++i) want[s] += v.v[i];
      return close("out", fetch(out), want, 1e-4, 1e-5);
    };
    return detail::finish(dev, launch, check, total * 4.0 + S * 8.0, timer);
  };
  return c;
}

// samples/attention's forward (flash attention, Triton's tutorial 06 as users write it) at
// the tutorial's AMD configuration: 128x64 blocks, D 128, 2 stages, 4 or 8 waves, bf16, on
// B*H = 32, S = 4096 (non-causal); and, where barriers and scratch cost most on gfx942
// (issue 39), the causal forward at 32x32 blocks, D 64, 3 stages. The check runs a small
// ragged causal problem against the sample's double reference (its per-element bounds).
inline Case attention_fwd_case(int w, int BM = 128, int BN = 64, int D = 128, int ST = 2, bool causal = false) {
  using E = tl::ty::bf16;
  const int64_t BH = 32, S = 4096;
  const std::string family = causal ? "attention_fwd_causal" : "attention_fwd";
  Case c{family,
         causal ? fmt::format("{}.{}x{}_D{}_s{}_w{}", family, BM, BN, D, ST, w)
                : fmt::format("{}.{}x{}_D{}_w{}", family, BM, BN, D, w),
         w};
  c.params = {{"BLOCK_M", BM}, {"BLOCK_N", BN}, {"D", D}, {"STAGES", ST}, {"CAUSAL", int(causal)},
              {"S", S},        {"G", 1},        {"grid", {S / BM, BH}}};
  c.problem = fmt::format("B*H={} S={} D={}{} bf16", BH, S, D, causal ? " causal" : "");
  const attention::Config cfg{BM, BN, w, ST, 0, 0};
  c.compile = [=](const std::string& target) {
    return attention::fwd_kernel<E>().compile(target, attention::options_of(cfg), fake<tl::bf16>(0), fake<tl::bf16>(1),
                                              fake<tl::bf16>(2), fake<tl::bf16>(3), fake<tl::f32>(4), int(S), int(S),
                                              1, float(1 / std::sqrt(double(D))), BM, BN, D, int(causal), ST);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    attention::Problem p;
    p.B = bench ? BH : 1, p.H = 1, p.Hkv = 1, p.S_q = bench ? S : 150, p.S_k = bench ? S : 150, p.D = D;
    p.causal = causal || !bench;
    auto in = attention::random_inputs<tl::bfloat16>(p, 151);
    auto up = [&](const std::vector<tl::bfloat16>& h) {
      auto b = dev.alloc<E>(h.size());
      b.upload(h);
      return b;
    };
    auto q = up(in.q), k = up(in.k), v = up(in.v);
    auto o = dev.alloc<E>(size_t(p.q_elems()));
    auto lse = dev.alloc<tl::ty::f32>(size_t(p.rows()));
    auto launch = [&] { attention::forward<E>(cfg, p, q, k, v, o, lse); };
    auto check = [&]() -> std::string {
      if (bench) return "";  // the large problem is timed; the small one is checked
      auto want = attention::reference(p, in, false);
      auto e = attention::compare(o.download(), want.o, want.o_bound);
      if (!e.ok()) return fmt::format("O: {} wrong, {} NaN of {}, worst {} of the bound", e.bad, e.nan, e.checked, e.worst);
      e = attention::compare(lse.download(), want.lse, want.lse_bound);
      return e.ok() ? "" : fmt::format("LSE: {} wrong of {}", e.bad + e.nan, e.checked);
    };
    return detail::finish(dev, launch, check, 4.0 * double(p.q_elems()) * 2, timer);
  };
  return c;
}

// samples/attention's backward kernels (dK/dV, dQ) at Triton's tutorial-06 backward tiles:
// dK/dV 32 query rows an iteration over 128 keys a program, dQ 128 rows over 32 keys, 4
// waves, bf16, num_stages 1 (the tutorial's HIP configurations pipeline nothing; tl's
// loads are then still copied ahead in registers) on B*H = 32, S = 4096, causal as the
// tutorial's backward is. The Triton twins are the same algorithm statement for statement;
// bench/amd_quality/attention_bwd.py puts Triton's tutorial kernel itself beside them.
// The check runs a small ragged causal GQA problem (the forward first, for LSE) against the
// sample's double reference.
inline Case attention_bwd_case(bool dkdv, int D, int stages) {
  using E = tl::ty::bf16;
  const int BM = dkdv ? 32 : 128, BN = dkdv ? 128 : 32, w = 4;
  const int64_t BH = 32, S = 4096;
  const char* family = dkdv ? "attention_bwd_dkdv" : "attention_bwd_dq";
  Case c{family, fmt::format("{}.{}x{}_D{}_s{}_w{}", family, BM, BN, D, stages, w), w};
  const int64_t programs = dkdv ? S / BN : S / BM;
  c.params = {{"BLOCK_M", BM}, {"BLOCK_N", BN}, {"D", D},    {"CAUSAL", 1},
              {"STAGES", stages}, {"S", S},     {"G", 1},    {"grid", {programs, BH}}};
  c.problem = fmt::format("B*H={} S={} D={} causal bf16", BH, S, D);
  const attention::Config cfg{BM, BN, w, stages, 0, 0};
  const float scale = float(1 / std::sqrt(double(D)));
  c.compile = [=](const std::string& target) {
    auto o = attention::options_of(cfg);
    if (dkdv)
      return attention::bwd_dkdv_kernel<E>().compile(target, o, fake<tl::bf16>(0), fake<tl::bf16>(1), fake<tl::bf16>(2),
                                                     fake<tl::bf16>(3), fake<tl::f32>(4),
                                                     fake<tl::bf16>(6), fake<tl::bf16>(7), int(S), int(S), 1, scale, BM,
                                                     BN, D, 1, stages);
    return attention::bwd_dq_kernel<E>().compile(target, o, fake<tl::bf16>(0), fake<tl::bf16>(1), fake<tl::bf16>(2),
                                                 fake<tl::bf16>(3), fake<tl::f32>(4),
                                                 fake<tl::bf16>(6), int(S), int(S), 1, scale, BM, BN, D, 1, stages);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    attention::Problem p;
    // Small: 2 query heads a key head, ragged S_q < S_k (the bottom-right diagonal).
    p.B = bench ? BH : 1, p.H = bench ? 1 : 2, p.Hkv = 1, p.S_q = bench ? S : 100, p.S_k = bench ? S : 150, p.D = D;
    p.causal = true;
    auto in = attention::random_inputs<tl::bfloat16>(p, 157);
    auto up = [&](const std::vector<tl::bfloat16>& h) {
      auto b = dev.alloc<E>(h.size());
      b.upload(h);
      return b;
    };
    auto q = up(in.q), k = up(in.k), v = up(in.v), d_o = up(in.d_o);
    auto o = dev.alloc<E>(size_t(p.q_elems())), dq = dev.alloc<E>(size_t(p.q_elems()));
    auto dk = dev.alloc<E>(size_t(p.kv_elems())), dv = dev.alloc<E>(size_t(p.kv_elems()));
    auto lse = dev.alloc<tl::ty::f32>(size_t(p.rows())), delta = dev.alloc<tl::ty::f32>(size_t(p.scratch_elems()));
    // The forward and the preprocess once, at configurations of their own; then the kernel.
    attention::forward<E>(attention::Config{64, 64, 4, 1, 0, 0}, p, q, k, v, o, lse);
    attention::backward<E>(cfg, cfg, p, q, k, v, o, d_o, lse, delta, dq, dk, dv);
    const int Sq = int(p.S_q), Sk = int(p.S_k), G = int(p.G());
    const float sc = float(p.scale());
    auto launch = [&] {
      if (dkdv)
        attention::bwd_dkdv_kernel<E>()[attention::dkdv_grid(cfg, p)].on(dev).with(attention::options_of(cfg))(
            q, k, v, d_o, delta, dk, dv, Sq, Sk, G, sc, BM, BN, D, 1, stages);
      else
        attention::bwd_dq_kernel<E>()[attention::dq_grid(cfg, p)].on(dev).with(attention::options_of(cfg))(
            q, k, v, d_o, delta, dq, Sq, Sk, G, sc, BM, BN, D, 1, stages);
    };
    auto check = [&]() -> std::string {
      if (bench) return "";  // the large problem is timed; the small one is checked
      auto want = attention::reference(p, in, true);
      auto one = [&](const char* what, const tl::buffer<E>& got, const std::vector<double>& w,
                     const std::vector<double>& b) -> std::string {
        auto e = attention::compare(got.download(), w, b);
        return e.ok() ? "" : fmt::format("{}: {} wrong, {} NaN of {}, worst {} of the bound", what, e.bad, e.nan,
                                         e.checked, e.worst);
      };
      if (!dkdv) return one("dQ", dq, want.dq, want.dq_bound);
      auto e = one("dK", dk, want.dk, want.dk_bound);
      return e.empty() ? one("dV", dv, want.dv, want.dv_bound) : e;
    };
    // Poisoned before the kernel runs again: the check reads what this launch wrote.
    std::vector<tl::bfloat16> nan_q(size_t(p.q_elems()), tl::to_bf16(std::nan(""))),
        nan_kv(size_t(p.kv_elems()), tl::to_bf16(std::nan("")));
    if (dkdv) dk.upload(nan_kv), dv.upload(nan_kv);
    else dq.upload(nan_q);
    // dK/dV reads Q, dO, LSE, Delta once a key block and writes dK, dV; dQ reads K, V once
    // a row block: the bytes of one pass over each, as the forward's case counts.
    const double bytes = 2.0 * (2 * p.q_elems() + 4 * p.kv_elems()) + 8.0 * double(p.rows());
    return detail::finish(dev, launch, check, bytes, timer);
  };
  return c;
}

// Triton's tutorial 03 matmul (bench/matmul_tutorial.hpp, transcribed statement for
// statement) at the configurations where gfx942's barriers, scratch and registers cost most
// (issue 39): 64x64x32 with 3 stages and 4 waves, and 256x256x64 with 8 waves (the 64 KiB of
// one stage of its tiles is all of gfx942's LDS: 1 stage); bf16, 4096^3. The check runs a
// ragged problem against a double-precision product.
inline Case matmul_tutorial_case(int BM, int BN, int BK, int ST, int w) {
  using E = tl::ty::bf16;
  const int GROUP = 8;
  const int64_t M = 4096, N = 4096, K = 4096;
  Case c{"matmul_tutorial", fmt::format("matmul_tutorial.{}x{}x{}_s{}_w{}", BM, BN, BK, ST, w), w};
  c.params = {{"BM", BM}, {"BN", BN},       {"BK", BK},  {"GROUP", GROUP}, {"STAGES", ST}, {"M", M}, {"N", N},
              {"K", K},   {"grid", {((M + BM - 1) / BM) * ((N + BN - 1) / BN)}}};
  c.problem = fmt::format("{}x{}x{} bf16", M, N, K);
  const matmul_tutorial::Config cfg{BM, BN, BK, GROUP, ST, w};
  c.compile = [=](const std::string& target) {
    return matmul_tutorial::kernel<E>().compile(target, matmul_tutorial::options_of(cfg), fake<tl::bf16>(0),
                                                fake<tl::bf16>(1), fake<tl::bf16>(2), int(M), int(N), int(K), int(K),
                                                1, int(N), 1, int(N), 1, BM, BN, BK, GROUP, ST);
  };
  c.run = [=](tl::device dev, bool bench, const Timer* timer) {
    const int64_t m = bench ? M : 100, n = bench ? N : 90, k = bench ? K : 70;
    std::mt19937 rng(171);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<tl::bfloat16> a(size_t(m * k)), b(size_t(k * n));
    for (auto& x : a) x = tl::to_bf16(u(rng));
    for (auto& x : b) x = tl::to_bf16(u(rng));
    auto da = dev.alloc<E>(a.size()), db = dev.alloc<E>(b.size()), dc = dev.alloc<E>(size_t(m * n));
    da.upload(a), db.upload(b);
    dc.upload(std::vector<tl::bfloat16>(size_t(m * n), tl::to_bf16(std::nan(""))));  // poisoned
    auto launch = [&] {
      matmul_tutorial::kernel<E>()[matmul_tutorial::grid_of(cfg, m, n)].on(dev).with(matmul_tutorial::options_of(cfg))(
          da, db, dc, int(m), int(n), int(k), int(k), 1, int(n), 1, int(n), 1, BM, BN, BK, GROUP, ST);
    };
    auto check = [&]() -> std::string {
      if (bench) return "";
      auto got = dc.download();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, mag = 0;
          for (int64_t l = 0; l < k; ++l) {
            const double p = double(tl::to_float(a[size_t(i * k + l)])) * double(tl::to_float(b[size_t(l * n + j)]));
            want += p, mag += std::abs(p);
          }
          const double g = double(tl::to_float(got[size_t(i * n + j)]));
          // f32 accumulation of exact products, one bf16 rounding of the result
          if (!(std::abs(g - want) <= std::abs(want) * 0x1p-8 + mag * 1e-6))
            return fmt::format("C[{}, {}] = {}, want {}", i, j, g, want);
        }
      return "";
    };
    return detail::finish(dev, launch, check, 2.0 * double(m * k + k * n + m * n), timer);
  };
  return c;
}

// The suite: 19 kernels, two tile configurations each (the backward's two: D 64 and 128).
inline std::vector<Case> cases() {
  return {
      softmax_case<tl::bf16>("softmax_short", 65536, 128, 128, 1),
      softmax_case<tl::bf16>("softmax_short", 32768, 512, 512, 2),
      softmax_case<tl::f32>("softmax_long", 8192, 4096, 4096, 4),
      softmax_case<tl::f32>("softmax_long", 4096, 8192, 8192, 8),
      softmax_case<tl::f32>("softmax_ragged", 16384, 1000, 1024, 4),
      softmax_case<tl::f32>("softmax_ragged", 8192, 3000, 4096, 8),
      layernorm_fwd_case(16384, 1024, 1024, 4),
      layernorm_fwd_case(4096, 8192, 8192, 8),
      layernorm_bwd_case(16384, 1024, 1024, 4),
      layernorm_bwd_case(4096, 4096, 4096, 8),
      cross_entropy_case(16384, 2048, 2048, 4),
      cross_entropy_case(4096, 8000, 8192, 8),
      rotary_case(8192, 32, 128, 4),
      rotary_case(32768, 8, 64, 1),
      swiglu_case(4096, 11008, 1024, 4),
      swiglu_case(4096, 11008, 4096, 8),
      sum_argmax_case(65536, 256, 16, 256, 4),
      sum_argmax_case(16384, 1000, 4, 1024, 4),
      cumsum_case(16384, 1024, 1024, 4),
      cumsum_case(4096, 4096, 4096, 8),
      transpose_case(4096, 4096, 32, 32, 4),
      transpose_case(4096, 4096, 64, 64, 4),
      embedding_case(16384, 32000, 1024, 4, 1024, 4),
      embedding_case(65536, 32000, 256, 16, 256, 4),
      histogram_case(int64_t(1) << 24, 256, 1024, 4),
      histogram_case(int64_t(1) << 24, 256, 4096, 8),
      fp8_dequant_case(4096, 8192, 1024, 4),
      fp8_dequant_case(4096, 8192, 4096, 8),
      lse_stream_case(4096, 32768, 1024, 4),
      lse_stream_case(4096, 32768, 4096, 8),
      segment_sum_case(16384, 4096, 256, 1),
      segment_sum_case(16384, 4096, 1024, 4),
      attention_fwd_case(4),
      attention_fwd_case(8),
      // gfx942's costliest configurations for barriers and scratch (issue 39)
      attention_fwd_case(4, 32, 32, 64, 3, /*causal=*/true),
      matmul_tutorial_case(64, 64, 32, 3, 4),
      matmul_tutorial_case(256, 256, 64, 1, 8),
      attention_bwd_case(true, 64, 1),
      attention_bwd_case(true, 128, 1),
      attention_bwd_case(false, 64, 1),
      attention_bwd_case(false, 128, 1),
  };
}

}  // namespace amd_quality

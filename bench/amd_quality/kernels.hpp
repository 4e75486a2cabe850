// The AMD code-quality suite: kernels of the kinds users write, each in tl here and as
// its Triton twin in triton_kernels.py (same algorithm, statement for statement, and the
// same launch configuration: the `params` of each case are what the twin is given).
//
// Three programs share this header and cases.hpp (the configurations and references):
//   - tl-amd-quality (driver.cpp): compiles every case for gfx942/gfx950 and prints the
//     code object's resources and instruction counts (run.sh puts Triton beside it);
//   - tests/codegen/amd_quality_test.cpp: every case checked on the CPU against a
//     double-precision reference, and its gfx942 and gfx950 VGPRs against the recorded ceiling
//     (bench/amd_quality/vgpr_ceiling.json);
//   - the H100 runner (driver.cpp --bench): every case timed on the GPU, after the
//     same check at its benchmark size.
//
// A case is one kernel at one tile configuration. Its `run` builds inputs, launches,
// compares with the reference, and (given a timer) times the launch; the problem it
// runs at is the case's benchmark problem or a cheap one for the CPU check.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tl/tl.hpp"

namespace amd_quality {

template <class E> using host_t = typename tl::buffer<E>::host_t;

// ---------------------------------------------------------------------------------------
// Host data: inputs rounded to the element type (the reference sees what the kernel
// sees), outputs read back as doubles.

template <class T> struct is_fp8 : std::false_type {};
template <tl::DType D> struct is_fp8<tl::float8<D>> : std::true_type {};

template <tl::DType D> tl::float8<D> fp8_of(double v, tl::float8<D>*) { return tl::fp8<D>(v); }
template <class H> H from_double(double v) {
  if constexpr (std::is_same_v<H, float>) return float(v);
  else if constexpr (std::is_same_v<H, tl::bfloat16>) return tl::to_bf16(v);
  else if constexpr (std::is_same_v<H, tl::half>) return tl::to_f16(v);
  else if constexpr (is_fp8<H>::value) return fp8_of(v, static_cast<H*>(nullptr));
  else return H(v);
}
template <class H> double to_double(const H& h) {
  if constexpr (std::is_same_v<H, float>) return h;
  else if constexpr (std::is_same_v<H, tl::bfloat16> || std::is_same_v<H, tl::half>) return tl::to_float(h);
  else if constexpr (is_fp8<H>::value) return tl::to_double(h);
  else return double(h);
}

// A device buffer with the values it holds (after rounding to E), for the reference.
template <class E> struct Input {
  tl::buffer<tl::elem_t<E>> buf;
  std::vector<double> v;
  host_t<E>* data() const { return buf.data(); }
};
template <class E> Input<E> input(tl::device dev, std::vector<double> v) {
  std::vector<host_t<E>> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = from_double<host_t<E>>(v[i]);
    v[i] = to_double(h[i]);
  }
  Input<E> in{dev.alloc<E>(v.size()), std::move(v)};
  in.buf.upload(h);
  return in;
}
// An output buffer filled with a value no kernel writes (so unwritten elements show).
template <class E> tl::buffer<tl::elem_t<E>> output(tl::device dev, size_t n, double junk = -12345.0) {
  auto b = dev.alloc<E>(n);
  b.upload(std::vector<host_t<E>>(n, from_double<host_t<E>>(junk)));
  return b;
}
template <class E> std::vector<double> fetch(const tl::buffer<E>& b) {
  auto h = b.download();
  std::vector<double> out(h.size());
  for (size_t i = 0; i < h.size(); ++i) out[i] = to_double(h[i]);
  return out;
}

inline std::vector<double> uniform(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
inline std::vector<double> integers(size_t n, uint64_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = double(d(rng));
  return v;
}

// "" when every element is within atol + rtol * |want|, else the first that is not.
inline std::string close(const char* what, const std::vector<double>& got, const std::vector<double>& want,
                         double atol, double rtol) {
  if (got.size() != want.size()) return fmt::format("{}: {} elements, expected {}", what, got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return fmt::format("{}[{}] = {}, expected {}", what, i, got[i], want[i]);
  return "";
}

// ---------------------------------------------------------------------------------------
// Cases.

// Milliseconds per call of the launch it is given (the H100 runner's device events).
using Timer = std::function<double(const std::function<void()>&)>;

struct Result {
  std::string error;  // "" when the output matched the reference
  double ms = 0;      // per launch, when timed
  double bytes = 0;   // bytes the kernel must read and write (for GB/s)
};

struct Case {
  std::string family;   // the Triton twin's name in triton_kernels.py
  std::string name;     // family.config, unique
  int num_warps = 4;
  nlohmann::json params;  // the twin's configuration: run-time integers and constexprs
  std::string problem;    // the benchmark problem, in words
  // Compiles for `target` at the benchmark problem (integers specialize as at launch)
  // and returns the metadata JSON (tl::kernel::compile's).
  std::function<std::string(const std::string& target)> compile;
  // Runs on `dev`: the cheap problem (check) or the benchmark problem, timed when a
  // timer is given.
  std::function<Result(tl::device dev, bool bench, const Timer* timer)> run;
};

namespace detail {

// A fake, 16-byte-aligned device pointer: compile-only calls never dereference it.
template <class E> host_t<E>* fake(int i) { return reinterpret_cast<host_t<E>*>(uintptr_t(i + 1) << 20); }

// Compiles or launches a kernel with one argument list.
struct Compiler {
  std::string target;
  tl::launch_options opts;
  template <class K, class... A> std::string operator()(K& k, tl::grid, A&&... args) {
    return k.compile(target, opts, std::forward<A>(args)...);
  }
};
struct Launcher {
  tl::device dev;
  tl::launch_options opts;
  template <class K, class... A> void operator()(K& k, tl::grid g, A&&... args) {
    k[g].on(dev).with(opts)(std::forward<A>(args)...);
  }
};

inline Result finish(tl::device dev, const std::function<void()>& launch, const std::function<std::string()>& check,
                     double bytes, const Timer* timer) {
  Result r;
  r.bytes = bytes;
  launch();
  dev.synchronize();
  r.error = check();
  if (r.error.empty() && timer) r.ms = (*timer)(launch);
  return r;
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace detail

// ---------------------------------------------------------------------------------------
// The kernels. Each is written the way a Triton user writes it; triton_kernels.py holds
// the twin of the same name.

// Row softmax, one row per program (Triton's tutorial 02).
template <class E> auto& softmax_kernel() {
  static auto k = tl::kernel("softmax", [](tl::ptr<E> x, tl::ptr<E> y, tl::i32 cols, tl::i32 stride, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * stride + c, m, -INFINITY).template to<tl::f32>();
    // Triton's tl.exp is exp2 of x log2(e) on the hardware's instruction: tl::fast_expf
    // (tl::exp is the precise one), here and in every kernel of this suite.
    auto e = tl::fast_expf(v - tl::max(v, 0));
    tl::store(y + row * stride + c, (e / tl::sum(e, 0)).template to<E>(), m);
  });
  return k;
}

// LayerNorm forward: y = (x - mean) * rstd * w + b, mean and rstd stored per row.
template <class E> auto& layernorm_fwd_kernel() {
  static auto k = tl::kernel("layernorm_fwd", [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<E> w, tl::ptr<E> b,
                                                 tl::ptr<tl::f32> mean, tl::ptr<tl::f32> rstd, tl::i32 cols,
                                                 tl::f32 eps, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto n = cols.to<tl::f32>();
    auto v = tl::load(x + row * cols + c, m, 0.0f).template to<tl::f32>();
    auto mu = tl::sum(v, 0) / n;
    auto d = tl::where(m, v - mu, 0.0f);
    auto r = tl::rsqrt(tl::sum(d * d, 0) / n + eps);
    auto g = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    auto bb = tl::load(b + c, m, 0.0f).template to<tl::f32>();
    tl::store(y + row * cols + c, (d * r * g + bb).template to<E>(), m);
    tl::store(mean + row, mu);
    tl::store(rstd + row, r);
  });
  return k;
}

// LayerNorm backward, dx (Triton's tutorial 05 without the dw/db partial sums):
//   xhat = (x - mean) * rstd, wdy = w * dy, dx = (wdy - (xhat * c1 + c2)) * rstd,
//   c1 = sum(xhat * wdy) / n, c2 = sum(wdy) / n.
template <class E> auto& layernorm_bwd_kernel() {
  static auto k = tl::kernel("layernorm_bwd", [](tl::ptr<E> x, tl::ptr<E> dy, tl::ptr<E> w, tl::ptr<tl::f32> mean,
                                                 tl::ptr<tl::f32> rstd, tl::ptr<E> dx, tl::i32 cols, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto n = cols.to<tl::f32>();
    auto v = tl::load(x + row * cols + c, m, 0.0f).template to<tl::f32>();
    auto g = tl::load(dy + row * cols + c, m, 0.0f).template to<tl::f32>();
    auto ww = tl::load(w + c, m, 0.0f).template to<tl::f32>();
    auto mu = tl::load(mean + row);
    auto r = tl::load(rstd + row);
    auto xhat = tl::where(m, (v - mu) * r, 0.0f);
    auto wdy = ww * g;
    auto c1 = tl::sum(xhat * wdy, 0) / n;
    auto c2 = tl::sum(wdy, 0) / n;
    tl::store(dx + row * cols + c, ((wdy - (xhat * c1 + c2)) * r).template to<E>(), m);
  });
  return k;
}

// Cross-entropy loss forward, one row of logits per program: logsumexp - logit[target].
template <class E> auto& cross_entropy_kernel() {
  static auto k = tl::kernel("cross_entropy_fwd", [](tl::ptr<E> logits, tl::ptr<tl::i64> target,
                                                     tl::ptr<tl::f32> loss, tl::i32 vocab, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < vocab;
    auto row = tl::program_id(0);
    auto base = logits + row * vocab;
    auto v = tl::load(base + c, m, -INFINITY).template to<tl::f32>();
    auto mx = tl::max(v, 0);
    auto lse = tl::log(tl::sum(tl::fast_expf(v - mx), 0)) + mx;
    auto t = tl::load(target + row);
    auto xt = tl::load(base + t).template to<tl::f32>();
    tl::store(loss + row, lse - xt);
  });
  return k;
}

// Rotary embedding (neox halves), one token per program, all H heads as one [H, D/2]
// tile: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin.
inline auto& rotary_kernel() {
  static auto k = tl::kernel("rotary", [](tl::ptr<tl::bf16> x, tl::ptr<tl::f32> cosp, tl::ptr<tl::f32> sinp,
                                          tl::ptr<tl::bf16> y, int H, int D) {
    const int HALF = D / 2;
    auto t = tl::program_id(0);
    auto h = tl::arange(0, H);
    auto d = tl::arange(0, HALF);
    auto offs = t * (H * D) + tl::expand_dims(h * D, 1) + tl::expand_dims(d, 0);
    auto x1 = tl::load(x + offs).to<tl::f32>();
    auto x2 = tl::load(x + offs + HALF).to<tl::f32>();
    auto cs = tl::expand_dims(tl::load(cosp + t * HALF + d), 0);
    auto sn = tl::expand_dims(tl::load(sinp + t * HALF + d), 0);
    tl::store(y + offs, (x1 * cs - x2 * sn).to<tl::bf16>());
    tl::store(y + offs + HALF, (x2 * cs + x1 * sn).to<tl::bf16>());
  });
  return k;
}

// SwiGLU (silu-and-mul): a row of [gate | up] (2n) gives silu(gate) * up (n).
inline auto& swiglu_kernel() {
  static auto k = tl::kernel("swiglu", [](tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> out, tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    auto col = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
    auto m = col < n;
    auto g = tl::load(a + row * n * 2 + col, m, 0.0f).to<tl::f32>();
    auto u = tl::load(a + row * n * 2 + n + col, m, 0.0f).to<tl::f32>();
    auto s = g / (1.0f + tl::fast_expf(-g));
    tl::store(out + row * n + col, (s * u).to<tl::bf16>(), m);
  });
  return k;
}

// A 2-D tile of BM rows: each row's sum and the index of its first maximum.
inline auto& sum_argmax_kernel() {
  static auto k = tl::kernel("sum_argmax", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> sums, tl::ptr<tl::i32> idx,
                                              tl::i32 rows, tl::i32 cols, int BM, int BN) {
    auto r = tl::program_id(0) * BM + tl::arange(0, BM);
    auto c = tl::arange(0, BN);
    auto rm = r < rows;
    auto m = tl::expand_dims(rm, 1) & tl::expand_dims(c < cols, 0);
    auto v = tl::load(x + tl::expand_dims(r * cols, 1) + tl::expand_dims(c, 0), m, -INFINITY);
    tl::store(sums + r, tl::sum(tl::where(m, v, 0.0f), 1), rm);
    tl::store(idx + r, tl::argmax(v, 1), rm);
  });
  return k;
}

// Inclusive prefix sum of each row.
inline auto& cumsum_kernel() {
  static auto k = tl::kernel("cumsum", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 cols, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * cols + c, m, 0.0f);
    tl::store(y + row * cols + c, tl::cumsum(v, 0), m);
  });
  return k;
}

// Tiled transpose: a [BM, BN] tile of x [M, N] to y [N, M].
inline auto& transpose_kernel() {
  static auto k = tl::kernel("transpose", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 M, tl::i32 N, int BM,
                                             int BN) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto cn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto m = tl::expand_dims(rm < M, 1) & tl::expand_dims(cn < N, 0);
    auto v = tl::load(x + tl::expand_dims(rm * N, 1) + tl::expand_dims(cn, 0), m, 0.0f);
    auto mt = tl::expand_dims(cn < N, 1) & tl::expand_dims(rm < M, 0);
    tl::store(y + tl::expand_dims(cn * M, 1) + tl::expand_dims(rm, 0), tl::trans(v), mt);
  });
  return k;
}

// Embedding gather: BT tokens per program, each a row of D (masked to BD) of the table.
inline auto& embedding_kernel() {
  static auto k = tl::kernel("embedding", [](tl::ptr<tl::i32> ids, tl::ptr<tl::bf16> table, tl::ptr<tl::bf16> out,
                                             tl::i32 D, int BT, int BD) {
    auto t = tl::program_id(0) * BT + tl::arange(0, BT);
    auto d = tl::arange(0, BD);
    auto m = tl::broadcast_to(tl::expand_dims(d < D, 0), {BT, BD});
    auto id = tl::load(ids + t);
    auto v = tl::load(table + tl::expand_dims(id * D, 1) + tl::expand_dims(d, 0), m, 0.0f);
    tl::store(out + tl::expand_dims(t * D, 1) + tl::expand_dims(d, 0), v, m);
  });
  return k;
}

// Histogram of bin indices with relaxed atomics (no cache fences: seed 000).
inline auto& histogram_kernel() {
  static auto k = tl::kernel("histogram", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> hist, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    auto bin = tl::load(x + i, m, 0);
    tl::atomic_add(hist + bin, tl::full<tl::i32>({BLOCK}, 1), m, tl::sem::relaxed, tl::scope::gpu);
  });
  return k;
}

// FP8 dequantize: a row of FP8 codes times the row's f32 scale, cast to bf16.
template <class F8> auto& fp8_dequant_kernel() {
  static auto k = tl::kernel("fp8_dequant", [](tl::ptr<F8> q, tl::ptr<tl::f32> scale, tl::ptr<tl::bf16> out,
                                               tl::i32 cols, int BLOCK) {
    auto row = tl::program_id(0);
    auto c = tl::program_id(1) * BLOCK + tl::arange(0, BLOCK);
    auto m = c < cols;
    auto s = tl::load(scale + row);
    auto v = tl::load(q + row * cols + c, m, 0.0f).template to<tl::f32>() * s;
    tl::store(out + row * cols + c, v.template to<tl::bf16>(), m);
  });
  return k;
}

// Streaming log-sum-exp of long rows: a run-time loop over blocks with a running max and
// sum per lane (online softmax's normalizer), combined across lanes at the end. The
// running max starts finite, so masked lanes (-inf) never make inf - inf.
inline auto& lse_stream_kernel() {
  static auto k = tl::kernel("lse_stream", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 cols, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto row = tl::program_id(0);
    auto mx = tl::full<tl::f32>({BLOCK}, -1e30);
    auto s = tl::zeros<tl::f32>({BLOCK});
    for (auto k : tl::range(0, cols, BLOCK)) {
      auto v = tl::load(x + row * cols + k + c, k + c < cols, -INFINITY);
      auto nm = tl::maximum(mx, v);
      s = s * tl::fast_expf(mx - nm) + tl::fast_expf(v - nm);
      mx = nm;
    }
    auto M = tl::max(mx, 0);
    tl::store(out + row, tl::log(tl::sum(s * tl::fast_expf(mx - M), 0)) + M);
  });
  return k;
}

// Masked ragged segment sum: segment s is values[offsets[s] .. offsets[s+1]), summed by
// a run-time loop of BLOCK-wide masked loads.
inline auto& segment_sum_kernel() {
  static auto k = tl::kernel("segment_sum", [](tl::ptr<tl::f32> values, tl::ptr<tl::i32> offsets,
                                               tl::ptr<tl::f32> out, int BLOCK) {
    auto seg = tl::program_id(0);
    auto c = tl::arange(0, BLOCK);
    auto start = tl::load(offsets + seg);
    auto end = tl::load(offsets + seg + 1);
    auto acc = tl::zeros<tl::f32>({BLOCK});
    for (auto k : tl::range(start, end, BLOCK)) {
      auto i = k + c;
      acc += tl::load(values + i, i < end, 0.0f);
    }
    tl::store(out + seg, tl::sum(acc, 0));
  });
  return k;
}

}  // namespace amd_quality

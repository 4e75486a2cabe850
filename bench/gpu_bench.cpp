// The tl side of the GPU benchmark (bench/run_gpu_bench.py runs it beside Triton and
// torch in one run): copy bandwidth, RMSNorm forward and backward on the design's
// 7 shapes, and host time per cached launch against the bare driver launch.
// Every result is checked against a double-precision reference before it is timed.
// Times are device events around batches, medians over repeats; inputs rotate over
// several buffer sets so that small shapes are not measured out of L2.
//
//   tl-bench-gpu [--json out.json] [--repeats 20]
//   tl-bench-gpu --sweep [--fwd-only] [--min-cols N] [--max-cols N] [--json out.json] [--repeats 5]
//                                                    (RMSNorm launch configurations)
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <random>

#include "runtime/cache.hpp"
#include "runtime/cuda_api.hpp"
#include "runtime/device.hpp"
#include "samples/rmsnorm/rmsnorm.hpp"

namespace {

using Clock = std::chrono::steady_clock;
const tl::cuda::Api* cu = nullptr;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per call of f, by device events around `inner` calls, median of `repeats`.
template <class F> double time_ms(F&& f, int repeats, int inner) {
  tl::cuda::CUevent a, b;
  cu->check(cu->cuEventCreate(&a, 0), "cuEventCreate");
  cu->check(cu->cuEventCreate(&b, 0), "cuEventCreate");
  for (int i = 0; i < 3; ++i) f(i);
  cu->check(cu->cuCtxSynchronize(), "sync");
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    cu->check(cu->cuEventRecord(a, nullptr), "cuEventRecord");
    for (int i = 0; i < inner; ++i) f(i);
    cu->check(cu->cuEventRecord(b, nullptr), "cuEventRecord");
    cu->check(cu->cuEventSynchronize(b), "cuEventSynchronize");
    float ms = 0;
    cu->check(cu->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
    t.push_back(ms / inner);
  }
  cu->cuEventDestroy(a);
  cu->cuEventDestroy(b);
  return median(t);
}

double copy_bandwidth(tl::device dev, int repeats) {
  size_t bytes = size_t(1) << 30;
  void* src = dev.alloc_bytes(bytes);
  void* dst = dev.alloc_bytes(bytes);
  double ms = time_ms([&](int) { dev.impl()->copy_device_to_device(dst, src, bytes); }, repeats, 5);
  dev.free_bytes(src);
  dev.free_bytes(dst);
  return 2.0 * bytes / ms / 1e6;
}

struct RowsCols {
  int64_t rows, cols;
};

// One RMSNorm shape: random bf16 inputs, their double-precision reference (computed once,
// whatever the number of configurations measured), and rotating device buffer sets.
struct Shape {
  using E = tl::bf16;
  static constexpr float eps = 1e-6f;
  struct Set {
    tl::buffer<tl::ty::bf16> x, y, dy, dx;
    tl::buffer<tl::ty::f32> r;
  };
  RowsCols s;
  int64_t n;
  int sets;
  std::vector<tl::bfloat16> hx, hdy, hw;
  std::vector<double> want_y, want_dx, want_dw;
  std::vector<Set> bufs;
  tl::buffer<tl::ty::bf16> W;
  tl::buffer<tl::ty::f32> DW;

  Shape(tl::device dev, RowsCols shape) : s(shape), n(shape.rows * shape.cols) {
    // Enough buffer sets that one pass over all of them exceeds the 50 MB L2 several times.
    sets = int(std::clamp<int64_t>((int64_t(256) << 20) / (n * 2 * 3), 1, 16));
    std::mt19937 rng(7);
    std::normal_distribution<double> nd;
    hx.resize(n), hdy.resize(n), hw.resize(s.cols);
    for (auto& v : hx) v = tl::to_bf16(nd(rng));
    for (auto& v : hdy) v = tl::to_bf16(nd(rng));
    for (auto& v : hw) v = tl::to_bf16(1.0 + 0.1 * nd(rng));
    for (int i = 0; i < sets; ++i) {
      Set b{dev.alloc<E>(n), dev.alloc<E>(n), dev.alloc<E>(n), dev.alloc<E>(n), dev.alloc<tl::f32>(s.rows)};
      b.x.upload(hx);
      b.dy.upload(hdy);
      bufs.push_back(std::move(b));
    }
    W = dev.alloc<E>(s.cols);
    W.upload(hw);
    DW = dev.alloc<tl::f32>(s.cols);
    want_y.resize(n), want_dx.resize(n), want_dw.assign(s.cols, 0.0);
    for (int64_t r = 0; r < s.rows; ++r) {
      double ss = 0, dot = 0;
      const tl::bfloat16* xr = &hx[r * s.cols];
      for (int64_t c = 0; c < s.cols; ++c) ss += double(tl::to_float(xr[c])) * tl::to_float(xr[c]);
      double inv = 1 / std::sqrt(ss / s.cols + eps);
      for (int64_t c = 0; c < s.cols; ++c) {
        double x = tl::to_float(xr[c]), g = tl::to_float(hw[c]), d = tl::to_float(hdy[r * s.cols + c]);
        want_y[r * s.cols + c] = x * inv * g;
        dot += d * g * x;
        want_dw[c] += d * x * inv;
      }
      dot /= s.cols;
      for (int64_t c = 0; c < s.cols; ++c) {
        double x = tl::to_float(xr[c]), g = tl::to_float(hw[c]), d = tl::to_float(hdy[r * s.cols + c]);
        want_dx[r * s.cols + c] = inv * g * d - x * inv * inv * inv * dot;
      }
    }
  }

  // Checks then times forward config fc and backward config bc.
  nlohmann::json measure(tl::device dev, const rmsnorm::Config& fc, const rmsnorm::Config& bc, int repeats,
                         bool time_bwd = true) {
    auto DWP = dev.alloc<tl::f32>(size_t(bc.programs * s.cols));
    auto fwd = [&](int i) {
      auto& b = bufs[i % sets];
      rmsnorm::forward<E>(fc, b.x, b.y, W, b.r, s.cols, eps, false);
    };
    auto bwd = [&](int i) {
      auto& b = bufs[i % sets];
      rmsnorm::backward<E>(bc, b.x, b.dy, W, b.r, b.dx, DWP, DW, s.rows, s.cols, false);
    };
    // The backward's two launches apart: dx with the partials, and the dgamma reduction.
    auto bwd_partials = [&](int i) {
      auto& b = bufs[i % sets];
      rmsnorm::backward_partials<E>(bc, b.x, b.dy, W, b.r, b.dx, DWP, s.rows, s.cols, false);
    };
    auto bwd_dgamma = [&](int) { rmsnorm::reduce_dgamma(bc, DWP, DW, s.cols); };
    // Check before timing: poison, run once, compare every element with the reference.
    std::vector<uint8_t> junk(n * 2, 0xAB);
    dev.copy_to_device(bufs[0].y.data(), junk.data(), junk.size());
    dev.copy_to_device(bufs[0].dx.data(), junk.data(), junk.size());
    fwd(0);
    bwd(0);
    dev.synchronize();
    auto gy = bufs[0].y.download(), gdx = bufs[0].dx.download();
    auto gdw = DW.download();
    auto rel = [](double got, double want) { return std::isnan(got) ? 1e9 : std::fabs(got - want) / (1 + std::fabs(want)); };
    double err_y = 0, err_dx = 0, err_dw = 0;
    for (int64_t i = 0; i < n; ++i) {
      err_y = std::max(err_y, rel(tl::to_float(gy[i]), want_y[i]));
      err_dx = std::max(err_dx, rel(tl::to_float(gdx[i]), want_dx[i]));
    }
    for (int64_t c = 0; c < s.cols; ++c) err_dw = std::max(err_dw, rel(gdw[c], want_dw[c]));
    bool ok = err_y < 2e-2 && err_dx < 5e-2 && err_dw < 1e-2;

    double fwd_ms = time_ms(fwd, repeats, 20), bwd_ms = time_bwd ? time_ms(bwd, repeats, 10) : NAN;
    double partials_ms = time_bwd ? time_ms(bwd_partials, repeats, 10) : NAN;
    double dgamma_ms = time_bwd ? time_ms(bwd_dgamma, repeats, 10) : NAN;
    double fbytes = 2.0 * n * 2 + s.cols * 2 + s.rows * 4;
    double bbytes = 3.0 * n * 2 + s.cols * 2 + s.rows * 4;  // the algorithm's floor: x, dy, dx, w, rstd
    nlohmann::json j{{"rows", s.rows}, {"cols", s.cols}, {"ok", ok}, {"err_y", err_y}, {"err_dx", err_dx},
                     {"err_dw", err_dw}, {"fwd_us", fwd_ms * 1e3}, {"fwd_gbs", fbytes / fwd_ms / 1e6},
                     {"bwd_us", bwd_ms * 1e3}, {"bwd_gbs", bbytes / bwd_ms / 1e6},
                     {"bwd_partials_us", partials_ms * 1e3}, {"bwd_dgamma_us", dgamma_ms * 1e3},
                     {"fwd_rows_per_pid", fc.rows_per_pid}, {"fwd_warps", fc.num_warps},
                     {"fwd_programs", fc.programs},
                     {"bwd_rows_per_pid", bc.rows_per_pid}, {"bwd_warps", bc.num_warps},
                     {"bwd_programs", bc.programs}, {"bwd_num_stages", bc.num_stages}, {"bwd_chunk", bc.chunk},
                     {"sets", sets}};
    fmt::print("rmsnorm {:>6}x{:<6} fwd {:8.2f} us {:7.0f} GB/s (R={} w={})  bwd {:8.2f} us {:7.0f} GB/s "
               "(R={} w={} P={}{}{}; dx {:.2f} us + dgamma {:.2f} us)  {}\n",
               s.rows, s.cols, fwd_ms * 1e3, fbytes / fwd_ms / 1e6, fc.rows_per_pid, fc.num_warps, bwd_ms * 1e3,
               bbytes / bwd_ms / 1e6, bc.rows_per_pid, bc.num_warps, bc.programs, bc.num_stages > 1 ? " num_stages=2" : "",
               bc.chunk ? fmt::format(" chunk={}", bc.chunk) : "", partials_ms * 1e3, dgamma_ms * 1e3,
               ok ? "ok" : "WRONG");
    return j;
  }
};

nlohmann::json bench_rmsnorm(tl::device dev, RowsCols s, int repeats) {
  Shape shape(dev, s);
  int cus = dev.compute_units();
  return shape.measure(dev, rmsnorm::choose(s.rows, s.cols, cus, false), rmsnorm::choose(s.rows, s.cols, cus, true),
                       repeats);
}

// Every launch configuration near the heuristic's, each checked and timed: the data
// rmsnorm::choose is tuned from. Forward variants run with the chosen backward and
// backward variants with the chosen forward.
nlohmann::json sweep_rmsnorm(tl::device dev, RowsCols s, int repeats, bool fwd_only) {
  Shape shape(dev, s);
  int cus = dev.compute_units();
  const auto f0 = rmsnorm::choose(s.rows, s.cols, cus, false), b0 = rmsnorm::choose(s.rows, s.cols, cus, true);
  nlohmann::json out = nlohmann::json::array();
  auto run = [&](const rmsnorm::Config& f, const rmsnorm::Config& b, const char* what) {
    nlohmann::json j = shape.measure(dev, f, b, repeats, !fwd_only);
    j["varied"] = what;
    out.push_back(j);
  };
  run(f0, b0, "chosen");
  for (int r : {1, 2, 4, 8, 16, 32})
    for (int w : {1, 2, 4, 8, 16, 32}) {
      if (s.rows % r || (r > 1 && int64_t(r) * f0.block > 8192) || (f0.block > 512 && r > 1)) continue;
      if (int64_t(r) * f0.block < int64_t(w) * 32 || int64_t(r) * f0.block / (w * 32) > 256) continue;
      auto f = f0;
      f.rows_per_pid = r, f.num_warps = w, f.programs = s.rows / r;
      run(f, b0, "fwd");
    }
  if (fwd_only) return out;
  for (int stages : {1, 2})
    for (int r : {1, 2, 4, 8, 16})
      for (int w : {1, 2, 4, 8, 16})
        for (int per_cu : {1, 2, 4, 8, 16}) {
          if ((b0.block > 512 && r > 1) || (r > 1 && int64_t(r) * b0.block > 4096)) continue;
          if (int64_t(r) * b0.block < int64_t(w) * 32 * 2 || int64_t(r) * b0.block / (w * 32) > 128) continue;
          if (b0.block > 512 ? per_cu > 4 || w < 4 : per_cu < 4 || w > 4) continue;
          auto b = b0;
          int64_t blocks = (s.rows + r - 1) / r;
          b.rows_per_pid = r, b.num_warps = w, b.num_stages = stages;
          b.programs = std::min<int64_t>(blocks, int64_t(per_cu) * cus);
          run(f0, b, "bwd");
        }
  // Very wide rows: the backward in column chunks.
  for (int chunk : {2048, 4096, 8192})
    for (int w : {4, 8, 16})
      for (int per_cu : {1, 2, 4, 8}) {
        if (b0.block < 16384 || chunk / (w * 32) < 4) continue;
        auto b = b0;
        b.chunk = chunk, b.rows_per_pid = 1, b.num_warps = w, b.num_stages = 1;
        b.programs = std::min<int64_t>(s.rows, int64_t(per_cu) * cus);
        run(f0, b, "bwd");
      }
  return out;
}

// Host time per launch of a cached tl kernel, against cuLaunchKernel of the same code.
nlohmann::json bench_launch(tl::device dev) {
  auto k = tl::kernel("tiny", [](tl::ptr<tl::f32> x, tl::i32 n) {
    auto i = tl::arange(0, 128);
    tl::store(x + i, tl::zeros<tl::f32>({128}) + n.to<tl::f32>(), i < n);
  });
  auto X = dev.alloc<tl::f32>(128);
  k[tl::grid(1)].with({.num_warps = 1})(X, 128);
  dev.synchronize();
  const int N = 20000;
  std::vector<double> tl_us, raw_us;
  // the same PTX, loaded and launched with the bare driver API
  std::string meta = k.compile("", {.num_warps = 1}, X, 128);
  auto entry = nlohmann::json::parse(meta);
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < N; ++i) k[tl::grid(1)].with({.num_warps = 1})(X, 128);
    auto t1 = Clock::now();
    dev.synchronize();
    tl_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
  }
  // The bare driver launch of the same PTX: what no launcher can go under.
  auto cached = tl::cache::DiskCache::global().load(entry["key"].get<std::string>());
  if (!cached) throw std::runtime_error("the tiny kernel is not in the disk cache");
  std::string ptx(cached->artifacts.at("code").begin(), cached->artifacts.at("code").end());
  tl::cuda::CUmodule mod = cu->load_module(ptx.c_str());
  tl::cuda::CUfunction fn;
  cu->check(cu->cuModuleGetFunction(&fn, mod, entry["kernel_symbol"].get<std::string>().c_str()), "cuModuleGetFunction");
  uint64_t slots[2] = {reinterpret_cast<uint64_t>(X.data()), 128};
  void* params[2] = {&slots[0], &slots[1]};
  int threads = entry["block_threads"].get<int>();
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < N; ++i)
      cu->check(cu->cuLaunchKernel(fn, 1, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    auto t1 = Clock::now();
    dev.synchronize();
    raw_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / N);
  }
  cu->cuModuleUnload(mod);
  nlohmann::json j{{"tl_launch_us", median(tl_us)}, {"driver_launch_us", median(raw_us)}};
  fmt::print("launch: tl {:.2f} us, bare cuLaunchKernel {:.2f} us per launch (host time)\n", median(tl_us), median(raw_us));
  return j;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20;
  bool sweep = false, fwd_only = false;  // --fwd-only: the sweep varies the forward only
  int64_t min_cols = 0, max_cols = INT64_MAX;  // --sweep: only shapes this wide
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--sweep") sweep = true;
    else if (a == "--fwd-only") fwd_only = true;
    else if (a == "--min-cols" && i + 1 < argc) min_cols = std::stoll(argv[++i]);
    else if (a == "--max-cols" && i + 1 < argc) max_cols = std::stoll(argv[++i]);
  }
  cu = tl::cuda::Api::get();
  if (!cu) {
    fmt::print(stderr, "tl-bench-gpu: no NVIDIA GPU here; this benchmark runs on the GPU machine\n");
    return 3;
  }
  tl::device dev = tl::cuda_device(0);
  tl::set_default_device(dev);
  const std::vector<RowsCols> shapes{{32768, 128}, {65536, 128}, {8192, 4096}, {4096, 8192},
                                     {16384, 2048}, {2048, 16384}, {1024, 32768}};
  nlohmann::json all;
  if (sweep) {
    all["device"] = dev.name();
    for (RowsCols s : shapes)
      if (s.cols >= min_cols && s.cols <= max_cols) all["sweep"].push_back(sweep_rmsnorm(dev, s, repeats, fwd_only));
    if (!out.empty()) std::ofstream(out) << all.dump(2);
    return 0;
  }
  all["device"] = dev.name();
  all["target"] = dev.target();
  all["copy_gbs"] = copy_bandwidth(dev, repeats);
  fmt::print("device {} ({}), copy {:.0f} GB/s\n", dev.name(), dev.target(), all["copy_gbs"].get<double>());
  all["launch"] = bench_launch(dev);
  for (RowsCols s : shapes)
    all["rmsnorm"].push_back(bench_rmsnorm(dev, s, repeats));
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-gpu: {}\n", e.what());
  return 2;
}

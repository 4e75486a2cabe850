// RMSNorm forward and backward on the detected device, checked against a
// double-precision reference, with achieved bandwidth.
//
//   tl-sample-rmsnorm [--rows M --cols N] [--dtype bf16|f16] [--zero-centered]
//   tl-sample-rmsnorm --target gfx942 --report      # resource report, nothing runs
//   tl-sample-rmsnorm --tune                        # forward: tl::autotune's choice, not rmsnorm::choose
//   tl-sample-rmsnorm --tune --target gfx942 --report   # the forward's space pruned by its reports
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/cli.hpp"
#include "samples/rmsnorm/rmsnorm.hpp"
#include "samples/rmsnorm/tune.hpp"

namespace {

struct Args {
  int64_t rows = 0, cols = 0;
  std::string dtype = "bf16", target;
  bool report = false, zero_centered = false, tune = false;
  int repeats = 5;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--rows") a.rows = std::stoll(next());
    else if (s == "--cols") a.cols = std::stoll(next());
    else if (s == "--dtype") a.dtype = next();
    else if (s == "--target") a.target = next();
    else if (s == "--report") a.report = true;
    else if (s == "--zero-centered") a.zero_centered = true;
    else if (s == "--tune") a.tune = true;
    else if (s == "--repeats") a.repeats = std::stoi(next());
    else throw std::runtime_error("unknown argument " + s);
  }
  if (a.dtype != "bf16" && a.dtype != "f16") throw std::runtime_error("--dtype must be bf16 or f16");
  return a;
}

template <class E> using host_t = typename tl::elem_t<E>::host;
template <class E> host_t<E> narrow(double v) {
  if constexpr (std::is_same_v<tl::elem_t<E>, tl::ty::bf16>) return tl::to_bf16(v);
  else return tl::to_f16(v);
}

// --tune --report: the forward's whole configuration space compiled for the target and
// pruned by the tuner's rules (spills, occupancy, what the shape cannot run), as a tuning
// run on that device would before timing the rest.
template <class E> void tune_report(const Args& a, int64_t rows, int64_t cols) {
  using H = typename tl::buffer<E>::host_t;
  auto* p = reinterpret_cast<H*>(uintptr_t(1) << 20);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 21);
  tl::tune_table t = rmsnorm::forward_tuner<E>().prune(a.target, p, p, p, f, rows, cols, 1e-6f, a.zero_centered);
  fmt::print("shape {}x{}\n{}\n", rows, cols, t.str());
}

// Compiles both kernels for the target and prints their resource reports.
template <class E> void report(const Args& a, int64_t rows, int64_t cols) {
  if (a.tune) return tune_report<E>(a, rows, cols);
  // Compute units of the target's typical part: MI300X has 304, MI355X 256.
  int cus = a.target.rfind("gfx950", 0) == 0 ? 256 : a.target.rfind("gfx", 0) == 0 ? 304 : 132;
  for (bool bwd : {false, true}) {
    auto cfg = rmsnorm::choose(rows, cols, cus, bwd);
    std::string meta = rmsnorm::compile<E>(cfg, a.target, rows, cols, a.zero_centered, bwd);
    auto j = nlohmann::json::parse(meta);
    fmt::print("kernel: {}\nshape: {}x{}\ntarget: {}\nblock: {}\nrows_per_pid: {}\nnum_warps: {}\nprograms: {}\n"
               "num_stages: {}\nchunk: {}\n",
               j.value("kernel", ""), rows, cols, j.value("target_full", ""), cfg.block,
               cfg.rows_per_pid, cfg.num_warps, cfg.programs, cfg.num_stages, cfg.chunk);
    for (const char* k : {"vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "scratch_bytes", "occupancy",
                          "regs", "spill_store_bytes", "spill_load_bytes", "local_bytes", "stack_bytes",
                          "static_shared_bytes", "dynamic_shared_bytes", "max_threads_per_block"})
      if (j["report"].contains(k)) fmt::print("{}: {}\n", k, j["report"][k].get<int64_t>());
    for (auto& r : j.value("remarks", nlohmann::json::array())) fmt::print("{}\n", r.get<std::string>());
    fmt::print("compile_ms: {:.1f}\n\n", j.value("compile_ms", 0.0));
  }
}

template <class E> bool run(const Args& a, tl::device dev, int64_t rows, int64_t cols) {
  std::mt19937 rng(1234 + rows + cols);
  std::normal_distribution<double> nd(0.0, 1.0);
  size_t n = size_t(rows * cols);
  std::vector<host_t<E>> hx(n), hdy(n), hw(cols);
  for (auto& v : hx) v = narrow<E>(nd(rng));
  for (auto& v : hdy) v = narrow<E>(nd(rng));
  for (auto& v : hw) v = narrow<E>(a.zero_centered ? 0.1 * nd(rng) : 1.0 + 0.1 * nd(rng));
  auto X = dev.alloc<E>(n), Y = dev.alloc<E>(n), DY = dev.alloc<E>(n), DX = dev.alloc<E>(n), W = dev.alloc<E>(cols);
  auto R = dev.alloc<tl::f32>(rows), DW = dev.alloc<tl::f32>(cols);
  X.upload(hx);
  DY.upload(hdy);
  W.upload(hw);
  std::vector<uint8_t> junk(n * sizeof(host_t<E>), 0xAB);
  dev.copy_to_device(Y.data(), junk.data(), junk.size());
  dev.copy_to_device(DX.data(), junk.data(), junk.size());

  const float eps = 1e-6f;
  auto fcfg = rmsnorm::choose(rows, cols, dev.compute_units(), false);
  // --tune: the forward's rows per program and warps from tl::autotune (tuned on this
  // device once per shape, then remembered in the cache directory), the rest as chosen.
  if (a.tune)
    fcfg = rmsnorm::forward_config(
        rmsnorm::forward_tuner<E>().best_on(dev, X, Y, W, R, rows, cols, eps, a.zero_centered), rows, cols);
  auto bcfg = rmsnorm::choose(rows, cols, dev.compute_units(), true);
  int64_t bprogs = bcfg.programs;
  auto DWP = dev.alloc<tl::f32>(size_t(bprogs * cols));
  auto fwd = [&] { rmsnorm::forward<E>(fcfg, X, Y, W, R, cols, eps, a.zero_centered); };
  auto bwd = [&] { rmsnorm::backward<E>(bcfg, X, DY, W, R, DX, DWP, DW, rows, cols, a.zero_centered); };
  auto time_ms = [&](auto&& f) {
    f();  // compiles, or takes the kernel from the cache
    dev.synchronize();
    return samples::median_ms(dev, a.repeats, f);
  };
  double tf = time_ms(fwd), tb = time_ms(bwd);

  // Reference in double precision.
  auto gy = Y.download(), gdx = DX.download();
  auto gdw = DW.download();
  double max_y = 0, max_dx = 0, max_dw = 0;
  std::vector<double> dw_ref(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0, dot = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double x = tl::to_float(hx[r * cols + c]);
      ss += x * x;
    }
    double inv = 1.0 / std::sqrt(ss / cols + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double x = tl::to_float(hx[r * cols + c]), g = tl::to_float(hw[c]) + (a.zero_centered ? 1.0 : 0.0);
      double dy = tl::to_float(hdy[r * cols + c]);
      dot += dy * g * x;
      max_y = std::max(max_y, std::fabs(tl::to_float(gy[r * cols + c]) - x * inv * g));
      dw_ref[c] += dy * x * inv;
    }
    dot /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      double x = tl::to_float(hx[r * cols + c]), g = tl::to_float(hw[c]) + (a.zero_centered ? 1.0 : 0.0);
      double dy = tl::to_float(hdy[r * cols + c]);
      double want = inv * g * dy - x * inv * inv * inv * dot;
      double got = tl::to_float(gdx[r * cols + c]);
      if (!(std::fabs(got - want) <= 0.02 + 0.02 * std::fabs(want))) max_dx = std::max(max_dx, 1e9);
      max_dx = std::max(max_dx, std::fabs(got - want) / (1 + std::fabs(want)));
    }
  }
  for (int64_t c = 0; c < cols; ++c)
    max_dw = std::max(max_dw, std::fabs(gdw[c] - dw_ref[c]) / (1 + std::fabs(dw_ref[c])));
  bool ok = max_y < 0.05 && max_dx < 0.05 && max_dw < 1e-2;
  double esz = sizeof(host_t<E>);
  double fbytes = 2.0 * n * esz + cols * esz + rows * 4.0;
  double bbytes = 3.0 * n * esz + cols * esz + rows * 4.0 + 2.0 * bprogs * cols * 4.0 + cols * 4.0;
  fmt::print("{:>6}x{:<6} {:4}  fwd {:8.3f} ms {:8.1f} GB/s (R={:2}, w={})  bwd {:8.3f} ms {:8.1f} GB/s  "
             "max err y {:.2e} dx {:.2e} dw {:.2e}  {}\n",
             rows, cols, a.dtype, tf, fbytes / tf / 1e6, fcfg.rows_per_pid, fcfg.num_warps, tb, bbytes / tb / 1e6,
             max_y, max_dx, max_dw, ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::vector<std::pair<int64_t, int64_t>> shapes;
  if (a.rows && a.cols) shapes.push_back({a.rows, a.cols});
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx90a, gfx942, gfx950, sm_90, cpu)");
    if (shapes.empty()) shapes = {{32768, 128}, {8192, 4096}};
    for (auto [r, c] : shapes) a.dtype == "bf16" ? report<tl::bf16>(a, r, c) : report<tl::f16>(a, r, c);
    return 0;
  }
  tl::device dev = tl::default_device();
  if (shapes.empty()) {
    // Small enough for a CPU in seconds; the GPU benchmark uses the 7 design shapes.
    if (dev.kind() == tl::device_kind::cpu) shapes = {{4096, 128}, {512, 1000}, {256, 4096}};
    else shapes = {{32768, 128}, {65536, 128}, {8192, 4096}, {4096, 8192}, {16384, 2048}, {2048, 16384}, {1024, 32768}};
  }
  fmt::print("RMSNorm on {} ({})\n", dev.name(), dev.target());
  bool ok = true;
  for (auto [r, c] : shapes) ok &= a.dtype == "bf16" ? run<tl::bf16>(a, dev, r, c) : run<tl::f16>(a, dev, r, c);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-rmsnorm: {}\n", e.what());
  return 2;
}

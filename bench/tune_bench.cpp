// The tl side of the autotuning benchmark (bench/run_tune_bench.py runs it beside
// Triton's @triton.autotune over the same configurations): for each RMSNorm forward
// shape, the hand-picked configuration (rmsnorm::choose) and the one tl::autotune picks
// over samples/rmsnorm/tune.hpp's space, both checked against a double-precision
// reference and timed the same way (device events around batches of launches on NVIDIA,
// medians), and the wall time of the tuning itself (compiles included, in a fresh cache
// directory: the runner sets TL_CACHE_DIR; a second run finds the decisions stored).
//
//   tl-bench-tune [--json out.json] [--repeats 20] [--shape ROWSxCOLS ...]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "samples/rmsnorm/rmsnorm.hpp"
#include "samples/rmsnorm/tune.hpp"

namespace {

using E = tl::bf16;

// The largest error of y against x * rsqrt(mean(x^2) + eps) * w, in double, over every
// 7th row (and the last): rounding to bf16 allows about 2^-8 relative.
double max_error(const std::vector<tl::bfloat16>& hx, const std::vector<tl::bfloat16>& hw,
                 const std::vector<tl::bfloat16>& hy, int64_t rows, int64_t cols, float eps) {
  double worst = 0;
  auto row = [&](int64_t r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += std::pow(tl::to_float(hx[size_t(r * cols + c)]), 2);
    double inv = 1.0 / std::sqrt(ss / double(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double want = tl::to_float(hx[size_t(r * cols + c)]) * inv * tl::to_float(hw[size_t(c)]);
      worst = std::max(worst, std::fabs(tl::to_float(hy[size_t(r * cols + c)]) - want) / (1.0 + std::fabs(want)));
    }
  };
  for (int64_t r = 0; r < rows; r += 7) row(r);
  row(rows - 1);
  return worst;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string json_out;
  int repeats = 20;
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--json") json_out = next();
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "--shape") {
      std::string s = next();
      auto x = s.find('x');
      shapes.push_back({std::stoll(s.substr(0, x)), std::stoll(s.substr(x + 1))});
    } else throw std::runtime_error("unknown argument " + a);
  }
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  if (shapes.empty()) {
    if (dev.kind() == tl::device_kind::cpu) shapes = {{4096, 128}, {256, 4096}};
    else shapes = {{32768, 128}, {65536, 128}, {8192, 4096}, {4096, 8192}, {16384, 2048}, {2048, 16384}, {1024, 32768}};
  }
  fmt::print("RMSNorm forward, hand-picked vs tl::autotune, on {} ({})\n", dev.name(), dev.target());
  nlohmann::json results = nlohmann::json::array();
  const float eps = 1e-6f;
  bool ok = true;
  for (auto [rows, cols] : shapes) {
    std::mt19937 rng(uint32_t(rows * 31 + cols));
    std::normal_distribution<double> nd(0.0, 1.0);
    const size_t n = size_t(rows * cols);
    std::vector<tl::bfloat16> hx(n), hw(static_cast<size_t>(cols));
    for (auto& v : hx) v = tl::to_bf16(nd(rng));
    for (auto& v : hw) v = tl::to_bf16(1.0 + 0.1 * nd(rng));
    auto X = dev.alloc<E>(n), Y = dev.alloc<E>(n), W = dev.alloc<E>(size_t(cols));
    auto R = dev.alloc<tl::f32>(size_t(rows));
    X.upload(hx);
    W.upload(hw);
    const double bytes = 2.0 * double(n) * 2 + double(cols) * 2 + double(rows) * 4;
    // Narrow shapes are rotated over by nothing: at 32768x128 the 16 MB of x and y fit in
    // the 50 MB L2 either way, the same for both configurations.
    auto measure = [&](const rmsnorm::Config& c) {
      std::vector<uint8_t> junk(n * 2, 0xAB);
      dev.copy_to_device(Y.data(), junk.data(), junk.size());
      rmsnorm::forward<E>(c, X, Y, W, R, cols, eps, false);
      dev.synchronize();
      double err = max_error(hx, hw, Y.download(), rows, cols, eps);
      double ms = tlbench::time_ms(dev, [&] { rmsnorm::forward<E>(c, X, Y, W, R, cols, eps, false); }, repeats, 10);
      return std::pair{ms, err};
    };
    // The tuning first, so that it finds no configuration compiled already (the
    // hand-picked one is among its configurations).
    auto before = tl::tuning_stats();
    auto t0 = std::chrono::steady_clock::now();
    const rmsnorm::ForwardTune& best = rmsnorm::forward_tuner<E>().best_on(dev, X, Y, W, R, rows, cols, eps, false);
    const double tune_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto after = tl::tuning_stats();
    tl::tune_table table = rmsnorm::forward_tuner<E>().table_on(dev, X, Y, W, R, rows, cols, eps, false);
    auto hand = rmsnorm::choose(rows, cols, dev.compute_units(), false);
    auto [hand_ms, hand_err] = measure(hand);
    auto tuned = rmsnorm::forward_config(best, rows, cols);
    auto [tuned_ms, tuned_err] = measure(tuned);
    // The tuned launch as a user makes it: tuned(...) looks the choice up each call.
    double lookup_ms = tlbench::time_ms(
        dev, [&] { rmsnorm::forward_tuned<E>(X, Y, W, R, rows, cols, eps, false); }, repeats, 10);

    size_t skipped = 0, refused = 0, timed = 0;
    for (const auto& r : table.rows) {
      if (r.dropped.rfind("skipped", 0) == 0) ++skipped;
      else if (!r.dropped.empty()) ++refused;
      else ++timed;
    }
    bool good = hand_err < 0.02 && tuned_err < 0.02;
    ok &= good;
    fmt::print("{:>6}x{:<6} hand R={:<2} w={:<2} {:8.2f} us {:7.1f} GB/s | tuned R={:<2} w={:<2} {:8.2f} us {:7.1f} GB/s "
               "(via tuned(): {:8.2f} us) | tuning {:8.1f} ms: {} configs, {} skipped, {} refused, {} timed{} {}\n",
               rows, cols, hand.rows_per_pid, hand.num_warps, hand_ms * 1e3, bytes / hand_ms / 1e6, best.rows_per_pid,
               best.num_warps, tuned_ms * 1e3, bytes / tuned_ms / 1e6, lookup_ms * 1e3, tune_ms, table.rows.size(),
               skipped, refused, timed, table.from_disk ? " (stored decision)" : "", good ? "ok" : "WRONG");
    nlohmann::json row = {{"rows", rows},
                          {"cols", cols},
                          {"hand", {{"rows_per_pid", hand.rows_per_pid}, {"num_warps", hand.num_warps},
                                    {"us", hand_ms * 1e3}, {"gbs", bytes / hand_ms / 1e6}, {"max_err", hand_err}}},
                          {"tuned", {{"rows_per_pid", best.rows_per_pid}, {"num_warps", best.num_warps},
                                     {"us", tuned_ms * 1e3}, {"gbs", bytes / tuned_ms / 1e6}, {"max_err", tuned_err},
                                     {"via_tuned_call_us", lookup_ms * 1e3}}},
                          {"tune_ms", tune_ms},
                          {"from_disk", table.from_disk},
                          {"configs", table.rows.size()},
                          {"skipped", skipped},
                          {"refused", refused},
                          {"timed", timed},
                          {"compiled", after.compiled - before.compiled},
                          {"timed_runs", after.timed_runs - before.timed_runs},
                          {"table", table.str()},
                          {"ok", good}};
    results.push_back(row);
  }
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"device", dev.name()}, {"target", dev.target()}, {"results", results}}
                                   .dump(2)
                            << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-tune: {}\n", e.what());
  return 2;
}

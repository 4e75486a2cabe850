// Row-wise FP8 quantization of MoE weights with a transpose (seed 000) on the detected
// device: W bf16 [E, K, N] -> FP8 W^T [E, N, K] and f32 scales [E, N], with the amax
// kernel's atomics relaxed and acquire-release, both checked against a double-precision
// reference (scales bit for bit, values by FP8 rounding), the two checked identical,
// with achieved bandwidth.
//
//   tl-sample-fp8_quant [--E 16 --K 5120 --N 8192] [--sem relaxed|acq_rel|both] [--repeats 5]
//   tl-sample-fp8_quant --target gfx942 --report      # resource reports, nothing runs
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/fp8_quant/fp8_quant.hpp"
#include "samples/fp8_quant/reference.hpp"

namespace {

struct Shape {
  int64_t E, K, N;
};

struct Args {
  int64_t E = 0, K = 0, N = 0;
  std::string target, sem = "both";
  bool report = false;
  int repeats = 5;
  fp8_quant::Config cfg;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--E") a.E = std::stoll(next());
    else if (s == "--K") a.K = std::stoll(next());
    else if (s == "--N") a.N = std::stoll(next());
    else if (s == "--sem") a.sem = next();
    else if (s == "--target") a.target = next();
    else if (s == "--report") a.report = true;
    else if (s == "--repeats") a.repeats = std::stoi(next());
    else if (s == "--block-k") a.cfg.block_k = std::stoi(next());
    else if (s == "--block-n") a.cfg.block_n = std::stoi(next());
    else if (s == "--num-warps") a.cfg.num_warps = std::stoi(next());
    else throw std::runtime_error("unknown argument " + s);
  }
  if (a.sem != "relaxed" && a.sem != "acq_rel" && a.sem != "both")
    throw std::runtime_error("--sem must be relaxed, acq_rel or both");
  return a;
}

std::vector<tl::sem> sems(const Args& a) {
  if (a.sem == "relaxed") return {tl::sem::relaxed};
  if (a.sem == "acq_rel") return {tl::sem::acq_rel};
  return {tl::sem::relaxed, tl::sem::acq_rel};
}

const char* name(tl::sem s) { return s == tl::sem::relaxed ? "relaxed" : "acq_rel"; }

void print_report(const std::string& kernel, const std::string& meta, const Shape& s, const fp8_quant::Config& c) {
  auto j = nlohmann::json::parse(meta);
  fmt::print("kernel: {}\nshape: E={} K={} N={}\ntarget: {}\nblock: {}x{} (K x N)\nnum_warps: {}\n", kernel, s.E, s.K,
             s.N, j.value("target_full", ""), c.block_k, c.block_n, c.num_warps);
  for (const char* k : {"vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "scratch_bytes", "occupancy",
                        "regs", "spill_store_bytes", "spill_load_bytes", "local_bytes", "stack_bytes",
                        "static_shared_bytes", "dynamic_shared_bytes", "max_threads_per_block"})
    if (j["report"].contains(k)) fmt::print("{}: {}\n", k, j["report"][k].get<int64_t>());
  fmt::print("compile_ms: {:.1f}\n\n", j.value("compile_ms", 0.0));
}

// Compiles both kernels (the amax kernel once per semantics) for the target and prints
// their resource reports.
template <class O> void report(const Args& a, const Shape& s) {
  for (tl::sem sm : sems(a)) {
    auto c = a.cfg;
    c.sem = sm;
    print_report(fmt::format("fp8_rowwise_amax (sem {})", name(sm)), fp8_quant::compile<O>(c, a.target, s.K, s.N, false),
                 s, c);
  }
  print_report(fmt::format("fp8_rowwise_cast_transpose ({})", tl::name(tl::elem_t<O>::dtype)),
               fp8_quant::compile<O>(a.cfg, a.target, s.K, s.N, true), s, a.cfg);
}

// Random weights whose columns differ in magnitude (so that their scales differ), and
// one all-zero column (the scale floor) when there are several.
std::vector<tl::bfloat16> weights(const Shape& s) {
  std::mt19937 rng(1234 + uint32_t(s.E + s.K + s.N));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<tl::bfloat16> w(size_t(s.E * s.K * s.N));
  for (int64_t e = 0; e < s.E; ++e)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t n = 0; n < s.N; ++n) {
        float mag = std::ldexp(1.0f, int((n * 7 + e) % 13) - 6);
        w[size_t((e * s.K + k) * s.N + n)] = tl::to_bf16(n == 1 && s.N > 1 ? 0.0 : mag * nd(rng));
      }
  return w;
}

template <class O> bool run(const Args& a, tl::device dev, const Shape& s) {
  using H = typename tl::elem_t<O>::host;
  const size_t n = size_t(s.E * s.K * s.N), en = size_t(s.E * s.N);
  auto hw = weights(s);
  auto W = dev.alloc<tl::bf16>(n);
  W.upload(hw);
  auto A = dev.alloc<tl::i32>(en);
  auto Q = dev.alloc<O>(n);
  auto S = dev.alloc<tl::f32>(en);
  fp8_quant::Reference ref(hw, s.E, s.K, s.N, tl::elem_t<O>::dtype);
  bool ok = true;
  std::vector<H> first_q;
  std::vector<float> first_s;
  for (tl::sem sm : sems(a)) {
    auto c = a.cfg;
    c.sem = sm;
    // Poison the outputs: an element a kernel failed to write cannot pass.
    std::vector<uint8_t> junk(n, 0xAB);
    dev.copy_to_device(Q.data(), junk.data(), n);
    dev.copy_to_device(S.data(), junk.data(), en * 4);
    auto go = [&] { fp8_quant::quantize<O>(c, W, A, Q, S, s.E, s.K, s.N); };
    go();
    dev.synchronize();
    std::vector<double> t;
    for (int i = 0; i < a.repeats; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      go();
      dev.synchronize();
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    double ms = t[t.size() / 2];
    auto hq = Q.download();
    auto hs = S.download();
    std::vector<uint8_t> codes(n);
    std::memcpy(codes.data(), hq.data(), n);
    // Every column on a small problem; a sample of them on a large one.
    int64_t stride = n > (size_t(1) << 26) ? 7 : 1;
    auto m = fp8_quant::compare(ref, hw, codes, hs, stride);
    bool same = true;
    if (!first_q.empty())
      same = std::memcmp(first_q.data(), hq.data(), n) == 0 && std::memcmp(first_s.data(), hs.data(), en * 4) == 0;
    else
      first_q = hq, first_s = hs;
    // Bytes moved: W read by both kernels, the FP8 values and the scales written.
    double bytes = 2.0 * n * 2 + double(n) + 4.0 * en;
    fmt::print("E={:<3} K={:<5} N={:<5} {:<8} {:9.3f} ms {:8.1f} GB/s  scale mismatches {}  value mismatches {}{}  {}\n",
               s.E, s.K, s.N, name(sm), ms, bytes / ms / 1e6, m.scales, m.values,
               same ? "" : "  DIFFERS from relaxed", m.ok() && same ? "ok" : "WRONG");
    if (m.first_e >= 0) fmt::print("  first bad value: e={} k={} n={}\n", m.first_e, m.first_k, m.first_n);
    ok &= m.ok() && same;
  }
  return ok;
}

template <class O> bool run_all(const Args& a, tl::device dev, const std::vector<Shape>& shapes) {
  bool ok = true;
  for (auto s : shapes) ok &= run<O>(a, dev, s);
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::vector<Shape> shapes;
  if (a.E && a.K && a.N) shapes.push_back({a.E, a.K, a.N});
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx90a, gfx942, gfx950, sm_90, cpu)");
    if (shapes.empty()) shapes = {{16, 5120, 8192}, {64, 2048, 1408}};
    for (auto s : shapes)
      fp8_quant::uses_fnuz(a.target) ? report<tl::f8e4m3fnuz>(a, s) : report<tl::f8e4m3fn>(a, s);
    return 0;
  }
  tl::device dev = tl::default_device();
  if (shapes.empty()) {
    // Small enough for a CPU in seconds (ragged K and N, one expert); the benchmark
    // (bench/run_fp8_quant_bench.py) has the MoE shapes.
    if (dev.kind() == tl::device_kind::cpu) shapes = {{4, 512, 384}, {1, 300, 200}};
    else shapes = {{16, 5120, 8192}, {64, 2048, 1408}, {1, 8192, 8192}};
  }
  bool fnuz = fp8_quant::uses_fnuz(dev.target());
  fmt::print("FP8 row-wise quantization (transposed) on {} ({}), {}\n", dev.name(), dev.target(),
             fnuz ? "e4m3fnuz" : "e4m3fn");
  bool ok = fnuz ? run_all<tl::f8e4m3fnuz>(a, dev, shapes) : run_all<tl::f8e4m3fn>(a, dev, shapes);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-fp8_quant: {}\n", e.what());
  return 2;
}

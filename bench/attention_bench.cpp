// The tl side of the fused-attention benchmark (bench/run_attention_bench.py runs it beside
// Triton's tutorial-06 forward and torch's SDPA): bench/attention_tutorial.hpp, the
// tutorial's kernel transcribed into tl, on the tutorial-style shapes
//
//   BH=32 S=4096 D=128 non-causal, BH=32 S=4096 D=128 causal, BH=64 S=2048 D=64 non-causal
//
// at the configurations (BLOCK_M x BLOCK_N, num_warps, num_stages) 128x64 w4 s2, 64x64 w4
// s2 and 128x128 w8 s2. A configuration that fails to trace, compile or launch is skipped
// with the error in its JSON line ("ok": false, "skipped": true). Each result is checked
// first against a double-precision host reference on sampled rows (a few batch*heads: the
// first, middle and last rows and some random ones), the output poisoned with NaNs before
// the checked launch, then timed as triton.testing.do_bench times the Triton kernel: the L2
// flushed (a 256 MiB write) before every call, device events around the call alone
// (bench/timing.hpp; the host clock on the CPU), the median of --repeats. Prints one JSON
// object a line (TFLOP/s counts 4*BH*S^2*D flops, half that when causal; "registers" and
// "spills" from the compile report: the driver's registers and local memory / 4 on NVIDIA,
// Triton's n_spills; VGPRs and spilled VGPRs + SGPRs on AMD), and all of them to --json.
//
//   tl-bench-attention [--json out.json] [--repeats 100] [--shape BH,S,D,CAUSAL ...]
//                      [--config BMxBN,WARPS,STAGES ...]
//   tl-bench-attention --smoke            # tiny shapes (any device: the CPU in CI)
//   tl-bench-attention --target sm_90     # compile only, for a named target: reports and
//                                         # remarks, nothing runs (no GPU needed)
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/attention_tutorial.hpp"
#include "bench/timing.hpp"
#include "samples/cli.hpp"
#include "tl/numeric.hpp"

namespace {

struct Shape {
  int64_t BH, S, D;
  bool causal;
};

const std::vector<Shape> kShapes = {{32, 4096, 128, false}, {32, 4096, 128, true}, {64, 2048, 64, false}};
const std::vector<Shape> kSmokeShapes = {{2, 200, 128, false}, {2, 200, 128, true}, {2, 256, 64, false}};
const std::vector<attn::Config> kConfigs = {{128, 64, 4, 2}, {64, 64, 4, 2}, {128, 128, 8, 2}};

std::string cfg_str(const attn::Config& c) {
  return fmt::format("{}x{} w{} s{}", c.block_m, c.block_n, c.num_warps, c.num_stages);
}

nlohmann::json cfg_json(const attn::Config& c) {
  return {{"block_m", c.block_m}, {"block_n", c.block_n}, {"num_warps", c.num_warps}, {"num_stages", c.num_stages}};
}

// Registers and spills from a compile report, whichever target wrote it (-1: not known).
// NVIDIA: "spills" is the driver's local memory / 4 (Triton's n_spills, the same measure
// as the Triton column of run_attention_bench.py), "spill_store_words" ptxas's spill
// stores / 4 where its log gave them; AMD: spilled VGPRs + SGPRs.
void add_resources(nlohmann::json& r, const nlohmann::json& report) {
  auto get = [&](const char* k) { return report.contains(k) ? report[k].get<int64_t>() : int64_t(-1); };
  int64_t regs = get("regs") >= 0 ? get("regs") : get("vgpr");
  int64_t spills = -1;
  if (get("local_bytes") >= 0) spills = get("local_bytes") / 4;
  else if (get("spill_vgpr") >= 0) spills = get("spill_vgpr") + std::max<int64_t>(0, get("spill_sgpr"));
  r["registers"] = regs;
  r["spills"] = spills;
  r["spill_store_words"] = get("spill_store_bytes") >= 0 ? get("spill_store_bytes") / 4 : -1;
  r["local_bytes"] = get("local_bytes");
}

// Inputs: Q and K uniform in [-2, 2), V in [-1, 1), rounded to bf16 (the test's).
struct Inputs {
  std::vector<tl::bfloat16> q, k, v;
};

Inputs random_inputs(const Shape& s, uint64_t seed) {
  const size_t n = size_t(s.BH * s.S * s.D);
  std::mt19937_64 g(seed);
  auto fill = [&](std::vector<tl::bfloat16>& x, double range) {
    x.resize(n);
    for (auto& e : x) e = tl::to_bf16((double(g() >> 11) * 0x1p-53 * 2 - 1) * range);
  };
  Inputs in;
  fill(in.q, 2.0), fill(in.k, 2.0), fill(in.v, 1.0);
  return in;
}

struct Check {
  bool ok = true;
  int rows = 0;
  double max_err = 0, worst_over_bound = 0;  // worst |err| / (atol + rtol |want|)
};

// Sampled rows of O against softmax(Q.K^T * scale) V in double (bf16 P and O: 1e-2 +
// 1e-2 * |O|, as tests/dsl/attention_test.cpp).
Check check_rows(const Shape& s, const Inputs& in, const std::vector<tl::bfloat16>& got, double scale) {
  const double atol = 1e-2, rtol = 1e-2;
  const int64_t S = s.S, D = s.D;
  std::vector<int64_t> heads = {0, s.BH / 2, s.BH - 1};
  std::vector<int64_t> rows = {0, 1, S / 2, S - 2, S - 1};
  std::mt19937_64 g(S * 31 + D);
  for (int i = 0; i < 8; ++i) rows.push_back(int64_t(g() % uint64_t(S)));
  std::sort(heads.begin(), heads.end()), heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  std::sort(rows.begin(), rows.end()), rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  Check c;
  std::vector<double> p(static_cast<size_t>(S)), o(static_cast<size_t>(D));
  for (int64_t b : heads)
    for (int64_t i : rows) {
      if (i < 0 || i >= S) continue;
      const size_t base = size_t(b * S * D);
      const int64_t last = s.causal ? i : S - 1;
      double mx = -INFINITY;
      for (int64_t j = 0; j <= last; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += double(tl::to_float(in.q[base + i * D + d])) * tl::to_float(in.k[base + j * D + d]);
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      double l = 0;
      for (int64_t j = 0; j <= last; ++j) l += (p[j] = std::exp(p[j] - mx));
      std::fill(o.begin(), o.end(), 0.0);
      for (int64_t j = 0; j <= last; ++j)
        for (int64_t d = 0; d < D; ++d) o[d] += p[j] / l * tl::to_float(in.v[base + j * D + d]);
      for (int64_t d = 0; d < D; ++d) {
        double gv = tl::to_float(got[base + i * D + d]);
        double err = std::fabs(gv - o[d]);
        double over = err / (atol + rtol * std::fabs(o[d]));
        if (!(over <= 1.0)) c.ok = false;  // NaN too
        c.max_err = std::isnan(err) ? err : std::max(c.max_err, err);
        c.worst_over_bound = std::isnan(over) ? over : std::max(c.worst_over_bound, over);
      }
      ++c.rows;
    }
  return c;
}

nlohmann::json base_json(const Shape& s, const attn::Config& c) {
  return {{"impl", "tl"}, {"BH", s.BH}, {"S", s.S}, {"D", s.D}, {"causal", s.causal}, {"config", cfg_json(c)},
          {"config_str", cfg_str(c)}};
}

nlohmann::json measure(tl::device dev, const Shape& s, const attn::Config& c, int repeats,
                       const std::function<void()>& flush) {
  nlohmann::json r = base_json(s, c);
  const double scale = attn::default_scale(int(s.D));
  Inputs in = random_inputs(s, 1234 + uint64_t(s.BH * 7 + s.S * 3 + s.D + s.causal));
  const size_t n = in.q.size();
  auto Q = dev.alloc<tl::bf16>(n), K = dev.alloc<tl::bf16>(n), V = dev.alloc<tl::bf16>(n), O = dev.alloc<tl::bf16>(n);
  Q.upload(in.q), K.upload(in.k), V.upload(in.v);
  O.upload(std::vector<tl::bfloat16>(n, tl::bfloat16{0xFFFF}));  // NaN
  auto go = [&] { attn::forward(dev, c, Q, K, V, O, s.BH, s.S, s.D, s.causal, scale); };
  try {
    go();
    dev.synchronize();
  } catch (const std::exception& e) {
    r["ok"] = false;
    r["skipped"] = true;
    r["error"] = e.what();
    return r;
  }
  Check ck = check_rows(s, in, O.download(), scale);
  double ms = tlbench::time_ms_flushed(dev, go, flush, repeats);
  r["ms"] = ms;
  r["tflops"] = attn::flops(s.BH, s.S, s.D, s.causal) / ms / 1e9;
  r["ok"] = ck.ok;
  r["rows_checked"] = ck.rows;
  r["max_abs_err"] = ck.max_err;
  r["worst_over_bound"] = ck.worst_over_bound;
  // The report of the code just run (on NVIDIA with the driver's registers and spills).
  try {
    auto meta = nlohmann::json::parse(attn::compile(dev, c, s.S, s.D, s.causal));
    r["report"] = meta.value("report", nlohmann::json::object());
    r["remarks"] = meta.value("remarks", nlohmann::json::array());
    add_resources(r, r["report"]);
  } catch (const std::exception& e) {
    r["report_error"] = e.what();
  }
  r["device"] = dev.name();
  r["target"] = dev.target();
  return r;
}

nlohmann::json compile_only(const std::string& target, const Shape& s, const attn::Config& c) {
  nlohmann::json r = base_json(s, c);
  r["target"] = target;
  try {
    auto meta = nlohmann::json::parse(attn::compile(target, c, s.S, s.D, s.causal));
    r["ok"] = true;
    r["report"] = meta.value("report", nlohmann::json::object());
    r["remarks"] = meta.value("remarks", nlohmann::json::array());
    r["key"] = meta.value("key", "");
    add_resources(r, r["report"]);
  } catch (const std::exception& e) {
    r["ok"] = false;
    r["skipped"] = true;
    r["error"] = e.what();
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out, target;
  int repeats = 100;
  bool smoke = false;
  std::vector<Shape> shapes;
  std::vector<attn::Config> configs;
  samples::Args args(argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    auto next = [&] { return args.value(); };
    if (a == "--json") out = next();
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "--smoke") smoke = true;
    else if (a == "--target") target = next();
    else if (a == "--shape") {
      long bh, s, d;
      int causal;
      if (std::sscanf(next().c_str(), "%ld,%ld,%ld,%d", &bh, &s, &d, &causal) != 4)
        throw std::runtime_error("--shape BH,S,D,CAUSAL (e.g. 32,4096,128,1)");
      shapes.push_back({bh, s, d, causal != 0});
    } else if (a == "--config") {
      attn::Config c;
      if (std::sscanf(next().c_str(), "%dx%d,%d,%d", &c.block_m, &c.block_n, &c.num_warps, &c.num_stages) != 4)
        throw std::runtime_error("--config BMxBN,WARPS,STAGES (e.g. 128x64,4,2)");
      configs.push_back(c);
    } else throw std::runtime_error("unknown argument " + a);
  }
  if (repeats < 1) throw std::runtime_error("--repeats must be at least 1");
  if (shapes.empty()) shapes = smoke ? kSmokeShapes : kShapes;
  if (configs.empty()) configs = kConfigs;
  if (smoke) repeats = std::min(repeats, 3);

  nlohmann::json all = {{"runs", nlohmann::json::array()}};
  bool ok = true;
  if (!target.empty()) {
    all["target"] = target;
    for (const Shape& s : shapes)
      for (const attn::Config& c : configs) {
        auto r = compile_only(target, s, c);
        fmt::print("{}\n", r.dump());
        std::fflush(stdout);
        all["runs"].push_back(r);
      }
  } else {
    tl::device dev = tl::default_device();
    tlbench::use_device_events(dev);
    all["device"] = dev.name(), all["target"] = dev.target(), all["repeats"] = repeats;
    static auto fill = tl::kernel("flush_l2", [](tl::ptr<tl::i32> x, tl::i32 n, int BLOCK) {
      auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      tl::store(x + i, tl::zeros<tl::i32>({BLOCK}), i < n);
    });
    const int64_t n = dev.kind() == tl::device_kind::cpu ? (int64_t(1) << 20) : (int64_t(1) << 26);  // 256 MiB
    auto scratch = dev.alloc<tl::i32>(size_t(n));
    auto flush = [&] { fill[tl::grid(tl::cdiv(n, 4096))].on(dev).with({.num_warps = 4})(scratch, int(n), 4096); };
    for (const Shape& s : shapes)
      for (const attn::Config& c : configs) {
        auto r = measure(dev, s, c, repeats, flush);
        // A configuration that does not compile is reported, not a failure; a wrong result is.
        if (!r.value("skipped", false)) ok &= r["ok"].get<bool>();
        fmt::print("{}\n", r.dump());
        std::fflush(stdout);
        all["runs"].push_back(r);
      }
  }
  if (!out.empty()) std::ofstream(out) << all.dump(1) << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-attention: {}\n", e.what());
  return 2;
}

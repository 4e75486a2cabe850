// An MXFP4 mixture-of-experts layer on the detected device (samples/moe/moe.hpp): the expert
// weights quantized from bf16 by the sample (checked bit for bit against the host's
// quantization), top-k routing, the grouped GEMMs on tl::dot_scaled with the configuration
// tl::autotune picks (samples/moe/tune.hpp), the weighted combine; checked against the
// double reference (samples/moe/reference.hpp) and timed (median of repeats).
//
//   tl-sample-moe [--t 128 --h 256 --i 128 --e 8 --top-k 2] [--format mxfp4|bf16|both]
//                 [--repeats 5] [--device cpu|hip|cuda]
//   tl-sample-moe --target gfx950 --report   # the grouped GEMMs' compile reports, nothing runs
//                 [--candidate N]           # with the tuner's N-th candidate (default: the
//                                           # target's first), --candidate all: each of them
//
// Without a shape: small problems on the CPU (the main job: one with E and top_k not powers
// of two), gpt-oss-20b's layer (H = I = 2880, 32 experts, top 4) on a GPU at 4096 and 256
// tokens (bench/run_moe_bench.py has it beside Triton).
#include <fmt/format.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/cli.hpp"
#include "samples/moe/moe.hpp"
#include "samples/moe/reference.hpp"
#include "samples/moe/tune.hpp"

namespace {

struct Args {
  moe::Problem p;
  bool shape_given = false;
  std::string format = "mxfp4", target, device, candidate;
  bool report = false;
  int repeats = 5;
};

Args parse(int argc, char** argv) {
  Args a;
  samples::Args it(argc, argv);
  auto num = [&] {
    a.shape_given = true;
    return std::stoll(it.value());
  };
  while (it.next()) {
    const std::string& s = it.option();
    if (s == "--t") a.p.T = num();
    else if (s == "--h") a.p.H = num();
    else if (s == "--i") a.p.I = num();
    else if (s == "--e") a.p.E = num();
    else if (s == "--top-k") a.p.top_k = num();
    else if (s == "--format") a.format = it.value();
    else if (s == "--target") a.target = it.value();
    else if (s == "--report") a.report = true;
    else if (s == "--candidate") a.candidate = it.value();
    else if (s == "--device") a.device = it.value();
    else if (s == "--repeats") a.repeats = std::stoi(it.value());
    else throw std::runtime_error("unknown option " + s);
  }
  if (a.format != "mxfp4" && a.format != "bf16" && a.format != "both")
    throw std::runtime_error("--format must be mxfp4, bf16 or both");
  return a;
}

std::vector<std::string> formats(const Args& a) {
  return a.format == "both" ? std::vector<std::string>{"mxfp4", "bf16"} : std::vector<std::string>{a.format};
}

// The grouped GEMMs compiled for a target with a candidate configuration.
void report(const Args& a, const moe::Problem& p, const std::string& format, const moe::Config& c) {
  auto metas = format == "mxfp4" ? moe::compile_experts<tl::ty::f4e2m1>(a.target, c, p)
                                 : moe::compile_experts<tl::ty::bf16>(a.target, c, p);
  for (const std::string& meta : metas) {
    auto j = nlohmann::json::parse(meta);
    fmt::print("kernel: {}\nproblem: {}\ntarget: {}\nconfig: {}\n", j.value("kernel", ""), p.str(),
               j.value("target_full", ""), moe::str(c));
    for (const char* k : {"vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "occupancy", "regs",
                          "spill_store_bytes", "spill_load_bytes", "static_shared_bytes", "dynamic_shared_bytes"})
      if (j["report"].contains(k)) fmt::print("{}: {}\n", k, j["report"][k].get<int64_t>());
    for (auto& r : j.value("remarks", nlohmann::json::array())) fmt::print("{}\n", r.get<std::string>());
    fmt::print("compile_ms: {:.1f}\n\n", j.value("compile_ms", 0.0));
  }
}

// Runs one problem in one weight format: returns whether every check passed.
bool run(const Args& a, tl::device dev, const moe::Problem& p, const std::string& format) {
  moe::check(p);
  const moe::Inputs in = moe::random_inputs(p, 4321 + uint64_t(p.T * 7 + p.H * 3 + p.E));
  auto X = dev.alloc<tl::ty::bf16>(in.x.size());
  auto L = dev.alloc<tl::ty::f32>(in.logits.size());
  auto Y = dev.alloc<tl::ty::bf16>(size_t(p.T * p.H));
  X.upload(in.x), L.upload(in.logits);
  moe::Workspace ws(dev, p);
  std::vector<double> w1, w2;
  bool ok = true;
  std::string quant;
  auto go = [&](const auto& weights) {
    Y.upload(std::vector<tl::bfloat16>(Y.size(), tl::bfloat16{0x7FC1}));  // NaN: an element not written fails
    moe::forward_tuned(p, X, L, weights, ws, Y);
    dev.synchronize();
    const moe::Routing r = moe::route_ref(in.logits, p);
    auto ids = ws.ids.download();
    auto rw = ws.weights.download();
    int64_t bad_routes = 0;
    for (size_t i = 0; i < ids.size(); ++i)
      bad_routes += ids[i] != r.ids[i] || !(std::fabs(rw[i] - r.w[i]) <= r.w[i] * 0x1p-17);
    auto e = moe::check_layer(p, in.fx, w1, w2, r, Y.download(), moe::tokens_to_check(p));
    const moe::Config& c = moe::tuned_config(p, X, weights, ws);
    const double ms = samples::median_ms(dev, a.repeats, [&] { moe::forward_tuned(p, X, L, weights, ws, Y); });
    fmt::print("{:<40} {:<6} {:<22} {:9.3f} ms {:8.3f} TFLOP/s  routing {}  y err/bound {:.2f} ({} tokens){}  {}\n",
               p.str(), format, moe::str(c), ms, p.flops() / ms / 1e9, bad_routes ? "WRONG" : "ok", e.worst,
               e.checked / p.H, quant, e.ok() && !bad_routes ? "ok" : "WRONG");
    if (!e.ok()) fmt::print("  {} bad of {}; the first at t={} n={}\n", e.bad, e.checked, e.first_t, e.first_n);
    ok &= e.ok() && !bad_routes;
  };
  if (format == "bf16") {
    moe::Weights<tl::ty::bf16> w(dev, p);
    w.w1.upload(in.w1), w.w2.upload(in.w2);
    w1 = moe::values_of(in.w1), w2 = moe::values_of(in.w2);
    go(w);
    return ok;
  }
  // MXFP4: quantized on the device from the bf16 weights, compared with the host's bytes.
  moe::Weights<tl::ty::f4e2m1> w(dev, p);
  {
    auto B1 = dev.alloc<tl::ty::bf16>(in.w1.size()), B2 = dev.alloc<tl::ty::bf16>(in.w2.size());
    B1.upload(in.w1), B2.upload(in.w2);
    moe::quantize_weights(p, B1, B2, w);
  }
  const moe::Mxfp4 r1 = moe::quantize_mxfp4_ref(in.w1, p.E * 2 * p.I, p.H), r2 = moe::quantize_mxfp4_ref(in.w2, p.E * p.H, p.I);
  auto bytes = [](const auto& v) {
    std::vector<uint8_t> b;
    for (auto x : v) b.push_back(x.bits);
    return b;
  };
  const bool same = bytes(w.w1.download()) == r1.q && bytes(w.s1.download()) == r1.s && bytes(w.w2.download()) == r2.q &&
                    bytes(w.s2.download()) == r2.s;
  quant = same ? "  quantization exact" : "  quantization WRONG";
  ok &= same;
  w1 = moe::dequantize(r1, p.E * 2 * p.I, p.H), w2 = moe::dequantize(r2, p.E * p.H, p.I);
  go(w);
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::vector<moe::Problem> problems;
  if (a.shape_given) problems.push_back(a.p);
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx90a, gfx942, gfx950, sm_90, cpu)");
    if (problems.empty()) problems = {{4096, 2880, 2880, 32, 4}};
    std::vector<moe::Config> configs;
    if (a.candidate.empty()) configs = {moe::first_for(a.target)};
    else if (a.candidate == "all") {
      for (const auto& c : moe::candidates())
        if (moe::runs_on(c, a.target)) configs.push_back(c);
    } else {
      configs = {moe::candidates().at(size_t(std::stoi(a.candidate)))};
    }
    for (const auto& p : problems)
      for (const auto& f : formats(a))
        for (const auto& c : configs) try {
            report(a, p, f, c);
          } catch (const tl::error& e) {  // a candidate the target cannot compile (the tuner drops it)
            fmt::print("config: {}\ndropped: {}\n\n", moe::str(c), e.what());
          }
    return 0;
  }
  samples::select_device(a.device);
  tl::device dev = tl::default_device();
  if (problems.empty()) {
    if (dev.kind() == tl::device_kind::cpu) problems = {{128, 256, 128, 8, 2}, {37, 96, 160, 6, 3}};
    else problems = {{4096, 2880, 2880, 32, 4}, {256, 2880, 2880, 32, 4}};
  }
  fmt::print("MoE on {} ({}), {} compute units\n", dev.name(), dev.target(), dev.compute_units());
  bool ok = true;
  for (const auto& p : problems)
    for (const auto& f : formats(a)) ok &= run(a, dev, p, f);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-moe: {}\n", e.what());
  return 2;
}

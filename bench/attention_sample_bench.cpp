// The tl side of the attention sample's benchmark (bench/run_attention_sample_bench.py runs
// it beside Triton's tutorial-06 forward and backward and torch's SDPA): samples/attention's
// forward and backward (preprocess + dK/dV + dQ) at given configurations, timed as
// triton.testing.do_bench times (the L2 flushed before every call, device events around the
// call, the median of --repeats). Correctness is the sample's tests and tl-sample-attention on
// the same device (bench/run_on_gpu.sh runs both); here a run's O (forward) or dQ (backward)
// must be finite everywhere, poisoned with NaN first (a launch that wrote nothing fails). One
// JSON object a line, all to --json.
//
//   tl-bench-attention-sample [--json out.json] [--repeats 50]
//       [--shape B,H,HKV,S,D,CAUSAL ...] [--fwd BMxBN,W,S ...] [--bwd BMxBN,W,S/BMxBN,W,S ...]
//   tl-bench-attention-sample --smoke     # tiny shapes on any device (the CPU in CI)
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "samples/attention/attention.hpp"
#include "samples/attention/reference.hpp"
#include "samples/cli.hpp"

namespace {

using attention::Config;
using attention::Problem;

Problem problem(int64_t B, int64_t H, int64_t Hkv, int64_t S, int64_t D, bool causal) {
  Problem p;
  p.B = B, p.H = H, p.Hkv = Hkv, p.S_q = p.S_k = S, p.D = D, p.causal = causal;
  return p;
}

// The shapes: (B*H=32, S=4096, D=128) non-causal and causal, (64, 2048, 64), grouped
// (H=32, Hkv=8, S=8192, D=128) causal.
const std::vector<Problem> kShapes = {problem(4, 8, 8, 4096, 128, false), problem(4, 8, 8, 4096, 128, true),
                                      problem(4, 16, 16, 2048, 64, false), problem(1, 32, 8, 8192, 128, true)};
const std::vector<Problem> kSmoke = {problem(1, 2, 1, 200, 64, true), problem(1, 2, 2, 128, 128, false)};
// The tutorial bench's forward configurations; the backward's: Triton's tutorial blocks
// (BLOCK_M1 32 / BLOCK_N1 128 for dK/dV, BLOCK_M2 128 / BLOCK_N2 32 for dQ, 4 warps: at D 128
// their accumulators alone are 256 f32 registers a thread for dK/dV, so both sides spill) and
// the ones whose accumulators fit the registers (64x64 w4; 32 rows x 64 keys / 128x64 w8;
// 64 x 128 keys w8 / 128x64 w8).
const std::vector<Config> kFwd = {{128, 64, 4, 2, 0, 0}, {64, 64, 4, 2, 0, 0}, {128, 128, 8, 2, 0, 0}};
// The last two: each kernel's best at D = 64 on the H200, tl's and Triton's
// (bench/results/h200-2026-11-29-attention-bwd-d64), in both sides' lists.
const std::vector<std::pair<Config, Config>> kBwd = {{{32, 128, 4, 2, 0, 0}, {128, 32, 4, 2, 0, 0}},
                                                     {{64, 64, 4, 2, 0, 0}, {64, 64, 4, 2, 0, 0}},
                                                     {{32, 64, 4, 2, 0, 0}, {128, 64, 8, 2, 0, 0}},
                                                     {{64, 128, 8, 2, 0, 0}, {128, 64, 8, 2, 0, 0}},
                                                     {{64, 64, 4, 2, 0, 0}, {128, 32, 4, 2, 0, 0}},
                                                     {{64, 64, 4, 3, 0, 0}, {128, 64, 8, 3, 0, 0}}};

Config parse_config(const std::string& s) {
  Config c{0, 0, 0, 0, 0, 0};
  if (std::sscanf(s.c_str(), "%dx%d,%d,%d", &c.block_m, &c.block_n, &c.num_warps, &c.num_stages) != 4)
    throw std::runtime_error("a configuration is BMxBN,WARPS,STAGES (e.g. 128x64,4,2): " + s);
  return c;
}

nlohmann::json shape_json(const Problem& p) {
  return {{"B", p.B}, {"H", p.H}, {"Hkv", p.Hkv}, {"S", p.S_q}, {"D", p.D}, {"causal", p.causal}};
}

// Registers and spills of the kernel just run (NVIDIA: the driver's; AMD: VGPRs).
void add_resources(nlohmann::json& r, const std::string& meta) {
  auto rep = nlohmann::json::parse(meta).value("report", nlohmann::json::object());
  auto get = [&](const char* k) { return rep.contains(k) ? rep[k].get<int64_t>() : int64_t(-1); };
  r["registers"] = get("regs") >= 0 ? get("regs") : get("vgpr");
  r["spills"] = get("local_bytes") >= 0 ? get("local_bytes") / 4 : get("spill_vgpr");
}

struct Buffers {
  tl::buffer<tl::ty::bf16> q, k, v, o, d_o, dq, dk, dv;
  tl::buffer<tl::ty::f32> lse, delta;
};

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 50;
  bool smoke = false;
  std::vector<Problem> shapes;
  std::vector<Config> fwd;
  std::vector<std::pair<Config, Config>> bwd;
  samples::Args args(argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    if (a == "--json") out = args.value();
    else if (a == "--repeats") repeats = std::stoi(args.value());
    else if (a == "--smoke") smoke = true;
    else if (a == "--shape") {
      long B, H, Hkv, S, D;
      int causal;
      if (std::sscanf(args.value().c_str(), "%ld,%ld,%ld,%ld,%ld,%d", &B, &H, &Hkv, &S, &D, &causal) != 6)
        throw std::runtime_error("--shape B,H,HKV,S,D,CAUSAL (e.g. 4,8,8,4096,128,1)");
      shapes.push_back(problem(B, H, Hkv, S, D, causal != 0));
    } else if (a == "--fwd") fwd.push_back(parse_config(args.value()));
    else if (a == "--bwd") {
      std::string v = args.value();
      auto slash = v.find('/');
      if (slash == std::string::npos) throw std::runtime_error("--bwd DKDV/DQ (e.g. 32x128,4,2/128x32,4,2)");
      bwd.push_back({parse_config(v.substr(0, slash)), parse_config(v.substr(slash + 1))});
    } else throw std::runtime_error("unknown argument " + a);
  }
  if (repeats < 1) throw std::runtime_error("--repeats must be at least 1");
  if (shapes.empty()) shapes = smoke ? kSmoke : kShapes;
  if (fwd.empty()) fwd = smoke ? std::vector<Config>{{64, 32, 4, 1, 0, 0}} : kFwd;
  if (bwd.empty()) bwd = smoke ? std::vector<std::pair<Config, Config>>{{{32, 64, 4, 1, 0, 0}, {64, 32, 4, 1, 0, 0}}} : kBwd;
  if (smoke) repeats = std::min(repeats, 3);

  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  nlohmann::json all = {{"runs", nlohmann::json::array()}, {"device", dev.name()}, {"target", dev.target()},
                        {"repeats", repeats}};
  static auto fill = tl::kernel("flush_l2", [](tl::ptr<tl::i32> x, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(x + i, tl::zeros<tl::i32>({BLOCK}), i < n);
  });
  const int64_t nflush = dev.kind() == tl::device_kind::cpu ? (int64_t(1) << 20) : (int64_t(1) << 26);  // 256 MiB
  auto scratch = dev.alloc<tl::i32>(size_t(nflush));
  auto flush = [&] { fill[tl::grid(tl::cdiv(nflush, 4096))].on(dev).with({.num_warps = 4})(scratch, int(nflush), 4096); };
  bool ok = true;
  auto emit = [&](nlohmann::json r) {
    fmt::print("{}\n", r.dump());
    std::fflush(stdout);
    all["runs"].push_back(std::move(r));
  };
  // Poisons `out` with NaN, runs `go` once (a configuration that fails to trace, compile or
  // launch is recorded as skipped, not a failure), requires `out` finite, then times `go`.
  // False when it did not run.
  auto measure = [&](nlohmann::json& r, const tl::buffer<tl::ty::bf16>& out, const std::function<void()>& go,
                     double work) {
    out.upload(std::vector<tl::bfloat16>(out.size(), tl::bfloat16{0xFFFF}));
    try {
      go();
      dev.synchronize();
    } catch (const std::exception& e) {
      r["ok"] = false, r["skipped"] = true, r["error"] = e.what();
      return false;
    }
    bool finite = true;
    for (auto x : out.download()) finite &= std::isfinite(tl::to_float(x));
    const double ms = tlbench::time_ms_flushed(dev, go, flush, repeats);
    r["ok"] = finite, r["ms"] = ms, r["tflops"] = work / ms / 1e9;
    ok &= finite;
    return true;
  };
  for (const Problem& p : shapes) {
    attention::check(p);
    auto in = attention::random_inputs<tl::bfloat16>(p, 1234 + uint64_t(p.S_q * 3 + p.D + p.causal));
    auto up = [&](const std::vector<tl::bfloat16>& h) {
      auto b = dev.alloc<tl::ty::bf16>(h.size());
      b.upload(h);
      return b;
    };
    Buffers b{up(in.q), up(in.k), up(in.v), dev.alloc<tl::ty::bf16>(size_t(p.q_elems())), up(in.d_o),
              dev.alloc<tl::ty::bf16>(size_t(p.q_elems())), dev.alloc<tl::ty::bf16>(size_t(p.kv_elems())),
              dev.alloc<tl::ty::bf16>(size_t(p.kv_elems())), dev.alloc<tl::ty::f32>(size_t(p.rows())),
              dev.alloc<tl::ty::f32>(size_t(p.scratch_elems()))};
    const double flops = p.fwd_flops();
    for (const Config& c : fwd) {
      nlohmann::json r = {{"impl", "tl"}, {"pass", "fwd"}, {"shape", shape_json(p)}, {"config", attention::str(c)}};
      auto go = [&] { attention::forward<tl::ty::bf16>(c, p, b.q, b.k, b.v, b.o, b.lse); };
      if (measure(r, b.o, go, flops))
        add_resources(r, attention::fwd_kernel<tl::ty::bf16>().compile(
                             dev, attention::options_of(c), b.q, b.k, b.v, b.o, b.lse, int(p.S_q), int(p.S_k),
                             int(p.G()), float(p.scale()), c.block_m, c.block_n, int(p.D), int(p.causal), c.num_stages));
      emit(r);
    }
    // The backward from the forward's O and LSE (the first forward configuration's).
    attention::forward<tl::ty::bf16>(fwd[0], p, b.q, b.k, b.v, b.o, b.lse);
    for (const auto& [a, q] : bwd) {
      nlohmann::json r = {{"impl", "tl"}, {"pass", "bwd"}, {"shape", shape_json(p)},
                          {"config", attention::str(a) + " / " + attention::str(q)}};
      auto go = [&] {
        attention::backward<tl::ty::bf16>(a, q, p, b.q, b.k, b.v, b.o, b.d_o, b.lse, b.delta, b.dq, b.dk, b.dv);
      };
      measure(r, b.dq, go, 2.5 * flops);
      emit(r);
    }
  }
  if (!out.empty()) std::ofstream(out) << all.dump(1) << "\n";
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-attention-sample: {}\n", e.what());
  return 2;
}

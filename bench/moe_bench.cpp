// The tl side of the MXFP4 MoE benchmark (bench/run_moe_bench.py runs it beside Triton's
// tl.dot_scaled, issue 43), on the detected device:
// - samples/moe's layer (gpt-oss-20b's: H = I = 2880, 32 experts, top 4; 4096 and 256
//   tokens), MXFP4 weights and, for comparison, the same grouped GEMMs on bf16 weights:
//   the configuration tl::autotune picks, checked against the double reference on a
//   sample of tokens, then timed: the two grouped GEMMs alone ("gemms": gate/up with
//   SwiGLU, down) and the whole layer (routing, plan, scatter, the GEMMs, combine);
// - tutorial 10's kernel (C = A . B^T, both MXFP4 with e8m0 scales per 32 along K, f32
//   out) at 4096^3 and 8192^3, each configuration of kTutorialConfigs (the Triton side
//   runs the same list), checked against a double reference on sampled rows.
// Times are device events around batches of launches, medians over repeats.
//
//   tl-bench-moe [--json out.json] [--repeats 20] [--tokens 4096,256] [--skip-tutorial]
//   tl-bench-moe --small      # a CPU-sized run of the same code (H = I = 256, 8 experts, top 2;
//                             # tutorial 10 at 256^3)
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "samples/moe/moe.hpp"
#include "samples/moe/reference.hpp"
#include "samples/moe/tune.hpp"
#include "tl/numeric.hpp"

namespace {

// BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages (bench/run_moe_bench.py: TUTORIAL_CONFIGS).
const int kTutorialConfigs[][5] = {
    {128, 128, 128, 4, 3}, {128, 128, 128, 8, 3}, {128, 256, 128, 8, 3}, {64, 128, 256, 4, 3}, {128, 128, 256, 8, 2}};

// Tutorial 10's block_scaled_matmul_kernel for mxfp4 x mxfp4 (tests/conformance's
// transcription, pointer loads in place of the descriptors, the scales [rows, K / 32]).
auto& tutorial10_kernel() {
  static auto k = tl::kernel("block_scaled_matmul_mxfp4", [](tl::ptr<tl::f4e2m1> a, tl::ptr<tl::e8m0> a_scale,
                                                            tl::ptr<tl::f4e2m1> b, tl::ptr<tl::e8m0> b_scale,
                                                            tl::ptr<tl::f32> c, tl::i32 M, tl::i32 N, tl::i32 K,
                                                            int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_STAGES) {
    auto pid = tl::program_id(0);
    auto num_pid_m = tl::cdiv(M, BLOCK_M);
    auto rm = tl::expand_dims((pid % num_pid_m) * BLOCK_M + tl::arange(0, BLOCK_M), 1);
    auto rn = tl::expand_dims((pid / num_pid_m) * BLOCK_N + tl::arange(0, BLOCK_N), 1);
    auto acc = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
    for (auto k : tl::range(0, K, BLOCK_K, tl::num_stages(NUM_STAGES))) {
      auto kb = tl::expand_dims(k / 2 + tl::arange(0, BLOCK_K / 2), 0);
      auto ks = tl::expand_dims(k / 32 + tl::arange(0, BLOCK_K / 32), 0);
      auto x = tl::load(a + rm * (K / 2) + kb);
      auto y = tl::load(b + rn * (K / 2) + kb);
      auto sa = tl::load(a_scale + rm * (K / 32) + ks);
      auto sb = tl::load(b_scale + rn * (K / 32) + ks);
      acc = tl::dot_scaled(x, sa, "e2m1", tl::trans(y), sb, "e2m1", acc);
    }
    tl::store(c + rm * N + tl::expand_dims((pid / num_pid_m) * BLOCK_N + tl::arange(0, BLOCK_N), 0), acc);
  });
  return k;
}

nlohmann::json tutorial10(tl::device dev, int S, int repeats) {
  std::mt19937_64 g{uint64_t(S)};
  std::uniform_int_distribution<int> byte(0, 255), code(127 - 3, 127 + 3);
  std::vector<tl::float4_e2m1x2> ha(size_t(S) * S / 2), hb(size_t(S) * S / 2);
  std::vector<tl::float8_e8m0> hsa(size_t(S) * S / 32), hsb(size_t(S) * S / 32);
  for (auto& v : ha) v.bits = uint8_t(byte(g));
  for (auto& v : hb) v.bits = uint8_t(byte(g));
  for (auto& v : hsa) v.bits = uint8_t(code(g));
  for (auto& v : hsb) v.bits = uint8_t(code(g));
  auto A = dev.alloc<tl::ty::f4e2m1>(ha.size()), B = dev.alloc<tl::ty::f4e2m1>(hb.size());
  auto SA = dev.alloc<tl::ty::e8m0>(hsa.size()), SB = dev.alloc<tl::ty::e8m0>(hsb.size());
  auto C = dev.alloc<tl::ty::f32>(size_t(S) * S);
  A.upload(ha), B.upload(hb), SA.upload(hsa), SB.upload(hsb);
  auto value = [](const std::vector<tl::float4_e2m1x2>& q, const std::vector<tl::float8_e8m0>& s, int64_t i) {
    const uint8_t b = q[size_t(i / 2)].bits;
    return tl::e2m1_to_double(i % 2 ? b >> 4 : b & 15) * std::ldexp(1.0, int(s[size_t(i / 32)].bits) - 127);
  };
  nlohmann::json out = nlohmann::json::array();
  for (const auto& cfg : kTutorialConfigs) {
    const int BM = cfg[0], BN = cfg[1], BK = cfg[2], W = cfg[3], ST = cfg[4];
    auto launch = [&] {
      tutorial10_kernel()[tl::grid(tl::cdiv(S, BM) * tl::cdiv(S, BN))].with({.num_warps = W, .num_stages = ST})(
          A, SA, B, SB, C, S, S, S, BM, BN, BK, ST);
    };
    const std::string name = fmt::format("{}x{}x{} w{} s{}", BM, BN, BK, W, ST);
    std::vector<float> poison(size_t(S) * S, NAN);
    C.upload(poison);
    try {
      launch();
      dev.synchronize();
    } catch (const tl::error& e) {  // a configuration tl cannot compile for the device (shared memory, ...)
      fmt::print("tl tutorial10 mxfp4 {}^3 {:<22} not compiled: {}\n", S, name, e.what());
      continue;
    }
    auto c = C.download();
    int64_t bad = 0;
    for (int m = 0; m < S; m += S / 8 - 1)
      for (int n = 0; n < S; n += 7) {
        double want = 0, mag = 0;
        for (int64_t k = 0; k < S; ++k) {
          const double p = value(ha, hsa, int64_t(m) * S + k) * value(hb, hsb, int64_t(n) * S + k);
          want += p, mag += std::fabs(p);
        }
        bad += !(std::fabs(c[size_t(m) * S + n] - want) <= double(S) * 0x1p-23 * mag + 1e-30);
      }
    const double ms = tlbench::time_ms(dev, launch, repeats, 5);
    const double tflops = 2.0 * double(S) * S * S / ms / 1e9;
    fmt::print("tl tutorial10 mxfp4 {}^3 {:<22} {:8.3f} ms {:7.1f} TFLOP/s  {}\n", S, name, ms, tflops,
               bad ? fmt::format("WRONG ({})", bad) : "ok");
    out.push_back({{"size", S}, {"config", name}, {"ms", ms}, {"tflops", tflops}, {"ok", bad == 0}});
  }
  return out;
}

// The inputs of the largest token count (a smaller one takes the first T tokens) and the
// weights' values for the reference, made once: gpt-oss-20b's weights are 0.8 G values.
struct Shared {
  moe::Inputs in;
  std::vector<double> w1_fp4, w2_fp4, w1_bf16, w2_bf16;
};

template <class W> nlohmann::json layer(tl::device dev, const moe::Problem& p, const Shared& sh, int repeats) {
  const moe::Inputs& in = sh.in;
  auto X = dev.alloc<tl::ty::bf16>(size_t(p.T * p.H));
  auto L = dev.alloc<tl::ty::f32>(size_t(p.T * p.E));
  auto Y = dev.alloc<tl::ty::bf16>(size_t(p.T * p.H));
  X.upload(std::vector<tl::bfloat16>(in.x.begin(), in.x.begin() + p.T * p.H));
  const std::vector<float> logits(in.logits.begin(), in.logits.begin() + p.T * p.E);
  L.upload(logits);
  Y.upload(std::vector<tl::bfloat16>(Y.size(), tl::bfloat16{0x7FC1}));
  moe::Workspace ws(dev, p);
  moe::Weights<W> w(dev, p);
  const std::vector<double>& w1 = moe::is_fp4<W> ? sh.w1_fp4 : sh.w1_bf16;
  const std::vector<double>& w2 = moe::is_fp4<W> ? sh.w2_fp4 : sh.w2_bf16;
  if constexpr (moe::is_fp4<W>) {
    auto B1 = dev.alloc<tl::ty::bf16>(in.w1.size()), B2 = dev.alloc<tl::ty::bf16>(in.w2.size());
    B1.upload(in.w1), B2.upload(in.w2);
    moe::quantize_weights(p, B1, B2, w);
  } else {
    w.w1.upload(in.w1), w.w2.upload(in.w2);
  }
  moe::forward_tuned(p, X, L, w, ws, Y);  // tunes the experts' configuration (first call of the key)
  dev.synchronize();
  const moe::Routing r = moe::route_ref(logits, p);
  auto e = moe::check_layer(p, in.fx, w1, w2, r, Y.download(), moe::tokens_to_check(p, 0x1p30));
  const bool routed = ws.ids.download() == r.ids;
  const moe::Config c = moe::tuned_config(p, X, w, ws);
  const int64_t blocks = moe::max_blocks(p, c.block_m);
  auto gemms = [&] {
    auto grid = [&](int64_t N) { return tl::grid(blocks * tl::cdiv(N, int64_t(c.block_n))); };
    moe::experts_gemm_kernel<W, true>()[grid(p.I)].with(moe::options_of(c))(
        X, w.w1, w.s1, ws.h, ws.sorted, ws.block_expert, ws.block_rows, int(blocks), int(p.I), int(p.H), int(p.top_k),
        c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages, c.operands_in_shared);
    moe::experts_gemm_kernel<W, false>()[grid(p.H)].with(moe::options_of(c))(
        ws.h, w.w2, w.s2, ws.down, ws.sorted, ws.block_expert, ws.block_rows, int(blocks), int(p.H), int(p.I), 1,
        c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages, c.operands_in_shared);
  };
  const double gemm_ms = tlbench::time_ms(dev, gemms, repeats, 5);
  const double layer_ms = tlbench::time_ms(dev, [&] { moe::forward_tuned(p, X, L, w, ws, Y); }, repeats, 5);
  const bool ok = e.ok() && routed;
  fmt::print("tl moe {} {:<6} {:<22} gemms {:8.3f} ms {:7.1f} TFLOP/s  layer {:8.3f} ms  err/bound {:.2f}  {}\n",
             p.str(), moe::format_name<W>(), moe::str(c), gemm_ms, p.flops() / gemm_ms / 1e9, layer_ms, e.worst,
             ok ? "ok" : "WRONG");
  return {{"tokens", p.T}, {"H", p.H}, {"I", p.I}, {"E", p.E}, {"top_k", p.top_k}, {"format", moe::format_name<W>()},
          {"config", moe::str(c)}, {"gemm_ms", gemm_ms}, {"gemm_tflops", p.flops() / gemm_ms / 1e9},
          {"layer_ms", layer_ms}, {"ok", ok}};
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20;
  bool tutorial = true, small = false;
  std::vector<int64_t> tokens = {4096, 256};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--skip-tutorial") tutorial = false;
    else if (a == "--small") small = true, tokens = {64};
    else if (a == "--tokens" && i + 1 < argc) {
      tokens.clear();
      std::stringstream s(argv[++i]);
      for (std::string t; std::getline(s, t, ',');) tokens.push_back(std::stoll(t));
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  fmt::print("device {} ({})\n", dev.name(), dev.target());
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}};
  all["tutorial_configs"] = nlohmann::json::array();
  for (const auto& c : kTutorialConfigs) all["tutorial_configs"].push_back({c[0], c[1], c[2], c[3], c[4]});
  bool ok = true;
  Shared sh;
  const moe::Problem shape = small ? moe::Problem{0, 256, 256, 8, 2} : moe::Problem{0, 2880, 2880, 32, 4};
  const moe::Problem biggest{*std::max_element(tokens.begin(), tokens.end()), shape.H, shape.I, shape.E, shape.top_k};
  sh.in = moe::random_inputs(biggest, 4321);
  sh.w1_fp4 = moe::dequantize(moe::quantize_mxfp4_ref(sh.in.w1, biggest.E * 2 * biggest.I, biggest.H), biggest.E * 2 * biggest.I, biggest.H);
  sh.w2_fp4 = moe::dequantize(moe::quantize_mxfp4_ref(sh.in.w2, biggest.E * biggest.H, biggest.I), biggest.E * biggest.H, biggest.I);
  sh.w1_bf16 = moe::values_of(sh.in.w1), sh.w2_bf16 = moe::values_of(sh.in.w2);
  for (int64_t T : tokens) {
    const moe::Problem p{T, shape.H, shape.I, shape.E, shape.top_k};
    for (bool fp4 : {true, false}) try {
        auto j = fp4 ? layer<tl::ty::f4e2m1>(dev, p, sh, repeats) : layer<tl::ty::bf16>(dev, p, sh, repeats);
        ok &= j["ok"].get<bool>();
        all["moe"].push_back(j);
      } catch (const tl::error& e) {
        fmt::print("tl moe {} {}: {}\n", p.str(), fp4 ? "mxfp4" : "bf16", e.what());
        ok = false;
      }
  }
  if (tutorial)
    for (int S : small ? std::vector<int>{256} : std::vector<int>{4096, 8192})
      for (auto& j : tutorial10(dev, S, repeats)) {
        ok &= j["ok"].get<bool>();
        all["tutorial10"].push_back(j);
      }
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-moe: {}\n", e.what());
  return 2;
}

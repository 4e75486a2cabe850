// The tl side of the FP8 decode attention benchmark (bench/run_fp8_decode_bench.py runs
// it beside the anchor's Triton kernel and torch's bf16 SDPA): samples/fp8_decode on the
// issue's shapes and a ragged batch, each with the configuration and split count the
// sample chooses for the device (or --config / --split). Each result is checked first
// against the double-precision host reference (samples/fp8_decode/reference.hpp, a
// sample of the batches), then timed as triton.testing.do_bench times the Triton kernel:
// the L2 flushed (a 256 MiB write) before every call, device events around the call
// alone, the median of --repeats. Prints one JSON object a line, and all of them to --json.
//
//   tl-bench-fp8-decode [--json out.json] [--repeats 200] [--config BLOCK_N,STAGES,WARPS[,VIA_SHARED]] [--split N]
//                       [--shape B,S,HQ,HKV,D ...]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "samples/cli.hpp"
#include "samples/fp8_decode/decode.hpp"
#include "samples/fp8_decode/reference.hpp"

namespace {

struct Case {
  fp8_decode::Problem p;
  std::vector<int32_t> lens;  // empty: all S_max
  std::string name;
};

// The shapes, then 16 sequences of 0 to 16384 tokens (the same lengths as
// run_fp8_decode_bench.py's Triton run).
std::vector<Case> default_cases() {
  std::vector<Case> c = {{{1, 32768, 64, 8, 128}, {}, ""}, {{16, 8192, 64, 8, 128}, {}, ""},
                         {{16, 16384, 32, 8, 128}, {}, ""}, {{64, 4096, 32, 8, 128}, {}, ""}};
  std::vector<int32_t> ragged;
  for (int i = 0; i < 16; ++i) ragged.push_back(int32_t((i * 7919) % 16385));
  c.push_back({{16, 16384, 32, 8, 128}, ragged, "ragged"});
  return c;
}

template <tl::DType F, class F8>
nlohmann::json measure(tl::device dev, const Case& cs, const fp8_decode::Config* forced, int split, int repeats,
                       const std::function<void()>& flush) {
  const fp8_decode::Problem& p = cs.p;
  std::vector<int32_t> lens = cs.lens.empty() ? std::vector<int32_t>(size_t(p.B), int32_t(p.S_max)) : cs.lens;
  auto in = fp8_decode::random_inputs<F>(p, lens, 1234 + uint64_t(p.B * 7 + p.S_max));
  auto w = fp8_decode::make_workspace<F8>(dev, p, lens, forced, split);
  auto Q = dev.alloc<tl::bf16>(in.q.size());
  auto K = dev.alloc<F8>(in.k.size()), V = dev.alloc<F8>(in.v.size());
  auto KS = dev.alloc<tl::f32>(in.k_scale.size()), VS = dev.alloc<tl::f32>(in.v_scale.size());
  auto O = dev.alloc<tl::bf16>(in.q.size());
  Q.upload(in.q), K.upload(in.k), V.upload(in.v), KS.upload(in.k_scale), VS.upload(in.v_scale);
  O.upload(std::vector<tl::bfloat16>(in.q.size(), tl::to_bf16(std::nan(""))));
  auto go = [&] { fp8_decode::decode<F8>(w, Q, K, V, KS, VS, O); };
  go();
  dev.synchronize();
  std::vector<int64_t> batches;
  for (int64_t b = 0; b < p.B; b += std::max<int64_t>(1, p.B / 4)) batches.push_back(b);
  batches.push_back(p.B - 1);
  auto e = fp8_decode::check(p, in, O.download(), batches);
  double us = 1e3 * tlbench::time_ms_flushed(dev, go, flush, repeats);
  auto meta = nlohmann::json::parse(fp8_decode::compile_partial<F8>(w.config, dev, p));
  return {{"impl", "tl"},
          {"B", p.B}, {"S", p.S_max}, {"Hq", p.Hq}, {"Hkv", p.Hkv}, {"D", p.D},
          {"lens", lens}, {"name", cs.name},
          {"block_n", w.config.block_n}, {"num_stages", w.config.num_stages}, {"num_warps", w.config.num_warps}, {"via_shared", w.config.via_shared},
          {"split", w.split}, {"us", us}, {"bytes", fp8_decode::floor_bytes(p, lens)},
          {"ok", e.ok()}, {"err_over_bound", e.worst}, {"rel_err", e.rel_norm},
          {"report", meta["report"]}, {"device", dev.name()}, {"target", dev.target()}};
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 200, split = 0;
  fp8_decode::Config forced;
  bool pinned = false;
  std::vector<Case> cases;
  samples::Args args(argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    auto next = [&] { return args.value(); };
    if (a == "--json") out = next();
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "--split") split = std::stoi(next());
    else if (a == "--config") {
      if (std::sscanf(next().c_str(), "%d,%d,%d,%d", &forced.block_n, &forced.num_stages, &forced.num_warps,
                      &forced.via_shared) < 3)
        throw std::runtime_error("--config BLOCK_N,STAGES,WARPS[,VIA_SHARED] (e.g. 64,3,4,0)");
      pinned = true;
    } else if (a == "--shape") {
      fp8_decode::Problem p;
      if (std::sscanf(next().c_str(), "%ld,%ld,%ld,%ld,%ld", &p.B, &p.S_max, &p.Hq, &p.Hkv, &p.D) != 5)
        throw std::runtime_error("--shape B,S,HQ,HKV,D");
      cases.push_back({p, {}, ""});
    } else throw std::runtime_error("unknown argument " + a);
  }
  if (cases.empty()) cases = default_cases();
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  static auto fill = tl::kernel("flush_l2", [](tl::ptr<tl::i32> x, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(x + i, tl::zeros<tl::i32>({BLOCK}), i < n);
  });
  const int64_t n = dev.kind() == tl::device_kind::cpu ? (int64_t(1) << 20) : (int64_t(1) << 26);  // 256 MiB
  auto scratch = dev.alloc<tl::i32>(size_t(n));
  auto flush = [&] { fill[tl::grid(tl::cdiv(n, 4096))].with({.num_warps = 4})(scratch, int(n), 4096); };
  nlohmann::json all = nlohmann::json::array();
  const bool fnuz = fp8_decode::fp8_format_for(dev.target()) == "e4m3fnuz";
  for (const Case& c : cases) {
    auto r = fnuz ? measure<tl::DType::f8e4m3fnuz, tl::f8e4m3fnuz>(dev, c, pinned ? &forced : nullptr, split, repeats, flush)
                  : measure<tl::DType::f8e4m3fn, tl::f8e4m3fn>(dev, c, pinned ? &forced : nullptr, split, repeats, flush);
    fmt::print("{}\n", r.dump());
    std::fflush(stdout);
    all.push_back(r);
  }
  if (!out.empty()) std::ofstream(out) << all.dump(1) << "\n";
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-fp8-decode: {}\n", e.what());
  return 2;
}

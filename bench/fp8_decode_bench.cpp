// The tl side of the FP8 decode attention benchmark (bench/run_fp8_decode_bench.py runs
// it beside the anchor's Triton kernel and torch's bf16 SDPA): samples/fp8_decode on the
// issue's shapes and a ragged batch, each with the configuration and split count the
// sample chooses for the device (or --config / --split, each as often as wanted: every
// pair is timed on one upload of the inputs; --merge forces the merge into or out of the
// partial kernel). Each result is checked first against the double-precision host
// reference (samples/fp8_decode/reference.hpp, a sample of the batches), then timed as
// triton.testing.do_bench times the Triton kernel: the L2 flushed before every call (a
// 256 MiB read, or with --flush write do_bench's 256 MiB write), device events around the
// call alone, the median of --repeats; the partial kernel alone too (us_partial). Prints
// one JSON object a line, and all of them to --json.
//
//   tl-bench-fp8-decode [--json out.json] [--repeats 200] [--flush read|write] [--merge auto|on|off]
//                       [--config BLOCK_N,STAGES,WARPS[,VIA_SHARED[,DOT_F16]] ...] [--split N ...]
//                       [--shape B,S,HQ,HKV,D ...]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
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

// One configuration (forced, or the sample's choice when null) and split count (0: the
// sample's) on a case's inputs on the device.
struct Variant {
  const fp8_decode::Config* config;
  int split;
};

// Every variant of one case, on the same inputs (made and uploaded once: at the larger
// shapes that is most of a variant's time).
template <tl::DType F, class F8>
std::vector<nlohmann::json> measure(tl::device dev, const Case& cs, const std::vector<Variant>& variants, int repeats,
                                    const std::function<void()>& flush, const std::string& flush_mode,
                                    const std::string& merge_mode) {
  const fp8_decode::Problem& p = cs.p;
  std::vector<int32_t> lens = cs.lens.empty() ? std::vector<int32_t>(size_t(p.B), int32_t(p.S_max)) : cs.lens;
  auto in = fp8_decode::random_inputs<F>(p, lens, 1234 + uint64_t(p.B * 7 + p.S_max));
  auto Q = dev.alloc<tl::bf16>(in.q.size());
  auto K = dev.alloc<F8>(in.k.size()), V = dev.alloc<F8>(in.v.size());
  auto KS = dev.alloc<tl::f32>(in.k_scale.size()), VS = dev.alloc<tl::f32>(in.v_scale.size());
  auto O = dev.alloc<tl::bf16>(in.q.size());
  Q.upload(in.q), K.upload(in.k), V.upload(in.v), KS.upload(in.k_scale), VS.upload(in.v_scale);
  std::vector<int64_t> batches;
  for (int64_t b = 0; b < p.B; b += std::max<int64_t>(1, p.B / 4)) batches.push_back(b);
  if (batches.back() != p.B - 1) batches.push_back(p.B - 1);
  std::vector<nlohmann::json> rows;
  for (const Variant& v : variants) {
    auto w = fp8_decode::make_workspace<F8>(dev, p, lens, v.config, v.split);
    if (merge_mode == "on") w.merge = fp8_decode::split_tile(w.split);
    if (merge_mode == "off") w.merge = 0;
    O.upload(std::vector<tl::bfloat16>(in.q.size(), tl::to_bf16(std::nan(""))));
    auto go = [&] { fp8_decode::decode<F8>(w, Q, K, V, KS, VS, O); };
    go();
    dev.synchronize();
    auto e = fp8_decode::check(p, in, O.download(), batches);
    double us = 1e3 * tlbench::time_ms_flushed(dev, go, flush, repeats);
    // The partial kernel alone: what the combine launch adds is the difference (none where
    // the partial kernel merges).
    double us_partial = 1e3 * tlbench::time_ms_flushed(
                                  dev, [&] { fp8_decode::decode_partial<F8>(w, Q, K, V, KS, VS, O); }, flush, repeats);
    auto meta = nlohmann::json::parse(fp8_decode::compile_partial<F8>(w.config, dev, p, w.merge));
    rows.push_back({{"impl", "tl"},
                    {"B", p.B}, {"S", p.S_max}, {"Hq", p.Hq}, {"Hkv", p.Hkv}, {"D", p.D},
                    {"lens", lens}, {"name", cs.name},
                    {"block_n", w.config.block_n}, {"num_stages", w.config.num_stages}, {"num_warps", w.config.num_warps},
                    {"via_shared", w.config.via_shared}, {"dot_f16", w.config.dot_f16},
                    {"split", w.split}, {"merge", w.merge}, {"us", us}, {"us_partial", us_partial}, {"bytes", fp8_decode::floor_bytes(p, lens)},
                    {"ok", e.ok()}, {"err_over_bound", e.worst}, {"rel_err", e.rel_norm},
                    {"report", meta["report"]}, {"device", dev.name()}, {"target", dev.target()}, {"flush", flush_mode}});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 200;
  std::string flush_mode = "read";
  std::string merge_mode = "auto";  // the sample's choice; "on" / "off" force the merge in or out of the partial kernel
  std::vector<fp8_decode::Config> forced;  // empty: the sample's choice
  std::vector<int> splits;                 // empty: the sample's
  std::vector<Case> cases;
  samples::Args args(argc, argv);
  while (args.next()) {
    const std::string& a = args.option();
    auto next = [&] { return args.value(); };
    if (a == "--json") out = next();
    else if (a == "--repeats") repeats = std::stoi(next());
    else if (a == "--split") splits.push_back(std::stoi(next()));
    else if (a == "--flush") flush_mode = next();
    else if (a == "--merge") merge_mode = next();
    else if (a == "--config") {
      fp8_decode::Config c;
      if (std::sscanf(next().c_str(), "%d,%d,%d,%d,%d", &c.block_n, &c.num_stages, &c.num_warps, &c.via_shared,
                      &c.dot_f16) < 3)
        throw std::runtime_error("--config BLOCK_N,STAGES,WARPS[,VIA_SHARED[,DOT_F16]] (e.g. 64,3,4,1,1)");
      forced.push_back(c);
    } else if (a == "--shape") {
      fp8_decode::Problem p;
      if (std::sscanf(next().c_str(), "%ld,%ld,%ld,%ld,%ld", &p.B, &p.S_max, &p.Hq, &p.Hkv, &p.D) != 5)
        throw std::runtime_error("--shape B,S,HQ,HKV,D");
      cases.push_back({p, {}, ""});
    } else throw std::runtime_error("unknown argument " + a);
  }
  if (merge_mode != "auto" && merge_mode != "on" && merge_mode != "off") throw std::runtime_error("--merge auto|on|off");
  if (cases.empty()) cases = default_cases();
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  // The L2 flush before each timed call (tlbench::L2Flush): read by default, do_bench's
  // write with --flush write.
  tlbench::L2Flush l2(dev, flush_mode);
  std::function<void()> flush = [&] { l2(); };
  nlohmann::json all = nlohmann::json::array();
  const bool fnuz = fp8_decode::fp8_format_for(dev.target()) == "e4m3fnuz";
  // Every --config with every --split (a sweep on one set of inputs a case).
  std::vector<Variant> variants;
  if (splits.empty()) splits.push_back(0);
  for (size_t i = 0; i < std::max<size_t>(1, forced.size()); ++i)
    for (int sp : splits) variants.push_back({forced.empty() ? nullptr : &forced[i], sp});
  for (const Case& c : cases) {
    auto rows = fnuz ? measure<tl::DType::f8e4m3fnuz, tl::f8e4m3fnuz>(dev, c, variants, repeats, flush, flush_mode, merge_mode)
                     : measure<tl::DType::f8e4m3fn, tl::f8e4m3fn>(dev, c, variants, repeats, flush, flush_mode, merge_mode);
    for (const auto& r : rows) {
      fmt::print("{}\n", r.dump());
      all.push_back(r);
    }
    std::fflush(stdout);
  }
  if (!out.empty()) std::ofstream(out) << all.dump(1) << "\n";
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-fp8-decode: {}\n", e.what());
  return 2;
}

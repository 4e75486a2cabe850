// FP8 split-K decode attention on the detected device (samples/fp8_decode/decode.hpp),
// checked against the double-precision reference (reference.hpp), timed (median of
// batches), with its bandwidth and the share of the floor: the bytes of K, V, their
// scales, Q and the output over the device's copy bandwidth (a tl copy kernel's, measured
// here). On a GPU the copy is of 256 MiB, past every cache: the memory's bandwidth. On the
// CPU the problems are small and their inputs in cache when the decode runs, so the copy
// is of each problem's own bytes, in cache the same way: the floor is what streaming those
// bytes once takes on this CPU.
//
//   tl-sample-fp8_decode [--b B --s S_MAX --hq HQ --hkv HKV --d D] [--lens L0,L1,...]
//                        [--block-n 64 --stages 2 --warps 1 --via-shared 1] [--split N] [--repeats 5]
//                        [--device cpu|hip|cuda]
//   tl-sample-fp8_decode --target gfx942 --report   # the guardrail's verdicts, the slicing,
//                                                   # both kernels' resource reports (the
//                                                   # combine's where it runs); nothing runs
//
// Without a shape: small ragged problems on the CPU (the main job); on a GPU the issue's
// four shapes and a ragged batch. --block-n/--stages/--warps/--via-shared replace the chosen
// configuration (the guardrail is then not asked), --split the split count.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/cli.hpp"
#include "samples/fp8_decode/decode.hpp"
#include "samples/fp8_decode/reference.hpp"

namespace {

struct Case {
  fp8_decode::Problem p;
  std::vector<int32_t> lens;  // empty: every batch at S_max
};

struct Args {
  fp8_decode::Problem p{0, 0, 0, 0, 128};
  std::vector<int32_t> lens;
  std::string target, device;
  bool report = false;
  int repeats = 5, split = 0;
  fp8_decode::Config over{0, 0, 0, -1};  // non-zero (via_shared: non-negative) fields replace the chosen ones
};

std::vector<int32_t> parse_list(const std::string& s) {
  std::vector<int32_t> v;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    v.push_back(std::stoi(s.substr(i, j - i)));
    i = j + 1;
  }
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  samples::Args args(argc, argv);
  while (args.next()) {
    const std::string& s = args.option();
    auto next = [&] { return args.value(); };
    if (s == "--b") a.p.B = std::stoll(next());
    else if (s == "--s") a.p.S_max = std::stoll(next());
    else if (s == "--hq") a.p.Hq = std::stoll(next());
    else if (s == "--hkv") a.p.Hkv = std::stoll(next());
    else if (s == "--d") a.p.D = std::stoll(next());
    else if (s == "--lens") a.lens = parse_list(next());
    else if (s == "--target") a.target = next();
    else if (s == "--report") a.report = true;
    else if (s == "--device") a.device = next();
    else if (s == "--repeats") a.repeats = std::stoi(next());
    else if (s == "--split") a.split = std::stoi(next());
    else if (s == "--block-n") a.over.block_n = std::stoi(next());
    else if (s == "--stages") a.over.num_stages = std::stoi(next());
    else if (s == "--warps") a.over.num_warps = std::stoi(next());
    else if (s == "--via-shared") a.over.via_shared = std::stoi(next());
    else throw std::runtime_error("unknown argument " + s);
  }
  if (a.repeats < 1) throw std::runtime_error("--repeats must be at least 1");
  return a;
}

bool overridden(const Args& a) {
  return a.over.block_n || a.over.num_stages || a.over.num_warps || a.over.via_shared >= 0;
}

fp8_decode::Config with_overrides(const Args& a, fp8_decode::Config c) {
  if (a.over.block_n) c.block_n = a.over.block_n;
  if (a.over.num_stages) c.num_stages = a.over.num_stages;
  if (a.over.num_warps) c.num_warps = a.over.num_warps;
  if (a.over.via_shared >= 0) c.via_shared = a.over.via_shared;
  return c;
}

void print_report(const nlohmann::json& j) {
  for (const char* k : {"vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "scratch_bytes", "occupancy",
                        "regs", "spill_store_bytes", "spill_load_bytes", "local_bytes", "static_shared_bytes",
                        "dynamic_shared_bytes"})
    if (j["report"].contains(k)) fmt::print("  {}: {}\n", k, j["report"][k].get<int64_t>());
  for (auto& r : j.value("remarks", nlohmann::json::array())) fmt::print("  {}\n", r.get<std::string>());
  fmt::print("  compile_ms: {:.1f}\n", j.value("compile_ms", 0.0));
}

// The guardrail's verdicts over the target's candidates, then both kernels' reports.
template <class F8> void report(const Args& a, const fp8_decode::Problem& p) {
  // Compute units of the target's typical part: MI300X 304, MI355X 256, H100 132.
  int cus = a.target.rfind("gfx950", 0) == 0 ? 256 : fp8_decode::is_amd(a.target) ? 304 : 132;
  std::vector<fp8_decode::Config> list = fp8_decode::candidates(a.target, p.D);
  if (overridden(a)) list = {with_overrides(a, list.front())};
  auto [c, verdicts] = fp8_decode::guarded_choice<F8>(list, a.target, p);
  fmt::print("problem: {} G={} ({})\ntarget: {}\n", p.str(), p.G(), fp8_decode::fp8_format_for(a.target), a.target);
  for (const auto& v : verdicts) {
    const nlohmann::json& r = v.report;
    std::string regs = r.is_null()            ? std::string("no code")
                       : r.contains("vgpr") ? fmt::format("{} VGPRs", r["vgpr"].get<int64_t>())
                       : r.contains("regs") ? fmt::format("{} registers", r["regs"].get<int64_t>())
                                            : std::string("no register report");
    fmt::print("guardrail: {}: {}: {}\n", v.config.str(), regs, v.refused.empty() ? "chosen" : "refused (" + v.refused + ")");
  }
  const fp8_decode::Slicing sl = fp8_decode::choose_slicing(p, cus, c, {}, a.split);
  const int merge = fp8_decode::merges_in_partial(a.target, sl.split) ? fp8_decode::split_tile(sl.split) : 0;
  fmt::print("split: {} (of {} compute units), {} tokens a slice, {}\n", sl.split, cus, sl.chunk,
             merge ? "merged by the partial kernel" : "merged by the combine kernel");
  fmt::print("kernel fp8_decode_partial, BLOCK_M={} {}:\n", fp8_decode::block_m_for(p.G()), c.str());
  print_report(nlohmann::json::parse(fp8_decode::compile_partial<F8>(c, a.target, p, merge)));
  fmt::print("kernel fp8_decode_combine:{}\n", merge ? " not launched" : "");
  if (!merge) print_report(nlohmann::json::parse(fp8_decode::compile_combine(a.target, p, sl.split)));
  fmt::print("\n");
}

// Device-to-device copy bandwidth (bytes read + written per second) of a tl copy kernel
// over `bytes` (read and written, rounded up to whole blocks): the floor's denominator.
double copy_gbps(tl::device dev, int64_t bytes) {
  static auto copy = tl::kernel("copy", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> y, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(y + i, tl::load(x + i, i < n), i < n);
  });
  const int64_t n = std::max<int64_t>(1, tl::cdiv(bytes / 2, int64_t(4 * 4096))) * 4096;
  auto x = dev.alloc<tl::i32>(size_t(n)), y = dev.alloc<tl::i32>(size_t(n));
  auto go = [&] { copy[tl::grid(tl::cdiv(n, 4096))].with({.num_warps = 4})(x, y, int(n), 4096); };
  go();
  dev.synchronize();
  std::vector<double> t;
  // Enough copies a repeat to time (a small copy takes microseconds).
  const int inner = int(std::clamp<int64_t>((int64_t(1) << 28) / (8 * n), 5, 1000));
  for (int r = 0; r < 7; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) go();
    dev.synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner);
  }
  std::sort(t.begin(), t.end());
  return 2.0 * 4.0 * double(n) / t[t.size() / 2] / 1e9;
}

// A bandwidth with the digits that mean something at its size (a CPU's decode is well
// under 1 GB/s; "0 GB/s" said nothing).
std::string gbps(double v) { return v < 10 ? fmt::format("{:.2f}", v) : v < 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.0f}", v); }

template <tl::DType F, class F8> bool run(const Args& a, tl::device dev, const Case& cs, double copy) {
  const fp8_decode::Problem& p = cs.p;
  std::vector<int32_t> lens = cs.lens.empty() ? std::vector<int32_t>(size_t(p.B), int32_t(p.S_max)) : cs.lens;
  fp8_decode::check_problem(p);
  fp8_decode::check_seq_lens(p, lens);
  auto in = fp8_decode::random_inputs<F>(p, lens, 1234 + uint64_t(p.B * 7 + p.S_max));
  fp8_decode::Config forced;
  if (overridden(a)) forced = with_overrides(a, fp8_decode::candidates(dev.target(), p.D).front());
  auto w = fp8_decode::make_workspace<F8>(dev, p, lens, overridden(a) ? &forced : nullptr, a.split);
  auto Q = dev.alloc<tl::bf16>(in.q.size());
  auto K = dev.alloc<F8>(in.k.size()), V = dev.alloc<F8>(in.v.size());
  auto KS = dev.alloc<tl::f32>(in.k_scale.size()), VS = dev.alloc<tl::f32>(in.v_scale.size());
  auto O = dev.alloc<tl::bf16>(in.q.size());
  Q.upload(in.q), K.upload(in.k), V.upload(in.v), KS.upload(in.k_scale), VS.upload(in.v_scale);
  O.upload(std::vector<tl::bfloat16>(in.q.size(), tl::to_bf16(std::nan(""))));  // poisoned
  auto go = [&] { fp8_decode::decode<F8>(w, Q, K, V, KS, VS, O); };
  auto t0 = std::chrono::steady_clock::now();
  go();
  dev.synchronize();
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Large problems: the reference checks the first, the last and every 8th batch.
  std::vector<int64_t> batches;
  for (int64_t b = 0; b < p.B; ++b)
    if (p.B * p.S_max * p.Hq <= (int64_t(1) << 22) || b % 8 == 0 || b == p.B - 1) batches.push_back(b);
  auto e = fp8_decode::check(p, in, O.download(), batches);
  std::vector<double> t;
  const int inner = dev.kind() == tl::device_kind::cpu ? 1 : 20;
  for (int r = 0; r < a.repeats; ++r) {
    auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < inner; ++i) go();
    dev.synchronize();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count() / inner);
  }
  std::sort(t.begin(), t.end());
  const double us = t[t.size() / 2];
  const double bytes = fp8_decode::floor_bytes(p, lens);
  // The CPU's floor: a copy of these very bytes (see the top of the file).
  if (dev.kind() == tl::device_kind::cpu) copy = copy_gbps(dev, int64_t(bytes));
  const double floor_us = bytes / (copy * 1e3);
  fmt::print("{:>3} {:>6} {:>3} {:>3} {:>4} {:>5} {:<34} {:9.1f} us {:>7} GB/s {:5.1f}% of floor ({:.1f} us at {} GB/s)  "
             "(first {:.0f} ms)  err/bound {:.2f} rel {:.1e}  {}\n",
             p.B, p.S_max, p.Hq, p.Hkv, p.D, w.split, w.config.str(), us, gbps(bytes / us / 1e3), 100 * floor_us / us,
             floor_us, gbps(copy), first_ms, e.worst, e.rel_norm, e.ok() ? "ok" : "WRONG");
  if (!e.ok()) fmt::print("  {} bad and {} NaN of {}; the first at {}\n", e.bad, e.nan, e.checked, e.first);
  return e.ok();
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::vector<Case> cases;
  if (a.p.B || a.p.S_max || a.p.Hq || a.p.Hkv) {
    if (!(a.p.B && a.p.S_max && a.p.Hq && a.p.Hkv)) throw std::runtime_error("give all of --b, --s, --hq and --hkv");
    cases.push_back({a.p, a.lens});
  } else if (!a.lens.empty()) {
    throw std::runtime_error("--lens needs a shape (--b ...)");
  }
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx942, gfx950, sm_90, cpu)");
    if (cases.empty())
      for (int64_t d : {64, 128, 256}) cases.push_back({{16, 8192, 64, 8, d}, {}});
    for (const Case& c : cases) {
      if (fp8_decode::fp8_format_for(a.target) == "e4m3fnuz") report<tl::f8e4m3fnuz>(a, c.p);
      else report<tl::f8e4m3fn>(a, c.p);
    }
    return 0;
  }
  samples::select_device(a.device);
  tl::device dev = tl::default_device();
  if (cases.empty()) {
    if (dev.kind() == tl::device_kind::cpu) {
      // Seconds on a CPU: ragged lengths (0, 1, not a multiple of BLOCK_N), GQA 1 to 16.
      cases = {{{3, 700, 16, 2, 128}, {700, 1, 333}}, {{2, 300, 16, 1, 64}, {0, 257}}, {{1, 200, 4, 4, 256}, {}}};
    } else {
      cases = {{{1, 32768, 64, 8, 128}, {}}, {{16, 8192, 64, 8, 128}, {}}, {{16, 16384, 32, 8, 128}, {}},
               {{64, 4096, 32, 8, 128}, {}}};
      std::vector<int32_t> ragged;  // 16 sequences of 0 to 16384 tokens
      for (int i = 0; i < 16; ++i) ragged.push_back(int32_t((i * 7919) % 16385));
      cases.push_back({{16, 16384, 32, 8, 128}, ragged});
    }
  }
  const std::string f8 = fp8_decode::fp8_format_for(dev.target());
  const bool cpu = dev.kind() == tl::device_kind::cpu;
  const double copy = cpu ? 0 : copy_gbps(dev, int64_t(1) << 29);
  fmt::print("FP8 ({}) split-K decode attention on {} ({}), {} compute units, {}\n", f8, dev.name(), dev.target(),
             dev.compute_units(),
             cpu ? "floor: each problem's bytes copied by a tl kernel on this CPU, in cache as the decode's inputs are"
                 : fmt::format("copy {:.0f} GB/s", copy));
  fmt::print("{:>3} {:>6} {:>3} {:>3} {:>4} {:>5} {:<34}\n", "B", "S_max", "Hq", "Hkv", "D", "split", "config");
  bool ok = true;
  for (const Case& c : cases)
    ok &= f8 == "e4m3fnuz" ? run<tl::DType::f8e4m3fnuz, tl::f8e4m3fnuz>(a, dev, c, copy)
                           : run<tl::DType::f8e4m3fn, tl::f8e4m3fn>(a, dev, c, copy);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-fp8_decode: {}\n", e.what());
  return 2;
}

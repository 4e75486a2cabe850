// Flash attention on the detected device (samples/attention/attention.hpp): the forward and
// the backward of each problem, with the configurations tl::autotune picks for it
// (samples/attention/tune.hpp), checked against the double reference
// (samples/attention/reference.hpp) and timed (median of repeats).
//
//   tl-sample-attention [--b 1 --h 4 --hkv 2 --sq 128 --sk 128 --d 64 --causal 0|1]
//                       [--dtype bf16|f16] [--repeats 5] [--device cpu|hip|cuda]
//   tl-sample-attention --target gfx942 --report   # every candidate's compile report and
//                                                  # why the rules drop it, the first kept
//                                                  # one's remarks; nothing runs
//
// Without a shape: small problems on the CPU (the main job: causal and not, grouped heads,
// S_q != S_k), the benchmark's shapes on a GPU (bench/run_attention_sample_bench.py has them
// beside Triton and torch).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/attention/attention.hpp"
#include "samples/attention/reference.hpp"
#include "samples/attention/tune.hpp"
#include "samples/cli.hpp"

namespace {

struct Args {
  attention::Problem p;
  bool shape_given = false;
  std::string dtype = "bf16", target, device;
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
    if (s == "--b") a.p.B = num();
    else if (s == "--h") a.p.H = num();
    else if (s == "--hkv") a.p.Hkv = num();
    else if (s == "--sq") a.p.S_q = num();
    else if (s == "--sk") a.p.S_k = num();
    else if (s == "--d") a.p.D = num();
    else if (s == "--causal") a.p.causal = num() != 0;
    else if (s == "--dtype") a.dtype = it.value();
    else if (s == "--target") a.target = it.value();
    else if (s == "--report") a.report = true;
    else if (s == "--device") a.device = it.value();
    else if (s == "--repeats") a.repeats = std::stoi(it.value());
    else throw std::runtime_error("unknown argument " + s);
  }
  if (a.dtype != "bf16" && a.dtype != "f16") throw std::runtime_error("--dtype must be bf16 or f16");
  if (a.repeats < 1) throw std::runtime_error("--repeats must be at least 1");
  if (a.shape_given) attention::check(a.p);
  return a;
}

attention::Problem problem(int64_t B, int64_t H, int64_t Hkv, int64_t S_q, int64_t S_k, int64_t D, bool causal) {
  attention::Problem p;
  p.B = B, p.H = H, p.Hkv = Hkv, p.S_q = S_q, p.S_k = S_k, p.D = D, p.causal = causal;
  return p;
}

// Sizes whose reference (of the first key head's group) takes seconds on the host; the
// benchmark's large shapes are in bench/run_attention_sample_bench.py.
std::vector<attention::Problem> gpu_problems() {
  return {problem(2, 8, 2, 1024, 1024, 128, true), problem(1, 8, 2, 777, 1500, 64, false)};
}

std::vector<attention::Problem> cpu_problems() {
  return {problem(1, 4, 2, 128, 128, 64, false), problem(1, 4, 2, 128, 128, 64, true),
          problem(1, 8, 2, 100, 177, 128, true)};
}

// ---- --report ----------------------------------------------------------------------------

void print_table(const tl::tune_table& t) {
  fmt::print("{} ({}): {} candidates\n", t.name, t.arch, t.rows.size());
  int kept = 0;
  for (const auto& r : t.rows) {
    if (r.dropped.find("not a configuration for") != std::string::npos) continue;  // another target's
    std::string rep;
    for (const auto& rp : r.reports)
      for (const char* k : {"vgpr", "agpr", "spill_vgpr", "lds_bytes", "occupancy", "regs", "shared_bytes"})
        if (rp.count(k)) rep += fmt::format(" {}={}", k, rp.at(k));
    fmt::print("  {:<48}{}  {}\n", r.config, rep, r.dropped.empty() ? "kept" : "dropped: " + r.dropped);
    kept += r.dropped.empty();
  }
  fmt::print("  {} kept\n", kept);
}

// The first configuration the rules keep, in the candidates' order (the order of preference
// when nothing is timed), or nullptr.
std::optional<attention::Config> first_kept(const tl::tune_table& t, const std::vector<attention::Config>& list) {
  for (size_t i = 0; i < t.rows.size(); ++i)
    if (t.rows[i].dropped.empty()) return list[i];
  return std::nullopt;
}

void print_meta(const std::string& what, const attention::Config& c, const std::string& meta) {
  auto j = nlohmann::json::parse(meta);
  fmt::print("chosen {}: {} ({})\n", what, attention::str(c), j.value("target_full", ""));
  for (auto& [k, v] : j["report"].items())
    if (v.is_number_integer()) fmt::print("  {}: {}\n", k, v.get<int64_t>());
  for (auto& r : j.value("remarks", nlohmann::json::array())) fmt::print("  {}\n", r.get<std::string>());
}

template <class E> void report(const Args& a, const attention::Problem& p) {
  using H = attention::host_t<E>;
  auto* x = reinterpret_cast<H*>(uintptr_t(1) << 20);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 21);
  const std::string& T = a.target;
  fmt::print("== {} {} on {}\n", p.str(), a.dtype, T);
    const int S_q = int(p.S_q), S_k = int(p.S_k), G = int(p.G()), D = int(p.D), causal = int(p.causal);
  const float scale = float(p.scale());

  auto fwd = attention::fwd_tuner<E>().prune(T, x, x, x, x, f, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D, p.causal, p.sm_scale);
  print_table(fwd);
  if (auto c = first_kept(fwd, attention::candidates(attention::Kernel::fwd)))
    print_meta("forward", *c,
               attention::fwd_kernel<E>().compile(T, attention::options_of(*c), x, x, x, x, f, S_q, S_k, G, scale,
                                                  c->block_m, c->block_n, D, causal, c->num_stages));
  auto dkdv = attention::dkdv_tuner<E>().prune(T, x, x, x, x, f, x, x, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D, p.causal,
                                               p.sm_scale);
  print_table(dkdv);
  if (auto c = first_kept(dkdv, attention::candidates(attention::Kernel::dkdv)))
    print_meta("dK/dV", *c,
               attention::bwd_dkdv_kernel<E>().compile(T, attention::options_of(*c), x, x, x, x, f, x, x, S_q, S_k,
                                                       G, scale, c->block_m, c->block_n, D, causal, c->num_stages));
  auto dq = attention::dq_tuner<E>().prune(T, x, x, x, x, f, x, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D, p.causal,
                                           p.sm_scale);
  print_table(dq);
  if (auto c = first_kept(dq, attention::candidates(attention::Kernel::dq)))
    print_meta("dQ", *c,
               attention::bwd_dq_kernel<E>().compile(T, attention::options_of(*c), x, x, x, x, f, x, S_q, S_k, G,
                                                     scale, c->block_m, c->block_n, D, causal, c->num_stages));
  fmt::print("\n");
}

// ---- runs ---------------------------------------------------------------------------------

bool print_check(const char* what, const attention::Errors& e) {
  fmt::print(" {} {}", what, e.ok() ? fmt::format("ok({:.2f})", e.worst) : fmt::format("WRONG({}/{})", e.bad + e.nan, e.checked));
  return e.ok();
}

template <class E> bool run(const Args& a, tl::device dev, const attention::Problem& p) {
  using H = attention::host_t<E>;
  auto in = attention::random_inputs<H>(p, 42 + uint64_t(p.S_q + p.S_k * 3 + p.D * 7 + p.causal));
  auto up = [&](const std::vector<H>& h) {
    auto b = dev.alloc<E>(h.size());
    b.upload(h);
    return b;
  };
  auto Q = up(in.q), K = up(in.k), V = up(in.v), DO = up(in.d_o);
  auto O = dev.alloc<E>(size_t(p.q_elems())), DQ = dev.alloc<E>(size_t(p.q_elems()));
  auto DK = dev.alloc<E>(size_t(p.kv_elems())), DV = dev.alloc<E>(size_t(p.kv_elems()));
  auto LSE = dev.alloc<tl::ty::f32>(size_t(p.rows())), Delta = dev.alloc<tl::ty::f32>(size_t(p.scratch_elems()));
  auto fwd = [&] { attention::forward_tuned<E>(p, Q, K, V, O, LSE); };
  auto bwd = [&] { attention::backward_tuned<E>(p, Q, K, V, O, DO, LSE, Delta, DQ, DK, DV); };
  fwd(), bwd();  // tunes (or finds the decision), compiles
  dev.synchronize();
  // The reference on every key head on the CPU, on the first one's group on a GPU.
  std::vector<int64_t> groups;
  if (dev.kind() != tl::device_kind::cpu) groups = {0};
  auto want = attention::reference(p, in, true, groups);
  fmt::print("{:<52} {}", p.str(), a.dtype);
  bool ok = print_check("O", attention::compare(O.download(), want.o, want.o_bound));
  ok &= print_check("LSE", attention::compare(LSE.download(), want.lse, want.lse_bound));
  ok &= print_check("dQ", attention::compare(DQ.download(), want.dq, want.dq_bound));
  ok &= print_check("dK", attention::compare(DK.download(), want.dk, want.dk_bound));
  ok &= print_check("dV", attention::compare(DV.download(), want.dv, want.dv_bound));
  const double fwd_ms = samples::median_ms(dev, a.repeats, fwd), bwd_ms = samples::median_ms(dev, a.repeats, bwd);
  const auto& fc = attention::fwd_tuner<E>().best_on(dev, Q, K, V, O, LSE, p.B, p.H, p.Hkv, p.S_q, p.S_k, p.D,
                                                     p.causal, p.sm_scale);
  fmt::print("\n  forward {:.3f} ms {:.1f} TFLOP/s ({})   backward {:.3f} ms {:.1f} TFLOP/s\n", fwd_ms,
             p.fwd_flops() / fwd_ms / 1e9, attention::str(fc), bwd_ms, 2.5 * p.fwd_flops() / bwd_ms / 1e9);
  std::fflush(stdout);
  return ok;
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx90a, gfx942, gfx950, sm_90, cpu)");
    std::vector<attention::Problem> ps = a.shape_given ? std::vector{a.p}
                                                       : std::vector{problem(4, 8, 8, 4096, 4096, 128, false),
                                                                     problem(4, 8, 8, 4096, 4096, 128, true),
                                                                     problem(4, 16, 16, 2048, 2048, 64, false)};
    for (const auto& p : ps) a.dtype == "f16" ? report<tl::ty::f16>(a, p) : report<tl::ty::bf16>(a, p);
    return 0;
  }
  samples::select_device(a.device);
  tl::device dev = tl::default_device();
  std::vector<attention::Problem> ps;
  if (a.shape_given) ps = {a.p};
  else ps = dev.kind() == tl::device_kind::cpu ? cpu_problems() : gpu_problems();
  fmt::print("Attention on {} ({}), configurations tuned per problem (TL_PRINT_AUTOTUNING=1 prints the tables)\n",
             dev.name(), dev.target());
  bool ok = true;
  for (const auto& p : ps) ok &= a.dtype == "f16" ? run<tl::ty::f16>(a, dev, p) : run<tl::ty::bf16>(a, dev, p);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-attention: {}\n", e.what());
  return 2;
}

// Differential testing of tl with random tile programs (issue 45, "No silent wrong
// result"): for each seed, generate a program (generator.hpp), trace it, evaluate it with
// the plain reference (reference.hpp), run it through the real launch path on the CPU
// (and on a GPU with --device cuda|hip) with poisoned outputs, compare every output
// element, and cross-compile some programs for gfx90a, gfx942, gfx950 and sm_90.
//
//   tl-fuzz-differential                          the bounded CI run (ctest fuzz.differential)
//   tl-fuzz-differential --programs 5000 --seed 1000 --compile 200
//   tl-fuzz-differential --device cuda --programs 2000    also on the GPU (bench/fuzz_differential.sh)
//   tl-fuzz-differential --only 1234              one seed: its IR, the comparison in detail
//   tl-fuzz-differential --avoid none             generate the constructs of open known defects too
//
// A failing seed prints the seed, the IR (f.str()) and the first mismatching element.
// Seeds that once failed are re-run every time: tests/fuzz/regressions/differential_seeds.txt.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/ir/ir.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "fuzz/differential/generator.hpp"
#include "fuzz/differential/numbers.hpp"
#include "fuzz/differential/reference.hpp"
#include "tl/tl.hpp"

using namespace fuzzdiff;
using tl::DType;
namespace ir = tl::ir;

namespace {

// The seed and stage in progress, for a crash (an LLVM fatal error aborts the process):
// the signal handler prints it, so the seed that took the process down is known.
char g_current[256] = "";
void set_current(uint64_t seed, const std::string& stage) {
  std::snprintf(g_current, sizeof g_current, "\nCRASH seed %llu [%s]: re-run with tl-fuzz-differential --only %llu\n",
                (unsigned long long)seed, stage.c_str(), (unsigned long long)seed);
}
void on_crash(int sig) {
  ssize_t ignored = write(2, g_current, strlen(g_current));
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Options {
  int programs = 300;
  uint64_t seed = 1;
  int compile = 24;  // how many of the programs are also cross-compiled
  std::vector<std::string> targets = {"gfx90a", "gfx942", "gfx950", "sm_90"};
  std::vector<std::string> devices = {"cpu"};
  std::string regressions;
  uint32_t avoid = default_avoid();
  bool only = false;
  bool verbose = false;
  double time_limit = 0;  // seconds; 0: none
  int max_failures = 20;
};

// The kernel the launch path traces: every program has this signature, and the seed and
// the avoided defects are its trace-time constants (one specialization per program).
auto fuzz_kernel = tl::kernel("fuzz_differential",
    [](tl::ptr<tl::i8> in_i8, tl::ptr<tl::i16> in_i16, tl::ptr<tl::i32> in_i32, tl::ptr<tl::i64> in_i64,
       tl::ptr<tl::u8> in_u8, tl::ptr<tl::u32> in_u32, tl::ptr<tl::f16> in_f16, tl::ptr<tl::bf16> in_bf16,
       tl::ptr<tl::f32> in_f32, tl::ptr<tl::f64> in_f64, tl::ptr<tl::i8> out_i8, tl::ptr<tl::i16> out_i16,
       tl::ptr<tl::i32> out_i32, tl::ptr<tl::i64> out_i64, tl::ptr<tl::u8> out_u8, tl::ptr<tl::u32> out_u32,
       tl::ptr<tl::f16> out_f16, tl::ptr<tl::bf16> out_bf16, tl::ptr<tl::f32> out_f32, tl::ptr<tl::f64> out_f64,
       tl::ptr<tl::i32> atom32, tl::ptr<tl::i64> atom64, tl::i32 n, tl::i32 s, tl::f32 x, uint64_t seed, uint32_t avoid) {
      KernelArgs a;
      a.in = {in_i8.get(), in_i16.get(), in_i32.get(), in_i64.get(), in_u8.get(), in_u32.get(), in_f16.get(),
              in_bf16.get(), in_f32.get(), in_f64.get()};
      a.out = {out_i8.get(), out_i16.get(), out_i32.get(), out_i64.get(), out_u8.get(), out_u32.get(), out_f16.get(),
               out_bf16.get(), out_f32.get(), out_f64.get()};
      a.atom32 = atom32.get(), a.atom64 = atom64.get(), a.n = n.get(), a.s = s.get(), a.x = x.get();
      Plan p;
      generate(seed, avoid, a, p);
    });

// The same program traced straight into IR (no launch), its arguments declared as the
// launch path declares them (pointers 16-byte aligned, an integer divisible by 16 marked
// so, an integer equal to 1 a constant), for the reference and the cross-compiles.
std::unique_ptr<ir::Function> trace_program(uint64_t seed, uint32_t avoid, Plan& plan, int n, int s) {
  tl::detail::Trace t("fuzz_differential", ir::SrcLoc{__FILE__, unsigned(__LINE__)});
  KernelArgs a;
  auto ptr = [&](DType d, const std::string& name) { return t.add_argument(ir::Type{DType::ptr, d, {}}, name, true); };
  auto scalar = [&](DType d, const char* name, int64_t v) -> ir::Value* {
    ir::Value* arg = t.add_argument(ir::Type{d, d, {}}, name, tl::is_int(d) && v % 16 == 0);
    if (tl::is_int(d) && v == 1) return tl::detail::constant(d, 1.0, 1, std::source_location::current());
    return arg;
  };
  for (size_t k = 0; k < kDataTypes.size(); ++k) a.in[k] = ptr(kDataTypes[k], fmt::format("in_{}", tl::name(kDataTypes[k])));
  for (size_t k = 0; k < kDataTypes.size(); ++k) a.out[k] = ptr(kDataTypes[k], fmt::format("out_{}", tl::name(kDataTypes[k])));
  a.atom32 = ptr(DType::i32, "atom32");
  a.atom64 = ptr(DType::i64, "atom64");
  a.n = scalar(DType::i32, "n", n);
  a.s = scalar(DType::i32, "s", s);
  a.x = scalar(DType::f32, "x", 0);
  generate(seed, avoid, a, plan);
  return t.finish();
}

// The plan's scalars come from the seed before tracing; the first trace tells them.
Plan plan_for(uint64_t seed, uint32_t avoid) {
  Plan p;
  trace_program(seed, avoid, p, 0, 0);
  return p;
}

// --- host data ---
struct HostBuf {
  DType dt;
  std::vector<uint8_t> bytes;
  size_t n() const { return bytes.size() / size_t(tl::byte_width(dt)); }
};

// Inputs mix small values, the dtype's extremes, random bit patterns and (for floats)
// specials: zeros of both signs, infinities, NaN, subnormals, values near the limits.
HostBuf random_input(DType dt, size_t n, std::mt19937_64& rng) {
  HostBuf b{dt, std::vector<uint8_t>(n * size_t(tl::byte_width(dt)))};
  std::uniform_int_distribution<int> pick(0, 99);
  bool specials = pick(rng) < 30;
  for (size_t k = 0; k < n; ++k) {
    int c = pick(rng);
    if (tl::is_int(dt)) {
      int64_t v;
      if (c < 60) v = std::uniform_int_distribution<int64_t>(-20, 20)(rng);
      else if (c < 70) v = int64_t(int_max_u(dt) - uint64_t(c % 3));
      else if (c < 78) v = int_min(dt) + c % 3;
      else v = int64_t(rng());
      write_elem(b.bytes.data(), k, dt, wrap(dt, uint64_t(v)), 0);
    } else {
      double v;
      if (specials && c < 3) v = std::numeric_limits<double>::quiet_NaN();
      else if (specials && c < 6) v = (c % 2 ? 1 : -1) * INFINITY;
      else if (c < 9) v = c % 2 ? 0.0 : -0.0;
      else if (specials && c < 12) v = (c % 2 ? 1 : -1) * fuzzdiff::max_finite(dt) * 0.75;
      else if (specials && c < 14) v = min_normal(dt) * 0.25;  // subnormal
      else if (c < 70) v = std::uniform_real_distribution<double>(-4, 4)(rng);
      else if (c < 85) v = double(std::uniform_int_distribution<int>(-50, 50)(rng)) * 0.5;
      else v = std::uniform_real_distribution<double>(-300, 300)(rng);
      write_elem(b.bytes.data(), k, dt, 0, round_d(v, dt));
    }
  }
  return b;
}

// Outputs start as 0xAB bytes (f32 -1.2e-12, f16 -0.059, ints 0xABAB...): an element the
// kernel should not write must still hold them; one it should write will not by chance.
HostBuf poisoned(DType dt, size_t n) {
  HostBuf b{dt, std::vector<uint8_t>(n * size_t(tl::byte_width(dt)))};
  std::memset(b.bytes.data(), 0xAB, b.bytes.size());
  return b;
}

// All buffers of one run, in kernel argument order: in x 10, out x 10, atom32, atom64.
struct Buffers {
  std::vector<HostBuf> host;
  std::vector<std::string> names;
};
Buffers make_buffers(const Plan& plan, uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 7);
  Buffers b;
  size_t in_n = size_t(plan.grid) * kRegion;
  for (DType d : kDataTypes) b.host.push_back(random_input(d, in_n, rng)), b.names.push_back(fmt::format("in_{}", tl::name(d)));
  for (size_t k = 0; k < kDataTypes.size(); ++k) {
    size_t n = std::max<size_t>(1, size_t(plan.out_slots[k]) * size_t(plan.grid) * kRegion);
    b.host.push_back(poisoned(kDataTypes[k], n));
    b.names.push_back(fmt::format("out_{}", tl::name(kDataTypes[k])));
  }
  for (DType d : {DType::i32, DType::i64}) {
    HostBuf a{d, std::vector<uint8_t>(size_t(kAtomElems) * size_t(tl::byte_width(d)))};
    for (size_t k = 0; k < size_t(kAtomElems); ++k)
      write_elem(a.bytes.data(), k, d, std::uniform_int_distribution<int64_t>(-1000, 1000)(rng), 0);
    b.host.push_back(std::move(a));
    b.names.push_back(d == DType::i32 ? "atom32" : "atom64");
  }
  return b;
}

// --- running on a device through tl::kernel ---
template <class E> auto to_device(const tl::device& dev, const HostBuf& h) {
  auto b = dev.alloc<E>(h.n());
  dev.copy_to_device(b.data(), h.bytes.data(), h.bytes.size());
  return b;
}
template <class E> void from_device(const tl::device& dev, const E& b, HostBuf& h) {
  dev.copy_to_host(h.bytes.data(), b.data(), h.bytes.size());
}

// Launches the program on `dev`; the downloaded buffers replace `bufs`.
void run_on(const tl::device& dev, const Plan& plan, uint64_t seed, uint32_t avoid, std::vector<HostBuf>& bufs) {
  auto& h = bufs;
  auto i8 = to_device<tl::i8>(dev, h[0]); auto i16 = to_device<tl::i16>(dev, h[1]);
  auto i32 = to_device<tl::i32>(dev, h[2]); auto i64 = to_device<tl::i64>(dev, h[3]);
  auto u8 = to_device<tl::u8>(dev, h[4]); auto u32 = to_device<tl::u32>(dev, h[5]);
  auto f16 = to_device<tl::f16>(dev, h[6]); auto bf16 = to_device<tl::bf16>(dev, h[7]);
  auto f32 = to_device<tl::f32>(dev, h[8]); auto f64 = to_device<tl::f64>(dev, h[9]);
  auto oi8 = to_device<tl::i8>(dev, h[10]); auto oi16 = to_device<tl::i16>(dev, h[11]);
  auto oi32 = to_device<tl::i32>(dev, h[12]); auto oi64 = to_device<tl::i64>(dev, h[13]);
  auto ou8 = to_device<tl::u8>(dev, h[14]); auto ou32 = to_device<tl::u32>(dev, h[15]);
  auto of16 = to_device<tl::f16>(dev, h[16]); auto obf16 = to_device<tl::bf16>(dev, h[17]);
  auto of32 = to_device<tl::f32>(dev, h[18]); auto of64 = to_device<tl::f64>(dev, h[19]);
  auto a32 = to_device<tl::i32>(dev, h[20]); auto a64 = to_device<tl::i64>(dev, h[21]);
  tl::launch_options o;
  o.num_warps = plan.num_warps;
  o.bounds_check = dev.kind() == tl::device_kind::cpu;  // an unmasked out-of-bounds access stops the run
  // The reference holds the CPU's + - * to bit-exactness: there each rounds as written
  // (enable_fp_fusion off); GPUs fuse by default, which the reference's bounds allow.
  o.enable_fp_fusion = dev.kind() != tl::device_kind::cpu;
  fuzz_kernel[tl::grid(plan.grid)].with(o).on(dev)(i8, i16, i32, i64, u8, u32, f16, bf16, f32, f64, oi8, oi16, oi32, oi64,
                                                   ou8, ou32, of16, obf16, of32, of64, a32, a64, plan.n, plan.s, plan.x,
                                                   seed, avoid);
  dev.synchronize();
  from_device(dev, oi8, h[10]); from_device(dev, oi16, h[11]); from_device(dev, oi32, h[12]);
  from_device(dev, oi64, h[13]); from_device(dev, ou8, h[14]); from_device(dev, ou32, h[15]);
  from_device(dev, of16, h[16]); from_device(dev, obf16, h[17]); from_device(dev, of32, h[18]);
  from_device(dev, of64, h[19]); from_device(dev, a32, h[20]); from_device(dev, a64, h[21]);
}

// --- comparing ---
struct Mismatch {
  bool found = false;
  std::string what;
};

// Integers exactly; floats within the reference's bound (reference.hpp says what it
// covers: summation order, approximate math, contraction); NaN only for NaN, an infinity
// only for itself; an element the reference never stored keeps its poison bytes.
Mismatch compare(const Buffers& b, const std::vector<HostBuf>& got, const std::vector<RefBuffer>& want, const Plan& plan,
                 size_t first, size_t* checked, size_t* skipped) {
  for (size_t q = first; q < got.size(); ++q) {
    const HostBuf& g = got[q];
    const RefBuffer& w = want[q];
    size_t ew = size_t(tl::byte_width(g.dt));
    for (size_t k = 0; k < g.n(); ++k) {
      auto where = [&] {
        std::string s = fmt::format("{}[{}]", b.names[q], k);
        if (q >= 10 && q < 20) {
          size_t region = k / kRegion;
          s += fmt::format(" (store slot {}, program {}, element {} of the stored tile)", region / size_t(plan.grid),
                           region % size_t(plan.grid), k % kRegion);
        }
        return s;
      };
      if (!w.written[k]) {
        bool poison = true;
        for (size_t byte = 0; byte < ew; ++byte) poison = poison && g.bytes[k * ew + byte] == 0xAB;
        if (!poison)
          return {true, fmt::format("{}: written by the kernel, but the program never stores there", where())};
        continue;
      }
      if (w.unk[k]) { ++*skipped; continue; }
      ++*checked;
      if (tl::is_int(g.dt)) {
        int64_t v = read_int(g.bytes.data(), k, g.dt);
        if (v != w.i[k]) return {true, fmt::format("{}: got {}, want {}", where(), v, w.i[k])};
        continue;
      }
      double v = read_float(g.bytes.data(), k, g.dt), x = w.f[k], e = w.e[k];
      bool ok = std::isnan(x) ? std::isnan(v) : std::isinf(x) && e == 0 ? v == x : std::fabs(v - x) <= e * (1 + 1e-9);
      if (!ok) return {true, fmt::format("{}: got {}, want {} (bound {:g}){}", where(), v, x, e, e == 0 ? ": exact" : "")};
    }
  }
  return {};
}

struct Stats {
  int programs = 0, failures = 0, ill_defined = 0;
  std::map<std::string, int> compiled;
  std::map<std::string, int> ran;
  std::map<std::string, int> features;
  size_t checked = 0, skipped = 0;
};

void report_failure(uint64_t seed, const std::string& stage, const std::string& what, const Options& o, uint32_t avoid) {
  Plan p;
  std::string ir_text;
  try {
    ir_text = trace_program(seed, avoid, p, 0, 0)->str();
  } catch (const std::exception& e) {
    ir_text = std::string("(tracing failed: ") + e.what() + ")";
  }
  fmt::print("\nFAIL seed {} [{}]: {}\n  program: grid {} num_warps {} n {} s {} x {} features: {}\n", seed, stage, what,
             p.grid, p.num_warps, p.n, p.s, p.x, p.summary);
  fmt::print("  re-run: tl-fuzz-differential --only {}{}\n", seed, o.avoid == default_avoid() ? "" : " --avoid none");
  fmt::print("{}\n", ir_text);
}

// One program: trace, evaluate, run on each device, compare, cross-compile.
bool run_seed(uint64_t seed, const Options& o, bool cross, Stats& st) {
  ++st.programs;
  Plan plan;
  std::unique_ptr<ir::Function> f;
  std::string stage = "trace";
  set_current(seed, stage);
  try {
    plan = plan_for(seed, o.avoid);
    f = trace_program(seed, o.avoid, plan, plan.n, plan.s);
    std::istringstream words(plan.summary);
    for (std::string w; words >> w;) ++st.features[w];
    if (o.verbose) fmt::print("seed {}: grid {} warps {} n {} s {} x {} [{}]\n{}\n", seed, plan.grid, plan.num_warps, plan.n,
                              plan.s, plan.x, plan.summary, f->str());

    stage = "reference";
    Buffers bufs = make_buffers(plan, seed);
    std::vector<RefBuffer> mem;
    for (size_t q = 0; q < bufs.host.size(); ++q)
      mem.push_back(RefBuffer::from_host(bufs.host[q].dt, bufs.host[q].bytes.data(), bufs.host[q].n(), q < 10 || q >= 20));
    std::vector<RefArg> args(25);
    for (int q = 0; q < 22; ++q) args[size_t(q)].buffer = q;
    args[22].i = plan.n, args[23].i = plan.s, args[24].f = plan.x;
    for (const std::string& dev_name : o.devices) {
      Profile prof;
      prof.gpu = dev_name != "cpu";
      std::vector<RefBuffer> want = mem;
      try {
        evaluate(*f, args, plan.grid, want, prof);
      } catch (const IllDefined& e) {
        ++st.ill_defined;
        ++st.failures;
        report_failure(seed, "generator", std::string("the program is not well defined: ") + e.what(), o, o.avoid);
        return false;
      }
      stage = "run on " + dev_name;
      set_current(seed, stage);
      tl::device dev = dev_name == "cpu" ? tl::cpu_device() : dev_name == "cuda" ? tl::cuda_device() : tl::hip_device();
      std::vector<HostBuf> got = bufs.host;
      run_on(dev, plan, seed, o.avoid, got);
      ++st.ran[dev_name];
      stage = "compare on " + dev_name;
      Mismatch m = compare(bufs, got, want, plan, 10, &st.checked, &st.skipped);
      if (m.found) {
        ++st.failures;
        report_failure(seed, stage, m.what, o, o.avoid);
        return false;
      }
    }
    if (cross) {
      for (const std::string& target : o.targets) {
        stage = "compile for " + target;
        set_current(seed, stage);
        Plan p2;
        auto g = trace_program(seed, o.avoid, p2, plan.n, plan.s);
        tl::codegen::CompileOptions co;
        co.num_warps = plan.num_warps;
        tl::codegen::compile(*g, tl::codegen::parse_target(target), co);
        ++st.compiled[target];
      }
    }
  } catch (const std::exception& e) {
    ++st.failures;
    report_failure(seed, stage, e.what(), o, o.avoid);
    return false;
  }
  return true;
}

std::vector<uint64_t> read_seeds(const std::string& path) {
  std::vector<uint64_t> seeds;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ss(line);
    uint64_t s;
    if (ss >> s) seeds.push_back(s);
  }
  return seeds;
}

uint32_t parse_avoid(const std::string& v) {
  if (v == "none") return 0;
  if (v == "default") return default_avoid();
  uint32_t a = 0;
  std::istringstream ss(v);
  for (std::string name; std::getline(ss, name, ',');) {
    bool found = false;
    for (const auto& d : known_defects())
      if (name == d.name) a |= d.bit, found = true;
    if (!found) throw std::runtime_error("--avoid: no known defect named " + name);
  }
  return a;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(t);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--programs") o.programs = std::stoi(next());
    else if (a == "--seed") o.seed = std::stoull(next());
    else if (a == "--compile") o.compile = std::stoi(next());
    else if (a == "--targets") o.targets = split(next());
    else if (a == "--device") o.devices = split(next());
    else if (a == "--regressions") o.regressions = next();
    else if (a == "--avoid") o.avoid = parse_avoid(next());
    else if (a == "--only") o.seed = std::stoull(next()), o.programs = 1, o.only = true, o.verbose = true, o.compile = 1;
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--time-limit") o.time_limit = std::stod(next());
    else if (a == "--max-failures") o.max_failures = std::stoi(next());
    else if (a == "--list-defects") {
      for (const auto& d : known_defects()) fmt::print("{}: {}\n", d.name, d.why);
      return 0;
    } else {
      fmt::print(stderr, "unknown argument {}\n", a);
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a crash must not lose the failures reported before it
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_crash);
  // A private cache: every program is a new specialization, and CI must not fill ~/.cache.
  if (!std::getenv("TL_CACHE_DIR")) {
    static char dir[] = "/tmp/tl-fuzz-differential-XXXXXX";
    if (mkdtemp(dir)) setenv("TL_CACHE_DIR", dir, 1);
  }
  // GPU runs compare the CPU too: both against the same reference.
  if (o.devices.size() == 1 && o.devices[0] != "cpu") o.devices.insert(o.devices.begin(), "cpu");
  if (o.avoid != 0) {
    fmt::print("avoiding known open defects:");
    for (const auto& d : known_defects())
      if (o.avoid & d.bit) fmt::print(" {}", d.name);
    fmt::print("\n");
  }

  Stats st;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  int regressions = 0;
  if (!o.regressions.empty() && !o.only) {
    for (uint64_t s : read_seeds(o.regressions)) {
      ++regressions;
      run_seed(s, o, true, st);
    }
  }
  for (int k = 0; k < o.programs; ++k) {
    if (o.time_limit > 0 && elapsed() > o.time_limit) {
      fmt::print("time limit: stopping after {} programs\n", k);
      break;
    }
    if (st.failures >= o.max_failures) break;
    run_seed(o.seed + uint64_t(k), o, k < o.compile, st);
  }
  std::string compiled, ran, features;
  for (auto& [t, n] : st.compiled) compiled += fmt::format(" {}={}", t, n);
  for (auto& [d, n] : st.ran) ran += fmt::format(" {}={}", d, n);
  for (auto& [w, n] : st.features) features += fmt::format(" {}={}", w, n);
  fmt::print("features:{}\n", features);
  fmt::print("fuzz.differential: {} programs ({} regression seeds) in {:.1f} s; ran on{}; compiled for{}; {} elements "
             "compared, {} not predictable; {} failures ({} ill-defined)\n",
             st.programs, regressions, elapsed(), ran, compiled.empty() ? " none" : compiled, st.checked, st.skipped,
             st.failures, st.ill_defined);
  return st.failures == 0 ? 0 : 1;
}

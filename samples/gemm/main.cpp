// GEMM on the detected device: C = A.B in bf16, and FP8 (e4m3) with per-row and
// per-column scales into bf16 (samples/gemm/gemm.hpp), each checked against a
// double-precision reference (samples/gemm/reference.hpp) and timed (median of repeats).
//
//   tl-sample-gemm [--m M --n N --k K] [--dtype bf16|fp8] [--repeats 5] [--device cpu|hip|cuda]
//                  [--block-m 128 --block-n 128 --block-k 64 --group-m 8 --stages 3 --warps 4]
//   tl-sample-gemm --target gfx942 --report     # resource reports and remarks, nothing runs
//
// Without --dtype both run; without a shape, small ones on the CPU (the main job) and
// 4096^3, 8192^3 and a ragged one on a GPU. The --block-* / --stages / --warps options
// replace those fields of the configuration gemm::choose picks.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/cli.hpp"
#include "samples/gemm/gemm.hpp"
#include "samples/gemm/reference.hpp"

namespace {

struct Shape {
  int64_t M, N, K;
};

struct Args {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype, target, device;  // dtype "": both
  bool report = false;
  int repeats = 5;
  gemm::Config over{0, 0, 0, 0, 0, 0};  // non-zero fields replace the chosen ones
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--m") a.m = std::stoll(next());
    else if (s == "--n") a.n = std::stoll(next());
    else if (s == "--k") a.k = std::stoll(next());
    else if (s == "--dtype") a.dtype = next();
    else if (s == "--target") a.target = next();
    else if (s == "--report") a.report = true;
    else if (s == "--device") a.device = next();
    else if (s == "--repeats") a.repeats = std::stoi(next());
    else if (s == "--block-m") a.over.block_m = std::stoi(next());
    else if (s == "--block-n") a.over.block_n = std::stoi(next());
    else if (s == "--block-k") a.over.block_k = std::stoi(next());
    else if (s == "--group-m") a.over.group_m = std::stoi(next());
    else if (s == "--stages") a.over.num_stages = std::stoi(next());
    else if (s == "--warps") a.over.num_warps = std::stoi(next());
    else throw std::runtime_error("unknown argument " + s);
  }
  if (!a.dtype.empty() && a.dtype != "bf16" && a.dtype != "fp8") throw std::runtime_error("--dtype must be bf16 or fp8");
  if (a.repeats < 1) throw std::runtime_error("--repeats must be at least 1");
  return a;
}

std::vector<std::string> dtypes(const Args& a) {
  if (a.dtype.empty()) return {"bf16", "fp8"};
  return {a.dtype};
}

gemm::Config config(const Args& a, const Shape& s, const std::string& target, int cus, bool fp8) {
  gemm::Config c = gemm::choose(s.M, s.N, s.K, target, cus, fp8);
  for (auto [field, over] : {std::pair{&c.block_m, a.over.block_m}, {&c.block_n, a.over.block_n},
                             {&c.block_k, a.over.block_k}, {&c.group_m, a.over.group_m},
                             {&c.num_stages, a.over.num_stages}, {&c.num_warps, a.over.num_warps}})
    if (over) *field = over;
  return c;
}

std::string str(const gemm::Config& c) {
  return fmt::format("{}x{}x{} s{} w{}", c.block_m, c.block_n, c.block_k, c.num_stages, c.num_warps);
}

// Compiles the kernel for the target and prints its resource report and remarks.
void report(const Args& a, const Shape& s, const std::string& dtype) {
  // Compute units of the target's typical part: MI300X has 304, MI355X 256, H100 132.
  int cus = a.target.rfind("gfx950", 0) == 0 ? 256 : a.target.rfind("gfx", 0) == 0 ? 304 : 132;
  std::string f8 = gemm::fp8_format_for(a.target);
  if (dtype == "fp8" && f8.empty()) {
    fmt::print("kernel: gemm_fp8\ntarget: {}\nskipped: no FP8 matrix instructions on this target\n\n", a.target);
    return;
  }
  gemm::Config c = config(a, s, a.target, cus, dtype == "fp8");
  std::string meta = dtype == "bf16"       ? gemm::compile_bf16(c, a.target, s.M, s.N, s.K)
                     : f8 == "e4m3fnuz" ? gemm::compile_fp8<tl::f8e4m3fnuz>(c, a.target, s.M, s.N, s.K)
                                        : gemm::compile_fp8<tl::f8e4m3fn>(c, a.target, s.M, s.N, s.K);
  auto j = nlohmann::json::parse(meta);
  fmt::print("kernel: {}{}\nshape: {}x{}x{}\ntarget: {}\nblock: {}x{}x{} (M x N x K)\ngroup_m: {}\nnum_stages: {}\n"
             "num_warps: {}\nprograms: {}\n",
             j.value("kernel", ""), dtype == "fp8" ? " (" + f8 + ")" : "", s.M, s.N, s.K, j.value("target_full", ""),
             c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages, c.num_warps,
             tl::cdiv(s.M, c.block_m) * tl::cdiv(s.N, c.block_n));
  for (const char* k : {"vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "scratch_bytes", "occupancy",
                        "regs", "spill_store_bytes", "spill_load_bytes", "local_bytes", "stack_bytes",
                        "static_shared_bytes", "dynamic_shared_bytes", "max_threads_per_block"})
    if (j["report"].contains(k)) fmt::print("{}: {}\n", k, j["report"][k].get<int64_t>());
  for (auto& r : j.value("remarks", nlohmann::json::array())) fmt::print("{}\n", r.get<std::string>());
  fmt::print("compile_ms: {:.1f}\n\n", j.value("compile_ms", 0.0));
}

// Poisons C, runs `go` once (compiling or taking the kernel from the cache) and checks
// C against the reference, then times it; prints one line.
bool check_and_time(const Args& a, tl::device dev, const Shape& s, const gemm::Config& c, const std::string& name,
                    const std::function<void()>& go, const tl::buffer<tl::ty::bf16>& C, const std::vector<float>& fa,
                    const std::vector<float>& fb, const std::vector<float>& rs, const std::vector<float>& cs) {
  const bool fp8 = !rs.empty();
  double first_ms = gemm::poison_and_run_once(dev, C, go);
  auto rows = gemm::rows_to_check(s.M, s.N, s.K);
  auto e = gemm::check(fa, fb, fp8, rs, cs, C.download(), s.M, s.N, s.K, rows,
                       gemm::sum_unit(fp8, dev.kind() == tl::device_kind::cuda));
  double ms = samples::median_ms(dev, a.repeats, go);
  double tflops = 2.0 * double(s.M) * double(s.N) * double(s.K) / ms / 1e9;
  fmt::print("{:>5}x{:<5}x{:<5} {:<13} {:<16} {:9.3f} ms {:8.3f} TFLOP/s  (first {:.0f} ms)  err/bound {:.2f}  "
             "rel {:.1e}  rows {}/{}  {}\n",
             s.M, s.N, s.K, name, str(c), ms, tflops, first_ms, e.worst, e.rel_norm, rows.size(), s.M,
             e.ok() ? "ok" : "WRONG");
  if (!e.ok()) fmt::print("  {} bad of {}; the first at m={} n={}\n", e.bad, e.checked, e.first_m, e.first_n);
  return e.ok();
}

uint64_t seed_of(const Shape& s, bool fp8) { return 1234 + uint64_t(s.M * 31 + s.N * 7 + s.K) * 2 + fp8; }

bool run_bf16(const Args& a, tl::device dev, const Shape& s) {
  const gemm::Config c = config(a, s, dev.target(), dev.compute_units(), false);
  auto o = gemm::random_operands<tl::bfloat16>(s.M, s.N, s.K, false, 1.0, seed_of(s, false),
                                               [](double x) { return tl::to_bf16(x); });
  auto A = dev.alloc<tl::bf16>(o.a.size()), B = dev.alloc<tl::bf16>(o.b.size());
  auto C = dev.alloc<tl::bf16>(size_t(s.M * s.N));
  A.upload(o.a), B.upload(o.b);
  return check_and_time(a, dev, s, c, "bf16", [&] { gemm::gemm_bf16(c, A, B, C, s.M, s.N, s.K); }, C, o.fa, o.fb, {},
                        {});
}

// B is drawn as B^T [N, K] (column-major B).
template <class F8> bool run_fp8(const Args& a, tl::device dev, const Shape& s, const std::string& f8) {
  constexpr tl::DType D = tl::elem_t<F8>::dtype;
  const gemm::Config c = config(a, s, dev.target(), dev.compute_units(), true);
  auto o = gemm::random_operands<tl::float8<D>>(s.M, s.N, s.K, true, 4.0, seed_of(s, true),
                                                [](double x) { return tl::fp8<D>(x); });
  auto A = dev.alloc<F8>(o.a.size()), BT = dev.alloc<F8>(o.b.size());
  auto RS = dev.alloc<tl::f32>(size_t(s.M)), CS = dev.alloc<tl::f32>(size_t(s.N));
  auto C = dev.alloc<tl::bf16>(size_t(s.M * s.N));
  A.upload(o.a), BT.upload(o.b), RS.upload(o.row_scale), CS.upload(o.col_scale);
  return check_and_time(a, dev, s, c, "fp8 " + f8, [&] { gemm::gemm_fp8<F8>(c, A, BT, RS, CS, C, s.M, s.N, s.K); }, C,
                        o.fa, o.fb, o.row_scale, o.col_scale);
}

}  // namespace

int main(int argc, char** argv) try {
  Args a = parse(argc, argv);
  std::vector<Shape> shapes;
  if (a.m && a.n && a.k) shapes.push_back({a.m, a.n, a.k});
  else if (a.m || a.n || a.k) throw std::runtime_error("give all of --m, --n and --k");
  if (a.report) {
    if (a.target.empty()) throw std::runtime_error("--report needs --target NAME (gfx90a, gfx942, gfx950, sm_90, cpu)");
    if (shapes.empty()) shapes = {{4096, 4096, 4096}, {512, 512, 512}};
    for (const Shape& s : shapes)
      for (const std::string& d : dtypes(a)) report(a, s, d);
    return 0;
  }
  if (a.device == "cpu") tl::set_default_device(tl::cpu_device());
  else if (a.device == "hip") tl::set_default_device(tl::hip_device());
  else if (a.device == "cuda") tl::set_default_device(tl::cuda_device());
  else if (!a.device.empty()) throw std::runtime_error("--device must be cpu, hip or cuda");
  tl::device dev = tl::default_device();
  if (shapes.empty()) {
    // Small enough for a CPU in seconds (one ragged in M, N and K); the benchmark
    // (bench/run_gemm_bench.py) has the large square ones beside Triton and cuBLAS.
    if (dev.kind() == tl::device_kind::cpu) shapes = {{256, 256, 256}, {200, 136, 300}};
    else shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {3000, 5000, 1000}};
  }
  std::string f8 = gemm::fp8_format_for(dev.target());
  fmt::print("GEMM on {} ({}), {} compute units\n", dev.name(), dev.target(), dev.compute_units());
  bool ok = true;
  for (const Shape& s : shapes)
    for (const std::string& d : dtypes(a)) {
      if (d == "bf16") ok &= run_bf16(a, dev, s);
      else if (f8.empty()) fmt::print("{}x{}x{} fp8: skipped, {} has no FP8 matrix instructions\n", s.M, s.N, s.K, dev.target());
      else if (f8 == "e4m3fnuz") ok &= run_fp8<tl::f8e4m3fnuz>(a, dev, s, f8);
      else ok &= run_fp8<tl::f8e4m3fn>(a, dev, s, f8);
    }
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-gemm: {}\n", e.what());
  return 2;
}

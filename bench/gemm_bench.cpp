// The tl side of the GEMM benchmark (bench/run_gemm_bench.py runs it beside Triton's
// tutorial matmul and torch): samples/gemm's kernels, bf16 (C = A.B) and FP8 (the
// device's e4m3 format, B column-major, C = (A.B) * row_scale * col_scale into bf16), on
// square problems (4096^3 and 8192^3 by default), each with the configuration
// gemm::choose picks for the device (or --config). Each result is checked first against
// the double-precision host reference on a sample of rows (samples/gemm/reference.hpp),
// then timed as triton.testing.do_bench times Triton's (bench/run_gemm_bench.py): the L2
// flushed by a 256 MiB write before each call, device events around the call, the median
// of at least 100 (bench/timing.hpp); `--timing batched` times batches of back-to-back
// launches instead (the GPU then runs the GEMM without a pause and its clock settles
// lower: on the H100, bf16 4096^3 at 128x256x64 s3 w8, 582 TFLOP/s batched where do_bench's
// way gives 644; bench/results/h100-2026-11-25-wgmma/gemm_configs.txt). A and
// B (32 MiB each at 4096^2 bf16) together exceed the H100's 50 MB L2, so no buffer
// rotation is needed. Prints one JSON object a line, and all of them to --json.
//
//   tl-bench-gemm [--json out.json] [--repeats 20] [--size 4096 --size 8192 ...] [--dtype bf16|fp8]
//                 [--config BMxBNxBK,STAGES,WARPS]     (e.g. 128x128x64,3,4; GROUP_SIZE_M 8)
//                 [--kernel sample|tutorial] [--mma-version 0|2|3] [--timing flushed|batched]
//
// --kernel tutorial times bench/matmul_tutorial.hpp instead (bf16 only): Triton's tutorial
// matmul transcribed as its users write it (carried pointers, plain loads, no tl::shared),
// at the same configuration the sample would get; its runs say "kernel": "tutorial".
//
// TFLOP/s counts 2*M*N*K flops.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/matmul_tutorial.hpp"
#include "bench/timing.hpp"
#include "samples/gemm/gemm.hpp"
#include "samples/gemm/reference.hpp"

namespace {

struct Options {
  std::string out;
  int repeats = 20;
  std::vector<int64_t> sizes;
  std::vector<std::string> dtypes = {"bf16", "fp8"};
  bool pinned = false;  // --config given
  std::string kernel = "sample";
  gemm::Config config;
  int mma_version = 0;  // NVIDIA: 0 tl chooses, 2 mma.sync, 3 wgmma
  std::string timing = "flushed";
};

// One problem: C poisoned, the first launch checked, then timed. `compile` gives the
// metadata (the resource report: on NVIDIA registers and spills from the driver).
nlohmann::json measure(tl::device dev, const Options& o, int64_t S, const std::string& dtype, const gemm::Config& c,
                       const std::function<void()>& go, const tl::buffer<tl::ty::bf16>& C,
                       const std::function<gemm::Errors()>& check,
                       const std::function<std::string()>& compile) {
  double first_ms = gemm::poison_and_run_once(dev, C, go);
  gemm::Errors e = check();
  // Batches of about 20 ms (at most 100 launches): the second launch's time says how
  // many.
  const double flops = 2.0 * double(S) * double(S) * double(S);
  auto t0 = std::chrono::steady_clock::now();
  go();
  dev.synchronize();
  double one_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int inner = 1;
  double ms = 0;
  if (o.timing == "batched") {
    inner = std::clamp(int(20.0 / std::max(one_ms, 1e-3)), 1, 100);
    ms = tlbench::time_ms(dev, go, o.repeats, inner);
  } else {
    static tlbench::L2Flush flush(dev, "write");
    ms = tlbench::time_ms_flushed(dev, go, flush, std::max(o.repeats, 100));
  }
  nlohmann::json r = {{"impl", "tl"},
                      {"kernel", o.kernel},
                      {"dtype", dtype},
                      {"M", S},
                      {"N", S},
                      {"K", S},
                      {"ms", ms},
                      {"tflops", flops / ms / 1e9},
                      {"first_launch_ms", first_ms},
                      {"launches_per_batch", inner},
                      {"timing", o.timing},
                      {"config",
                       {{"block_m", c.block_m},
                        {"block_n", c.block_n},
                        {"block_k", c.block_k},
                        {"group_m", c.group_m},
                        {"num_stages", c.num_stages},
                        {"num_warps", c.num_warps},
                        {"mma_version", c.mma_version}}},
                      {"ok", e.ok()},
                      {"rows_checked", e.checked / S},
                      {"worst_over_bound", e.worst},
                      {"rel_norm_error", e.rel_norm}};
  auto meta = nlohmann::json::parse(compile());
  r["report"] = meta.value("report", nlohmann::json::object());
  r["remarks"] = meta.value("remarks", nlohmann::json::array());
  return r;
}

// bf16: samples/gemm's kernel, or (o.kernel == "tutorial") the tutorial transcription
// at the configuration the sample would get, on the same operands and check.
nlohmann::json bench_bf16(tl::device dev, const Options& o, int64_t S) {
  gemm::Config c = o.pinned ? o.config : gemm::choose(S, S, S, dev.target(), dev.compute_units(), false);
  c.mma_version = o.mma_version;
  const matmul_tutorial::Config t{c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages, c.num_warps, c.mma_version};
  const bool tutorial = o.kernel == "tutorial";
  auto op = gemm::random_operands<tl::bfloat16>(S, S, S, false, 1.0, 1000 + uint64_t(S),
                                                [](double x) { return tl::to_bf16(x); });
  auto A = dev.alloc<tl::bf16>(op.a.size()), B = dev.alloc<tl::bf16>(op.b.size());
  auto C = dev.alloc<tl::bf16>(size_t(S * S));
  A.upload(op.a), B.upload(op.b);
  op.a = {}, op.b = {};
  auto check = [&] {
    return gemm::check(op.fa, op.fb, false, {}, {}, C.download(), S, S, S, gemm::rows_to_check(S, S, S, 0x1p30),
                       gemm::sum_unit(false, dev.kind() == tl::device_kind::cuda));
  };
  auto run = [&] {
    if (tutorial) matmul_tutorial::matmul<tl::bf16>(dev, t, A, B, C, S, S, S);
    else gemm::gemm_bf16(c, A, B, C, S, S, S);
  };
  auto r = measure(dev, o, S, "bf16", c, run, C, check, [&] {
    return tutorial ? matmul_tutorial::compile<tl::bf16>(dev, t, S, S, S) : gemm::compile_bf16(c, dev, S, S, S);
  });
  return r;
}

template <class F8> nlohmann::json bench_fp8(tl::device dev, const Options& o, int64_t S) {
  constexpr tl::DType D = tl::elem_t<F8>::dtype;
  gemm::Config c = o.pinned ? o.config : gemm::choose(S, S, S, dev.target(), dev.compute_units(), true);
  c.mma_version = o.mma_version;
  auto op = gemm::random_operands<tl::float8<D>>(S, S, S, true, 4.0, 2000 + uint64_t(S),
                                                 [](double x) { return tl::fp8<D>(x); });
  auto A = dev.alloc<F8>(op.a.size()), BT = dev.alloc<F8>(op.b.size());
  auto RS = dev.alloc<tl::f32>(size_t(S)), CS = dev.alloc<tl::f32>(size_t(S));
  auto C = dev.alloc<tl::bf16>(size_t(S * S));
  A.upload(op.a), BT.upload(op.b), RS.upload(op.row_scale), CS.upload(op.col_scale);
  op.a = {}, op.b = {};
  auto check = [&] {
    return gemm::check(op.fa, op.fb, true, op.row_scale, op.col_scale, C.download(), S, S, S,
                       gemm::rows_to_check(S, S, S, 0x1p30), gemm::sum_unit(true, dev.kind() == tl::device_kind::cuda));
  };
  auto r = measure(
      dev, o, S, "fp8", c, [&] { gemm::gemm_fp8<F8>(c, A, BT, RS, CS, C, S, S, S); }, C, check,
      [&] { return gemm::compile_fp8<F8>(c, dev, S, S, S); });
  r["fp8_format"] = gemm::fp8_format_for(dev.target());
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--json") o.out = next();
    else if (a == "--repeats") o.repeats = std::stoi(next());
    else if (a == "--size") o.sizes.push_back(std::stoll(next()));
    else if (a == "--dtype") o.dtypes = {next()};
    else if (a == "--kernel") {
      o.kernel = next();
      if (o.kernel != "sample" && o.kernel != "tutorial") throw std::runtime_error("--kernel must be sample or tutorial");
    }
    else if (a == "--config") {
      gemm::Config& c = o.config;
      std::string v = next();
      if (std::sscanf(v.c_str(), "%dx%dx%d,%d,%d", &c.block_m, &c.block_n, &c.block_k, &c.num_stages, &c.num_warps) != 5)
        throw std::runtime_error("--config BMxBNxBK,STAGES,WARPS (e.g. 128x128x64,3,4)");
      o.pinned = true;
    } else if (a == "--mma-version") o.mma_version = std::stoi(next());
    else if (a == "--timing") {
      o.timing = next();
      if (o.timing != "flushed" && o.timing != "batched") throw std::runtime_error("--timing flushed|batched");
    }
    else throw std::runtime_error("unknown argument " + a);
  }
  if (o.sizes.empty()) o.sizes = {4096, 8192};
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  const std::string f8 = gemm::fp8_format_for(dev.target());
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"compute_units", dev.compute_units()},
                        {"fp8_format", f8}, {"repeats", o.repeats}, {"runs", nlohmann::json::array()}};
  bool ok = true;
  for (int64_t S : o.sizes)
    for (const std::string& d : o.dtypes) {
      nlohmann::json r;
      if (o.kernel == "tutorial" && d != "bf16") continue;  // the transcription is timed in bf16
      if (d == "bf16") r = bench_bf16(dev, o, S);
      else if (d != "fp8") throw std::runtime_error("--dtype must be bf16 or fp8");
      else if (f8.empty()) {
        fmt::print(stderr, "fp8 skipped: {} has no FP8 matrix instructions\n", dev.target());
        continue;
      } else r = f8 == "e4m3fnuz" ? bench_fp8<tl::f8e4m3fnuz>(dev, o, S) : bench_fp8<tl::f8e4m3fn>(dev, o, S);
      ok &= r["ok"].get<bool>();
      fmt::print("{}\n", r.dump());
      std::fflush(stdout);
      all["runs"].push_back(r);
    }
  if (!o.out.empty()) std::ofstream(o.out) << all.dump(2);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-gemm: {}\n", e.what());
  return 2;
}

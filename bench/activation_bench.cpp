// The tl side of the MLP activation benchmark (bench/run_activation_bench.py runs it
// beside Triton's same kernels): GELU with tanh, y = x/2 (1 + tanh(sqrt(2/pi) (x +
// 0.044715 x^3))), and SiLU-gated (SwiGLU), y = silu(a) b = a sigmoid(a) b, elementwise
// over [16384, 8192] bf16, computed in f32, written as a Triton user writes them (Liger
// Kernel's geglu / swiglu math over a flattened tensor, tutorial 01's BLOCK_SIZE = 1024
// programs at 4 warps). tl::tanh and tl::sigmoid are tl's math library (docs/language.md's
// table: within 3 ulp of f32), Triton's the libdevice tanh and tl.sigmoid.
//
// Each result is checked against a double-precision host reference on every 7th element
// (within one bf16 rounding and the f32 error, GELU's cancellation for negative x allowed)
// before it is timed; times are device events around batches of launches, medians over
// repeats. The tensors are 256 MiB each, far past the L2, so no buffer rotation is needed.
//
//   tl-bench-activation [--json out.json] [--repeats 20] [--rows 16384] [--cols 8192]
//
// GB/s counts the bytes a kernel must move: GELU 2 + 2 per element, SwiGLU 2 + 2 + 2.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/activation_kernels.hpp"
#include "bench/hashed_values.hpp"
#include "bench/timing.hpp"
#include "tl/tl.hpp"

namespace {

using tlbench::gelu_tanh_kernel;
using tlbench::swiglu_kernel;

constexpr int kBlock = 1024;
// Values in [-6, 6) from a hash of the index (bench/run_activation_bench.py builds the
// same tensors), salted per tensor.
std::vector<tl::bfloat16> inputs(size_t n, uint64_t salt) {
  std::vector<tl::bfloat16> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = tl::to_bf16(float(int32_t(tlbench::hash32(i + salt) >> 8) - (1 << 23)) * 0x1p-23f * 6.0f);
  return v;
}

double gelu_ref(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double swiglu_ref(double a, double b) { return a / (1 + std::exp(-a)) * b; }

// Within a bf16 rounding of the exact value (2^-8 relative) and the f32 error under it;
// `slack` for what the formula itself loses: GELU's 1 + tanh(...) cancels for negative x
// (a few ulp of 1, times x/2, in any f32 evaluation, Triton's too).
bool close(tl::bfloat16 got, double want, double slack = 0) {
  double g = tl::to_float(got);
  return std::fabs(g - want) <= std::fabs(want) * 0x1p-8 * (1 + 0x1p-10) + slack + 0x1p-126;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20;
  int64_t rows = 16384, cols = 8192;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--rows" && i + 1 < argc) rows = std::stoll(argv[++i]);
    else if (a == "--cols" && i + 1 < argc) cols = std::stoll(argv[++i]);
    else throw std::runtime_error("unknown argument " + a);
  }
  const size_t n = size_t(rows * cols);
  if (n >= (size_t(1) << 31)) throw std::runtime_error("rows * cols must fit in i32 offsets");
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  fmt::print("device {} ({}), [{}, {}] bf16\n", dev.name(), dev.target(), rows, cols);
  auto hx = inputs(n, 0), hb = inputs(n, 0x5bd1e995);
  auto X = dev.alloc<tl::bf16>(n), B = dev.alloc<tl::bf16>(n), Y = dev.alloc<tl::bf16>(n);
  X.upload(hx), B.upload(hb);
  const tl::grid grid(tl::cdiv(int64_t(n), kBlock));
  const int inner = 10;
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"rows", rows}, {"cols", cols},
                        {"block_size", kBlock}, {"num_warps", 4}};
  bool ok_all = true;
  auto run = [&](const char* name, double bytes_per_elem, auto&& launch, auto&& ref, auto&& slack) {
    std::vector<tl::bfloat16> junk(n, tl::to_bf16(-1.25e-12f));
    Y.upload(junk);  // poisoned: an element not written fails the check
    launch();
    dev.synchronize();
    auto got = Y.download();
    size_t bad = 0;
    for (size_t i = 0; i < n; i += 7) bad += !close(got[i], ref(i), slack(i));
    double ms = tlbench::time_ms(dev, launch, repeats, inner);
    const double bytes = bytes_per_elem * double(n);
    fmt::print("tl {:<10} {:8.3f} ms {:7.0f} GB/s  {}\n", name, ms, bytes / ms / 1e6,
               bad ? fmt::format("WRONG ({} elements)", bad) : "ok");
    ok_all &= bad == 0;
    all["kernels"].push_back({{"name", name}, {"ms", ms}, {"gbs", bytes / ms / 1e6}, {"bytes", bytes}, {"ok", bad == 0}});
  };
  run("gelu_tanh", 4, [&] { gelu_tanh_kernel()[grid](X, Y, int(n), kBlock); },
      [&](size_t i) { return gelu_ref(tl::to_float(hx[i])); },
      [&](size_t i) { return std::fabs(tl::to_float(hx[i])) * 0x1p-21; });
  run("swiglu", 6, [&] { swiglu_kernel()[grid](X, B, Y, int(n), kBlock); },
      [&](size_t i) { return swiglu_ref(tl::to_float(hx[i]), tl::to_float(hb[i])); }, [](size_t) { return 0.0; });
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return ok_all ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-activation: {}\n", e.what());
  return 2;
}

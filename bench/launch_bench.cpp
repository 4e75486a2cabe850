// Host time per cached launch, by phase (issue 44): what tl's own work costs beside the
// driver's, for a kernel of 2 run-time arguments and one of 8 (and a trace-time constant).
// Each figure is the median over 7 runs of N back-to-back launches (host wall time per
// launch; the GPU is synchronized after each run, outside the timing).
//
//   tl-bench-launch [--launches N] [--json out.json]
//
// Phases:
//   tl_null_us      tl's launch on a device whose launch does nothing (tests/support/
//                   null_device.hpp, asked as a GPU device is): tl's own work alone
//                   (checks, key, look-up, packing)
// and on an NVIDIA GPU (skipped elsewhere):
//   driver_us       bare cuLaunchKernel of the same PTX: what no launcher goes under
//   bind_driver_us  cuCtxSetCurrent + cuLaunchKernel: what tl's CUDA device does per launch
//   driver_pdl_us   bare cuLaunchKernelEx with programmatic stream serialization
//   tl_us, tl_pdl_us  kernel[grid](args) on the GPU, without and with launch_pdl
//   overhead_us     tl_us - driver_us: the goal is 0.5 us or less
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/cache.hpp"
#include "runtime/cuda_api.hpp"
#include "tests/support/null_device.hpp"
#include "tl/tl.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Microseconds per call of f, median of 7 runs of n calls; `sync` after each run.
template <class F, class S> double per_call_us(int n, F&& f, S&& sync) {
  for (int i = 0; i < 100; ++i) f();  // warm: the code, the caches, the driver's queues
  sync();
  std::vector<double> us;
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) f();
    auto t1 = Clock::now();
    sync();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
  }
  return median(us);
}

auto tiny = tl::kernel("launch_tiny", [](tl::ptr<tl::f32> x, tl::i32 n) {
  auto i = tl::arange(0, 128);
  tl::store(x + i, tl::zeros<tl::f32>({128}) + n.to<tl::f32>(), i < n);
});
auto wide = tl::kernel("launch_wide", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> c, tl::ptr<tl::f32> d,
                                         tl::i32 i, tl::i32 j, tl::f32 f, tl::i64 k, int BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(d + offs, tl::load(a + offs) + tl::load(b + offs) * tl::load(c + offs) + (i + j).to<tl::f32>() * f +
                          k.to<tl::f32>());
});

// One kernel's phases on `gpu` (a CUDA device, or empty) and the null device.
nlohmann::json phases(const char* name, int n, const tl::device& gpu, const tl::cuda::Api* cu, bool wide_kernel) {
  nlohmann::json j;
  tl::device null = tltest::NullLaunchDevice::make(/*gpu_like=*/true);
  std::vector<tl::buffer<tl::ty::f32>> keep;  // the launches' buffers, alive until the timing ends
  auto run_on = [&](const tl::device& dev, bool pdl) {
    auto x = dev.alloc<tl::f32>(128);
    keep.push_back(x);
    const tl::launch_options o{.num_warps = 1, .launch_pdl = pdl};
    if (wide_kernel) {
      float* p = x.data();
      return std::function<void()>([p, o, dev] { wide[tl::grid(1)].with(o).on(dev)(p, p, p, p, 3, 4, 0.5f, int64_t(7), 128); });
    }
    float* p = x.data();
    return std::function<void()>([p, o, dev] { tiny[tl::grid(1)].with(o).on(dev)(p, 128); });
  };
  auto nothing = [] {};
  j["tl_null_us"] = per_call_us(n, run_on(null, false), nothing);
  fmt::print("{:>6}: tl on a null device {:.3f} us", name, j["tl_null_us"].get<double>());
  if (!cu) {
    fmt::print("\n");
    return j;
  }
  auto sync = [&] { gpu.synchronize(); };
  j["tl_us"] = per_call_us(n, run_on(gpu, false), sync);
  j["tl_pdl_us"] = per_call_us(n, run_on(gpu, true), sync);

  // The same PTX with the bare driver API.
  auto x = gpu.alloc<tl::f32>(128);
  std::string meta = wide_kernel ? wide.compile(gpu, {.num_warps = 1}, x.data(), x.data(), x.data(), x.data(), 3, 4,
                                                0.5f, int64_t(7), 128)
                                 : tiny.compile(gpu, {.num_warps = 1}, x.data(), 128);
  auto entry = nlohmann::json::parse(meta);
  auto cached = tl::cache::DiskCache::global().load(entry["key"].get<std::string>());
  if (!cached) throw std::runtime_error("the kernel is not in the disk cache");
  std::string ptx(cached->artifacts.at("code").begin(), cached->artifacts.at("code").end());
  cu->bind(0);
  tl::cuda::CUmodule mod = cu->load_module(ptx.c_str());
  tl::cuda::CUfunction fn;
  cu->check(cu->cuModuleGetFunction(&fn, mod, entry["kernel_symbol"].get<std::string>().c_str()), "cuModuleGetFunction");
  const unsigned threads = entry["block_threads"].get<unsigned>();
  uint64_t slots[8] = {reinterpret_cast<uint64_t>(x.data()), 128};
  if (wide_kernel) {
    // a, b, c, d, i, j, f, k (the constant BLOCK takes no slot)
    float half = 0.5f;
    uint32_t fbits;
    std::memcpy(&fbits, &half, 4);
    uint64_t s[8] = {slots[0], slots[0], slots[0], slots[0], 3, 4, fbits, 7};
    std::copy(s, s + 8, slots);
  }
  void* params[8];
  for (int i = 0; i < 8; ++i) params[i] = &slots[i];
  auto driver = [&] {
    cu->check(cu->cuLaunchKernel(fn, 1, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  };
  auto bind_driver = [&] {
    cu->bind(0);
    driver();
  };
  j["driver_us"] = per_call_us(n, driver, sync);
  j["bind_driver_us"] = per_call_us(n, bind_driver, sync);
  if (cu->cuLaunchKernelEx) {
    tl::cuda::CUlaunchAttribute attr;
    attr.id = tl::cuda::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmatic_stream_serialization_allowed = 1;
    tl::cuda::CUlaunchConfig config;
    config.block_x = threads;
    config.attrs = &attr;
    config.num_attrs = 1;
    j["driver_pdl_us"] = per_call_us(n, [&] { cu->check(cu->cuLaunchKernelEx(&config, fn, params, nullptr), "cuLaunchKernelEx"); }, sync);
  }
  cu->cuModuleUnload(mod);
  j["overhead_us"] = j["tl_us"].get<double>() - j["driver_us"].get<double>();
  fmt::print(", bare cuLaunchKernel {:.3f}, bind + cuLaunchKernel {:.3f}, tl {:.3f} (tl's share {:.3f}), with "
             "launch_pdl: tl {:.3f}, bare cuLaunchKernelEx {:.3f} us per launch\n",
             j["driver_us"].get<double>(), j["bind_driver_us"].get<double>(), j["tl_us"].get<double>(),
             j["overhead_us"].get<double>(), j["tl_pdl_us"].get<double>(), j.value("driver_pdl_us", 0.0));
  return j;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int n = 20000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--launches" && i + 1 < argc) n = std::stoi(argv[++i]);
  }
  const tl::cuda::Api* cu = tl::cuda::Api::get();
  tl::device gpu = cu ? tl::cuda_device(0) : tl::device();
  nlohmann::json all;
  all["device"] = cu ? gpu.name() : "none (tl's own work only)";
  all["tiny"] = phases("tiny", n, gpu, cu, false);
  all["wide"] = phases("wide", n, gpu, cu, true);
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-launch: {}\n", e.what());
  return 2;
}

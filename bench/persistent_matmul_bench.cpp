// The tl side of the tutorial-09 benchmark (bench/run_persistent_matmul_bench.py runs it
// beside Triton 3.6's same kernels): C = A.B in f16 with f32 accumulation through
// bench/persistent_matmul_tutorial.hpp's transcriptions of Triton's tutorial 09,
// `matmul_kernel_persistent` (pointer tiles, B [K, N]) and
// `matmul_kernel_descriptor_persistent` (device-side tensor descriptors, B given as
// [N, K]; with and without EPILOGUE_SUBTILE, the epilogue's tl::split into two halves),
// `matmul_kernel_tma_persistent` (the same with host descriptors, tl::TensorDescriptor),
// NUM_SMS = the device's SMs programs, at fixed configurations from the tutorial's
// autotuning space (both sides run the same ones: no autotuner in the timing).
//
// Each result is checked against a double-precision host reference on 16 rows spread
// over M (every column) before it is timed: within an f16 rounding (2^-10 relative) and
// the f32 sums' error. Times are do_bench's: device events around one call with the L2
// flushed (written) before it, medians over repeats.
//
//   tl-bench-persistent-matmul [--json out.json] [--repeats 50] [--sizes 8192x8192x4096,...]
//                              [--configs 128x128x64x3x8,128x256x64x3x8]   (BM x BN x BK x stages x warps)
//
// On the CPU (no GPU) it checks the kernels at small sizes: --sizes 96x120x72 --repeats 1.
// --compile ARCH (sm_90, gfx942, ...) compiles every kernel and configuration for ARCH
// without running anything and prints each one's resource report.
// TFLOP/s is 2 M N K over the time; GB/s counts A, B and C once (2 (M K + N K + M N) bytes).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/hashed_values.hpp"
#include "bench/persistent_matmul_tutorial.hpp"
#include "bench/timing.hpp"
#include "tl/tl.hpp"

namespace {

using persistent_matmul::matmul_kernel_descriptor_persistent;
using persistent_matmul::matmul_kernel_tma_persistent;
using persistent_matmul::matmul_kernel_persistent;

constexpr int kGroup = 8;  // the tutorial's GROUP_SIZE_M

struct Size {
  int M, N, K;
};
struct Config {
  int bm, bn, bk, stages, warps;
};

std::vector<int> ints(const std::string& s, char sep) {
  std::vector<int> v;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, sep);) v.push_back(std::stoi(x));
  return v;
}

template <class T, class F> std::vector<T> parse_list(const std::string& s, F make) {
  std::vector<T> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(make(ints(item, 'x')));
  return out;
}

// Values in [-1, 1) from a hash of the index, salted per tensor.
std::vector<tl::half> inputs(size_t n, uint64_t salt) {
  std::vector<tl::half> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = tl::to_f16(float(int32_t(tlbench::hash32(i + salt) >> 8) - (1 << 23)) * 0x1p-23f);
  return v;
}

// Rows of C checked: 16 spread over M (the first and last included), every column.
size_t bad_elements(const std::vector<tl::half>& c, const std::vector<tl::half>& a, const std::vector<tl::half>& b,
                    bool b_is_nk, const Size& s) {
  size_t bad = 0;
  for (int t = 0; t < 16; ++t) {
    const int i = int(int64_t(s.M - 1) * t / 15);
    for (int j = 0; j < s.N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < s.K; ++k) {
        const double x = tl::to_float(a[size_t(i) * s.K + k]) *
                         tl::to_float(b_is_nk ? b[size_t(j) * s.K + k] : b[size_t(k) * s.N + j]);
        acc += x, mag += std::fabs(x);
      }
      const double got = tl::to_float(c[size_t(i) * s.N + j]);
      bad += !(std::fabs(got - acc) <= std::fabs(acc) * 0x1p-10 + mag * s.K * 0x1p-24 + 0x1p-24);
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 50;
  std::string compile_arch;
  std::vector<Size> sizes = {{8192, 8192, 1024}, {8192, 8192, 4096}};
  std::vector<Config> configs = {{128, 128, 64, 3, 8}, {128, 256, 64, 3, 8}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--compile" && i + 1 < argc) compile_arch = argv[++i];
    else if (a == "--sizes" && i + 1 < argc)
      sizes = parse_list<Size>(argv[++i], [](const std::vector<int>& v) {
        if (v.size() != 3) throw std::runtime_error("a size is MxNxK");
        return Size{v[0], v[1], v[2]};
      });
    else if (a == "--configs" && i + 1 < argc)
      configs = parse_list<Config>(argv[++i], [](const std::vector<int>& v) {
        if (v.size() != 5) throw std::runtime_error("a configuration is BMxBNxBKxSTAGESxWARPS");
        return Config{v[0], v[1], v[2], v[3], v[4]};
      });
    else throw std::runtime_error("unknown argument " + a);
  }
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  const int num_sms = dev.compute_units();
  fmt::print("device {} ({}), NUM_SMS = {}\n", dev.name(), dev.target(), num_sms);
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"num_sms", num_sms}, {"group_m", kGroup}};
  if (!compile_arch.empty()) {
    auto A = dev.alloc<tl::f16>(64), B = dev.alloc<tl::f16>(64), C = dev.alloc<tl::f16>(64);
    for (const Size& s : sizes)
      for (const Config& c : configs) {
        const tl::launch_options opts{.num_warps = c.warps, .num_stages = c.stages};
        auto show = [&](const char* name, const std::string& meta) {
          auto j = nlohmann::json::parse(meta);
          fmt::print("{} {:<30} {}x{}x{} {}x{}x{} s{} w{}: {}\n", compile_arch, name, s.M, s.N, s.K, c.bm, c.bn, c.bk,
                     c.stages, c.warps, j.contains("report") ? j["report"].dump() : meta);
        };
        show("persistent", matmul_kernel_persistent<tl::f16>().compile(compile_arch, opts, A, B, C, s.M, s.N, s.K, s.K, 1,
                                                                         s.N, 1, s.N, 1, c.bm, c.bn, c.bk, kGroup, 132));
        for (bool subtile : {false, true})
          show(subtile ? "descriptor_persistent_subtile" : "descriptor_persistent",
               matmul_kernel_descriptor_persistent<tl::f16>().compile(compile_arch, opts, A, B, C, s.M, s.N, s.K, c.bm, c.bn,
                                                                      c.bk, kGroup, subtile, 132));
        // (descriptors of the sizes asked for, over 64-element buffers: compiled, never run)
        using D = tl::TensorDescriptor<tl::f16>;
        show("tma_persistent",
             matmul_kernel_tma_persistent<tl::f16>().compile(
                 compile_arch, opts, D(A.data(), {s.M, s.K}, {s.K, 1}, {c.bm, c.bk}),
                 D(B.data(), {s.N, s.K}, {s.K, 1}, {c.bn, c.bk}), D(C.data(), {s.M, s.N}, {s.N, 1}, {c.bm, c.bn}), s.M,
                 s.N, s.K, c.bm, c.bn, c.bk, kGroup, false, 132));
      }
    return 0;
  }
  tlbench::L2Flush flush(dev, "write");
  bool ok_all = true;
  for (const Size& s : sizes) {
    const auto ha = inputs(size_t(s.M) * s.K, 1), hb = inputs(size_t(s.K) * s.N, 2);
    std::vector<tl::half> hbt(hb.size());  // B as [N, K] for the descriptor kernel
    for (int k = 0; k < s.K; ++k)
      for (int j = 0; j < s.N; ++j) hbt[size_t(j) * s.K + k] = hb[size_t(k) * s.N + j];
    auto A = dev.alloc<tl::f16>(ha.size()), B = dev.alloc<tl::f16>(hb.size()), BT = dev.alloc<tl::f16>(hbt.size());
    auto C = dev.alloc<tl::f16>(size_t(s.M) * s.N);
    A.upload(ha), B.upload(hb), BT.upload(hbt);
    const double flops = 2.0 * s.M * s.N * s.K, bytes = 2.0 * (double(s.M) * s.K + double(s.N) * s.K + double(s.M) * s.N);
    for (const Config& c : configs) {
      const int tiles = int(tl::cdiv(s.M, c.bm) * tl::cdiv(s.N, c.bn));
      const tl::grid grid(std::min(num_sms, tiles));
      const tl::launch_options opts{.num_warps = c.warps, .num_stages = c.stages};
      struct Variant {
        std::string name;
        bool descriptor, subtile, host = false;
        bool tma = false;  // launch_options::tma: A and B loaded by TMA copies (unpipelined; off by default)
      };
      // (tma_persistent's descriptors made once, as the tutorial makes them before launching)
      const auto tma = persistent_matmul::make_tma_descriptors<tl::f16>(A, BT, C, s.M, s.N, s.K, c.bm, c.bn, c.bk, false);
      for (const Variant& v : {Variant{"persistent", false, false}, Variant{"descriptor_persistent", true, false},
                               Variant{"descriptor_persistent_subtile", true, true},
                               Variant{"tma_persistent", true, false, true},
                               Variant{"tma_persistent_tma", true, false, true, true}}) {
        tl::launch_options vopts = opts;
        vopts.tma = v.tma;
        auto launch = [&] {
          if (!v.descriptor)
            matmul_kernel_persistent<tl::f16>()[grid].with(opts)(A, B, C, s.M, s.N, s.K, s.K, 1, s.N, 1, s.N, 1, c.bm, c.bn,
                                                                  c.bk, kGroup, num_sms);
          else if (v.host)
            matmul_kernel_tma_persistent<tl::f16>()[grid].with(vopts)(tma.a, tma.b, tma.c, s.M, s.N, s.K, c.bm, c.bn, c.bk,
                                                                       kGroup, false, num_sms);
          else
            matmul_kernel_descriptor_persistent<tl::f16>()[grid].with(opts)(A, BT, C, s.M, s.N, s.K, c.bm, c.bn, c.bk,
                                                                             kGroup, v.subtile, num_sms);
        };
        C.upload(std::vector<tl::half>(C.size(), tl::to_f16(-1.25e3)));  // poisoned: a tile not written fails
        launch();
        dev.synchronize();
        const size_t bad = bad_elements(C.download(), ha, v.descriptor ? hbt : hb, v.descriptor, s);
        const double ms = tlbench::time_ms_flushed(dev, launch, [&] { flush(); }, repeats);
        const std::string cfg = fmt::format("{}x{}x{} s{} w{}", c.bm, c.bn, c.bk, c.stages, c.warps);
        fmt::print("tl {:<30} {}x{}x{} {:<18} {:8.4f} ms {:7.1f} TFLOP/s {:7.0f} GB/s  {}\n", v.name, s.M, s.N, s.K, cfg,
                   ms, flops / ms / 1e9, bytes / ms / 1e6, bad ? fmt::format("WRONG ({} elements)", bad) : "ok");
        std::fflush(stdout);
        ok_all &= bad == 0;
        all["runs"].push_back({{"kernel", v.name}, {"M", s.M}, {"N", s.N}, {"K", s.K}, {"block_m", c.bm}, {"block_n", c.bn},
                               {"block_k", c.bk}, {"num_stages", c.stages}, {"num_warps", c.warps}, {"ms", ms},
                               {"tflops", flops / ms / 1e9}, {"gbs", bytes / ms / 1e6}, {"ok", bad == 0}});
      }
    }
  }
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return ok_all ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-persistent-matmul: {}\n", e.what());
  return 2;
}

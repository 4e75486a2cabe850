// The tl side of the FP8 quantization benchmark (bench/run_fp8_quant_bench.py runs it
// beside Triton and torch): samples/fp8_quant's launches on the seed-000 MoE shapes,
// with the amax atomics relaxed and acq_rel. Each result is checked against the host
// reference (scales bit for bit, values by FP8 rounding on a sample of columns) before
// it is timed. Times are device events around batches of launches (NVIDIA; elsewhere
// the host clock around a synchronized batch), medians over repeats. The inputs are
// 134 MB and up, well past the 50 MB L2, so no buffer rotation is needed.
//
//   tl-bench-fp8-quant [--json out.json] [--repeats 20] [--shape E,K,N ...]
//
// Bytes moved, for GB/s: W read by both kernels (2 * 2 * E*K*N), the FP8 values written
// (E*N*K) and the scales (4 * E*N); the [E, N] workspace (zeroed, atomics, read) is left
// out, as torchao's benchmark leaves it out.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/hashed_values.hpp"
#include "bench/timing.hpp"
#include "runtime/cuda_api.hpp"
#include "samples/fp8_quant/fp8_quant.hpp"
#include "samples/fp8_quant/reference.hpp"

namespace {

// Columns of different magnitudes (2^-6 .. 2^6), uniform values from a hash of the
// element's index (32-bit arithmetic that int64 torch tensors do without overflow), so
// that bench/run_fp8_quant_bench.py builds the same W for Triton and the outputs can be
// compared byte for byte (tlbench::hash32).
std::vector<tl::bfloat16> weights(int64_t E, int64_t K, int64_t N) {
  std::vector<tl::bfloat16> w(size_t(E * K * N));
  for (int64_t e = 0; e < E; ++e)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        size_t i = size_t((e * K + k) * N + n);
        float u = float(int32_t(tlbench::hash32(i) >> 8) - (1 << 23)) * 0x1p-23f;  // [-1, 1), exact
        w[i] = tl::to_bf16(std::ldexp(u, int((n * 7 + e) % 13) - 6));
      }
  return w;
}

// sum of byte_i * (i mod 65521 + 1): bench/run_fp8_quant_bench.py computes the same over
// Triton's output, to show whether the two wrote the same bytes.
uint64_t checksum(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i) s += uint64_t(b[i]) * (i % 65521 + 1);
  return s;
}

template <class O> nlohmann::json bench_shape(tl::device dev, int64_t E, int64_t K, int64_t N, int repeats) {
  const size_t n = size_t(E * K * N), en = size_t(E * N);
  auto hw = weights(E, K, N);
  auto W = dev.alloc<tl::bf16>(n);
  W.upload(hw);
  auto A = dev.alloc<tl::i32>(en);
  auto Q = dev.alloc<O>(n);
  auto S = dev.alloc<tl::f32>(en);
  fp8_quant::Reference ref(hw, E, K, N, tl::elem_t<O>::dtype);
  const double bytes = 2.0 * 2 * n + double(n) + 4.0 * en;
  nlohmann::json r = {{"E", E}, {"K", K}, {"N", N}, {"bytes", bytes}, {"checksum_w", checksum(hw.data(), n * 2)}};
  std::vector<uint8_t> first_q;
  std::vector<float> first_s;
  for (tl::sem sm : {tl::sem::relaxed, tl::sem::acq_rel}) {
    fp8_quant::Config c;
    c.sem = sm;
    std::vector<uint8_t> junk(n, 0xAB);
    dev.copy_to_device(Q.data(), junk.data(), n);
    dev.copy_to_device(S.data(), junk.data(), en * 4);
    fp8_quant::quantize<O>(c, W, A, Q, S, E, K, N);
    dev.synchronize();
    auto hq = Q.download();
    std::vector<uint8_t> q(n);
    std::memcpy(q.data(), hq.data(), n);
    auto s = S.download();
    // every scale; the values of every 61st column (all of them on small shapes)
    auto m = fp8_quant::compare(ref, hw, q, s, n > (size_t(1) << 24) ? 61 : 1);
    const char* name = sm == tl::sem::relaxed ? "relaxed" : "acq_rel";
    if (first_q.empty()) {
      first_q = q, first_s = s;
      r["checksum_q"] = checksum(q.data(), n);
      r["checksum_s"] = checksum(s.data(), en * 4);
    } else {
      r["same_bytes"] = q == first_q && std::memcmp(s.data(), first_s.data(), en * 4) == 0;
    }
    // Kernel by kernel: the zero fill with the amax kernel (it needs the fill), then the
    // cast kernel alone (it only reads the workspace); and the three together.
    const tl::grid g(tl::cdiv(N, c.block_n), tl::cdiv(K, c.block_k), E);
    auto all = [&] { fp8_quant::quantize<O>(c, W, A, Q, S, E, K, N); };
    auto amax = [&] {
      fp8_quant::zero_kernel()[tl::grid(tl::cdiv(int64_t(en), 1024))](A, int(en), 1024);
      fp8_quant::amax_kernel()[g].with({.num_warps = c.num_warps})(W, A, int(K), int(N), c.block_k, c.block_n, c.sem);
    };
    auto cast = [&] {
      fp8_quant::cast_transpose_kernel<O>()[g].with({.num_warps = c.num_warps})(W, A, Q, S, int(K), int(N), c.block_k,
                                                                               c.block_n);
    };
    int inner = n >= (size_t(1) << 28) ? 5 : 20;
    double ms = tlbench::time_ms(dev, all, repeats, inner);
    double amax_ms = tlbench::time_ms(dev, amax, repeats, inner), cast_ms = tlbench::time_ms(dev, cast, repeats, inner);
    r[name] = {{"ms", ms},           {"gbs", bytes / ms / 1e6}, {"amax_ms", amax_ms},
               {"cast_ms", cast_ms}, {"ok", m.ok()},            {"scale_mismatches", m.scales},
               {"value_mismatches", m.values}};
    fmt::print("tl E={:<3} K={:<5} N={:<5} {:<8} {:8.3f} ms {:7.0f} GB/s (amax {:.3f} ms, cast {:.3f} ms)  {}\n", E, K,
               N, name, ms, bytes / ms / 1e6, amax_ms, cast_ms, m.ok() ? "ok" : "WRONG");
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20;
  std::vector<std::array<int64_t, 3>> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--shape" && i + 1 < argc) {
      std::array<int64_t, 3> s{};
      if (std::sscanf(argv[++i], "%ld,%ld,%ld", &s[0], &s[1], &s[2]) != 3) throw std::runtime_error("--shape E,K,N");
      shapes.push_back(s);
    } else throw std::runtime_error("unknown argument " + a);
  }
  if (shapes.empty()) shapes = {{16, 5120, 8192}, {64, 2048, 1408}, {1, 8192, 8192}};
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  const bool fnuz = fp8_quant::uses_fnuz(dev.target());
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"fp8", fnuz ? "e4m3fnuz" : "e4m3fn"},
                        {"config", {{"block_k", fp8_quant::Config{}.block_k}, {"block_n", fp8_quant::Config{}.block_n},
                                    {"num_warps", fp8_quant::Config{}.num_warps}}}};
  fmt::print("device {} ({}), {}\n", dev.name(), dev.target(), all["fp8"].get<std::string>());
  for (auto [E, K, N] : shapes)
    all["shapes"].push_back(fnuz ? bench_shape<tl::f8e4m3fnuz>(dev, E, K, N, repeats)
                                 : bench_shape<tl::f8e4m3fn>(dev, E, K, N, repeats));
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  bool ok = true;
  for (auto& s : all["shapes"]) ok &= s["relaxed"]["ok"].get<bool>() && s["acq_rel"]["ok"].get<bool>();
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-fp8-quant: {}\n", e.what());
  return 2;
}

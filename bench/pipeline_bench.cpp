// The tl side of the software-pipelining benchmark (bench/run_pipeline_bench.py runs it
// beside Triton's same kernel): a streaming reduction over K blocks of a large matrix,
// y[m] = sum over k of x[m, k] (bf16 in, f32 sums), each program BLOCK_M rows, its
// tl::range loop over K in blocks of BLOCK_K at num_stages 1..4, with the block loaded
// into registers ("registers") or staged through a one-stage shared buffer that the
// pipeliner multi-buffers with direct copies ("shared"). Every result is checked against
// a double-precision host sum of sampled rows before it is timed. The matrix (128 MiB
// at the default 8192 x 8192) is well past the H100's 50 MB L2.
//
//   tl-bench-pipeline [--json out.json] [--repeats 20] [--m 8192] [--k 8192]
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "bench/hashed_values.hpp"
#include "bench/timing.hpp"
#include "tl/tl.hpp"

namespace {

constexpr int kBlockM = 16, kBlockK = 256, kWarps = 4;

auto& row_sum_kernel() {
  static auto k = tl::kernel("stream_row_sum", [](tl::ptr<tl::bf16> x, tl::ptr<tl::f32> y, tl::i32 M, tl::i32 K,
                                                  int BLOCK_M, int BLOCK_K, int STAGES, bool SHARED) {
    auto rows = tl::program_id(0) * BLOCK_M + tl::arange(0, BLOCK_M);
    auto cols = tl::arange(0, BLOCK_K);
    auto base = x + tl::expand_dims(rows * K, 1);
    auto row_ok = tl::expand_dims(rows < M, 1);
    auto acc = tl::zeros<tl::f32>({BLOCK_M});
    auto buf = tl::shared<tl::bf16>({1, BLOCK_M, BLOCK_K});
    for (auto k : tl::range(0, K, BLOCK_K, tl::num_stages(STAGES))) {
      auto c = k + cols;
      auto v = tl::load(base + tl::expand_dims(c, 0), row_ok & tl::expand_dims(c < K, 0), 0.0f);
      if (SHARED) {
        buf[0].store(v);
        v = buf[0].load();
      }
      acc = acc + tl::sum(v.to<tl::f32>(), 1);
    }
    tl::store(y + rows, acc, rows < M);
  });
  return k;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20;
  int64_t M = 8192, K = 8192;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--m" && i + 1 < argc) M = std::stoll(argv[++i]);
    else if (a == "--k" && i + 1 < argc) K = std::stoll(argv[++i]);
    else throw std::runtime_error("unknown argument " + a);
  }
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  std::vector<tl::bfloat16> hx(size_t(M * K));
  // [-1, 1) from a hash of the index: bench/run_pipeline_bench.py builds the same x.
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = tl::to_bf16(float(int32_t(tlbench::hash32(i) >> 8) - (1 << 23)) * 0x1p-23f);
  auto X = dev.alloc<tl::bf16>(hx.size());
  X.upload(hx);
  auto Y = dev.alloc<tl::f32>(size_t(M));
  const double bytes = 2.0 * double(M) * double(K) + 4.0 * double(M);
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"M", M}, {"K", K}, {"bytes", bytes},
                        {"block_m", kBlockM}, {"block_k", kBlockK}, {"num_warps", kWarps}};
  fmt::print("device {} ({}), x [{}, {}] bf16, [{}, {}] blocks, {} warps\n", dev.name(), dev.target(), M, K, kBlockM,
             kBlockK, kWarps);
  bool ok = true;
  const tl::grid g(tl::cdiv(M, kBlockM));
  for (bool shared : {false, true})
    for (int stages = 1; stages <= 4; ++stages) {
      auto run = [&] {
        row_sum_kernel()[g].with({.num_warps = kWarps})(X, Y, int(M), int(K), kBlockM, kBlockK, stages, shared);
      };
      std::vector<float> junk(size_t(M), -1.25e-9f);
      Y.upload(junk);
      run();
      dev.synchronize();
      auto y = Y.download();
      double worst = 0;
      for (int64_t m = 0; m < M; m += std::max<int64_t>(1, M / 257)) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k) want += tl::to_float(hx[size_t(m * K + k)]);
        worst = std::max(worst, std::fabs(double(y[size_t(m)]) - want) / (1.0 + std::fabs(want)));
      }
      bool good = worst < 1e-4;
      ok &= good;
      double ms = tlbench::time_ms(dev, run, repeats, 10);
      const char* name = shared ? "shared" : "registers";
      all["runs"].push_back({{"variant", name}, {"num_stages", stages}, {"ms", ms}, {"gbs", bytes / ms / 1e6},
                             {"ok", good}, {"worst_rel_error", worst}});
      fmt::print("tl {:<9} num_stages={} {:8.4f} ms {:7.0f} GB/s  {}\n", name, stages, ms, bytes / ms / 1e6,
                 good ? "ok" : "WRONG");
    }
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-pipeline: {}\n", e.what());
  return 2;
}

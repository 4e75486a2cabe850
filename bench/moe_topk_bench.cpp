// The tl side of the MoE top-k routing benchmark (bench/run_moe_topk_bench.py runs it
// beside Triton's kernel): per token, the k largest of its expert logits (f32 [T, E], E =
// 64 or 128 experts, k = 8), their expert ids, and the softmax of the kept k as routing
// weights (Mixtral / DeepSeek-style top-k-then-softmax), BLOCK_T tokens a program
// (2048 / E: 2048 logits a program) at 4 warps. tl::topk with tl::return_indices (Triton's
// bitonic top-k: blocks of k sorted, then halved; each (logit, expert) one 64-bit key on
// the GPU, the logits loaded 16 experts a thread on NVIDIA); the softmax's exponential is
// tl::fast_expf, Triton's tl.exp.
//
// Each result is checked against a host reference (std::stable_sort of each row, largest
// first, equal logits in expert order; the softmax in double) before it is timed: the
// ids exactly, the weights within 2^-17 relative (the approximate exponential). Times are device events around batches
// of launches, medians over repeats.
//
//   tl-bench-moe-topk [--json out.json] [--repeats 20] [--tokens 32768] [--experts 64,128] [--k 8]
//
// GB/s counts the bytes a kernel must move: the logits (4 E a token) in, the weights and
// ids (8 k a token) out.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "bench/hashed_values.hpp"
#include "bench/timing.hpp"
#include "tl/tl.hpp"

namespace {

constexpr int kLogitsPerProgram = 2048, kWarps = 4;

auto& route_kernel() {
  static auto k = tl::kernel("moe_topk_route", [](tl::ptr<tl::f32> logits, tl::ptr<tl::f32> weights, tl::ptr<tl::i32> ids,
                                                  tl::i32 T, int E, int K, int BLOCK_T) {
    auto rows = tl::expand_dims(tl::program_id(0) * BLOCK_T + tl::arange(0, BLOCK_T), 1);
    auto offs = rows * E + tl::expand_dims(tl::arange(0, E), 0);
    auto x = tl::load(logits + offs, offs < T * E, -INFINITY);
    auto [top, expert] = tl::topk(x, K, tl::return_indices);  // [BLOCK_T, K], largest first
    auto e = tl::fast_expf(top - tl::max(top, 1, tl::keep_dims));
    auto w = e / tl::sum(e, 1, tl::keep_dims);
    auto out = rows * K + tl::expand_dims(tl::arange(0, K), 0);
    tl::store(weights + out, w, out < T * K);
    tl::store(ids + out, expert, out < T * K);
  });
  return k;
}

// Logits in [-8, 8) from a hash of the index (bench/run_moe_topk_bench.py builds the same
// tensor), in steps of 2^-10 so that equal logits (ties) occur in a row.
std::vector<float> logits(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = float(int32_t(tlbench::hash32(i) >> 18) - (1 << 13)) * 0x1p-10f;
  return v;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string out;
  int repeats = 20, tokens = 32768, K = 8;
  std::vector<int> experts = {64, 128};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) out = argv[++i];
    else if (a == "--repeats" && i + 1 < argc) repeats = std::stoi(argv[++i]);
    else if (a == "--tokens" && i + 1 < argc) tokens = std::stoi(argv[++i]);
    else if (a == "--k" && i + 1 < argc) K = std::stoi(argv[++i]);
    else if (a == "--experts" && i + 1 < argc) {
      experts.clear();
      std::stringstream s(argv[++i]);
      for (std::string e; std::getline(s, e, ',');) experts.push_back(std::stoi(e));
    } else {
      throw std::runtime_error("unknown argument " + a);
    }
  }
  tl::device dev = tl::default_device();
  tlbench::use_device_events(dev);
  fmt::print("device {} ({}), {} tokens, k = {}\n", dev.name(), dev.target(), tokens, K);
  nlohmann::json all = {{"device", dev.name()}, {"target", dev.target()}, {"tokens", tokens}, {"k", K},
                        {"logits_per_program", kLogitsPerProgram}, {"num_warps", kWarps}};
  bool ok_all = true;
  for (int E : experts) {
    const int block_t = kLogitsPerProgram / E;
    const size_t n = size_t(tokens) * size_t(E);
    auto hx = logits(n);
    auto X = dev.alloc<tl::f32>(n);
    X.upload(hx);
    auto W = dev.alloc<tl::f32>(size_t(tokens) * K);
    auto I = dev.alloc<tl::i32>(size_t(tokens) * K);
    W.upload(std::vector<float>(W.size(), -1.25e-12f));  // poisoned: an element not written fails
    I.upload(std::vector<int32_t>(I.size(), -7));
    const tl::grid grid(tl::cdiv(tokens, block_t));
    auto launch = [&] { route_kernel()[grid].with({.num_warps = kWarps})(X, W, I, tokens, E, K, block_t); };
    launch();
    dev.synchronize();
    auto w = W.download();
    auto ids = I.download();
    size_t bad = 0;
    std::vector<int> ord(static_cast<size_t>(E));
    for (int t = 0; t < tokens; ++t) {
      const float* row = hx.data() + size_t(t) * E;
      std::iota(ord.begin(), ord.end(), 0);
      std::stable_sort(ord.begin(), ord.end(), [&](int a, int b) { return row[a] > row[b]; });
      double sum = 0;
      for (int j = 0; j < K; ++j) sum += std::exp(double(row[ord[size_t(j)]]) - row[ord[0]]);
      for (int j = 0; j < K; ++j) {
        const size_t at = size_t(t) * K + size_t(j);
        const double want = std::exp(double(row[ord[size_t(j)]]) - row[ord[0]]) / sum;
        bad += ids[at] != ord[size_t(j)] || std::fabs(w[at] - want) > want * 0x1p-17;
      }
    }
    double ms = tlbench::time_ms(dev, launch, repeats, 10);
    const double bytes = double(tokens) * (4.0 * E + 8.0 * K);
    const std::string name = fmt::format("topk{}_of_{}", K, E);
    fmt::print("tl {:<14} {:8.4f} ms {:7.0f} GB/s  {}\n", name, ms, bytes / ms / 1e6,
               bad ? fmt::format("WRONG ({} elements)", bad) : "ok");
    ok_all &= bad == 0;
    all["kernels"].push_back({{"name", name}, {"experts", E}, {"block_t", block_t}, {"ms", ms},
                              {"gbs", bytes / ms / 1e6}, {"bytes", bytes}, {"ok", bad == 0}});
  }
  if (!out.empty()) std::ofstream(out) << all.dump(2);
  return ok_all ? 0 : 1;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-bench-moe-topk: {}\n", e.what());
  return 2;
}

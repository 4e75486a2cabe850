// bench/results/sm90-2026-11-29-attention-bwd-regs (h200-2026-11-29-attention-bwd-d64's, the kernels reading the preprocess's scratch): sm_90 PTX of the attention backward at given configurations, ptxas -v.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include "runtime/cache.hpp"
#include "samples/attention/attention.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
template <class T> T* fake(int i) { return reinterpret_cast<T*>(uintptr_t(i + 1) << 20); }
int main(int argc, char** argv) {
  // args: dkdv|dq BM BN W D causal stages [arch]
  using E = tl::ty::bf16;
  std::string k = argv[1];
  int BM = atoi(argv[2]), BN = atoi(argv[3]), W = atoi(argv[4]), D = atoi(argv[5]), causal = atoi(argv[6]), st = atoi(argv[7]);
  std::string arch = argc > 8 ? argv[8] : "sm_90";
  int G = argc > 9 ? atoi(argv[9]) : 1;
  const int S = getenv("TL_S") ? atoi(getenv("TL_S")) : 4096;
  attention::Config cfg{BM, BN, W, st, 0, 0};
  float scale = float(1 / std::sqrt(double(D)));
  auto o = attention::options_of(cfg);
  auto b = [](int i) { return fake<tl::bfloat16>(i); };
  auto f = [](int i) { return fake<float>(i); };
  std::string meta = k == "dkdv" ? attention::bwd_dkdv_kernel<E>().compile(arch, o, b(0), b(1), b(2), b(3), f(4), b(6), b(7), S, S, G, scale, BM, BN, D, causal, st)
                                 : attention::bwd_dq_kernel<E>().compile(arch, o, b(0), b(1), b(2), b(3), f(4), b(6), S, S, G, scale, BM, BN, D, causal, st);
  std::string name = std::string(getenv("OUT") ? getenv("OUT") : "/tmp") + fmt::format("/{}_{}_{}x{}_w{}_D{}{}_s{}", arch, k, BM, BN, W, D, causal ? "c" : "", st);
  std::string isa = tltest::isa_of_compiled(meta);
  std::ofstream(name + (arch == "sm_90" ? ".ptx" : ".s")) << isa;
  auto entry = tl::cache::DiskCache::global().load(nlohmann::json::parse(meta).at("key").get<std::string>());
  if (entry && entry->artifacts.count("tile_ir")) { auto& a = entry->artifacts.at("tile_ir"); std::ofstream(name + ".ir") << std::string(a.begin(), a.end()); }
  std::ofstream(name + ".json") << meta;
  if (arch == "sm_90") {
    auto r = tltest::run_ptxas(isa, "-arch=sm_90a -v");
    std::string out = r.output;
    size_t p = out.find("Used");
    fmt::print("{} {}x{} w{} D={}{} s{}: {}", k, BM, BN, W, D, causal ? " causal" : "", st, out.substr(out.find("ptxas info    : Used") == std::string::npos ? 0 : out.rfind("bytes stack frame")));
    fmt::print("{}\n", out);
  } else {
    auto j = nlohmann::json::parse(meta);
    fmt::print("{} {}x{} w{} D={}{} {}: {}\n", k, BM, BN, W, D, causal ? " causal" : "", arch, j["report"].dump());
  }
}

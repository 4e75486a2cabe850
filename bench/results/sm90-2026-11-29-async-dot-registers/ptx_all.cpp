// bench/results/sm90-2026-11-29-async-dot-registers: sm_90 PTX of the attention sample's NVIDIA tuner candidates (forward, dK/dV, dQ; D 64 and 128,
// causal or not), samples/moe (five configurations), tutorial 06 attention and tutorial 03 matmul: one file a
// kernel in $OUT, named by its configuration, for comparing two builds (or two settings).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include "bench/attention_tutorial.hpp"
#include "bench/matmul_tutorial.hpp"
#include "samples/attention/attention.hpp"
#include "samples/attention/tune.hpp"
#include "samples/moe/moe.hpp"
#include "support/compile.hpp"
template <class T> T* fake(int i) { return reinterpret_cast<T*>(uintptr_t(i + 1) << 20); }
int main() {
  using E = tl::ty::bf16;
  const std::string out = getenv("OUT") ? getenv("OUT") : "/tmp";
  auto save = [&](std::string name, const std::string& meta) {
    for (char& ch : name)
      if (ch == ' ') ch = '_';
    std::ofstream(out + "/" + name + ".ptx") << tltest::isa_of_compiled(meta);
    std::fprintf(stderr, "== %s\n", name.c_str());
  };
  auto b = [](int i) { return fake<tl::bfloat16>(i); };
  auto f = [](int i) { return fake<float>(i); };
  const int S = 4096;
  for (int D : {64, 128})
    for (int causal : {0, 1})
      for (auto k : {attention::Kernel::fwd, attention::Kernel::dkdv, attention::Kernel::dq})
        for (const attention::Config& c : attention::candidates(k)) {
          if (!attention::runs_on(c, k, "sm_90", D)) continue;
          const auto o = attention::options_of(c);
          const float scale = float(1 / std::sqrt(double(D)));
          std::string meta, what;
          if (k == attention::Kernel::fwd) {
            what = "fwd";
            meta = attention::fwd_kernel<E>().compile("sm_90", o, b(0), b(1), b(2), b(3), f(4), S, S, 1, scale,
                                                      c.block_m, c.block_n, D, causal, c.num_stages);
          } else if (k == attention::Kernel::dkdv) {
            what = "dkdv";
            meta = attention::bwd_dkdv_kernel<E>().compile("sm_90", o, b(0), b(1), b(2), b(3), f(4), b(6), b(7), S, S,
                                                           1, scale, c.block_m, c.block_n, D, causal, c.num_stages);
          } else {
            what = "dq";
            meta = attention::bwd_dq_kernel<E>().compile("sm_90", o, b(0), b(1), b(2), b(3), f(4), b(6), S, S, 1,
                                                         scale, c.block_m, c.block_n, D, causal, c.num_stages);
          }
          save(fmt::format("sample_{}_{}x{}_w{}_s{}_D{}{}", what, c.block_m, c.block_n, c.num_warps, c.num_stages, D,
                           causal ? "c" : ""),
               meta);
        }
  for (int D : {64, 128})
    for (int causal : {0, 1})
      for (auto [bm, bn, w] : {std::array{128, 64, 4}, std::array{64, 64, 4}, std::array{128, 128, 8}})
        for (int st : {2, 3}) {
          attn::Config c{bm, bn, w, st};
          save(fmt::format("tutorial_attn_{}x{}_w{}_s{}_D{}{}", bm, bn, w, st, D, causal ? "c" : ""),
               attn::compile("sm_90", c, S, D, causal));
        }
  {
    const moe::Problem p{4096, 2880, 2880, 32, 4};
    for (const moe::Config c : {moe::Config{128, 128, 128, 8, 3, 8, 0, 0}, moe::Config{64, 128, 128, 8, 3, 4, 0, 0},
                                moe::Config{32, 128, 128, 8, 3, 4, 0, 0}, moe::Config{16, 64, 128, 8, 3, 4, 0, 0},
                                moe::Config{64, 64, 256, 8, 2, 4, 0, 0}}) {
      auto metas = moe::compile_experts<tl::ty::f4e2m1>("sm_90", c, p);
      for (size_t i = 0; i < metas.size(); ++i) save(fmt::format("moe_{}_{}", i == 0 ? "gate_up" : "down", moe::str(c)), metas[i]);
    }
  }
  for (auto [bm, bn, bk, w, st] : {std::array{128, 128, 64, 4, 3}, std::array{128, 256, 64, 8, 3},
                                   std::array{64, 128, 32, 4, 4}, std::array{128, 64, 32, 4, 4},
                                   std::array{64, 64, 32, 4, 5}, std::array{128, 128, 64, 8, 4},
                                   std::array{256, 128, 64, 8, 3}, std::array{64, 256, 64, 4, 3}}) {
    matmul_tutorial::Config c{bm, bn, bk, 8, st, w};
    save(fmt::format("tutorial_matmul_bf16_{}x{}x{}_w{}_s{}", bm, bn, bk, w, st),
         matmul_tutorial::compile<tl::ty::bf16>("sm_90", c, 4096, 4096, 4096));
    save(fmt::format("tutorial_matmul_f16_{}x{}x{}_w{}_s{}", bm, bn, bk, w, st),
         matmul_tutorial::compile<tl::ty::f16>("sm_90", c, 4096, 4096, 4096));
  }
}

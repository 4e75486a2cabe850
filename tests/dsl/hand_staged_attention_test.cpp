// Attention forward staged by hand, as a user new to tl writes it after Gluon's examples:
// K and V double-buffered in tl::shared (2 stages of [BLOCK_N, D]), the next block stored
// while this one is read, then both dots read from the stages. On gfx942 (64 KiB of LDS)
// the two buffers alone take all of it at D = 128, BLOCK_N = 64; the compiler must plan
// what is left (the dots' operand reads, the softmax's conversions) without a scratch
// region it has no room for, and say so in a remark, instead of failing with "out of
// shared memory" (issue 39). Run on the CPU against a double-precision reference;
// compiled for gfx942, gfx950 and sm_90.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "support/reference.hpp"
#include "tl/tl.hpp"

namespace {

using namespace tltest;

auto& hand_staged_attention() {
  static auto k = tl::kernel("hand_staged_attn_fwd", [](tl::ptr<tl::bf16> Q, tl::ptr<tl::bf16> K, tl::ptr<tl::bf16> V,
                                                          tl::ptr<tl::bf16> O, tl::i32 S, tl::f32 sm_scale,
                                                          int BLOCK_M, int BLOCK_N, int D) {
    const float inf = std::numeric_limits<float>::infinity();
    auto start_m = tl::program_id(0);
    auto bh = tl::program_id(1);
    auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
    auto offs_n = tl::arange(0, BLOCK_N);
    auto offs_d = tl::arange(0, D);
    auto base = bh * S * D;
    auto q = tl::load(Q + base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0),
                      tl::expand_dims(offs_m < S, 1), 0.0f);
    auto k_smem = tl::shared<tl::bf16>({2, BLOCK_N, D});
    auto v_smem = tl::shared<tl::bf16>({2, BLOCK_N, D});
    auto block = [&](const tl::i32& n, const tl::ptr<tl::bf16>& P) {
      auto kn = n + offs_n;
      return tl::load(P + base + tl::expand_dims(kn, 1) * D + tl::expand_dims(offs_d, 0), tl::expand_dims(kn < S, 1),
                      0.0f);
    };
    k_smem[0].store(block(tl::i32(0), K));
    v_smem[0].store(block(tl::i32(0), V));
    auto m_i = tl::full<tl::f32>({BLOCK_M}, -inf);
    auto l_i = tl::zeros<tl::f32>({BLOCK_M});
    auto acc = tl::zeros<tl::f32>({BLOCK_M, D});
    auto qk_scale = sm_scale * 1.44269504f;
    auto n_blocks = tl::cdiv(S, BLOCK_N);
    for (auto j : tl::range(0, n_blocks)) {
      auto stage = j % 2;
      // The next block into the other stage (masked off past the end: zeros).
      auto next = (j + 1) * BLOCK_N;
      k_smem[1 - stage].store(block(next, K));
      v_smem[1 - stage].store(block(next, V));
      auto k = k_smem[stage].load();
      auto qk = tl::dot(q, tl::trans(k)) * qk_scale;
      auto kn = j * BLOCK_N + offs_n;
      qk = tl::where(tl::expand_dims(kn < S, 0), qk, -inf);
      auto m_ij = tl::maximum(m_i, tl::max(qk, 1));
      auto p = tl::exp2(qk - tl::expand_dims(m_ij, 1));
      auto alpha = tl::exp2(m_i - m_ij);
      l_i = l_i * alpha + tl::sum(p, 1);
      acc = acc * tl::expand_dims(alpha, 1);
      auto v = v_smem[stage].load();
      acc = tl::dot(p.to<tl::bf16>(), v, acc);
      m_i = m_ij;
    }
    acc = acc / tl::expand_dims(l_i, 1);
    tl::store(O + base + tl::expand_dims(offs_m, 1) * D + tl::expand_dims(offs_d, 0), acc.to<tl::bf16>(),
              tl::expand_dims(offs_m < S, 1));
  });
  return k;
}

struct Shape {
  int block_m, block_n, d;
};

std::string compile_for(const char* target, const Shape& s, int warps) {
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  return hand_staged_attention().compile(target, tl::launch_options{.num_warps = warps}, p, p, p, p, 1024,
                                         0.088f, s.block_m, s.block_n, s.d);
}

// Every target compiles it, gfx942 included, where the two stages of K and V fill the
// LDS: its report says how it fits.
TEST(HandStagedAttention, CompilesForEveryTargetAndFitsGfx942) {
  for (const Shape& s : {Shape{64, 64, 128}, Shape{128, 64, 128}})
    for (const char* target : {"gfx942", "gfx950", "sm_90"}) {
      SCOPED_TRACE(fmt::format("{} {}x{} D={}", target, s.block_m, s.block_n, s.d));
      std::string meta;
      ASSERT_NO_THROW(meta = compile_for(target, s, 4));
      auto j = nlohmann::json::parse(meta);
      const int64_t lds = j["report"].value("lds_bytes", j["report"].value("shared_bytes", int64_t(0)));
      if (std::string(target) != "gfx942") continue;
      // The two stages of K and V take all 64 KiB; Q's conversion to the dot's operand
      // layout, before the buffers are allocated, uses their bytes (the remark says so).
      EXPECT_LE(lds, 65536) << meta.substr(0, 2000);
      EXPECT_NE(j["remarks"].dump().find("share bytes with tl::shared buffers not live where they are used"),
                std::string::npos)
          << j["remarks"].dump();
    }
}

// The same kernel on the device under test (the CPU in CI) against a double-precision
// softmax(Q K^T * scale) V, the output poisoned first; S ragged (not a multiple of
// BLOCK_N: the last block's keys masked).
TEST(HandStagedAttention, MatchesADoubleReference) {
  const int BH = 2, S = 100, D = 32, BM = 32, BN = 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  auto make = [&] {
    std::vector<tl::bfloat16> x(BH * S * D);
    for (auto& e : x) e = tl::to_bf16(u(rng));
    return x;
  };
  auto hq = make(), hk = make(), hv = make();
  auto Q = upload<tl::ty::bf16>(hq), K = upload<tl::ty::bf16>(hk), V = upload<tl::ty::bf16>(hv);
  auto O = test_device().alloc<tl::bf16>(size_t(BH * S * D));
  poison(O);
  const float scale = 1.0f / std::sqrt(float(D));
  hand_staged_attention()[tl::grid((S + BM - 1) / BM, BH)](Q, K, V, O, S, scale, BM, BN, D);
  auto o = O.download();
  double worst = 0;
  for (int b = 0; b < BH; ++b)
    for (int i = 0; i < S; ++i) {
      std::vector<double> w(S);
      double mx = -1e300, sum = 0;
      for (int j = 0; j < S; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += to_double(hq[(b * S + i) * D + d]) * to_double(hk[(b * S + j) * D + d]);
        w[j] = dot * scale;
        mx = std::max(mx, w[j]);
      }
      for (int j = 0; j < S; ++j) sum += (w[j] = std::exp(w[j] - mx));
      for (int d = 0; d < D; ++d) {
        double ref = 0;
        for (int j = 0; j < S; ++j) ref += w[j] / sum * to_double(hv[(b * S + j) * D + d]);
        const double got = to_double(o[(b * S + i) * D + d]);
        worst = std::isnan(got) ? INFINITY : std::max(worst, std::abs(ref - got));
      }
    }
  // P is rounded to bf16 before the second dot, and O to bf16: a few bf16 ulps of 1.
  EXPECT_LT(worst, 2e-2);
}

}  // namespace

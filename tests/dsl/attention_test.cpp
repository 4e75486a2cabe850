// Triton's tutorial 06 fused-attention forward transcribed into tl (bench/attention_tutorial.hpp),
// run on the test device (the CPU in CI, a GPU with TL_DEVICE): O = softmax(Q.K^T * sm_scale) V
// per batch*head, causal or not, against a double-precision reference written as plain
// loops over the same bf16 inputs. Head dims 64 and 128; sequence lengths 1, 17, 128 and
// 200 (ragged ones masked: rows and keys past S); BLOCK_M x BLOCK_N 64x32, 32x32 and
// 64x64 with 2 or 3 pipeline stages; the output poisoned with bf16 NaNs before every run.
//
// Error bound: Q.K^T is exact products summed in f32, so the scores are within ~1e-5 of
// the reference; P is rounded to bf16 (relative 2^-9) before P.V while l_i sums the
// unrounded P, which moves O by at most 2^-9 * max|V| = 2e-3; O is rounded to bf16
// (relative 2^-9). The tolerance, 1e-2 + 1e-2 * |O|, is a few times that; a kernel run
// with the scale 10% off is checked to fall outside it (the test can fail).
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "bench/attention_tutorial.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

constexpr int BH = 2;
constexpr double kAtol = 1e-2, kRtol = 1e-2;

struct Inputs {
  std::vector<tl::bfloat16> q, k, v;
  std::vector<double> want;  // O, [BH, S, D]
};

std::vector<tl::bfloat16> random_bf16(size_t n, float range) {
  std::vector<float> f = random_floats(n, -range, range);
  std::vector<tl::bfloat16> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = tl::to_bf16(f[i]);
  return h;
}

// softmax(Q.K^T * scale) V in double, per batch*head, keys j < S (and j <= i when causal).
std::vector<double> reference(const std::vector<tl::bfloat16>& q, const std::vector<tl::bfloat16>& k,
                              const std::vector<tl::bfloat16>& v, int S, int D, bool causal, double scale) {
  auto f = [](const std::vector<tl::bfloat16>& x) {
    std::vector<double> d(x.size());
    for (size_t i = 0; i < x.size(); ++i) d[i] = tl::to_float(x[i]);
    return d;
  };
  std::vector<double> Q = f(q), K = f(k), V = f(v), O(q.size(), 0.0), s(S);
  for (int b = 0; b < BH; ++b) {
    const size_t base = size_t(b) * S * D;
    for (int i = 0; i < S; ++i) {
      const int last = causal ? i : S - 1;
      double mx = -INFINITY;
      for (int j = 0; j <= last; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += Q[base + size_t(i) * D + d] * K[base + size_t(j) * D + d];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double l = 0;
      for (int j = 0; j <= last; ++j) l += (s[j] = std::exp(s[j] - mx));
      double* o = &O[base + size_t(i) * D];
      for (int j = 0; j <= last; ++j)
        for (int d = 0; d < D; ++d) o[d] += s[j] / l * V[base + size_t(j) * D + d];
    }
  }
  return O;
}

Inputs make_inputs(int S, int D, bool causal) {
  const size_t n = size_t(BH) * S * D;
  Inputs in;
  // Q and K in [-2, 2): scores of standard deviation ~1.3 after the 1/sqrt(D) scale, a
  // softmax far from flat (a wrong scale shows); V in [-1, 1).
  in.q = random_bf16(n, 2.0f), in.k = random_bf16(n, 2.0f), in.v = random_bf16(n, 1.0f);
  in.want = reference(in.q, in.k, in.v, S, D, causal, attn::default_scale(D));
  return in;
}

// bf16 NaN (0xFFFF) everywhere: an element the kernel does not write never passes.
void poison_nan(const tl::buffer<tl::ty::bf16>& b) {
  std::vector<tl::bfloat16> h(b.size());
  std::memset(static_cast<void*>(h.data()), 0xFF, h.size() * sizeof(h[0]));
  b.upload(h);
}

std::vector<tl::bfloat16> run(const Inputs& in, const attn::Config& c, int S, int D, bool causal, double scale) {
  auto dq = upload<tl::ty::bf16>(in.q), dk = upload<tl::ty::bf16>(in.k), dv = upload<tl::ty::bf16>(in.v);
  auto dout = test_device().alloc<tl::bf16>(in.q.size());
  poison_nan(dout);
  attn::forward(test_device(), c, dq, dk, dv, dout, BH, S, D, causal, scale);
  return dout.download();
}

std::string str(const attn::Config& c) {
  return fmt::format("{}x{} w{} s{}", c.block_m, c.block_n, c.num_warps, c.num_stages);
}

// The configurations each case runs (BLOCK_M x BLOCK_N, num_warps, num_stages): BLOCK_N
// below, equal to and (with BLOCK_M 32) equal to BLOCK_M; 2 and 3 stages (the pipeliner
// with trip counts below, at and above the stage count).
const attn::Config kConfigs[] = {{64, 32, 4, 2}, {32, 32, 4, 3}, {64, 64, 4, 2}};
const int kLengths[] = {1, 17, 128, 200};

struct Case {
  bool causal;
  int D;
};
void PrintTo(const Case& c, std::ostream* os) { *os << (c.causal ? "causal" : "non-causal") << " D=" << c.D; }

class Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Attention, MatchesDoubleReference) {
  const auto [causal, D] = GetParam();
  for (int S : kLengths) {
    Inputs in = make_inputs(S, D, causal);
    for (const attn::Config& c : kConfigs) {
      SCOPED_TRACE(fmt::format("BH {} S {} D {} causal {} config {}", BH, S, D, int(causal), str(c)));
      auto got = run(in, c, S, D, causal, attn::default_scale(D));
      EXPECT_TRUE(near(got, in.want, kRtol, kAtol));
      if (::testing::Test::HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Attention,
                         ::testing::Values(Case{false, 64}, Case{true, 64}, Case{false, 128}, Case{true, 128}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return fmt::format("{}D{}", i.param.causal ? "Causal" : "NonCausal", i.param.D);
                         });

// The tolerance separates a right kernel from a slightly wrong one: the same kernel with
// sm_scale 10% off (scores 10% sharper) is outside it, causal or not.
TEST(AttentionTolerance, WrongScaleFails) {
  for (bool causal : {false, true}) {
    const int S = 128, D = 64;
    Inputs in = make_inputs(S, D, causal);
    auto got = run(in, kConfigs[0], S, D, causal, 1.1 * attn::default_scale(D));
    EXPECT_FALSE(near(got, in.want, kRtol, kAtol)) << "causal " << causal;
  }
}

// The traced tile IR (what a compile-only codegen test compiles for sm_90 / gfx942 /
// gfx950) has the tutorial's structure: one loop, two dots, the exp2s.
TEST(AttentionTrace, TileIrHasOneLoopAndTwoDots) {
  for (bool causal : {false, true}) {
    auto f = attn::trace_ir({128, 64, 4, 2}, 128, causal);
    ASSERT_TRUE(f);
    int loops = 0, dots = 0, exp2s = 0, dots_in_loop = 0;
    tl::ir::walk(f->body, [&](tl::ir::Operation& op) {
      loops += op.op == tl::Op::for_;
      exp2s += op.op == tl::Op::exp2;
      if (op.op == tl::Op::dot) {
        ++dots;
        dots_in_loop += op.parent && op.parent->parent && op.parent->parent->op == tl::Op::for_;
      }
    });
    EXPECT_EQ(loops, 1);
    EXPECT_EQ(dots, 2);
    EXPECT_EQ(dots_in_loop, 2);
    EXPECT_EQ(exp2s, 2);
    EXPECT_EQ(f->arg_info.size(), 6u);
  }
}

}  // namespace

// tl::dot's input_precision (Triton's tl.dot input_precision) for f32 operands, run on the
// test device (the CPU in CI; TL_DEVICE=cuda on the H100, where the three differ):
//  - ieee: every product rounded once in f32 and summed in f32, so the error against a
//    double reference is within an f32 FMA chain's bound, K 2^-24 sum |a||b| (gamma_K);
//  - tf32 (the default, Triton's): on NVIDIA the matrix cores round the operands to TF32,
//    about 2^-11 of sum |a||b| (a 32x32x32 dot of values in [-1, 1]: ~1e-3), which the
//    test requires to still be the case there; elsewhere it is ieee's result bit for bit;
//  - tf32x3: Triton's 3xTF32 split, within a few times ieee's bound.
// Random inputs in [-1, 1] against a double-precision reference, outputs poisoned first;
// a K loop (the accumulator carried) and a dot without an accumulator; infinities through
// tf32x3's split.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "support/reference.hpp"

using namespace tltest;
using tl::f32;
using tl::i32;

namespace {

// C[M, N] = A[M, K] . B[K, N] in one program, K in steps of BK, with the precision asked
// (0 tf32, 1 ieee, 2 tf32x3; the default overload for -1). NO_ACC: one dot, K = BK.
auto& precision_kernel() {
  static auto k = tl::kernel("dot_precision", [](tl::ptr<f32> a, tl::ptr<f32> b, tl::ptr<f32> c, int M, int N, int K,
                                                 int BK, int PRECISION, int NO_ACC) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, BK);
    auto dot = [&](const tl::tile<tl::ty::f32>& x, const tl::tile<tl::ty::f32>& y, const tl::tile<tl::ty::f32>& acc) {
      if (PRECISION < 0) return tl::dot(x, y, acc);
      return tl::dot(x, y, acc, tl::input_precision(PRECISION));
    };
    auto out = tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
    if (NO_ACC) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
      auto y = tl::load(b + tl::expand_dims(rk, 1) * N + tl::expand_dims(rn, 0));
      tl::store(c + out, PRECISION < 0 ? tl::dot(x, y) : tl::dot(x, y, tl::input_precision(PRECISION)));
      return;
    }
    auto acc = tl::zeros<tl::ty::f32>({M, N});
    for (auto k0 : tl::range(0, K, BK)) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k0 + rk, 0));
      auto y = tl::load(b + tl::expand_dims(k0 + rk, 1) * N + tl::expand_dims(rn, 0));
      acc = dot(x, y, acc);
    }
    tl::store(c + out, acc);
  });
  return k;
}

struct Result {
  std::vector<float> got;
  std::vector<double> want, scale;  // the exact product and sum |a||b| per element
  // The largest |got - want| / scale.
  double worst() const {
    double w = 0;
    for (size_t i = 0; i < got.size(); ++i) w = std::max(w, std::fabs(double(got[i]) - want[i]) / scale[i]);
    return w;
  }
};

Result run(int M, int N, int K, int BK, int precision, bool no_acc, const std::vector<float>& ha,
           const std::vector<float>& hb) {
  Result r;
  r.want.assign(size_t(M) * N, 0.0);
  r.scale.assign(size_t(M) * N, 1e-30);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        double p = double(ha[size_t(m) * K + k]) * double(hb[size_t(k) * N + n]);
        r.want[size_t(m) * N + n] += p;
        r.scale[size_t(m) * N + n] += std::fabs(p);
      }
  auto a = upload<tl::ty::f32>(ha), b = upload<tl::ty::f32>(hb);
  auto c = test_device().alloc<tl::ty::f32>(size_t(M) * N);
  poison(c);
  precision_kernel()[tl::grid(1)](a, b, c, M, N, K, BK, precision, int(no_acc));
  r.got = c.download();
  return r;
}

bool nvidia() { return test_device().kind() == tl::device_kind::cuda; }

// gamma_K for an f32 chain of K multiply-adds: K u / (1 - K u), u = 2^-24.
double fma_chain_bound(int K) { return K * 0x1p-24 / (1 - K * 0x1p-24); }

struct Case {
  int M, N, K, BK;
  bool no_acc;
};

std::string str(const Case& c) {
  return fmt::format("{}x{}x{} (BK {}){}", c.M, c.N, c.K, c.BK, c.no_acc ? " no-acc" : "");
}

const Case kCases[] = {{32, 32, 32, 32, true}, {32, 32, 128, 32, false}, {64, 64, 64, 16, false},
                       {16, 64, 32, 32, false}};

}  // namespace

// ieee: within the FMA chain's bound everywhere (NVIDIA: f32 FMAs, no TF32 mma).
TEST(DotPrecision, IeeeIsWithinAnF32FmaChainsBound) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(str(c));
    auto ha = random_floats(size_t(c.M) * c.K, -1, 1), hb = random_floats(size_t(c.K) * c.N, -1, 1);
    Result r = run(c.M, c.N, c.K, c.BK, int(tl::input_precision::ieee), c.no_acc, ha, hb);
    EXPECT_LE(r.worst(), fma_chain_bound(c.K)) << "relative to sum |a||b|";
  }
}

// The default is Triton's tf32: on NVIDIA its error is TF32's (above 2^-16 of sum |a||b|
// on random inputs, far above ieee's), and the explicit tf32 gives the same bits; on the
// CPU and AMD (f32 products either way) the default is ieee's result bit for bit.
TEST(DotPrecision, DefaultIsTf32AsTriton) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(str(c));
    auto ha = random_floats(size_t(c.M) * c.K, -1, 1), hb = random_floats(size_t(c.K) * c.N, -1, 1);
    Result def = run(c.M, c.N, c.K, c.BK, -1, c.no_acc, ha, hb);
    Result tf32 = run(c.M, c.N, c.K, c.BK, int(tl::input_precision::tf32), c.no_acc, ha, hb);
    Result ieee = run(c.M, c.N, c.K, c.BK, int(tl::input_precision::ieee), c.no_acc, ha, hb);
    EXPECT_EQ(def.got, tf32.got);
    EXPECT_LE(def.worst(), 0x1p-10) << "TF32's bound";
    if (nvidia()) {
      EXPECT_GT(def.worst(), 0x1p-16) << "f32 operands on NVIDIA are TF32 by default (Triton's default)";
      fmt::print("{}: default (tf32) {:.3g}, ieee {:.3g} relative to sum |a||b|\n", str(c), def.worst(), ieee.worst());
    } else {
      EXPECT_EQ(def.got, ieee.got) << "f32 products are exact on " << test_device().target();
    }
  }
}

// tf32x3: a_hi b_hi + a_hi b_lo + a_lo b_hi drops a_lo b_lo (2^-22 of |ab|) and, on
// NVIDIA, the low parts' own TF32 rounding (2^-22 more): close to ieee, far from tf32.
TEST(DotPrecision, Tf32x3IsCloseToIeee) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(str(c));
    auto ha = random_floats(size_t(c.M) * c.K, -1, 1), hb = random_floats(size_t(c.K) * c.N, -1, 1);
    Result x3 = run(c.M, c.N, c.K, c.BK, int(tl::input_precision::tf32x3), c.no_acc, ha, hb);
    EXPECT_LE(x3.worst(), 3 * fma_chain_bound(c.K) + 0x1p-20) << "relative to sum |a||b|";
  }
}

// An infinite operand through tf32x3's split (inf - inf = NaN in its low part): the row
// it meets is +-inf as the exact product says, not NaN; the other rows stay finite.
TEST(DotPrecision, Tf32x3KeepsInfinities) {
  const int M = 16, N = 16, K = 16;
  auto ha = random_floats(size_t(M) * K, 0.5f, 1), hb = random_floats(size_t(K) * N, 0.5f, 1);
  ha[3 * K + 5] = std::numeric_limits<float>::infinity();  // row 3: +inf (b > 0)
  Result r = run(M, N, K, K, int(tl::input_precision::tf32x3), true, ha, hb);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float g = r.got[size_t(m) * N + n];
      if (m == 3) EXPECT_EQ(g, std::numeric_limits<float>::infinity()) << m << ", " << n;
      else EXPECT_TRUE(std::isfinite(g)) << m << ", " << n << ": " << g;
    }
}

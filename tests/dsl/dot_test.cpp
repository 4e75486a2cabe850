// tl::dot, run on the test device (the CPU in CI, a GPU with TL_DEVICE): a tiled GEMM
// C = A.B (+ the accumulator carried through a K loop) for every operand dtype (bf16,
// f16, f32, i8, the four FP8 formats and a mixed FP8 pair) and the tile shapes of every
// matrix instruction tl uses (M, N 16..128; K 16..128), against a double-precision
// reference on random inputs; ragged M, N and K through masks; B read transposed
// (tl::trans of a [N, K] tile); a dot without an accumulator; outputs poisoned first.
// i8 is exact; the float dtypes' products are exact in f32, so only the f32 summation
// (in whatever order the device sums) separates the result from the reference.
#include <fmt/format.h>

#include <string>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/target.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"

using namespace tltest;
using tl::f32;
using tl::i32;

namespace {

template <class A> using Acc = std::conditional_t<std::is_same_v<A, tl::tile<tl::ty::i8>>, i32, f32>;

// C[M, N] = A[M, K] . B (B stored [K, N], or [N, K] when TRANS_B: read as [BN, BK] and
// transposed), blocks of BM x BN per program, K in steps of BK with the accumulator
// carried; everything past M, N, K masked off. NO_ACC: one dot without an accumulator
// (K must be BK).
template <class EA, class EB> auto& gemm_kernel() {
  using C = Acc<EA>;
  static auto k = tl::kernel("dot_gemm", [](tl::ptr<EA> a, tl::ptr<EB> b, tl::ptr<C> c, i32 M, i32 N, i32 K, int BM,
                                            int BN, int BK, int TRANS_B, int NO_ACC) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto load_b = [&](const i32& k0) {
      auto kk = k0 + rk;
      if (TRANS_B) {
        auto m = tl::expand_dims(rn < N, 1) & tl::expand_dims(kk < K, 0);
        return tl::trans(tl::load(b + tl::expand_dims(rn, 1) * K + tl::expand_dims(kk, 0), m, 0));
      }
      auto m = tl::expand_dims(kk < K, 1) & tl::expand_dims(rn < N, 0);
      return tl::load(b + tl::expand_dims(kk, 1) * N + tl::expand_dims(rn, 0), m, 0);
    };
    auto load_a = [&](const i32& k0) {
      auto kk = k0 + rk;
      auto m = tl::expand_dims(rm < M, 1) & tl::expand_dims(kk < K, 0);
      return tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(kk, 0), m, 0);
    };
    auto out = tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0);
    auto om = tl::expand_dims(rm < M, 1) & tl::expand_dims(rn < N, 0);
    if (NO_ACC) {
      tl::store(c + out, tl::dot(load_a(i32(0)), load_b(i32(0))), om);
      return;
    }
    auto acc = tl::zeros<C>({BM, BN});
    for (auto k0 : tl::range(0, K, BK)) acc = tl::dot(load_a(k0), load_b(k0), acc);
    tl::store(c + out, acc, om);
  });
  return k;
}

struct Shape {
  int M, N, K, BM, BN, BK;
  bool trans_b = false, no_acc = false;
};

std::string str(const Shape& s) {
  return fmt::format("M{} N{} K{} blocks {}x{}x{}{}{}", s.M, s.N, s.K, s.BM, s.BN, s.BK, s.trans_b ? " B^T" : "",
                     s.no_acc ? " no-acc" : "");
}

template <class EA, class EB> void check(const Shape& s, double range) {
  using C = Acc<EA>;
  const auto problem = random_dot_problem<EA, EB>(s.M, s.N, s.K, s.trans_b, range);
  const auto& [want, scale] = problem.want;
  auto d = on_device<C>(problem, s.M, s.N);
  auto& k = gemm_kernel<EA, EB>();
  k[tl::grid((s.M + s.BM - 1) / s.BM, (s.N + s.BN - 1) / s.BN)](d.a, d.b, d.c, s.M, s.N, s.K, s.BM, s.BN, s.BK,
                                                                  int(s.trans_b), int(s.no_acc));
  auto got = d.c.download();
  if constexpr (std::is_same_v<C, i32>) {
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(double(got[i]), want[i]) << "element " << i << " of " << str(s);
  } else {
    // f32 summation of K exact products in any order: within K * 2^-23 of the largest
    // partial sum (bounded by sum |a||b|). f32 operands on NVIDIA go through TF32
    // (Triton's default precision): each product within 2^-9 of the exact one.
    bool tf32 = std::is_same_v<EA, f32> && test_device().kind() == tl::device_kind::cuda;
    double atol = 1e-30 + scale * (tf32 ? 0x1p-9 : 0.0) + scale * s.K * 0x1p-23;
    EXPECT_TRUE(near(got, want, 0.0, atol)) << str(s);
  }
}

// The tile shapes each instruction family is exercised with (CPU: the loop nest; GPU:
// 16x16 and 32x32 matrix instructions, several K steps, warps over M and N), one ragged
// case per K step size, a transposed B and a dot without accumulator.
std::vector<Shape> shapes(int min_k) {
  std::vector<Shape> s = {
      {16, 16, 64, 16, 16, 32},          {32, 32, 64, 32, 32, 32},       {64, 64, 128, 64, 64, 64},
      {128, 64, 64, 128, 64, 32},        {64, 128, 128, 32, 128, 128},   {50, 70, 90, 32, 32, 32},
      {33, 17, 45, 16, 16, min_k},       {40, 40, 64, 32, 32, 32, true},  {16, 32, min_k, 16, 32, min_k, false, true},
      {100, 36, 72, 64, 32, 64, true},
  };
  return s;
}

template <class EA, class EB = EA> void check_all(double range) {
  const int min_k = tl::bit_width(EA::elem::dtype) == 8 ? 32 : 16;  // FP8 and i8
  for (const Shape& s : shapes(min_k)) {
    SCOPED_TRACE(str(s));
    check<EA, EB>(s, range);
    if (::testing::Test::HasFailure()) return;
  }
}

// On a GPU, a dtype its matrix instructions do not take is a trace error (the misuse
// catalogue tests the message); these tests run it only where it exists.
bool fp8_ok(tl::DType d) {
  if (!on_gpu()) return true;
  auto caps = tl::codegen::capabilities_for(tl::codegen::parse_target(test_device().target()));
  for (const auto& mi : caps.matrix_instructions)
    if (mi.a == d) return true;
  return false;
}

}  // namespace

TEST(Dot, Bf16) { check_all<tl::bf16>(2.0); }
TEST(Dot, F16) { check_all<tl::f16>(2.0); }
TEST(Dot, F32) { check_all<f32>(2.0); }
TEST(Dot, I8IsExact) { check_all<tl::tile<tl::ty::i8>>(100.0); }
TEST(Dot, Fp8E4m3fn) {
  if (!fp8_ok(tl::DType::f8e4m3fn)) GTEST_SKIP() << "the device's matrix instructions do not take f8e4m3fn";
  check_all<tl::f8e4m3fn>(4.0);
}
TEST(Dot, Fp8E5m2) {
  if (!fp8_ok(tl::DType::f8e5m2)) GTEST_SKIP() << "the device's matrix instructions do not take f8e5m2";
  check_all<tl::f8e5m2>(4.0);
}
TEST(Dot, Fp8E4m3fnTimesE5m2) {
  if (!fp8_ok(tl::DType::f8e4m3fn)) GTEST_SKIP() << "the device's matrix instructions do not take f8e4m3fn";
  check_all<tl::f8e4m3fn, tl::f8e5m2>(4.0);
}
TEST(Dot, Fp8E4m3fnuz) {
  if (!fp8_ok(tl::DType::f8e4m3fnuz)) GTEST_SKIP() << "the device's matrix instructions do not take f8e4m3fnuz";
  check_all<tl::f8e4m3fnuz>(4.0);
}
TEST(Dot, Fp8E5m2fnuz) {
  if (!fp8_ok(tl::DType::f8e5m2fnuz)) GTEST_SKIP() << "the device's matrix instructions do not take f8e5m2fnuz";
  check_all<tl::f8e5m2fnuz>(4.0);
}

// A dot result feeds ordinary tile code: a row softmax-like reduction of Q.K^T (the
// attention pattern), an elementwise epilogue and a store of a narrow type.
TEST(Dot, ResultFeedsReductionsAndCasts) {
  constexpr int M = 32, N = 64, K = 32;
  static auto k = tl::kernel("dot_epilogue", [](tl::ptr<tl::bf16> q, tl::ptr<tl::bf16> kt, tl::ptr<f32> rowmax,
                                                tl::ptr<tl::bf16> out) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
    auto a = tl::load(q + tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
    auto b = tl::load(kt + tl::expand_dims(rn, 1) * K + tl::expand_dims(rk, 0));  // [N, K]
    auto s = tl::dot(a, tl::trans(b)) * 0.5f;
    tl::store(rowmax + rm, tl::max(s, 1));
    tl::store(out + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), s.to<tl::bf16>());
  });
  auto hq = random_matrix<tl::bf16>(M * K, 2.0), hk = random_matrix<tl::bf16>(N * K, 2.0);
  std::vector<double> s(M * N), mx(M, -1e300);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = 0;
      for (int j = 0; j < K; ++j) acc += double(tl::to_float(hq[m * K + j])) * tl::to_float(hk[n * K + j]);
      s[m * N + n] = acc * 0.5;
      mx[m] = std::max(mx[m], acc * 0.5);
    }
  auto dq = upload<tl::ty::bf16>(hq), dk = upload<tl::ty::bf16>(hk);
  auto dmax = test_device().alloc<f32>(M);
  auto dout = test_device().alloc<tl::bf16>(M * N);
  poison(dmax);
  poison(dout);
  k[tl::grid(1)](dq, dk, dmax, dout);
  EXPECT_TRUE(near(dmax.download(), mx, 1e-5, 1e-4));
  EXPECT_TRUE(near(dout.download(), s, 1.0 / 128, 1e-3));  // bf16 rounding of the output
}

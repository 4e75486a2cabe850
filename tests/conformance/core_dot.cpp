// Triton's test_dot (test_core.py) transcribed: X [M, K] . Y [K, N] with the test's
// epilogues (none, add-matrix, add-rows, add-cols, softmax, chain-dot with W [N, N]),
// operands stored row- or column-major (COL_A, COL_B: the strides say which), over the
// operand types tl.dot takes (f16, bf16, f32, i8, f8e5m2, f8e4m3fn) and several shapes.
// input_precision (ieee, tf32x3) on f32; out_dtype, 3-D dots and M, N or K below 16 are gaps.
#include "conformance/common.hpp"

namespace {
using namespace conformance;
namespace ty = tl::ty;

enum Epilogue { NONE, ADD_MATRIX, ADD_ROWS, ADD_COLS, SOFTMAX, CHAIN_DOT };

template <class TIn, class TOut> auto& dot_kernel() {
  static auto k = tl::kernel(
      std::string("test_dot_") + std::string(tl::name(TIn::dtype)),
      [](tl::ptr<TIn> X, tl::i32 stride_xm, tl::i32 stride_xk,  //
         tl::ptr<TIn> Y, tl::i32 stride_yk, tl::i32 stride_yn,  //
         tl::ptr<TIn> W, tl::i32 stride_wn, tl::i32 stride_wl,  //
         tl::ptr<TOut> Z, tl::i32 stride_zm, tl::i32 stride_zn,  //
         int BLOCK_M, int BLOCK_N, int BLOCK_K, Epilogue epilogue) {
        auto off_m = tl::arange(0, BLOCK_M);
        auto off_n = tl::arange(0, BLOCK_N);
        auto off_l = tl::arange(0, BLOCK_N);
        auto off_k = tl::arange(0, BLOCK_K);
        auto Xs = X + tl::expand_dims(off_m, 1) * stride_xm + tl::expand_dims(off_k, 0) * stride_xk;
        auto Ys = Y + tl::expand_dims(off_k, 1) * stride_yk + tl::expand_dims(off_n, 0) * stride_yn;
        auto Ws = W + tl::expand_dims(off_n, 1) * stride_wn + tl::expand_dims(off_l, 0) * stride_wl;
        auto Zs = Z + tl::expand_dims(off_m, 1) * stride_zm + tl::expand_dims(off_n, 0) * stride_zn;
        auto x = tl::load(Xs);
        auto y = tl::load(Ys);
        auto z = tl::dot(x, y);
        if (epilogue == ADD_MATRIX) z += tl::load(Zs);
        if (epilogue == ADD_ROWS) {
          auto ZRs = Z + off_m * stride_zm;
          z += tl::expand_dims(tl::load(ZRs), 1);
        }
        if (epilogue == ADD_COLS) {
          auto ZCs = Z + off_n * stride_zn;
          z += tl::expand_dims(tl::load(ZCs), 0);
        }
        if constexpr (std::is_same_v<TOut, ty::f32>) {
          if (epilogue == SOFTMAX) {
            auto max = tl::max(z, 1);
            z = z - tl::expand_dims(max, 1);
            auto num = tl::exp(z.template to<tl::f32>());
            auto den = tl::sum(num, 1);
            z = num / tl::expand_dims(den, 1);
          }
          if (epilogue == CHAIN_DOT) {
            auto w = tl::load(Ws);
            z = tl::dot(z.template to<TIn>(), w);
          }
        }
        tl::store(Zs, z);
      });
  return k;
}

// One case of test_dot: M, N, K, the epilogue, A and B column-major or not.
template <class TIn, class TOut> void test_dot(int M, int N, int K, Epilogue epilogue, bool col_a, bool col_b) {
  const std::string what = std::string(tl::name(TIn::dtype)) + " " + std::to_string(M) + "x" + std::to_string(N) +
                           "x" + std::to_string(K) + " epilogue " + std::to_string(int(epilogue)) +
                           (col_a ? " col_a" : "") + (col_b ? " col_b" : "");
  constexpr bool integral = tl::is_int(TIn::dtype);
  const double range = integral ? 8 : tl::is_fp8(TIn::dtype) ? 4 : 1;
  // x, y, w as the logical matrices, row-major; stored transposed where COL_A / COL_B
  auto x = random_values<TIn>(size_t(M) * K, -range, range), y = random_values<TIn>(size_t(K) * N, -range, range);
  auto w = random_values<TIn>(size_t(N) * N, -range, range);
  auto store_col = [](const auto& v, int rows, int cols) {
    auto t = v;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) t[size_t(c) * rows + r] = v[size_t(r) * cols + c];
    return t;
  };
  auto X = upload<TIn>(col_a ? store_col(x, M, K) : x), Y = upload<TIn>(col_b ? store_col(y, K, N) : y);
  auto W = upload<TIn>(w);
  int sxm = col_a ? 1 : K, sxk = col_a ? M : 1, syk = col_b ? 1 : N, syn = col_b ? K : 1;
  // Z holds the epilogue's addend when there is one (the test's `z += tl.load(Zs)`), else poison.
  auto zin = random_values<TOut>(size_t(M) * N, -range, range);
  auto Z = upload<TOut>(zin);
  if (epilogue == NONE || epilogue == SOFTMAX || epilogue == CHAIN_DOT) poison(Z);
  dot_kernel<TIn, TOut>()[tl::grid(1)].with({.num_warps = 4})(X, sxm, sxk, Y, syk, syn, W, N, 1, Z, N, 1, M, N, K,
                                                               epilogue);
  // reference
  std::vector<double> z(size_t(M) * N);
  double mag_max = 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double p = to_double(x[size_t(m) * K + k]) * to_double(y[size_t(k) * N + n]);
        acc += p, mag += std::fabs(p);
      }
      if (epilogue == ADD_MATRIX) acc += to_double(zin[size_t(m) * N + n]);
      if (epilogue == ADD_ROWS) acc += to_double(zin[size_t(m) * N]);
      if (epilogue == ADD_COLS) acc += to_double(zin[size_t(n)]);
      z[size_t(m) * N + n] = acc;
      mag_max = std::max(mag_max, mag);
    }
  // f32 operands are multiplied in TF32 on NVIDIA (Triton's default input_precision: each
  // operand rounded to 10 fraction bits); FP8 products are summed with about 13 fraction
  // bits on NVIDIA's tensor cores (docs/language.md), not f32's 23.
  double tol = mag_max * K * 0x1p-23;
  if (TIn::dtype == tl::DType::f32) tol += mag_max * 0x1p-9;
  if (tl::is_fp8(TIn::dtype) && tltest::on_gpu()) tol += mag_max * 0x1p-11;
  if (epilogue == SOFTMAX) {
    for (int m = 0; m < M; ++m) {
      double mx = -1e300, sum = 0;
      for (int n = 0; n < N; ++n) mx = std::max(mx, z[size_t(m) * N + n]);
      for (int n = 0; n < N; ++n) sum += std::exp(z[size_t(m) * N + n] - mx);
      for (int n = 0; n < N; ++n) z[size_t(m) * N + n] = std::exp(z[size_t(m) * N + n] - mx) / sum;
    }
    tol = 1e-5 + tol;
  }
  if (epilogue == CHAIN_DOT) {
    // z rounded to W's type, then z . w
    std::vector<double> c(size_t(M) * N);
    double mag2 = 0;
    for (int m = 0; m < M; ++m)
      for (int l = 0; l < N; ++l) {
        double acc = 0, mag = 0;
        for (int n = 0; n < N; ++n) {
          double p = to_double(from_double<TIn>(z[size_t(m) * N + n])) * to_double(w[size_t(n) * N + l]);
          acc += p, mag += std::fabs(p);
        }
        c[size_t(m) * N + l] = acc;
        mag2 = std::max(mag2, mag);
      }
    // z's rounding to TIn may land an ulp away from the reference's where z's own summation
    // error crosses a rounding boundary: a few such terms of |w| <= range each
    double zmax = 0;
    for (double v : z) zmax = std::max(zmax, std::fabs(v));
    tol = mag2 * N * 0x1p-23 + 8 * zmax * 2 * epsilon_of(TIn::dtype) * range;
    z = c;
  }
  auto got = Z.download();
  if constexpr (integral) EXPECT_TRUE(close(got, z, 0, 0, what));
  else EXPECT_TRUE(close(got, z, 0, tol + 1e-30, what));
}

TEST(Core, Dot) {
  test_dot<ty::f16, ty::f32>(32, 32, 32, NONE, false, false);
  test_dot<ty::f16, ty::f32>(16, 64, 32, ADD_MATRIX, true, false);
  test_dot<ty::bf16, ty::f32>(64, 16, 16, ADD_ROWS, false, true);
  test_dot<ty::f32, ty::f32>(32, 32, 16, ADD_COLS, true, true);
  test_dot<ty::f16, ty::f32>(32, 32, 32, SOFTMAX, false, false);
  test_dot<ty::f16, ty::f32>(32, 32, 32, CHAIN_DOT, false, false);
  test_dot<ty::i8, ty::i32>(32, 32, 32, NONE, false, false);
  test_dot<ty::f8e5m2, ty::f32>(32, 32, 32, NONE, false, true);
  test_dot<ty::f8e4m3fn, ty::f32>(16, 32, 64, NONE, false, false);
}

// test_dot's input_precision on f32 operands: "ieee" (f32 products: an f32 sum's error)
// and "tf32x3" (3xTF32: about 2^-21 of sum |x||y| more); "tf32" is the default above.
TEST(Core, DotInputPrecision) {
  static auto k = tl::kernel("test_dot_input_precision", [](tl::ptr<ty::f32> X, tl::ptr<ty::f32> Y, tl::ptr<ty::f32> Z,
                                                            int BLOCK, tl::input_precision p) {
    auto off = tl::arange(0, BLOCK);
    auto x = tl::load(X + tl::expand_dims(off, 1) * BLOCK + tl::expand_dims(off, 0));
    auto y = tl::load(Y + tl::expand_dims(off, 1) * BLOCK + tl::expand_dims(off, 0));
    tl::store(Z + tl::expand_dims(off, 1) * BLOCK + tl::expand_dims(off, 0), tl::dot(x, y, p));
  });
  const int B = 32;
  auto x = tltest::random_floats(B * B, -1, 1), y = tltest::random_floats(B * B, -1, 1);
  std::vector<double> z(B * B);
  double mag_max = 0;
  for (int m = 0; m < B; ++m)
    for (int n = 0; n < B; ++n) {
      double acc = 0, mag = 0;
      for (int kk = 0; kk < B; ++kk) {
        double prod = double(x[m * B + kk]) * double(y[kk * B + n]);
        acc += prod, mag += std::fabs(prod);
      }
      z[m * B + n] = acc, mag_max = std::max(mag_max, mag);
    }
  auto X = tltest::upload<ty::f32>(x), Y = tltest::upload<ty::f32>(y);
  for (tl::input_precision p : {tl::input_precision::ieee, tl::input_precision::tf32x3}) {
    auto Z = tltest::test_device().alloc<ty::f32>(B * B);
    tltest::poison(Z);
    k[tl::grid(1)](X, Y, Z, B, p);
    double tol = mag_max * B * 0x1p-24 * (p == tl::input_precision::ieee ? 1 : 3) +
                 (p == tl::input_precision::tf32x3 ? mag_max * 0x1p-20 : 0);
    EXPECT_TRUE(close(Z.download(), z, 0, tol, p == tl::input_precision::ieee ? "ieee" : "tf32x3"));
  }
}

TEST(Core, DotOutDtype) { CONFORMANCE_GAP("dot options"); }
TEST(Core, Dot3d) { CONFORMANCE_GAP("3-D tl.dot"); }
TEST(Core, DotSmallShapes) { CONFORMANCE_GAP("small dot shapes"); }

}  // namespace

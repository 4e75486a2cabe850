// Triton's language tests (test_core.py), reductions, scans and shapes, transcribed:
// test_reduce1d / test_reduce (sum, max, min, argmax, argmin over each axis of a 2-D tile,
// and of a 1-D one), test_scan2d (cumsum over each axis), test_reshape, test_trans /
// test_permute, test_expand_dims, test_broadcast, test_arange, test_full; against plain
// C++ references.
#include <algorithm>
#include <array>
#include <numeric>

#include "conformance/common.hpp"

namespace {
using namespace conformance;
namespace ty = tl::ty;

// test_reduce: z = tl.<op>(x, axis) of a BLOCK_M x BLOCK_N tile, for axis 0 and 1; and
// test_reduce1d on the tile reshaped to one dim, and axis=None (the whole tile).
template <class T> void test_reduce(double lo, double hi) {
  constexpr int BLOCK_M = 16, BLOCK_N = 32;
  static auto k = tl::kernel(std::string("test_reduce_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Zv, tl::ptr<tl::i32> Zi, int BLOCK_M, int BLOCK_N) {
    auto range_m = tl::arange(0, BLOCK_M);
    auto range_n = tl::arange(0, BLOCK_N);
    auto x = tl::load(X + tl::expand_dims(range_m, 1) * BLOCK_N + tl::expand_dims(range_n, 0));
    // axis 0: BLOCK_N results; axis 1: BLOCK_M results
    tl::store(Zv + range_n, tl::sum(x, 0));
    tl::store(Zv + BLOCK_N + range_n, tl::max(x, 0));
    tl::store(Zv + 2 * BLOCK_N + range_n, tl::min(x, 0));
    tl::store(Zi + range_n, tl::argmax(x, 0));
    tl::store(Zi + BLOCK_N + range_n, tl::argmin(x, 0));
    auto o = 3 * BLOCK_N;
    tl::store(Zv + o + range_m, tl::sum(x, 1));
    tl::store(Zv + o + BLOCK_M + range_m, tl::max(x, 1));
    tl::store(Zv + o + 2 * BLOCK_M + range_m, tl::min(x, 1));
    tl::store(Zi + 2 * BLOCK_N + range_m, tl::argmax(x, 1));
    tl::store(Zi + 2 * BLOCK_N + BLOCK_M + range_m, tl::argmin(x, 1));
    // test_reduce1d: the flattened tile, reduced to a scalar
    auto flat = tl::reshape(x, {BLOCK_M * BLOCK_N});
    auto o1 = o + 3 * BLOCK_M;
    tl::store(Zv + o1, tl::sum(flat, 0));
    tl::store(Zv + o1 + 1, tl::max(flat, 0));
    tl::store(Zv + o1 + 2, tl::min(flat, 0));
    tl::store(Zi + 2 * BLOCK_N + 2 * BLOCK_M, tl::argmax(flat, 0));
    tl::store(Zi + 2 * BLOCK_N + 2 * BLOCK_M + 1, tl::argmin(flat, 0));
    // axis=None
    tl::store(Zv + o1 + 3, tl::sum(x));
  });
  const std::string dt(tl::name(T::dtype));
  auto hx = random_values<T>(BLOCK_M * BLOCK_N, lo, hi);
  auto X = upload<T>(hx);
  auto Zv = output<T>(3 * BLOCK_N + 3 * BLOCK_M + 4);
  auto Zi = output<ty::i32>(2 * BLOCK_N + 2 * BLOCK_M + 2);
  k[tl::grid(1)](X, Zv, Zi, BLOCK_M, BLOCK_N);
  auto zv = doubles(Zv.download());
  auto zi = Zi.download();
  auto at = [&](int m, int n) { return to_double(hx[size_t(m * BLOCK_N + n)]); };
  const double eps = epsilon_of(T::dtype);
  // reduces `count` values v(0..count-1): sum, max, min, first argmax, first argmin
  auto check = [&](int count, auto v, double sum_got, double max_got, double min_got, int amax, int amin,
                   const std::string& what) {
    double sum = 0, mag = 0, mx = v(0), mn = v(0);
    int imx = 0, imn = 0;
    for (int i = 0; i < count; ++i) {
      sum += v(i), mag += std::fabs(v(i));
      if (v(i) > mx) mx = v(i), imx = i;
      if (v(i) < mn) mn = v(i), imn = i;
    }
    EXPECT_NEAR(sum_got, sum, mag * eps * count + 0) << what << " sum";
    EXPECT_EQ(max_got, mx) << what << " max";
    EXPECT_EQ(min_got, mn) << what << " min";
    EXPECT_EQ(amax, imx) << what << " argmax";
    EXPECT_EQ(amin, imn) << what << " argmin";
  };
  for (int n = 0; n < BLOCK_N; ++n)
    check(BLOCK_M, [&](int m) { return at(m, n); }, zv[size_t(n)], zv[size_t(BLOCK_N + n)], zv[size_t(2 * BLOCK_N + n)],
          zi[size_t(n)], zi[size_t(BLOCK_N + n)], dt + " axis 0 column " + std::to_string(n));
  const int o = 3 * BLOCK_N;
  for (int m = 0; m < BLOCK_M; ++m)
    check(BLOCK_N, [&](int n) { return at(m, n); }, zv[size_t(o + m)], zv[size_t(o + BLOCK_M + m)],
          zv[size_t(o + 2 * BLOCK_M + m)], zi[size_t(2 * BLOCK_N + m)], zi[size_t(2 * BLOCK_N + BLOCK_M + m)],
          dt + " axis 1 row " + std::to_string(m));
  const int o1 = o + 3 * BLOCK_M;
  check(BLOCK_M * BLOCK_N, [&](int i) { return to_double(hx[size_t(i)]); }, zv[size_t(o1)], zv[size_t(o1 + 1)],
        zv[size_t(o1 + 2)], zi[size_t(2 * BLOCK_N + 2 * BLOCK_M)], zi[size_t(2 * BLOCK_N + 2 * BLOCK_M + 1)],
        dt + " 1-D");
  double total = 0, mag = 0;
  for (auto v : hx) total += to_double(v), mag += std::fabs(to_double(v));
  EXPECT_NEAR(zv[size_t(o1 + 3)], total, mag * eps * BLOCK_M * BLOCK_N) << dt << " axis=None";
}

TEST(Core, Reduce) {
  test_reduce<ty::i32>(-1000, 1000);
  test_reduce<ty::f32>(-10, 10);
  test_reduce<ty::f16>(-10, 10);
}

// test_scan2d with cumsum over each axis.
template <class T> void test_cumsum(double lo, double hi) {
  constexpr int BLOCK_M = 8, BLOCK_N = 32;
  static auto k = tl::kernel(std::string("test_scan2d_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Z0, tl::ptr<T> Z1, int BLOCK_M, int BLOCK_N) {
    auto range_m = tl::arange(0, BLOCK_M);
    auto range_n = tl::arange(0, BLOCK_N);
    auto offs = tl::expand_dims(range_m, 1) * BLOCK_N + tl::expand_dims(range_n, 0);
    auto x = tl::load(X + offs);
    tl::store(Z0 + offs, tl::cumsum(x, 0));
    tl::store(Z1 + offs, tl::cumsum(x, 1));
  });
  auto hx = random_values<T>(BLOCK_M * BLOCK_N, lo, hi);
  auto X = upload<T>(hx);
  auto Z0 = output<T>(BLOCK_M * BLOCK_N), Z1 = output<T>(BLOCK_M * BLOCK_N);
  k[tl::grid(1)](X, Z0, Z1, BLOCK_M, BLOCK_N);
  std::vector<double> w0(BLOCK_M * BLOCK_N), w1(BLOCK_M * BLOCK_N);
  for (int n = 0; n < BLOCK_N; ++n)
    for (int m = 0; m < BLOCK_M; ++m)
      w0[size_t(m * BLOCK_N + n)] = (m ? w0[size_t((m - 1) * BLOCK_N + n)] : 0) + to_double(hx[size_t(m * BLOCK_N + n)]);
  for (int m = 0; m < BLOCK_M; ++m)
    for (int n = 0; n < BLOCK_N; ++n)
      w1[size_t(m * BLOCK_N + n)] = (n ? w1[size_t(m * BLOCK_N + n - 1)] : 0) + to_double(hx[size_t(m * BLOCK_N + n)]);
  double tol = epsilon_of(T::dtype) * hi * BLOCK_N * BLOCK_N;
  EXPECT_TRUE(close(Z0.download(), w0, 0, tol, std::string(tl::name(T::dtype)) + " cumsum axis 0"));
  EXPECT_TRUE(close(Z1.download(), w1, 0, tol, std::string(tl::name(T::dtype)) + " cumsum axis 1"));
}

TEST(Core, Scan2dCumsum) {
  test_cumsum<ty::i32>(-1000, 1000);
  test_cumsum<ty::f32>(-10, 10);
}

// test_reshape, test_trans / test_permute (2-D and 3-D), test_expand_dims, test_broadcast,
// test_arange with a non-zero start, test_full, in one kernel over an [M, N] and a
// [2, 4, 8] tile.
TEST(Core, Shapes) {
  conformance::note_partial("tl.broadcast(x, y)");
  constexpr int M = 4, N = 16, A = 2, B = 4, C = 8;
  static auto k = tl::kernel("test_shapes", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> Y, tl::ptr<tl::f32> Z3,
                                               tl::ptr<tl::f32> reshaped, tl::ptr<tl::f32> transposed,
                                               tl::ptr<tl::f32> permuted, tl::ptr<tl::f32> y_broadcasted,
                                               tl::ptr<tl::i32> aranged, tl::ptr<tl::f32> full, int M, int N) {
    auto offset1 = tl::arange(0, M);
    auto offset2 = tl::arange(0, N);
    auto x = tl::load(X + N * tl::expand_dims(offset1, 1) + tl::expand_dims(offset2, 0));
    // test_reshape: x.reshape(N, M), stored row-major
    auto r = tl::reshape(x, {N, M});
    tl::store(reshaped + M * tl::expand_dims(tl::arange(0, N), 1) + tl::expand_dims(tl::arange(0, M), 0), r);
    // test_trans: tl.trans(x) ([N, M])
    tl::store(transposed + M * tl::expand_dims(tl::arange(0, N), 1) + tl::expand_dims(tl::arange(0, M), 0),
              tl::trans(x));
    // test_permute: a [2, 4, 8] tile permuted (2, 0, 1) to [8, 2, 4]
    auto i0 = tl::expand_dims(tl::expand_dims(tl::arange(0, 2), 1), 2);
    auto i1 = tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 0), 2);
    auto i2 = tl::expand_dims(tl::expand_dims(tl::arange(0, 8), 0), 1);
    auto z3 = tl::load(Z3 + i0 * 32 + i1 * 8 + i2);
    auto p = tl::trans(z3, {2, 0, 1});
    auto j0 = tl::expand_dims(tl::expand_dims(tl::arange(0, 8), 1), 2);
    auto j1 = tl::expand_dims(tl::expand_dims(tl::arange(0, 2), 0), 2);
    auto j2 = tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 0), 1);
    tl::store(permuted + j0 * 8 + j1 * 4 + j2, p);
    // test_broadcast: _, y_broadcasted = tl.broadcast(x, y)
    auto y = tl::load(Y + offset2);
    auto yb = tl::broadcast_to(tl::expand_dims(y, 0), x.shape());
    tl::store(y_broadcasted + N * tl::expand_dims(offset1, 1) + tl::expand_dims(offset2, 0), yb);
    // test_arange: tl.arange(START, END) with START = 16
    tl::store(aranged + tl::arange(0, 16), tl::arange(16, 32));
    // test_full: tl.full((SIZE,), 7, tl.float32), and zeros plus a scalar
    tl::store(full + tl::arange(0, 8), tl::full<tl::f32>({8}, 7) + tl::zeros<tl::f32>({8}));
  });
  auto hx = random_values<ty::f32>(M * N, -5, 5), hy = random_values<ty::f32>(N, -5, 5);
  auto hz = random_values<ty::f32>(A * B * C, -5, 5);
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy), Z3 = upload<ty::f32>(hz);
  auto reshaped = output<ty::f32>(M * N), transposed = output<ty::f32>(M * N), permuted = output<ty::f32>(A * B * C);
  auto yb = output<ty::f32>(M * N), full = output<ty::f32>(8);
  auto aranged = output<ty::i32>(16);
  k[tl::grid(1)](X, Y, Z3, reshaped, transposed, permuted, yb, aranged, full, M, N);
  std::vector<double> w_reshape = doubles(hx), w_trans(M * N), w_perm(A * B * C), w_yb(M * N), w_full(8, 7.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) w_trans[size_t(n * M + m)] = hx[size_t(m * N + n)], w_yb[size_t(m * N + n)] = hy[size_t(n)];
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c) w_perm[size_t(c * A * B + a * B + b)] = hz[size_t(a * B * C + b * C + c)];
  std::vector<int32_t> w_arange(16);
  std::iota(w_arange.begin(), w_arange.end(), 16);
  EXPECT_TRUE(close(reshaped.download(), w_reshape, 0, 0, "reshape"));
  EXPECT_TRUE(close(transposed.download(), w_trans, 0, 0, "trans"));
  EXPECT_TRUE(close(permuted.download(), w_perm, 0, 0, "permute"));
  EXPECT_TRUE(close(yb.download(), w_yb, 0, 0, "broadcast"));
  EXPECT_TRUE(same(aranged.download(), w_arange, "arange"));
  EXPECT_TRUE(close(full.download(), w_full, 0, 0, "full"));
}

// test_generic_reduction: var_mean of 512 values through one tl.reduce over (mean, m2,
// weight) with _welford_combine.
TEST(Core, ReduceCustomCombine) {
  constexpr int SIZE = 512;
  static auto k = tl::kernel("var_mean_kernel", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> out_mean,
                                                   tl::ptr<tl::f32> out_var, int BLOCK) {
    auto welford_combine = [](tl::f32 mean_1, tl::f32 m2_1, tl::f32 weight_1, tl::f32 mean_2, tl::f32 m2_2,
                              tl::f32 weight_2) {
      tl::f32 delta = mean_2 - mean_1;
      tl::f32 new_weight = weight_1 + weight_2;
      tl::f32 w2_over_w = tl::where(new_weight == 0.0f, 0.0f, weight_2 / new_weight);
      return std::tuple{mean_1 + delta * w2_over_w, m2_1 + m2_2 + delta * delta * weight_1 * w2_over_w, new_weight};
    };
    auto xindex = tl::arange(0, BLOCK);
    auto x = tl::load(X + xindex);
    auto [mean, m2, weight] =
        tl::reduce(std::tuple{x, tl::zeros<tl::f32>({BLOCK}), tl::full<tl::f32>({BLOCK}, 1)}, 0, welford_combine);
    tl::store(out_mean, mean);
    tl::store(out_var, m2 / weight);
  });
  auto hx = random_values<ty::f32>(SIZE, 0, 1);
  auto X = upload<ty::f32>(hx);
  auto M = output<ty::f32>(1), V = output<ty::f32>(1);
  k[tl::grid(1)](X, M, V, SIZE);
  double mean = 0, var = 0;
  for (float v : hx) mean += v;
  mean /= SIZE;
  for (float v : hx) var += (v - mean) * (v - mean);
  var /= SIZE;  // correction=0
  EXPECT_TRUE(close(M.download(), {mean}, 1.3e-6, 1e-5, "mean"));
  EXPECT_TRUE(close(V.download(), {var}, 1.3e-6, 1e-5, "var"));
}
TEST(Core, ArgmaxTieBreakRight) { CONFORMANCE_GAP("argmax/argmin options"); }
TEST(Core, ReduceSmallIntegersSumInInt32) { CONFORMANCE_GAP("tl.sum dtype"); }
// test_scan2d's combine functions: cummax, linear_recurrence (on (x, y) pairs), and
// get_first_element, over each axis of a 32 x 16 tile, forward and reverse.
TEST(Core, Scan2dAssociativeScan) {
  constexpr int M = 32, N = 16;
  static auto k = tl::kernel("scan_kernel", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> Y, tl::ptr<tl::f32> Z, int axis,
                                               bool reverse) {
    auto offs = tl::expand_dims(tl::arange(0, M), 1) * N + tl::expand_dims(tl::arange(0, N), 0);
    auto x = tl::load(X + offs), y = tl::load(Y + offs);
    auto cummax = [](tl::f32 a, tl::f32 b) { return tl::maximum(a, b); };
    auto linear_recurrence = [](tl::f32 a1, tl::f32 b1, tl::f32 a2, tl::f32 b2) {
      return std::tuple{a1 * a2, b1 * a2 + b2};
    };
    auto get_first_element = [](tl::f32 a, tl::f32 b) { return a; };
    tl::store(Z + offs, tl::associative_scan(x, axis, cummax, reverse));
    tl::store(Z + M * N + offs, std::get<1>(tl::associative_scan(std::tuple{x, y}, axis, linear_recurrence, reverse)));
    tl::store(Z + 2 * M * N + offs, tl::associative_scan(x, axis, get_first_element, reverse));
  });
  auto hx = random_values<ty::f32>(M * N, -1, 1), hy = random_values<ty::f32>(M * N, -1, 1);
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy);
  for (int axis : {0, 1})
    for (bool reverse : {false, true}) {
      auto Z = output<ty::f32>(3 * M * N);
      k[tl::grid(1)](X, Y, Z, axis, reverse);
      std::vector<double> w(3 * M * N);
      const int len = axis == 0 ? M : N, lines = axis == 0 ? N : M;
      for (int l = 0; l < lines; ++l) {
        double mx = 0, h = 0, first = 0;
        for (int i = 0; i < len; ++i) {
          const int t = reverse ? len - 1 - i : i;
          const size_t e = size_t(axis == 0 ? t * N + l : l * N + t);
          mx = i ? std::max(mx, double(hx[e])) : hx[e];
          h = i ? h * hx[e] + hy[e] : hy[e];
          first = i ? first : hx[e];
          w[e] = mx, w[M * N + e] = h, w[2 * M * N + e] = first;
        }
      }
      EXPECT_TRUE(close(Z.download(), w, 1e-5, 1e-5, "axis " + std::to_string(axis) + (reverse ? " reverse" : "")));
    }
}
TEST(Core, Ravel) { CONFORMANCE_GAP("tl.ravel"); }
TEST(Core, ZerosLike) { CONFORMANCE_GAP("tl.zeros_like"); }
TEST(Core, Swizzle2d) { CONFORMANCE_GAP("tl.swizzle2d"); }
// test_trans_4d: a 4-D tile permuted by each of the 24 permutations of (0, 1, 2, 3)
// (tl.permute), int32 and int8, over a long and a cubic shape (ours); loaded
// and stored through pointer tiles where Triton's test uses block pointers (the gap
// "tl.make_block_ptr"); bit-exact.
template <class T> void test_trans_4d(std::array<int, 4> shape) {
  static auto k = tl::kernel(std::string("test_trans_4d_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> In, tl::ptr<T> Out, std::array<int, 4> in_shape, std::array<int, 4> perm) {
    auto offsets = [](std::array<int, 4> shape) {
      tl::i32 sum;
      int stride = 1;
      for (int d = 3; d >= 0; --d) {
        std::vector<int> along(4, 1);
        along[size_t(d)] = shape[size_t(d)];
        tl::i32 t = tl::reshape(tl::arange(0, shape[size_t(d)]), along) * stride;
        sum = d == 3 ? t : sum + t;
        stride *= shape[size_t(d)];
      }
      return sum;
    };
    std::array<int, 4> ou_shape;
    for (int d = 0; d < 4; ++d) ou_shape[size_t(d)] = in_shape[size_t(perm[size_t(d)])];
    auto act = tl::load(In + offsets(in_shape));
    tl::store(Out + offsets(ou_shape), tl::trans(act, {perm[0], perm[1], perm[2], perm[3]}));
  });
  const int n = shape[0] * shape[1] * shape[2] * shape[3];
  auto h = random_values<T>(size_t(n), -100, 100);
  auto in = upload<T>(h);
  std::array<int, 4> perm{0, 1, 2, 3};
  do {
    auto out = output<T>(size_t(n));
    k[tl::grid(1)](in, out, shape, perm);
    std::array<int, 4> os, ostride, istride;
    for (int d = 0; d < 4; ++d) os[size_t(d)] = shape[size_t(perm[size_t(d)])];
    istride[3] = ostride[3] = 1;
    for (int d = 2; d >= 0; --d) istride[size_t(d)] = istride[size_t(d) + 1] * shape[size_t(d) + 1], ostride[size_t(d)] = ostride[size_t(d) + 1] * os[size_t(d) + 1];
    std::vector<host_t<T>> want(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      int idx[4], rest = i;
      for (int d = 3; d >= 0; --d) idx[d] = rest % shape[size_t(d)], rest /= shape[size_t(d)];
      int at = 0;
      for (int d = 0; d < 4; ++d) at += idx[perm[size_t(d)]] * ostride[size_t(d)];
      want[size_t(at)] = h[size_t(i)];
    }
    EXPECT_EQ(out.download(), want) << tl::name(T::dtype) << " perm " << perm[0] << perm[1] << perm[2] << perm[3];
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Core, Trans4d) {
  test_trans_4d<ty::i32>({2, 2, 8, 64});
  test_trans_4d<ty::i32>({4, 4, 4, 16});
  test_trans_4d<ty::i8>({2, 2, 8, 64});
}

}  // namespace

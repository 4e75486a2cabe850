// Triton's language tests (test_core.py) for join, split, interleave, cat and flip, and
// the reduction forms built on tl's reductions (test_reduce1d's xor_sum and axis=None,
// keep_dims, max with return_indices, test_scan2d's cumprod and reverse=True),
// transcribed against plain C++ references.
#include <algorithm>
#include <numeric>

#include "conformance/common.hpp"

namespace {
using namespace conformance;
namespace ty = tl::ty;

// test_join: z = tl.join(x, y) of two [128] tiles, z[i] = (x[i], y[i]); test_join_scalars:
// tl.join(x, y) of two scalars is [2].
TEST(Core, Join) {
  static auto k = tl::kernel("test_join", [](tl::ptr<tl::i32> X, tl::ptr<tl::i32> Y, tl::ptr<tl::i32> Z,
                                             tl::ptr<tl::i32> S) {
    auto offs = tl::arange(0, 128);
    auto x = tl::load(X + offs), y = tl::load(Y + offs);
    auto z = tl::join(x, y);
    tl::store(Z + tl::expand_dims(offs, 1) * 2 + tl::expand_dims(tl::arange(0, 2), 0), z);
    tl::store(S + tl::arange(0, 2), tl::join(tl::load(X), tl::load(Y)));
  });
  std::vector<int32_t> hx(128), hy(128);
  std::iota(hx.begin(), hx.end(), 0);
  std::iota(hy.begin(), hy.end(), -128);
  auto X = upload<ty::i32>(hx), Y = upload<ty::i32>(hy);
  auto Z = output<ty::i32>(256), S = output<ty::i32>(2);
  k[tl::grid(1)](X, Y, Z, S);
  std::vector<int32_t> want(256);
  for (int i = 0; i < 128; ++i) want[size_t(2 * i)] = hx[size_t(i)], want[size_t(2 * i + 1)] = hy[size_t(i)];
  EXPECT_TRUE(same(Z.download(), want, "join"));
  EXPECT_TRUE(same(S.download(), std::vector<int32_t>{0, -128}, "join of scalars"));
}

// test_split: x of [N, 2] (here 128), z0, z1 = tl.split(x).
template <class T> void test_split() {
  static auto k = tl::kernel(std::string("test_split_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Z1, tl::ptr<T> Z2) {
    auto offs = tl::arange(0, 128);
    auto x = tl::load(X + tl::expand_dims(offs, 1) * 2 + tl::expand_dims(tl::arange(0, 2), 0));
    auto [z1, z2] = tl::split(x);
    tl::store(Z1 + offs, z1);
    tl::store(Z2 + offs, z2);
  });
  auto hx = random_values<T>(256, -100, 100);
  auto X = upload<T>(hx);
  auto Z1 = output<T>(128), Z2 = output<T>(128);
  k[tl::grid(1)](X, Z1, Z2);
  std::vector<double> w1(128), w2(128);
  for (int i = 0; i < 128; ++i) w1[size_t(i)] = to_double(hx[size_t(2 * i)]), w2[size_t(i)] = to_double(hx[size_t(2 * i + 1)]);
  EXPECT_TRUE(close(Z1.download(), w1, 0, 0, "split z1"));
  EXPECT_TRUE(close(Z2.download(), w2, 0, 0, "split z2"));
}

TEST(Core, Split) {
  test_split<ty::i32>();
  test_split<ty::f32>();
  test_split<ty::f16>();
}

// test_interleave: z = tl.interleave(x, y) of [SIZE_OUTER, SIZE_INNER] tiles, the inner
// dim doubled with x and y alternating (torch.stack([x, y], -1).reshape).
template <class T> void test_interleave(int outer, int inner) {
  static auto k = tl::kernel(std::string("test_interleave_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Y, tl::ptr<T> Z, int OUTER, int INNER) {
    auto ro = tl::expand_dims(tl::arange(0, OUTER), 1);
    auto x = tl::load(X + ro * INNER + tl::expand_dims(tl::arange(0, INNER), 0));
    auto y = tl::load(Y + ro * INNER + tl::expand_dims(tl::arange(0, INNER), 0));
    tl::store(Z + ro * (2 * INNER) + tl::expand_dims(tl::arange(0, 2 * INNER), 0), tl::interleave(x, y));
  });
  const size_t n = size_t(outer * inner);
  auto hx = random_values<T>(n, -100, 100), hy = random_values<T>(n, -100, 100);
  auto X = upload<T>(hx), Y = upload<T>(hy);
  auto Z = output<T>(2 * n);
  k[tl::grid(1)](X, Y, Z, outer, inner);
  std::vector<double> want(2 * n);
  for (size_t i = 0; i < n; ++i) want[2 * i] = to_double(hx[i]), want[2 * i + 1] = to_double(hy[i]);
  EXPECT_TRUE(close(Z.download(), want, 0, 0, "interleave"));
}

TEST(Core, Interleave) {
  test_interleave<ty::f32>(1, 128);
  test_interleave<ty::f32>(32, 4);
  test_interleave<ty::i32>(8, 32);
}

// test_cat: z = tl.cat(x, y) of two [128] tiles. Triton's cat passes can_reorder=True
// and its test sorts z before comparing; tl's cat keeps the order (x, then y), so z is
// compared as is.
TEST(Core, Cat) {
  static auto k = tl::kernel("test_cat", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> Y, tl::ptr<tl::f32> Z) {
    auto offs = tl::arange(0, 128);
    tl::store(Z + tl::arange(0, 256), tl::cat(tl::load(X + offs), tl::load(Y + offs)));
  });
  auto hx = random_values<ty::f32>(128, -10, 10), hy = random_values<ty::f32>(128, -10, 10);
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy);
  auto Z = output<ty::f32>(256);
  k[tl::grid(1)](X, Y, Z);
  std::vector<double> want = doubles(hx), wy = doubles(hy);
  want.insert(want.end(), wy.begin(), wy.end());
  EXPECT_TRUE(close(Z.download(), want, 0, 0, "cat"));
}

// test_flip: a [N, M] tile flipped along its last dim (torch.flip(x, (1,))), num_warps=8,
// for M, N in (1, 512), (8, 64), (256, 16), (512, 8).
template <class T> void test_flip(int M, int N) {
  static auto k = tl::kernel(std::string("test_flip_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Z, int N, int M) {
    auto off2d = tl::expand_dims(tl::arange(0, M), 0) + tl::expand_dims(tl::arange(0, N) * M, 1);
    tl::store(Z + off2d, tl::flip(tl::load(X + off2d)));
  });
  auto hx = random_values<T>(size_t(M * N), -100, 100);
  auto X = upload<T>(hx);
  auto Z = output<T>(size_t(M * N));
  k[tl::grid(1)].with({.num_warps = 8})(X, Z, N, M);
  std::vector<double> want(size_t(M * N));
  for (int r = 0; r < N; ++r)
    for (int c = 0; c < M; ++c) want[size_t(r * M + c)] = to_double(hx[size_t(r * M + M - 1 - c)]);
  EXPECT_TRUE(close(Z.download(), want, 0, 0, "flip " + std::to_string(M) + "x" + std::to_string(N)));
}

TEST(Core, Flip) {
  for (auto [M, N] : {std::pair{1, 512}, {8, 64}, {256, 16}, {512, 8}}) {
    test_flip<ty::i32>(M, N);
    test_flip<ty::f16>(M, N);
    test_flip<ty::f32>(M, N);
    test_flip<ty::bf16>(M, N);
  }
}

// test_reduce1d's xor_sum (int32) and axis=None, and test_reduce's keep_dims=True: the
// whole tile to a scalar, and each axis kept as 1.
TEST(Core, ReduceXorSumAxisNoneKeepDims) {
  constexpr int BLOCK_M = 16, BLOCK_N = 32;
  static auto k = tl::kernel("test_reduce_forms", [](tl::ptr<tl::i32> X, tl::ptr<tl::i32> Z, int BLOCK_M, int BLOCK_N) {
    auto rm = tl::expand_dims(tl::arange(0, BLOCK_M), 1);
    auto rn = tl::expand_dims(tl::arange(0, BLOCK_N), 0);
    auto x = tl::load(X + rm * BLOCK_N + rn);
    tl::store(Z, tl::xor_sum(x));
    tl::store(Z + 1, tl::sum(x));
    tl::store(Z + 2, tl::max(x));
    tl::store(Z + 3, tl::min(x));
    // keep_dims: [BLOCK_M, 1] and [1, BLOCK_N], broadcast back over x
    tl::store(Z + 4 + rm * BLOCK_N + rn, x - tl::max(x, 1, tl::keep_dims) + tl::xor_sum(x, 0, tl::keep_dims));
  });
  auto hx = random_values<ty::i32>(BLOCK_M * BLOCK_N, -1000, 1000);
  auto X = upload<ty::i32>(hx);
  auto Z = output<ty::i32>(4 + BLOCK_M * BLOCK_N);
  k[tl::grid(1)](X, Z, BLOCK_M, BLOCK_N);
  std::vector<int32_t> want(4 + BLOCK_M * BLOCK_N);
  want[0] = 0, want[1] = 0, want[2] = hx[0], want[3] = hx[0];
  for (int32_t v : hx) want[0] ^= v, want[1] += v, want[2] = std::max(want[2], v), want[3] = std::min(want[3], v);
  for (int m = 0; m < BLOCK_M; ++m)
    for (int n = 0; n < BLOCK_N; ++n) {
      int32_t rmax = hx[size_t(m * BLOCK_N)], cx = 0;
      for (int j = 0; j < BLOCK_N; ++j) rmax = std::max(rmax, hx[size_t(m * BLOCK_N + j)]);
      for (int i = 0; i < BLOCK_M; ++i) cx ^= hx[size_t(i * BLOCK_N + n)];
      want[size_t(4 + m * BLOCK_N + n)] = hx[size_t(m * BLOCK_N + n)] - rmax + cx;
    }
  EXPECT_TRUE(same(Z.download(), want, "reduce forms"));
}

// tl.max(x, axis, return_indices=True) / tl.min: the value and the first index holding it
// (return_indices_tie_break_left=True, Triton's default), on values with many ties.
TEST(Core, MaxMinReturnIndices) {
  constexpr int BLOCK_M = 16, BLOCK_N = 32;
  static auto k = tl::kernel("test_max_indices", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> V, tl::ptr<tl::i32> I,
                                                    int BLOCK_M, int BLOCK_N) {
    auto x = tl::load(X + tl::expand_dims(tl::arange(0, BLOCK_M), 1) * BLOCK_N + tl::expand_dims(tl::arange(0, BLOCK_N), 0));
    auto [mx, imx] = tl::max(x, 1, tl::return_indices);
    auto [mn, imn] = tl::min(x, 0, tl::return_indices);
    tl::store(V + tl::arange(0, BLOCK_M), mx);
    tl::store(I + tl::arange(0, BLOCK_M), imx);
    tl::store(V + BLOCK_M + tl::arange(0, BLOCK_N), mn);
    tl::store(I + BLOCK_M + tl::arange(0, BLOCK_N), imn);
  });
  std::vector<float> hx(BLOCK_M * BLOCK_N);
  auto r = random_values<ty::i32>(hx.size(), 0, 4);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(r[i]) * 0.5f;  // few values: ties
  auto X = upload<ty::f32>(hx);
  auto V = output<ty::f32>(BLOCK_M + BLOCK_N);
  auto I = output<ty::i32>(BLOCK_M + BLOCK_N);
  k[tl::grid(1)](X, V, I, BLOCK_M, BLOCK_N);
  std::vector<double> wv(BLOCK_M + BLOCK_N);
  std::vector<int32_t> wi(BLOCK_M + BLOCK_N);
  for (int m = 0; m < BLOCK_M; ++m) {
    auto row = hx.begin() + m * BLOCK_N;
    auto it = std::max_element(row, row + BLOCK_N);  // the first maximum
    wv[size_t(m)] = *it, wi[size_t(m)] = int32_t(it - row);
  }
  for (int n = 0; n < BLOCK_N; ++n) {
    int best = 0;
    for (int m = 1; m < BLOCK_M; ++m)
      if (hx[size_t(m * BLOCK_N + n)] < hx[size_t(best * BLOCK_N + n)]) best = m;
    wv[size_t(BLOCK_M + n)] = hx[size_t(best * BLOCK_N + n)], wi[size_t(BLOCK_M + n)] = best;
  }
  EXPECT_TRUE(close(V.download(), wv, 0, 0, "max/min values"));
  EXPECT_TRUE(same(I.download(), wi, "max/min indices"));
}

// test_scan2d: cumprod over each axis, and cumsum / cumprod with reverse=True.
template <class T> void test_scan_forms(double lo, double hi) {
  constexpr int BLOCK_M = 8, BLOCK_N = 32;
  static auto k = tl::kernel(std::string("test_scan_forms_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Z, int BLOCK_M, int BLOCK_N) {
    auto offs = tl::expand_dims(tl::arange(0, BLOCK_M), 1) * BLOCK_N + tl::expand_dims(tl::arange(0, BLOCK_N), 0);
    auto x = tl::load(X + offs);
    const int n = BLOCK_M * BLOCK_N;
    tl::store(Z + offs, tl::cumprod(x, 0));
    tl::store(Z + n + offs, tl::cumprod(x, 1));
    tl::store(Z + 2 * n + offs, tl::cumsum(x, 0, true));
    tl::store(Z + 3 * n + offs, tl::cumprod(x, 1, true));
  });
  const int n = BLOCK_M * BLOCK_N;
  auto hx = random_values<T>(size_t(n), lo, hi);
  auto X = upload<T>(hx);
  auto Z = output<T>(size_t(4 * n));
  k[tl::grid(1)](X, Z, BLOCK_M, BLOCK_N);
  auto x = [&](int m, int c) { return to_double(hx[size_t(m * BLOCK_N + c)]); };
  std::vector<double> w(size_t(4 * n));
  for (int c = 0; c < BLOCK_N; ++c) {
    double p = 1, s = 0;
    for (int m = 0; m < BLOCK_M; ++m) p *= x(m, c), w[size_t(m * BLOCK_N + c)] = p;
    for (int m = BLOCK_M - 1; m >= 0; --m) s += x(m, c), w[size_t(2 * n + m * BLOCK_N + c)] = s;
  }
  for (int m = 0; m < BLOCK_M; ++m) {
    double p = 1, q = 1;
    for (int c = 0; c < BLOCK_N; ++c) p *= x(m, c), w[size_t(n + m * BLOCK_N + c)] = p;
    for (int c = BLOCK_N - 1; c >= 0; --c) q *= x(m, c), w[size_t(3 * n + m * BLOCK_N + c)] = q;
  }
  const double tol = epsilon_of(T::dtype) * 64;
  EXPECT_TRUE(close(Z.download(), w, tol, tol, std::string("scan forms ") + std::string(tl::name(T::dtype))));
}

TEST(Core, Scan2dCumprodAndReverse) {
  test_scan_forms<ty::f32>(0.8, 1.2);
  test_scan_forms<ty::f16>(0.9, 1.1);
}

// test_gather: torch.gather(src, axis, indices) for (src shape, indices shape, axis) in
// ([4, 4], [8, 4], 0), ([128, 64], [256, 64], 0), ([128, 64], [128, 128], 1).
void test_gather(int sm, int sn, int im, int in, int axis) {
  static auto k = tl::kernel("test_gather", [](tl::ptr<tl::f32> src, tl::ptr<tl::i32> idx, tl::ptr<tl::f32> out,
                                               int axis, int SM, int SN, int IM, int IN) {
    auto s = tl::load(src + tl::expand_dims(tl::arange(0, SM), 1) * SN + tl::expand_dims(tl::arange(0, SN), 0));
    auto io = tl::expand_dims(tl::arange(0, IM), 1) * IN + tl::expand_dims(tl::arange(0, IN), 0);
    tl::store(out + io, tl::gather(s, tl::load(idx + io), axis));
  });
  auto hs = random_values<ty::f32>(size_t(sm * sn), -10, 10);
  auto hi = random_values<ty::i32>(size_t(im * in), 0, (axis == 0 ? sm : sn) - 1);
  auto S = upload<ty::f32>(hs);
  auto I = upload<ty::i32>(hi);
  auto O = output<ty::f32>(size_t(im * in));
  k[tl::grid(1)](S, I, O, axis, sm, sn, im, in);
  std::vector<double> want(size_t(im * in));
  for (int r = 0; r < im; ++r)
    for (int c = 0; c < in; ++c) {
      int32_t i = hi[size_t(r * in + c)];
      want[size_t(r * in + c)] = axis == 0 ? hs[size_t(i * sn + c)] : hs[size_t(r * sn + i)];
    }
  EXPECT_TRUE(close(O.download(), want, 0, 0, "gather"));
}

TEST(Core, Gather) {
  test_gather(4, 4, 8, 4, 0);
  test_gather(128, 64, 256, 64, 0);
  test_gather(128, 64, 128, 128, 1);
}

}  // namespace

// tl::reduce and tl::associative_scan with a combine function of the user's (Triton's
// tl.reduce / tl.associative_scan), run on the test device (the CPU in CI; TL_DEVICE=cuda
// or hip on a GPU) against plain C++ in double on random inputs, outputs poisoned first,
// and every kernel compiled for gfx942, gfx950 and sm_90 at 1, 4 and 8 warps (where the
// combine is inlined in registers, across lanes and across warps). Ragged lengths are
// masked loads of power-of-two tiles whose masked elements hold the combine's identity.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

tl::i32 offsets2(int rows, int cols, const tl::i32& stride) {
  return tl::expand_dims(tl::arange(0, rows), 1) * stride + tl::expand_dims(tl::arange(0, cols), 0);
}

template <class K, class... A> void compiles_for_gpus_at(std::initializer_list<int> num_warps, K& k, const A&... args) {
  for (const char* arch : {"gfx942", "gfx950", "sm_90"})
    for (int warps : num_warps)
      EXPECT_NO_THROW((void)k.compile(arch, {.num_warps = warps}, args...)) << arch << " " << warps;
}
template <class K, class... A> void compiles_for_gpus(K& k, const A&... args) { compiles_for_gpus_at({1, 4, 8}, k, args...); }

// Chan et al.'s parallel Welford step: two (mean, m2, count) partials into one. A partial
// of count 0 (masked elements) leaves the other as it is.
std::tuple<tl::f32, tl::f32, tl::f32> welford(tl::f32 mean_a, tl::f32 m2_a, tl::f32 n_a, tl::f32 mean_b, tl::f32 m2_b,
                                              tl::f32 n_b) {
  tl::f32 n = n_a + n_b;
  tl::f32 w_b = tl::where(n == 0.0f, 0.0f, n_b / tl::where(n == 0.0f, 1.0f, n));
  tl::f32 delta = mean_b - mean_a;
  return {mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n};
}

// argmax as a combine: the larger value, the lower index on a tie (tl::argmax's rule).
template <class T> std::tuple<T, tl::i32> argmax_combine(T va, tl::i32 ia, T vb, tl::i32 ib) {
  tl::i1 take_a = (va > vb) | ((va == vb) & (ia < ib));
  return {tl::where(take_a, va, vb), tl::where(take_a, ia, ib)};
}

// h_t = a_t h_{t-1} + b_t as a scan of (a, b) pairs: composing x -> a1 x + b1 then
// x -> a2 x + b2 gives x -> a1 a2 x + (a2 b1 + b2). Associative, not commutative.
template <class T> std::tuple<T, T> affine_combine(T a1, T b1, T a2, T b2) { return {a1 * a2, a2 * b1 + b2}; }

}  // namespace

// A layer norm whose mean and variance come from one tl::reduce over (mean, m2, count)
// per row (Triton's test_generic_reduction / welford), rows of n in {256, 200} columns of
// a 256-wide tile; and the same statistics of columns (axis 0) of the transposed block.
TEST(Combine, WelfordLayerNorm) {
  constexpr int R = 4, C = 256;
  auto k = tl::kernel("welford_layer_norm", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> w, tl::ptr<tl::f32> bias,
                                               tl::ptr<tl::f32> y, tl::ptr<tl::f32> stats, tl::ptr<tl::f32> col_stats,
                                               tl::i32 n) {
    auto o = offsets2(R, C, n);
    auto cols = tl::expand_dims(tl::arange(0, C), 0);
    auto mask = cols < n;
    auto t = tl::load(x + o, mask, 0.0f);
    auto count = tl::broadcast_to(tl::where(mask, 1.0f, 0.0f), {R, C});
    auto [mean, m2, cnt] = tl::reduce(std::tuple{t, tl::zeros<ty::f32>({R, C}), count}, 1, welford);
    auto rows = tl::arange(0, R);
    tl::store(stats + rows * 3, mean);
    tl::store(stats + rows * 3 + 1, m2);
    tl::store(stats + rows * 3 + 2, cnt);
    auto rstd = tl::rsqrt(m2 / cnt + 1e-5f);
    auto wv = tl::load(w + cols, mask, 0.0f), bv = tl::load(bias + cols, mask, 0.0f);
    auto out = (t - tl::expand_dims(mean, 1)) * tl::expand_dims(rstd, 1) * wv + bv;
    tl::store(y + o, out, tl::broadcast_to(mask, {R, C}));
    // Along axis 0 of [C, R] (the block transposed), keeping the reduced dim.
    auto tt = tl::trans(t);
    auto [cm, cm2, cc] =
        tl::reduce(std::tuple{tt, tl::zeros<ty::f32>({C, R}), tl::trans(count)}, 0, welford, tl::keep_dims);
    auto r2 = tl::expand_dims(tl::arange(0, R), 0);
    tl::store(col_stats + r2 * 2, cm);
    tl::store(col_stats + r2 * 2 + 1, cm2 / cc);
  });
  for (int n : {C, 200}) {
    auto hx = random_floats(R * n, -3.0f, 5.0f), hw = random_floats(n), hb = random_floats(n);
    auto X = upload<ty::f32>(hx), W = upload<ty::f32>(hw), B = upload<ty::f32>(hb);
    auto Y = test_device().alloc<ty::f32>(R * n), S = test_device().alloc<ty::f32>(3 * R);
    auto CS = test_device().alloc<ty::f32>(2 * R);
    poison(Y), poison(S), poison(CS);
    k[tl::grid(1)](X, W, B, Y, S, CS, n);
    if (n == C) compiles_for_gpus(k, X, W, B, Y, S, CS, n);
    std::vector<double> y(R * n), stats(3 * R), cstats(2 * R);
    for (int r = 0; r < R; ++r) {
      double mean = 0, var = 0;
      for (int c = 0; c < n; ++c) mean += hx[r * n + c];
      mean /= n;
      for (int c = 0; c < n; ++c) var += (hx[r * n + c] - mean) * (hx[r * n + c] - mean);
      stats[3 * r] = mean, stats[3 * r + 1] = var, stats[3 * r + 2] = n;
      cstats[2 * r] = mean, cstats[2 * r + 1] = var / n;
      for (int c = 0; c < n; ++c) y[r * n + c] = (hx[r * n + c] - mean) / std::sqrt(var / n + 1e-5) * hw[c] + hb[c];
    }
    EXPECT_TRUE(near(S.download(), stats, 1e-5, 1e-5)) << "n=" << n;
    EXPECT_TRUE(near(CS.download(), cstats, 1e-5, 1e-5)) << "n=" << n;
    EXPECT_TRUE(near(Y.download(), y, 1e-4, 1e-4)) << "n=" << n;
  }
}

// argmax written as a combine over (value, index) gives tl::argmax's answer (the first
// maximum), f32 and i32, along either axis of a [16, 64] tile and over the whole tile,
// with many ties (values from a few levels); masked elements are the lowest value.
TEST(Combine, ArgmaxByCombineIsArgmax) {
  constexpr int R = 16, C = 64;
  auto k = tl::kernel("argmax_combine", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> xi, tl::ptr<tl::i32> out,
                                           tl::ptr<tl::f32> vals, tl::i32 n) {
    auto o = offsets2(R, C, C);
    auto mask = o < n;
    auto t = tl::load(x + o, mask, -std::numeric_limits<float>::infinity());
    auto ti = tl::load(xi + o, mask, std::numeric_limits<int32_t>::min());
    auto col = tl::broadcast_to(tl::expand_dims(tl::arange(0, C), 0), {R, C});
    auto row = tl::broadcast_to(tl::expand_dims(tl::arange(0, R), 1), {R, C});
    auto [v1, i1] = tl::reduce(std::tuple{t, col}, 1, argmax_combine<tl::f32>);
    auto [v0, i0] = tl::reduce(std::tuple{ti, row}, 0, argmax_combine<tl::i32>);
    auto [va, ia] = tl::reduce(std::tuple{t, o}, argmax_combine<tl::f32>);
    // The index first (on GPUs index math without a layout of its own: the loaded
    // values are read in the layout planned for it).
    auto [i1b, v1b] = tl::reduce(std::tuple{col, t}, 1, [](tl::i32 ia, tl::f32 va, tl::i32 ib, tl::f32 vb) {
      auto [v, i] = argmax_combine<tl::f32>(va, ia, vb, ib);
      return std::tuple{i, v};
    });
    auto rr = tl::arange(0, R), cc = tl::arange(0, C);
    tl::store(out + rr, i1);
    tl::store(out + R + rr, tl::argmax(t, 1) + (i1b - i1) * 1000 + (v1b != v1).to<ty::i32>() * 100000);
    tl::store(out + 2 * R + cc, i0);
    tl::store(out + 2 * R + C + cc, tl::argmax(ti, 0));
    tl::store(out + 2 * R + 2 * C, ia);
    tl::store(vals + rr, v1);
    tl::store(vals + R + cc, v0.to<ty::f32>());
    tl::store(vals + R + C, va);
  });
  for (int n : {R * C, 700}) {
    auto hx = random_floats(R * C, -2.0f, 2.0f);
    for (float& v : hx) v = std::round(v * 2.0f) / 2.0f;  // 9 levels: ties in every row
    auto hi = random_ints(R * C, -4, 4);
    auto X = upload<ty::f32>(hx);
    auto XI = upload<ty::i32>(hi);
    auto OUT = test_device().alloc<ty::i32>(2 * R + 2 * C + 1);
    auto VALS = test_device().alloc<ty::f32>(R + C + 1);
    poison(OUT), poison(VALS);
    k[tl::grid(1)](X, XI, OUT, VALS, n);
    if (n == R * C) compiles_for_gpus(k, X, XI, OUT, VALS, n);
    const double lowest = -std::numeric_limits<double>::infinity();
    auto xv = [&](int e) { return e < n ? double(hx[e]) : lowest; };
    auto iv = [&](int e) { return e < n ? hi[e] : std::numeric_limits<int32_t>::min(); };
    std::vector<int32_t> want(2 * R + 2 * C + 1);
    std::vector<float> wvals(R + C + 1);  // (exact: the maximum is one of the inputs)
    for (int r = 0; r < R; ++r) {
      int best = 0;
      for (int c = 1; c < C; ++c)
        if (xv(r * C + c) > xv(r * C + best)) best = c;
      want[r] = want[R + r] = best, wvals[r] = float(xv(r * C + best));
    }
    for (int c = 0; c < C; ++c) {
      int best = 0;
      for (int r = 1; r < R; ++r)
        if (iv(r * C + c) > iv(best * C + c)) best = r;
      want[2 * R + c] = want[2 * R + C + c] = best, wvals[R + c] = float(iv(best * C + c));
    }
    int best = 0;
    for (int e = 1; e < R * C; ++e)
      if (xv(e) > xv(best)) best = e;
    want[2 * R + 2 * C] = best, wvals[R + C] = float(xv(best));
    EXPECT_EQ(OUT.download(), want) << "n=" << n;
    EXPECT_EQ(VALS.download(), wvals) << "n=" << n;
  }
}

// h_t = a_t h_{t-1} + b_t (h_{-1} = 0) through tl::associative_scan of (a, b) with the
// affine combine, forward and reverse (h_t = a_t h_{t+1} + b_t from the end), along
// either axis, against a double loop. f32 on a [8, 128] tile, and the same recurrence in
// wrapping i32 arithmetic (exact: any reordering of a non-commutative combine shows) on a
// 1-D tile of 1024 (across every warp on a GPU). Masked elements are (1, 0), the identity.
TEST(Combine, LinearRecurrenceScan) {
  constexpr int R = 8, C = 128, L = 1024;
  auto k = tl::kernel("linear_recurrence", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> h,
                                              tl::ptr<tl::i32> ai, tl::ptr<tl::i32> bi, tl::ptr<tl::i32> hi,
                                              tl::i32 n) {
    auto o = offsets2(R, C, C);
    auto mask = tl::broadcast_to(tl::expand_dims(tl::arange(0, C), 0) < n, {R, C});
    auto ta = tl::load(a + o, mask, 1.0f), tb = tl::load(b + o, mask, 0.0f);
    auto [pa1, h1] = tl::associative_scan(std::tuple{ta, tb}, 1, affine_combine<tl::f32>);
    auto [pr1, hr1] = tl::associative_scan(std::tuple{ta, tb}, 1, affine_combine<tl::f32>, true);
    // Along axis 0 of the transposed block: rows are time.
    auto [pa0, h0] = tl::associative_scan(std::tuple{tl::trans(ta), tl::trans(tb)}, 0, affine_combine<tl::f32>);
    auto [pr0, hr0] = tl::associative_scan(std::tuple{tl::trans(ta), tl::trans(tb)}, 0, affine_combine<tl::f32>, true);
    tl::store(h + o, h1, mask);
    tl::store(h + R * C + o, hr1, mask);
    tl::store(h + 2 * R * C + o, tl::trans(h0), mask);
    tl::store(h + 3 * R * C + o, tl::trans(hr0), mask);
    tl::store(h + 4 * R * C + o, pa1, mask);
    auto l = tl::arange(0, L);
    auto lm = l < n * (L / C);
    auto ia = tl::load(ai + l, lm, 1), ib = tl::load(bi + l, lm, 0);
    auto [qa, qh] = tl::associative_scan(std::tuple{ia, ib}, 0, affine_combine<tl::i32>);
    auto [qra, qrh] = tl::associative_scan(std::tuple{ia, ib}, 0, affine_combine<tl::i32>, true);
    tl::store(hi + l, qh, lm);
    tl::store(hi + L + l, qrh, lm);
    tl::store(hi + 2 * L + l, qa, lm);
  });
  for (int n : {C, 77}) {
    auto ha = random_floats(R * C, -1.1f, 1.1f), hb = random_floats(R * C);
    auto hai = random_ints(L, -1000, 1000), hbi = random_ints(L, -1000000, 1000000);
    auto A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
    auto AI = upload<ty::i32>(hai), BI = upload<ty::i32>(hbi);
    auto H = test_device().alloc<ty::f32>(5 * R * C);
    auto HI = test_device().alloc<ty::i32>(3 * L);
    poison(H), poison(HI);
    k[tl::grid(1)](A, B, H, AI, BI, HI, n);
    if (n == C) compiles_for_gpus(k, A, B, H, AI, BI, HI, n);
    auto h = H.download();
    auto hiv = HI.download();
    std::vector<double> fwd(R * n), rev(R * n), prod(R * n), got_f, got_r, got_t, got_tr, got_p;
    for (int r = 0; r < R; ++r) {
      double s = 0, p = 1;
      for (int c = 0; c < n; ++c) {
        s = ha[r * C + c] * s + hb[r * C + c], p *= ha[r * C + c];
        fwd[r * n + c] = s, prod[r * n + c] = p;
      }
      s = 0;
      for (int c = n - 1; c >= 0; --c) s = ha[r * C + c] * s + hb[r * C + c], rev[r * n + c] = s;
      for (int c = 0; c < n; ++c) {
        got_f.push_back(h[r * C + c]), got_r.push_back(h[R * C + r * C + c]);
        got_t.push_back(h[2 * R * C + r * C + c]), got_tr.push_back(h[3 * R * C + r * C + c]);
        got_p.push_back(h[4 * R * C + r * C + c]);
      }
    }
    EXPECT_TRUE(near(got_f, fwd, 1e-4, 1e-4)) << "n=" << n;
    EXPECT_TRUE(near(got_r, rev, 1e-4, 1e-4)) << "n=" << n;
    EXPECT_TRUE(near(got_t, fwd, 1e-4, 1e-4)) << "n=" << n;
    EXPECT_TRUE(near(got_tr, rev, 1e-4, 1e-4)) << "n=" << n;
    EXPECT_TRUE(near(got_p, prod, 1e-4, 1e-6)) << "n=" << n;
    const int ln = n * (L / C);
    uint32_t s = 0, p = 1;
    for (int t = 0; t < ln; ++t) {
      s = uint32_t(hai[t]) * s + uint32_t(hbi[t]), p *= uint32_t(hai[t]);
      ASSERT_EQ(uint32_t(hiv[t]), s) << "forward t=" << t << " n=" << n;
      ASSERT_EQ(uint32_t(hiv[2 * L + t]), p) << "product t=" << t << " n=" << n;
    }
    s = 0;
    for (int t = ln - 1; t >= 0; --t) {
      s = uint32_t(hai[t]) * s + uint32_t(hbi[t]);
      ASSERT_EQ(uint32_t(hiv[L + t]), s) << "reverse t=" << t << " n=" << n;
    }
  }
}

// One operand, every form: a cumulative maximum (Triton's test_scan2d cummax) and a
// maximum of i32 along each axis, a 1-D reduction to a scalar, a scalar over a 2-D tile
// (axis=None), keep_dims, and a scan of a short axis (2) and of an axis of 1.
TEST(Combine, SingleOperandForms) {
  constexpr int R = 32, C = 16;
  auto k = tl::kernel("single_operand", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> out, tl::i32 n) {
    auto mx = [](tl::i32 a, tl::i32 b) { return tl::maximum(a, b); };
    auto o = offsets2(R, C, C);
    auto t = tl::load(x + o, o < n, std::numeric_limits<int32_t>::min());
    auto rr = tl::arange(0, R), cc = tl::arange(0, C), all = offsets2(R, C, C);
    tl::store(out + all, tl::associative_scan(t, 1, mx));
    tl::store(out + R * C + all, tl::associative_scan(t, 0, mx, true));
    tl::store(out + 2 * R * C + rr, tl::reduce(t, 1, mx));
    tl::store(out + 2 * R * C + R + tl::expand_dims(cc, 0), tl::reduce(t, 0, mx, tl::keep_dims));
    tl::store(out + 2 * R * C + R + C, tl::reduce(t, mx));
    tl::store(out + 2 * R * C + R + C + 1, tl::reduce(tl::reduce(t, 1, mx), 0, mx));
    auto pair = tl::load(x + offsets2(R, 2, 2));
    tl::store(out + 2 * R * C + R + C + 2 + offsets2(R, 2, 2),
              tl::associative_scan(pair, 1, [](tl::i32 a, tl::i32 b) { return a * 2 + b; }));
    auto column = tl::load(x + offsets2(R, 1, 1));
    tl::store(out + 2 * R * C + R + C + 2 + 2 * R + offsets2(R, 1, 1),
              tl::associative_scan(column, 1, [](tl::i32 a, tl::i32 b) { return a - b; }));
  });
  const int total = 2 * R * C + R + C + 2 + 3 * R;
  for (int n : {R * C, 333}) {
    auto hx = random_ints(R * C, -1000, 1000);
    auto X = upload<ty::i32>(hx);
    auto OUT = test_device().alloc<ty::i32>(total);
    poison(OUT);
    k[tl::grid(1)](X, OUT, n);
    if (n == R * C) compiles_for_gpus(k, X, OUT, n);
    auto xv = [&](int e) { return e < n ? hx[e] : std::numeric_limits<int32_t>::min(); };
    std::vector<int32_t> want(total);
    for (int r = 0; r < R; ++r) {
      int32_t m = xv(r * C);
      for (int c = 0; c < C; ++c) m = std::max(m, xv(r * C + c)), want[r * C + c] = m;
      want[2 * R * C + r] = m;
    }
    for (int c = 0; c < C; ++c) {
      int32_t m = xv((R - 1) * C + c), all = xv(c);
      for (int r = R - 1; r >= 0; --r) m = std::max(m, xv(r * C + c)), want[R * C + r * C + c] = m;
      for (int r = 0; r < R; ++r) all = std::max(all, xv(r * C + c));
      want[2 * R * C + R + c] = all;
    }
    want[2 * R * C + R + C] = want[2 * R * C + R + C + 1] = *std::max_element(want.begin() + 2 * R * C, want.begin() + 2 * R * C + R);
    for (int r = 0; r < R; ++r) {
      want[2 * R * C + R + C + 2 + 2 * r] = hx[2 * r];
      want[2 * R * C + R + C + 2 + 2 * r + 1] = hx[2 * r] * 2 + hx[2 * r + 1];
      want[2 * R * C + R + C + 2 + 2 * R + r] = hx[r];
    }
    EXPECT_EQ(OUT.download(), want) << "n=" << n;
  }
}

// A combine over a dot's accumulator (on GPUs the matrix instructions' layouts, where an
// axis may share a hardware bit with the other dim): the i32 accumulator of an i8 dot
// (exact), scanned with the wrapping affine combine along each axis (exact, and not
// commutative: any reordering shows) and reduced to (max, first index) along each axis.
TEST(Combine, ScanAndReduceOfADotAccumulator) {
  constexpr int M = 32, N = 32, K = 32;
  auto k = tl::kernel("combine_of_dot", [](tl::ptr<tl::i8> a, tl::ptr<tl::i8> b, tl::ptr<tl::i32> out) {
    auto acc = tl::dot(tl::load(a + offsets2(M, K, K)), tl::load(b + offsets2(K, N, N)));
    auto o = offsets2(M, N, N);
    auto pairs = std::tuple{acc, acc * 3 + 1};
    tl::store(out + o, std::get<1>(tl::associative_scan(pairs, 1, affine_combine<tl::i32>)));
    tl::store(out + M * N + o, std::get<1>(tl::associative_scan(pairs, 0, affine_combine<tl::i32>, true)));
    auto col = tl::broadcast_to(tl::expand_dims(tl::arange(0, N), 0), {M, N});
    auto row = tl::broadcast_to(tl::expand_dims(tl::arange(0, M), 1), {M, N});
    auto [m1, i1] = tl::reduce(std::tuple{acc, col}, 1, argmax_combine<tl::i32>);
    auto [m0, i0] = tl::reduce(std::tuple{acc, row}, 0, argmax_combine<tl::i32>);
    tl::store(out + 2 * M * N + tl::arange(0, M), i1 * 1000 + m1);
    tl::store(out + 2 * M * N + M + tl::arange(0, N), i0 * 1000 + m0);
  });
  auto ha = random_ints(M * K, -3, 3), hb = random_ints(K * N, -3, 3);
  std::vector<int8_t> a8(ha.begin(), ha.end()), b8(hb.begin(), hb.end());
  auto A = upload<ty::i8>(a8), B = upload<ty::i8>(b8);
  auto OUT = test_device().alloc<ty::i32>(2 * M * N + M + N);
  poison(OUT);
  k[tl::grid(1)](A, B, OUT);
  compiles_for_gpus_at({4}, k, A, B, OUT);  // (the dot's layout at 4 warps: M and N split over warps)
  std::vector<int32_t> acc(M * N, 0), want(2 * M * N + M + N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int kk = 0; kk < K; ++kk) acc[m * N + n] += ha[m * K + kk] * hb[kk * N + n];
  auto step = [](uint32_t h, int32_t a, int32_t b) { return uint32_t(a) * h + uint32_t(b); };
  for (int m = 0; m < M; ++m) {
    uint32_t h = 0;
    int best = 0;
    for (int n = 0; n < N; ++n) {
      h = step(h, acc[m * N + n], acc[m * N + n] * 3 + 1), want[m * N + n] = int32_t(h);
      if (acc[m * N + n] > acc[m * N + best]) best = n;
    }
    want[2 * M * N + m] = best * 1000 + acc[m * N + best];
  }
  for (int n = 0; n < N; ++n) {
    uint32_t h = 0;
    int best = 0;
    for (int m = M - 1; m >= 0; --m) h = step(h, acc[m * N + n], acc[m * N + n] * 3 + 1), want[M * N + m * N + n] = int32_t(h);
    for (int m = 1; m < M; ++m)
      if (acc[m * N + n] > acc[best * N + n]) best = m;
    want[2 * M * N + M + n] = best * 1000 + acc[best * N + n];
  }
  EXPECT_EQ(OUT.download(), want);
}

// 16- and 64-bit operands (16-bit lanes shuffled in 32-bit registers, 64-bit ones as two
// halves; their shared-memory parts aligned to their size): an f16 maximum along axis 1
// and running sum along axis 0 of small integers (exact in f16), and the wrapping affine
// scan in i64 over 512 steps, with an f64 running maximum beside it (a tuple of two
// widths).
TEST(Combine, SixteenAndSixtyFourBitOperands) {
  constexpr int R = 16, C = 64, L = 512;
  auto k = tl::kernel("combine_widths", [](tl::ptr<tl::f16> x, tl::ptr<tl::f16> y, tl::ptr<tl::i64> a,
                                           tl::ptr<tl::i64> b, tl::ptr<tl::f64> d, tl::ptr<tl::i64> h,
                                           tl::ptr<tl::f64> dm) {
    auto o = offsets2(R, C, C);
    auto t = tl::load(x + o);
    tl::store(y + tl::arange(0, R), tl::reduce(t, 1, [](tl::f16 p, tl::f16 q) { return tl::maximum(p, q); }));
    tl::store(y + R + o, tl::associative_scan(t, 0, [](tl::f16 p, tl::f16 q) { return p + q; }));
    auto l = tl::arange(0, L);
    auto [pa, ph, pd] = tl::associative_scan(
        std::tuple{tl::load(a + l), tl::load(b + l), tl::load(d + l)}, 0,
        [](tl::i64 a1, tl::i64 b1, tl::f64 d1, tl::i64 a2, tl::i64 b2, tl::f64 d2) {
          return std::tuple{a1 * a2, a2 * b1 + b2, tl::maximum(d1, d2)};
        });
    tl::store(h + l, ph);
    tl::store(dm + l, pd);
  });
  auto hx = random_ints(R * C, -8, 8);
  std::vector<tl::half> x16;
  for (int v : hx) x16.push_back(tl::to_f16(v));
  auto ha = random_ints(L, -100000, 100000), hb = random_ints(L, -2000000000, 2000000000);
  std::vector<int64_t> a64, b64;
  for (int i = 0; i < L; ++i) a64.push_back(int64_t(ha[i]) * 40503), b64.push_back(int64_t(hb[i]) << 20);
  std::vector<double> d64;
  for (float v : random_floats(L, -1e6f, 1e6f)) d64.push_back(double(v) * 1.0000001);
  auto X = upload<ty::f16>(x16);
  auto A = upload<ty::i64>(a64), B = upload<ty::i64>(b64);
  auto D = upload<ty::f64>(d64);
  auto Y = test_device().alloc<ty::f16>(R + R * C);
  auto H = test_device().alloc<ty::i64>(L);
  auto DM = test_device().alloc<ty::f64>(L);
  poison(Y), poison(H), poison(DM);
  k[tl::grid(1)](X, Y, A, B, D, H, DM);
  compiles_for_gpus_at({4}, k, X, Y, A, B, D, H, DM);  // (every scan and reduction here crosses warps at 4)
  std::vector<double> want(R + R * C);
  for (int r = 0; r < R; ++r) want[r] = *std::max_element(hx.begin() + r * C, hx.begin() + (r + 1) * C);
  for (int c = 0; c < C; ++c) {
    double s = 0;
    for (int r = 0; r < R; ++r) s += hx[r * C + c], want[R + r * C + c] = s;
  }
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  std::vector<int64_t> wh(L);
  std::vector<double> wd(L);
  uint64_t s = 0;
  double m = d64[0];
  for (int i = 0; i < L; ++i) {
    s = uint64_t(a64[i]) * s + uint64_t(b64[i]), wh[i] = int64_t(s);
    m = std::max(m, d64[i]), wd[i] = m;
  }
  EXPECT_EQ(H.download(), wh);
  EXPECT_EQ(DM.download(), wd);
}

// A combine that reads scalars of the kernel (not tiles): inside a tl::range loop, rows
// are summed on even iterations and maximized on odd ones through one combine choosing by
// a loop-dependent i1 and scaling by a kernel argument; the loop carries a tile combined
// by a scan too.
TEST(Combine, CombineReadsScalarsOfTheKernelInALoop) {
  constexpr int R = 8, C = 128;
  auto k = tl::kernel("combine_in_loop", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::f32 scale) {
    auto carried = tl::zeros<ty::f32>({C});
    for (auto i : tl::range(0, R)) {
      auto row = tl::load(x + i * C + tl::arange(0, C));
      tl::i1 even = i % 2 == 0;
      tl::store(out + i, tl::reduce(row, 0, [&](tl::f32 a, tl::f32 b) {
                  return tl::where(even, a + b, tl::maximum(a, b)) * 1.0f;
                }) * scale);
      carried = carried + tl::associative_scan(row, 0, [&](tl::f32 a, tl::f32 b) { return tl::where(even, a + b, b); });
    }
    tl::store(out + R + tl::arange(0, C), carried);
  });
  auto hx = random_floats(R * C);
  auto X = upload<ty::f32>(hx);
  auto OUT = test_device().alloc<ty::f32>(R + C);
  poison(OUT);
  k[tl::grid(1)](X, OUT, 0.5f);
  compiles_for_gpus_at({1, 4}, k, X, OUT, 0.5f);
  std::vector<double> want(R + C, 0.0);
  for (int i = 0; i < R; ++i) {
    double s = 0, m = hx[i * C], run = 0;
    for (int c = 0; c < C; ++c) {
      s += hx[i * C + c], m = std::max(m, double(hx[i * C + c]));
      run = i % 2 == 0 ? run + hx[i * C + c] : hx[i * C + c];
      want[R + c] += run;
    }
    want[i] = (i % 2 == 0 ? s : m) * 0.5;
  }
  EXPECT_TRUE(near(OUT.download(), want, 1e-5, 1e-4));
}

// Triton's shape operations (tl::split, join, interleave, cat, flip) and the reduction
// forms (every axis, keep_dims, xor_sum, cumprod, reverse scans, max/min with indices),
// run on the test device (the CPU in CI; TL_DEVICE=cuda or hip on a GPU) against plain
// C++ on random inputs, outputs poisoned first. Ragged lengths are masked loads of
// power-of-two tiles.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "support/reference.hpp"
#include "support/traced_kernels.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

// Row-major [rows, cols] offsets of a 2-D tile.
tl::i32 offsets2(int rows, int cols, const tl::i32& stride) {
  return tl::expand_dims(tl::arange(0, rows), 1) * stride + tl::expand_dims(tl::arange(0, cols), 0);
}

// The same kernel compiled for the GPUs (no GPU here: the lowering's layout rules, its
// conversions and shared-memory paths must at least compile; TL_DEVICE runs them).
template <class K, class... A> void compiles_for_gpus(K& k, const A&... args) {
  for (const char* arch : {"gfx942", "gfx950", "sm_90"})
    for (int warps : {1, 4, 8}) EXPECT_NO_THROW((void)k.compile(arch, {.num_warps = warps}, args...)) << arch << " " << warps;
}

}  // namespace

// split of a [rows, 2] tile gives its columns; join puts them back (a round trip), and a
// join of other tiles gives a's element at 0 and b's at 1. Rows past n are masked off.
TEST(ShapeOps, SplitAndJoinRoundTrip) {
  constexpr int R = 64;
  auto k = tl::kernel("split_join", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> lo, tl::ptr<tl::f32> hi,
                                       tl::ptr<tl::f32> back, tl::ptr<tl::f32> swapped, tl::i32 n) {
    auto offs = offsets2(R, 2, 2);
    auto rows = tl::arange(0, R);
    auto t = tl::load(x + offs, offs < n * 2, 0.0f);
    auto [a, b] = tl::split(t);
    tl::store(lo + rows, a, rows < n);
    tl::store(hi + rows, b, rows < n);
    tl::store(back + offs, tl::join(a, b), offs < n * 2);
    tl::store(swapped + offs, tl::join(b * 2.0f, a), offs < n * 2);
  });
  for (int n : {64, 37}) {
    auto hx = random_floats(2 * R);
    auto X = upload<ty::f32>(hx);
    auto LO = test_device().alloc<ty::f32>(R), HI = test_device().alloc<ty::f32>(R);
    auto BACK = test_device().alloc<ty::f32>(2 * R), SW = test_device().alloc<ty::f32>(2 * R);
    poison(LO), poison(HI), poison(BACK), poison(SW);
    k[tl::grid(1)](X, LO, HI, BACK, SW, n);
    if (n == R) compiles_for_gpus(k, X, LO, HI, BACK, SW, n);
    auto lo = LO.download(), hi = HI.download(), back = BACK.download(), sw = SW.download();
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(lo[r], hx[2 * r]) << r;
      ASSERT_EQ(hi[r], hx[2 * r + 1]) << r;
      ASSERT_EQ(back[2 * r], hx[2 * r]) << r;
      ASSERT_EQ(back[2 * r + 1], hx[2 * r + 1]) << r;
      ASSERT_EQ(sw[2 * r], hx[2 * r + 1] * 2.0f) << r;
      ASSERT_EQ(sw[2 * r + 1], hx[2 * r]) << r;
    }
  }
}

// A bitcast of a transposed tile is the transpose of the bitcast tile (a bitcast is
// elementwise): the tracer writes it trans(bitcast(x)), the transpose outermost, where the
// pipeliner and the dots' operand reads look for it (Triton's tutorial 10 transposes its
// u8 weight bytes, bitcast to e2m1 by tl::dot_scaled). The bits come out transposed.
TEST(ShapeOps, BitcastOfATransposeIsTheTransposeOfTheBitcast) {
  constexpr int R = 16, C = 32;
  auto f = tltest::trace("bitcast_trans_ir", [&](tl::detail::Trace& t) {
    auto x = tltest::ptr_arg<ty::f32>(t, "x", true);
    auto y = tltest::ptr_arg<ty::i32>(t, "y", true);
    tl::store(y + offsets2(C, R, R), tl::trans(tl::load(x + offsets2(R, C, C))).bitcast<ty::i32>());
  });
  int bitcasts = 0;
  tl::ir::walk(f->body, [&](tl::ir::Operation& op) {
    if (op.op == tl::Op::bitcast) {
      ++bitcasts;
      EXPECT_EQ(op.operands[0]->def->op, tl::Op::load) << f->str();
    }
    if (op.op == tl::Op::store) EXPECT_EQ(op.operands[1]->def->op, tl::Op::trans) << f->str();
  });
  EXPECT_EQ(bitcasts, 1) << f->str();

  auto k = tl::kernel("bitcast_trans", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> y) {
    tl::store(y + offsets2(C, R, R), tl::trans(tl::load(x + offsets2(R, C, C))).bitcast<ty::i32>());
  });
  auto hx = random_floats(R * C);
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<ty::i32>(R * C);
  poison(Y);
  k[tl::grid(1)](X, Y);
  compiles_for_gpus(k, X, Y);
  auto y = Y.download();
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) ASSERT_EQ(y[c * R + r], std::bit_cast<int32_t>(hx[r * C + c])) << r << " " << c;
}

// A split whose 2 is not in one thread's registers on a GPU: the rows of a [2, 512] tile,
// transposed to [512, 2] (the 2 is then a lane or warp bit of the load's layout, converted
// before the split), and a cat of two tiles in different layouts.
TEST(ShapeOps, SplitOfATransposedTileAndCatOfTwoLayouts) {
  auto k = tl::kernel("split_transposed", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::f32> z) {
    auto t = tl::trans(tl::load(x + offsets2(2, 512, 512)));  // [512, 2]
    auto [a, b] = tl::split(t);
    auto o = tl::arange(0, 512);
    tl::store(y + o, a - b);
    auto c = tl::cat(tl::load(x + offsets2(16, 32, 32)), tl::trans(tl::load(x + offsets2(32, 16, 16))));
    tl::store(z + offsets2(32, 32, 32), c);
  });
  auto hx = random_floats(1024);
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<ty::f32>(512), Z = test_device().alloc<ty::f32>(1024);
  poison(Y), poison(Z);
  k[tl::grid(1)](X, Y, Z);
  compiles_for_gpus(k, X, Y, Z);
  std::vector<double> y(512), z(1024);
  for (int i = 0; i < 512; ++i) y[i] = double(hx[i] - hx[512 + i]);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c) z[r * 32 + c] = hx[r * 32 + c], z[(16 + r) * 32 + c] = hx[c * 16 + r];
  EXPECT_TRUE(near(Y.download(), y, 0, 0));
  EXPECT_TRUE(near(Z.download(), z, 0, 0));
}

// 3-D: split of [4, 8, 2], join of [4, 8] with a broadcast row [8] (Triton's join
// broadcasts), and two scalars joined into a [2].
TEST(ShapeOps, JoinBroadcastsAndJoinsScalars) {
  auto k = tl::kernel("join3", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> y, tl::ptr<tl::i32> z, tl::ptr<tl::i32> s) {
    auto i = tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 1), 2) * 16 +
             tl::expand_dims(tl::expand_dims(tl::arange(0, 8), 0), 2) * 2 +
             tl::expand_dims(tl::expand_dims(tl::arange(0, 2), 0), 0);
    auto t = tl::load(x + i);
    auto [a, b] = tl::split(t);       // [4, 8]
    auto row = tl::arange(0, 8) * 100;  // [8]
    tl::store(y + i, tl::join(a - b, row));
    auto [p, q] = tl::split(tl::join(b, a));
    tl::store(z + offsets2(4, 8, 8), p * 1000 + q);
    tl::store(s + tl::arange(0, 2), tl::join(tl::i32(7), tl::load(x + 5)));
  });
  auto hx = random_ints(64, -1000, 1000);
  auto X = upload<ty::i32>(hx);
  auto Y = test_device().alloc<ty::i32>(64), Z = test_device().alloc<ty::i32>(32), S = test_device().alloc<ty::i32>(2);
  poison(Y), poison(Z), poison(S);
  k[tl::grid(1)](X, Y, Z, S);
  compiles_for_gpus(k, X, Y, Z, S);
  auto y = Y.download(), z = Z.download(), s = S.download();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      int e = r * 16 + c * 2;
      EXPECT_EQ(y[e], hx[e] - hx[e + 1]);
      EXPECT_EQ(y[e + 1], c * 100);
      EXPECT_EQ(z[r * 8 + c], hx[e + 1] * 1000 + hx[e]);
    }
  EXPECT_EQ(s[0], 7);
  EXPECT_EQ(s[1], hx[5]);
}

// interleave(a, b) alternates a and b along the last dim (join, then reshape: Triton's
// definition), in 1-D and 2-D; cat(a, b) puts b's rows after a's, in order.
TEST(ShapeOps, InterleaveAndCat) {
  auto k = tl::kernel("interleave_cat", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> il1,
                                           tl::ptr<tl::f32> il2, tl::ptr<tl::f32> cat1, tl::ptr<tl::f32> cat2) {
    auto o1 = tl::arange(0, 128);
    auto o2 = offsets2(16, 8, 8);
    auto a1 = tl::load(a + o1), b1 = tl::load(b + o1);
    tl::store(il1 + tl::arange(0, 256), tl::interleave(a1, b1));
    tl::store(il2 + offsets2(16, 16, 16), tl::interleave(tl::load(a + o2), tl::load(b + o2)));
    tl::store(cat1 + tl::arange(0, 256), tl::cat(a1, b1 + 1.0f));
    tl::store(cat2 + offsets2(32, 8, 8), tl::cat(tl::load(a + o2), tl::load(b + o2)));
  });
  auto ha = random_floats(128), hb = random_floats(128);
  auto A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
  auto IL1 = test_device().alloc<ty::f32>(256), IL2 = test_device().alloc<ty::f32>(256);
  auto C1 = test_device().alloc<ty::f32>(256), C2 = test_device().alloc<ty::f32>(256);
  poison(IL1), poison(IL2), poison(C1), poison(C2);
  k[tl::grid(1)](A, B, IL1, IL2, C1, C2);
  compiles_for_gpus(k, A, B, IL1, IL2, C1, C2);
  std::vector<double> il1(256), il2(256), c1(256), c2(256);
  for (int i = 0; i < 128; ++i) {
    il1[2 * i] = ha[i], il1[2 * i + 1] = hb[i];
    c1[i] = ha[i], c1[128 + i] = double(hb[i] + 1.0f);
    c2[i] = ha[i], c2[128 + i] = hb[i];
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c) il2[r * 16 + 2 * c] = ha[r * 8 + c], il2[r * 16 + 2 * c + 1] = hb[r * 8 + c];
  EXPECT_TRUE(near(IL1.download(), il1, 0, 0));
  EXPECT_TRUE(near(IL2.download(), il2, 0, 0));
  EXPECT_TRUE(near(C1.download(), c1, 0, 0));
  EXPECT_TRUE(near(C2.download(), c2, 0, 0));
}

// flip along every dim of 1-D, 2-D and 3-D tiles; 1024 elements span every warp of a
// GPU program (the shared-memory path), 64 elements only lanes and registers.
TEST(ShapeOps, FlipEveryDim) {
  auto k = tl::kernel("flip", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> f64_, tl::ptr<tl::i32> f1024, tl::ptr<tl::i32> f2a,
                                 tl::ptr<tl::i32> f2b, tl::ptr<tl::i32> f3) {
    tl::store(f64_ + tl::arange(0, 64), tl::flip(tl::load(x + tl::arange(0, 64))));
    tl::store(f1024 + tl::arange(0, 1024), tl::flip(tl::load(x + tl::arange(0, 1024)), 0));
    auto o2 = offsets2(16, 32, 32);
    tl::store(f2a + o2, tl::flip(tl::load(x + o2), 0));
    tl::store(f2b + o2, tl::flip(tl::load(x + o2), 1));
    auto i3 = tl::expand_dims(tl::expand_dims(tl::arange(0, 2), 1), 2) * 128 +
              tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 0), 2) * 32 +
              tl::expand_dims(tl::expand_dims(tl::arange(0, 32), 0), 0);
    auto t3 = tl::load(x + i3);
    // dims 0, 1 and 2 flipped, written side by side: [2, 4, 32] three times
    tl::store(f3 + i3, tl::flip(t3, 0));
    tl::store(f3 + 256 + i3, tl::flip(t3, 1));
    tl::store(f3 + 512 + i3, tl::flip(t3, -1));
  });
  auto hx = random_ints(1024, -100000, 100000);
  auto X = upload<ty::i32>(hx);
  auto F64 = test_device().alloc<ty::i32>(64), F1024 = test_device().alloc<ty::i32>(1024);
  auto F2A = test_device().alloc<ty::i32>(512), F2B = test_device().alloc<ty::i32>(512);
  auto F3 = test_device().alloc<ty::i32>(768);
  poison(F64), poison(F1024), poison(F2A), poison(F2B), poison(F3);
  k[tl::grid(1)](X, F64, F1024, F2A, F2B, F3);
  compiles_for_gpus(k, X, F64, F1024, F2A, F2B, F3);
  auto f64 = F64.download(), f1024 = F1024.download(), f2a = F2A.download(), f2b = F2B.download(), f3 = F3.download();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(f64[i], hx[63 - i]) << i;
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(f1024[i], hx[1023 - i]) << i;
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 32; ++c) {
      ASSERT_EQ(f2a[r * 32 + c], hx[(15 - r) * 32 + c]) << r << "," << c;
      ASSERT_EQ(f2b[r * 32 + c], hx[r * 32 + 31 - c]) << r << "," << c;
    }
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 32; ++c) {
        int e = a * 128 + b * 32 + c;
        ASSERT_EQ(f3[e], hx[(1 - a) * 128 + b * 32 + c]);
        ASSERT_EQ(f3[256 + e], hx[a * 128 + (3 - b) * 32 + c]);
        ASSERT_EQ(f3[512 + e], hx[a * 128 + b * 32 + 31 - c]);
      }
}

// Triton's tutorial 09 EPILOGUE_SUBTILE: a dot's accumulator reshaped to [BM, 2, BN/2],
// permuted to [BM, BN/2, 2], split into its left and right halves, each stored on its own.
TEST(ShapeOps, EpilogueSubtileOfADot) {
  constexpr int BM = 64, BN = 64, K = 32;
  auto k = tl::kernel("epilogue_subtile", [](tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f16> c) {
    auto acc = tl::dot(tl::load(a + offsets2(BM, K, K)), tl::load(b + offsets2(K, BN, BN)));
    auto halves = tl::trans(tl::reshape(acc, {BM, 2, BN / 2}), {0, 2, 1});
    auto [c0, c1] = tl::split(halves);
    auto oc = offsets2(BM, BN / 2, BN);
    tl::store(c + oc, c0.to<ty::f16>());
    tl::store(c + BN / 2 + oc, c1.to<ty::f16>());
  });
  auto ha = random_floats(BM * K, -1, 1), hb = random_floats(K * BN, -1, 1);
  std::vector<tl::half> a16, b16;
  for (float v : ha) a16.push_back(tl::half(v));
  for (float v : hb) b16.push_back(tl::half(v));
  auto A = upload<ty::f16>(a16), B = upload<ty::f16>(b16);
  auto C = test_device().alloc<ty::f16>(BM * BN);
  poison(C);
  k[tl::grid(1)](A, B, C);
  compiles_for_gpus(k, A, B, C);
  std::vector<double> want(BM * BN);
  for (int m = 0; m < BM; ++m)
    for (int n = 0; n < BN; ++n) {
      double s = 0;
      for (int kk = 0; kk < K; ++kk) s += tl::to_float(a16[m * K + kk]) * double(tl::to_float(b16[kk * BN + n]));
      want[m * BN + n] = s;
    }
  EXPECT_TRUE(near(C.download(), want, 2e-3, 2e-3));
}

// tl::sum(t) over every axis (a scalar), keep_dims over one axis or all, xor_sum, and
// max/min with their indices (ties: the smallest index, Triton's tie_break_left; the
// integers are drawn from a few values so that ties are common). Rows past n are masked.
TEST(ShapeOps, ReductionForms) {
  constexpr int R = 16, C = 32;
  auto k = tl::kernel("reduction_forms", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> xi, tl::ptr<tl::f32> total,
                                            tl::ptr<tl::f32> centered, tl::ptr<tl::f32> centered_all,
                                            tl::ptr<tl::i32> xors, tl::ptr<tl::i32> arg, tl::ptr<tl::i32> vals,
                                            tl::i32 n) {
    auto o = offsets2(R, C, C);
    auto mask = o < n;
    auto t = tl::load(x + o, mask, 0.0f);
    auto ti = tl::load(xi + o, mask, 0);
    tl::store(total, tl::sum(t));
    tl::store(total + 1, tl::max(t));
    tl::store(total + 2, tl::min(t));
    tl::store(centered + o, t - tl::sum(t, 1, tl::keep_dims) / float(C));
    tl::store(centered_all + o, t - tl::sum(t, tl::keep_dims));
    tl::store(xors + tl::arange(0, R), tl::xor_sum(ti, 1));
    tl::store(xors + R + tl::arange(0, C), tl::reshape(tl::xor_sum(ti, 0, tl::keep_dims), {C}));
    tl::store(xors + R + C, tl::xor_sum(ti));
    auto [mx, imx] = tl::max(ti, 1, tl::return_indices);
    auto [mn, imn] = tl::min(ti, 0, tl::return_indices);
    auto [amx, iamx] = tl::max(t, tl::return_indices);
    tl::store(vals + tl::arange(0, R), mx);
    tl::store(arg + tl::arange(0, R), imx);
    tl::store(vals + R + tl::arange(0, C), mn);
    tl::store(arg + R + tl::arange(0, C), imn);
    tl::store(arg + R + C, iamx);
    tl::store(total + 3, amx);
  });
  for (int n : {R * C, 300}) {
    auto hx = random_floats(R * C);
    auto hi = random_ints(R * C, -3, 3);
    auto X = upload<ty::f32>(hx);
    auto XI = upload<ty::i32>(hi);
    auto TOT = test_device().alloc<ty::f32>(4), CEN = test_device().alloc<ty::f32>(R * C);
    auto CALL = test_device().alloc<ty::f32>(R * C);
    auto XOR = test_device().alloc<ty::i32>(R + C + 1), ARG = test_device().alloc<ty::i32>(R + C + 1);
    auto VAL = test_device().alloc<ty::i32>(R + C);
    poison(TOT), poison(CEN), poison(CALL), poison(XOR), poison(ARG), poison(VAL);
    k[tl::grid(1)](X, XI, TOT, CEN, CALL, XOR, ARG, VAL, n);
    if (n == R * C) compiles_for_gpus(k, X, XI, TOT, CEN, CALL, XOR, ARG, VAL, n);
    std::vector<double> x(R * C);
    std::vector<int32_t> xi(R * C);
    for (int e = 0; e < R * C; ++e) x[e] = e < n ? hx[e] : 0.0, xi[e] = e < n ? hi[e] : 0;
    double sum = 0, mx = x[0], mn = x[0];
    int amx = 0;
    for (int e = 0; e < R * C; ++e) {
      sum += x[e], mn = std::min(mn, x[e]);
      if (x[e] > mx) mx = x[e], amx = e;
    }
    auto tot = TOT.download();
    EXPECT_NEAR(tot[0], sum, 1e-4);
    EXPECT_EQ(tot[1], mx);
    EXPECT_EQ(tot[2], mn);
    EXPECT_EQ(tot[3], mx);
    std::vector<double> cen(R * C), call(R * C);
    for (int r = 0; r < R; ++r) {
      double rs = 0;
      for (int c = 0; c < C; ++c) rs += x[r * C + c];
      for (int c = 0; c < C; ++c) cen[r * C + c] = x[r * C + c] - rs / C, call[r * C + c] = x[r * C + c] - sum;
    }
    EXPECT_TRUE(near(CEN.download(), cen, 1e-5, 1e-5));
    EXPECT_TRUE(near(CALL.download(), call, 1e-5, 1e-4));
    std::vector<int32_t> xors(R + C + 1, 0), args(R + C + 1), vals(R + C);
    for (int r = 0; r < R; ++r) {
      vals[r] = xi[r * C], args[r] = 0;
      for (int c = 0; c < C; ++c) {
        int32_t v = xi[r * C + c];
        xors[r] ^= v, xors[R + c] ^= v, xors[R + C] ^= v;
        if (v > vals[r]) vals[r] = v, args[r] = c;
      }
    }
    for (int c = 0; c < C; ++c) {
      vals[R + c] = xi[c], args[R + c] = 0;
      for (int r = 0; r < R; ++r)
        if (xi[r * C + c] < vals[R + c]) vals[R + c] = xi[r * C + c], args[R + c] = r;
    }
    args[R + C] = amx;
    EXPECT_EQ(XOR.download(), xors);
    EXPECT_EQ(ARG.download(), args);
    EXPECT_EQ(VAL.download(), vals);
  }
}

// cumprod and cumsum, forward and reverse (Triton's reverse=True: out[i] combines a[i..]),
// f32 and i32, along either axis, against running products and sums in double; lengths
// 37 (masked, the rest 1 for products and 0 for sums) and 64.
TEST(ShapeOps, CumprodAndReverseScans) {
  constexpr int R = 8, C = 64;
  auto k = tl::kernel("scans", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> xi, tl::ptr<tl::f32> out, tl::ptr<tl::i32> outi,
                                  tl::i32 n) {
    auto o = offsets2(R, C, C);
    auto mask = tl::expand_dims(tl::arange(0, C), 0) < n;
    auto t = tl::load(x + o, mask, 1.0f);
    auto ti = tl::load(xi + o, mask, 1);
    tl::store(out + o, tl::cumprod(t, 1));
    tl::store(out + R * C + o, tl::cumprod(t, 1, true));
    tl::store(out + 2 * R * C + o, tl::cumsum(t, 1, true));
    tl::store(out + 3 * R * C + o, tl::cumprod(t, 0, true));
    tl::store(outi + o, tl::cumprod(ti, 1));
    tl::store(outi + R * C + o, tl::cumprod(ti, 0, true));
  });
  for (int n : {C, 37}) {
    auto hx = random_floats(R * C, 0.9f, 1.1f);
    auto hi = random_ints(R * C, -2, 2);
    auto X = upload<ty::f32>(hx);
    auto XI = upload<ty::i32>(hi);
    auto OUT = test_device().alloc<ty::f32>(4 * R * C);
    auto OUTI = test_device().alloc<ty::i32>(2 * R * C);
    poison(OUT), poison(OUTI);
    k[tl::grid(1)](X, XI, OUT, OUTI, n);
    if (n == C) compiles_for_gpus(k, X, XI, OUT, OUTI, n);
    std::vector<double> x(R * C);
    std::vector<int32_t> xi(R * C);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) x[r * C + c] = c < n ? hx[r * C + c] : 1.0, xi[r * C + c] = c < n ? hi[r * C + c] : 1;
    std::vector<double> want(4 * R * C);
    std::vector<int32_t> wanti(2 * R * C);
    for (int r = 0; r < R; ++r) {
      double p = 1;
      int32_t pi = 1;
      for (int c = 0; c < C; ++c) {
        p *= x[r * C + c], pi = int32_t(uint32_t(pi) * uint32_t(xi[r * C + c]));  // i32 wraps
        want[r * C + c] = p, wanti[r * C + c] = pi;
      }
      double q = 1, s = 0;
      for (int c = C - 1; c >= 0; --c) {
        q *= x[r * C + c], s += x[r * C + c];
        want[R * C + r * C + c] = q, want[2 * R * C + r * C + c] = s;
      }
    }
    for (int c = 0; c < C; ++c) {
      double q = 1;
      int32_t qi = 1;
      for (int r = R - 1; r >= 0; --r) {
        q *= x[r * C + c], qi = int32_t(uint32_t(qi) * uint32_t(xi[r * C + c]));
        want[3 * R * C + r * C + c] = q, wanti[R * C + r * C + c] = qi;
      }
    }
    EXPECT_TRUE(near(OUT.download(), want, 1e-5, 1e-5)) << "n=" << n;
    EXPECT_EQ(OUTI.download(), wanti) << "n=" << n;
  }
}

// tl::gather along either axis of a 2-D tile (Triton's torch.gather semantics), the index
// tile taller or wider than the source, i32 and i64 indices; a 1-D gather of a permutation.
TEST(ShapeOps, GatherAlongEitherAxis) {
  constexpr int R = 32, C = 16;
  auto k = tl::kernel("gather", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> i0, tl::ptr<tl::i64> i1, tl::ptr<tl::f32> g0,
                                   tl::ptr<tl::f32> g1, tl::ptr<tl::f32> g2) {
    auto src = tl::load(x + offsets2(R, C, C));
    tl::store(g0 + offsets2(2 * R, C, C), tl::gather(src, tl::load(i0 + offsets2(2 * R, C, C)), 0));
    tl::store(g1 + offsets2(R, 4 * C, 4 * C), tl::gather(src, tl::load(i1 + offsets2(R, 4 * C, 4 * C)), 1));
    auto o = tl::arange(0, R * C);
    tl::store(g2 + o, tl::gather(tl::load(x + o), tl::load(i0 + o), -1));
  });
  auto hx = random_floats(R * C);
  auto h0 = random_ints(2 * R * C, 0, R - 1);
  std::vector<int64_t> h1;
  for (int32_t v : random_ints(4 * R * C, 0, C - 1)) h1.push_back(v);
  auto X = upload<ty::f32>(hx);
  auto I0 = upload<ty::i32>(h0);
  auto I1 = upload<ty::i64>(h1);
  auto G0 = test_device().alloc<ty::f32>(2 * R * C), G1 = test_device().alloc<ty::f32>(4 * R * C);
  auto G2 = test_device().alloc<ty::f32>(R * C);
  poison(G0), poison(G1), poison(G2);
  k[tl::grid(1)](X, I0, I1, G0, G1, G2);
  compiles_for_gpus(k, X, I0, I1, G0, G1, G2);
  std::vector<double> g0(2 * R * C), g1(4 * R * C), g2(R * C);
  for (int r = 0; r < 2 * R; ++r)
    for (int c = 0; c < C; ++c) g0[r * C + c] = hx[h0[r * C + c] * C + c];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < 4 * C; ++c) g1[r * 4 * C + c] = hx[r * C + h1[r * 4 * C + c]];
  for (int i = 0; i < R * C; ++i) g2[i] = hx[h0[i]];
  EXPECT_TRUE(near(G0.download(), g0, 0, 0));
  EXPECT_TRUE(near(G1.download(), g1, 0, 0));
  EXPECT_TRUE(near(G2.download(), g2, 0, 0));
}

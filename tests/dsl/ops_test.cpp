// The language's operations, run on the test device (the CPU in CI; TL_DEVICE=cuda
// runs the same tests on an NVIDIA GPU), each against a double-precision C++
// reference on random inputs, with outputs poisoned before every launch.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

// y[i] = f(x[i]) for a ragged n (the last program is partly masked off).
template <class F> void run_unary(const char* name, F body, double (*ref)(double), float lo, float hi, double rtol,
                                  double atol) {
  auto k = tl::kernel(name, [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    auto v = tl::load(x + i, m, 1.0f);
    tl::store(y + i, body(v), m);
  });
  const int n = 1000;
  auto h = random_floats(n, lo, hi);
  auto X = upload<ty::f32>(h);
  auto Y = test_device().alloc<tl::f32>(n);
  poison(Y);
  k[tl::grid(tl::cdiv(n, 256))](X, Y, n, 256);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = ref(h[i]);
  EXPECT_TRUE(near(Y.download(), want, rtol, atol)) << name;
}

}  // namespace

TEST(Elementwise, MathFunctionsMatchDoublePrecision) {
  run_unary("exp", [](const tl::f32& v) { return tl::exp(v); }, [](double x) { return std::exp(x); }, -4, 4, 1e-5, 1e-6);
  run_unary("exp2", [](const tl::f32& v) { return tl::exp2(v); }, [](double x) { return std::exp2(x); }, -4, 4, 1e-5, 1e-6);
  run_unary("log", [](const tl::f32& v) { return tl::log(v); }, [](double x) { return std::log(x); }, 0.01f, 8, 1e-5, 1e-6);
  run_unary("log2", [](const tl::f32& v) { return tl::log2(v); }, [](double x) { return std::log2(x); }, 0.01f, 8, 1e-5, 1e-6);
  run_unary("sqrt", [](const tl::f32& v) { return tl::sqrt(v); }, [](double x) { return std::sqrt(x); }, 0, 9, 1e-6, 1e-7);
  run_unary("rsqrt", [](const tl::f32& v) { return tl::rsqrt(v); }, [](double x) { return 1 / std::sqrt(x); }, 0.1f, 9, 1e-5, 1e-7);
  run_unary("abs", [](const tl::f32& v) { return tl::abs(v); }, [](double x) { return std::fabs(x); }, -3, 3, 0, 0);
  run_unary("sin", [](const tl::f32& v) { return tl::sin(v); }, [](double x) { return std::sin(x); }, -3, 3, 1e-5, 1e-6);
  run_unary("cos", [](const tl::f32& v) { return tl::cos(v); }, [](double x) { return std::cos(x); }, -3, 3, 1e-5, 1e-6);
  run_unary("erf", [](const tl::f32& v) { return tl::erf(v); }, [](double x) { return std::erf(x); }, -3, 3, 1e-5, 1e-6);
  run_unary("floor", [](const tl::f32& v) { return tl::floor(v); }, [](double x) { return std::floor(x); }, -5, 5, 0, 0);
  run_unary("ceil", [](const tl::f32& v) { return tl::ceil(v); }, [](double x) { return std::ceil(x); }, -5, 5, 0, 0);
  run_unary("neg", [](const tl::f32& v) { return -v; }, [](double x) { return -x; }, -5, 5, 0, 0);
}

TEST(Elementwise, ArithmeticWithScalarsAndFma) {
  auto k = tl::kernel("arith", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> out, tl::f32 s, tl::i32 n) {
    auto i = tl::program_id(0) * 128 + tl::arange(0, 128);
    auto m = i < n;
    auto x = tl::load(a + i, m, 0.0f);
    auto y = tl::load(b + i, m, 1.0f);
    auto r = tl::fma(x, y, tl::maximum(x, y) - tl::minimum(x, 0.5f)) + (x / y) * s - 2.0f * x;
    tl::store(out + i, r, m);
  });
  const int n = 777;
  auto ha = random_floats(n), hb = random_floats(n, 0.5f, 3.0f);
  auto A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
  auto O = test_device().alloc<tl::f32>(n);
  poison(O);
  k[tl::grid(tl::cdiv(n, 128))](A, B, O, 1.25f, n);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) {
    double x = ha[i], y = hb[i];
    want[i] = x * y + (std::max(x, y) - std::min(x, 0.5)) + (x / y) * 1.25 - 2 * x;
  }
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-5));
}

TEST(Elementwise, IntegerOpsComparisonsAndWhere) {
  auto k = tl::kernel("intops", [](tl::ptr<tl::i32> a, tl::ptr<tl::i32> b, tl::ptr<tl::i32> out, tl::i32 n) {
    auto i = tl::program_id(0) * 64 + tl::arange(0, 64);
    auto m = i < n;
    auto x = tl::load(a + i, m, 0);
    auto y = tl::load(b + i, m, 1);
    auto r = (x / y) + (x % y) * 3 + ((x & 0xff) ^ (y | 4)) + (x << 2) - (x >> 1);
    tl::store(out + i, tl::where(x > y, r, -r) + tl::where(x == y, 1000, 0), m);
  });
  const int n = 300;
  auto ha = random_ints(n, -100000, 100000), hb = random_ints(n, 1, 50);
  for (int i = 0; i < n; i += 7) hb[i] = -hb[i];
  ha[5] = hb[5];
  auto A = upload<ty::i32>(ha), B = upload<ty::i32>(hb);
  auto O = test_device().alloc<tl::i32>(n);
  poison(O);
  k[tl::grid(tl::cdiv(n, 64))](A, B, O, n);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) {
    int32_t x = ha[i], y = hb[i];
    int32_t r = (x / y) + (x % y) * 3 + ((x & 0xff) ^ (y | 4)) + (x << 2) - (x >> 1);
    want[i] = (x > y ? r : -r) + (x == y ? 1000 : 0);
  }
  EXPECT_TRUE(near(O.download(), want, 0, 0));
}

TEST(Casts, Bf16AndF16RoundToNearestEven) {
  auto k = tl::kernel("to_narrow", [](tl::ptr<tl::f32> x, tl::ptr<tl::bf16> b, tl::ptr<tl::f16> h, tl::i32 n) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0.0f);
    tl::store(b + i, v.to<tl::bf16>(), m);
    tl::store(h + i, v.to<tl::f16>(), m);
  });
  // Random values plus exact ties: 1 + 2^-8 (bf16 tie, even is 1.0) and 1 + 3*2^-8 (even is up).
  auto hx = random_floats(500, -70000.0f, 70000.0f);
  hx.push_back(1.00390625f);
  hx.push_back(1.01171875f);
  hx.push_back(1.0f + 1.0f / 2048);   // f16 tie, rounds to 1.0
  hx.push_back(1.0f + 3.0f / 2048);   // f16 tie, rounds up
  hx.push_back(1e6f);                 // f16 overflow to inf
  hx.push_back(-3.0e-6f);             // f16 subnormal
  int n = int(hx.size());
  auto X = upload<ty::f32>(hx);
  auto B = test_device().alloc<tl::bf16>(n);
  auto H = test_device().alloc<tl::f16>(n);
  poison(B);
  poison(H);
  k[tl::grid(tl::cdiv(n, 256))](X, B, H, n);
  auto gb = B.download();
  auto gh = H.download();
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(gb[i].bits, tl::to_bf16(hx[i]).bits) << "bf16 of " << hx[i];
    EXPECT_EQ(gh[i].bits, tl::to_f16(hx[i]).bits) << "f16 of " << hx[i];
  }
  EXPECT_EQ(gb[n - 6].bits, 0x3f80);
  EXPECT_EQ(gb[n - 5].bits, 0x3f82);
}

namespace {
template <class E> void check_fp8(const char* name) {
  auto k = tl::kernel(name, [](tl::ptr<tl::f32> x, tl::ptr<E> q, tl::ptr<tl::f32> back, tl::i32 n) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0.0f).template to<E>();
    tl::store(q + i, v, m);
    tl::store(back + i, v.template to<tl::f32>(), m);
  });
  auto hx = random_floats(400, -600.0f, 600.0f);
  for (float s : {1e6f, -1e6f, INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1e-9f}) hx.push_back(s);
  int n = int(hx.size());
  auto X = upload<ty::f32>(hx);
  auto Q = test_device().alloc<E>(n);
  auto R = test_device().alloc<tl::f32>(n);
  poison(Q);
  poison(R);
  k[tl::grid(tl::cdiv(n, 256))](X, Q, R, n);
  auto q = Q.download();
  auto r = R.download();
  constexpr tl::DType D = tl::elem_t<E>::dtype;
  for (int i = 0; i < n; ++i) {
    uint8_t want = tl::to_fp8(D, hx[i]);
    // NaN payloads may differ between conversion instructions; NaN-ness may not.
    if (std::isnan(hx[i])) EXPECT_TRUE(std::isnan(tl::to_double(D, q[i].bits))) << name;
    else EXPECT_EQ(int(q[i].bits), int(want)) << name << " of " << hx[i];
    double back = tl::to_double(D, want);
    if (std::isnan(back)) EXPECT_TRUE(std::isnan(r[i])) << name;
    else EXPECT_EQ(double(r[i]), back) << name << " of " << hx[i];
  }
  // saturation: huge values become the largest finite value, never inf
  EXPECT_EQ(tl::to_double(D, q[n - 8].bits), tl::max_finite(D));
  EXPECT_EQ(tl::to_double(D, q[n - 6].bits), tl::max_finite(D));
  EXPECT_TRUE(std::isnan(tl::to_double(D, q[n - 4].bits)));
}
}  // namespace

TEST(Casts, Fp8SaturatesAndKeepsNaNForAllFourFormats) {
  check_fp8<tl::f8e4m3fn>("fp8_e4m3fn");
  check_fp8<tl::f8e5m2>("fp8_e5m2");
  check_fp8<tl::f8e4m3fnuz>("fp8_e4m3fnuz");
  check_fp8<tl::f8e5m2fnuz>("fp8_e5m2fnuz");
}

TEST(Casts, FloatIntConversions) {
  auto k = tl::kernel("f2i", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> y, tl::ptr<tl::f32> z, tl::i32 n) {
    auto i = tl::arange(0, 256);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0.0f);
    auto q = v.to<tl::i32>();
    tl::store(y + i, q, m);
    tl::store(z + i, q.to<tl::i8>().to<tl::f32>(), m);
  });
  auto hx = random_floats(200, -300.0f, 300.0f);
  int n = int(hx.size());
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<tl::i32>(n);
  auto Z = test_device().alloc<tl::f32>(n);
  poison(Y);
  poison(Z);
  k[tl::grid(1)](X, Y, Z, n);
  auto gy = Y.download();
  auto gz = Z.download();
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(gy[i], int32_t(hx[i]));
    EXPECT_EQ(gz[i], float(int8_t(int32_t(hx[i]))));
  }
}

TEST(Reductions, SumMaxMinArgmaxAlongEachAxisOf2D) {
  auto k = tl::kernel("reduce2d", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::ptr<tl::i32> idx, int R, int C) {
    auto r = tl::arange(0, R);
    auto c = tl::arange(0, C);
    auto offs = tl::expand_dims(r, 1) * C + tl::expand_dims(c, 0);
    auto v = tl::load(x + offs);
    tl::store(out + r, tl::sum(v, 1));
    tl::store(out + R + c, tl::sum(v, 0));
    tl::store(out + R + C + r, tl::max(v, 1));
    tl::store(out + 2 * R + C + c, tl::min(v, 0));
    tl::store(idx + r, tl::argmax(v, 1));
    tl::store(idx + R + c, tl::argmin(v, 0));
  });
  const int R = 16, C = 64;
  auto h = random_floats(R * C, -10, 10);
  auto X = upload<ty::f32>(h);
  auto O = test_device().alloc<tl::f32>(2 * R + 2 * C);
  auto I = test_device().alloc<tl::i32>(R + C);
  poison(O);
  poison(I);
  k[tl::grid(1)](X, O, I, R, C);
  std::vector<double> want(2 * R + 2 * C);
  std::vector<double> widx(R + C);
  for (int i = 0; i < R; ++i) {
    double s = 0, mx = -1e30;
    int am = 0;
    for (int j = 0; j < C; ++j) {
      s += h[i * C + j];
      if (h[i * C + j] > mx) mx = h[i * C + j], am = j;
    }
    want[i] = s;
    want[R + C + i] = mx;
    widx[i] = am;
  }
  for (int j = 0; j < C; ++j) {
    double s = 0, mn = 1e30;
    int am = 0;
    for (int i = 0; i < R; ++i) {
      s += h[i * C + j];
      if (h[i * C + j] < mn) mn = h[i * C + j], am = i;
    }
    want[R + j] = s;
    want[2 * R + C + j] = mn;
    widx[R + j] = am;
  }
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-4));
  EXPECT_TRUE(near(I.download(), widx, 0, 0));
}

TEST(Reductions, ThreeDimensionalMiddleAxisAndCumsum) {
  auto k = tl::kernel("reduce3d", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> s, tl::ptr<tl::f32> cs) {
    auto a = tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 1), 2);
    auto b = tl::expand_dims(tl::expand_dims(tl::arange(0, 8), 0), 2);
    auto c = tl::expand_dims(tl::expand_dims(tl::arange(0, 16), 0), 0);
    auto offs = a * 128 + b * 16 + c;
    auto v = tl::load(x + offs);
    auto r = tl::sum(v, 1);  // [4, 16]
    auto a2 = tl::expand_dims(tl::arange(0, 4), 1) * 16 + tl::expand_dims(tl::arange(0, 16), 0);
    tl::store(s + a2, r);
    tl::store(cs + offs, tl::cumsum(v, 2));
  });
  auto h = random_floats(4 * 8 * 16);
  auto X = upload<ty::f32>(h);
  auto S = test_device().alloc<tl::f32>(4 * 16);
  auto CS = test_device().alloc<tl::f32>(h.size());
  poison(S);
  poison(CS);
  k[tl::grid(1)](X, S, CS);
  std::vector<double> ws(4 * 16, 0.0), wc(h.size());
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 8; ++b) {
      double run = 0;
      for (int c = 0; c < 16; ++c) {
        ws[a * 16 + c] += h[a * 128 + b * 16 + c];
        run += h[a * 128 + b * 16 + c];
        wc[a * 128 + b * 16 + c] = run;
      }
    }
  EXPECT_TRUE(near(S.download(), ws, 1e-5, 1e-5));
  EXPECT_TRUE(near(CS.download(), wc, 1e-5, 1e-5));
}

// Scans whose axis spans registers, lanes and warps (the GPU lowering's bit-by-bit
// scan: 8 warps, and rows over warps on the other axis), f32 and i32, with the reference
// summed in double.
TEST(Reductions, CumsumAcrossLanesAndWarps) {
  auto k = tl::kernel("cumsum_wide", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::i32> yi,
                                        tl::ptr<tl::f32> z) {
    auto c = tl::arange(0, 4096);
    auto v = tl::load(x + c);
    tl::store(y + c, tl::cumsum(v, 0));
    tl::store(yi + c, tl::cumsum((v * 100.0f).to<tl::i32>(), 0));
    auto offs = tl::expand_dims(tl::arange(0, 16), 1) * 256 + tl::expand_dims(tl::arange(0, 256), 0);
    auto m = tl::load(x + offs);
    tl::store(z + offs, tl::cumsum(m, 0) + tl::cumsum(m, 1));
  });
  auto h = random_floats(4096);
  auto X = upload<ty::f32>(h);
  auto Y = test_device().alloc<tl::f32>(4096);
  auto YI = test_device().alloc<tl::i32>(4096);
  auto Z = test_device().alloc<tl::f32>(4096);
  poison(Y);
  poison(Z);
  k[tl::grid(1)].with({.num_warps = 8})(X, Y, YI, Z);
  std::vector<double> wy(4096), wi(4096), wz(4096, 0.0);
  double run = 0;
  int64_t irun = 0;
  for (int i = 0; i < 4096; ++i) {
    wy[i] = run += h[i];
    wi[i] = double(irun += int64_t(float(h[i]) * 100.0f));
  }
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 256; ++c) {
      double down = 0, across = 0;
      for (int i = 0; i <= r; ++i) down += h[i * 256 + c];
      for (int j = 0; j <= c; ++j) across += h[r * 256 + j];
      wz[r * 256 + c] = down + across;
    }
  EXPECT_TRUE(near(Y.download(), wy, 1e-4, 1e-3));
  EXPECT_TRUE(near(YI.download(), wi, 0, 0));
  EXPECT_TRUE(near(Z.download(), wz, 1e-4, 1e-3));
}

TEST(Shapes, TransReshapeBroadcast) {
  auto k = tl::kernel("shapes", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> t, tl::ptr<tl::f32> b) {
    auto r = tl::expand_dims(tl::arange(0, 8), 1);
    auto c = tl::expand_dims(tl::arange(0, 32), 0);
    auto v = tl::load(x + r * 32 + c);               // [8, 32]
    auto vt = tl::trans(v);                          // [32, 8]
    auto rt = tl::expand_dims(tl::arange(0, 32), 1);
    auto ct = tl::expand_dims(tl::arange(0, 8), 0);
    tl::store(t + rt * 8 + ct, vt);
    auto flat = tl::reshape(v, {256});
    auto row0 = tl::broadcast_to(tl::expand_dims(tl::sum(v, 0), 0), {8, 32});  // column sums in every row
    tl::store(b + tl::arange(0, 256), flat + tl::reshape(row0, {256}));
  });
  auto h = random_floats(256);
  auto X = upload<ty::f32>(h);
  auto Tt = test_device().alloc<tl::f32>(256);
  auto B = test_device().alloc<tl::f32>(256);
  poison(Tt);
  poison(B);
  k[tl::grid(1)](X, Tt, B);
  std::vector<double> wt(256), wb(256), col(32, 0.0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 32; ++j) {
      wt[j * 8 + i] = h[i * 32 + j];
      col[j] += h[i * 32 + j];
    }
  for (int i = 0; i < 256; ++i) wb[i] = h[i] + col[i % 32];
  EXPECT_TRUE(near(Tt.download(), wt, 0, 0));
  EXPECT_TRUE(near(B.download(), wb, 1e-5, 1e-5));
}

TEST(ControlFlow, LoopCarriesTilesAndHoldsFinalValue) {
  // Sums the columns of an [rows, 64] matrix in blocks of 8 rows, carrying the
  // accumulator and the pointer tile; the loop bound is a run-time scalar.
  auto k = tl::kernel("colsum", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 rows) {
    auto c = tl::arange(0, 64);
    auto r = tl::arange(0, 8);
    auto acc = tl::zeros<tl::f32>({64});
    auto ptrs = x + tl::expand_dims(r, 1) * 64 + tl::expand_dims(c, 0);
    tl::i32 iters = 0;
    for (auto i : tl::range(0, rows, 8, tl::num_stages(2))) {
      auto m = tl::expand_dims(r + i < rows, 1);
      acc += tl::sum(tl::load(ptrs, tl::broadcast_to(m, {8, 64}), 0.0f), 0);
      ptrs += 8 * 64;
      iters = iters + 1;
    }
    tl::store(out + c, acc + iters.to<tl::f32>() * 1000.0f);
  });
  const int rows = 37;
  auto h = random_floats(rows * 64);
  auto X = upload<ty::f32>(h);
  auto O = test_device().alloc<tl::f32>(64);
  poison(O);
  k[tl::grid(1)](X, O, rows);
  std::vector<double> want(64, 5000.0);  // ceil(37/8) = 5 iterations
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < 64; ++j) want[j] += h[i * 64 + j];
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-4));
}

TEST(ControlFlow, NestedLoopsAndZeroTripLoop) {
  auto k = tl::kernel("nested", [](tl::ptr<tl::i32> out, tl::i32 n, tl::i32 m) {
    tl::i32 total = 0;
    auto lanes = tl::zeros<tl::i32>({16});
    for (auto i : tl::range(0, n)) {
      for (auto j : tl::range(0, m)) {
        total = total + i * j;
        lanes += tl::arange(0, 16) * j;
      }
    }
    tl::i32 untouched = 7;
    for (auto i : tl::range(n, 0)) untouched = untouched + i;  // zero trips
    tl::store(out + tl::arange(0, 16), lanes + total * 0);
    tl::store(out + 16, total);
    tl::store(out + 17, untouched);
  });
  auto O = test_device().alloc<tl::i32>(18);
  poison(O);
  k[tl::grid(1)](O, 5, 9);
  std::vector<double> want(18);
  for (int l = 0; l < 16; ++l) want[l] = 5.0 * l * (8 * 9 / 2);
  want[16] = (0 + 1 + 2 + 3 + 4) * (8 * 9 / 2);
  want[17] = 7;
  EXPECT_TRUE(near(O.download(), want, 0, 0));
}

TEST(ControlFlow, RuntimeBranchesOnScalars) {
  auto k = tl::kernel("branch", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out) {
    auto pid = tl::program_id(0);
    auto c = tl::arange(0, 32);
    auto v = tl::load(x + pid * 32 + c);
    auto s = tl::sum(v, 0);
    tl::f32 scale = 1.0f;
    tl::if_(s > 0.0f, [&] { scale = 2.0f; }).else_([&] { scale = -3.0f; v = v * 0.5f; });
    tl::if_(pid == 0, [&] { v = v + 100.0f; });
    tl::store(out + pid * 32 + c, v * scale);
  });
  const int P = 16;
  auto h = random_floats(P * 32);
  auto X = upload<ty::f32>(h);
  auto O = test_device().alloc<tl::f32>(P * 32);
  poison(O);
  k[tl::grid(P)](X, O);
  std::vector<double> want(P * 32);
  for (int p = 0; p < P; ++p) {
    double s = 0;
    for (int j = 0; j < 32; ++j) s += h[p * 32 + j];
    for (int j = 0; j < 32; ++j) {
      double v = h[p * 32 + j], scale = 2;
      if (!(s > 0)) scale = -3, v *= 0.5;
      if (p == 0) v += 100;
      want[p * 32 + j] = v * scale;
    }
  }
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-5));
}

TEST(Memory, MaskedLoadsAndStoresAtRaggedEdgesOf2D) {
  // A [rows, cols] matrix copied through [16, 32] tiles: edge tiles are partly masked;
  // the padding beyond the matrix must stay poisoned.
  auto k = tl::kernel("copy2d", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 rows, tl::i32 cols, tl::i32 ld) {
    auto r = tl::program_id(0) * 16 + tl::arange(0, 16);
    auto c = tl::program_id(1) * 32 + tl::arange(0, 32);
    auto m = tl::expand_dims(r < rows, 1) & tl::expand_dims(c < cols, 0);
    auto offs = tl::expand_dims(r, 1) * ld + tl::expand_dims(c, 0);
    tl::store(y + offs, tl::load(x + offs, m, -7.0f) * 2.0f, m);
  });
  const int rows = 45, cols = 70, ld = 80;
  auto h = random_floats(rows * ld);
  auto X = upload<ty::f32>(h);
  auto Y = test_device().alloc<tl::f32>(rows * ld);
  poison(Y);
  uint32_t poison_bits = 0xABABABAB;
  float poison_value;
  std::memcpy(&poison_value, &poison_bits, 4);
  k[tl::grid(tl::cdiv(rows, 16), tl::cdiv(cols, 32))](X, Y, rows, cols, ld);
  auto g = Y.download();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < ld; ++j) {
      if (j < cols) EXPECT_EQ(g[i * ld + j], 2 * h[i * ld + j]);
      else EXPECT_EQ(std::memcmp(&g[i * ld + j], &poison_value, 4), 0) << "wrote padding at " << i << "," << j;
    }
}

TEST(Atomics, IntegerAddsFromManyProgramsAreExact) {
  auto k = tl::kernel("histogram", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> bins, tl::ptr<tl::i32> total, tl::i32 n) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0);
    tl::atomic_add(bins + (v & 15), tl::full<tl::i32>({256}, 1), m, tl::sem::relaxed);
    tl::atomic_add(total, tl::sum(tl::where(m, v, 0), 0), tl::sem::acq_rel, tl::scope::gpu);
  });
  const int n = 100000;
  auto h = random_ints(n, 0, 1000);
  auto X = upload<ty::i32>(h);
  std::vector<int32_t> zeros(16, 0);
  auto B = upload<ty::i32>(zeros);
  auto T = upload<ty::i32>(std::vector<int32_t>{5});
  k[tl::grid(tl::cdiv(n, 256))](X, B, T, n);
  std::vector<double> want(16, 0.0);
  double total = 5;
  for (int v : h) want[v & 15] += 1, total += v;
  EXPECT_TRUE(near(B.download(), want, 0, 0));
  EXPECT_EQ(T.download()[0], int32_t(total));
}

TEST(Atomics, MaxMinXchgCasAndFloatAdd) {
  auto k = tl::kernel("atomics", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> fmax, tl::ptr<tl::i32> imin,
                                    tl::ptr<tl::f32> fsum, tl::ptr<tl::i32> slot, tl::ptr<tl::i32> cas, tl::i32 n) {
    auto pid = tl::program_id(0);
    auto i = pid * 64 + tl::arange(0, 64);
    auto m = i < n;
    auto v = tl::load(x + i, m, -1e30f);
    tl::atomic_max(fmax, tl::max(v, 0), tl::sem::relaxed);
    tl::atomic_min(imin, tl::min(tl::where(m, (v * 1000.0f).to<tl::i32>(), 1 << 30), 0), tl::sem::relaxed);
    tl::atomic_add(fsum, tl::sum(tl::where(m, v, 0.0f), 0), tl::sem::relaxed);
    tl::atomic_xchg(slot + pid, pid + 1);
    tl::atomic_cas(cas, tl::i32(0), pid + 1);  // exactly one program wins
  });
  const int n = 1000, P = (n + 63) / 64;
  auto h = random_floats(n, -5, 5);
  auto X = upload<ty::f32>(h);
  auto FM = upload<ty::f32>(std::vector<float>{-1e30f});
  auto IM = upload<ty::i32>(std::vector<int32_t>{1 << 30});
  auto FS = upload<ty::f32>(std::vector<float>{0.0f});
  auto SL = upload<ty::i32>(std::vector<int32_t>(P, -1));
  auto CA = upload<ty::i32>(std::vector<int32_t>{0});
  k[tl::grid(P)](X, FM, IM, FS, SL, CA, n);
  double mx = -1e30, sum = 0;
  int32_t mn = 1 << 30;
  for (float v : h) mx = std::max(mx, double(v)), sum += v, mn = std::min(mn, int32_t(v * 1000.0f));
  EXPECT_EQ(FM.download()[0], float(mx));
  EXPECT_EQ(IM.download()[0], mn);
  EXPECT_NEAR(FS.download()[0], sum, 1e-3);
  auto sl = SL.download();
  for (int p = 0; p < P; ++p) EXPECT_EQ(sl[p], p + 1);
  int winner = CA.download()[0];
  EXPECT_GE(winner, 1);
  EXPECT_LE(winner, P);
}

TEST(Elementwise, MixedPrecisionPromotionFollowsTriton) {
  // bf16 * f16 meets at f32; i32 + f32 is f32; u32 vs i32 compares unsigned.
  auto k = tl::kernel("promote", [](tl::ptr<tl::bf16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f32> out,
                                    tl::ptr<tl::u32> u, tl::ptr<tl::i32> cmp) {
    auto i = tl::arange(0, 32);
    auto p = tl::load(a + i) * tl::load(b + i);
    static_assert(std::is_same_v<decltype(p), tl::f32>);
    auto q = i + tl::load(out + i);
    static_assert(std::is_same_v<decltype(q), tl::f32>);
    tl::store(out + i, p + q);
    auto big = tl::load(u + i);
    tl::store(cmp + i, tl::where(big > i * 0 - 1, 1, 0));  // -1 as u32 is the largest value
  });
  auto fa = random_floats(32), fb = random_floats(32), fo = random_floats(32);
  std::vector<tl::bfloat16> ha(32);
  std::vector<tl::half> hb(32);
  for (int i = 0; i < 32; ++i) ha[i] = tl::to_bf16(fa[i]), hb[i] = tl::to_f16(fb[i]);
  auto A = upload<ty::bf16>(ha);
  auto B = upload<ty::f16>(hb);
  auto O = upload<ty::f32>(fo);
  auto U = upload<ty::u32>(std::vector<uint32_t>(32, 5u));
  auto C = test_device().alloc<tl::i32>(32);
  poison(C);
  k[tl::grid(1)](A, B, O, U, C);
  std::vector<double> want(32), wc(32, 0.0);
  for (int i = 0; i < 32; ++i)
    want[i] = double(tl::to_float(ha[i])) * double(tl::to_float(hb[i])) + i + fo[i];
  EXPECT_TRUE(near(O.download(), want, 1e-6, 1e-6));
  EXPECT_TRUE(near(C.download(), wc, 0, 0));
}

// What one thread stores before tl::barrier() another reads after it: each program
// writes a block, waits, then reads the block back reversed (element i comes from the
// thread that wrote element BLOCK-1-i).
TEST(Synchronization, BarrierOrdersStoresBeforeLoadsAcrossThreads) {
  auto k = tl::kernel("barrier_reverse", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> tmp, tl::ptr<tl::f32> y, int BLOCK) {
    auto base = tl::program_id(0) * BLOCK;
    auto i = tl::arange(0, BLOCK);
    tl::store(tmp + base + i, tl::load(x + base + i) * 2.0f);
    tl::barrier();
    tl::store(y + base + i, tl::load(tmp + base + (BLOCK - 1) - i));
  });
  const int block = 256, programs = 8, n = block * programs;
  auto h = random_floats(n, -4, 4);
  auto X = upload<ty::f32>(h);
  auto T = test_device().alloc<tl::f32>(n);
  auto Y = test_device().alloc<tl::f32>(n);
  poison(T);
  poison(Y);
  k[tl::grid(programs)](X, T, Y, block);
  std::vector<double> want(n);
  for (int p = 0; p < programs; ++p)
    for (int i = 0; i < block; ++i) want[p * block + i] = 2.0 * double(h[p * block + block - 1 - i]);
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
}

// Two loads of one [64, 64] shape coalesced along different dims (the GPU lowering gives
// each its own layout and converts one), added and stored.
TEST(Layouts, RowMajorPlusColumnMajorTile) {
  auto k = tl::kernel("row_plus_col", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> out) {
    auto base = tl::program_id(0) * 4096;
    auto r = tl::expand_dims(tl::arange(0, 64), 1);
    auto c = tl::expand_dims(tl::arange(0, 64), 0);
    tl::store(out + base + r * 64 + c, tl::load(a + base + r * 64 + c) + tl::load(b + base + r + c * 64));
  });
  const int programs = 3, n = programs * 4096;
  auto ha = random_floats(n, -2, 2), hb = random_floats(n, -2, 2);
  auto A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
  auto O = test_device().alloc<tl::f32>(n);
  poison(O);
  k[tl::grid(programs)](A, B, O);
  std::vector<double> want(n);
  for (int p = 0; p < programs; ++p)
    for (int r = 0; r < 64; ++r)
      for (int c = 0; c < 64; ++c)
        want[p * 4096 + r * 64 + c] = double(ha[p * 4096 + r * 64 + c]) + double(hb[p * 4096 + r + c * 64]);
  EXPECT_TRUE(near(O.download(), want, 1e-6, 1e-6));
}

// A loop-carried [32] accumulator updated by a row reduction of each [32, 64] block.
TEST(Layouts, ReductionIntoLoopCarriedAccumulator) {
  auto k = tl::kernel("reduce_acc", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 n) {
    auto r = tl::program_id(0) * 32 + tl::arange(0, 32);
    auto c = tl::arange(0, 64);
    auto acc = tl::zeros<tl::f32>({32});
    for (auto k0 : tl::range(0, n, 64)) {
      auto offs = tl::expand_dims(r * n, 1) + tl::expand_dims(k0 + c, 0);
      acc = acc + tl::sum(tl::load(x + offs), 1);
    }
    tl::store(out + r, acc);
  });
  const int rows = 64, cols = 320;
  auto h = random_floats(rows * cols, -1, 1);
  auto X = upload<ty::f32>(h);
  auto O = test_device().alloc<tl::f32>(rows);
  poison(O);
  k[tl::grid(rows / 32)](X, O, cols);
  std::vector<double> want(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) want[r] += double(h[r * cols + c]);
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-5));
}

// A [32] row-sum result combined with a [32] load in another layout, in one warp: on a
// GPU the conversion between them is a warp shuffle (shfl.sync.idx / ds_bpermute), no
// shared memory. f32 and f64 (one and two 32-bit words a value).
template <class E> void run_row_sum_scale(const char* name, double tol) {
  using H = typename tl::buffer<E>::host_t;
  auto k = tl::kernel(name, [](tl::ptr<E> x, tl::ptr<E> z, tl::ptr<E> y) {
    auto p = tl::program_id(0);
    auto r = tl::expand_dims(tl::arange(0, 32), 1);
    auto c = tl::expand_dims(tl::arange(0, 32), 0);
    auto s = tl::sum(tl::load(x + p * 1024 + r * 32 + c), 1);
    auto i = tl::arange(0, 32);
    auto zv = tl::load(z + p * 32 + i);
    tl::store(y + p * 32 + i, s * zv + zv);
  });
  const int programs = 4;
  auto fx = random_floats(programs * 1024, -1, 1), fz = random_floats(programs * 32, -1, 1);
  std::vector<H> hx(fx.begin(), fx.end()), hz(fz.begin(), fz.end());
  auto X = upload<E>(hx);
  auto Z = upload<E>(hz);
  auto Y = test_device().alloc<E>(programs * 32);
  poison(Y);
  k[tl::grid(programs)].with({.num_warps = 1})(X, Z, Y);
  std::vector<double> want(programs * 32);
  for (int p = 0; p < programs; ++p)
    for (int i = 0; i < 32; ++i) {
      double s = 0;
      for (int j = 0; j < 32; ++j) s += double(hx[p * 1024 + i * 32 + j]);
      want[p * 32 + i] = s * double(hz[p * 32 + i]) + double(hz[p * 32 + i]);
    }
  EXPECT_TRUE(near(Y.download(), want, tol, tol)) << name;
}

TEST(Layouts, WarpLocalConversionOfAReductionResult) {
  run_row_sum_scale<ty::f32>("row_sum_scale_f32", 1e-5);
  run_row_sum_scale<ty::f64>("row_sum_scale_f64", 1e-12);
}

// A [128, 256] f32 tile stored transposed: the layout conversion needs 128 KiB of shared
// memory, past NVIDIA's 48 KiB of static shared memory (dynamic shared memory, opted in
// at load) and past the 64 KiB of LDS on gfx90a/gfx942 (a compile error there).
TEST(Layouts, TransposeThroughMoreThan48KiBOfSharedMemory) {
  auto k = tl::kernel("transpose_128k", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y) {
    auto p = tl::program_id(0) * (128 * 256);
    auto r = tl::expand_dims(tl::arange(0, 128), 1);
    auto c = tl::expand_dims(tl::arange(0, 256), 0);
    auto v = tl::load(x + p + r * 256 + c);
    auto rt = tl::expand_dims(tl::arange(0, 256), 1);
    auto ct = tl::expand_dims(tl::arange(0, 128), 0);
    tl::store(y + p + rt * 128 + ct, tl::trans(v));
  });
  const int programs = 2, n = programs * 128 * 256;
  auto h = random_floats(n, -3, 3);
  auto X = upload<ty::f32>(h);
  auto Y = test_device().alloc<tl::f32>(n);
  poison(Y);
  if (test_device().kind() == tl::device_kind::hip)
    GTEST_SKIP() << "needs 128 KiB of LDS: gfx950 only, and no AMD GPU here says which";
  k[tl::grid(programs)].with({.num_warps = 8})(X, Y);
  std::vector<double> want(n);
  for (int p = 0; p < programs; ++p)
    for (int r = 0; r < 128; ++r)
      for (int c = 0; c < 256; ++c) want[p * 32768 + c * 128 + r] = h[p * 32768 + r * 256 + c];
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
}

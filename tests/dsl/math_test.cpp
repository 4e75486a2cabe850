// tl's math library (tl/math.hpp) against double-precision C++ references: every function
// on random inputs over its whole f32 range (random bit patterns, so every binade and the
// subnormals) and on its edges, the maximum error in ulp measured and asserted against the
// bound docs/language.md states; special values (+-0, +-inf, NaN, subnormals, huge
// arguments of tan, C's pow cases) exactly. Outputs are poisoned before each run. The same
// test runs on a GPU (TL_DEVICE=cuda|hip) to fill the table's GPU column.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// The distance from got to the exact value want in units of the last place of f32 at
// want (the subnormal spacing below 2^-126). NaN against non-NaN, or a wrong infinity,
// counts as infinitely far; equal specials as 0.
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  if (std::isinf(want) || std::fabs(want) > double(std::numeric_limits<float>::max())) {
    // past FLT_MAX the rounded value is inf, or FLT_MAX within half an ulp of it
    if (std::isinf(got)) return (got > 0) == (want > 0) ? 0 : INFINITY;
    return std::fabs(double(got) - want) / std::ldexp(1.0, 104);
  }
  if (std::isinf(got)) return INFINITY;
  int e;
  std::frexp(std::fabs(want), &e);
  double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(double(got) - want) / ulp;
}

// Random f32 values from random bit patterns with |x| <= max_abs (every magnitude equally
// often), both signs unless positive_only.
std::vector<float> random_bits(size_t n, float max_abs, bool positive_only = false) {
  std::vector<float> v;
  std::uniform_int_distribution<uint32_t> d;
  while (v.size() < n) {
    float f = std::bit_cast<float>(d(rng()));
    if (!std::isfinite(f) || std::fabs(f) > max_abs) continue;
    if (positive_only) f = std::fabs(f);
    v.push_back(f);
  }
  return v;
}

std::vector<float> uniform(size_t n, float lo, float hi) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> d(lo, hi);
  for (auto& x : v) x = d(rng());
  return v;
}

std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> r;
  for (auto& p : parts) r.insert(r.end(), p.begin(), p.end());
  return r;
}

// The inputs every function sees besides its own: signed zeros, subnormals, the ends of
// the normal range, infinities and NaN.
std::vector<float> edges() {
  return {0.0f, -0.0f, 1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.17549435e-38f, -1.17549435e-38f, 1e-30f, -1e-30f,
          0.5f, -0.5f, 1.0f, -1.0f, 2.0f, -2.0f, 3.4028235e38f, -3.4028235e38f, kInf, -kInf, kNaN};
}

constexpr int kBlock = 1024;

// y[i] = F{}(x[i]), one program per kBlock elements, the last one masked.
template <class F> std::vector<float> run(const std::string& name, const std::vector<float>& xs) {
  static auto k = tl::kernel("math_" + name, [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    tl::store(y + i, F{}(tl::load(x + i, m, 0.0f)), m);
  });
  const int n = int(xs.size());
  auto X = upload<ty::f32>(xs);
  auto Y = test_device().alloc<ty::f32>(size_t(n));
  poison(Y);
  k[tl::grid(tl::cdiv(n, kBlock))](X, Y, n);
  return Y.download();
}

template <class F> std::vector<float> run2(const std::string& name, const std::vector<float>& as, const std::vector<float>& bs) {
  static auto k = tl::kernel("math2_" + name, [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> y, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    tl::store(y + i, F{}(tl::load(a + i, m, 0.0f), tl::load(b + i, m, 0.0f)), m);
  });
  const int n = int(as.size());
  auto A = upload<ty::f32>(as), B = upload<ty::f32>(bs);
  auto Y = test_device().alloc<ty::f32>(size_t(n));
  poison(Y);
  k[tl::grid(tl::cdiv(n, kBlock))](A, B, Y, n);
  return Y.download();
}

struct Worst {
  double ulp = 0;
  size_t at = 0;
};
Worst worst(const std::vector<float>& got, const std::vector<double>& want) {
  Worst w;
  for (size_t i = 0; i < got.size(); ++i) {
    double e = ulp_error(got[i], want[i]);
    if (!(e <= w.ulp)) w = {e, i};
  }
  return w;
}

// Measures F against ref on xs, prints the maximum (docs/language.md's table), asserts it.
template <class F> void check_unary(const std::string& name, double (*ref)(double), const std::vector<float>& xs,
                                    double bound) {
  auto got = run<F>(name, xs);
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = ref(double(xs[i]));
  Worst w = worst(got, want);
  std::printf("[ math ] tl::%-8s max error %.3f ulp (bound %.1f) at x = %.9g: got %.9g, want %.17g\n", name.c_str(),
              w.ulp, bound, double(xs[w.at]), double(got[w.at]), want[w.at]);
  EXPECT_LE(w.ulp, bound) << "tl::" << name << " at x = " << xs[w.at] << " (" << std::hexfloat << xs[w.at]
                          << std::defaultfloat << "): got " << got[w.at] << ", want " << want[w.at];
}

// Exact special values (signed zeros compared by sign, NaN by NaN-ness).
template <class F> void check_specials(const std::string& name, const std::vector<std::pair<float, float>>& cases) {
  std::vector<float> xs;
  for (auto& c : cases) xs.push_back(c.first);
  auto got = run<F>(name, xs);
  for (size_t i = 0; i < cases.size(); ++i) {
    float want = cases[i].second;
    bool same = std::isnan(want) ? std::isnan(got[i])
                                 : got[i] == want && std::signbit(got[i]) == std::signbit(want);
    EXPECT_TRUE(same) << "tl::" << name << "(" << cases[i].first << ") = " << got[i] << ", want " << want;
  }
}

constexpr size_t kRandom = 1 << 17;

#define TL_FN(NAME) \
  struct NAME##_fn { tl::f32 operator()(const tl::f32& x) const { return tl::NAME(x); } }
TL_FN(tanh);
TL_FN(sigmoid);
TL_FN(log1p);
TL_FN(expm1);
TL_FN(sinh);
TL_FN(cosh);
TL_FN(tan);
TL_FN(atan);
TL_FN(asin);
TL_FN(acos);
TL_FN(cbrt);
TL_FN(erfc);
#undef TL_FN

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double tanh_ref(double x) { return std::tanh(x); }
double log1p_ref(double x) { return std::log1p(x); }
double expm1_ref(double x) { return std::expm1(x); }
double sinh_ref(double x) { return std::sinh(x); }
double cosh_ref(double x) { return std::cosh(x); }
double tan_ref(double x) { return std::tan(x); }  // glibc reduces any double exactly
double atan_ref(double x) { return std::atan(x); }
double asin_ref(double x) { return std::asin(x); }
double acos_ref(double x) { return std::acos(x); }
double cbrt_ref(double x) { return std::cbrt(x); }
double erfc_ref(double x) { return std::erfc(x); }

}  // namespace

// The documented bounds (docs/language.md, "Math functions"): the maxima measured here
// on the CPU over repeated runs (the inputs are random each run), rounded up with room
// for what one run has not met.
TEST(Math, Tanh) {
  check_unary<tanh_fn>("tanh", tanh_ref, concat({random_bits(kRandom, 12.0f), uniform(kRandom, -10, 10), edges()}), 3.0);
  check_specials<tanh_fn>("tanh", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, 1.0f}, {-kInf, -1.0f}, {kNaN, kNaN},
                                   {1e-40f, 1e-40f}, {-1e-40f, -1e-40f}, {20.0f, 1.0f}});
}

TEST(Math, Sigmoid) {
  check_unary<sigmoid_fn>("sigmoid", sigmoid_ref,
                          concat({random_bits(kRandom, 120.0f), uniform(kRandom, -20, 20), edges()}), 3.0);
  check_specials<sigmoid_fn>("sigmoid", {{0.0f, 0.5f}, {kInf, 1.0f}, {-kInf, 0.0f}, {kNaN, kNaN}, {-200.0f, 0.0f}});
}

TEST(Math, Log1p) {
  auto neg = uniform(kRandom, -1.0f, 0.0f);
  check_unary<log1p_fn>("log1p", log1p_ref,
                        concat({random_bits(kRandom, 3.4e38f, true), neg, random_bits(kRandom / 4, 1.0f), edges()}), 1.0);
  check_specials<log1p_fn>("log1p", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {-1.0f, -kInf}, {-2.0f, kNaN}, {kInf, kInf},
                                     {-kInf, kNaN}, {kNaN, kNaN}, {1e-40f, 1e-40f}});
}

TEST(Math, Expm1) {
  check_unary<expm1_fn>("expm1", expm1_ref,
                        concat({random_bits(kRandom, 100.0f), uniform(kRandom, -2, 2), uniform(kRandom / 4, 80, 89),
                                edges()}),
                        2.0);
  check_specials<expm1_fn>("expm1", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, kInf}, {-kInf, -1.0f}, {kNaN, kNaN},
                                     {89.0f, kInf}, {-1e-40f, -1e-40f}});
}

TEST(Math, SinhCosh) {
  auto xs = concat({random_bits(kRandom, 95.0f), uniform(kRandom, -3, 3), uniform(kRandom / 4, 88, 89.5), edges()});
  check_unary<sinh_fn>("sinh", sinh_ref, xs, 2.0);
  check_unary<cosh_fn>("cosh", cosh_ref, xs, 2.0);
  check_specials<sinh_fn>("sinh", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, kInf}, {-kInf, -kInf}, {kNaN, kNaN},
                                   {89.2f, std::sinh(89.2f)}});
  check_specials<cosh_fn>("cosh", {{0.0f, 1.0f}, {kInf, kInf}, {-kInf, kInf}, {kNaN, kNaN}, {-89.2f, std::cosh(89.2f)}});
}

TEST(Math, Tan) {
  // Large arguments everywhere in the range, and the f32 values closest to multiples of
  // pi/2 (where the reduction must keep ~30 more bits than f32 has).
  std::vector<float> near_poles;
  for (int k = 1; k < 200000; k += 7) {
    float f = float(double(k) * 1.5707963267948966);
    near_poles.push_back(f);
    near_poles.push_back(std::nextafter(f, 0.0f));
    near_poles.push_back(std::nextafter(f, kInf));
  }
  check_unary<tan_fn>("tan", tan_ref,
                      concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -4, 4), near_poles, edges()}), 3.0);
  check_specials<tan_fn>("tan", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, kNaN}, {-kInf, kNaN}, {kNaN, kNaN},
                                 {1e-40f, 1e-40f}, {1e30f, float(std::tan(double(1e30f)))}});
}

TEST(Math, Atan) {
  check_unary<atan_fn>("atan", atan_ref, concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -3, 3), edges()}), 1.5);
  check_specials<atan_fn>("atan", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, float(M_PI_2)}, {-kInf, -float(M_PI_2)},
                                   {kNaN, kNaN}, {1e-40f, 1e-40f}});
}

TEST(Math, Atan2) {
  struct atan2_fn {
    tl::f32 operator()(const tl::f32& y, const tl::f32& x) const { return tl::atan2(y, x); }
  };
  auto ys = concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -3, 3)});
  auto xs = concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -3, 3)});
  // C's special cases: signed zeros and infinities in both operands
  const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-40f, kInf, -kInf, kNaN};
  for (float y : sp)
    for (float x : sp) ys.push_back(y), xs.push_back(x);
  auto got = run2<atan2_fn>("atan2", ys, xs);
  std::vector<double> want(ys.size());
  for (size_t i = 0; i < ys.size(); ++i) want[i] = std::atan2(double(ys[i]), double(xs[i]));
  Worst w = worst(got, want);
  std::printf("[ math ] tl::atan2    max error %.3f ulp (bound 2.0) at (%.9g, %.9g)\n", w.ulp, ys[w.at], xs[w.at]);
  EXPECT_LE(w.ulp, 2.0) << "atan2(" << ys[w.at] << ", " << xs[w.at] << ") = " << got[w.at] << ", want " << want[w.at];
  for (size_t i = ys.size() - 64; i < ys.size(); ++i)  // the signs of zero results too
    if (want[i] == 0) EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << ys[i] << ", " << xs[i];
}

TEST(Math, AsinAcos) {
  auto xs = concat({uniform(kRandom, -1, 1), random_bits(kRandom, 1.0f), uniform(kRandom / 4, 0.99f, 1.0f),
                    uniform(kRandom / 4, 0.45f, 0.55f), edges()});
  check_unary<asin_fn>("asin", asin_ref, xs, 2.0);
  check_unary<acos_fn>("acos", acos_ref, xs, 1.5);
  check_specials<asin_fn>("asin", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {1.0f, float(M_PI_2)}, {-1.0f, -float(M_PI_2)},
                                   {1.5f, kNaN}, {kInf, kNaN}, {kNaN, kNaN}, {-1e-40f, -1e-40f}});
  check_specials<acos_fn>("acos", {{1.0f, 0.0f}, {-1.0f, float(M_PI)}, {0.0f, float(M_PI_2)}, {-1.0001f, kNaN},
                                   {kNaN, kNaN}});
}

TEST(Math, Cbrt) {
  check_unary<cbrt_fn>("cbrt", cbrt_ref, concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -10, 10), edges()}), 1.0);
  check_specials<cbrt_fn>("cbrt", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, kInf}, {-kInf, -kInf}, {kNaN, kNaN},
                                   {27.0f, 3.0f}, {-8.0f, -2.0f}, {0x1p-147f, float(std::cbrt(0x1p-147))}});
}

TEST(Math, Erfc) {
  check_unary<erfc_fn>("erfc", erfc_ref,
                       concat({uniform(kRandom, -4, 11), random_bits(kRandom, 12.0f), uniform(kRandom / 4, 9, 10.1f),
                               edges()}),
                       4.0);
  check_specials<erfc_fn>("erfc", {{0.0f, 1.0f}, {kInf, 0.0f}, {-kInf, 2.0f}, {kNaN, kNaN}, {20.0f, 0.0f}});
}

TEST(Math, Pow) {
  struct pow_fn {
    tl::f32 operator()(const tl::f32& x, const tl::f32& y) const { return tl::pow(x, y); }
  };
  // Bases over the whole range with exponents that keep x^y mostly finite, small bases
  // with large exponents, negative bases with integer exponents, and C's special cases.
  std::vector<float> xs = random_bits(kRandom, 3.4e38f, true), ys;
  for (float x : xs) {
    double l = std::fabs(std::log2(double(x)));
    double lim = std::min(200.0 / std::max(l, 1e-3), 1e6);
    ys.push_back(std::uniform_real_distribution<float>(float(-lim), float(lim))(rng()));
  }
  auto x2 = uniform(kRandom, -10, 10);
  for (float x : x2) {
    xs.push_back(x);
    ys.push_back(float(std::uniform_int_distribution<int>(-40, 40)(rng())));
  }
  auto x3 = uniform(kRandom / 4, 0.9f, 1.1f);
  for (float x : x3) {
    xs.push_back(x);
    ys.push_back(std::uniform_real_distribution<float>(-800, 800)(rng()));
  }
  const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f, 1e-40f, kInf, -kInf, kNaN, 1e30f};
  for (float x : sp)
    for (float y : sp) xs.push_back(x), ys.push_back(y);
  auto got = run2<pow_fn>("pow", xs, ys);
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = std::pow(double(xs[i]), double(ys[i]));
  Worst w = worst(got, want);
  std::printf("[ math ] tl::pow      max error %.3f ulp (bound 1.0) at (%.9g, %.9g)\n", w.ulp, xs[w.at], ys[w.at]);
  EXPECT_LE(w.ulp, 1.0) << "pow(" << xs[w.at] << ", " << ys[w.at] << ") = " << got[w.at] << ", want " << want[w.at];
  for (size_t i = xs.size() - 225; i < xs.size(); ++i)  // signed zeros of the special cases
    if (want[i] == 0) EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << "pow(" << xs[i] << ", " << ys[i] << ")";
}

// Triton's pow(float, int): an i32 exponent tile, and a C++ integer.
TEST(Math, PowIntegerExponent) {
  const int n = 4096;
  auto xs = uniform(n, -3, 3);
  auto es = random_ints(n, -60, 60);
  static auto k = tl::kernel("math_powi", [](tl::ptr<tl::f32> x, tl::ptr<tl::i32> e, tl::ptr<tl::f32> y,
                                             tl::ptr<tl::f32> cube, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0.0f);
    tl::store(y + i, tl::pow(v, tl::load(e + i, m, 0)), m);
    tl::store(cube + i, tl::pow(v, 3), m);
  });
  auto X = upload<ty::f32>(xs);
  auto E = upload<ty::i32>(es);
  auto Y = test_device().alloc<ty::f32>(n), C = test_device().alloc<ty::f32>(n);
  poison(Y), poison(C);
  k[tl::grid(tl::cdiv(n, kBlock))](X, E, Y, C, n);
  auto y = Y.download(), c = C.download();
  std::vector<double> wy(n), wc(n);
  for (int i = 0; i < n; ++i) wy[i] = std::pow(double(xs[i]), es[i]), wc[i] = std::pow(double(xs[i]), 3);
  EXPECT_LE(worst(y, wy).ulp, 1.0);
  EXPECT_LE(worst(c, wc).ulp, 1.0);
}

TEST(Math, Clamp) {
  const int n = 1024;
  auto xs = uniform(n, -3, 3);
  xs[0] = kNaN, xs[1] = kInf, xs[2] = -kInf, xs[3] = -0.0f;
  static auto k = tl::kernel("math_clamp", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> lo, tl::ptr<tl::f32> none,
                                              tl::ptr<tl::f32> all, tl::ptr<tl::f32> lit) {
    auto i = tl::arange(0, n);
    auto v = tl::load(x + i);
    auto l = tl::load(lo + i);
    tl::store(none + i, tl::clamp(v, l, l + 1.0f), i < n);
    tl::store(all + i, tl::clamp(v, l, l + 1.0f, tl::propagate_nan::all), i < n);
    tl::store(lit + i, tl::clamp(v, -0.5f, 0.5f), i < n);
  });
  auto los = uniform(n, -2, 1);
  auto X = upload<ty::f32>(xs), L = upload<ty::f32>(los);
  auto N = test_device().alloc<ty::f32>(n), A = test_device().alloc<ty::f32>(n), T = test_device().alloc<ty::f32>(n);
  poison(N), poison(A), poison(T);
  k[tl::grid(1)](X, L, N, A, T);
  auto none = N.download(), all = A.download(), lit = T.download();
  for (int i = 0; i < n; ++i) {
    float x = xs[i], lo = los[i], hi = los[i] + 1.0f;
    if (std::isnan(x)) {
      EXPECT_EQ(none[i], lo) << "NaN clamps to the lower bound by default";
      EXPECT_TRUE(std::isnan(all[i])) << "propagate_nan::all keeps NaN";
      EXPECT_EQ(lit[i], -0.5f);
      continue;
    }
    float want = std::min(std::max(x, lo), hi);
    EXPECT_EQ(none[i], want) << x;
    EXPECT_EQ(all[i], want) << x;
    EXPECT_EQ(lit[i], std::min(std::max(x, -0.5f), 0.5f)) << x;
  }
}

// f16 and bf16 are computed in f32 and rounded once: within an ulp of their own format
// of the exact value (the f32 error is 2^-13 of that ulp at most).
TEST(Math, HalfAndBfloat16RoundOnce) {
  const int n = 2048;
  auto xs = uniform(n, -6, 6);
  static auto k = tl::kernel("math_narrow", [](tl::ptr<tl::f32> x, tl::ptr<tl::f16> th, tl::ptr<tl::bf16> tb,
                                               tl::ptr<tl::bf16> sb, tl::ptr<tl::f16> ph) {
    auto i = tl::arange(0, n);
    auto v = tl::load(x + i);
    tl::store(th + i, tl::tanh(v.to<tl::f16>()));
    tl::store(tb + i, tl::tanh(v.to<tl::bf16>()));
    tl::store(sb + i, tl::sigmoid(v.to<tl::bf16>()));
    tl::store(ph + i, tl::pow(tl::abs(v).to<tl::f16>(), 1.5f));
  });
  auto X = upload<ty::f32>(xs);
  auto TH = test_device().alloc<ty::f16>(n), PH = test_device().alloc<ty::f16>(n);
  auto TB = test_device().alloc<ty::bf16>(n), SB = test_device().alloc<ty::bf16>(n);
  poison(TH), poison(TB), poison(SB), poison(PH);
  k[tl::grid(1)](X, TH, TB, SB, PH);
  auto th = TH.download(), ph = PH.download();
  auto tb = TB.download(), sb = SB.download();
  for (int i = 0; i < n; ++i) {
    double xh = tl::to_float(tl::to_f16(xs[i])), xb = tl::to_float(tl::to_bf16(xs[i]));
    // one ulp of f16 (11 bits) and bf16 (8 bits) relative, at least their spacing near 0
    EXPECT_NEAR(to_double(th[i]), std::tanh(xh), std::max(std::fabs(std::tanh(xh)) * 0x1p-10, 0x1p-24)) << xs[i];
    EXPECT_NEAR(to_double(tb[i]), std::tanh(xb), std::max(std::fabs(std::tanh(xb)) * 0x1p-7, 0x1p-133)) << xs[i];
    EXPECT_NEAR(to_double(sb[i]), sigmoid_ref(xb), sigmoid_ref(xb) * 0x1p-7) << xs[i];
    double p = std::pow(std::fabs(xh), 1.5);
    EXPECT_NEAR(to_double(ph[i]), p, std::max(p * 0x1p-10, 0x1p-24)) << xs[i];
  }
}

// tan's reduction picks its window of 2/pi by the exponent: one value in every binade.
TEST(Math, TanInEveryBinade) {
  std::vector<float> xs;
  for (int e = -20; e < 128; ++e) xs.push_back(std::ldexp(1.2345678f, e)), xs.push_back(std::ldexp(1.9876543f, e));
  auto got = run<tan_fn>("tan", xs);
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_LE(ulp_error(got[i], std::tan(double(xs[i]))), 3.0) << std::hexfloat << xs[i] << std::defaultfloat << ": got "
                                                             << got[i] << ", want " << std::tan(double(xs[i]));
}


// ---------------------------------------------------------------------------------
// tl::exp, log, log2, sin and cos: precise by default (tl's own compositions, one bound
// on every target); exp2 is the target's own (Triton's tl.exp2: NVIDIA ex2.approx), the
// fast_ variants the targets' approximate instructions.

namespace {

#define TL_FN(NAME) \
  struct NAME##_fn { tl::f32 operator()(const tl::f32& x) const { return tl::NAME(x); } }
TL_FN(exp);
TL_FN(exp2);
TL_FN(log);
TL_FN(log2);
TL_FN(sin);
TL_FN(cos);
TL_FN(fast_expf);
TL_FN(fast_logf);
TL_FN(fast_sinf);
TL_FN(fast_cosf);
#undef TL_FN

double exp_ref(double x) { return std::exp(x); }
double exp2_ref(double x) { return std::exp2(x); }
double log_ref(double x) { return std::log(x); }
double log2_ref(double x) { return std::log2(x); }
double sin_ref(double x) { return std::sin(x); }  // glibc reduces any double exactly
double cos_ref(double x) { return std::cos(x); }

// f32 values next to multiples of pi/2 up to 3e5 (where the reduction needs ~30 bits more
// than f32 has), with their neighbours.
std::vector<float> near_multiples_of_pio2() {
  std::vector<float> v;
  for (int k = 1; k < 200000; k += 7) {
    float f = float(double(k) * 1.5707963267948966);
    v.push_back(f);
    v.push_back(std::nextafter(f, 0.0f));
    v.push_back(std::nextafter(f, kInf));
  }
  return v;
}

// The largest absolute error of got against ref over xs.
double max_abs_error(const std::vector<float>& got, const std::vector<float>& xs, double (*ref)(double)) {
  double w = 0;
  for (size_t i = 0; i < xs.size(); ++i) w = std::max(w, std::fabs(double(got[i]) - ref(double(xs[i]))));
  return w;
}

}  // namespace

TEST(Math, ExpPrecise) {
  check_unary<exp_fn>("exp", exp_ref,
                      concat({random_bits(kRandom, 110.0f), uniform(kRandom, -10, 10), uniform(kRandom / 4, 80, 89),
                              uniform(kRandom / 4, -104, -87), edges()}),
                      1.5);
  check_specials<exp_fn>("exp", {{0.0f, 1.0f}, {-0.0f, 1.0f}, {kInf, kInf}, {-kInf, 0.0f}, {kNaN, kNaN},
                                 {89.0f, kInf}, {-110.0f, 0.0f}, {1e-40f, 1.0f}});
}

TEST(Math, LogAndLog2Precise) {
  auto xs = concat({random_bits(kRandom, 3.4e38f, true), uniform(kRandom, 0.5f, 2.0f), uniform(kRandom / 4, 0.99f, 1.01f),
                    edges()});
  check_unary<log_fn>("log", log_ref, xs, 1.5);
  check_unary<log2_fn>("log2", log2_ref, xs, 2.0);
  for (const char* name : {"log", "log2"}) {
    std::vector<std::pair<float, float>> sp = {{1.0f, 0.0f}, {0.0f, -kInf}, {-0.0f, -kInf}, {-1.0f, kNaN},
                                               {kInf, kInf}, {-kInf, kNaN}, {kNaN, kNaN}};
    if (std::string(name) == "log") check_specials<log_fn>(name, sp);
    else check_specials<log2_fn>(name, sp), check_specials<log2_fn>(name, {{8.0f, 3.0f}, {0x1p-149f, -149.0f}});
  }
}

TEST(Math, SinCosPrecise) {
  auto xs = concat({random_bits(kRandom, 3.4e38f), uniform(kRandom, -10, 10), near_multiples_of_pio2(), edges()});
  check_unary<sin_fn>("sin", sin_ref, xs, 2.0);
  check_unary<cos_fn>("cos", cos_ref, xs, 2.0);
  check_specials<sin_fn>("sin", {{0.0f, 0.0f}, {-0.0f, -0.0f}, {kInf, kNaN}, {-kInf, kNaN}, {kNaN, kNaN},
                                 {1e-40f, 1e-40f}, {-1e-40f, -1e-40f}, {0x1p-20f, 0x1p-20f}});
  check_specials<cos_fn>("cos", {{0.0f, 1.0f}, {-0.0f, 1.0f}, {kInf, kNaN}, {-kInf, kNaN}, {kNaN, kNaN},
                                 {1e-40f, 1.0f}, {0x1p-13f, 1.0f}});
}

// The case: sin over a wide range relative to 1 + |x| (the approximate
// instruction's 1.1e-6 on the H200) is now within an ulp or two of the result.
TEST(Math, SinOverAWideRange) {
  auto xs = uniform(kRandom, -1e4f, 1e4f);
  auto got = run<sin_fn>("sin", xs);
  double w = 0;
  for (size_t i = 0; i < xs.size(); ++i)
    w = std::max(w, std::fabs(double(got[i]) - std::sin(double(xs[i]))) / (1 + std::fabs(double(xs[i]))));
  std::printf("[ math ] tl::sin      max |error| / (1 + |x|) over [-1e4, 1e4]: %.3g\n", w);
  EXPECT_LE(w, 6e-8);  // an ulp of 1/2 to 1
}

// exp2 is the target's: the CPU's libm, AMD's v_exp_f32 (with LLVM's scaling of the
// subnormal range), NVIDIA's ex2.approx.ftz.f32 (2 ulp by the PTX manual; Triton's tl.exp2),
// which flushes a result below 2^-126 to +0: there NVIDIA's is +0 or within the bound.
TEST(Math, Exp2IsTheTargets) {
  const bool ftz = test_device().kind() == tl::device_kind::cuda;
  auto xs = concat({random_bits(kRandom, 150.0f), uniform(kRandom, -2, 2), uniform(kRandom / 4, -149, -126), edges()});
  if (ftz) {
    std::vector<float> normal, tiny;
    // (within a few ulp of 2^-126 the rounded result may fall below it: flushed too)
    for (float x : xs) (std::isnan(x) || std::exp2(double(x)) >= 0x1.00001p-126 ? normal : tiny).push_back(x);
    xs = normal;
    auto got = run<exp2_fn>("exp2", tiny);
    ASSERT_FALSE(tiny.empty());
    for (size_t i = 0; i < tiny.size(); ++i)
      EXPECT_TRUE(std::bit_cast<uint32_t>(got[i]) == 0 || ulp_error(got[i], std::exp2(double(tiny[i]))) <= 2.5)
          << "tl::exp2 at x = " << tiny[i] << ": got " << got[i] << ", want +0 or " << std::exp2(double(tiny[i]));
  }
  check_unary<exp2_fn>("exp2", exp2_ref, xs, on_gpu() ? 2.5 : 1.0);
  check_specials<exp2_fn>("exp2", {{0.0f, 1.0f}, {kInf, kInf}, {-kInf, 0.0f}, {kNaN, kNaN}, {10.0f, 1024.0f}});
}

// The fast variants, each on the domain its instruction is meant for, measured and held
// to the hardware's documented accuracy (loosely: these are not tl's bounds but the
// instructions'); on the CPU they are libm's.
TEST(Math, FastVariants) {
  const double cpu = on_gpu() ? 0 : 1;  // the CPU: libm's half ulp
  {
    // ex2.approx(x log2 e): the rounding of x log2 e grows with |x| (|x| 2^-24 relative).
    auto xs = concat({uniform(kRandom, -87, 88), uniform(kRandom, -1, 1)});
    auto got = run<fast_expf_fn>("fast_expf", xs);
    std::vector<double> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) want[i] = std::exp(double(xs[i]));
    Worst w = worst(got, want);
    std::printf("[ math ] tl::fast_expf max error %.3f ulp at x = %.9g\n", w.ulp, double(xs[w.at]));
    EXPECT_LE(w.ulp, cpu ? 1.0 : 2 + 88 * 1.5);
  }
  {
    // lg2.approx's absolute error 2^-22 near 1; relative (a few ulp) away from it.
    auto near1 = uniform(kRandom, 0.5f, 2.0f);
    auto got = run<fast_logf_fn>("fast_logf", near1);
    double abs_err = max_abs_error(got, near1, log_ref);
    std::printf("[ math ] tl::fast_logf max |error| %.3g on [0.5, 2]\n", abs_err);
    EXPECT_LE(abs_err, cpu ? 1e-7 : 0x1p-21);
    auto far = concat({uniform(kRandom, 4, 1e30f), uniform(kRandom, 1e-30f, 0.25f)});
    std::vector<double> want(far.size());
    for (size_t i = 0; i < far.size(); ++i) want[i] = std::log(double(far[i]));
    Worst w = worst(run<fast_logf_fn>("fast_logf", far), want);
    std::printf("[ math ] tl::fast_logf max error %.3f ulp away from 1\n", w.ulp);
    EXPECT_LE(w.ulp, cpu ? 1.0 : 4.0);
  }
  {
    // sin.approx / cos.approx: absolute error about 2^-20.9 on [-pi, pi].
    auto xs = uniform(kRandom, -3.14159f, 3.14159f);
    double es = max_abs_error(run<fast_sinf_fn>("fast_sinf", xs), xs, sin_ref);
    double ec = max_abs_error(run<fast_cosf_fn>("fast_cosf", xs), xs, cos_ref);
    std::printf("[ math ] tl::fast_sinf max |error| %.3g, tl::fast_cosf %.3g on [-pi, pi]\n", es, ec);
    EXPECT_LE(es, cpu ? 1e-7 : 0x1p-20);
    EXPECT_LE(ec, cpu ? 1e-7 : 0x1p-20);
  }
  {
    struct fast_div_fn {
      tl::f32 operator()(const tl::f32& a, const tl::f32& b) const { return tl::fast_dividef(a, b); }
    };
    struct fdiv_fn {  // Triton's default ieee_rounding=False: the same division
      tl::f32 operator()(const tl::f32& a, const tl::f32& b) const { return tl::fdiv(a, b); }
    };
    auto as = random_bits(kRandom, 1e30f), bs = random_bits(kRandom, 1e30f);
    for (auto& b : bs) b = std::fabs(b) < 1e-30f ? 1.0f : b;  // |y| in [2^-126, 2^126]
    auto got = run2<fast_div_fn>("fast_dividef", as, bs);
    auto got2 = run2<fdiv_fn>("fdiv", as, bs);
    std::vector<double> want(as.size());
    for (size_t i = 0; i < as.size(); ++i) want[i] = double(as[i]) / double(bs[i]);
    // (quotients below the normal range are flushed by the approximate forms: skipped)
    for (size_t i = 0; i < as.size(); ++i)
      if (std::fabs(want[i]) < 0x1p-126) want[i] = got[i] = got2[i] = 0;
    Worst w = worst(got, want);
    std::printf("[ math ] tl::fast_dividef max error %.3f ulp\n", w.ulp);
    // (div.approx.f32's 2 ulp are against the rounded quotient: 2.063 against the exact
    // one on the H200, 2026-11-28)
    EXPECT_LE(w.ulp, cpu ? 0.5 : 2.5);
    EXPECT_EQ(got, got2);
  }
}

// The precise forms in f16 and bf16: computed in f32, rounded once.
TEST(Math, PreciseFormsInHalfAndBfloat16) {
  const int n = 2048;
  auto xs = uniform(n, 0.01f, 6);
  static auto k = tl::kernel("math_precise_narrow", [](tl::ptr<tl::f32> x, tl::ptr<tl::f16> eh, tl::ptr<tl::bf16> lb,
                                                       tl::ptr<tl::f16> sh) {
    auto i = tl::arange(0, n);
    auto v = tl::load(x + i);
    tl::store(eh + i, tl::exp(v.to<tl::f16>()));
    tl::store(lb + i, tl::log(v.to<tl::bf16>()));
    tl::store(sh + i, tl::sin(v.to<tl::f16>()));
  });
  auto X = upload<ty::f32>(xs);
  auto EH = test_device().alloc<ty::f16>(n), SH = test_device().alloc<ty::f16>(n);
  auto LB = test_device().alloc<ty::bf16>(n);
  poison(EH), poison(LB), poison(SH);
  k[tl::grid(1)](X, EH, LB, SH);
  auto eh = EH.download(), sh = SH.download();
  auto lb = LB.download();
  for (int i = 0; i < n; ++i) {
    double xh = tl::to_float(tl::to_f16(xs[i])), xb = tl::to_float(tl::to_bf16(xs[i]));
    EXPECT_NEAR(to_double(eh[i]), std::exp(xh), std::exp(xh) * 0x1p-10) << xs[i];
    EXPECT_NEAR(to_double(lb[i]), std::log(xb), std::max(std::fabs(std::log(xb)) * 0x1p-7, 0x1p-133)) << xs[i];
    EXPECT_NEAR(to_double(sh[i]), std::sin(xh), std::max(std::fabs(std::sin(xh)) * 0x1p-10, 0x1p-24)) << xs[i];
  }
}

// Every f32 of the binades where each function's error peaks on random inputs (tens of
// millions of values: opt in with TL_MATH_EXHAUSTIVE=1, as a release check on a device).
TEST(Math, EveryFloatOfThePeakBinades) {
  if (!std::getenv("TL_MATH_EXHAUSTIVE")) GTEST_SKIP() << "set TL_MATH_EXHAUSTIVE=1 to sweep every f32 of the peak binades";
  auto binades = [](std::initializer_list<float> starts) {  // [s, 2s) for each s, and their negatives
    std::vector<float> v;
    for (float s : starts)
      for (uint32_t b = std::bit_cast<uint32_t>(s), e = std::bit_cast<uint32_t>(2 * s); b < e; ++b) {
        v.push_back(std::bit_cast<float>(b));
        v.push_back(-std::bit_cast<float>(b));
      }
    return v;
  };
  auto sweep = [](auto fn, const std::string& name, double (*ref)(double), const std::vector<float>& xs, double bound) {
    using F = decltype(fn);
    auto got = run<F>(name, xs);
    Worst w;
    for (size_t i = 0; i < xs.size(); ++i) {
      double e = ulp_error(got[i], ref(double(xs[i])));
      if (!(e <= w.ulp)) w = {e, i};
    }
    std::printf("[ math ] every f32 of %zu: tl::%-8s max error %.3f ulp at x = %a\n", xs.size(), name.c_str(), w.ulp,
                double(xs[w.at]));
    EXPECT_LE(w.ulp, bound) << name << " at " << xs[w.at];
  };
  sweep(tanh_fn{}, "tanh", tanh_ref, binades({0.125f, 0.25f, 0.5f, 1.0f}), 3.0);
  sweep(sigmoid_fn{}, "sigmoid", sigmoid_ref, binades({2.0f, 4.0f, 8.0f}), 3.0);
  sweep(erfc_fn{}, "erfc", erfc_ref, binades({0.5f, 1.0f, 2.0f, 4.0f, 8.0f}), 4.0);
  sweep(asin_fn{}, "asin", asin_ref, binades({0.5f}), 2.0);
  sweep(tan_fn{}, "tan", tan_ref, binades({1.0f, 65536.0f}), 3.0);
  sweep(expm1_fn{}, "expm1", expm1_ref, binades({0.25f}), 2.0);
  sweep(sinh_fn{}, "sinh", sinh_ref, binades({1.0f}), 2.0);
  sweep(cosh_fn{}, "cosh", cosh_ref, binades({2.0f}), 2.0);
  sweep(atan_fn{}, "atan", atan_ref, binades({1.0f}), 1.5);
  sweep(log1p_fn{}, "log1p", log1p_ref, binades({0.25f}), 1.0);
  sweep(exp_fn{}, "exp", exp_ref, binades({2.0f, 4.0f, 32.0f}), 1.5);
  sweep(log_fn{}, "log", log_ref, binades({0.5f, 1.0f}), 1.5);
  sweep(log2_fn{}, "log2", log2_ref, binades({0.5f, 1.0f}), 2.0);
  sweep(sin_fn{}, "sin", sin_ref, binades({0.5f, 1.0f, 2.0f}), 2.0);
  sweep(cos_fn{}, "cos", cos_ref, binades({0.5f, 1.0f, 2.0f}), 2.0);
}

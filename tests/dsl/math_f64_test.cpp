// tl's f64 math (dsl/src/math.cpp's f64 compositions: exp, exp2, log, log2, tanh, sigmoid,
// expm1, log1p, sinh, cosh, atan, atan2, asin, acos, cbrt, erf, erfc, sin, cos, tan, pow,
// clamp) against long double
// references (x87's 64-bit significand: its own error is 2^-11 of an f64 ulp): the maximum
// error in f64 ulp on random bit patterns over each function's range, uniform values where
// the error peaks, and the edges (+-0,
// subnormals, DBL_MIN / DBL_MAX, +-inf, NaN), asserted against docs/language.md's bounds;
// special values exactly. Outputs poisoned before each run. The same code runs on every
// target (GPUs have no f64 libm): TL_DEVICE=cuda|hip runs this on the device, and the
// compile tests below check the sm_90 / gfx942 / gfx950 code calls nothing.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// |got - want| in f64 ulps at want (the subnormal spacing below 2^-1022); NaN against a
// number, or a wrong infinity, is infinitely far.
double ulp_error(double got, long double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  if (std::isnan(got)) return INFINITY;
  if (std::isinf(want) || std::fabs(want) > (long double)std::numeric_limits<double>::max()) {
    if (std::isinf(got)) return (got > 0) == (want > 0) ? 0 : INFINITY;
    return double(std::fabs((long double)got - want) / std::ldexp(1.0L, 971));
  }
  if (std::isinf(got)) return INFINITY;
  int e;
  std::frexp(std::fabs(want), &e);
  long double ulp = std::ldexp(1.0L, std::max(e - 53, -1074));
  return double(std::fabs((long double)got - want) / ulp);
}

std::vector<double> random_bits(size_t n, double max_abs) {
  std::vector<double> v;
  std::uniform_int_distribution<uint64_t> d;
  while (v.size() < n) {
    double f = std::bit_cast<double>(d(rng()));
    if (std::isfinite(f) && std::fabs(f) <= max_abs) v.push_back(f);
  }
  return v;
}
std::vector<double> uniform(size_t n, double lo, double hi) {
  std::vector<double> v(n);
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& x : v) x = d(rng());
  return v;
}
std::vector<double> edges() {
  const double m = std::numeric_limits<double>::max(), mn = std::numeric_limits<double>::min();
  return {0.0, -0.0, 4.9e-324, -4.9e-324, 1e-310, -1e-310, mn, -mn, 1e-200, -1e-200, 0.5, -0.5, 1.0, -1.0,
          2.0, -2.0, m, -m, kInf, -kInf, kNaN};
}
std::vector<double> concat(std::initializer_list<std::vector<double>> parts) {
  std::vector<double> r;
  for (auto& p : parts) r.insert(r.end(), p.begin(), p.end());
  return r;
}

constexpr int kBlock = 512;
template <class F> std::vector<double> run(const std::string& name, const std::vector<double>& xs) {
  static auto k = tl::kernel("math_f64_" + name, [](tl::ptr<tl::f64> x, tl::ptr<tl::f64> y, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    tl::store(y + i, F{}(tl::load(x + i, m, 0.0)), m);
  });
  const int n = int(xs.size());
  auto X = upload<ty::f64>(xs);
  auto Y = test_device().alloc<ty::f64>(size_t(n));
  poison(Y);
  k[tl::grid(tl::cdiv(n, kBlock))](X, Y, n);
  return Y.download();
}

#define TL_FN64(NAME) \
  struct NAME##_fn { tl::f64 operator()(const tl::f64& x) const { return tl::NAME(x); } }
TL_FN64(exp);
TL_FN64(log);
TL_FN64(log2);
TL_FN64(tanh);
TL_FN64(sigmoid);
TL_FN64(expm1);
TL_FN64(log1p);
TL_FN64(sinh);
TL_FN64(cosh);
TL_FN64(exp2);
TL_FN64(atan);
TL_FN64(asin);
TL_FN64(acos);
TL_FN64(cbrt);
TL_FN64(erf);
TL_FN64(erfc);
TL_FN64(sin);
TL_FN64(cos);
TL_FN64(tan);
#undef TL_FN64

// Two operands: atan2(y, x), clamp(x, lo, hi) with lo = -y and hi = y, and pow(x, y).
enum class Binary { atan2, clamp, pow, fdiv };
std::vector<double> run2(Binary op, const std::vector<double>& ys, const std::vector<double>& xs) {
  static auto k = tl::kernel("math_f64_binary", [](tl::ptr<tl::f64> y, tl::ptr<tl::f64> x, tl::ptr<tl::f64> out,
                                                   tl::i32 n, int which) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    auto a = tl::load(y + i, m, 1.0), b = tl::load(x + i, m, 1.0);
    if (which == int(Binary::atan2)) tl::store(out + i, tl::atan2(a, b), m);
    else if (which == int(Binary::clamp)) tl::store(out + i, tl::clamp(b, -a, a, tl::propagate_nan::all), m);
    else if (which == int(Binary::pow)) tl::store(out + i, tl::pow(b, a), m);
    else tl::store(out + i, tl::fdiv(b, a), m);
  });
  const int n = int(xs.size());
  auto Y = upload<ty::f64>(ys), X = upload<ty::f64>(xs);
  auto O = test_device().alloc<ty::f64>(size_t(n));
  poison(O);
  k[tl::grid(tl::cdiv(n, kBlock))](Y, X, O, n, int(op));
  return O.download();
}

template <class F> void check(const std::string& name, long double (*ref)(long double), const std::vector<double>& xs,
                              double bound) {
  auto got = run<F>(name, xs);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double e = ulp_error(got[i], ref((long double)xs[i]));
    if (!(e <= worst)) worst = e, at = i;
  }
  std::printf("[ math ] tl::%-8s f64 max error %.3f ulp (bound %.1f) at x = %.17g: got %.17g\n", name.c_str(), worst,
              bound, xs[at], got[at]);
  EXPECT_LE(worst, bound) << name << " at x = " << std::hexfloat << xs[at];
}

template <class F> void check_specials(const std::string& name, const std::vector<std::pair<double, double>>& cases) {
  std::vector<double> xs;
  for (auto& c : cases) xs.push_back(c.first);
  auto got = run<F>(name, xs);
  for (size_t i = 0; i < cases.size(); ++i) {
    double want = cases[i].second;
    bool same = std::isnan(want) ? std::isnan(got[i]) : got[i] == want && std::signbit(got[i]) == std::signbit(want);
    EXPECT_TRUE(same) << "tl::" << name << "(" << cases[i].first << ") = " << got[i] << ", want " << want;
  }
}

constexpr size_t kRandom = 1 << 15;

long double sigmoid_ref(long double x) { return 1.0L / (1.0L + std::exp(-x)); }

}  // namespace

// The bounds are docs/language.md's f64 row: the maxima measured here, rounded up.
TEST(MathF64, ExpLogLog2) {
  check<exp_fn>("exp", [](long double x) { return std::exp(x); },
                concat({random_bits(kRandom, 750), uniform(kRandom, -745, 709.8), uniform(kRandom, -1, 1), edges()}),
                1.5);
  check<log_fn>("log", [](long double x) { return std::log(x); },
                concat({random_bits(kRandom, kInf), uniform(kRandom, 0.5, 2), edges()}), 1.5);
  check<log2_fn>("log2", [](long double x) { return std::log2(x); },
                 concat({random_bits(kRandom, kInf), uniform(kRandom, 0.5, 2), edges()}), 2.0);
  check_specials<exp_fn>("exp", {{0.0, 1.0}, {-0.0, 1.0}, {kInf, kInf}, {-kInf, 0.0}, {kNaN, kNaN}, {710.0, kInf},
                                 {-746.0, 0.0}});
  check_specials<log_fn>("log", {{1.0, 0.0}, {0.0, -kInf}, {-0.0, -kInf}, {-1.0, kNaN}, {kInf, kInf}, {kNaN, kNaN}});
  check_specials<log2_fn>("log2", {{1.0, 0.0}, {8.0, 3.0}, {0x1p-1074, -1074.0}, {0.0, -kInf}, {-2.0, kNaN}});
}

TEST(MathF64, TanhSigmoid) {
  check<tanh_fn>("tanh", [](long double x) { return std::tanh(x); },
                 concat({random_bits(kRandom, 40), uniform(kRandom, -2, 2), uniform(kRandom, -20, 20), edges()}), 3.0);
  check<sigmoid_fn>("sigmoid", sigmoid_ref,
                    concat({random_bits(kRandom, 800), uniform(kRandom, -40, 40), uniform(kRandom, -745, -700),
                            edges()}), 3.0);
  check_specials<tanh_fn>("tanh", {{0.0, 0.0}, {-0.0, -0.0}, {kInf, 1.0}, {-kInf, -1.0}, {kNaN, kNaN},
                                   {1e-310, 1e-310}, {-1e-310, -1e-310}, {30.0, 1.0}});
  check_specials<sigmoid_fn>("sigmoid", {{0.0, 0.5}, {kInf, 1.0}, {-kInf, 0.0}, {kNaN, kNaN}, {-800.0, 0.0}});
}

TEST(MathF64, Expm1Log1pSinhCosh) {
  check<expm1_fn>("expm1", [](long double x) { return std::expm1(x); },
                  concat({random_bits(kRandom, 720), uniform(kRandom, -1, 1), uniform(kRandom, -45, 45), edges()}), 2.5);
  check<log1p_fn>("log1p", [](long double x) { return std::log1p(x); },
                  concat({random_bits(kRandom, kInf), uniform(kRandom, -1, 1), edges()}), 2.0);
  check<sinh_fn>("sinh", [](long double x) { return std::sinh(x); },
                 concat({random_bits(kRandom, 720), uniform(kRandom, -3, 3), edges()}), 2.0);
  check<cosh_fn>("cosh", [](long double x) { return std::cosh(x); },
                 concat({random_bits(kRandom, 720), uniform(kRandom, -3, 3), edges()}), 2.0);
  check_specials<expm1_fn>("expm1", {{0.0, 0.0}, {-0.0, -0.0}, {kInf, kInf}, {-kInf, -1.0}, {kNaN, kNaN}});
  check_specials<log1p_fn>("log1p", {{0.0, 0.0}, {-0.0, -0.0}, {-1.0, -kInf}, {-2.0, kNaN}, {kInf, kInf}});
  check_specials<sinh_fn>("sinh", {{0.0, 0.0}, {-0.0, -0.0}, {kInf, kInf}, {-kInf, -kInf}, {kNaN, kNaN}, {711.0, kInf}});
  check_specials<cosh_fn>("cosh", {{0.0, 1.0}, {kInf, kInf}, {-kInf, kInf}, {kNaN, kNaN}, {-711.0, kInf}});
}

TEST(MathF64, InverseTrigonometric) {
  check<atan_fn>("atan", [](long double x) { return std::atan(x); },
                 concat({random_bits(kRandom, kInf), uniform(kRandom, -2, 2), edges()}), 1.5);
  check<asin_fn>("asin", [](long double x) { return std::asin(x); },
                 concat({random_bits(kRandom, 1), uniform(kRandom, -1, 1), uniform(kRandom, 0.49, 0.51), edges()}),
                 2.0);
  check<acos_fn>("acos", [](long double x) { return std::acos(x); },
                 concat({random_bits(kRandom, 1), uniform(kRandom, -1, 1), uniform(kRandom, -0.51, -0.49), edges()}),
                 1.5);
  check_specials<atan_fn>("atan", {{0.0, 0.0}, {-0.0, -0.0}, {kInf, 0x1.921fb54442d18p0}, {-kInf, -0x1.921fb54442d18p0},
                                   {kNaN, kNaN}, {1e-310, 1e-310}});
  check_specials<asin_fn>("asin", {{0.0, 0.0}, {-0.0, -0.0}, {1.0, 0x1.921fb54442d18p0}, {-1.0, -0x1.921fb54442d18p0},
                                   {1.5, kNaN}, {-kInf, kNaN}, {kNaN, kNaN}});
  check_specials<acos_fn>("acos", {{1.0, 0.0}, {-1.0, 0x1.921fb54442d18p1}, {0.0, 0x1.921fb54442d18p0}, {2.0, kNaN},
                                   {kNaN, kNaN}});
  // atan2 on random pairs (quotients of every size) and C's special cases
  auto ys = concat({random_bits(kRandom, kInf), uniform(kRandom, -3, 3)});
  auto xs = concat({random_bits(kRandom, kInf), uniform(kRandom, -3, 3)});
  const double pi = 0x1.921fb54442d18p1, pio2 = 0x1.921fb54442d18p0, pio4 = 0x1.921fb54442d18p-1;
  const std::vector<std::array<double, 3>> specials = {
      {0.0, 0.0, 0.0},      {-0.0, 0.0, -0.0},   {0.0, -0.0, pi},       {-0.0, -0.0, -pi},      {1.0, 0.0, pio2},
      {-1.0, -0.0, -pio2},  {0.0, -1.0, pi},     {-0.0, -1.0, -pi},     {kInf, kInf, pio4},     {-kInf, kInf, -pio4},
      {kInf, -kInf, 3 * pio4}, {1.0, kInf, 0.0}, {1.0, -kInf, pi},     {kNaN, 1.0, kNaN},      {1.0, kNaN, kNaN}};
  for (auto& s : specials) ys.push_back(s[0]), xs.push_back(s[1]);
  auto got = run2(Binary::atan2, ys, xs);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i + specials.size() < xs.size(); ++i) {
    double e = ulp_error(got[i], std::atan2((long double)ys[i], (long double)xs[i]));
    if (!(e <= worst)) worst = e, at = i;
  }
  std::printf("[ math ] tl::atan2    f64 max error %.3f ulp (bound 2.0) at (%.17g, %.17g)\n", worst, ys[at], xs[at]);
  EXPECT_LE(worst, 2.0) << std::hexfloat << ys[at] << ", " << xs[at];
  for (size_t j = 0; j < specials.size(); ++j) {
    double g = got[xs.size() - specials.size() + j], want = specials[j][2];
    EXPECT_TRUE(std::isnan(want) ? std::isnan(g) : ulp_error(g, want) <= 1 && std::signbit(g) == std::signbit(want))
        << "atan2(" << specials[j][0] << ", " << specials[j][1] << ") = " << g << ", want " << want;
  }
}

TEST(MathF64, Exp2ErfCbrtClamp) {
  check<exp2_fn>("exp2", [](long double x) { return std::exp2(x); },
                 concat({random_bits(kRandom, 1100), uniform(kRandom, -1075, 1024), uniform(kRandom, -1, 1), edges()}),
                 1.5);
  check<cbrt_fn>("cbrt", [](long double x) { return std::cbrt(x); }, concat({random_bits(kRandom, kInf), edges()}),
                 1.0);
  check<erf_fn>("erf", [](long double x) { return std::erf(x); },
                concat({random_bits(kRandom, 7), uniform(kRandom, -6.5, 6.5), uniform(kRandom, -1.2, 1.2), edges()}),
                1.5);
  check_specials<erf_fn>("erf", {{0.0, 0.0}, {-0.0, -0.0}, {6.5, 1.0}, {-30.0, -1.0}, {kInf, 1.0}, {-kInf, -1.0},
                                 {kNaN, kNaN}});
  check_specials<exp2_fn>("exp2", {{0.0, 1.0}, {-0.0, 1.0}, {10.0, 1024.0}, {-1074.0, 0x1p-1074}, {1024.0, kInf},
                                   {-1076.0, 0.0}, {kInf, kInf}, {-kInf, 0.0}, {kNaN, kNaN}});
  check_specials<cbrt_fn>("cbrt", {{0.0, 0.0}, {-0.0, -0.0}, {27.0, 3.0}, {-8.0, -2.0}, {0x1p-1074, 0x1p-358},
                                   {kInf, kInf}, {-kInf, -kInf}, {kNaN, kNaN}});
  // clamp(x, -y, y) is exact: maxNum then minNum, a NaN x kept (propagate_nan::all)
  auto xs = concat({random_bits(kRandom, kInf), edges()});
  auto ys = random_bits(xs.size(), kInf);
  for (auto& y : ys) y = std::fabs(y);
  auto got = run2(Binary::clamp, ys, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = std::isnan(xs[i]) ? xs[i] : std::min(std::max(xs[i], -ys[i]), ys[i]);
    EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want) << xs[i] << " in +-" << ys[i] << ": " << got[i];
  }
}

// Arguments next to multiples of pi/2 (the reduction's hard cases: the remainder a tiny
// fraction of the argument), among them the double nearest one (Kahan and McDonald's
// 6381956970095103 * 2^797, whose remainder is 2^-60.9 of it) and its neighbours.
std::vector<double> near_pio2_multiples() {
  std::vector<double> v;
  for (int k = 1; k < 4000; k += 37) {
    double m = double(k * 1.5707963267948966192313216916397514L);
    for (double x = std::nextafter(m, 0.0), n = 0; n < 3; ++n, x = std::nextafter(x, kInf)) v.push_back(x);
  }
  double worst = std::ldexp(6381956970095103.0, 797);
  for (double x = std::nextafter(worst, 0.0), n = 0; n < 3; ++n, x = std::nextafter(x, kInf)) v.push_back(x);
  return v;
}

TEST(MathF64, SinCosTan) {
  auto xs = concat({random_bits(kRandom, kInf), uniform(kRandom, -10, 10), uniform(kRandom, -1e6, 1e6),
                    near_pio2_multiples(), edges()});
  check<sin_fn>("sin", [](long double x) { return std::sin(x); }, xs, 1.0);
  check<cos_fn>("cos", [](long double x) { return std::cos(x); }, xs, 1.0);
  check<tan_fn>("tan", [](long double x) { return std::tan(x); }, xs, 2.5);
  check_specials<sin_fn>("sin", {{0.0, 0.0}, {-0.0, -0.0}, {1e-310, 1e-310}, {-1e-310, -1e-310}, {kInf, kNaN},
                                 {-kInf, kNaN}, {kNaN, kNaN}});
  check_specials<cos_fn>("cos", {{0.0, 1.0}, {-0.0, 1.0}, {1e-310, 1.0}, {kInf, kNaN}, {kNaN, kNaN}});
  check_specials<tan_fn>("tan", {{0.0, 0.0}, {-0.0, -0.0}, {-1e-310, -1e-310}, {-kInf, kNaN}, {kNaN, kNaN}});
}

TEST(MathF64, ErfcPow) {
  check<erfc_fn>("erfc", [](long double x) { return std::erfc(x); },
                 concat({random_bits(kRandom, 30), uniform(kRandom, -6, 28), uniform(kRandom, -1.5, 3),
                         uniform(kRandom, 0.9, 1.0), edges()}),
                 3.0);
  check_specials<erfc_fn>("erfc", {{0.0, 1.0}, {-0.0, 1.0}, {30.0, 0.0}, {-30.0, 2.0}, {kInf, 0.0}, {-kInf, 2.0},
                                   {kNaN, kNaN}});
  // pow on random bases with exponents that take the result anywhere from the subnormals to
  // overflow (|y ln x| up to 760), integer exponents of negative bases, and C's cases
  std::vector<double> xs = random_bits(kRandom, kInf), ys;
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : xs) {
    x = std::fabs(x);
    double l = std::fabs(std::log(x));
    ys.push_back(u(rng()) * (l > 0 ? std::min(760 / l, 1e300) : 1.0));
  }
  for (double x : uniform(kRandom, -40, 40)) xs.push_back(x), ys.push_back(std::round(u(rng()) * 180));
  for (double x : uniform(kRandom / 4, 0.999, 1.001)) xs.push_back(x), ys.push_back(u(rng()) * 1e6);
  const double m = std::numeric_limits<double>::max();
  const std::vector<std::array<double, 3>> specials = {
      {kNaN, 0.0, 1.0},      {1.0, kNaN, 1.0},       {kNaN, 1.0, kNaN},   {2.0, kNaN, kNaN},    {-2.0, 0.5, kNaN},
      {0.0, -1.0, kInf},     {-0.0, -1.0, -kInf},    {-0.0, -2.0, kInf},  {0.0, 3.0, 0.0},      {-0.0, 3.0, -0.0},
      {-0.0, 2.0, 0.0},      {-1.0, kInf, 1.0},      {0.5, -kInf, kInf},  {2.0, -kInf, 0.0},    {0.5, kInf, 0.0},
      {2.0, kInf, kInf},     {-kInf, -3.0, -0.0},    {-kInf, 3.0, -kInf}, {-kInf, 2.0, kInf},   {kInf, -1.0, 0.0},
      {-2.0, 3.0, -8.0},     {-2.0, -1.0, -0.5},     {2.0, 1024.0, kInf}, {2.0, -1074.0, 0x1p-1074},
      {2.0, -1075.0, 0.0},   {m, 2.0, kInf},         {10.0, 308.0, 1e308}, {-1.0, 0x1p53, 1.0}, {0x1p-1074, 0.5, 0x1p-537}};
  for (auto& c : specials) xs.push_back(c[0]), ys.push_back(c[1]);
  auto got = run2(Binary::pow, ys, xs);
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i + specials.size() < xs.size(); ++i) {
    double e = ulp_error(got[i], std::pow((long double)xs[i], (long double)ys[i]));
    if (!(e <= worst)) worst = e, at = i;
  }
  std::printf("[ math ] tl::pow      f64 max error %.3f ulp (bound 1.5) at (%.17g, %.17g)\n", worst, xs[at], ys[at]);
  EXPECT_LE(worst, 1.5) << std::hexfloat << xs[at] << " ** " << ys[at];
  for (size_t j = 0; j < specials.size(); ++j) {
    double g = got[xs.size() - specials.size() + j], want = specials[j][2];
    EXPECT_TRUE(std::isnan(want) ? std::isnan(g) : g == want && std::signbit(g) == std::signbit(want))
        << "pow(" << specials[j][0] << ", " << specials[j][1] << ") = " << g << ", want " << want;
  }
}

// Triton's fdiv of f64 (ieee_rounding=False, its default) is div.rn.f64: there is no
// approximate f64 division, so tl::fdiv of f64 tiles is the correctly rounded quotient.
TEST(MathF64, FdivIsCorrectlyRounded) {
  auto xs = concat({random_bits(kRandom, kInf), edges()});
  auto ys = concat({random_bits(kRandom, kInf), edges()});
  std::reverse(ys.begin(), ys.end());
  auto got = run2(Binary::fdiv, ys, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    double want = xs[i] / ys[i];
    EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want && std::signbit(got[i]) == std::signbit(want))
        << std::hexfloat << xs[i] << " / " << ys[i] << " = " << got[i] << ", want " << want;
  }
}

namespace {
auto& every_f64() {
  static auto k = tl::kernel("codegen_math_f64", [](tl::ptr<tl::f64> x, tl::ptr<tl::f64> out) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto v = tl::load(x + i);
    tl::f64 r = tl::exp(v) + tl::log(v) + tl::log2(v) + tl::tanh(v) + tl::sigmoid(v);
    r = r + tl::expm1(v) + tl::log1p(v) + tl::sinh(v) + tl::cosh(v) + tl::exp2(v) + tl::atan(v) + tl::atan2(v, r);
    r = r + tl::asin(v) + tl::acos(v) + tl::cbrt(v) + tl::clamp(v, -1.0, r) + tl::erf(v) + tl::erfc(v);
    tl::store(out + i, r + tl::sin(v) + tl::cos(v) + tl::tan(v) + tl::pow(v, r) + tl::pow(v, 3));
  });
  return k;
}
std::string f64_isa(const std::string& arch) {
  auto p = reinterpret_cast<double*>(uintptr_t(1) << 20);
  return isa_of_compiled(every_f64().compile(arch, {.num_warps = 4}, p, p));
}
int matches(const std::string& text, const std::string& re) {
  std::regex r(re);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}
}  // namespace

// GPUs have no f64 libm: the f64 functions are tl's own arithmetic, nothing to call or
// resolve (an AMD code object is linked with --no-undefined), and f64 instructions do it.
TEST(MathF64, GpuCodeCallsNothing) {
  std::string ptx = f64_isa("sm_90");
  EXPECT_EQ(matches(ptx, R"(\.extern\s+\.func)"), 0) << ptx;
  EXPECT_EQ(matches(ptx, R"(\bcall(\.uni)?\b)"), 0) << ptx;
  EXPECT_GT(count(ptx, "fma.rn.f64"), 0) << ptx;
  EXPECT_GT(count(ptx, "div.rn.f64"), 0) << ptx;
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    std::string dis;
    ASSERT_NO_THROW(dis = f64_isa(arch));
    EXPECT_EQ(matches(dis, R"(\bs_(swappc|setpc|call)_b64\b)"), 0) << dis;
    EXPECT_GT(count(dis, "v_fma_f64"), 0) << dis;
  }
}

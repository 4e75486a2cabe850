// tl's math library (tl/math.hpp): each function traced as a composition of tile
// operations, so the CPU, AMD and NVIDIA run the same arithmetic and share one error bound
// (docs/language.md's table; tests/dsl/math_test.cpp measures it).
//
// What the compositions rely on, and why it holds on every target:
// - fma, +, -, *, / and sqrt are IEEE-rounded: tl lowers them to LLVM's plain
//   instructions (no fast-math flags), which the CPU, AMDGPU (its full-precision division
//   sequence) and NVPTX (div.rn, sqrt.rn) all round correctly. Nothing here uses
//   tl::exp/log/sin/cos, whose GPU lowerings are the approximate instructions; the raw
//   reciprocal (`div rcp`) and exponential (`exp2 raw`) instructions are used where their
//   error is refined (a Newton step) or damped (tanh for |x| >= 0.9), and bounded there.
// - min/max are IEEE minNum/maxNum: a NaN operand gives the other one, which is how NaN
//   is kept out of the integer parts (exponents, table indices); every function then
//   puts NaN back with a select.
// - Nothing is contracted: every add, sub and mul here is marked to round on its own (the
//   IR's `rn`, which enable_fp_fusion leaves alone: NVPTX writes mul.rn / add.rn, which
//   ptxas keeps apart); every fma here is an explicit one.
// The algorithms are the textbook ones (Cody-Waite and Payne-Hanek reduction, the
// atanh-series logarithm, fdlibm's asin/acos and log1p decompositions); the polynomial
// coefficients are near-minimax fits made for tl (relative error, Lawson-weighted least
// squares on Chebyshev nodes, rounded to f32), listed with the ranges they were fitted on.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "dsl/src/trace.hpp"
#include "tl/math.hpp"

namespace tl::detail {

using ir::Value;

namespace {

using V = Value*;

// The tile operations the compositions are written in, each recorded at the user's line.
struct M {
  const Loc& loc;

  V f(double v) const { return constant(DType::f32, v, 0, loc); }
  V d(double v) const { return constant(DType::f64, v, 0, loc); }
  V i(int32_t v) const { return constant(DType::i32, double(v), v, loc); }
  V u32(uint32_t v) const { return constant(DType::u32, double(v), int64_t(v), loc); }
  V u64(uint64_t v) const { return constant(DType::u64, double(v), int64_t(v), loc); }
  V i64(int64_t v) const { return constant(DType::i64, double(v), v, loc); }
  V nan() const { return f(std::numeric_limits<double>::quiet_NaN()); }
  V inf() const { return f(std::numeric_limits<double>::infinity()); }
  V truth(bool b) const { return constant(DType::i1, b ? 1 : 0, b ? 1 : 0, loc); }

  // Float sums, differences and products rounded on their own (i0 = 1): Triton's
  // enable_fp_fusion, on by default, fuses a user's a * b + c into an fma, but these
  // compositions count each rounding in their bounds, and their compensated sums and
  // double-double products are exact only as written.
  V rn(V r) const {
    if (r->def && (r->def->op == Op::add || r->def->op == Op::sub || r->def->op == Op::mul) &&
        is_float(r->type.dtype))
      r->def->i0 = 1;
    return r;
  }
  V add(V a, V b) const { return rn(binary(Op::add, a, b, loc)); }
  V sub(V a, V b) const { return rn(binary(Op::sub, a, b, loc)); }
  V mul(V a, V b) const { return rn(binary(Op::mul, a, b, loc)); }
  V div(V a, V b) const { return binary(Op::div, a, b, loc); }
  // num / den for den in [1, 2]: num times the target's reciprocal instruction (`div rcp`,
  // within about an ulp of 1/den; the CPU divides), refined by one Newton step on the
  // quotient (its residual num - den q0 exact in an fma): within a hair of half an ulp of
  // the exact quotient, in four operations where NVIDIA's IEEE division is a dozen with a
  // branch to a slow path around them (what GELU and SiLU spent, bench/activation_bench).
  V div_by_1_to_2(V num, V den) const {
    V rc = rcp(den);
    V q0 = mul(num, rc);
    return fma(fma(neg(den), q0, num), rc, q0);
  }
  // 1/den for |den| in [2^-126, 2^126] by the target's reciprocal instruction alone (about
  // an ulp; the CPU divides).
  V rcp(V den) const {
    V rc = binary(Op::div, f(1.0), den, loc);
    rc->def->i0 = 2;
    return rc;
  }
  // 2^y where the result is normal or infinite (y >= -126 or NaN) by the target's
  // instruction alone (about 2 ulp: NVIDIA ex2.approx.ftz, AMD v_exp_f32; the CPU's exp2f).
  V exp2_raw(V y) const {
    V e = unary(Op::exp2, y, loc);
    e->def->i0 = 2;
    return e;
  }
  V min(V a, V b) const { return binary(Op::min, a, b, loc); }
  V max(V a, V b) const { return binary(Op::max, a, b, loc); }
  V band(V a, V b) const { return binary(Op::band, a, b, loc); }
  V bor(V a, V b) const { return binary(Op::bor, a, b, loc); }
  V bxor(V a, V b) const { return binary(Op::bxor, a, b, loc); }
  V shl(V a, V b) const { return binary(Op::shl, a, b, loc); }
  V shr(V a, V b) const { return binary(Op::shr, a, b, loc); }
  V fma(V a, V b, V c) const { return detail::fma(a, b, c, loc); }
  V neg(V a) const { return unary(Op::neg, a, loc); }
  V abs(V a) const { return unary(Op::abs, a, loc); }
  V floor(V a) const { return unary(Op::floor, a, loc); }
  V sqrt(V a) const { return unary(Op::sqrt, a, loc); }
  V sel(V c, V a, V b) const { return where(c, a, b, loc); }
  V cmp(CmpPred p, V a, V b) const { return compare(p, a, b, loc); }
  V lt(V a, V b) const { return cmp(CmpPred::lt, a, b); }
  V le(V a, V b) const { return cmp(CmpPred::le, a, b); }
  V gt(V a, V b) const { return cmp(CmpPred::gt, a, b); }
  V ge(V a, V b) const { return cmp(CmpPred::ge, a, b); }
  V eq(V a, V b) const { return cmp(CmpPred::eq, a, b); }
  V ne(V a, V b) const { return cmp(CmpPred::ne, a, b); }
  V to(V a, DType t) const { return cast(a, t, false, loc); }
  V bits(V x) const { return cast(x, DType::i32, true, loc); }
  V from_bits(V i) const { return cast(i, DType::f32, true, loc); }

  V isnan(V x) const { return ne(x, x); }
  // |mag| with the sign bit of sgn (signed zeros and NaNs included).
  V copysign(V mag, V sgn) const {
    return from_bits(bor(band(bits(mag), i(0x7fffffff)), band(bits(sgn), i(INT32_MIN))));
  }
  // c[0] + z*(c[1] + z*(c[2] + ...)), one fma per coefficient.
  V poly(V z, std::initializer_list<double> c, bool f64 = false) const {
    const double* p = c.end();
    V r = f64 ? d(*--p) : f(*--p);
    while (p != c.begin()) r = fma(r, z, f64 ? d(*--p) : f(*--p));
    return r;
  }
  // 2^k for an i32 tile k in [-126, 127]: the exponent field.
  V pow2(V k) const { return from_bits(shl(add(k, i(127)), i(23))); }
  // y * 2^k for k in [-252, 254], rounded once: two exact steps of at most 2^127, the
  // second of which rounds (into the subnormals or to infinity where the result goes).
  V scale(V y, V k) const {
    V k1 = shr(k, i(1));
    return mul(mul(y, pow2(k1)), pow2(sub(k, k1)));
  }
};

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLog2e = 1.44269504088896340736;
// ln 2 in two parts: the first with 16 significant bits, so k * kLn2Hi is exact for any
// exponent k of f32 (|k| < 2^8) and x - k*kLn2Hi is exact where it is small.
constexpr double kLn2Hi = 0x1.62e4p-1;
constexpr double kLn2Lo = kLn2 - kLn2Hi;
// pi/2 and pi as f32 plus the f32 rounding of what that leaves.
constexpr double kPio2 = 1.57079632679489661923;
constexpr double kPi = 3.14159265358979323846;
const double kPio2Hi = double(float(kPio2)), kPio2Lo = double(float(kPio2 - kPio2Hi));
const double kPiHi = double(float(kPi)), kPiLo = double(float(kPi - kPiHi));

// e^x = 2^k * (1 + p): k = round(x / ln 2), p = e^r - 1 for r = x - k ln 2, |r| <= ln2/2.
// x is clamped to [-104, 90] first (past those e^x is 0 or inf in f32, and even e^x / 2
// is), so k is in [-150, 130] and NaN becomes a number (callers put NaN back).
struct ExpParts {
  V k;  // i32
  V p;  // f32
};
// The reduction of an x already in [-104, 90] (or NaN, which gives a NaN p). k comes from
// adding 1.5 * 2^23: the sum's low mantissa bits are round(x log2 e) as an integer, so
// the rounding, the float k and the integer k are three operations (a floor and a
// saturating conversion were nine on NVIDIA).
ExpParts exp_reduce(const M& m, V x) {
  constexpr double kShift = 0x1.8p23;
  V kb = m.fma(x, m.f(kLog2e), m.f(kShift));
  V kf = m.sub(kb, m.f(kShift));
  V k = m.sub(m.bits(kb), m.i(0x4b400000));  // bits of 1.5 * 2^23
  V r = m.fma(kf, m.f(-kLn2Hi), x);
  r = m.fma(kf, m.f(-kLn2Lo), r);
  // e^r - 1 = r + r^2 q(r), q fitted on |r| <= 0.3467 (minimax for the absolute error of
  // r^2 q with f32 coefficients: 5.2e-10, 0.03 of an ulp of e^r's relative error where
  // the result is e^r - 1 itself).
  V q = m.poly(r, {5.000000000e-01, 1.666666716e-01, 4.166646302e-02, 8.333286270e-03, 1.393367071e-03,
                   1.990761375e-04});
  return {k, m.fma(m.mul(r, r), q, r)};
}
ExpParts exp_parts(const M& m, V x) { return exp_reduce(m, m.min(m.max(x, m.f(-104.0)), m.f(90.0))); }

V exp_f32(const M& m, V x) {
  ExpParts e = exp_parts(m, x);
  return m.sel(m.isnan(x), x, m.scale(m.add(m.f(1.0), e.p), e.k));
}

V expm1_f32(const M& m, V x) {
  ExpParts e = exp_parts(m, x);
  // 2^k (1 + p) - 1 = 2^k p + (2^k - 1), one rounding: 2^k - 1 is exact for k in
  // [-24, 24], and past that the -1 (or the 2^k p) is below the result's half ulp. k is
  // taken no lower than -40 (the result is -1 there) and from x > 60 on e^x - 1 is e^x.
  V t = m.pow2(m.max(e.k, m.i(-40)));
  V small = m.fma(t, e.p, m.sub(t, m.f(1.0)));
  V big = m.scale(m.add(m.f(1.0), e.p), e.k);
  V r = m.sel(m.gt(x, m.f(60.0)), big, small);
  r = m.sel(m.eq(x, m.f(0.0)), x, r);  // -0 stays -0
  return m.sel(m.isnan(x), x, r);
}

// e^|x| / 2 as 2^(k-1) (1 + p): no rounding of x - ln 2, and finite up to |x| = 89.4
// where e^|x| alone overflows at 88.7.
V half_exp_abs(const M& m, V a) {
  ExpParts e = exp_parts(m, a);
  return m.scale(m.add(m.f(1.0), e.p), m.sub(e.k, m.i(1)));
}

V sinh_f32(const M& m, V x) {
  V a = m.abs(x);
  // |x| < 1: x + x^3/3! + ... + x^13/13! (Taylor; the remainder is below 1e-12).
  V z = m.mul(x, x);
  V s_small = m.fma(m.mul(x, z), m.poly(z, {1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880, 1.0 / 39916800,
                                          1.0 / 6227020800.0}), x);
  // |x| >= 1: e^|x|/2 - e^-|x|/2 with e^-|x|/2 = 1/(4 h), at most 0.14 of the result.
  V h = half_exp_abs(m, a);
  V s_big = m.copysign(m.sub(h, m.div(m.f(0.25), h)), x);
  V r = m.sel(m.lt(a, m.f(1.0)), s_small, s_big);
  return m.sel(m.isnan(x), x, r);
}

V cosh_f32(const M& m, V x) {
  V h = half_exp_abs(m, m.abs(x));
  return m.sel(m.isnan(x), x, m.add(h, m.div(m.f(0.25), h)));
}

V tanh_f32(const M& m, V x) {
  // Two forms, both computed for every element and one selected (no branch: a warp's
  // elements take both sides of any threshold, and a branch would run both anyway):
  // - |x| < 0.9: x + x^3 P(x^2), P fitted on [0, 0.9] (0.26 ulp of the result in exact
  //   arithmetic): subnormals come out as x, and -0 as -0 by the copysign after the select
  //   (-0 + (-0)^3 P is +0).
  // - |x| >= 0.9: 1 - 2 / (2^(2|x| log2 e) + 1) with the targets' exp2 and reciprocal
  //   instructions alone (NVIDIA ex2.approx.ftz and rcp.approx.ftz, 2 and 1 ulp by the PTX
  //   manual; AMD v_exp_f32 and v_rcp_f32, 1 ulp each; the CPU's exp2f and division). Their
  //   errors reach the result damped, by (1 - tanh^2) / 2 <= 0.17 and 2 / (E + 1) <= 0.29;
  //   the rounding of 2|x| log2 e by |x| / cosh^2 |x| <= 0.45 ulp. Infinity gives E = inf
  //   and 1 - 0; a NaN goes through the exponential.
  // Every f32 with each instruction at the extreme of its documented error (a simulation):
  // within 2.05 ulp; with exact instructions (the CPU) within 1.37. Fifteen operations,
  // two of them the targets' special-function unit, where one exact exponential and an
  // IEEE-quality division were 23.
  V a = m.abs(x);
  V z = m.mul(x, x);
  V p = m.poly(z, {-3.333321214e-01, 1.333035976e-01, -5.372149125e-02, 2.090414800e-02, -6.860093214e-03,
                   1.303979196e-03});
  V small = m.fma(m.mul(x, z), p, x);
  V e = m.exp2_raw(m.mul(a, m.f(2 * kLog2e)));
  V big = m.fma(m.f(-2.0), m.rcp(m.add(e, m.f(1.0))), m.f(1.0));
  return m.copysign(m.sel(m.lt(a, m.f(0.9)), small, big), x);
}

V sigmoid_f32(const M& m, V x) {
  // 1 / (1 + e^-x) for x >= 0, and e^x / (1 + e^x) below: e = e^-|x| <= 1 either way, so
  // the sum does not overflow and the tail keeps its precision down to the subnormals.
  // e = 2^k (1 + p) for k in [-150, 0]: scaled by 2^(k+64), a normal number, in one fma,
  // then by 2^-64, exact unless e is subnormal, where it rounds into the subnormals (the
  // fma's rounding 2^-24 relative is far below their ulp). A NaN stays NaN through the
  // select clamp.
  V y = m.neg(m.abs(x));
  y = m.sel(m.lt(y, m.f(-104.0)), m.f(-104.0), y);
  ExpParts ep = exp_reduce(m, y);
  V pk = m.pow2(m.add(ep.k, m.i(64)));
  V e = m.mul(m.fma(pk, ep.p, pk), m.f(0x1p-64));
  V num = m.sel(m.ge(x, m.f(0.0)), m.f(1.0), e);
  return m.div_by_1_to_2(num, m.add(m.f(1.0), e));  // (1 + e in [1, 2])
}

V log1p_f32(const M& m, V x) {
  // u = 1 + x = 2^k m with m in [sqrt(2)/2, sqrt(2)) (adding 1 - sqrt(2)/2 to the bits
  // moves the exponent's boundary there), f = m - 1 exact. c is what the rounding of
  // 1 + x lost, relative to u: log1p(x) = k ln2 + log(1 + f) + c.
  V u = m.add(m.f(1.0), x);
  constexpr int32_t kOne = 0x3f800000, kSqrtHalf = 0x3f3504f3;
  V iu = m.add(m.bits(u), m.i(kOne - kSqrtHalf));
  V k = m.sub(m.shr(iu, m.i(23)), m.i(127));
  V mant = m.from_bits(m.add(m.band(iu, m.i(0x7fffff)), m.i(kSqrtHalf)));
  V f = m.sub(mant, m.f(1.0));
  V c = m.sel(m.ge(k, m.i(2)), m.sub(m.f(1.0), m.sub(u, x)), m.sub(x, m.sub(u, m.f(1.0))));
  c = m.div(c, u);
  // log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.172, written as
  // f - hfsq + s (hfsq + R) with R = 2s^2/3 + 2s^4/5 + ... (the series to s^10; its
  // remainder is below 1e-10 relative): f, exact, carries the leading bits.
  V hfsq = m.mul(m.f(0.5), m.mul(f, f));
  V s = m.div(f, m.add(m.f(2.0), f));
  V z = m.mul(s, s);
  V R = m.mul(z, m.poly(z, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11}));
  V dk = m.to(k, DType::f32);
  V r = m.fma(s, m.add(hfsq, R), m.fma(dk, m.f(kLn2Lo), c));
  r = m.add(m.add(m.sub(r, hfsq), f), m.mul(dk, m.f(kLn2Hi)));
  r = m.sel(m.eq(x, m.inf()), x, r);
  r = m.sel(m.eq(x, m.f(-1.0)), m.neg(m.inf()), r);
  r = m.sel(m.lt(x, m.f(-1.0)), m.nan(), r);
  r = m.sel(m.eq(x, m.f(0.0)), x, r);
  return m.sel(m.isnan(x), x, r);
}

// The inverse trigonometric functions are written once for f32 and f64 (the tile's dtype
// picks the constants and the polynomial; the operations are the same). The f64
// polynomials are Chebyshev interpolants made for tl (60-digit arithmetic, converted to
// monomials and rounded to f64), the f32 ones near-minimax fits (the file's header).
bool wide(V x) { return x->type.dtype == DType::f64; }
V k(const M& m, V like, double v) { return wide(like) ? m.d(v) : m.f(v); }
// |mag| with the sign bit of sgn, either width.
V csign(const M& m, V mag, V sgn) {
  if (!wide(mag)) return m.copysign(mag, sgn);
  auto b = [&](V v) { return cast(v, DType::i64, true, m.loc); };
  return cast(m.bor(m.band(b(mag), m.i64(INT64_MAX)), m.band(b(sgn), m.i64(INT64_MIN))), DType::f64, true, m.loc);
}
V sign_bit_set(const M& m, V x) {
  return wide(x) ? m.lt(cast(x, DType::i64, true, m.loc), m.i64(0)) : m.lt(m.bits(x), m.i(0));
}
V poly_of(const M& m, V z, const std::vector<double>& c) {
  V r = k(m, z, c.back());
  for (size_t j = c.size() - 1; j-- > 0;) r = m.fma(r, z, k(m, z, c[j]));
  return r;
}
// pi/2 and pi as hi + lo in the tile's precision.
struct Split {
  double hi, lo;
};
Split pio2_of(V x) { return wide(x) ? Split{0x1.921fb54442d18p0, 0x1.1a62633145c07p-54} : Split{kPio2Hi, kPio2Lo}; }
Split pi_of(V x) { return wide(x) ? Split{0x1.921fb54442d18p1, 0x1.1a62633145c07p-53} : Split{kPiHi, kPiLo}; }

// atan(t) for t in [0, 1]: t + t^3 R(t^2), R fitted on [0, 1]: f32 relative error 7e-9,
// f64 22 terms, 0.21 ulp.
const std::vector<double> kAtanR32 = {-3.333333433e-01, 1.999994963e-01, -1.428402215e-01, 1.108844355e-01,
                                      -8.932726085e-02, 7.034430653e-02, -4.900208116e-02, 2.634517103e-02,
                                      -9.165626951e-03, 1.493276446e-03};
const std::vector<double> kAtanR64 = {
    -0.3333333333333333,   0.1999999999999992,    -0.14285714285701234,  0.11111111110268297,
    -0.0909090906193528,   0.07692307078827029,   -0.06666657934573768,  0.05882264416776449,
    -0.052624922290256754, 0.04758080083637821,   -0.043306538430670664, 0.03938687540798632,
    -0.035271331066871296, 0.030330719265790507,  -0.024191345810140718, 0.01718398172211335,
    -0.010412153260359241, 0.005140912856746939,  -0.0019612554271685326, 0.0005376839297396244,
    -9.371186345052626e-05, 7.767624330289919e-06};
V atan_01(const M& m, V t) {
  V z = m.mul(t, t);
  V R = poly_of(m, z, wide(t) ? kAtanR64 : kAtanR32);
  return m.fma(m.mul(t, z), R, t);
}

V atan_any(const M& m, V x) {
  V a = m.abs(x);
  V big = m.gt(a, k(m, x, 1.0));
  V r = atan_01(m, m.sel(big, m.div(k(m, x, 1.0), a), a));
  // atan a = pi/2 - atan(1/a) for a > 1 (1/inf = 0 gives pi/2)
  Split h = pio2_of(x);
  r = m.sel(big, m.add(m.sub(k(m, x, h.lo), r), k(m, x, h.hi)), r);
  return csign(m, r, x);  // NaN stays NaN
}

V atan2_any(const M& m, V y, V x) {
  V ax = m.abs(x), ay = m.abs(y);
  V swap = m.gt(ay, ax);
  V num = m.sel(swap, ax, ay), den = m.sel(swap, ay, ax);
  // num/den in [0, 1]; 0/0 (both zero) is 0 and inf/inf (both infinite) 1.
  V t = m.div(num, den);
  t = m.sel(m.eq(den, k(m, x, 0.0)), k(m, x, 0.0), t);
  t = m.sel(m.eq(num, k(m, x, std::numeric_limits<double>::infinity())), k(m, x, 1.0), t);
  V r = atan_01(m, t);
  Split h = pio2_of(x), p = pi_of(x);
  r = m.sel(swap, m.add(m.sub(k(m, x, h.lo), r), k(m, x, h.hi)), r);
  // x negative, -0 included (atan2(+-0, -0) = +-pi): pi - r
  r = m.sel(sign_bit_set(m, x), m.add(m.sub(k(m, x, p.lo), r), k(m, x, p.hi)), r);
  r = csign(m, r, y);
  return m.sel(m.bor(m.isnan(x), m.isnan(y)), m.add(x, y), r);
}

// asin(t) - t / t^3 on t^2 in [0, 0.25], fitted: f32 relative error 2e-8, f64 14 terms
// (0.02 ulp).
const std::vector<double> kAsinP32 = {1.666666567e-01, 7.500096411e-02, 4.459879547e-02,
                                      3.110754676e-02, 1.711741090e-02, 3.374222293e-02};
const std::vector<double> kAsinP64 = {
    0.16666666666666666,  0.07500000000000118,  0.044642857142551895, 0.03038194447553234,
    0.02237215744350722,  0.017352816540325496, 0.01396378001220357,  0.011566459612121669,
    0.009621842970100282, 0.009319560794767446, 0.0030448799094556773, 0.019554513336123378,
    -0.01924167174674304, 0.02961201126495512};
V asin_poly(const M& m, V z) { return poly_of(m, z, wide(z) ? kAsinP64 : kAsinP32); }

// For |x| > 1/2: asin|x| = pi/2 - 2 asin(s), s = sqrt((1 - |x|)/2) (exact argument), with
// asin(s) = s + w and w including the rounding error of the square root.
struct AsinTail {
  V s, w;
};
AsinTail asin_tail(const M& m, V a) {
  V z = m.mul(m.sub(k(m, a, 1.0), a), k(m, a, 0.5));
  V s = m.sqrt(z);
  V corr = m.sel(m.gt(s, k(m, a, 0.0)), m.div(m.fma(m.neg(s), s, z), m.add(s, s)), k(m, a, 0.0));
  V w = m.fma(m.mul(s, z), asin_poly(m, z), corr);
  return {s, w};
}

V asin_any(const M& m, V x) {
  V a = m.abs(x);
  V z = m.mul(a, a);
  V small = m.fma(m.mul(a, z), asin_poly(m, z), a);
  AsinTail t = asin_tail(m, a);
  Split h = pio2_of(x);
  V big = m.sub(m.sub(k(m, x, h.hi), m.add(t.s, t.s)), m.sub(m.add(t.w, t.w), k(m, x, h.lo)));
  V r = m.sel(m.le(a, k(m, x, 0.5)), small, big);
  // (the sqrt of a negative is NaN too)
  r = m.sel(m.gt(a, k(m, x, 1.0)), k(m, x, std::numeric_limits<double>::quiet_NaN()), r);
  return csign(m, r, x);
}

V acos_any(const M& m, V x) {
  V a = m.abs(x);
  V z = m.mul(x, x);
  Split h = pio2_of(x), p = pi_of(x);
  // |x| <= 1/2: pi/2 - asin x
  V small = m.add(m.sub(k(m, x, h.hi), x), m.sub(k(m, x, h.lo), m.mul(m.mul(x, z), asin_poly(m, z))));
  AsinTail t = asin_tail(m, a);
  V pos = m.mul(m.add(t.s, t.w), k(m, x, 2.0));  // x > 1/2: 2 asin(s)
  // x < -1/2: pi - 2 asin(s)
  V negr = m.sub(m.sub(k(m, x, p.hi), m.add(t.s, t.s)), m.sub(m.add(t.w, t.w), k(m, x, p.lo)));
  V r = m.sel(m.le(a, k(m, x, 0.5)), small, m.sel(m.gt(x, k(m, x, 0.0)), pos, negr));
  r = m.sel(m.gt(a, k(m, x, 1.0)), k(m, x, std::numeric_limits<double>::quiet_NaN()), r);
  return m.sel(m.isnan(x), x, r);
}

// a = |x| reduced by multiples of pi/2: a = q pi/2 + r, |r| <= pi/4 (r in f32, within
// half an ulp of the exact remainder), q mod 4. Below pi/4, r = a and q = 0.
struct Quadrant {
  V r;  // f32
  V q;  // u64, the low two bits the quadrant
};
Quadrant reduce_pio2(const M& m, V a) {
  // Payne-Hanek reduction of a >= pi/4 in integers: a = mant * 2^E (24-bit mant) and
  // a * 2/pi mod 4 = mant * W / 2^94, W the 96 bits of 2/pi from bit E - 1 on (the bits
  // before contribute multiples of 4, those after less than 2^-70). The 2/pi words behind
  // a zero word (the integer part), so bit E - 1 is bit be - 120 of the table, be the
  // biased exponent: words 0..7 cover every finite f32 from pi/4 up.
  static constexpr uint32_t kTwoOverPi[8] = {0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1,
                                             0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB};
  V ia = m.bits(a);
  V pos = m.sub(m.shr(ia, m.i(23)), m.i(120));  // in [6, 135] for a >= pi/4
  V idx = m.shr(pos, m.i(5));
  V sh = m.to(m.band(pos, m.i(31)), DType::u32);
  auto word = [&](int j) {  // kTwoOverPi[idx + j] for idx in [0, 4]
    V w = m.u32(kTwoOverPi[j + 4]);
    for (int c = 3; c >= 0; --c) w = m.sel(m.eq(idx, m.i(c)), m.u32(kTwoOverPi[j + c]), w);
    return w;
  };
  V w0 = word(0), w1 = word(1), w2 = word(2), w3 = word(3);
  // (hi << sh) | (lo >> (32 - sh)), with the right shift split so sh = 0 shifts by 31 + 1
  auto funnel = [&](V hi, V lo) {
    return m.bor(m.shl(hi, sh), m.shr(m.shr(lo, m.u32(1)), m.sub(m.u32(31), sh)));
  };
  V f0 = m.to(funnel(w0, w1), DType::u64), f1 = m.to(funnel(w1, w2), DType::u64), f2 = m.to(funnel(w2, w3), DType::u64);
  V mant = m.to(m.to(m.bor(m.band(ia, m.i(0x7fffff)), m.i(0x800000)), DType::u32), DType::u64);
  V p2 = m.mul(mant, f2);
  V p1 = m.add(m.mul(mant, f1), m.shr(p2, m.u64(32)));
  V p0 = m.add(m.mul(mant, f0), m.shr(p1, m.u64(32)));
  V q = m.band(m.shr(p0, m.u64(30)), m.u64(3));
  V frac = m.bor(m.shl(m.band(p0, m.u64(0x3fffffff)), m.u64(32)), m.band(p1, m.u64(0xffffffff)));
  // to the nearest quadrant: frac in [-1/2, 1/2) of pi/2, as a signed 62-bit fraction
  V up = m.shr(frac, m.u64(61));
  q = m.add(q, up);
  V sfrac = m.sub(m.to(frac, DType::i64), m.to(m.shl(up, m.u64(62)), DType::i64));
  V r_big = m.to(m.mul(m.to(sfrac, DType::f64), m.d(kPio2 * 0x1p-62)), DType::f32);
  V big = m.ge(a, m.f(0.785398185253143310546875));  // f32(pi/4), rounded up
  return {m.sel(big, r_big, a), m.sel(big, q, m.u64(0))};
}

V tan_f32(const M& m, V x) {
  V a = m.abs(x);
  Quadrant red = reduce_pio2(m, a);
  V r = red.r;
  V odd = m.ne(m.band(red.q, m.u64(1)), m.u64(0));
  // tan r = r + r^3 P(r^2) on |r| <= pi/4, P fitted (relative error 1.5e-9); in an odd
  // quadrant tan a = -1 / tan r.
  V z = m.mul(r, r);
  V P = m.poly(z, {3.333333433e-01, 1.333334297e-01, 5.396508425e-02, 2.191000432e-02, 8.612403646e-03,
                   4.417749587e-03, 8.983040971e-06, 1.785068074e-03});
  V t = m.fma(m.mul(r, z), P, r);
  t = m.sel(odd, m.div(m.f(-1.0), t), t);
  t = m.from_bits(m.bxor(m.bits(t), m.band(m.bits(x), m.i(INT32_MIN))));  // tan(-a) = -tan(a)
  return m.sel(m.lt(a, m.inf()), t, m.nan());  // inf and NaN give NaN
}

// sin r and cos r on |r| <= pi/4, Taylor to r^13 and r^14 (remainders below 1e-10
// relative); cos as fdlibm writes it, 1 - r^2/2 split so that its rounding is added back.
V sin_kernel(const M& m, V r) {
  V z = m.mul(r, r);
  V S = m.poly(z, {-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800.0});
  return m.fma(m.mul(r, z), S, r);
}
V cos_kernel(const M& m, V r) {
  V z = m.mul(r, r);
  V C = m.poly(z, {1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600, -1.0 / 87178291200.0});
  V hz = m.mul(m.f(0.5), z);
  V w = m.sub(m.f(1.0), hz);
  return m.add(w, m.fma(m.mul(z, z), C, m.sub(m.sub(m.f(1.0), w), hz)));
}

// sin x (cosine: shift = 1): the quadrant q + shift picks sin r, cos r, -sin r, -cos r;
// sin is odd (its sign from x), cos even.
V sincos_f32(const M& m, V x, bool cosine) {
  V a = m.abs(x);
  Quadrant red = reduce_pio2(m, a);
  V q = cosine ? m.add(red.q, m.u64(1)) : red.q;
  V s = sin_kernel(m, red.r), c = cos_kernel(m, red.r);
  V r = m.sel(m.ne(m.band(q, m.u64(1)), m.u64(0)), c, s);
  V flip = m.ne(m.band(q, m.u64(2)), m.u64(0));
  if (!cosine) flip = m.bxor(flip, m.lt(m.bits(x), m.i(0)));
  r = m.sel(flip, m.neg(r), r);
  return m.sel(m.lt(a, m.inf()), r, m.nan());  // inf and NaN give NaN
}

// log x: x = 2^k m (subnormals scaled by 2^24 first), m in [sqrt(2)/2, sqrt(2)) as in
// log1p, f = m - 1 exact, log(1 + f) = f + f^2 (-1/2 + f P(f)), P fitted on that range
// (relative error of the whole 5.8e-9), then + k ln 2 in two parts. No division.
V log_parts(const M& m, V x, V& dk) {
  V tiny = m.lt(x, m.f(0x1p-126));
  V xs = m.sel(tiny, m.mul(x, m.f(0x1p24)), x);
  constexpr int32_t kOne = 0x3f800000, kSqrtHalf = 0x3f3504f3;
  V ix = m.add(m.bits(xs), m.i(kOne - kSqrtHalf));
  V k = m.sub(m.shr(ix, m.i(23)), m.i(127));
  k = m.sel(tiny, m.sub(k, m.i(24)), k);
  V f = m.sub(m.from_bits(m.add(m.band(ix, m.i(0x7fffff)), m.i(kSqrtHalf))), m.f(1.0));
  V P = m.poly(f, {3.333333135e-01, -2.500081956e-01, 2.000124305e-01, -1.662341207e-01, 1.420154423e-01,
                   -1.315953732e-01, 1.276242733e-01, -7.636890560e-02});
  V Q = m.fma(f, P, m.f(-0.5));
  dk = m.to(k, DType::f32);
  return m.fma(m.mul(f, f), Q, f);  // log(1 + f)
}
V log_specials(const M& m, V x, V r) {
  r = m.sel(m.eq(x, m.f(0.0)), m.neg(m.inf()), r);
  r = m.sel(m.lt(x, m.f(0.0)), m.nan(), r);
  r = m.sel(m.eq(x, m.inf()), x, r);
  return m.sel(m.isnan(x), x, r);
}
V log_f32(const M& m, V x) {
  V dk;
  V l = log_parts(m, x, dk);
  return log_specials(m, x, m.fma(dk, m.f(kLn2Hi), m.fma(dk, m.f(kLn2Lo), l)));
}
// log2 x = k + log(1 + f) log2(e), log2(e) in two parts (k + that rounds once more where
// k is not 0; where it is, the product is all there is).
V log2_f32(const M& m, V x) {
  V dk;
  V l = log_parts(m, x, dk);
  constexpr double kLog2eHi = double(float(kLog2e)), kLog2eLo = double(float(kLog2e - kLog2eHi));
  V t = m.fma(l, m.f(kLog2eHi), m.mul(l, m.f(kLog2eLo)));
  return log_specials(m, x, m.add(dk, t));
}

V cbrt_f32(const M& m, V x) {
  V a = m.abs(x);
  // Subnormals scaled by 2^24 (the root by 2^8) first.
  V sub = m.lt(a, m.f(0x1p-126));
  V as = m.sel(sub, m.mul(a, m.f(0x1p24)), a);
  // A third of the exponent (and mantissa) bits plus a bias: within 4% of the root;
  // two Newton steps in f32 bring that to 1e-6, one in f64 to 1e-12, below half an ulp
  // of f32 except next to a tie.
  V y = m.from_bits(m.add(m.div(m.bits(as), m.i(3)), m.i(709958130)));
  for (int step = 0; step < 2; ++step)
    y = m.mul(m.add(m.add(y, y), m.div(as, m.mul(y, y))), m.f(1.0 / 3));
  V yd = m.to(y, DType::f64), ad = m.to(as, DType::f64);
  V y2 = m.mul(yd, yd);
  yd = m.sub(yd, m.div(m.sub(m.mul(y2, yd), ad), m.mul(y2, m.d(3.0))));
  V r = m.to(yd, DType::f32);
  r = m.sel(sub, m.mul(r, m.f(0x1p-8)), r);
  r = m.copysign(r, x);
  // 0, inf and NaN are their own roots
  return m.sel(m.bor(m.eq(a, m.f(0.0)), m.bor(m.eq(a, m.inf()), m.isnan(x))), x, r);
}

V erfc_f32(const M& m, V x) {
  V a = m.abs(x);
  // |x| < 1/2: 1 - erf x with erf x = x + x E(x^2), E fitted on [0, 1/4] (absolute error
  // 1.3e-11), written so the rounding of 2/sqrt(pi) is not in it.
  V z = m.mul(x, x);
  V E = m.poly(z, {1.283791661e-01, -3.761263788e-01, 1.128377393e-01, -2.686315030e-02, 5.200444721e-03,
                   -7.694996311e-04});
  V small = m.fma(m.neg(x), E, m.sub(m.f(1.0), x));
  // |x| >= 1/2: erfc|x| = e^(-x^2) H(t), H = erfcx fitted as a polynomial in t = 1/(1 + |x|)
  // on [0.5, 10.1] (relative error 1.3e-8 with the coefficients in f32, each rounded
  // before the rest were refitted; erfc is 0 in f32 past 10.06). x^2 = hi + lo
  // exactly (an fma), e^-hi from exp_parts and e^-lo as 1 - lo, and t from the exact
  // sum 1 + |x| (two-sum) and a corrected division: t's rounding would cost an ulp.
  V ac = m.min(a, m.f(11.0));
  V hi = m.mul(ac, ac);
  V lo = m.fma(ac, ac, m.neg(hi));
  V d = m.add(m.f(1.0), ac);
  V bv = m.sub(d, m.f(1.0));
  V dl = m.add(m.sub(m.f(1.0), m.sub(d, bv)), m.sub(ac, bv));  // 1 + ac - d exactly
  V t0 = m.div(m.f(1.0), d);
  V rho = m.sub(m.fma(m.neg(t0), d, m.f(1.0)), m.mul(t0, dl));
  V t = m.fma(t0, rho, t0);
  V H = m.poly(t, {2.438266165e-06, 5.640783906e-01, 5.663185716e-01, 2.599362135e-01, -1.483281404e-01,
                   -1.144219995e+00, 2.661534846e-01, 3.978034019e+00, -6.947191715e+00, 5.000066280e+00,
                   -1.400495172e+00});
  ExpParts e = exp_parts(m, m.neg(hi));
  // (1 + p) e^-lo H = (1 + q) H with q = p - lo - p lo (|lo| < 4e-6: lo^2 is far below an
  // ulp), q to its own ulp, then one rounding
  V q = m.fma(m.neg(lo), e.p, m.sub(e.p, lo));
  V mant = m.fma(q, H, H);
  V tail = m.scale(mant, e.k);
  V big = m.sel(m.lt(x, m.f(0.0)), m.sub(m.f(2.0), tail), tail);
  V r = m.sel(m.lt(a, m.f(0.5)), small, big);
  return m.sel(m.isnan(x), x, r);
}

// x ** y for f32 x and an f64 y (an f32 or i32 exponent converted exactly): log2|x| and
// the exponential in f64, where y log2|x| keeps the 2^-40 absolute accuracy a correctly
// rounded f32 result needs (f32 arithmetic would lose log2(|y log2 x|) bits), then C's
// special cases.
V pow_core(const M& m, V x, V y) {
  V ax = m.abs(x);
  V sub = m.lt(ax, m.f(0x1p-126));
  V an = m.sel(sub, m.mul(ax, m.f(0x1p24)), ax);
  constexpr int32_t kOne = 0x3f800000, kSqrtHalf = 0x3f3504f3;
  V iu = m.add(m.bits(an), m.i(kOne - kSqrtHalf));
  V k = m.sub(m.shr(iu, m.i(23)), m.sel(sub, m.i(127 + 24), m.i(127)));
  V mant = m.from_bits(m.add(m.band(iu, m.i(0x7fffff)), m.i(kSqrtHalf)));
  // log m = 2 atanh(s), s = f/(2+f), |s| <= 0.172: the series to s^15 (remainder 1e-12)
  V f = m.sub(m.to(mant, DType::f64), m.d(1.0));
  V s = m.div(f, m.add(m.d(2.0), f));
  V z = m.mul(s, s);
  V lnm = m.mul(m.mul(s, m.d(2.0)), m.poly(z, {1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15}, true));
  V l2 = m.fma(lnm, m.d(kLog2e), m.to(k, DType::f64));
  V t = m.mul(y, l2);
  // 2^t = 2^n e^(u), u = (t - n) ln 2 in [-0.35, 0.35]: Taylor to u^11 (remainder 6e-15)
  V tc = m.min(m.max(t, m.d(-200.0)), m.d(200.0));
  V n = m.floor(m.add(tc, m.d(0.5)));
  V u = m.mul(m.sub(tc, n), m.d(kLn2));
  V eu = m.poly(u, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
                    1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800}, true);
  V scale = cast(m.shl(m.add(m.to(n, DType::i64), m.i64(1023)), m.i64(52)), DType::f64, true, m.loc);
  V r = m.to(m.mul(eu, scale), DType::f32);  // rounds once into f32's range
  // C's special cases, later ones winning.
  V yint = m.eq(m.floor(y), y);
  V half = m.mul(y, m.d(0.5));
  V yodd = m.band(yint, m.ne(m.floor(half), half));
  V xneg = m.lt(m.bits(x), m.i(0));
  V negate = m.band(xneg, yodd);
  V sgn = m.sel(negate, m.f(-1.0), m.f(1.0));
  r = m.sel(negate, m.neg(r), r);
  V xfinite_nz = m.band(m.lt(ax, m.inf()), m.gt(ax, m.f(0.0)));
  V yneg = m.lt(y, m.d(0.0));
  r = m.sel(m.band(m.band(xneg, m.bxor(yint, m.truth(true))), xfinite_nz), m.nan(), r);
  r = m.sel(m.eq(ax, m.f(0.0)), m.copysign(m.sel(yneg, m.inf(), m.f(0.0)), sgn), r);
  r = m.sel(m.eq(ax, m.inf()), m.copysign(m.sel(yneg, m.f(0.0), m.inf()), sgn), r);
  V yinf = m.eq(m.abs(y), m.d(std::numeric_limits<double>::infinity()));
  V inf_case = m.sel(m.eq(ax, m.f(1.0)), m.f(1.0),
                     m.sel(m.eq(m.lt(ax, m.f(1.0)), yneg), m.inf(), m.f(0.0)));
  r = m.sel(yinf, inf_case, r);
  r = m.sel(m.bor(m.isnan(x), m.isnan(y)), m.nan(), r);
  return m.sel(m.bor(m.eq(y, m.d(0.0)), m.eq(x, m.f(1.0))), m.f(1.0), r);
}

// ---------------------------------------------------------------- f64
// The same algorithms in f64 arithmetic (tl's own code on every target: GPUs have no f64
// libm and LLVM lowers no f64 transcendental for NVPTX or AMDGPU): exp (and from it
// expm1, tanh, sigmoid, sinh, cosh), and the logarithm (log, log2, log1p). Polynomials
// are Taylor / atanh series taken far enough that their remainder is below 2^-60.
constexpr double kLn2Hi64 = 0x1.62e42fee00000p-1;  // 32 significant bits: k * kLn2Hi64 exact for |k| < 2^21
constexpr double kLn2Lo64 = 0x1.a39ef35793c76p-33;

V bits64(const M& m, V x) { return cast(x, DType::i64, true, m.loc); }
V from_bits64(const M& m, V i) { return cast(i, DType::f64, true, m.loc); }
// 2^k for an i64 tile k in [-1022, 1023]; y * 2^k for k in [-2044, 2046], rounded once.
V pow2_64(const M& m, V k) { return from_bits64(m, m.shl(m.add(k, m.i64(1023)), m.i64(52))); }
V scale64(const M& m, V y, V k) {
  V k1 = m.shr(k, m.i64(1));
  return m.mul(m.mul(y, pow2_64(m, k1)), pow2_64(m, m.sub(k, k1)));
}
V copysign64(const M& m, V mag, V sgn) {
  return from_bits64(m, m.bor(m.band(bits64(m, mag), m.i64(INT64_MAX)), m.band(bits64(m, sgn), m.i64(INT64_MIN))));
}
V isnan64(const M& m, V x) { return m.ne(x, x); }

// e^r - 1 for |r| <= ln2/2: r + r^2 q(r), q Taylor's to r^11 (remainder 4e-18 of e^r).
V expm1_kernel64(const M& m, V r) {
  std::vector<double> c;
  double fact = 2;
  for (int n = 2; n <= 13; ++n, fact *= n) c.push_back(1.0 / fact);
  V q = m.d(c.back());
  for (size_t j = c.size() - 1; j-- > 0;) q = m.fma(q, r, m.d(c[j]));
  return m.fma(m.mul(r, r), q, r);
}

// x in [-746, 710] (or NaN): x = k ln2 + r, |r| <= ln2/2, k from the low bits of
// x log2 e + 1.5 * 2^52, e^r - 1 = r + r^2 q(r) with q Taylor's to r^11 (remainder
// 4e-18 of e^r).
ExpParts exp_reduce64(const M& m, V x) {
  constexpr double kShift = 0x1.8p52;
  V kb = m.fma(x, m.d(kLog2e), m.d(kShift));
  V kf = m.sub(kb, m.d(kShift));
  V k = m.sub(bits64(m, kb), m.i64(0x4338000000000000));
  V r = m.fma(kf, m.d(-kLn2Hi64), x);
  r = m.fma(kf, m.d(-kLn2Lo64), r);
  return {k, expm1_kernel64(m, r)};
}
ExpParts exp_parts64(const M& m, V x) { return exp_reduce64(m, m.min(m.max(x, m.d(-746.0)), m.d(710.0))); }

V exp_f64(const M& m, V x) {
  ExpParts e = exp_parts64(m, x);
  return m.sel(isnan64(m, x), x, scale64(m, m.add(m.d(1.0), e.p), e.k));
}

V exp2_f64(const M& m, V x) {
  // x = k + f, k = round(x) (the low bits of x + 1.5 * 2^52), f = x - k exact in
  // [-1/2, 1/2]; 2^f = e^(f ln2) with f ln2 = r + rl (r its rounding, rl = the fma's
  // residual plus f times ln2's own rounding): e^(r + rl) - 1 = p + rl (1 + p).
  constexpr double kShift = 0x1.8p52;
  V xc = m.min(m.max(x, m.d(-1080.0)), m.d(1030.0));  // past these 2^x is 0 or inf
  V kb = m.add(xc, m.d(kShift));
  V kf = m.sub(kb, m.d(kShift));
  V k = m.sub(bits64(m, kb), m.i64(0x4338000000000000));
  V f = m.sub(xc, kf);
  V r = m.mul(f, m.d(kLn2));
  V rl = m.fma(f, m.d(kLn2), m.neg(r));
  rl = m.fma(f, m.d(0x1.abc9e3b39803fp-56), rl);  // ln2 - double(ln2)
  V p = expm1_kernel64(m, r);
  p = m.add(p, m.fma(rl, p, rl));
  return m.sel(isnan64(m, x), x, scale64(m, m.add(m.d(1.0), p), k));
}

// erf in f64 (GPUs have none, and f32's is the lowering's own): |x| < 1: x + x R(x^2);
// 1 <= |x| < 6: 1 - e^(-x^2) erfcx(|x|), x^2 = hi + lo exactly (an fma), e^-x^2 as
// e^-hi (1 - lo), erfcx a polynomial in |x| - 1.75 on [1, 2.5] and in |x| - 4.25 on
// [2.5, 6] (both computed, one selected); from 6 on erf rounds to +-1. Chebyshev
// interpolants made for tl (60-digit arithmetic): R 0.10 ulp, erfc's absolute error
// 0.06 and 0.002 of 2^-53.
const std::vector<double> kErfR64 = {
    0.1283791670955126, -0.37612638903183754, 0.11283791670955126, -0.026866170645131252, 0.005223977625442175,
    -0.0008548327023449497, 0.00012055332981694495, -1.4925650353787866e-05, 1.6462114205798046e-06,
    -1.6365840648222765e-07, 1.4807117719731329e-08, -1.2289529419960295e-09, 9.412558594992829e-11,
    -6.639294901316118e-12, 4.117309460970657e-13, -1.746609279318069e-14};
const std::vector<double> kErfcxNear = {
    0.2849722347374364, -0.1309763455144852, 0.055763630087087304, -0.022259995241388338, 0.008404319207326675,
    -0.003020974651424632, 0.0010392045224943175, -0.00034353335348190285, 0.00010950528789877897,
    -3.375535512350179e-05, 1.0086687118634985e-05, -2.927938946074689e-06, 8.27116822643686e-07,
    -2.2775911713858554e-07, 6.125858418423319e-08, -1.6092176785311224e-08, 4.078439777723807e-09,
    -1.0279487070919121e-09, 3.0245223381638127e-10, -7.284226875618169e-11};
const std::vector<double> kErfcxFar = {
    0.1293452747859878, -0.028944331414615315, 0.006331866273879434, -0.0013559331671051938,
    0.00028457515676828387, -5.859550020157721e-05, 1.1848093943733695e-05, -2.3546006845863016e-06,
    4.6025960457877927e-07, -8.855425944253482e-08, 1.6781601158816573e-08, -3.133906547477162e-09,
    5.764865097795361e-10, -1.0473038751142829e-10, 1.9043820520800624e-11, -3.3679875481133544e-12,
    5.147060299059555e-13, -8.951517882296557e-14, 2.670890640370474e-14, -4.468448672963503e-15};
V erf_f64(const M& m, V x) {
  V a = m.abs(x);
  V small = m.fma(x, poly_of(m, m.mul(x, x), kErfR64), x);
  V ac = m.min(a, m.d(6.0));
  V hi = m.mul(ac, ac), lo = m.fma(ac, ac, m.neg(hi));
  V eh = exp_f64(m, m.neg(hi));
  V e = m.fma(eh, m.neg(lo), eh);
  V H = m.sel(m.lt(ac, m.d(2.5)), poly_of(m, m.sub(ac, m.d(1.75)), kErfcxNear),
              poly_of(m, m.sub(ac, m.d(4.25)), kErfcxFar));  // (exact subtractions: Sterbenz)
  V r = m.sel(m.lt(a, m.d(1.0)), small, copysign64(m, m.sub(m.d(1.0), m.mul(e, H)), x));
  return m.sel(isnan64(m, x), x, r);
}

V cbrt_f64(const M& m, V x) {
  // cbrt_f32's: a third of the exponent bits plus a bias (within 4%), subnormals scaled by
  // 2^54 (the root by 2^18); three Newton steps (4e-2 -> 2e-3 -> 4e-6 -> 2e-11), then one
  // on the residual y^3 - a (an fma of the rounded y^2): within a few tenths of an ulp
  // before the last subtraction's rounding.
  V a = m.abs(x);
  V sub = m.lt(a, m.d(0x1p-1022));
  V as = m.sel(sub, m.mul(a, m.d(0x1p54)), a);
  V y = from_bits64(m, m.add(m.div(bits64(m, as), m.i64(3)), m.i64(0x2A9F7893782DA1CE)));
  for (int step = 0; step < 3; ++step)
    y = m.mul(m.add(m.add(y, y), m.div(as, m.mul(y, y))), m.d(1.0 / 3));
  V y2 = m.mul(y, y);
  y = m.sub(y, m.div(m.fma(y2, y, m.neg(as)), m.mul(y2, m.d(3.0))));
  y = m.sel(sub, m.mul(y, m.d(0x1p-18)), y);
  y = copysign64(m, y, x);
  // 0, inf and NaN are their own roots
  return m.sel(m.bor(m.eq(a, m.d(0.0)), m.bor(m.eq(a, m.d(std::numeric_limits<double>::infinity())), isnan64(m, x))),
               x, y);
}

V expm1_f64(const M& m, V x) {
  // as expm1_f32: 2^k p + (2^k - 1) in one fma (2^k - 1 exact for k in [-53, 53], within a
  // quarter ulp of the result to k = 58); k no lower than -60 (the result is -1 there),
  // and from x = 40 on the -1 is below 2^-57 of e^x.
  ExpParts e = exp_parts64(m, x);
  V t = pow2_64(m, m.max(e.k, m.i64(-60)));
  V small = m.fma(t, e.p, m.sub(t, m.d(1.0)));
  V big = scale64(m, m.add(m.d(1.0), e.p), e.k);
  V r = m.sel(m.gt(x, m.d(40.0)), big, small);
  r = m.sel(m.eq(x, m.d(0.0)), x, r);
  return m.sel(isnan64(m, x), x, r);
}

V tanh_f64(const M& m, V x) {
  // -t / (E + 1) from E = e^(-2|x|) = 2^k (1 + p), t = E - 1 = 2^k p + (2^k - 1) in one fma, an
  // IEEE division; |x| taken to 20 (tanh rounds to 1 from 19.1).
  V y = m.mul(m.abs(x), m.d(-2.0));
  y = m.sel(m.lt(y, m.d(-40.0)), m.d(-40.0), y);
  ExpParts e = exp_reduce64(m, y);
  V pk = pow2_64(m, e.k);
  V t = m.fma(pk, e.p, m.sub(pk, m.d(1.0)));
  V den = m.sel(m.lt(y, m.d(-1.1)), m.fma(pk, e.p, m.add(pk, m.d(1.0))), m.add(t, m.d(2.0)));
  return copysign64(m, m.div(t, den), x);
}

V sigmoid_f64(const M& m, V x) {
  // sigmoid_f32's: e = e^-|x| = 2^(k+600) (1 + p) 2^-600, rounding once into the subnormals.
  V y = m.neg(m.abs(x));
  y = m.sel(m.lt(y, m.d(-746.0)), m.d(-746.0), y);
  ExpParts ep = exp_reduce64(m, y);
  V pk = pow2_64(m, m.add(ep.k, m.i64(600)));
  V e = m.mul(m.fma(pk, ep.p, pk), m.d(0x1p-600));
  V num = m.sel(m.ge(x, m.d(0.0)), m.d(1.0), e);
  return m.div(num, m.add(m.d(1.0), e));
}

V half_exp_abs64(const M& m, V a) {
  ExpParts e = exp_reduce64(m, m.min(a, m.d(711.0)));  // sinh / cosh overflow from 710.48
  return scale64(m, m.add(m.d(1.0), e.p), m.sub(e.k, m.i64(1)));
}
V sinh_f64(const M& m, V x) {
  // |x| < 1: Taylor to x^21 (remainder below 4e-23); beyond e^|x|/2 - 1/(4 e^|x|/2).
  V a = m.abs(x);
  V z = m.mul(x, x);
  std::vector<double> c;
  double fact = 6;
  for (int n = 3; n <= 21; n += 2, fact *= double(n) * double(n - 1)) c.push_back(1.0 / fact);
  V S = m.d(c.back());
  for (size_t j = c.size() - 1; j-- > 0;) S = m.fma(S, z, m.d(c[j]));
  V small = m.fma(m.mul(x, z), S, x);
  V h = half_exp_abs64(m, a);
  V big = copysign64(m, m.sub(h, m.div(m.d(0.25), h)), x);
  return m.sel(isnan64(m, x), x, m.sel(m.lt(a, m.d(1.0)), small, big));
}
V cosh_f64(const M& m, V x) {
  V h = half_exp_abs64(m, m.abs(x));
  return m.sel(isnan64(m, x), x, m.add(h, m.div(m.d(0.25), h)));
}

// log(1 + f) for f = m - 1, m in [sqrt(2)/2, sqrt(2)): f - f^2/2 + s (f^2/2 + R), s = f / (2 + f),
// R = 2 s^2/3 + ... + 2 s^22/23 (|s| <= 0.172: remainder below 1e-19).
V log1pf_series64(const M& m, V f) {
  V hfsq = m.mul(m.d(0.5), m.mul(f, f));
  V s = m.div(f, m.add(m.d(2.0), f));
  V z = m.mul(s, s);
  V R = m.d(2.0 / 23);
  for (int n = 21; n >= 3; n -= 2) R = m.fma(R, z, m.d(2.0 / n));
  R = m.mul(z, R);
  return m.add(m.sub(m.mul(s, m.add(hfsq, R)), hfsq), f);
}
// x = 2^k m with m in [sqrt(2)/2, sqrt(2)) (subnormals scaled by 2^54 first).
constexpr int64_t kOne64 = 0x3ff0000000000000, kSqrtHalf64 = 0x3fe6a09e667f3bcd;
V log_core64(const M& m, V x, V& dk) {
  V tiny = m.lt(x, m.d(0x1p-1022));
  V xs = m.sel(tiny, m.mul(x, m.d(0x1p54)), x);
  V ix = m.add(bits64(m, xs), m.i64(kOne64 - kSqrtHalf64));
  V k = m.sub(m.shr(ix, m.i64(52)), m.sel(tiny, m.i64(1023 + 54), m.i64(1023)));
  V f = m.sub(from_bits64(m, m.add(m.band(ix, m.i64(0xfffffffffffff)), m.i64(kSqrtHalf64))), m.d(1.0));
  dk = m.to(k, DType::f64);
  return log1pf_series64(m, f);
}
V log_specials64(const M& m, V x, V r) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  r = m.sel(m.eq(x, m.d(0.0)), m.d(-inf), r);
  r = m.sel(m.lt(x, m.d(0.0)), m.d(std::numeric_limits<double>::quiet_NaN()), r);
  r = m.sel(m.eq(x, m.d(inf)), x, r);
  return m.sel(isnan64(m, x), x, r);
}
V log_f64(const M& m, V x) {
  V dk;
  V l = log_core64(m, x, dk);
  return log_specials64(m, x, m.fma(dk, m.d(kLn2Hi64), m.fma(dk, m.d(kLn2Lo64), l)));
}
V log2_f64(const M& m, V x) {
  V dk;
  V l = log_core64(m, x, dk);
  // log2(e) in two parts: the product rounded about once, k + that once more
  V t = m.fma(l, m.d(0x1.71547652b82fep0), m.mul(l, m.d(0x1.777d0ffda0d24p-56)));
  return log_specials64(m, x, m.add(dk, t));
}
V log1p_f64(const M& m, V x) {
  // log1p_f32's decomposition: 1 + x = u = 2^k m, log1p x = k ln2 + log(1 + f) + c, c
  // what the rounding of 1 + x lost, relative to u.
  V u = m.add(m.d(1.0), x);
  V iu = m.add(bits64(m, u), m.i64(kOne64 - kSqrtHalf64));
  V k = m.sub(m.shr(iu, m.i64(52)), m.i64(1023));
  V f = m.sub(from_bits64(m, m.add(m.band(iu, m.i64(0xfffffffffffff)), m.i64(kSqrtHalf64))), m.d(1.0));
  V c = m.sel(m.ge(k, m.i64(2)), m.sub(m.d(1.0), m.sub(u, x)), m.sub(x, m.sub(u, m.d(1.0))));
  c = m.div(c, u);
  V dk = m.to(k, DType::f64);
  V r = m.add(log1pf_series64(m, f), m.fma(dk, m.d(kLn2Lo64), c));
  r = m.fma(dk, m.d(kLn2Hi64), r);
  constexpr double inf = std::numeric_limits<double>::infinity();
  r = m.sel(m.eq(x, m.d(inf)), x, r);
  r = m.sel(m.eq(x, m.d(-1.0)), m.d(-inf), r);
  r = m.sel(m.lt(x, m.d(-1.0)), m.d(std::numeric_limits<double>::quiet_NaN()), r);
  r = m.sel(m.eq(x, m.d(0.0)), x, r);
  return m.sel(isnan64(m, x), x, r);
}

// sin, cos and tan in f64: a = |x| reduced to a = q pi/2 + r, r = hi + lo with |r| <= pi/4
// to about 2^-110 relative (any finite a: 2^1023 and the doubles nearest a multiple of
// pi/2, whose remainder is 2^-61 of it, included), then Taylor polynomials in hi with lo's
// first-order term. Payne-Hanek in integers as reduce_pio2's, with the 53-bit mantissa
// times 192 bits of 2/pi taken from the bit that matters (the bits before contribute
// multiples of 4 to a 2/pi): 2^-126 absolute on a 2/pi mod 4, enough where r is 2^-61.
// The 192 bits are picked from the table by a shifter on the word index (a select a bit
// of the index: 99 selects of constants where one a word for each of the 33 positions
// would be 231), no memory.
constexpr uint32_t kTwoOverPi64[39] = {
    0x00000000, 0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1, 0xF534DDC0, 0xDB629599, 0x3C439041,
    0xFE5163AB, 0xDEBBC561, 0xB7246E3A, 0x424DD2E0, 0x06492EEA, 0x09D1921C, 0xFE1DEB1C, 0xB129A73E,
    0xE88235F5, 0x2EBB4484, 0xE99C7026, 0xB45F7E41, 0x3991D639, 0x835339F4, 0x9C845F8B, 0xBDF9283B,
    0x1FF897FF, 0xDE05980F, 0xEF2F118B, 0x5A0A6D1F, 0x6D367ECF, 0x27CB09B7, 0x4F463F66, 0x9E5FEA2D,
    0x7527BAC7, 0xEBE5F17B, 0x3D0739F7, 0x8A5292EA, 0x6BFB5FB1, 0x1F8D5D08, 0x56033046};
struct Quadrant64 {
  V hi, lo;  // f64: r = hi + lo
  V q;       // u64, the low two bits the quadrant
};
Quadrant64 reduce_pio2_64(const M& m, V a) {
  V ia = bits64(m, a);
  // a = mant 2^E, E = be - 1075; 2/pi's bit E - 1 (bit 1 the first after the point) is bit
  // be - 1013 of the table (two zero words first): [9, 1034] for a >= pi/4, inf and NaN.
  V pos = m.max(m.sub(m.shr(ia, m.i64(52)), m.i64(1013)), m.i64(0));
  V idx = m.to(m.shr(pos, m.i64(5)), DType::u32);
  V sh = m.to(m.band(pos, m.i64(31)), DType::u32);
  // words idx .. idx + 6, shifted in by the index's bits from the highest: after the bit of
  // 2^s, 7 + 2^s - 1 words are wanted
  std::vector<V> w;
  for (int j = 0; j < 70; ++j) w.push_back(m.u32(j < 39 ? kTwoOverPi64[j] : 0));
  for (int s = 5; s >= 0; --s) {
    V bit = m.ne(m.band(idx, m.u32(1u << s)), m.u32(0));
    std::vector<V> next;
    for (int j = 0; j < 6 + (1 << s); ++j) next.push_back(m.sel(bit, w[size_t(j + (1 << s))], w[size_t(j)]));
    w = std::move(next);
  }
  // six 32-bit words of the window: (w_j << sh) | (w_j+1 >> (32 - sh)), sh = 0 included
  std::vector<V> f;
  for (int j = 0; j < 6; ++j)
    f.push_back(m.to(m.bor(m.shl(w[size_t(j)], sh), m.shr(m.shr(w[size_t(j + 1)], m.u32(1)), m.sub(m.u32(31), sh))),
                     DType::u64));
  V mant = m.bor(m.band(m.to(ia, DType::u64), m.u64(0xfffffffffffffull)), m.u64(1ull << 52));
  const V m32 = m.u64(0xffffffffull), s32 = m.u64(32);
  V m0 = m.band(mant, m32), m1 = m.shr(mant, s32);
  // mant * window in 32-bit limbs (each row's carries in u64: (2^32 - 1)^2 + 2^32 - 1 fits)
  auto row = [&](V mi) {
    std::vector<V> limb;
    V carry = m.u64(0);
    for (int j = 5; j >= 0; --j) {
      V t = m.add(m.mul(mi, f[size_t(j)]), carry);
      limb.push_back(m.band(t, m32));
      carry = m.shr(t, s32);
    }
    limb.push_back(carry);
    return limb;  // least significant first
  };
  std::vector<V> ra = row(m0), rb = row(m1);
  std::vector<V> p = {ra[0]};
  V carry = m.u64(0);
  for (int j = 1; j <= 5; ++j) {
    V t = m.add(m.add(ra[size_t(j)], rb[size_t(j - 1)]), carry);
    p.push_back(m.band(t, m32));
    carry = m.shr(t, s32);
  }
  // a 2/pi mod 4 = p / 2^190: the quadrant in bits 190-191, the fraction's 126 bits below
  V q = m.band(m.shr(p[5], m.u64(30)), m.u64(3));
  V fhi = m.bor(m.shl(m.band(p[5], m.u64(0x3fffffff)), s32), p[4]);  // 62 bits
  V up = m.shr(fhi, m.u64(61));  // to the nearest quadrant: the fraction in [-1/2, 1/2)
  q = m.add(q, up);
  V shi = m.sub(m.to(fhi, DType::i64), m.to(m.shl(up, m.u64(62)), DType::i64));
  // v = shi 2^64 + p3 2^32 + p2 as exact f64 parts: vh = shi rounded, what that lost (at
  // most 2^9) with p3 exactly in one f64, p2 in another; summed without loss (fast two-sum:
  // the larger part first)
  V vh = m.to(shi, DType::f64);
  V e1 = m.sub(shi, m.to(vh, DType::i64));
  V b = m.mul(m.to(m.add(m.shl(e1, m.i64(32)), m.to(p[3], DType::i64)), DType::f64), m.d(0x1p32));
  V c = m.to(p[2], DType::f64);
  V s1 = m.add(b, c);
  V t1 = m.sub(c, m.sub(s1, b));
  V A = m.mul(vh, m.d(0x1p64));
  V s = m.add(A, s1);
  V t2 = m.sub(s1, m.sub(s, A));
  V sl = m.add(t1, t2);
  // r = (s + sl) 2^-126 pi/2, pi/2 in two parts
  constexpr double kP1 = 0x1.921fb54442d18p0, kP2 = 0x1.1a62633145c07p-54;
  s = m.mul(s, m.d(0x1p-126));
  sl = m.mul(sl, m.d(0x1p-126));
  V rh = m.mul(s, m.d(kP1));
  V rl = m.add(m.fma(s, m.d(kP1), m.neg(rh)), m.fma(s, m.d(kP2), m.mul(sl, m.d(kP1))));
  V hi = m.add(rh, rl);
  V lo = m.sub(rl, m.sub(hi, rh));
  V big = m.ge(a, m.d(0x1.921fb54442d18p-1));  // pi/4 rounded down: below it r = a
  return {m.sel(big, hi, a), m.sel(big, lo, m.d(0.0)), m.sel(big, q, m.u64(0))};
}
// sin(hi + lo) and cos(hi + lo) on |hi| <= pi/4: Taylor to r^19 and r^20 (remainders below
// 2^-66 relative), lo's first-order terms lo cos hi ~ lo (1 - hi^2/2) and -lo sin hi ~ -lo
// hi; cos as fdlibm's 1 - hi^2/2 with the roundings of hi^2 and of 1 - hi^2/2 added back.
std::vector<double> taylor(int first, int last, int sign) {  // sign (-1)^k / n! for n = first + 2k
  std::vector<double> c;
  long double fact = 1;
  for (int n = 1; n <= last; ++n) {
    fact *= n;
    if (n >= first && (n - first) % 2 == 0) c.push_back(double(((n - first) / 2 % 2 ? -sign : sign) / fact));
  }
  return c;
}
V sin_kernel64(const M& m, V hi, V lo) {
  static const std::vector<double> kS = taylor(3, 19, -1);  // -1/3!, 1/5!, ..
  V z = m.mul(hi, hi);
  V tail = m.fma(m.mul(hi, z), poly_of(m, z, kS), m.mul(lo, m.fma(z, m.d(-0.5), m.d(1.0))));
  return m.add(hi, tail);
}
V cos_kernel64(const M& m, V hi, V lo) {
  static const std::vector<double> kC = taylor(4, 20, 1);  // 1/4!, -1/6!, ..
  V z = m.mul(hi, hi);
  V zl = m.fma(hi, hi, m.neg(z));
  V hz = m.mul(z, m.d(0.5));
  V w = m.sub(m.d(1.0), hz);
  V corr = m.sub(m.sub(m.sub(m.d(1.0), w), hz), m.fma(hi, lo, m.mul(zl, m.d(0.5))));
  return m.add(w, m.fma(m.mul(z, z), poly_of(m, z, kC), corr));
}
// sin (cosine: the quadrant + 1) as sincos_f32; tan = sin r / cos r, -cos r / sin r in odd
// quadrants (three roundings where each part is within about half an ulp).
V trig_f64(const M& m, V x, int which) {  // 0 sin, 1 cos, 2 tan
  V a = m.abs(x);
  Quadrant64 red = reduce_pio2_64(m, a);
  V s = sin_kernel64(m, red.hi, red.lo), c = cos_kernel64(m, red.hi, red.lo);
  V r;
  if (which == 2) {
    V odd = m.ne(m.band(red.q, m.u64(1)), m.u64(0));
    r = m.sel(odd, m.div(m.neg(c), s), m.div(s, c));
    r = m.sel(sign_bit_set(m, x), m.neg(r), r);  // tan(-a) = -tan a
  } else {
    V q = which == 1 ? m.add(red.q, m.u64(1)) : red.q;
    r = m.sel(m.ne(m.band(q, m.u64(1)), m.u64(0)), c, s);
    V flip = m.ne(m.band(q, m.u64(2)), m.u64(0));
    if (which == 0) flip = m.bxor(flip, sign_bit_set(m, x));
    r = m.sel(flip, m.neg(r), r);
  }
  return m.sel(m.lt(a, m.d(std::numeric_limits<double>::infinity())), r, m.d(std::numeric_limits<double>::quiet_NaN()));
}

// erfc in f64: |x| < 1: (1 - x) - x R(x^2), erf's R (1 - x exact from 1/2 on); from 1 on
// e^(-x^2) erfcx(|x|) with x^2 = hi + lo exactly, e^-hi = 2^k (1 + p) and e^-lo = 1 - lo
// folded into the one fma, 2^k applied last (one rounding into the subnormals, from 26.5);
// erfcx erf's piece in |x| - 1.75 below 2.5, else G(1/x^2) / |x| with G(u) = x erfcx(x)
// fitted on u in [1/27.5^2, 1/2.5^2] (a Chebyshev interpolant in 60-digit arithmetic, 22
// terms in u - 0.0807: 0.08 of 2^-53 relative; erfc is 0 from 27.3). x < -1: 2 - erfc|x|.
const std::vector<double> kErfcxU = {
    0.5437500712042601,  -0.22904882994704812, 0.25837984863993235, -0.44019823538019043, 0.9622887222638876,
    -2.50096384053942,   7.398975323270332,    -24.236108998772607, 86.24480162539031,    -328.8689506270279,
    1329.7607323779025,  -5658.039707674035,   25298.272942637323,  -117265.86374647955,  525419.8785318878,
    -2560104.0330159105, 20017177.253660843,   -110089944.80247603, -232218449.04863814,  1677540192.3419363,
    45339709548.8389,    -271253889572.58453};
// The polynomial c0 + z P(z) as hi + lo, the last step's rounding kept (c0 - hi is exact
// where hi is within a factor 2 of c0, as for erfcx's fits over their intervals).
std::pair<V, V> poly_split(const M& m, V z, const std::vector<double>& c) {
  V p = poly_of(m, z, std::vector<double>(c.begin() + 1, c.end()));
  V hi = m.fma(z, p, m.d(c[0]));
  return {hi, m.fma(z, p, m.sub(m.d(c[0]), hi))};
}
V erfc_f64(const M& m, V x) {
  V a = m.abs(x);
  V small = m.fma(m.neg(x), poly_of(m, m.mul(x, x), kErfR64), m.sub(m.d(1.0), x));
  V ac = m.min(a, m.d(27.5));  // (and a NaN 1, put back below)
  V hi = m.mul(ac, ac), lo = m.fma(ac, ac, m.neg(hi));
  ExpParts e = exp_reduce64(m, m.neg(hi));
  V q = m.fma(m.neg(lo), e.p, m.sub(e.p, lo));  // (1 + p)(1 - lo) - 1
  // erfcx as h + hl: the fit's last rounding and far's division remainder (exact: an fma)
  // carried, so that e^-x^2's error and the one rounding of h + (q h + hl (1 + q)) are
  // most of what is left: from 1 on, 2.90 ulp measured (8M points) with erfcx rounded to a
  // double first, 2.00 now. The maximum is below 1 (2.57 ulp near x = 0.99: R's Horner
  // rounding, not damped where z = x^2 is near 1, against a result 5x smaller than erf).
  auto [fh, fl] = poly_split(m, m.sub(m.div(m.d(1.0), hi), m.d(0.08066115702479339)), kErfcxU);
  V dh = m.div(fh, ac);
  V dl = m.div(m.add(m.fma(m.neg(dh), ac, fh), fl), ac);
  auto [nh, nl] = poly_split(m, m.sub(ac, m.d(1.75)), kErfcxNear);
  V near = m.lt(ac, m.d(2.5));
  V h = m.sel(near, nh, dh), hl = m.sel(near, nl, dl);
  V tail = scale64(m, m.add(h, m.fma(q, h, m.fma(q, hl, hl))), e.k);
  V big = m.sel(m.lt(x, m.d(0.0)), m.sub(m.d(2.0), tail), tail);
  return m.sel(isnan64(m, x), x, m.sel(m.lt(a, m.d(1.0)), small, big));
}

// x ** y in f64: ln|x| as a double-double to about 2^-100 relative (the error a result
// carries is y ln|x|'s absolute error, and y ln|x| reaches 745), y ln|x| = th + tl, then
// 2^k (1 + p) (1 + tl) from exp's reduction of th; C's special cases as pow_core's.
// |x| = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1 exact, s = f / (2 + f) in two parts, and
// log m = 2s + 2s z Q(z) (z = s^2, Q = 1/3 + z/5 + ..., the series to s^23) with z and Q's
// leading 1/3 in two parts: the sum is short of 2^-62 of log m only by Q's tail's rounding.
V pow_f64(const M& m, V x, V y) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  V ax = m.abs(x);
  V tiny = m.lt(ax, m.d(0x1p-1022));
  V xs = m.sel(tiny, m.mul(ax, m.d(0x1p54)), ax);
  V ix = m.add(bits64(m, xs), m.i64(kOne64 - kSqrtHalf64));
  V kf = m.to(m.sub(m.shr(ix, m.i64(52)), m.sel(tiny, m.i64(1023 + 54), m.i64(1023))), DType::f64);
  V f = m.sub(from_bits64(m, m.add(m.band(ix, m.i64(0xfffffffffffff)), m.i64(kSqrtHalf64))), m.d(1.0));
  V d = m.add(m.d(2.0), f), dl = m.add(m.sub(m.d(2.0), d), f);  // 2 + f = d + dl
  V sh = m.div(f, d);
  V sl = m.div(m.sub(m.fma(m.neg(sh), d, f), m.mul(sh, dl)), d);
  V zh = m.mul(sh, sh);
  V zl = m.fma(sh, sh, m.neg(zh));
  zl = m.fma(m.add(sh, sh), sl, zl);
  V z = zh;
  V Q2 = m.d(1.0 / 23);
  for (int n = 21; n >= 5; n -= 2) Q2 = m.fma(Q2, z, m.d(1.0 / n));
  constexpr double kThirdHi = 1.0 / 3, kThirdLo = 1.850371707708594e-17;  // 1/3 - kThirdHi
  V wq = m.mul(z, Q2);
  V qh = m.add(m.d(kThirdHi), wq);
  V ql = m.add(m.add(m.sub(m.d(kThirdHi), qh), wq), m.d(kThirdLo));
  V zqh = m.mul(zh, qh);
  V zql = m.add(m.fma(zh, qh, m.neg(zqh)), m.fma(zh, ql, m.mul(zl, qh)));
  V uh = m.add(sh, sh), ul = m.add(sl, sl);
  V th = m.mul(uh, zqh);
  V tlo = m.add(m.fma(uh, zqh, m.neg(th)), m.fma(uh, zql, m.mul(ul, zqh)));
  V lh = m.add(uh, th);
  V ll = m.add(m.add(m.sub(uh, lh), th), m.add(ul, tlo));
  // + k ln 2: k kLn2Hi64 exact, |k ln 2| >= |log m| where k is not 0
  V kh = m.mul(kf, m.d(kLn2Hi64));
  V ah = m.add(kh, lh);
  V al = m.add(m.add(m.sub(kh, ah), lh), m.fma(kf, m.d(kLn2Lo64), ll));
  // renormalized (ah carries k ln 2's 32 bits where log m is small): then |tl| is within
  // half an ulp of |t| and e^tl = 1 + tl
  V an = m.add(ah, al);
  al = m.add(m.sub(ah, an), al);
  ah = an;
  // y ln|x|; past |t| = 1100 the result is 0 or inf whatever the low part
  V t = m.mul(y, ah);
  V tl = m.fma(y, al, m.fma(y, ah, m.neg(t)));
  tl = m.sel(m.lt(m.abs(t), m.d(1100.0)), tl, m.d(0.0));
  ExpParts e = exp_parts64(m, t);
  V r = scale64(m, m.add(m.d(1.0), m.add(e.p, m.fma(e.p, tl, tl))), e.k);
  // C's special cases, later ones winning (pow_core's)
  V yint = m.eq(m.floor(y), y);
  V half = m.mul(y, m.d(0.5));
  V yodd = m.band(yint, m.ne(m.floor(half), half));
  V xneg = sign_bit_set(m, x);
  V negate = m.band(xneg, yodd);
  V sgn = m.sel(negate, m.d(-1.0), m.d(1.0));
  r = m.sel(negate, m.neg(r), r);
  V xfinite_nz = m.band(m.lt(ax, m.d(inf)), m.gt(ax, m.d(0.0)));
  V yneg = m.lt(y, m.d(0.0));
  V qnan = m.d(std::numeric_limits<double>::quiet_NaN());
  r = m.sel(m.band(m.band(xneg, m.bxor(yint, m.truth(true))), xfinite_nz), qnan, r);
  r = m.sel(m.eq(ax, m.d(0.0)), copysign64(m, m.sel(yneg, m.d(inf), m.d(0.0)), sgn), r);
  r = m.sel(m.eq(ax, m.d(inf)), copysign64(m, m.sel(yneg, m.d(0.0), m.d(inf)), sgn), r);
  V inf_case = m.sel(m.eq(ax, m.d(1.0)), m.d(1.0), m.sel(m.eq(m.lt(ax, m.d(1.0)), yneg), m.d(inf), m.d(0.0)));
  r = m.sel(m.eq(m.abs(y), m.d(inf)), inf_case, r);
  r = m.sel(m.bor(isnan64(m, x), isnan64(m, y)), qnan, r);
  return m.sel(m.bor(m.eq(y, m.d(0.0)), m.eq(x, m.d(1.0))), m.d(1.0), r);
}

const char* fn_name(math_fn fn) {
  switch (fn) {
    case math_fn::tanh: return "tanh";
    case math_fn::sigmoid: return "sigmoid";
    case math_fn::log1p: return "log1p";
    case math_fn::expm1: return "expm1";
    case math_fn::sinh: return "sinh";
    case math_fn::cosh: return "cosh";
    case math_fn::tan: return "tan";
    case math_fn::atan: return "atan";
    case math_fn::asin: return "asin";
    case math_fn::acos: return "acos";
    case math_fn::cbrt: return "cbrt";
    case math_fn::erfc: return "erfc";
  }
  return "?";
}

// The input as f32: f16 and bf16 widen exactly; anything else is the user's mistake.
V as_f32(V x, const char* what, const char* operand, const Loc& loc) {
  if (x->type.is_ptr())
    throw trace_error(fmt::format("tl::{}: the {} is a tile of pointers; it needs f32, f16 or bf16", what, operand), loc);
  DType d = x->type.dtype;
  if (d == DType::f64)
    throw trace_error(fmt::format("tl::{}: the operands are f64 and f32/f16/bf16 mixed; give them one type", what),
                      loc);
  if (is_fp8(d))
    throw trace_error(fmt::format("tl::{} on {}: FP8 is a storage type; convert with .to<tl::f32>() first", what, name(d)),
                      loc);
  if (!is_float(d))
    throw trace_error(fmt::format("tl::{} needs a floating-point {} (f32, f16 or bf16), got {}; convert with "
                                  ".to<tl::f32>()", what, operand, name(d)), loc);
  return d == DType::f32 ? x : cast(x, DType::f32, false, loc);
}

V back(V r, DType d, const Loc& loc) { return d == DType::f32 ? r : cast(r, d, false, loc); }

}  // namespace

Value* math_unary(math_fn fn, Value* x, const Loc& loc) {
  const char* what = fn_name(fn);
  if (!x->type.is_ptr() && x->type.dtype == DType::f64) {
    M m{loc};
    switch (fn) {
      case math_fn::tanh: return tanh_f64(m, x);
      case math_fn::sigmoid: return sigmoid_f64(m, x);
      case math_fn::log1p: return log1p_f64(m, x);
      case math_fn::expm1: return expm1_f64(m, x);
      case math_fn::sinh: return sinh_f64(m, x);
      case math_fn::cosh: return cosh_f64(m, x);
      case math_fn::atan: return atan_any(m, x);
      case math_fn::asin: return asin_any(m, x);
      case math_fn::acos: return acos_any(m, x);
      case math_fn::cbrt: return cbrt_f64(m, x);
      case math_fn::tan: return trig_f64(m, x, 2);
      case math_fn::erfc: return erfc_f64(m, x);
    }
  }
  V xf = as_f32(x, what, "tile", loc);
  M m{loc};
  V r = nullptr;
  switch (fn) {
    case math_fn::tanh: r = tanh_f32(m, xf); break;
    case math_fn::sigmoid: r = sigmoid_f32(m, xf); break;
    case math_fn::log1p: r = log1p_f32(m, xf); break;
    case math_fn::expm1: r = expm1_f32(m, xf); break;
    case math_fn::sinh: r = sinh_f32(m, xf); break;
    case math_fn::cosh: r = cosh_f32(m, xf); break;
    case math_fn::tan: r = tan_f32(m, xf); break;
    case math_fn::atan: r = atan_any(m, xf); break;
    case math_fn::asin: r = asin_any(m, xf); break;
    case math_fn::acos: r = acos_any(m, xf); break;
    case math_fn::cbrt: r = cbrt_f32(m, xf); break;
    case math_fn::erfc: r = erfc_f32(m, xf); break;
  }
  return back(r, x->type.dtype, loc);
}

Value* math_atan2(Value* y, Value* x, const Loc& loc) {
  if (!x->type.is_ptr() && !y->type.is_ptr() && x->type.dtype == DType::f64 && y->type.dtype == DType::f64)
    return atan2_any(M{loc}, y, x);
  V yf = as_f32(y, "atan2", "first operand (y)", loc);
  V xf = as_f32(x, "atan2", "second operand (x)", loc);
  if (x->type.dtype != y->type.dtype)
    throw trace_error(fmt::format("tl::atan2: y is {} and x is {}; give both one type", name(y->type.dtype),
                                  name(x->type.dtype)), loc);
  M m{loc};
  return back(atan2_any(m, yf, xf), x->type.dtype, loc);
}

Value* math_pow(Value* x, Value* y, const Loc& loc) {
  if (y->type.is_ptr()) throw trace_error("tl::pow: the exponent is a tile of pointers", loc);
  DType yd = y->type.dtype;
  if (!x->type.is_ptr() && (x->type.dtype == DType::f64 || yd == DType::f64)) {
    // an f64 base takes any float exponent or an integer one up to i32 (each exact in f64;
    // a C++ double exponent arrives as f32)
    bool ok_y = (is_float(yd) && !is_fp8(yd)) || (is_int(yd) && yd != DType::i1 && bit_width(yd) <= 32);
    if (x->type.dtype != DType::f64 || !ok_y)
      throw trace_error(fmt::format("tl::pow: the base is {} and the exponent {}; an f64 base takes a float or "
                                    "i32 exponent, and an f64 exponent an f64 base", name(x->type.dtype), name(yd)),
                        loc);
    return pow_f64(M{loc}, x, yd == DType::f64 ? y : cast(y, DType::f64, false, loc));
  }
  V xf = as_f32(x, "pow", "base", loc);
  V yw = nullptr;
  if (is_int(yd) && yd != DType::i1) {
    if (bit_width(yd) > 32)
      throw trace_error(fmt::format("tl::pow: an integer exponent is i32 or narrower (Triton's pow(float, int)), got {}",
                                    name(yd)), loc);
    yw = cast(y, DType::f64, false, loc);  // exact
  } else {
    yw = cast(as_f32(y, "pow", "exponent", loc), DType::f64, false, loc);
  }
  M m{loc};
  return back(pow_core(m, xf, yw), x->type.dtype, loc);
}

Value* math_clamp(Value* x, Value* lo, Value* hi, propagate_nan p, const Loc& loc) {
  if (!x->type.is_ptr() && !lo->type.is_ptr() && !hi->type.is_ptr() && x->type.dtype == DType::f64 &&
      lo->type.dtype == DType::f64 && hi->type.dtype == DType::f64) {
    M m{loc};
    V r = m.min(m.max(x, lo), hi);
    return p == propagate_nan::all ? m.sel(m.isnan(x), x, r) : r;
  }
  V xf = as_f32(x, "clamp", "tile", loc);
  V lf = as_f32(lo, "clamp", "lower bound", loc);
  V hf = as_f32(hi, "clamp", "upper bound", loc);
  if (lo->type.dtype != x->type.dtype || hi->type.dtype != x->type.dtype)
    throw trace_error(fmt::format("tl::clamp: x is {}, the bounds {} and {}; give all three one type", name(x->type.dtype),
                                  name(lo->type.dtype), name(hi->type.dtype)), loc);
  M m{loc};
  V r = m.min(m.max(xf, lf), hf);
  if (p == propagate_nan::all) r = m.sel(m.isnan(xf), xf, r);
  return back(r, x->type.dtype, loc);
}

}  // namespace tl::detail

namespace tl::detail {

// tl::exp, log, log2, sin and cos of f32, f16 and bf16 (computed in f32): the
// compositions above, on every target; tl::exp2 of those is the IR's op (the target's
// own instruction), tl::erf of those the lowering's. f64 exp, exp2, log, log2, erf, sin
// and cos are the f64 compositions; integers and pointers go to the IR's op, which says
// what is wrong with them.
Value* precise_math(Op op, Value* x, const Loc& loc) {
  const DType d = x->type.dtype;
  if (!x->type.is_ptr() && d == DType::f64) {
    M m{loc};
    switch (op) {
      case Op::exp: return exp_f64(m, x);
      case Op::exp2: return exp2_f64(m, x);
      case Op::erf: return erf_f64(m, x);
      case Op::log: return log_f64(m, x);
      case Op::log2: return log2_f64(m, x);
      case Op::sin: return trig_f64(m, x, 0);
      case Op::cos: return trig_f64(m, x, 1);
      default: return unary(op, x, loc);
    }
  }
  if (x->type.is_ptr() || !is_float(d) || is_fp8(d) || d == DType::f64 || op == Op::exp2 || op == Op::erf)
    return unary(op, x, loc);
  V xf = d == DType::f32 ? x : cast(x, DType::f32, false, loc);
  M m{loc};
  V r = nullptr;
  switch (op) {
    case Op::exp: r = exp_f32(m, xf); break;
    case Op::log: r = log_f32(m, xf); break;
    case Op::log2: r = log2_f32(m, xf); break;
    case Op::sin: r = sincos_f32(m, xf, false); break;
    case Op::cos: r = sincos_f32(m, xf, true); break;
    default: return unary(op, x, loc);
  }
  return back(r, d, loc);
}

}  // namespace tl::detail

namespace tl::detail {

namespace {
const char* fast_name(Op op) {
  switch (op) {
    case Op::exp: return "fast_expf";
    case Op::log: return "fast_logf";
    case Op::sin: return "fast_sinf";
    case Op::cos: return "fast_cosf";
    default: return "fast_dividef";
  }
}
// The `f` functions take f32 (f16 and bf16 are widened by the lowering, as for every
// elementwise op); f64 has no fast form.
void check_fast_operand(Value* x, const char* what, const Loc& loc) {
  if (x->type.is_ptr() || x->type.dtype == DType::f64 || !is_float(x->type.dtype) || is_fp8(x->type.dtype))
    throw trace_error(fmt::format("tl::{} takes f32, f16 or bf16 (the f32 approximation), got {}", what,
                                  x->type.str()), loc);
}
}  // namespace

Value* fast_math(Op op, Value* x, const Loc& loc) {
  check_fast_operand(x, fast_name(op), loc);
  return unary(op, x, loc);
}

// The IR's div with i0 = 1: the GPU lowerings' approximate division (afn: NVPTX
// div.approx.f32, AMDGPU v_rcp_f32 and a multiply); the CPU divides exactly.
Value* fast_divide(Value* x, Value* y, const Loc& loc) {
  check_fast_operand(x, "fast_dividef", loc);
  check_fast_operand(y, "fast_dividef", loc);
  Value* r = binary(Op::div, x, y, loc);
  r->def->i0 = 1;
  return r;
}

}  // namespace tl::detail

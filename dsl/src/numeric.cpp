// The generic narrow-float encoder/decoder behind tl/numeric.hpp.
//
// Encoding works on "magnitude codes": for every binary float format the codes of the
// non-negative finite values, read as unsigned integers, are in the same order as the
// values, and consecutive codes are one quantum apart. With E the exponent of |x| (clamped
// below at the format's minimum normal exponent emin) and n = |x| / 2^(E - man_bits)
// rounded to an integer, the code is ((E - emin) << man_bits) + n. This one formula covers
// subnormals (E clamped, n < 2^man_bits), normals, the carry of a mantissa that rounds up
// into the next binade (n == 2^(man_bits+1)) and the subnormal -> normal boundary, so the
// rounding is a single integer round-half-even and overflow is a single compare against
// the largest finite code.
#include "tl/numeric.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "tl/error.hpp"

namespace tl {
namespace {

constexpr uint32_t sign_bit(const FloatFormat& f) { return 1u << (f.bits() - 1); }
constexpr uint32_t exp_ones(const FloatFormat& f) { return (1u << f.exp_bits) - 1; }
constexpr uint32_t man_mask(const FloatFormat& f) { return (1u << f.man_bits) - 1; }

// The magnitude code of the largest finite value.
constexpr uint32_t max_finite_code(const FloatFormat& f) {
  switch (f.nan) {
    case NanEncoding::ieee: return (exp_ones(f) << f.man_bits) - 1;  // below the inf code
    case NanEncoding::all_ones: return sign_bit(f) - 2;              // below the NaN code
    case NanEncoding::neg_zero: return sign_bit(f) - 1;              // every positive code
  }
  return 0;
}

// The quiet NaN that `x` (a NaN) becomes.
uint32_t nan_code(const FloatFormat& f, double x) {
  const uint32_t sign = std::signbit(x) ? sign_bit(f) : 0;
  switch (f.nan) {
    case NanEncoding::ieee: {
      // Keep the sign and the top payload bits, and set the quiet bit (the mantissa's top
      // bit) so that a payload whose kept bits are all zero cannot turn into inf.
      const uint64_t b = std::bit_cast<uint64_t>(x);
      const uint32_t payload = static_cast<uint32_t>((b & ((uint64_t{1} << 52) - 1)) >> (52 - f.man_bits));
      return sign | (exp_ones(f) << f.man_bits) | payload | (1u << (f.man_bits - 1));
    }
    case NanEncoding::all_ones: return sign | (sign_bit(f) - 1);
    case NanEncoding::neg_zero: return sign_bit(f);  // the only NaN; its sign bit is not a sign
  }
  return 0;
}

uint32_t overflow_code(const FloatFormat& f, bool negative, bool saturate) {
  const uint32_t sign = negative ? sign_bit(f) : 0;
  if (saturate) return sign | max_finite_code(f);
  if (f.has_inf()) return sign | (exp_ones(f) << f.man_bits);
  return nan_code(f, negative ? -std::numeric_limits<double>::quiet_NaN()
                              : std::numeric_limits<double>::quiet_NaN());
}

[[noreturn]] void not_a(const char* what, DType t) {
  throw error(std::string("tl numeric: ") + std::string(name(t)) + " is not " + what);
}

}  // namespace

FloatFormat float_format(DType t) {
  switch (t) {
    case DType::f16: return {5, 10, 15, NanEncoding::ieee};
    case DType::bf16: return {8, 7, 127, NanEncoding::ieee};
    case DType::f32: return {8, 23, 127, NanEncoding::ieee};
    case DType::f8e4m3fn: return {4, 3, 7, NanEncoding::all_ones};
    case DType::f8e5m2: return {5, 2, 15, NanEncoding::ieee};
    case DType::f8e4m3fnuz: return {4, 3, 8, NanEncoding::neg_zero};
    case DType::f8e5m2fnuz: return {5, 2, 16, NanEncoding::neg_zero};
    default: not_a("a float format of at most 32 bits", t);
  }
}

double decode(const FloatFormat& f, uint32_t bits) {
  bits &= f.bits() == 32 ? ~0u : (1u << f.bits()) - 1;
  const bool negative = (bits & sign_bit(f)) != 0;
  const uint32_t mag = bits & (sign_bit(f) - 1);
  const uint32_t e = mag >> f.man_bits;
  const uint32_t m = mag & man_mask(f);

  auto nan_with_payload = [&] {
    // Place the code's mantissa at the top of the double's, so that encode() gets it back.
    const uint64_t b = (negative ? uint64_t{1} << 63 : 0) | (uint64_t{0x7ff} << 52) |
                       (uint64_t{m} << (52 - f.man_bits));
    return std::bit_cast<double>(b);
  };
  switch (f.nan) {
    case NanEncoding::ieee:
      if (e == exp_ones(f)) {
        if (m == 0) return negative ? -HUGE_VAL : HUGE_VAL;
        return nan_with_payload();
      }
      break;
    case NanEncoding::all_ones:
      if (mag == sign_bit(f) - 1) return nan_with_payload();
      break;
    case NanEncoding::neg_zero:
      if (bits == sign_bit(f)) return std::numeric_limits<double>::quiet_NaN();
      break;
  }
  const int emin = 1 - f.bias;
  const double v = e == 0 ? std::ldexp(double(m), emin - f.man_bits)
                          : std::ldexp(double(m | (1u << f.man_bits)), int(e) - f.bias - f.man_bits);
  return negative ? -v : v;
}

uint32_t encode(const FloatFormat& f, double x, bool saturate) {
  const bool negative = std::signbit(x);
  const uint32_t sign = negative ? sign_bit(f) : 0;
  const uint32_t zero = f.has_neg_zero() ? sign : 0;
  if (std::isnan(x)) return nan_code(f, x);
  if (std::isinf(x)) return overflow_code(f, negative, saturate);
  const double a = std::fabs(x);
  if (a == 0) return zero;

  int e2;
  std::frexp(a, &e2);  // a = mant * 2^e2, mant in [0.5, 1)
  const int emin = 1 - f.bias;
  const int exp = std::max(e2 - 1, emin);  // the binade, clamped to the subnormal one
  // From here on even the smallest mantissa lands past every finite code; stopping here
  // also keeps the shift below small.
  if (exp - emin >= (1 << f.exp_bits)) return overflow_code(f, negative, saturate);

  // q = a / quantum is exact: a power-of-two scaling that ends in [0, 2^(man_bits+1)).
  const double q = std::ldexp(a, f.man_bits - exp);
  const double floor_q = std::floor(q);
  const double frac = q - floor_q;  // exact: q has at most 53 significant bits
  uint64_t n = static_cast<uint64_t>(floor_q);
  // Round half to even, by hand so that the caller's FP rounding mode cannot change it.
  if (frac > 0.5 || (frac == 0.5 && (n & 1))) ++n;

  const uint64_t mag = (uint64_t(exp - emin) << f.man_bits) + n;
  if (mag > max_finite_code(f)) return overflow_code(f, negative, saturate);
  if (mag == 0) return zero;  // underflow
  return sign | static_cast<uint32_t>(mag);
}

double max_finite(DType t) {
  if (t == DType::f64) return DBL_MAX;
  const FloatFormat f = float_format(t);
  return decode(f, max_finite_code(f));
}

float to_float(bfloat16 v) { return std::bit_cast<float>(uint32_t{v.bits} << 16); }
float to_float(half v) { return static_cast<float>(decode(float_format(DType::f16), v.bits)); }

double to_double(DType fp8, uint8_t bits) {
  if (!is_fp8(fp8)) not_a("an FP8 type", fp8);
  return decode(float_format(fp8), bits);
}

bfloat16 to_bf16(double x) {
  return bfloat16{static_cast<uint16_t>(encode(float_format(DType::bf16), x, false))};
}

half to_f16(double x) {
  return half{static_cast<uint16_t>(encode(float_format(DType::f16), x, false))};
}

uint8_t to_fp8(DType fp8, double x) {
  if (!is_fp8(fp8)) not_a("an FP8 type", fp8);
  return static_cast<uint8_t>(encode(float_format(fp8), x, true));
}

// ---- OCP MX ----
namespace {
constexpr double kE2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
}

double e2m1_to_double(uint8_t code) {
  double v = kE2m1[code & 7];
  return code & 8 ? -v : v;
}

uint8_t to_e2m1(double x) {
  const uint8_t sign = std::signbit(x) ? 8 : 0;
  const double a = std::fabs(x);
  if (!(a <= 6)) return sign | 7;  // past the largest, infinities and NaN: saturate
  // The nearest of the eight magnitudes; a tie goes to the even code (mantissa bit 0).
  uint8_t best = 0;
  for (uint8_t c = 1; c < 8; ++c) {
    double d = std::fabs(kE2m1[c] - a), db = std::fabs(kE2m1[best] - a);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  return sign | best;
}

double e8m0_to_double(uint8_t code) {
  return code == 255 ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, int(code) - 127);
}

uint8_t to_e8m0(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
  if (bits > 0x7f800000u) return 255;  // NaN
  const uint32_t exp = bits >> 23, man = bits & 0x7fffffu;
  // The exponent's implicit leading 1 is the odd last bit of a normal value, so a tie
  // (mantissa exactly half) rounds up; below 2^-126 there is none and a tie stays.
  const bool up = exp == 0 ? man > 0x400000u : man >= 0x400000u;
  return uint8_t(std::min<uint32_t>(exp + (up ? 1 : 0), 254));
}

}  // namespace tl

// The differential tester's own arithmetic on element values: wrapping integers at a
// dtype's width, rounding to f16/bf16/f32 and the host bit patterns of f16/bf16. Written
// from the IEEE 754 definitions, not taken from tl (tl/numeric.hpp, codegen/): the
// reference must not share a rounding bug with the compiler it checks.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tl/dtype.hpp"

namespace fuzzdiff {

using tl::DType;

// The canonical int64 of an integer dtype's bits: sign-extended for signed types,
// zero-extended for unsigned ones (u64 keeps its bits), 0/1 for i1.
inline int64_t wrap(DType t, uint64_t x) {
  if (t == DType::i1) return int64_t(x & 1);
  int w = tl::bit_width(t);
  if (w == 64) return int64_t(x);
  uint64_t m = (uint64_t(1) << w) - 1;
  x &= m;
  if (tl::is_signed(t) && (x >> (w - 1))) x |= ~m;
  return int64_t(x);
}
inline int64_t int_min(DType t) { return tl::is_signed(t) ? -(int64_t(1) << (tl::bit_width(t) - 1)) : 0; }
inline uint64_t int_max_u(DType t) {
  int w = tl::bit_width(t);
  if (tl::is_signed(t)) return (uint64_t(1) << (w - 1)) - 1;
  return w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
}

struct FloatFormat {
  int mant;  // stored fraction bits
  int bias;
  int exp_bits;
};
inline FloatFormat format_of(DType t) {
  switch (t) {
    case DType::f16: return {10, 15, 5};
    case DType::bf16: return {7, 127, 8};
    case DType::f32: return {23, 127, 8};
    default: return {52, 1023, 11};
  }
}
// Precision p (with the implicit bit): half an ulp is 2^-p relative.
inline int precision(DType t) { return format_of(t).mant + 1; }
inline double max_finite(DType t) {
  FloatFormat f = format_of(t);
  return std::ldexp(2.0 - std::ldexp(1.0, -f.mant), f.bias);
}
inline double min_normal(DType t) { return std::ldexp(1.0, 1 - format_of(t).bias); }

// x rounded to the nearest value of `t` (ties to even), overflowing to infinity as IEEE
// does: from the binary form, in long double so that a 64-bit integer rounds once.
inline long double round_to(long double x, DType t) {
  if (t == DType::f64) return (long double)(double)x;
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  FloatFormat f = format_of(t);
  int emin = 1 - f.bias;
  long double a = std::fabs(x);
  int e = std::ilogb(a);
  if (e < emin) e = emin;  // subnormals: the spacing stops shrinking
  long double q = std::ldexp(a, f.mant - e);
  long double r = std::ldexp(std::nearbyint(q), e - f.mant);  // default mode: ties to even
  if (r > (long double)fuzzdiff::max_finite(t)) r = std::numeric_limits<long double>::infinity();
  return std::copysign(r, x);
}
inline double round_d(double x, DType t) { return double(round_to(x, t)); }

// Bits of a value already representable in f16 or bf16 (NaN as the quiet NaN).
inline uint16_t encode16(double r, DType t) {
  FloatFormat f = format_of(t);
  uint16_t sign = std::signbit(r) ? uint16_t(1u << 15) : 0;
  uint16_t exp_all = uint16_t(((1u << f.exp_bits) - 1) << f.mant);
  if (std::isnan(r)) return uint16_t(exp_all | (1u << (f.mant - 1)));
  if (std::isinf(r)) return uint16_t(sign | exp_all);
  double a = std::fabs(r);
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < 1 - f.bias) return uint16_t(sign | uint16_t(std::ldexp(a, f.bias - 1 + f.mant)));
  uint16_t mant = uint16_t(std::ldexp(a, f.mant - e) - std::ldexp(1.0, f.mant));
  return uint16_t(sign | (uint16_t(e + f.bias) << f.mant) | mant);
}
inline double decode16(uint16_t bits, DType t) {
  FloatFormat f = format_of(t);
  bool neg = bits >> 15;
  int exp = (bits >> f.mant) & ((1 << f.exp_bits) - 1);
  int mant = bits & ((1 << f.mant) - 1);
  double v;
  if (exp == (1 << f.exp_bits) - 1) v = mant ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exp == 0) v = std::ldexp(double(mant), 1 - f.bias - f.mant);
  else v = std::ldexp(1.0 + std::ldexp(double(mant), -f.mant), exp - f.bias);
  return neg ? -v : v;
}

// An element of a host buffer of dtype t, read as the reference holds it.
inline int64_t read_int(const void* base, size_t i, DType t) {
  const char* p = static_cast<const char*>(base) + i * tl::byte_width(t);
  uint64_t bits = 0;
  std::memcpy(&bits, p, tl::byte_width(t));
  return wrap(t, bits);
}
inline double read_float(const void* base, size_t i, DType t) {
  const char* p = static_cast<const char*>(base) + i * tl::byte_width(t);
  if (t == DType::f32) { float v; std::memcpy(&v, p, 4); return v; }
  if (t == DType::f64) { double v; std::memcpy(&v, p, 8); return v; }
  uint16_t b; std::memcpy(&b, p, 2); return decode16(b, t);
}
inline void write_elem(void* base, size_t i, DType t, int64_t iv, double fv) {
  char* p = static_cast<char*>(base) + i * tl::byte_width(t);
  if (t == DType::f32) { float v = float(fv); std::memcpy(p, &v, 4); return; }
  if (t == DType::f64) { std::memcpy(p, &fv, 8); return; }
  if (t == DType::f16 || t == DType::bf16) { uint16_t b = encode16(fv, t); std::memcpy(p, &b, 2); return; }
  std::memcpy(p, &iv, tl::byte_width(t));  // little-endian: the low bytes
}

}  // namespace fuzzdiff

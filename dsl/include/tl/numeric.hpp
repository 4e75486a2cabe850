// Host-side conversions for the narrow float types (bf16, f16 and the four FP8 formats).
// These are the reference that tests compare device results against, so every rounding
// is exact: values are rounded once, from the double, to nearest with ties to even.
// (Going through float first would round twice and get some ties wrong.)
//
// All formats are handled by one generic encoder/decoder parameterised by FloatFormat;
// the named functions below are thin wrappers over it.
#pragma once

#include <cstdint>

#include "tl/dtype.hpp"

namespace tl {

// How a format spells NaN.
enum class NanEncoding : uint8_t {
  ieee,      // exponent all ones, mantissa nonzero (and all ones / zero mantissa is inf)
  all_ones,  // only exponent and mantissa all ones (OCP e4m3fn: 0x7f, 0xff); no inf
  neg_zero,  // the one code "sign set, all else zero" (the fnuz formats: 0x80); no inf, no -0
};

// A binary floating-point format of 1 + exp_bits + man_bits <= 32 bits.
struct FloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  NanEncoding nan;
  constexpr bool has_inf() const { return nan == NanEncoding::ieee; }
  constexpr bool has_neg_zero() const { return nan != NanEncoding::neg_zero; }
  constexpr int bits() const { return 1 + exp_bits + man_bits; }
};

// The format of f16, bf16, f32 or an FP8 dtype; throws tl::error for any other dtype.
FloatFormat float_format(DType t);

// Decodes `bits` (the low fmt.bits() bits; higher bits are ignored). Exact: every value
// of every supported format is a double. NaN codes decode to a NaN of the same sign whose
// top mantissa bits are the code's mantissa (the payload is kept, quiet or not).
double decode(const FloatFormat& fmt, uint32_t bits);

// Encodes `x`, rounding to nearest, ties to even, exactly from the double.
// Overflow (a finite value that rounds past the largest finite one, or +-inf):
//   saturate=true  -> +-max finite;
//   saturate=false -> +-inf where the format has inf, else NaN.
// NaN -> a quiet NaN: for ieee formats sign kept, quiet bit set, the double's top payload
// bits kept; all_ones formats: sign | all ones; neg_zero formats: the single NaN code.
// Zero: -0.0 keeps its sign where the format has -0, else becomes +0 (the fnuz formats).
uint32_t encode(const FloatFormat& fmt, double x, bool saturate);

// Largest finite value of a float dtype (f16, bf16, f32, f64, FP8).
double max_finite(DType t);

// ---- the named conversions ----
// (There is deliberately no to_double(bfloat16) / to_double(half): the tests' support
// header has its own in namespace tltest, and argument-dependent lookup would make the
// two ambiguous. to_float is exact for both.)
float to_float(bfloat16 v);  // exact
float to_float(half v);      // exact
// Decodes an FP8 code; `fp8` must be one of the four FP8 dtypes (else tl::error).
double to_double(DType fp8, uint8_t bits);
template <DType D> double to_double(float8<D> v) { return to_double(D, v.bits); }
// Exact, like the bf16 and f16 ones: every FP8 value (NaN payloads aside) is a float.
// tl::to_float(tl::fp8<tl::DType::f8e4m3fn>(0.3)) == 0.3125f.
template <DType D> float to_float(float8<D> v) { return static_cast<float>(to_double(D, v.bits)); }

// RNE; overflow goes to inf, NaN stays a (quiet) NaN.
bfloat16 to_bf16(double x);
// RNE; overflow goes to inf, subnormals rounded exactly, NaN stays a (quiet) NaN.
half to_f16(double x);
// RNE and SATURATING: overflow and +-inf give +-max finite; NaN gives the format's NaN;
// -0.0 gives 0x00 in the fnuz formats (they have no -0).
uint8_t to_fp8(DType fp8, double x);

// The typed spelling of to_fp8. (There is no bf16(double) / f16(double): tl::bf16 and
// tl::f16 are the tile aliases of tl/tile.hpp.)
template <DType D> float8<D> fp8(double x) { return float8<D>{to_fp8(D, x)}; }

// ---- the OCP MX storage types (tl::f4e2m1, tl::e8m0), as the device converts them ----
// An e2m1 code (the low 4 bits of `code`): 0, 0.5, 1, 1.5, 2, 3, 4, 6, and code | 8 their
// negatives (8 is -0). Exact.
double e2m1_to_double(uint8_t code);
// x as an e2m1 code: RNE, SATURATING (+-inf and past +-6 give +-6); e2m1 has no NaN, a NaN
// gives +-6 too; -0.0 gives 8.
uint8_t to_e2m1(double x);
// Two values packed as OCP MX stores them: `first` in bits 0-3, `second` in bits 4-7.
inline float4_e2m1x2 fp4x2(double first, double second) {
  return float4_e2m1x2{uint8_t(to_e2m1(first) | (to_e2m1(second) << 4))};
}
// 2^(code - 127); code 255 is NaN (OCP). Exact.
double e8m0_to_double(uint8_t code);
// An f32 as an e8m0 code, as PyTorch's float8_e8m0fnu: the sign ignored, the exponent
// rounded up when the mantissa is at least half (more than half below 2^-126), clamped to
// 0 (2^-127) below and SATURATING at 254 (2^127, infinities too); NaN gives 255.
uint8_t to_e8m0(float x);

}  // namespace tl

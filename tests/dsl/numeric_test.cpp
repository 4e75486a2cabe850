// Tests for the host reference conversions of tl/numeric.hpp: exhaustive round trips over
// every code of the 8- and 16-bit formats, ties-to-even at every midpoint between adjacent
// codes, saturation, NaN and signed-zero handling, and a cross-check of the generic
// encoder against the hardware's own double -> float (and, where the compiler has it,
// double -> _Float16) conversion.
#include "tl/numeric.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tl/error.hpp"

namespace {

using tl::DType;

constexpr DType kFp8[] = {DType::f8e4m3fn, DType::f8e5m2, DType::f8e4m3fnuz, DType::f8e5m2fnuz};

std::string fmt_name(DType t) { return std::string(tl::name(t)); }

// The code that decode(encode(code)) is expected to give back. All codes round-trip except
// IEEE signalling NaNs (mantissa top bit clear), which come back quieted: a reference
// conversion must not produce signalling NaNs. (-0 has a code only where the format has
// -0, and there it round-trips; the fnuz formats' 0x80 is their NaN and round-trips too.)
uint32_t expected_round_trip(const tl::FloatFormat& f, uint32_t code) {
  const uint32_t sign = 1u << (f.bits() - 1);
  const uint32_t exp_ones = (1u << f.exp_bits) - 1;
  const uint32_t mag = code & (sign - 1);
  if (f.nan == tl::NanEncoding::ieee && (mag >> f.man_bits) == exp_ones && (mag & ((1u << f.man_bits) - 1)))
    return code | (1u << (f.man_bits - 1));
  return code;
}

// Exhaustive: every code decodes and encodes back (see expected_round_trip), and decoding
// is monotonic in the magnitude code.
void check_round_trip(const tl::FloatFormat& f, bool saturate, const std::string& what) {
  const uint32_t n = 1u << f.bits();
  int failures = 0;
  for (uint32_t code = 0; code < n && failures < 10; ++code) {
    const double v = tl::decode(f, code);
    const uint32_t back = tl::encode(f, v, saturate);
    if (std::isinf(v) && saturate) continue;  // inf saturates: checked separately
    if (back != expected_round_trip(f, code)) {
      ADD_FAILURE() << what << ": code 0x" << std::hex << code << " decodes to " << v << " encodes to 0x" << back;
      ++failures;
    }
  }
  // Positive codes in order have strictly increasing values (NaN and inf excluded).
  double prev = -1;
  for (uint32_t code = 0; code < n / 2; ++code) {
    const double v = tl::decode(f, code);
    if (std::isnan(v) || std::isinf(v)) break;
    ASSERT_GT(v, prev) << what << " code 0x" << std::hex << code;
    prev = v;
  }
}

// Every midpoint between adjacent finite codes of one sign rounds to the even code, and
// the doubles just either side of it round to the nearer code. Covers the 0 / smallest
// subnormal boundary, the subnormal / normal boundary and every binade boundary.
void check_ties(const tl::FloatFormat& f, bool saturate, const std::string& what) {
  const uint32_t sign = 1u << (f.bits() - 1);
  int failures = 0;
  for (uint32_t lo = 0; lo + 1 < sign && failures < 10; ++lo) {
    const uint32_t hi = lo + 1;
    const double a = tl::decode(f, lo), b = tl::decode(f, hi);
    if (std::isnan(b) || std::isinf(b)) break;  // past the largest finite value
    const double mid = (a + b) / 2;  // exact: a and b have few significant bits
    ASSERT_GT(mid, a);
    ASSERT_LT(mid, b);
    const uint32_t even = (lo & 1) ? hi : lo;
    for (const double s : {1.0, -1.0}) {
      const uint32_t sb = s < 0 ? sign : 0;
      // -0 is not a code of the fnuz formats: a negative value rounding to zero gives +0.
      auto code = [&](uint32_t mag) { return mag == 0 && !f.has_neg_zero() ? 0u : (sb | mag); };
      const uint32_t got_mid = tl::encode(f, s * mid, saturate);
      const uint32_t got_below = tl::encode(f, s * std::nextafter(mid, 0.0), saturate);
      const uint32_t got_above = tl::encode(f, s * std::nextafter(mid, HUGE_VAL), saturate);
      if (got_mid != code(even) || got_below != code(lo) || got_above != code(hi)) {
        ADD_FAILURE() << what << ": between 0x" << std::hex << lo << " and 0x" << hi << " sign " << s
                      << ": mid->0x" << got_mid << " below->0x" << got_below << " above->0x" << got_above;
        ++failures;
      }
    }
  }
}

TEST(Numeric, KnownMaxima) {
  EXPECT_EQ(tl::max_finite(DType::f8e4m3fn), 448.0);
  EXPECT_EQ(tl::max_finite(DType::f8e5m2), 57344.0);
  EXPECT_EQ(tl::max_finite(DType::f8e4m3fnuz), 240.0);
  EXPECT_EQ(tl::max_finite(DType::f8e5m2fnuz), 57344.0);
  EXPECT_EQ(tl::max_finite(DType::f16), 65504.0);
  EXPECT_EQ(tl::max_finite(DType::bf16), 0x1.fep127);
  EXPECT_EQ(tl::max_finite(DType::f32), double(std::numeric_limits<float>::max()));
  EXPECT_EQ(tl::max_finite(DType::f64), std::numeric_limits<double>::max());
  EXPECT_THROW(tl::max_finite(DType::i32), tl::error);
}

TEST(Numeric, KnownFp8Codes) {
  // 1.0, the smallest subnormal, the smallest normal and the largest finite value.
  struct Row { DType t; uint8_t one, min_sub; double min_sub_v; uint8_t min_norm; double min_norm_v; uint8_t max; };
  const Row rows[] = {
      {DType::f8e4m3fn, 0x38, 0x01, 0x1p-9, 0x08, 0x1p-6, 0x7e},
      {DType::f8e5m2, 0x3c, 0x01, 0x1p-16, 0x04, 0x1p-14, 0x7b},
      {DType::f8e4m3fnuz, 0x40, 0x01, 0x1p-10, 0x08, 0x1p-7, 0x7f},
      {DType::f8e5m2fnuz, 0x40, 0x01, 0x1p-17, 0x04, 0x1p-15, 0x7f},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(fmt_name(r.t));
    EXPECT_EQ(tl::to_double(r.t, r.one), 1.0);
    EXPECT_EQ(tl::to_fp8(r.t, 1.0), r.one);
    EXPECT_EQ(tl::to_double(r.t, r.min_sub), r.min_sub_v);
    EXPECT_EQ(tl::to_double(r.t, r.min_norm), r.min_norm_v);
    EXPECT_EQ(tl::to_double(r.t, r.max), tl::max_finite(r.t));
    EXPECT_EQ(tl::to_double(r.t, uint8_t(r.one | 0x80)), -1.0);
  }
  EXPECT_EQ(tl::to_double(DType::f8e4m3fn, 0x07), 7 * 0x1p-9);  // largest subnormal
  EXPECT_TRUE(std::isinf(tl::to_double(DType::f8e5m2, 0x7c)));
  EXPECT_TRUE(std::isinf(tl::to_double(DType::f8e5m2, 0xfc)) && tl::to_double(DType::f8e5m2, 0xfc) < 0);
  // e4m3fn's 0x7f would be 480 in an IEEE layout; here it is NaN, and 0x78..0x7e are finite.
  EXPECT_TRUE(std::isnan(tl::to_double(DType::f8e4m3fn, 0x7f)));
  EXPECT_EQ(tl::to_double(DType::f8e4m3fn, 0x78), 256.0);
  EXPECT_TRUE(std::isnan(tl::to_double(DType::f8e4m3fnuz, 0x80)));
  EXPECT_TRUE(std::isnan(tl::to_double(DType::f8e5m2fnuz, 0x80)));
  // Worked ties in e4m3fn: 16 = 0x58, 18 = 0x59, 20 = 0x5a.
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, 17.0), 0x58);  // tie -> even 0x58
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, 19.0), 0x5a);  // tie -> even 0x5a
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, 18.5), 0x59);
  // Typed spellings agree with the untyped ones.
  EXPECT_EQ(tl::fp8<DType::f8e5m2>(1.0).bits, 0x3c);
  EXPECT_EQ(tl::to_double(tl::float8<DType::f8e5m2fnuz>{0x40}), 1.0);
}

TEST(Numeric, Fp8ExhaustiveRoundTrip) {
  for (DType t : kFp8) {
    SCOPED_TRACE(fmt_name(t));
    check_round_trip(tl::float_format(t), true, fmt_name(t));
    // The public entry points agree with the generic ones on every code.
    for (int c = 0; c < 256; ++c) {
      const double v = tl::to_double(t, uint8_t(c));
      const uint32_t want = expected_round_trip(tl::float_format(t), c);
      if (std::isinf(v)) continue;
      EXPECT_EQ(tl::to_fp8(t, v), want) << "code " << c;
    }
  }
}

// tl::to_float of a tl::float8<D>, the host spelling that reads like to_float(bfloat16):
// exact on every code (the float holds the value the double does, and converts back to
// the same code), NaN codes give NaN.
template <DType D> void check_fp8_to_float() {
  SCOPED_TRACE(fmt_name(D));
  for (int c = 0; c < 256; ++c) {
    const float f = tl::to_float(tl::float8<D>{uint8_t(c)});
    const double d = tl::to_double(D, uint8_t(c));
    if (std::isnan(d)) {
      EXPECT_TRUE(std::isnan(f)) << "code " << c;
      continue;
    }
    EXPECT_EQ(double(f), d) << "code " << c;
    EXPECT_EQ(std::signbit(f), std::signbit(d)) << "code " << c;
    if (!std::isinf(f)) EXPECT_EQ(tl::to_fp8(D, f), expected_round_trip(tl::float_format(D), c)) << "code " << c;
  }
}

TEST(Numeric, Fp8ToFloat) {
  check_fp8_to_float<DType::f8e4m3fn>();
  check_fp8_to_float<DType::f8e5m2>();
  check_fp8_to_float<DType::f8e4m3fnuz>();
  check_fp8_to_float<DType::f8e5m2fnuz>();
  EXPECT_EQ(tl::to_float(tl::fp8<DType::f8e4m3fn>(0.3)), 0.3125f);
  EXPECT_EQ(tl::to_float(tl::fp8<DType::f8e4m3fnuz>(-1000.0)), -240.0f);  // saturated
  EXPECT_EQ(tl::to_float(tl::fp8<DType::f8e5m2>(57344.0)), 57344.0f);
}

TEST(Numeric, Fp8TiesToEven) {
  for (DType t : kFp8) {
    SCOPED_TRACE(fmt_name(t));
    check_ties(tl::float_format(t), true, fmt_name(t));
  }
}

TEST(Numeric, Fp8Saturation) {
  for (DType t : kFp8) {
    SCOPED_TRACE(fmt_name(t));
    const uint8_t max = tl::to_fp8(t, tl::max_finite(t));
    const uint8_t neg_max = tl::to_fp8(t, -tl::max_finite(t));
    EXPECT_EQ(neg_max, max | 0x80);
    EXPECT_EQ(tl::to_double(t, max), tl::max_finite(t));
    EXPECT_EQ(tl::to_double(t, neg_max), -tl::max_finite(t));
    for (double big : {1e6, 1e300, std::numeric_limits<double>::max(), HUGE_VAL,
                       tl::max_finite(t) * 1.0625, std::nextafter(tl::max_finite(t), HUGE_VAL)}) {
      EXPECT_EQ(tl::to_fp8(t, big), max) << big;
      EXPECT_EQ(tl::to_fp8(t, -big), neg_max) << -big;
    }
  }
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, 1e6), 0x7e);
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, -HUGE_VAL), 0xfe);
  EXPECT_EQ(tl::to_fp8(DType::f8e5m2, HUGE_VAL), 0x7b);
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fnuz, -1e6), 0xff);
  EXPECT_EQ(tl::to_fp8(DType::f8e5m2fnuz, 1e6), 0x7f);
  // Without saturation the generic encoder overflows to inf, or to NaN where there is none.
  EXPECT_EQ(tl::encode(tl::float_format(DType::f8e5m2), 1e6, false), 0x7cu);
  EXPECT_EQ(tl::encode(tl::float_format(DType::f8e4m3fn), -1e6, false), 0xffu);
  EXPECT_EQ(tl::encode(tl::float_format(DType::f8e4m3fnuz), 1e6, false), 0x80u);
}

TEST(Numeric, Fp8NanAndZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, nan), 0x7f);
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fn, -nan), 0xff);
  EXPECT_EQ(tl::to_fp8(DType::f8e5m2, nan), 0x7e);
  EXPECT_EQ(tl::to_fp8(DType::f8e5m2, -nan), 0xfe);
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fnuz, nan), 0x80);
  EXPECT_EQ(tl::to_fp8(DType::f8e4m3fnuz, -nan), 0x80);
  EXPECT_EQ(tl::to_fp8(DType::f8e5m2fnuz, -nan), 0x80);
  // A signalling NaN still encodes as a NaN (e5m2: exponent all ones, mantissa nonzero).
  const double snan = std::numeric_limits<double>::signaling_NaN();
  const uint8_t s = tl::to_fp8(DType::f8e5m2, snan);
  EXPECT_EQ(s & 0x7c, 0x7c);
  EXPECT_NE(s & 0x03, 0);
  for (DType t : kFp8) {
    SCOPED_TRACE(fmt_name(t));
    const bool fnuz = t == DType::f8e4m3fnuz || t == DType::f8e5m2fnuz;
    EXPECT_EQ(tl::to_fp8(t, 0.0), 0x00);
    EXPECT_EQ(tl::to_fp8(t, -0.0), fnuz ? 0x00 : 0x80);
    EXPECT_EQ(tl::to_fp8(t, -1e-30), fnuz ? 0x00 : 0x80);  // underflow keeps the sign where it can
    EXPECT_EQ(tl::to_fp8(t, 1e-30), 0x00);
    // Every NaN code decodes to NaN, and nothing else does.
    int nans = 0;
    for (int c = 0; c < 256; ++c) nans += std::isnan(tl::to_double(t, uint8_t(c)));
    EXPECT_EQ(nans, t == DType::f8e5m2 ? 6 : fnuz ? 1 : 2);
  }
  EXPECT_THROW(tl::to_fp8(DType::f16, 1.0), tl::error);
  EXPECT_THROW(tl::to_double(DType::bf16, 0), tl::error);
}

TEST(Numeric, Bf16Exhaustive) {
  const tl::FloatFormat f = tl::float_format(DType::bf16);
  check_round_trip(f, false, "bf16");
  check_ties(f, false, "bf16");
  // to_float is the top half of an f32, for every code.
  for (uint32_t c = 0; c < 65536; ++c) {
    const float v = tl::to_float(tl::bfloat16{uint16_t(c)});
    const double d = tl::decode(f, c);
    if (std::isnan(d)) {
      EXPECT_TRUE(std::isnan(v));
      EXPECT_EQ(std::bit_cast<uint32_t>(v), c << 16);
    } else {
      EXPECT_EQ(double(v), d) << c;
      EXPECT_EQ(tl::to_bf16(v).bits, c);
    }
  }
}

TEST(Numeric, Bf16KnownValues) {
  EXPECT_EQ(tl::to_bf16(1.0).bits, 0x3f80);
  EXPECT_EQ(tl::to_bf16(1.00390625).bits, 0x3f80);       // 1 + 2^-8: the midpoint, ties to even
  EXPECT_EQ(tl::to_bf16(1.01171875).bits, 0x3f82);       // 1 + 3 * 2^-8: tie, up to even
  EXPECT_EQ(tl::to_bf16(1.0 + 0x1p-8 + 0x1p-30).bits, 0x3f81);  // just past the tie. Rounding
  // through float first would drop the 2^-30 and then round the tie to even: 0x3f80. Wrong.
  EXPECT_EQ(tl::to_bf16(-2.0).bits, 0xc000);
  EXPECT_EQ(tl::to_bf16(0x1p-133).bits, 0x0001);         // smallest subnormal
  EXPECT_EQ(tl::to_bf16(0x1p-134).bits, 0x0000);         // half of it: tie to even zero
  EXPECT_EQ(tl::to_bf16(-0.0).bits, 0x8000);
  EXPECT_EQ(tl::to_bf16(1e39).bits, 0x7f80);             // overflow -> inf
  EXPECT_EQ(tl::to_bf16(-HUGE_VAL).bits, 0xff80);
  EXPECT_EQ(tl::to_bf16(0x1.ffp127).bits, 0x7f80);       // max + half ulp: tie rounds to inf
  EXPECT_EQ(tl::to_bf16(std::nextafter(0x1.ffp127, 0.0)).bits, 0x7f7f);
  EXPECT_EQ(tl::to_bf16(std::numeric_limits<double>::quiet_NaN()).bits, 0x7fc0);
  EXPECT_EQ(tl::to_bf16(-std::numeric_limits<double>::quiet_NaN()).bits, 0xffc0);
  // A NaN whose payload lies only in low bits still becomes a NaN, never inf.
  const double low_payload_nan = std::bit_cast<double>(uint64_t{0x7ff0000000000001});
  EXPECT_EQ(tl::to_bf16(low_payload_nan).bits, 0x7fc0);
  EXPECT_EQ(tl::to_float(tl::bfloat16{0x3f80}), 1.0f);
}

TEST(Numeric, F16Exhaustive) {
  const tl::FloatFormat f = tl::float_format(DType::f16);
  check_round_trip(f, false, "f16");
  check_ties(f, false, "f16");
  for (uint32_t c = 0; c < 65536; ++c) {
    const double d = tl::decode(f, c);
    if (std::isnan(d)) continue;
    EXPECT_EQ(double(tl::to_float(tl::half{uint16_t(c)})), d);
  }
}

TEST(Numeric, F16KnownValues) {
  EXPECT_EQ(tl::to_f16(1.0).bits, 0x3c00);
  EXPECT_EQ(tl::to_f16(65504.0).bits, 0x7bff);
  EXPECT_EQ(tl::to_f16(65519.99).bits, 0x7bff);
  EXPECT_EQ(tl::to_f16(65520.0).bits, 0x7c00);  // max + half ulp: tie rounds to inf
  EXPECT_EQ(tl::to_f16(-1e9).bits, 0xfc00);
  EXPECT_EQ(tl::to_f16(0x1p-24).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(tl::to_f16(0x1p-25).bits, 0x0000);  // tie -> even zero
  EXPECT_EQ(tl::to_f16(0x1.8p-24).bits, 0x0002);  // 1.5 * min: tie -> even 2
  EXPECT_EQ(tl::to_f16(0x1.ff8p-15).bits, 0x03ff);  // largest subnormal
  EXPECT_EQ(tl::to_f16(0x1.ffcp-15).bits, 0x0400);  // it + half ulp: tie -> even, the min normal
  EXPECT_EQ(tl::to_f16(0x1p-14).bits, 0x0400);
  EXPECT_EQ(tl::to_f16(-0x1p-26).bits, 0x8000);
  EXPECT_EQ(tl::to_f16(std::numeric_limits<double>::quiet_NaN()).bits, 0x7e00);
  EXPECT_EQ(tl::to_float(tl::half{0x3555}), 0x1.554p-2f);
}

// The generic encoder against the hardware's double -> float conversion (RNE), on random
// doubles spread over f32's normal, subnormal, underflow and overflow ranges.
TEST(Numeric, MatchesHardwareF32) {
  const tl::FloatFormat f = tl::float_format(DType::f32);
  std::mt19937_64 rng(12345);
  int failures = 0;
  for (int i = 0; i < 2'000'000 && failures < 10; ++i) {
    const uint64_t r = rng();
    const int exp = int(r % 300) - 160;  // 2^-160 .. 2^139
    uint64_t mant = rng() & ((uint64_t{1} << 52) - 1);
    if (i % 4 == 0) mant = (mant & ~((uint64_t{1} << 29) - 1)) | (uint64_t{1} << 28);  // a tie for normals
    const double x = std::bit_cast<double>((uint64_t(exp + 1023) << 52) | mant) * ((r >> 63) ? -1 : 1);
    const uint32_t want = std::bit_cast<uint32_t>(static_cast<float>(x));
    const uint32_t got = tl::encode(f, x, false);
    if (got != want) {
      ADD_FAILURE() << std::hexfloat << x << ": got 0x" << std::hex << got << " want 0x" << want;
      ++failures;
    }
  }
}

#if defined(__FLT16_MAX__)
// Likewise against the compiler's double -> _Float16 (libgcc rounds directly from double).
TEST(Numeric, MatchesCompilerF16) {
  std::mt19937_64 rng(777);
  int failures = 0;
  for (int i = 0; i < 1'000'000 && failures < 10; ++i) {
    const uint64_t r = rng();
    const int exp = int(r % 50) - 30;  // 2^-30 .. 2^19
    uint64_t mant = rng() & ((uint64_t{1} << 52) - 1);
    if (i % 4 == 0) mant = (mant & ~((uint64_t{1} << 42) - 1)) | (uint64_t{1} << 41);  // a tie for normals
    const double x = std::bit_cast<double>((uint64_t(exp + 1023) << 52) | mant) * ((r >> 63) ? -1 : 1);
    const uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(x));
    const uint16_t got = tl::to_f16(x).bits;
    if (got != want) {
      ADD_FAILURE() << std::hexfloat << x << ": got 0x" << std::hex << got << " want 0x" << want;
      ++failures;
    }
  }
}
#endif

// The result must not depend on the caller's floating-point rounding mode.
TEST(Numeric, IndependentOfRoundingMode) {
  const int old = std::fegetround();
  std::fesetround(FE_UPWARD);
  const uint16_t a = tl::to_bf16(1.00390625).bits;
  const uint16_t b = tl::to_f16(0x1p-25).bits;
  const uint8_t c = tl::to_fp8(DType::f8e4m3fn, 17.0);
  std::fesetround(FE_TOWARDZERO);
  const uint16_t d = tl::to_bf16(1.01171875).bits;
  std::fesetround(old);
  EXPECT_EQ(a, 0x3f80);
  EXPECT_EQ(b, 0x0000);
  EXPECT_EQ(c, 0x58);
  EXPECT_EQ(d, 0x3f82);
}

}  // namespace

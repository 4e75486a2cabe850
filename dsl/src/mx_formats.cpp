// The OCP MX formats while tracing: conversions of tl::f4e2m1 (two e2m1 values a byte) and
// tl::e8m0 (scale codes), and tl::dot_scaled (Triton's tl.dot_scaled).
//
// Conversions are traced as integer, float and shape ops that every target already
// lowers. tl::dot_scaled is checked here and recorded as it was written, a dot of five
// operands (docs/ir.md): gfx950's scaled MFMA takes it as it is, and every other target
// has it upcast to bf16 and multiplied by an ordinary dot by the compiler
// (codegen/passes/decompose_scaled_dots.cpp, Triton's DecomposeScaledBlocked).
#include <fmt/format.h>

#include <string>
#include <tuple>

#include "dsl/src/trace.hpp"

namespace tl::detail {

using ir::Value;

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// A scalar of dtype t broadcast by the binary op it meets.
Value* k(DType t, int64_t v, const Loc& loc) { return constant(t, double(v), v, loc); }
Value* u32(int64_t v, const Loc& loc) { return k(DType::u32, v, loc); }
Value* i32(int64_t v, const Loc& loc) { return k(DType::i32, v, loc); }

Value* band(Value* a, Value* b, const Loc& loc) { return binary(Op::band, a, b, loc); }
Value* bor(Value* a, Value* b, const Loc& loc) { return binary(Op::bor, a, b, loc); }
Value* shl(Value* a, Value* b, const Loc& loc) { return binary(Op::shl, a, b, loc); }
Value* shr(Value* a, Value* b, const Loc& loc) { return binary(Op::shr, a, b, loc); }
Value* add(Value* a, Value* b, const Loc& loc) { return binary(Op::add, a, b, loc); }
Value* lt(Value* a, Value* b, const Loc& loc) { return compare(CmpPred::lt, a, b, loc); }
Value* eq(Value* a, Value* b, const Loc& loc) { return compare(CmpPred::eq, a, b, loc); }
// where() needs both branches of the condition's shape.
Value* select(Value* c, Value* a, Value* b, const Loc& loc) {
  return ::tl::detail::where(c, broadcast_to(a, c->type.shape, loc), broadcast_to(b, c->type.shape, loc), loc);
}

// The leading dims folded into one, so that the packing's join or split (one more dim)
// stays within the three dims a tile may have.
Value* as_2d(Value* a, const Loc& loc) {
  const Shape& s = a->type.shape;
  int rows = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) rows *= s[i];
  return reshape(a, {rows, s.back()}, loc);
}

// e2m1 codes (u8, one a byte) as f32: 0.5 * m below 1, else 2^(e - 1) (1 + m / 2), built
// as f32 bits: the exponent and mantissa fields are the code's shifted.
Value* e2m1_codes_to_f32(Value* codes, const Loc& loc) {
  Value* c = cast(codes, DType::u32, false, loc);
  Value* em = band(c, u32(7, loc), loc);
  Value* subnormal = binary(Op::mul, band(em, u32(1, loc), loc), u32(0x3F000000, loc), loc);  // 0 or 0.5
  Value* normal = add(shl(em, u32(22, loc), loc), u32(0x3F000000, loc), loc);
  Value* mag = select(lt(em, u32(2, loc), loc), subnormal, normal, loc);
  Value* sign = shl(band(c, u32(8, loc), loc), u32(28, loc), loc);
  return cast(bor(mag, sign, loc), DType::f32, true, loc);
}

// f32 as e2m1 codes (u8), rounded to nearest even and saturating at +-6 (a NaN too),
// exactly, from the f32's bits: an integer round at the mantissa bit e2m1 keeps.
Value* f32_to_e2m1_codes(Value* x, const Loc& loc) {
  Value* bits = cast(x, DType::u32, true, loc);
  Value* a = band(bits, u32(0x7FFFFFFF, loc), loc);
  Value* exp = binary(Op::sub, cast(shr(a, u32(23, loc), loc), DType::i32, false, loc), i32(127, loc), loc);
  // 1 <= |x|: the f32 mantissa rounded to its top bit, the carry into the exponent
  // included ((biased exponent << 1 | m) - (126 << 1) is e2m1's code); past 6 saturates.
  Value* odd = band(shr(a, u32(22, loc), loc), u32(1, loc), loc);
  Value* r = add(add(a, u32(0x1FFFFF, loc), loc), odd, loc);
  Value* normal = binary(Op::min, binary(Op::sub, shr(r, u32(22, loc), loc), u32(252, loc), loc), u32(7, loc), loc);
  // 1/4 < |x| < 1 (exponent -2 or -1): the code is |x| / 0.5 rounded to nearest even, the
  // significand (with its leading 1) shifted right by 22 - exponent.
  Value* sig = bor(band(a, u32(0x7FFFFF, loc), loc), u32(0x800000, loc), loc);
  Value* s = select(lt(exp, i32(-1, loc), loc), u32(24, loc), u32(23, loc), loc);
  Value* half = binary(Op::sub, shl(u32(1, loc), binary(Op::sub, s, u32(1, loc), loc), loc), u32(1, loc), loc);
  Value* sub = shr(add(add(sig, half, loc), band(shr(sig, s, loc), u32(1, loc), loc), loc), s, loc);
  // |x| <= 1/4 rounds to 0 (a tie at 1/4 to the even code 0).
  Value* mag = select(lt(exp, i32(0, loc), loc), sub, normal, loc);
  mag = select(lt(u32(0x3E800000, loc), a, loc), mag, u32(0, loc), loc);
  Value* sign = band(shr(bits, u32(28, loc), loc), u32(8, loc), loc);
  return cast(bor(mag, sign, loc), DType::u8, false, loc);
}

// e8m0 codes as f32: 2^(code - 127), bits code << 23; code 0 (2^-127) is f32's subnormal
// 0x00400000, code 255 NaN.
Value* e8m0_to_f32(Value* scale, const Loc& loc) {
  Value* c = cast(cast(scale, DType::u8, true, loc), DType::u32, false, loc);
  Value* bits = shl(c, u32(23, loc), loc);
  bits = select(eq(c, u32(0, loc), loc), u32(0x00400000, loc), bits, loc);
  bits = select(eq(c, u32(255, loc), loc), u32(0x7FC00000, loc), bits, loc);
  return cast(bits, DType::f32, true, loc);
}

// f32 as e8m0 codes, PyTorch's float8_e8m0fnu rule (tl/numeric.hpp, to_e8m0): the
// exponent field, up by one when the mantissa is at least half (more than half for f32's
// subnormals, whose implicit bit is 0), saturating at 254; NaN 255; the sign ignored.
Value* f32_to_e8m0(Value* x, const Loc& loc) {
  Value* a = band(cast(x, DType::u32, true, loc), u32(0x7FFFFFFF, loc), loc);
  Value* exp = shr(a, u32(23, loc), loc);
  Value* man = band(a, u32(0x7FFFFF, loc), loc);
  Value* up = select(eq(exp, u32(0, loc), loc), compare(CmpPred::gt, man, u32(0x400000, loc), loc),
                     compare(CmpPred::ge, man, u32(0x400000, loc), loc), loc);
  Value* code = binary(Op::min, add(exp, cast(up, DType::u32, false, loc), loc), u32(254, loc), loc);
  code = select(lt(u32(0x7F800000, loc), a, loc), u32(255, loc), code, loc);
  return cast(cast(code, DType::u8, false, loc), DType::e8m0, true, loc);
}

bool narrow_or_f32(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

}  // namespace

Value* mx_convert(Value* a, DType to, const Loc& loc) {
  const DType from = a->type.dtype;
  auto refuse = [&] {
    return trace_error(fmt::format("conversion of {} to {}: {} converts only to and from f32, bf16 and f16 (bitcast "
                                   "to u8 for its codes)", name(from), name(to), name(is_mx(from) ? from : to)), loc);
  };
  if (is_mx(from) && is_mx(to)) throw refuse();
  const DType other = is_mx(from) ? to : from;
  if (!narrow_or_f32(other)) throw refuse();
  if (from == DType::e8m0) return cast(e8m0_to_f32(a, loc), to, false, loc);
  if (to == DType::e8m0) return f32_to_e8m0(cast(a, DType::f32, false, loc), loc);

  const Shape& s = a->type.shape;
  if (s.empty())
    throw trace_error(fmt::format("conversion of {} to {}: an f4e2m1 scalar would be half a byte; convert a tile "
                                  "whose last dim holds the pairs", name(from), name(to)), loc);
  if (from == DType::f4e2m1) {
    // Each byte's low nibble is the element before its high one (OCP MX's order).
    Value* bytes = as_2d(cast(a, DType::u8, true, loc), loc);
    Value* lo = band(bytes, k(DType::u8, 15, loc), loc);
    Value* hi = shr(bytes, k(DType::u8, 4, loc), loc);
    Value* codes = interleave(lo, hi, loc);
    Shape out = s;
    out.back() *= 2;
    return cast(reshape(e2m1_codes_to_f32(codes, loc), out, loc), to, false, loc);
  }
  if (s.back() < 2)
    throw trace_error(fmt::format("conversion of {} {} to f4e2m1: two values make a byte, the last dim must be even",
                                  name(from), shape_str(s)), loc);
  Value* codes = f32_to_e2m1_codes(as_2d(cast(a, DType::f32, false, loc), loc), loc);
  const int rows = codes->type.shape[0], n = codes->type.shape[1];
  auto [lo, hi] = split(reshape(codes, {rows, n / 2, 2}, loc), loc);
  Value* bytes = bor(lo, shl(hi, k(DType::u8, 4, loc), loc), loc);
  Shape out = s;
  out.back() /= 2;
  return cast(reshape(bytes, out, loc), DType::f4e2m1, true, loc);
}

// ------------------------------------------------------------------- tl::dot_scaled

namespace {

enum class MxFormat { e2m1, e4m3, e5m2, bf16 };

MxFormat parse_format(std::string_view f, const char* which, const Loc& loc) {
  if (f == "e2m1") return MxFormat::e2m1;
  if (f == "e4m3") return MxFormat::e4m3;
  if (f == "e5m2") return MxFormat::e5m2;
  if (f == "bf16") return MxFormat::bf16;
  throw trace_error(fmt::format("tl::dot_scaled: unknown format \"{}\" for {} (formats: \"e2m1\", \"e4m3\", "
                                "\"e5m2\", \"bf16\")", f, which), loc);
}

// The operand's dtype as its format names it (u8 stands for the codes of any 8-bit one,
// as Triton's uint8 operands).
DType format_dtype(MxFormat f) {
  switch (f) {
    case MxFormat::e2m1: return DType::f4e2m1;
    case MxFormat::e4m3: return DType::f8e4m3fn;
    case MxFormat::e5m2: return DType::f8e5m2;
    case MxFormat::bf16: return DType::bf16;
  }
  return DType::bf16;
}

}  // namespace

Value* dot_scaled(Value* a, Value* a_scale, std::string_view a_format, Value* b, Value* b_scale,
                  std::string_view b_format, Value* acc, const Loc& loc) {
  const MxFormat fa = parse_format(a_format, "a", loc), fb = parse_format(b_format, "b", loc);
  auto operands = [&] { return fmt::format("a is {} \"{}\", b is {} \"{}\"", a->type.str(), a_format, b->type.str(),
                                           b_format); };
  for (auto [x, f, which] : {std::tuple{a, fa, "a"}, std::tuple{b, fb, "b"}}) {
    const DType want = format_dtype(f), d = x->type.dtype;
    if (x->type.is_ptr() || x->type.rank() != 2)
      throw trace_error(fmt::format("tl::dot_scaled: the operands must be 2-D tiles ({})", operands()), loc);
    if (d != want && !(d == DType::u8 && bit_width(want) == 8))
      throw trace_error(fmt::format("tl::dot_scaled: format \"{}\" takes {}{} tiles, {} is {} ({})",
                                    which == std::string_view("a") ? a_format : b_format, name(want),
                                    bit_width(want) == 8 ? " (or u8 codes)" : "", which, name(d), operands()), loc);
  }
  // e2m1 packs two values a byte along K: a [M, K / 2], b [K / 2, N].
  const int M = a->type.shape[0], N = b->type.shape[1];
  const int K = a->type.shape[1] * (fa == MxFormat::e2m1 ? 2 : 1);
  const int Kb = b->type.shape[0] * (fb == MxFormat::e2m1 ? 2 : 1);
  if (K != Kb)
    throw trace_error(fmt::format("tl::dot_scaled: a holds {} elements along K and b {} ({}; \"e2m1\" packs two a "
                                  "byte along K)", K, Kb, operands()), loc);
  if (K % 32 != 0)
    throw trace_error(fmt::format("tl::dot_scaled: K = {} is not a multiple of 32, the elements one scale covers ({})",
                                  K, operands()), loc);
  if (M < 16 || N < 16)
    throw trace_error(fmt::format("tl::dot_scaled: M and N must be at least 16 ({})", operands()), loc);
  for (auto [s, rows, which] : {std::tuple{a_scale, M, "a_scale"}, std::tuple{b_scale, N, "b_scale"}}) {
    if (!s) continue;
    const Shape want{rows, K / 32};
    if (s->type.is_ptr() || (s->type.dtype != DType::e8m0 && s->type.dtype != DType::u8) || s->type.shape != want)
      throw trace_error(fmt::format("tl::dot_scaled: {} must be e8m0 (or u8) {}, one scale per 32 elements of K for "
                                    "each {}, got {} ({})", which, shape_str(want),
                                    which == std::string_view("a_scale") ? "row of a" : "column of b", s->type.str(),
                                    operands()), loc);
  }
  // The operands as their formats' dtypes (u8 codes bitcast), the scales as e8m0; an absent
  // scale is code 127 (2^0) everywhere, which the upcast recognizes and skips. (A transposed
  // operand, Tutorial 10's u8 B written tl::trans(w), is bitcast below its transpose: cast's
  // rule, trans(bitcast(load)), the form the pipeliner stages.)
  a = cast(a, format_dtype(fa), true, loc);
  b = cast(b, format_dtype(fb), true, loc);
  auto scale = [&](Value* s, int rows) {
    if (s) return cast(s, DType::e8m0, true, loc);
    return full({rows, K / 32}, DType::e8m0, 127.0, 127, loc);
  };
  Value* sa = scale(a_scale, M);
  Value* sb = scale(b_scale, N);
  const ir::Type acc_type{DType::f32, DType::f32, {M, N}};
  if (!acc) acc = full({M, N}, DType::f32, 0.0, 0, loc);
  else if (acc->type != acc_type)
    throw trace_error(fmt::format("tl::dot_scaled: the accumulator must be {}, got {} ({})", acc_type.str(),
                                  acc->type.str(), operands()), loc);
  return Trace::current(loc).emit1(Op::dot, {a, b, acc, sa, sb}, acc_type, loc);
}

}  // namespace tl::detail

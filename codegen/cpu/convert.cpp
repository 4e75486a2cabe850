// Narrow float conversions as integer IR. The encoder follows tl::encode (numeric.cpp):
// for non-negative values the codes are ordered like the values and consecutive codes
// are one quantum apart, so above the format's smallest normal the rounded code is the
// f32 magnitude bits shifted right with a round-half-even increment (the carry into the
// exponent and the overflow to "past max finite" come out of the integer add), and below
// it the code is |x| / quantum rounded to an integer, which a power-of-two scaling and
// the 2^23 trick compute exactly.
#include "codegen/cpu/convert.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>

#include <cmath>

#include "tl/error.hpp"
#include "tl/numeric.hpp"

namespace tl::codegen {
namespace {

using llvm::ConstantFP;
using llvm::ConstantInt;
using llvm::IRBuilderBase;
using llvm::Type;
using llvm::Value;

// `elem` with the vector shape of `like` (or `elem` itself for scalars).
Type* shaped(Type* like, Type* elem) {
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(like)) return llvm::VectorType::get(elem, vt->getElementCount());
  return elem;
}

FloatFormat narrow_format(DType t) {
  if (t != DType::f16 && t != DType::bf16 && !is_fp8(t))
    throw compile_error(std::string("tl cpu: ") + std::string(name(t)) + " is not a narrow float");
  return float_format(t);
}

uint32_t max_finite_code(const FloatFormat& f) {
  const uint32_t sign_bit = 1u << (f.bits() - 1);
  switch (f.nan) {
    case NanEncoding::ieee: return (((1u << f.exp_bits) - 1) << f.man_bits) - 1;
    case NanEncoding::all_ones: return sign_bit - 2;
    case NanEncoding::neg_zero: return sign_bit - 1;
  }
  return 0;
}

}  // namespace

Value* decode_to_f32(IRBuilderBase& b, Value* code, DType from) {
  const FloatFormat f = narrow_format(from);
  Type* i32 = shaped(code->getType(), b.getInt32Ty());
  Type* f32 = shaped(code->getType(), b.getFloatTy());
  auto K = [&](uint32_t v) { return ConstantInt::get(i32, v); };
  Value* c = b.CreateZExt(code, i32);
  // bf16 is the top half of an f32, subnormals, inf and NaN payloads included.
  if (from == DType::bf16) return b.CreateBitCast(b.CreateShl(c, 16), f32);

  const int M = f.man_bits;
  const uint32_t sign_bit = 1u << (f.bits() - 1);
  const uint32_t man_mask = (1u << M) - 1;
  const uint32_t exp_ones = (1u << f.exp_bits) - 1;
  Value* sign = b.CreateShl(b.CreateAnd(c, K(sign_bit)), 32 - f.bits());
  Value* mag = b.CreateAnd(c, K(sign_bit - 1));
  Value* e = b.CreateLShr(mag, M);
  Value* normal = b.CreateAdd(b.CreateShl(mag, 23 - M), K(uint32_t(127 - f.bias) << 23));
  // A narrow subnormal m * 2^(emin - M) is a normal f32 (f16 and FP8), so the product is exact.
  Value* sub = b.CreateBitCast(
      b.CreateFMul(b.CreateUIToFP(mag, f32), ConstantFP::get(f32, std::ldexp(1.0, 1 - f.bias - M))), i32);
  Value* r = b.CreateSelect(b.CreateICmpEQ(e, K(0)), sub, normal);
  switch (f.nan) {
    case NanEncoding::ieee: {
      Value* special = b.CreateOr(K(0x7f800000u), b.CreateShl(b.CreateAnd(mag, K(man_mask)), 23 - M));
      r = b.CreateSelect(b.CreateICmpEQ(e, K(exp_ones)), special, r);
      break;
    }
    case NanEncoding::all_ones:
      r = b.CreateSelect(b.CreateICmpEQ(mag, K(sign_bit - 1)), K(0x7f800000u | (man_mask << (23 - M))), r);
      break;
    case NanEncoding::neg_zero:
      break;
  }
  r = b.CreateOr(r, sign);
  // The fnuz formats' single NaN is "negative zero"; tl::decode gives the default quiet NaN.
  if (f.nan == NanEncoding::neg_zero) r = b.CreateSelect(b.CreateICmpEQ(c, K(sign_bit)), K(0x7fc00000u), r);
  return b.CreateBitCast(r, f32);
}

Value* encode_from_f32(IRBuilderBase& b, Value* x, DType to, bool saturate) {
  const FloatFormat f = narrow_format(to);
  Type* i32 = shaped(x->getType(), b.getInt32Ty());
  Type* f32 = shaped(x->getType(), b.getFloatTy());
  Type* out = shaped(x->getType(), b.getIntNTy(f.bits()));
  auto K = [&](uint32_t v) { return ConstantInt::get(i32, v); };
  const int M = f.man_bits;
  const int shift = 23 - M;
  const uint32_t sign_bit = 1u << (f.bits() - 1);
  const uint32_t man_mask = (1u << M) - 1;
  const uint32_t exp_ones = (1u << f.exp_bits) - 1;
  const uint32_t max_code = max_finite_code(f);

  Value* u = b.CreateBitCast(x, i32);
  Value* a = b.CreateAnd(u, K(0x7fffffffu));
  Value* sign = b.CreateShl(b.CreateLShr(u, 31), f.bits() - 1);
  Value* is_nan = b.CreateICmpUGT(a, K(0x7f800000u));

  // Normal range (and inf, which lands past max finite): round half to even on the bits.
  Value* odd = b.CreateAnd(b.CreateLShr(a, shift), K(1));
  Value* rounded = b.CreateAdd(a, b.CreateAdd(K((1u << (shift - 1)) - 1), odd));
  Value* mag = b.CreateSub(b.CreateLShr(rounded, shift), K(uint32_t(127 - f.bias) << M));
  if (f.bias < 127) {
    // Below the narrow format's smallest normal (2^emin): n = |x| * 2^(M - emin), exact,
    // then + 2^23 rounds it to an integer (half to even) in the f32 add.
    const int emin = 1 - f.bias;
    Value* is_sub = b.CreateICmpULT(a, K(uint32_t(127 + emin) << 23));
    Value* scaled = b.CreateFMul(b.CreateBitCast(a, f32), ConstantFP::get(f32, std::ldexp(1.0, M - emin)));
    Value* q = b.CreateFAdd(scaled, ConstantFP::get(f32, 8388608.0));
    Value* n = b.CreateSub(b.CreateBitCast(q, i32), K(0x4b000000u));
    mag = b.CreateSelect(is_sub, n, mag);
  }
  // (bf16 shares f32's exponent range: f32 subnormals are bf16 subnormals and the
  // normal-range formula covers them.)

  uint32_t overflow;
  if (saturate) overflow = max_code;
  else if (f.nan == NanEncoding::ieee) overflow = exp_ones << M;
  else overflow = f.nan == NanEncoding::all_ones ? sign_bit - 1 : 0;  // NaN (fnuz: sign makes it 0x80)
  Value* ovf = b.CreateICmpUGT(mag, K(max_code));
  Value* code;
  if (!saturate && f.nan == NanEncoding::neg_zero) {
    code = b.CreateOr(mag, sign);
    code = b.CreateSelect(ovf, K(sign_bit), code);
  } else {
    code = b.CreateOr(b.CreateSelect(ovf, K(overflow), mag), sign);
  }
  if (!f.has_neg_zero()) code = b.CreateSelect(b.CreateICmpEQ(mag, K(0)), K(0), code);

  Value* nan = nullptr;
  switch (f.nan) {
    case NanEncoding::ieee:
      nan = b.CreateOr(b.CreateOr(sign, K((exp_ones << M) | (1u << (M - 1)))),
                       b.CreateAnd(b.CreateLShr(a, shift), K(man_mask)));
      break;
    case NanEncoding::all_ones: nan = b.CreateOr(sign, K(sign_bit - 1)); break;
    case NanEncoding::neg_zero: nan = K(sign_bit); break;
  }
  code = b.CreateSelect(is_nan, nan, code);
  return b.CreateTrunc(code, out);
}

Value* f64_to_f32_round_odd(IRBuilderBase& b, Value* x) {
  Type* f32 = shaped(x->getType(), b.getFloatTy());
  Type* i32 = shaped(x->getType(), b.getInt32Ty());
  Value* r = b.CreateFPTrunc(x, f32);
  Value* back = b.CreateFPExt(r, x->getType());
  // Truncate toward zero (step back one code where nearest rounding went away from
  // zero, including to inf), then mark inexact results odd. NaN compares false in the
  // first test and keeps its payload bits apart from the lowest.
  Value* bits = b.CreateBitCast(r, i32);
  Value* fabs_back = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back);
  Value* fabs_x = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value* away = b.CreateFCmpOGT(fabs_back, fabs_x);
  bits = b.CreateSelect(away, b.CreateSub(bits, ConstantInt::get(i32, 1)), bits);
  Value* inexact = b.CreateFCmpUNE(back, x);
  bits = b.CreateSelect(inexact, b.CreateOr(bits, ConstantInt::get(i32, 1)), bits);
  return b.CreateBitCast(bits, f32);
}

Value* encode_from_f64(IRBuilderBase& b, Value* x, DType to, bool saturate) {
  return encode_from_f32(b, f64_to_f32_round_odd(b, x), to, saturate);
}

Value* encode_from_int(IRBuilderBase& b, Value* v, bool is_signed, DType to, bool saturate) {
  Type* ty = v->getType();
  Type* f64 = shaped(ty, b.getDoubleTy());
  unsigned width = ty->getScalarSizeInBits();
  Value* d;
  if (width <= 32) {
    d = is_signed ? b.CreateSIToFP(v, f64) : b.CreateUIToFP(v, f64);  // exact
  } else {
    // 64-bit magnitudes: keep 53 significant bits, rounded to odd, so that the f64 is
    // exact and the later roundings are one. The bits below the 53 most significant ones
    // (11 - leading zeros of them, none for a magnitude under 2^53) fold into the lowest
    // kept bit. The magnitude is unsigned: |INT64_MIN| = 2^63 is right as such.
    Value* neg = is_signed ? b.CreateICmpSLT(v, ConstantInt::get(ty, 0)) : nullptr;
    Value* m = is_signed ? b.CreateSelect(neg, b.CreateNeg(v), v) : v;
    Value* lz = b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, m, b.getFalse());
    Value* dropped = b.CreateBinaryIntrinsic(llvm::Intrinsic::usub_sat, ConstantInt::get(ty, 11), lz);
    Value* low_mask = b.CreateSub(b.CreateShl(ConstantInt::get(ty, 1), dropped), ConstantInt::get(ty, 1));
    Value* lowest_kept = b.CreateShl(ConstantInt::get(ty, 1), dropped);
    Value* sticky = b.CreateSelect(b.CreateICmpNE(b.CreateAnd(m, low_mask), ConstantInt::get(ty, 0)), lowest_kept,
                                   ConstantInt::get(ty, 0));
    m = b.CreateOr(b.CreateAnd(m, b.CreateNot(low_mask)), sticky);
    d = b.CreateUIToFP(m, f64);
    if (neg) d = b.CreateSelect(neg, b.CreateFNeg(d), d);
  }
  return encode_from_f64(b, d, to, saturate);
}

Value* fma_narrow(IRBuilderBase& b, Value* x, Value* y, Value* z, DType to) {
  Type* f64 = shaped(x->getType(), b.getDoubleTy());
  Type* i32 = shaped(x->getType(), b.getInt32Ty());
  Value* p = b.CreateFMul(b.CreateFPExt(x, f64), b.CreateFPExt(y, f64));  // exact: <= 22 bits
  Value* c = b.CreateFPExt(z, f64);
  // TwoSum: s + err == p + c exactly.
  Value* s = b.CreateFAdd(p, c);
  Value* bb = b.CreateFSub(s, p);
  Value* err = b.CreateFAdd(b.CreateFSub(p, b.CreateFSub(s, bb)), b.CreateFSub(c, bb));
  Value* r = f64_to_f32_round_odd(b, s);
  // If s itself is an f32, the rounding to odd above saw no inexactness; the exact sum
  // lies beyond s in err's direction, which decides the truncation.
  Value* exact32 = b.CreateFCmpOEQ(b.CreateFPExt(r, f64), s);
  Value* fix = b.CreateAnd(exact32, b.CreateFCmpONE(err, llvm::ConstantFP::get(f64, 0.0)));
  Value* bits = b.CreateBitCast(r, i32);
  Value* sign_s = b.CreateICmpSLT(b.CreateBitCast(r, i32), ConstantInt::get(i32, 0));
  Value* sign_e = b.CreateFCmpOLT(err, llvm::ConstantFP::get(f64, 0.0));
  Value* away = b.CreateICmpEQ(sign_s, sign_e);
  Value* one = ConstantInt::get(i32, 1);
  Value* fixed = b.CreateOr(b.CreateSelect(away, bits, b.CreateSub(bits, one)), one);
  bits = b.CreateSelect(fix, fixed, bits);
  return encode_from_f32(b, b.CreateBitCast(bits, shaped(x->getType(), b.getFloatTy())), to, false);
}

}  // namespace tl::codegen

// Portable FP8 <-> f32 conversions in LLVM IR, for targets (or formats) without
// hardware converts: gfx90a, OCP formats on gfx942, FNUZ formats on gfx950, NVIDIA.
// Semantics of docs/ir.md and dsl/src/numeric.cpp: round to nearest even, saturate to
// the largest finite value (infinities too), keep NaN (FNUZ formats have one NaN,
// 0x80, and no negative zero).
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

struct Fp8Format {
  int man_bits, bias;
  bool fnuz;      // single NaN at 0x80, no negative zero, no inf
  bool has_inf;   // e5m2 (IEEE-like)
  uint8_t nan;    // canonical positive NaN code (fnuz: 0x80)
};

Fp8Format format(DType t) {
  switch (t) {
    case DType::f8e4m3fn: return {3, 7, false, false, 0x7f};
    case DType::f8e5m2: return {2, 15, false, true, 0x7e};
    case DType::f8e4m3fnuz: return {3, 8, true, false, 0x80};
    case DType::f8e5m2fnuz: return {2, 16, true, false, 0x80};
    default: throw compile_error("fp8 conversion of a non-FP8 type");
  }
}

}  // namespace

double fp8_max_finite(DType t) {
  switch (t) {
    case DType::f8e4m3fn: return 448.0;
    case DType::f8e5m2: return 57344.0;
    case DType::f8e4m3fnuz: return 240.0;
    case DType::f8e5m2fnuz: return 57344.0;
    default: throw compile_error("fp8_max_finite of a non-FP8 type");
  }
}

llvm::Value* fp8_to_f32_soft(llvm::IRBuilderBase& b, DType t, llvm::Value* bits) {
  Fp8Format f = format(t);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Value* x = b.CreateZExt(bits, b.getInt32Ty());
  if (t == DType::f8e5m2)  // the top byte of an f16, specials included
    return b.CreateFPExt(b.CreateBitCast(b.CreateTrunc(b.CreateShl(x, 8), b.getInt16Ty()), b.getHalfTy()), f32);
  llvm::Value* sign = b.CreateShl(b.CreateAnd(x, 0x80), 24);
  llvm::Value* mag = b.CreateAnd(x, 0x7f);
  llvm::Value* exp = b.CreateLShr(mag, uint64_t(f.man_bits));
  llvm::Value* man = b.CreateAnd(mag, uint64_t((1 << f.man_bits) - 1));
  // normal: rebias the exponent, widen the mantissa
  llvm::Value* normal = b.CreateOr(b.CreateShl(b.CreateAdd(exp, b.getInt32(127 - f.bias)), 23),
                                   b.CreateShl(man, uint64_t(23 - f.man_bits)));
  // subnormal: man * 2^(1 - bias - man_bits), exact in f32
  llvm::Value* sub = b.CreateFMul(b.CreateUIToFP(man, f32),
                                  llvm::ConstantFP::get(f32, std::ldexp(1.0, 1 - f.bias - f.man_bits)));
  llvm::Value* magf = b.CreateSelect(b.CreateICmpEQ(exp, b.getInt32(0)), sub, b.CreateBitCast(normal, f32));
  llvm::Value* r = b.CreateBitCast(b.CreateOr(b.CreateBitCast(magf, b.getInt32Ty()), sign), f32);
  llvm::Value* nan = llvm::ConstantFP::getNaN(f32);
  llvm::Value* is_nan = f.fnuz ? b.CreateICmpEQ(x, b.getInt32(0x80)) : b.CreateICmpEQ(mag, b.getInt32(0x7f));
  return b.CreateSelect(is_nan, nan, r);
}

llvm::Value* f32_to_fp8_soft(llvm::IRBuilderBase& b, DType t, llvm::Value* x) {
  Fp8Format f = format(t);
  llvm::Type* f32 = b.getFloatTy();
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* xb = b.CreateBitCast(x, i32);
  llvm::Value* sign = b.CreateAnd(b.CreateLShr(xb, 24), 0x80);
  llvm::Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // saturate (infinities included); NaN is patched in at the end
  a = b.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a, llvm::ConstantFP::get(f32, fp8_max_finite(t)));
  int emin = 1 - f.bias;
  // normal: round the f32 mantissa to man_bits, nearest even, then rebias
  llvm::Value* ab = b.CreateBitCast(a, i32);
  int drop = 23 - f.man_bits;
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(ab, uint64_t(drop)), 1);
  llvm::Value* rounded = b.CreateAdd(b.CreateAdd(ab, b.getInt32((1u << (drop - 1)) - 1)), odd);
  llvm::Value* normal = b.CreateSub(b.CreateLShr(rounded, uint64_t(drop)), b.getInt32((127 - f.bias) << f.man_bits));
  // subnormal: a / 2^(emin - man_bits), nearest even; 2^man_bits is the smallest normal
  llvm::Value* q = b.CreateFMul(a, llvm::ConstantFP::get(f32, std::ldexp(1.0, f.man_bits - emin)));
  llvm::Value* sub = b.CreateFPToUI(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, q), i32);
  llvm::Value* is_sub = b.CreateFCmpOLT(a, llvm::ConstantFP::get(f32, std::ldexp(1.0, emin)));
  llvm::Value* mag = b.CreateSelect(is_sub, sub, normal);
  llvm::Value* signed_code = f.fnuz ? b.CreateSelect(b.CreateICmpEQ(mag, b.getInt32(0)), b.getInt32(0),
                                                     b.CreateOr(mag, sign))
                                    : b.CreateOr(mag, sign);
  llvm::Value* nan = f.fnuz ? b.getInt32(f.nan) : b.CreateOr(sign, b.getInt32(f.nan));
  llvm::Value* code = b.CreateSelect(b.CreateFCmpUNO(x, x), nan, signed_code);
  return b.CreateTrunc(code, b.getInt8Ty());
}

}  // namespace tl::gpu

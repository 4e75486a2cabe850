// Integer arithmetic with one semantics on every target (integer_ops.hpp says which).
#include "codegen/integer_ops.hpp"

#include <cstdint>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>

#include "tl/error.hpp"

namespace tl::codegen {

llvm::Value* integer_binary(llvm::IRBuilderBase& b, Op op, bool is_signed, llvm::Value* x, llvm::Value* y,
                            bool no_signed_wrap) {
  llvm::Type* ty = x->getType();
  auto K = [&](int64_t v) { return llvm::ConstantInt::get(ty, uint64_t(v), true); };
  switch (op) {
    case Op::add: return b.CreateAdd(x, y, "", false, no_signed_wrap);
    case Op::sub: return b.CreateSub(x, y, "", false, no_signed_wrap);
    case Op::mul: return b.CreateMul(x, y, "", false, no_signed_wrap);
    case Op::div: case Op::rem: {
      // Divide by 1 instead where the divisor is 0 (or -1, signed: INT_MIN / -1 would
      // overflow), then put the defined answers in.
      llvm::Value* zero = K(0);
      llvm::Value* by_zero = b.CreateICmpEQ(y, zero);
      llvm::Value* by_minus_one = is_signed ? b.CreateICmpEQ(y, K(-1)) : nullptr;
      llvm::Value* bad = by_minus_one ? b.CreateOr(by_zero, by_minus_one) : by_zero;
      llvm::Value* safe = b.CreateSelect(bad, K(1), y);
      if (op == Op::rem) return is_signed ? b.CreateSRem(x, safe) : b.CreateURem(x, safe);  // x % 1 == 0
      llvm::Value* q = is_signed ? b.CreateSDiv(x, safe) : b.CreateUDiv(x, safe);
      q = b.CreateSelect(by_zero, zero, q);
      if (by_minus_one) q = b.CreateSelect(by_minus_one, b.CreateNeg(x), q);
      return q;
    }
    case Op::min: return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, y);
    case Op::max: return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, y);
    case Op::band: return b.CreateAnd(x, y);
    case Op::bor: return b.CreateOr(x, y);
    case Op::bxor: return b.CreateXor(x, y);
    case Op::shl: case Op::shr: {
      unsigned w = ty->getScalarSizeInBits();
      llvm::Value* big = b.CreateICmpUGE(y, K(w));
      llvm::Value* amount = b.CreateSelect(big, K(w - 1), y);
      if (op == Op::shl) return b.CreateSelect(big, K(0), b.CreateShl(x, amount, "", false, no_signed_wrap));
      if (is_signed) return b.CreateAShr(x, amount);  // by w - 1: the sign fill
      return b.CreateSelect(big, K(0), b.CreateLShr(x, amount));
    }
    default: throw compile_error(fmt::format("tl: '{}' is not an integer binary operation", op_name(op)));
  }
}

llvm::Value* loop_trip_count(llvm::IRBuilderBase& b, llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Value* l = b.CreateSExt(lb, i64);
  llvm::Value* u = b.CreateSExt(ub, i64);
  llvm::Value* s = b.CreateSExt(step, i64);
  llvm::Value* zero = b.getInt64(0);
  llvm::Value* up = b.CreateICmpSGT(s, zero);
  // The distance to travel and the stride, both as non-negative numbers.
  llvm::Value* distance = b.CreateSelect(up, b.CreateSub(u, l), b.CreateSub(l, u));
  distance = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, distance, zero);
  llvm::Value* stride = b.CreateSelect(up, s, b.CreateNeg(s));
  llvm::Value* is_zero = b.CreateICmpEQ(s, zero);
  stride = b.CreateSelect(is_zero, b.getInt64(1), stride);
  llvm::Value* trips = b.CreateUDiv(b.CreateAdd(distance, b.CreateSub(stride, b.getInt64(1))), stride);
  trips = b.CreateSelect(is_zero, zero, trips);
  return b.CreateTrunc(trips, b.getInt32Ty());
}

namespace {
// step > 0 ? below : above, folded where the step is a constant.
llvm::Value* by_direction(llvm::IRBuilderBase& b, llvm::Value* step, llvm::Value* below, llvm::Value* above) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(step)) return c->isNegative() ? above : below;
  return b.CreateSelect(b.CreateICmpSGT(step, b.getInt32(0)), below, above);
}
}  // namespace

llvm::Value* loop_enters(llvm::IRBuilderBase& b, llvm::Value* lb, llvm::Value* ub, llvm::Value* step) {
  return by_direction(b, step, b.CreateICmpSLT(lb, ub), b.CreateICmpSGT(lb, ub));
}

llvm::Value* loop_continues(llvm::IRBuilderBase& b, llvm::Value* iv, llvm::Value* next, llvm::Value* ub,
                            llvm::Value* step) {
  // iv + step fits the i32 range: iv <= INT_MAX - step going up, iv >= INT_MIN - step going
  // down (neither bound overflows for a step of that sign).
  llvm::Value* fits_up = b.CreateICmpSLE(iv, b.CreateSub(b.getInt32(INT32_MAX), step));
  llvm::Value* fits_down = b.CreateICmpSGE(iv, b.CreateSub(b.getInt32(INT32_MIN), step));
  // A select, not an and: where iv + step wraps, next (nsw) is poison, which an `and`
  // would pass on to the branch and a select with a false condition does not.
  return by_direction(b, step, b.CreateSelect(fits_up, b.CreateICmpSLT(next, ub), b.getFalse()),
                      b.CreateSelect(fits_down, b.CreateICmpSGT(next, ub), b.getFalse()));
}

}  // namespace tl::codegen

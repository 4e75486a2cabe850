// One element of every value-producing op: arithmetic, math, comparisons, casts, index
// and shape ops. Narrow floats are computed in f32 and rounded to nearest even on the
// way back (for + - * / sqrt that is the correctly rounded result, since f32 has more
// than twice their precision plus two bits); fma rounds once through convert.cpp.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include "codegen/cpu/convert.hpp"
#include "codegen/cpu/lower.hpp"
#include "codegen/integer_ops.hpp"
#include "tl/error.hpp"
#include "tl/numeric.hpp"

namespace tl::codegen::cpu {

using llvm::Intrinsic::ID;
using llvm::Type;
using llvm::Value;

namespace {

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16 || is_fp8(t); }

}  // namespace

Type* Lowerer::compute_type(DType t) { return narrow_float(t) ? b_.getFloatTy() : reg_type(t); }

Value* Lowerer::widen(Value* v, DType t) { return narrow_float(t) ? decode_to_f32(b_, v, t) : v; }

Value* Lowerer::narrow(Value* v, DType t) { return narrow_float(t) ? encode_from_f32(b_, v, t, is_fp8(t)) : v; }

Value* Lowerer::constant(const ir::Operation& op) {
  DType t = op.result()->type.dtype;
  if (t == DType::f32) return llvm::ConstantFP::get(b_.getFloatTy(), op.f);
  if (t == DType::f64) return llvm::ConstantFP::get(b_.getDoubleTy(), op.f);
  if (narrow_float(t)) return llvm::ConstantInt::get(reg_type(t), encode(float_format(t), op.f, is_fp8(t)));
  if (t == DType::i1) return b_.getInt1(op.i0 != 0);
  if (t == DType::ptr) throw compile_error("tl cpu: pointer constant", op.loc.file, op.loc.line);
  return llvm::ConstantInt::get(reg_type(t), uint64_t(op.i0), is_signed(t));
}

Value* Lowerer::binary(Op op, DType t, Value* a, Value* b, bool contract) {
  if (is_float(t)) {
    Value* x = widen(a, t);
    Value* y = widen(b, t);
    Value* r = nullptr;
    switch (op) {
      case Op::add: r = b_.CreateFAdd(x, y); break;
      case Op::sub: r = b_.CreateFSub(x, y); break;
      case Op::mul: r = b_.CreateFMul(x, y); break;
      case Op::div: r = b_.CreateFDiv(x, y); break;
      case Op::rem: r = b_.CreateFRem(x, y); break;
      case Op::min: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, y); break;
      case Op::max: r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y); break;
      default: throw compile_error(fmt::format("tl cpu: '{}' on {}", op_name(op), name(t)));
    }
    if (contract && (op == Op::add || op == Op::sub || op == Op::mul))
      if (auto* i = llvm::dyn_cast<llvm::Instruction>(r)) i->setHasAllowContract(true);
    return narrow(r, t);
  }
  if (op == Op::add || op == Op::sub || op == Op::mul || op == Op::div || op == Op::rem || op == Op::min ||
      op == Op::max || op == Op::band || op == Op::bor || op == Op::bxor || op == Op::shl || op == Op::shr)
    return integer_binary(b_, op, is_signed(t), a, b);
  throw compile_error(fmt::format("tl cpu: '{}' on {}", op_name(op), name(t)));
}

Value* Lowerer::unary(Op op, DType t, Value* a) {
  if (!is_float(t)) {
    switch (op) {
      case Op::neg: return b_.CreateNeg(a);
      case Op::bnot: return b_.CreateNot(a);
      case Op::abs:
        return is_signed(t) ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a, b_.getFalse()) : a;
      default: throw compile_error(fmt::format("tl cpu: '{}' on {}", op_name(op), name(t)));
    }
  }
  if (narrow_float(t) && (op == Op::neg || op == Op::abs)) {
    // On the code: exact, and NaN payloads stay as they are.
    uint64_t sign = uint64_t(1) << (bit_width(t) - 1);
    auto* k = llvm::ConstantInt::get(a->getType(), op == Op::neg ? sign : sign - 1);
    return op == Op::neg ? b_.CreateXor(a, k) : b_.CreateAnd(a, k);
  }
  Value* x = widen(a, t);
  Type* ft = x->getType();
  auto intr = [&](ID id) { return b_.CreateUnaryIntrinsic(id, x); };
  Value* r = nullptr;
  switch (op) {
    case Op::neg: r = b_.CreateFNeg(x); break;
    case Op::abs: r = intr(llvm::Intrinsic::fabs); break;
    case Op::exp: r = intr(llvm::Intrinsic::exp); break;
    case Op::exp2: r = intr(llvm::Intrinsic::exp2); break;
    case Op::log: r = intr(llvm::Intrinsic::log); break;
    case Op::log2: r = intr(llvm::Intrinsic::log2); break;
    case Op::sqrt: r = intr(llvm::Intrinsic::sqrt); break;
    case Op::rsqrt: r = b_.CreateFDiv(llvm::ConstantFP::get(ft, 1.0), intr(llvm::Intrinsic::sqrt)); break;
    case Op::sin: r = intr(llvm::Intrinsic::sin); break;
    case Op::cos: r = intr(llvm::Intrinsic::cos); break;
    case Op::floor: r = intr(llvm::Intrinsic::floor); break;
    case Op::ceil: r = intr(llvm::Intrinsic::ceil); break;
    case Op::erf: {
      // No LLVM intrinsic; libm's erff/erf, resolved by the JIT from the process.
      bool dbl = ft->isDoubleTy();
      auto callee = mod_.getOrInsertFunction(dbl ? "erf" : "erff", llvm::FunctionType::get(ft, {ft}, false));
      if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
        fn->setDoesNotThrow();
        fn->setWillReturn();
        fn->setOnlyAccessesInaccessibleMemory();  // errno at most
      }
      r = b_.CreateCall(callee, {x});
      break;
    }
    default: throw compile_error(fmt::format("tl cpu: '{}' on {}", op_name(op), name(t)));
  }
  return narrow(r, t);
}

Value* Lowerer::compare(CmpPred p, DType t, Value* a, Value* b) {
  using P = llvm::CmpInst::Predicate;
  if (is_float(t)) {
    Value* x = widen(a, t);
    Value* y = widen(b, t);
    // Ordered, except != which is true for NaN (IEEE's negation of ==, as Triton and C).
    static const P preds[] = {P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE, P::FCMP_OEQ, P::FCMP_UNE};
    return b_.CreateFCmp(preds[int(p)], x, y);
  }
  static const P sp[] = {P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE, P::ICMP_EQ, P::ICMP_NE};
  static const P up[] = {P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE, P::ICMP_EQ, P::ICMP_NE};
  return b_.CreateICmp(is_signed(t) ? sp[int(p)] : up[int(p)], a, b);
}

Value* Lowerer::cast(Value* v, DType from, DType to) {
  if (from == to) return v;
  Type* dst = reg_type(to);
  // int-to-pointer and pointer-to-int (i64/u64 only, checked while tracing)
  if (to == DType::ptr) return b_.CreateIntToPtr(v, dst);
  if (from == DType::ptr) return b_.CreatePtrToInt(v, dst);
  if (to == DType::i1) {
    if (is_float(from)) return b_.CreateFCmpUNE(widen(v, from), llvm::ConstantFP::get(compute_type(from), 0.0));
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (is_int(from)) {
    bool s = is_signed(from);  // i1 is unsigned: true converts to 1
    if (is_int(to)) return b_.CreateIntCast(v, dst, s);
    if (to == DType::f32 || to == DType::f64) return s ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
    return encode_from_int(b_, v, s, to, is_fp8(to));
  }
  // float source
  if (is_int(to)) {
    Value* x = widen(v, from);
    auto id = is_signed(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {dst, x->getType()}, {x});
  }
  if (to == DType::f64) return b_.CreateFPExt(widen(v, from), dst);
  if (to == DType::f32) return from == DType::f64 ? b_.CreateFPTrunc(v, dst) : widen(v, from);
  // to a narrow float
  if (from == DType::f64) return encode_from_f64(b_, v, to, is_fp8(to));
  return encode_from_f32(b_, widen(v, from), to, is_fp8(to));
}

Value* Lowerer::compute(const ir::Operation& op, const Idx& idx) {
  const ir::Type& rt = op.result()->type;
  auto operand = [&](int i) { return elem(op.operands[i], idx); };
  switch (op.op) {
    case Op::constant: return constant(op);
    case Op::program_id: return pid_[op.i0];
    case Op::num_programs: return nprog_[op.i0];
    case Op::arange:
      return b_.CreateAdd(b_.CreateTrunc(idx.dims[0], b_.getInt32Ty(), "", true, true),
                          b_.getInt32(uint32_t(op.i0)), "", false, true);
    case Op::splat: return elem(op.operands[0], Idx{});
    case Op::hint: return operand(0);  // a fact for the analyses; the value is its operand
    case Op::broadcast: {
      const ir::Value* src = op.operands[0];
      std::vector<Value*> dims = idx.dims;
      for (size_t d = 0; d < dims.size(); ++d)
        if (src->type.shape[d] == 1) dims[d] = b_.getInt64(0);
      return elem(src, idx_from_dims(src->type.shape, dims));
    }
    case Op::reshape: case Op::expand_dims: {
      const ir::Value* src = op.operands[0];
      if (src->type.is_scalar()) return elem(src, Idx{});
      return elem(src, idx_from_flat(src->type.shape, idx.flat));
    }
    case Op::trans: {
      const ir::Value* src = op.operands[0];
      std::vector<Value*> dims(idx.dims.size());
      for (size_t i = 0; i < op.ints.size(); ++i) dims[op.ints[i]] = idx.dims[i];
      return elem(src, idx_from_dims(src->type.shape, dims));
    }
    // join, split, cat and flip read their operands elsewhere; an index past a smaller
    // operand's end is never formed (cat masks it), so no read leaves its buffer.
    case Op::join: {  // [..., k]: a where k is 0, b where 1
      const ir::Value* a = op.operands[0];
      Idx at = idx_from_dims(a->type.shape, std::vector<Value*>(idx.dims.begin(), idx.dims.end() - 1));
      return b_.CreateSelect(b_.CreateICmpEQ(idx.dims.back(), b_.getInt64(0)), elem(a, at), elem(op.operands[1], at));
    }
    case Op::split: {
      const ir::Value* src = op.operands[0];
      std::vector<Value*> dims = idx.dims;
      dims.push_back(b_.getInt64(uint64_t(op.i0)));
      return elem(src, idx_from_dims(src->type.shape, dims));
    }
    case Op::cat: {  // rows [0, n0) from a, [n0, 2 n0) from b; n0 is a power of two
      const ir::Value* a = op.operands[0];
      const int64_t n0 = a->type.shape[0];
      std::vector<Value*> dims = idx.dims;
      dims[0] = b_.CreateAnd(idx.dims[0], b_.getInt64(uint64_t(n0 - 1)));
      Idx at = idx_from_dims(a->type.shape, dims);
      return b_.CreateSelect(b_.CreateICmpULT(idx.dims[0], b_.getInt64(uint64_t(n0))), elem(a, at),
                             elem(op.operands[1], at));
    }
    case Op::flip: {  // coordinate c reads n - 1 - c, which is c ^ (n - 1) for a power of two n
      const ir::Value* src = op.operands[0];
      std::vector<Value*> dims = idx.dims;
      dims[size_t(op.i0)] = b_.CreateXor(dims[size_t(op.i0)], b_.getInt64(uint64_t(src->type.shape[size_t(op.i0)] - 1)));
      return elem(src, idx_from_dims(src->type.shape, dims));
    }
    case Op::gather: {  // the index's element along the axis; modulo the dim (Triton: out of range is UB)
      const ir::Value* src = op.operands[0];
      const ir::Value* index = op.operands[1];
      const size_t ax = size_t(op.i0);
      std::vector<Value*> dims = idx.dims;
      Value* i = b_.CreateIntCast(elem(index, idx), b_.getInt64Ty(), is_signed(index->type.dtype));
      dims[ax] = b_.CreateAnd(i, b_.getInt64(uint64_t(src->type.shape[ax] - 1)));
      return elem(src, idx_from_dims(src->type.shape, dims));
    }
    case Op::load: return load_elem(op, idx);
    case Op::shared_load: return load_buf(shared_stage_ptr(op), rt.dtype, idx.flat);
    case Op::atomic_rmw: return atomic_rmw_elem(op, idx);
    case Op::atomic_cas: return atomic_cas_elem(op, idx);
    case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::min: case Op::max:
    case Op::band: case Op::bor: case Op::bxor: case Op::shl: case Op::shr:
      return binary(op.op, rt.dtype, operand(0), operand(1), opts_.enable_fp_fusion && op.i0 == 0);
    case Op::neg: case Op::bnot: case Op::exp: case Op::exp2: case Op::log: case Op::log2: case Op::sqrt:
    case Op::rsqrt: case Op::abs: case Op::sin: case Op::cos: case Op::erf: case Op::floor: case Op::ceil:
      return unary(op.op, rt.dtype, operand(0));
    case Op::fma: {
      DType t = rt.dtype;
      Value* x = operand(0);
      Value* y = operand(1);
      Value* z = operand(2);
      if (narrow_float(t)) return fma_narrow(b_, widen(x, t), widen(y, t), widen(z, t), t);
      return b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z});
    }
    case Op::cmp: return compare(CmpPred(op.i0), op.operands[0]->type.dtype, operand(0), operand(1));
    case Op::select: {
      Value* c = operand(0);
      Value* x = operand(1);
      Value* y = operand(2);
      return b_.CreateSelect(c, x, y);
    }
    case Op::cast: return cast(operand(0), op.operands[0]->type.dtype, rt.dtype);
    case Op::bitcast: {
      Value* v = operand(0);
      Type* dst = reg_type(rt.dtype);
      return v->getType() == dst ? v : b_.CreateBitCast(v, dst);
    }
    case Op::addptr: {
      Value* p = operand(0);
      Value* off = operand(1);
      DType ot = op.operands[1]->type.dtype;
      off = b_.CreateIntCast(off, b_.getInt64Ty(), is_signed(ot));
      // nusw, not inbounds: a masked-off lane may point anywhere, but no real address
      // computation wraps around the address space.
      return b_.CreateGEP(mem_type(rt.pointee), p, {off}, "", llvm::GEPNoWrapFlags::noUnsignedSignedWrap());
    }
    default:
      throw compile_error(fmt::format("tl cpu: cannot lower '{}'", op_name(op.op)), op.loc.file, op.loc.line);
  }
}

}  // namespace tl::codegen::cpu

// Elementwise ops, casts, constants and shape ops: a tile op maps over the registers a
// thread owns, so all of them reduce to `element()` on single LLVM values.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/integer_ops.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/numeric.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

using llvm::Intrinsic::ID;
namespace Intr = llvm::Intrinsic;

llvm::Type* Lowerer::reg_type(DType t) {
  switch (t) {
    case DType::i1: return b.getInt1Ty();
    case DType::i8: case DType::u8: return b.getInt8Ty();
    case DType::f8e4m3fn: case DType::f8e5m2: case DType::f8e4m3fnuz: case DType::f8e5m2fnuz: return b.getInt8Ty();
    case DType::f4e2m1: case DType::e8m0: return b.getInt8Ty();  // OCP MX bytes (converted while tracing)
    case DType::i16: case DType::u16: return b.getInt16Ty();
    case DType::i32: case DType::u32: return b.getInt32Ty();
    case DType::i64: case DType::u64: return b.getInt64Ty();
    case DType::f16: return b.getHalfTy();
    case DType::bf16: return b.getBFloatTy();
    case DType::f32: return b.getFloatTy();
    case DType::f64: return b.getDoubleTy();
    case DType::ptr: return llvm::PointerType::get(ctx_, hooks_.global_address_space());
  }
  return nullptr;
}

llvm::Type* Lowerer::mem_type(DType t) { return t == DType::i1 ? b.getInt8Ty() : reg_type(t); }

llvm::Value* Lowerer::to_mem(llvm::Value* x, DType t) { return t == DType::i1 ? b.CreateZExt(x, b.getInt8Ty()) : x; }
llvm::Value* Lowerer::from_mem(llvm::Value* x, DType t) {
  return t == DType::i1 ? b.CreateICmpNE(x, b.getInt8(0)) : x;
}

llvm::Value* Lowerer::constant(DType t, double f, int64_t i) {
  llvm::Type* ty = reg_type(t);
  // FP8 lives in registers as its bits: the value's encoding, rounded to nearest even and
  // saturating like a cast (the tracer's `i` of a float constant is its truncation).
  if (is_fp8(t)) return b.getInt8(to_fp8(t, f));
  if (is_float(t)) return llvm::ConstantFP::get(ty, f);
  if (t == DType::ptr) return llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(ty));
  return llvm::ConstantInt::get(ty, uint64_t(i), is_signed(t));
}

namespace {

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

llvm::CmpInst::Predicate int_pred(CmpPred p, bool is_signed_cmp) {
  switch (p) {
    case CmpPred::lt: return is_signed_cmp ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT;
    case CmpPred::le: return is_signed_cmp ? llvm::CmpInst::ICMP_SLE : llvm::CmpInst::ICMP_ULE;
    case CmpPred::gt: return is_signed_cmp ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT;
    case CmpPred::ge: return is_signed_cmp ? llvm::CmpInst::ICMP_SGE : llvm::CmpInst::ICMP_UGE;
    case CmpPred::eq: return llvm::CmpInst::ICMP_EQ;
    case CmpPred::ne: return llvm::CmpInst::ICMP_NE;
  }
  return llvm::CmpInst::ICMP_EQ;
}

// Ordered compares; != is unordered so that NaN != x holds, as in C++ and Triton.
llvm::CmpInst::Predicate float_pred(CmpPred p) {
  switch (p) {
    case CmpPred::lt: return llvm::CmpInst::FCMP_OLT;
    case CmpPred::le: return llvm::CmpInst::FCMP_OLE;
    case CmpPred::gt: return llvm::CmpInst::FCMP_OGT;
    case CmpPred::ge: return llvm::CmpInst::FCMP_OGE;
    case CmpPred::eq: return llvm::CmpInst::FCMP_OEQ;
    case CmpPred::ne: return llvm::CmpInst::FCMP_UNE;
  }
  return llvm::CmpInst::FCMP_OEQ;
}

// erf for f32 from exp: Numerical Recipes' erfc Chebyshev fit (fractional error below
// 1.2e-7), written as erf = 1 - erfc for x >= 0 and mirrored.
llvm::Value* erf_f32(llvm::IRBuilderBase& b, llvm::Value* x, const std::function<llvm::Value*(llvm::Value*)>& exp) {
  llvm::Type* f = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(f, v); };
  llvm::Value* z = b.CreateUnaryIntrinsic(Intr::fabs, x);
  llvm::Value* t = b.CreateFDiv(c(1.0), b.CreateFAdd(c(1.0), b.CreateFMul(c(0.5), z)));
  static const double k[] = {-1.26551223, 1.00002368, 0.37409196,  0.09678418, -0.18628806,
                             0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
  llvm::Value* poly = c(k[9]);
  for (int i = 8; i >= 0; --i) poly = b.CreateIntrinsic(Intr::fma, {f}, {t, poly, c(k[i])});
  llvm::Value* arg = b.CreateFSub(poly, b.CreateFMul(z, z));
  llvm::Value* erfc = b.CreateFMul(t, exp(arg));
  llvm::Value* r = b.CreateFSub(c(1.0), erfc);
  return b.CreateIntrinsic(Intr::copysign, {f}, {r, x});
}

}  // namespace

llvm::Value* Lowerer::cast(llvm::Value* x, DType from, DType to) {
  if (from == to) return x;
  llvm::Type* ty = reg_type(to);
  // int-to-pointer and pointer-to-int (i64/u64 only, checked while tracing): the pointer
  // is a global one, like every pointer of the language (reg_type)
  if (to == DType::ptr) return b.CreateIntToPtr(x, ty);
  if (from == DType::ptr) return b.CreatePtrToInt(x, ty);
  if (is_fp8(from)) {
    llvm::Value* f = hooks_.fp8_to_f32(b, from, x);
    return cast_fp8_value(f ? f : fp8_to_f32_soft(b, from, x), to);
  }
  if (is_fp8(to)) {
    llvm::Value* f = cast(x, from, DType::f32);
    llvm::Value* r = hooks_.f32_to_fp8(b, to, f);
    return r ? r : f32_to_fp8_soft(b, to, f);
  }
  if (to == DType::i1) {
    if (is_float(from)) return b.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return b.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }
  if (is_int(from) && is_int(to)) return b.CreateIntCast(x, ty, is_signed(from));
  if (is_int(from)) return is_signed(from) ? b.CreateSIToFP(x, ty) : b.CreateUIToFP(x, ty);
  if (is_int(to))  // truncation toward zero, saturating, NaN -> 0: exactly fptosi.sat
    return b.CreateIntrinsic(is_signed(to) ? Intr::fptosi_sat : Intr::fptoui_sat, {ty, x->getType()}, {x});
  if (narrow_float(from) && narrow_float(to)) return b.CreateFPTrunc(b.CreateFPExt(x, b.getFloatTy()), ty);
  return bit_width(to) > bit_width(from) ? b.CreateFPExt(x, ty) : b.CreateFPTrunc(x, ty);
}

// The f32 that an FP8 value converted to, on to `to`.
llvm::Value* Lowerer::cast_fp8_value(llvm::Value* f, DType to) {
  // Every FP8 value (NaN too) is a bf16 one: the f32's upper half, no rounding (which
  // costs gfx942, without a bf16 convert, five instructions an element).
  if (to == DType::bf16)
    return b.CreateBitCast(b.CreateTrunc(b.CreateLShr(b.CreateBitCast(f, b.getInt32Ty()), 16), b.getInt16Ty()),
                           reg_type(to));
  return cast(f, DType::f32, to);
}

// A tile's registers converted: FP8 ones two at a time (registers r and r + 1, r even)
// where the target converts a pair in one instruction (cvt.rn.f16x2.e4m3x2,
// v_cvt_pk_f32_fp8, ...), so that a dequantized tile costs half the converts; any other
// cast, a target without pair converts, and an odd register last, one at a time.
Values Lowerer::cast_registers(const Values& v, DType from, DType to) {
  Values out(v.size());
  size_t r = 0;
  if (from != to && (is_fp8(from) || is_fp8(to)))
    for (; r + 1 < v.size(); r += 2) {
      if (is_fp8(from)) {
        llvm::Value* f = hooks_.fp8x2_to_f32x2(b, from, v[r], v[r + 1]);
        if (!f) break;
        for (size_t i = 0; i < 2; ++i) out[r + i] = cast_fp8_value(b.CreateExtractElement(f, uint64_t(i)), to);
      } else {
        llvm::Value* q = hooks_.f32x2_to_fp8x2(b, to, cast(v[r], from, DType::f32), cast(v[r + 1], from, DType::f32));
        if (!q) break;
        for (size_t i = 0; i < 2; ++i) out[r + i] = b.CreateExtractElement(q, uint64_t(i));
      }
    }
  for (; r < v.size(); ++r) out[r] = cast(v[r], from, to);
  return out;
}

namespace {
// Signed index arithmetic (codegen/passes/index_arithmetic.cpp) may not wrap.
bool nsw(const ir::Operation& op) {
  return op.i1 == ir::kIndexArithmetic && is_signed(op.result()->type.dtype);
}
// Triton's enable_fp_fusion (on by default): a float add, sub or mul may fuse with a
// product into one fma (LLVM's contract flag, which NVPTX selects as fma.rn and AMDGPU as
// v_fma/v_fmac); one the math library marked (i0 = 1: its compensated sums and products
// need each rounding) or any with the option off rounds on its own (NVPTX's mul.rn /
// add.rn, which ptxas keeps apart).
llvm::Value* fusable(const ir::Operation& op, bool enabled, llvm::Value* v) {
  if (enabled && op.i0 == 0)
    if (auto* i = llvm::dyn_cast<llvm::Instruction>(v)) i->setHasAllowContract(true);
  return v;
}
}  // namespace

llvm::Value* Lowerer::element(const ir::Operation& op, const Values& a) {
  DType in = op.operands.empty() ? op.result()->type.dtype : op.operands[0]->type.dtype;
  DType out = op.result()->type.dtype;
  bool fl = is_float(in), sg = is_signed(in);
  switch (op.op) {
    // Integers: one semantics on every target (codegen/integer_ops.hpp): wrapping, but for
    // signed index arithmetic (offsets and masks), which the language lets not wrap: nsw.
    case Op::add:
      return fl ? fusable(op, opts_.enable_fp_fusion, b.CreateFAdd(a[0], a[1]))
                : codegen::integer_binary(b, op.op, sg, a[0], a[1], nsw(op));
    case Op::sub:
      return fl ? fusable(op, opts_.enable_fp_fusion, b.CreateFSub(a[0], a[1]))
                : codegen::integer_binary(b, op.op, sg, a[0], a[1], nsw(op));
    case Op::mul:
      return fl ? fusable(op, opts_.enable_fp_fusion, b.CreateFMul(a[0], a[1]))
                : codegen::integer_binary(b, op.op, sg, a[0], a[1], nsw(op));
    case Op::div: {
      if (!fl) return codegen::integer_binary(b, op.op, sg, a[0], a[1]);
      if (op.i0 == 2 && a[1]->getType()->isFloatTy())  // `div rcp`: x times the raw reciprocal
        if (llvm::Value* rc = hooks_.approx_reciprocal(b, a[1])) return b.CreateFMul(a[0], rc);
      llvm::Value* q = b.CreateFDiv(a[0], a[1]);
      if (op.i0) {
        // tl::fast_dividef: approximate-function and reciprocal flags, which NVPTX selects
        // as div.approx.f32 and AMDGPU as v_rcp_f32 and a multiply.
        llvm::FastMathFlags fmf;
        fmf.setApproxFunc();
        fmf.setAllowReciprocal();
        llvm::cast<llvm::Instruction>(q)->setFastMathFlags(fmf);
      }
      return q;
    }
    case Op::rem:
      if (narrow_float(in)) {
        // Exact in f32, and AMDGPU has no bf16 frem; the canonicalize (free: an fpext's
        // result is canonical) stops InstCombine from shrinking the f32 frem back to the
        // narrow type. (An llvm.arithmetic.fence did too, but on a uniform value AMDGPU's
        // instruction selection then fails, "illegal VGPR to SGPR copy", and aborts:
        // fuzz.differential seed 1001.)
        llvm::Value* x = b.CreateUnaryIntrinsic(Intr::canonicalize, b.CreateFPExt(a[0], b.getFloatTy()));
        llvm::Value* r = b.CreateFRem(x, b.CreateFPExt(a[1], b.getFloatTy()));
        return b.CreateFPTrunc(r, a[0]->getType());
      }
      return fl ? b.CreateFRem(a[0], a[1]) : codegen::integer_binary(b, op.op, sg, a[0], a[1]);
    case Op::min:
      return b.CreateBinaryIntrinsic(fl ? Intr::minnum : sg ? Intr::smin : Intr::umin, a[0], a[1]);
    case Op::max:
      return b.CreateBinaryIntrinsic(fl ? Intr::maxnum : sg ? Intr::smax : Intr::umax, a[0], a[1]);
    case Op::hint: {
      // A fact for the analyses; the value is its operand. A scalar's multiple_of is told
      // to LLVM too: for an integer as `x & -k` (one scalar instruction; the same x where
      // the promise holds, and a false one is undefined behaviour anyway), whose known low
      // bits instruction selection folds into the address arithmetic as it does for
      // `x / 16 * 16`; an llvm.assume of them is not seen there (tutorial 08's loaded sizes
      // on gfx942: 138 VGPRs with the assume, the and's 132).
      int64_t k = op.ints.empty() ? 1 : int64_t(op.ints[0]) & -int64_t(op.ints[0]);  // its power-of-two part
      if (op.result()->type.is_scalar() && HintKind(op.i0) == HintKind::multiple_of && k > 1) {
        if (a[0]->getType()->isPointerTy())
          b.CreateAlignmentAssumption(m_.getDataLayout(), a[0], uint64_t(k));
        else if (a[0]->getType()->isIntegerTy())
          return b.CreateAnd(a[0], llvm::ConstantInt::get(a[0]->getType(), uint64_t(-k)));
      }
      return a[0];
    }
    case Op::band: return b.CreateAnd(a[0], a[1]);
    case Op::bor: return b.CreateOr(a[0], a[1]);
    case Op::bxor: return b.CreateXor(a[0], a[1]);
    case Op::shl: case Op::shr: return codegen::integer_binary(b, op.op, sg, a[0], a[1], nsw(op));
    case Op::neg: return fl ? b.CreateFNeg(a[0]) : b.CreateNeg(a[0]);
    case Op::bnot: return b.CreateNot(a[0]);
    case Op::abs:
      return fl ? b.CreateUnaryIntrinsic(Intr::fabs, a[0]) : sg ? b.CreateBinaryIntrinsic(Intr::abs, a[0], b.getFalse())
                                                               : a[0];
    case Op::fma: return b.CreateIntrinsic(Intr::fma, {a[0]->getType()}, {a[0], a[1], a[2]});
    case Op::cmp: {
      auto p = CmpPred(op.i0);
      if (fl) return b.CreateFCmp(float_pred(p), a[0], a[1]);
      return b.CreateICmp(int_pred(p, sg), a[0], a[1]);
    }
    case Op::select: return b.CreateSelect(a[0], a[1], a[2]);
    case Op::cast: return cast(a[0], in, out);
    case Op::bitcast: return a[0]->getType() == reg_type(out) ? a[0] : b.CreateBitCast(a[0], reg_type(out));
    case Op::addptr: {
      DType od = op.operands[1]->type.dtype;
      llvm::Value* off = b.CreateIntCast(a[1], b.getInt64Ty(), is_signed(od));
      return b.CreateGEP(mem_type(op.operands[0]->type.pointee), a[0], off);
    }
    case Op::exp: case Op::exp2: case Op::log: case Op::log2: case Op::sqrt: case Op::rsqrt: case Op::sin:
    case Op::cos: case Op::erf: case Op::floor: case Op::ceil: {
      llvm::Value* x = a[0];
      if (narrow_float(in)) x = b.CreateFPExt(x, b.getFloatTy());  // f16/bf16 math runs in f32
      if (x->getType()->isDoubleTy() && op.op != Op::sqrt && op.op != Op::floor && op.op != Op::ceil &&
          op.op != Op::rsqrt)
        fail(op, fmt::format("{} on f64 is not supported on {} yet (no device math library)", op_name(op.op),
                             hooks_.target_name()));
      auto math = [&](Op m, llvm::Value* v) -> llvm::Value* {
        if (m == Op::exp2 && op.i0 == 2 && v->getType()->isFloatTy())  // `exp2 raw`: the instruction alone
          if (llvm::Value* r = hooks_.approx_exp2(b, v)) return r;
        if (llvm::Value* r = hooks_.math(b, m, v)) return r;
        switch (m) {
          case Op::exp: return b.CreateUnaryIntrinsic(Intr::exp, v);
          case Op::exp2: return b.CreateUnaryIntrinsic(Intr::exp2, v);
          // (tl::fast_logf's: with approximate-function flags AMDGPU takes v_log_f32.)
          case Op::log: {
            llvm::FastMathFlags fmf;
            fmf.setApproxFunc();
            return b.CreateUnaryIntrinsic(Intr::log, v, fmf);
          }
          case Op::log2: return b.CreateUnaryIntrinsic(Intr::log2, v);
          case Op::sqrt: return b.CreateUnaryIntrinsic(Intr::sqrt, v);
          case Op::sin: return b.CreateUnaryIntrinsic(Intr::sin, v);
          case Op::cos: return b.CreateUnaryIntrinsic(Intr::cos, v);
          case Op::floor: return b.CreateUnaryIntrinsic(Intr::floor, v);
          case Op::ceil: return b.CreateUnaryIntrinsic(Intr::ceil, v);
          case Op::rsqrt: {
            // 1/sqrt with approximate-function flags: the targets select their rsq.
            llvm::FastMathFlags fmf;
            fmf.setApproxFunc();
            llvm::Value* s = b.CreateUnaryIntrinsic(Intr::sqrt, v, fmf);
            auto* d = b.CreateFDiv(llvm::ConstantFP::get(v->getType(), 1.0), s);
            llvm::cast<llvm::Instruction>(d)->setFastMathFlags(fmf);
            return d;
          }
          default: return nullptr;
        }
      };
      llvm::Value* r = op.op == Op::erf ? erf_f32(b, x, [&](llvm::Value* v) { return math(Op::exp, v); })
                                        : math(op.op, x);
      if (narrow_float(in)) r = b.CreateFPTrunc(r, reg_type(in));
      return r;
    }
    default:
      fail(op, fmt::format("gpu lowering: '{}' is not an elementwise op", op_name(op.op)));
  }
}

llvm::Value* Lowerer::pack_for_memory(const Values& regs, int r, int width, DType t) {
  if (width == 1) return to_mem(regs[r], t);
  llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(mem_type(t), unsigned(width)));
  for (int k = 0; k < width; ++k) vec = b.CreateInsertElement(vec, to_mem(regs[r + k], t), uint64_t(k));
  return vec;
}

// Emits a lazy (pure, cheap) value in the layout its user asks for.
Values Lowerer::lazy_value(const ir::Value* v, const Layout& l) {
  const ir::Operation& op = *v->def;
  int n = l.num_regs();
  switch (op.op) {
    case Op::splat: return Values(n, scalar(op.operands[0]));
    case Op::arange: {
      Values out;
      for (int r = 0; r < n; ++r) {
        llvm::Value* idx = element_index(l, r);
        out.push_back(op.i0 ? b.CreateAdd(idx, b.getInt32(uint32_t(op.i0)), "", false, true) : idx);
      }
      return out;
    }
    case Op::broadcast:
      return get(op.operands[0], broadcast_source_layout(l, op.operands[0]->type.shape));
    case Op::reshape: case Op::expand_dims:
      return get(op.operands[0], reshape_layout(l, op.operands[0]->type.shape));
    case Op::trans:
      return get(op.operands[0], trans_source_layout(l, op.ints));
    default: {
      std::vector<Values> args;
      for (const ir::Value* o : op.operands) args.push_back(get(o, l));
      Values out;
      for (int r = 0; r < n; ++r) {
        Values a;
        for (auto& x : args) a.push_back(x[r]);
        out.push_back(element(op, a));
      }
      return out;
    }
  }
}

void Lowerer::lower_elementwise_tile(const ir::Operation& op) {
  // The plan picked the layout (that of an operand, usually the first with its own);
  // the other operands are read in it.
  const Layout& l = plan_.of(op.result());
  std::vector<Values> args;
  for (const ir::Value* o : op.operands) args.push_back(get(o, l));
  if (op.op == Op::cast)  // FP8 in pairs
    return set_natural(op.result(), Regs{l, cast_registers(args[0], op.operands[0]->type.dtype,
                                                           op.result()->type.dtype)});
  Values out;
  for (int r = 0; r < l.num_regs(); ++r) {
    Values a;
    for (auto& x : args) a.push_back(x[r]);
    out.push_back(element(op, a));
  }
  set_natural(op.result(), Regs{l, std::move(out)});
}

// Shape ops on eager values: reshape and trans only rename registers; broadcast reads
// its operand in the projection of the result's layout (in registers when the operand
// is a reduction of that layout, the common `x - mean[:, None]`).
void Lowerer::lower_shape_op(const ir::Operation& op) {
  const ir::Value* src = op.operands[0];
  const ir::Value* res = op.result();
  switch (op.op) {
    case Op::reshape: case Op::expand_dims: {
      const Regs& n = natural(src);
      return set_natural(res, Regs{reshape_layout(n.layout, res->type.shape), n.v});
    }
    case Op::trans: {
      const Regs& n = natural(src);
      return set_natural(res, Regs{trans_layout(n.layout, op.ints), n.v});
    }
    case Op::broadcast: {
      const Layout& l = plan_.of(res);
      return set_natural(res, Regs{l, get(src, broadcast_source_layout(l, src->type.shape))});
    }
    default:
      fail(op, fmt::format("gpu lowering: unexpected shape op '{}'", op_name(op.op)));
  }
}

// join, split and cat rename registers: assign_layouts gave their results the layouts in
// which they do (layout.hpp, Triton's JoinOp/SplitOp rules), and insert_layout_conversions
// converted an operand held otherwise. flip reads, for every element, the one mirrored
// along its dim: at flat index ^ c, held by the thread at hardware index ^ h (h = the
// layout's preimage of c, the layout being linear): register r ^ h_reg of lane l ^ h_lane,
// one xor shuffle per register; when warps hold part of the dim, through shared memory.
void Lowerer::lower_move_op(const ir::Operation& op) {
  const ir::Value* res = op.result();
  const Layout& l = plan_.of(res);
  auto tl_bug = [&](const char* what) { fail(op, fmt::format("gpu lowering: {}'s layout {} {} (a tl bug)", op_name(op.op), l.str(), what)); };
  switch (op.op) {
    case Op::join: {  // register 2r + k: register r of operand k
      if (sole_register_bit(l, 1) != 0) tl_bug("does not hold the new dim in register bit 0");
      const Layout src = join_source_layout(l);
      Values a = get(op.operands[0], src), c = get(op.operands[1], src);
      Values out;
      for (size_t r = 0; r < a.size(); ++r) {
        out.push_back(a[r]);
        out.push_back(c[r]);
      }
      return set_natural(res, Regs{l, std::move(out)});
    }
    case Op::cat: {  // the registers of a, then those of b
      if (sole_register_bit(l, uint32_t(l.numel() / 2)) != int(l.reg.size()) - 1)
        tl_bug("does not hold the new top bit of dim 0 in its highest register bit");
      const Layout src = cat_source_layout(l);
      Values out = get(op.operands[0], src);
      Values c = get(op.operands[1], src);
      out.insert(out.end(), c.begin(), c.end());
      return set_natural(res, Regs{l, std::move(out)});
    }
    case Op::split: {  // the registers with bit `i` equal to the half
      const ir::Value* src = op.operands[0];
      const Layout sl = split_source_layout(plan_.of(src), l);
      const std::optional<int> i = sole_register_bit(sl, 1);
      if (!i || !(split_layout(sl, *i) == l)) tl_bug("is not its operand's with the last dim's register dropped");
      Values in = get(src, sl);
      Values out;
      for (int q = 0; q < l.num_regs(); ++q)
        out.push_back(in[size_t((q & ((1 << *i) - 1)) | int(op.i0) << *i | (q >> *i) << (*i + 1))]);
      return set_natural(res, Regs{l, std::move(out)});
    }
    case Op::flip: {
      const ir::Value* src = op.operands[0];
      Values in = get(src, l);
      const int d = int(op.i0);
      const uint32_t c = uint32_t(l.shape[size_t(d)] - 1) << dim_offset(l.shape, d);
      const std::optional<LayoutInverse> inv = invert(l);
      if (!inv) tl_bug("leaves some element unheld");
      uint32_t hr = 0, hl = 0, hw = 0;
      for (size_t k = 0; k < inv->reg.size(); ++k)
        if (c >> k & 1) hr ^= inv->reg[k], hl ^= inv->lane[k], hw ^= inv->warp[k];
      Values out;
      if (hw == 0) {
        for (int r = 0; r < l.num_regs(); ++r) {
          llvm::Value* v = in[size_t(uint32_t(r) ^ hr)];
          out.push_back(hl ? shuffle_any(*this, v, int(hl)) : v);
        }
        return set_natural(res, Regs{l, std::move(out)});
      }
      llvm::Type* ty = in[0]->getType();
      const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
      smem_check_scratch(l.numel() * eb);
      scratch_write_begins();
      smem_store_tile(in, l, ty, 0);
      barrier();
      for (int r = 0; r < l.num_regs(); ++r) {
        llvm::Value* idx = b.CreateXor(element_index(l, r), b.getInt32(c));
        out.push_back(smem_load(ty, smem_ptr(b.CreateMul(idx, b.getInt32(eb))), eb));
      }
      return set_natural(res, Regs{l, std::move(out)});
    }
    case Op::gather: {
      // src once through shared memory in its own layout, then every thread reads, for
      // each of its result registers, the element its index names (Triton's general
      // GatherOp lowering; its warp-local shuffle form is not done yet).
      const ir::Value* src = op.operands[0];
      const ir::Value* index = op.operands[1];
      const Layout sl = preferred_layout(src);
      Values in = get(src, sl);
      Values ix = get(index, l);
      llvm::Type* ty = in[0]->getType();
      const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
      const std::vector<int>& s = src->type.shape;
      const int ax = int(op.i0);
      const int off = dim_offset(s, ax);  // the dims after the axis are the same in both shapes
      const uint32_t n = uint32_t(s[size_t(ax)]);
      const int rbits = off + log2_exact(res->type.shape[size_t(ax)]), sbits = off + log2_exact(n);
      smem_check_scratch(sl.numel() * eb);
      scratch_write_begins();
      smem_store_tile(in, sl, ty, 0);
      barrier();
      Values out;
      for (int r = 0; r < l.num_regs(); ++r) {
        llvm::Value* e = element_index(l, r);
        llvm::Value* i = b.CreateIntCast(ix[size_t(r)], b.getInt32Ty(), is_signed(index->type.dtype));
        llvm::Value* flat = b.CreateOr(b.CreateShl(b.CreateLShr(e, uint64_t(rbits)), uint64_t(sbits)),
                                       b.CreateOr(b.CreateShl(b.CreateAnd(i, n - 1), uint64_t(off)),
                                                  b.CreateAnd(e, (1u << off) - 1)));
        out.push_back(smem_load(ty, smem_ptr(b.CreateMul(flat, b.getInt32(eb))), eb));
      }
      return set_natural(res, Regs{l, std::move(out)});
    }
    default:
      fail(op, fmt::format("gpu lowering: unexpected op '{}'", op_name(op.op)));
  }
}

}  // namespace tl::gpu

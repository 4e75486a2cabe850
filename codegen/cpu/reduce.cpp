// Reductions and scans. f16/bf16 accumulate in f32 and round once at the end (each
// scan output is rounded from the f32 running sum).
//
// A reduction over the last axis (and every argmax/argmin) keeps a scalar accumulator
// per output element; float sums there are marked reassociable, so the vectorizer may
// split them into partial sums, which is what a GPU's tree reduction does too. A
// reduction over an outer axis accumulates whole rows into the output instead, so the
// inner loop runs over contiguous elements in order.
#include <llvm/IR/Constants.h>

#include <cmath>
#include <limits>

#include "codegen/cpu/lower.hpp"

namespace tl::codegen::cpu {

using llvm::Type;
using llvm::Value;

namespace {

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16 || is_fp8(t); }

struct Combiner {
  Lowerer& L;
  ReduceKind kind;
  DType t;  // the input dtype
  Type* ct;  // the accumulator type

  Value* identity() {
    if (is_float(t)) {
      if (kind == ReduceKind::sum) return llvm::ConstantFP::get(ct, -0.0);  // -0 + x == x, signs included
      if (kind == ReduceKind::prod) return llvm::ConstantFP::get(ct, 1.0);
      return llvm::ConstantFP::getNaN(ct);  // maxnum/minnum skip NaN, so all-NaN stays NaN
    }
    unsigned w = ct->getIntegerBitWidth();
    if (kind == ReduceKind::sum || kind == ReduceKind::xor_sum) return llvm::ConstantInt::get(ct, 0);
    if (kind == ReduceKind::prod) return llvm::ConstantInt::get(ct, 1);
    bool s = is_signed(t);
    if (kind == ReduceKind::max) return llvm::ConstantInt::get(L.ctx(), s ? llvm::APInt::getSignedMinValue(w) : llvm::APInt(w, 0));
    return llvm::ConstantInt::get(L.ctx(), s ? llvm::APInt::getSignedMaxValue(w) : llvm::APInt::getMaxValue(w));
  }

  Value* combine(Value* acc, Value* v, bool reassoc) {
    auto& b = L.b();
    if (is_float(t)) {
      if (kind == ReduceKind::sum) {
        auto* add = llvm::cast<llvm::Instruction>(b.CreateFAdd(acc, v));
        if (reassoc) {
          llvm::FastMathFlags fmf;
          fmf.setAllowReassoc();
          add->setFastMathFlags(fmf);
        }
        return add;
      }
      if (kind == ReduceKind::prod) return b.CreateFMul(acc, v);
      return b.CreateBinaryIntrinsic(kind == ReduceKind::max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, acc, v);
    }
    if (kind == ReduceKind::sum) return b.CreateAdd(acc, v);
    if (kind == ReduceKind::xor_sum) return b.CreateXor(acc, v);
    if (kind == ReduceKind::prod) return b.CreateMul(acc, v);
    return L.binary(kind == ReduceKind::max ? Op::max : Op::min, t, acc, v);
  }

  // argmax/argmin: does `v` replace the current extreme `acc`? Strictly better only, so
  // the first extreme wins; a NaN extreme gives way to any number (NaN is ignored).
  Value* better(Value* v, Value* acc) {
    auto& b = L.b();
    bool mx = kind == ReduceKind::argmax;
    if (is_float(t)) {
      Value* strictly = mx ? b.CreateFCmpOGT(v, acc) : b.CreateFCmpOLT(v, acc);
      Value* replaces_nan = b.CreateAnd(b.CreateFCmpUNO(acc, acc), b.CreateFCmpORD(v, v));
      return b.CreateOr(strictly, replaces_nan);
    }
    if (is_signed(t)) return mx ? b.CreateICmpSGT(v, acc) : b.CreateICmpSLT(v, acc);
    return mx ? b.CreateICmpUGT(v, acc) : b.CreateICmpULT(v, acc);
  }
};

std::vector<llvm::Value*> insert_dim(std::vector<llvm::Value*> dims, int axis, llvm::Value* k) {
  dims.insert(dims.begin() + axis, k);
  return dims;
}

}  // namespace

void Lowerer::lower_reduce(const ir::Operation& op) {
  if (!op.regions.empty()) return lower_combine_reduce(op);
  const ir::Value* x = op.operands[0];
  const ir::Value* r = op.result();
  const int axis = int(op.i0);
  const auto kind = ReduceKind(op.i1);
  const DType t = x->type.dtype;
  const std::vector<int>& S = x->type.shape;
  const int n = S[axis];
  Combiner c{*this, kind, t, compute_type(t)};
  const bool arg = kind == ReduceKind::argmax || kind == ReduceKind::argmin;

  if (!arg && axis != x->type.rank() - 1) {
    // Outer axis: out[j] = combine(out[j], x[..k..j]) in the order of x.
    const bool narrow_acc = narrow_float(t);
    const ir::Type acc_type = narrow_acc ? r->type.with_dtype(DType::f32) : r->type;
    Value* acc = alloc_buffer(acc_type, "reduce.acc");
    loop_nest(r->type.shape, [&](const Idx& ri) { store_buf(acc, acc_type.dtype, ri.flat, c.identity()); });
    loop_nest(S, [&](const Idx& xi) {
      std::vector<Value*> rd = xi.dims;
      rd.erase(rd.begin() + axis);
      Idx ri = idx_from_dims(r->type.shape, rd);
      Value* cur = load_buf(acc, acc_type.dtype, ri.flat);
      store_buf(acc, acc_type.dtype, ri.flat, c.combine(cur, widen(elem(x, xi), t), false));
    });
    if (!narrow_acc) {
      rep(r).buf = acc;
      return;
    }
    Value* out = alloc_buffer(r->type, "reduce");
    loop_nest(r->type.shape, [&](const Idx& ri) { store_buf(out, t, ri.flat, narrow(load_buf(acc, DType::f32, ri.flat), t)); });
    rep(r).buf = out;
    return;
  }

  // Last axis, or arg reductions: one accumulator per output element.
  Value* out = r->type.is_scalar() ? nullptr : alloc_buffer(r->type, "reduce");
  Value* result = nullptr;
  auto one_output = [&](const Idx& ri) {
    Value* acc = alloc_scalar(c.ct, "acc");
    Value* acc_i = arg ? alloc_scalar(b_.getInt32Ty(), "acc.index") : nullptr;
    if (arg) {
      Idx first = idx_from_dims(S, insert_dim(ri.dims, axis, b_.getInt64(0)));
      b_.CreateStore(widen(elem(x, first), t), acc);
      b_.CreateStore(b_.getInt32(0), acc_i);
    } else {
      b_.CreateStore(c.identity(), acc);
    }
    loop_nest({n}, [&](const Idx& k) {
      Idx xi = idx_from_dims(S, insert_dim(ri.dims, axis, k.dims[0]));
      Value* v = widen(elem(x, xi), t);
      Value* cur = b_.CreateLoad(c.ct, acc);
      if (!arg) {
        b_.CreateStore(c.combine(cur, v, true), acc);
        return;
      }
      Value* take = c.better(v, cur);
      b_.CreateStore(b_.CreateSelect(take, v, cur), acc);
      Value* ki = b_.CreateTrunc(k.dims[0], b_.getInt32Ty());
      b_.CreateStore(b_.CreateSelect(take, ki, b_.CreateLoad(b_.getInt32Ty(), acc_i)), acc_i);
    });
    result = arg ? b_.CreateLoad(b_.getInt32Ty(), acc_i) : narrow(b_.CreateLoad(c.ct, acc), t);
  };
  if (!out) {
    Idx none;
    one_output(none);
    rep(r).scalar = result;
    return;
  }
  loop_nest(r->type.shape, [&](const Idx& ri) {
    // ri's dims are those of the output; the reduced axis is inserted per element.
    one_output(ri);
    store_buf(out, r->type.dtype, ri.flat, result);
  });
  rep(r).buf = out;
}

void Lowerer::lower_scan(const ir::Operation& op) {
  if (!op.regions.empty()) return lower_combine_scan(op);
  const ir::Value* x = op.operands[0];
  const ir::Value* r = op.result();
  const int axis = int(op.i0);
  const DType t = x->type.dtype;
  const std::vector<int>& S = x->type.shape;
  Combiner c{*this, ReduceKind(op.i1), t, compute_type(t)};  // sum or prod
  std::vector<int> outer = S;
  outer[axis] = 1;
  Value* out = alloc_buffer(r->type, "scan");
  loop_nest(outer, [&](const Idx& oi) {
    Value* acc = alloc_scalar(c.ct, "scan.acc");
    b_.CreateStore(c.identity(), acc);
    loop_nest({S[axis]}, [&](const Idx& k) {
      std::vector<Value*> dims = oi.dims;
      dims[axis] = k.dims[0];
      Idx xi = idx_from_dims(S, dims);
      Value* sum = c.combine(b_.CreateLoad(c.ct, acc), widen(elem(x, xi), t), false);
      b_.CreateStore(sum, acc);
      store_buf(out, t, xi.flat, narrow(sum, t));
    });
  });
  rep(r).buf = out;
}

// ------------------------------------------------------------------ combine regions

std::vector<Value*> Lowerer::inline_combine(const ir::Block& region, const std::vector<Value*>& lhs,
                                            const std::vector<Value*>& rhs) {
  // The region's ops are scalars (SSA values): lowering them again at each combining
  // point rebinds their values, as a call inlined there would.
  for (size_t i = 0; i < lhs.size(); ++i) {
    rep(region.args[i].get()).scalar = lhs[i];
    rep(region.args[lhs.size() + i].get()).scalar = rhs[i];
  }
  lower_block(region);
  std::vector<Value*> out;
  for (const ir::Value* v : region.terminator()->operands) out.push_back(elem(v, Idx{}));
  return out;
}

namespace {
// One accumulator a operand of a combine, as stack slots (mem2reg makes them registers).
struct CombineAcc {
  std::vector<Value*> slots;
  std::vector<Type*> types;
};
}  // namespace

void Lowerer::lower_combine_reduce(const ir::Operation& op) {
  const size_t n = op.operands.size();
  const int axis = int(op.i0);
  const std::vector<int>& S = op.operands[0]->type.shape;
  const int len = S[axis];
  const ir::Block& region = *op.regions[0];
  const bool scalar_out = op.result()->type.is_scalar();
  std::vector<Value*> out(n, nullptr);
  if (!scalar_out)
    for (size_t i = 0; i < n; ++i) out[i] = alloc_buffer(op.result(int(i))->type, "reduce");
  CombineAcc acc;
  for (size_t i = 0; i < n; ++i) {
    acc.types.push_back(reg_type(op.operands[i]->type.dtype));
    acc.slots.push_back(alloc_scalar(acc.types[i], "combine.acc"));
  }
  auto one_output = [&](const Idx& ri) {
    // acc = x[0]; acc = combine(acc, x[k]) for k = 1 .. len-1: a left fold in index order.
    Idx first = idx_from_dims(S, insert_dim(ri.dims, axis, b_.getInt64(0)));
    for (size_t i = 0; i < n; ++i) b_.CreateStore(elem(op.operands[i], first), acc.slots[i]);
    if (len > 1)
      loop_nest({len - 1}, [&](const Idx& k) {
        Idx xi = idx_from_dims(S, insert_dim(ri.dims, axis, b_.CreateAdd(k.dims[0], b_.getInt64(1), "", true, true)));
        std::vector<Value*> lhs, rhs;
        for (size_t i = 0; i < n; ++i) {
          lhs.push_back(b_.CreateLoad(acc.types[i], acc.slots[i]));
          rhs.push_back(elem(op.operands[i], xi));
        }
        std::vector<Value*> r = inline_combine(region, lhs, rhs);
        for (size_t i = 0; i < n; ++i) b_.CreateStore(r[i], acc.slots[i]);
      });
    std::vector<Value*> res;
    for (size_t i = 0; i < n; ++i) res.push_back(b_.CreateLoad(acc.types[i], acc.slots[i]));
    return res;
  };
  if (scalar_out) {
    std::vector<Value*> res = one_output(Idx{});
    for (size_t i = 0; i < n; ++i) rep(op.result(int(i))).scalar = res[i];
    return;
  }
  const std::vector<int>& R = op.result()->type.shape;
  loop_nest(R, [&](const Idx& ri) {
    std::vector<Value*> res = one_output(ri);
    for (size_t i = 0; i < n; ++i) store_buf(out[i], op.result(int(i))->type.dtype, ri.flat, res[i]);
  });
  for (size_t i = 0; i < n; ++i) rep(op.result(int(i))).buf = out[i];
}

void Lowerer::lower_combine_scan(const ir::Operation& op) {
  const size_t n = op.operands.size();
  const int axis = int(op.i0);
  const std::vector<int>& S = op.operands[0]->type.shape;
  const int len = S[axis];
  const ir::Block& region = *op.regions[0];
  std::vector<Value*> out;
  CombineAcc acc;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(alloc_buffer(op.result(int(i))->type, "scan"));
    acc.types.push_back(reg_type(op.operands[i]->type.dtype));
    acc.slots.push_back(alloc_scalar(acc.types[i], "scan.acc"));
  }
  std::vector<int> outer = S;
  outer[axis] = 1;
  loop_nest(outer, [&](const Idx& oi) {
    // out[0] = x[0]; out[k] = combine(out[k-1], x[k]).
    std::vector<Value*> dims = oi.dims;
    dims[axis] = b_.getInt64(0);
    Idx first = idx_from_dims(S, dims);
    for (size_t i = 0; i < n; ++i) {
      Value* v = elem(op.operands[i], first);
      b_.CreateStore(v, acc.slots[i]);
      store_buf(out[i], op.operands[i]->type.dtype, first.flat, v);
    }
    if (len > 1)
      loop_nest({len - 1}, [&](const Idx& k) {
        std::vector<Value*> d = oi.dims;
        d[axis] = b_.CreateAdd(k.dims[0], b_.getInt64(1), "", true, true);
        Idx xi = idx_from_dims(S, d);
        std::vector<Value*> lhs, rhs;
        for (size_t i = 0; i < n; ++i) {
          lhs.push_back(b_.CreateLoad(acc.types[i], acc.slots[i]));
          rhs.push_back(elem(op.operands[i], xi));
        }
        std::vector<Value*> r = inline_combine(region, lhs, rhs);
        for (size_t i = 0; i < n; ++i) {
          b_.CreateStore(r[i], acc.slots[i]);
          store_buf(out[i], op.operands[i]->type.dtype, xi.flat, r[i]);
        }
      });
  });
  for (size_t i = 0; i < n; ++i) rep(op.result(int(i))).buf = out[i];
}

}  // namespace tl::codegen::cpu

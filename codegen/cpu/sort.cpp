// tl::sort (with the indices tl::topk carries) and tl::histogram on the CPU.
//
// sort runs the bitonic network the GPUs run (codegen/gpu/lower_sort.cpp), in place on a
// copy of its operands: the same compare-exchanges in the same order, so that keys which
// compare equal without a second operand (-0.0 and +0.0, NaNs) land where they land on a
// GPU. A top-k (results k long along the dim) is the whole sort's first k. Loops, not unrolled code: stage s (blocks of 2^s) and step j (partner distance
// 2^j) are run-time counters around one loop over the numel / 2 pairs, so a 2^20-element
// sort is three small loops, not 210.
#include <llvm/IR/Constants.h>

#include <bit>

#include "codegen/cpu/lower.hpp"

namespace tl::codegen::cpu {

using llvm::Value;

namespace {

// for (iv = first; iv < end; ++iv) body(iv): i64 bounds known at run time (end > first).
void counted_loop(Lowerer& L, Value* first, Value* end, const std::function<void(Value*)>& body) {
  auto& b = L.b();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* loop = L.new_block("sort.loop");
  llvm::BasicBlock* exit = L.new_block("sort.loop.end");
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* iv = b.CreatePHI(b.getInt64Ty(), 2, "sort.i");
  iv->addIncoming(first, pre);
  L.forget_elements();
  body(iv);
  L.forget_elements();
  Value* next = b.CreateAdd(iv, b.getInt64(1));
  iv->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, end), loop, exit);
  b.SetInsertPoint(exit);
}

}  // namespace

void Lowerer::lower_sort(const ir::Operation& op) {
  const ir::Value* keys = op.operands[0];
  const bool with_payload = op.operands.size() == 2;
  const DType t = keys->type.dtype;
  const std::vector<int>& S = keys->type.shape;
  const int dim = int(op.i0);
  const bool descending = op.i1 != 0;
  int64_t off = 0;  // the dim's lowest bit in the row-major flat index
  for (size_t d = size_t(dim) + 1; d < S.size(); ++d) off += std::countr_zero(unsigned(S[d]));
  const int64_t bits = std::countr_zero(unsigned(S[size_t(dim)]));

  Value* kb = alloc_buffer(keys->type, "sort");
  copy_into(kb, keys);
  rep(op.result(0)).buf = kb;
  Value* pb = nullptr;
  if (with_payload) {
    pb = alloc_buffer(op.operands[1]->type, "sort.payload");
    copy_into(pb, op.operands[1]);
    rep(op.result(1)).buf = pb;
  }
  if (bits == 0) return;

  // x before y in the sorted order: by key (NaN above every number, so last ascending and
  // first descending), then by payload, ascending in both directions (stable).
  auto precedes = [&](Value* x, Value* y, Value* px, Value* py) -> Value* {
    Value *before, *tie;
    if (is_float(t)) {
      x = widen(x, t), y = widen(y, t);
      Value* x_nan = b_.CreateFCmpUNO(x, x);
      Value* y_nan = b_.CreateFCmpUNO(y, y);
      before = descending ? b_.CreateOr(b_.CreateFCmpOGT(x, y), b_.CreateAnd(x_nan, b_.CreateNot(y_nan)))
                          : b_.CreateOr(b_.CreateFCmpOLT(x, y), b_.CreateAnd(y_nan, b_.CreateNot(x_nan)));
      if (with_payload) tie = b_.CreateOr(b_.CreateFCmpOEQ(x, y), b_.CreateAnd(x_nan, y_nan));
    } else {
      const bool s = is_signed(t);
      before = b_.CreateICmp(descending ? (s ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                                        : (s ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT),
                             x, y);
      if (with_payload) tie = b_.CreateICmpEQ(x, y);
    }
    if (!with_payload) return before;
    return b_.CreateOr(before, b_.CreateAnd(tie, b_.CreateICmpSLT(px, py)));
  };

  const DType pt = DType::i32;
  // Stage s merges blocks of 2^s: those with bit s of the coordinate set run the other
  // way (a bitonic sequence for the next stage), except in the last stage. Step j
  // compare-exchanges the pairs 2^j apart.
  counted_loop(*this, b_.getInt64(1), b_.getInt64(bits + 1), [&](Value* s) {
    Value* last_stage = b_.CreateICmpEQ(s, b_.getInt64(bits));
    counted_loop(*this, b_.getInt64(0), s, [&](Value* step) {
      Value* j = b_.CreateSub(b_.CreateSub(s, b_.getInt64(1)), step);  // s-1 down to 0
      Value* p = b_.CreateAdd(j, b_.getInt64(off));                      // the flat-index bit
      Value* low_mask = b_.CreateSub(b_.CreateShl(b_.getInt64(1), p), b_.getInt64(1));
      // (A plain loop: loop_nest's would ask for vectorization, gathers and scatters here.)
      counted_loop(*this, b_.getInt64(0), b_.getInt64(keys->type.numel() / 2), [&](Value* e) {
        // The pair's lower element: the pair index with a 0 inserted at bit p.
        Value* lo = b_.CreateOr(b_.CreateShl(b_.CreateLShr(e, p), b_.CreateAdd(p, b_.getInt64(1))),
                                b_.CreateAnd(e, low_mask));
        Value* hi = b_.CreateOr(lo, b_.CreateShl(b_.getInt64(1), p));
        Value* sbit = b_.CreateTrunc(b_.CreateLShr(lo, b_.CreateAdd(s, b_.getInt64(off))), b_.getInt1Ty());
        Value* reversed = b_.CreateAnd(sbit, b_.CreateNot(last_stage));
        Value* a = load_buf(kb, t, lo);
        Value* c = load_buf(kb, t, hi);
        Value* pa = with_payload ? load_buf(pb, pt, lo) : nullptr;
        Value* pc = with_payload ? load_buf(pb, pt, hi) : nullptr;
        // The lower position takes the first of the pair in its block's direction: swap
        // when the upper precedes the lower (the lower the upper, in a reversed block).
        Value* swap = precedes(b_.CreateSelect(reversed, a, c), b_.CreateSelect(reversed, c, a),
                               with_payload ? b_.CreateSelect(reversed, pa, pc) : nullptr,
                               with_payload ? b_.CreateSelect(reversed, pc, pa) : nullptr);
        store_buf(kb, t, lo, b_.CreateSelect(swap, c, a));
        store_buf(kb, t, hi, b_.CreateSelect(swap, a, c));
        if (with_payload) {
          store_buf(pb, pt, lo, b_.CreateSelect(swap, pc, pa));
          store_buf(pb, pt, hi, b_.CreateSelect(swap, pa, pc));
        }
      });
    });
  });
  // A top-k keeps the first k along the dim. It always carries its payload (the order is
  // total), so the whole sort's first k are what the GPUs' halvings keep.
  const int k = op.result()->type.shape[size_t(dim)];
  if (k == S[size_t(dim)]) return;
  auto first_k = [&](Value* full, const ir::Value* r, DType et) {
    Value* out = alloc_buffer(r->type, "topk");
    loop_nest(r->type.shape, [&](const Idx& i) {
      Value* flat = b_.getInt64(0);
      for (size_t d = 0; d < S.size(); ++d) flat = b_.CreateAdd(b_.CreateMul(flat, b_.getInt64(S[d])), i.dims[d]);
      store_buf(out, et, i.flat, load_buf(full, et, flat));
    });
    rep(r).buf = out;
  };
  first_k(kb, op.result(0), t);
  if (with_payload) first_k(pb, op.result(1), pt);
}

// One pass over the elements: each kept value in [0, num_bins) adds one to its bin (a
// value outside, or masked off, adds zero to bin 0: no branch in the loop).
void Lowerer::lower_histogram(const ir::Operation& op) {
  const ir::Value* x = op.operands[0];
  const ir::Value* mask = op.operands.size() > 1 ? op.operands[1] : nullptr;
  const ir::Value* r = op.result();
  const int64_t bins = r->type.shape[0];
  const DType t = x->type.dtype;
  Value* out = alloc_buffer(r->type, "histogram");
  loop_nest(r->type.shape, [&](const Idx& i) { store_buf(out, DType::i32, i.flat, b_.getInt32(0)); });
  loop_nest(x->type.shape, [&](const Idx& idx) {
    Value* v = b_.CreateIntCast(elem(x, idx), b_.getInt64Ty(), is_signed(t));
    // (A u64 above 2^63 reads as negative here: out of range either way.)
    Value* in = b_.CreateAnd(b_.CreateICmpSGE(v, b_.getInt64(0)), b_.CreateICmpSLT(v, b_.getInt64(bins)));
    if (mask) in = b_.CreateAnd(in, elem(mask, idx));
    Value* bin = b_.CreateSelect(in, v, b_.getInt64(0));
    Value* count = load_buf(out, DType::i32, bin);
    store_buf(out, DType::i32, bin, b_.CreateAdd(count, b_.CreateZExt(in, b_.getInt32Ty())));
  });
  rep(r).buf = out;
}

}  // namespace tl::codegen::cpu

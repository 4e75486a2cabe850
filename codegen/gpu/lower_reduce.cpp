// Reductions and scans. A reduction along an axis combines, in order: the registers a
// thread holds along the axis, then the lanes along it (butterfly shuffles, so every
// lane ends with the same bits), then the warps along it (partials through shared
// memory, read back and combined in one fixed order by every thread). The result is in
// the slice layout of the operand's (reduce_layout), which broadcasting back to the
// operand's shape reads in registers. Scans go through shared memory (Hillis-Steele),
// or stay in registers when a thread holds the whole axis.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

namespace Intr = llvm::Intrinsic;

struct Acc {
  llvm::Value* v;
  llvm::Value* i;  // argmax/argmin: index along the axis
};

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

bool along_axis(const Layout& l, uint32_t image, int axis) {
  if (image == 0) return false;
  for (int bit = 0; (image >> bit) != 0; ++bit)
    if ((image >> bit & 1) && dim_of_bit(l.shape, bit) == axis) return true;
  return false;
}

}  // namespace

// Shuffles any scalar type through 32-bit lane exchanges.
static llvm::Value* shuffle_any(Lowerer& L, llvm::Value* x, int mask) {
  auto& b = L.b;
  llvm::Type* ty = x->getType();
  unsigned bits = ty->getPrimitiveSizeInBits();
  if (bits == 64) {
    llvm::Value* i = b.CreateBitCast(x, b.getInt64Ty());
    llvm::Value* lo = L.hooks_.shuffle_xor(b, b.CreateTrunc(i, b.getInt32Ty()), mask);
    llvm::Value* hi = L.hooks_.shuffle_xor(b, b.CreateTrunc(b.CreateLShr(i, 32), b.getInt32Ty()), mask);
    llvm::Value* r = b.CreateOr(b.CreateZExt(lo, b.getInt64Ty()), b.CreateShl(b.CreateZExt(hi, b.getInt64Ty()), 32));
    return b.CreateBitCast(r, ty);
  }
  llvm::Value* i = ty->isIntegerTy() ? x : b.CreateBitCast(x, b.getIntNTy(bits));
  if (bits < 32) i = b.CreateZExt(i, b.getInt32Ty());
  llvm::Value* r = L.hooks_.shuffle_xor(b, i, mask);
  if (bits < 32) r = b.CreateTrunc(r, b.getIntNTy(bits));
  return ty->isIntegerTy() ? r : b.CreateBitCast(r, ty);
}

static Acc combine(Lowerer& L, ReduceKind k, DType t, const Acc& a, const Acc& c) {
  auto& b = L.b;
  bool fl = is_float(t), sg = is_signed(t);
  switch (k) {
    case ReduceKind::sum: return {fl ? b.CreateFAdd(a.v, c.v) : b.CreateAdd(a.v, c.v), nullptr};
    case ReduceKind::max:
      return {b.CreateBinaryIntrinsic(fl ? Intr::maxnum : sg ? Intr::smax : Intr::umax, a.v, c.v), nullptr};
    case ReduceKind::min:
      return {b.CreateBinaryIntrinsic(fl ? Intr::minnum : sg ? Intr::smin : Intr::umin, a.v, c.v), nullptr};
    case ReduceKind::argmax: case ReduceKind::argmin: {
      bool mx = k == ReduceKind::argmax;
      llvm::Value* first = b.CreateICmpSLT(a.i, c.i);
      llvm::Value* pick_a;
      if (fl) {
        llvm::Value* better = b.CreateFCmp(mx ? llvm::CmpInst::FCMP_OGT : llvm::CmpInst::FCMP_OLT, a.v, c.v);
        llvm::Value* tie = b.CreateAnd(b.CreateFCmpOEQ(a.v, c.v), first);
        llvm::Value* a_nan = b.CreateFCmpUNO(a.v, a.v);
        llvm::Value* c_nan = b.CreateFCmpUNO(c.v, c.v);
        // NaN loses (maxnum-like); between two NaNs the first index wins
        llvm::Value* if_c_nan = b.CreateOr(b.CreateNot(a_nan), first);
        pick_a = b.CreateSelect(c_nan, if_c_nan, b.CreateOr(better, tie));
      } else {
        llvm::Value* better = b.CreateICmp(mx ? (sg ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                                              : (sg ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT),
                                           a.v, c.v);
        pick_a = b.CreateOr(better, b.CreateAnd(b.CreateICmpEQ(a.v, c.v), first));
      }
      return {b.CreateSelect(pick_a, a.v, c.v), b.CreateSelect(pick_a, a.i, c.i)};
    }
  }
  return a;
}

void Lowerer::lower_reduce(const ir::Operation& op) {
  const ir::Value* src = op.operands[0];
  int axis = int(op.i0);
  auto kind = ReduceKind(op.i1);
  bool arg = kind == ReduceKind::argmax || kind == ReduceKind::argmin;
  DType t = src->type.dtype;
  DType at = kind == ReduceKind::sum && narrow_float(t) ? DType::f32 : t;  // f16/bf16 sums accumulate in f32
  Layout in_l = preferred_layout(src);
  Values in = get(src, in_l);
  Layout out_l = reduce_layout(in_l, axis);
  std::vector<int> kept = reduce_kept_reg_bits(in_l, axis);
  std::vector<int> along;
  for (size_t i = 0; i < in_l.reg.size(); ++i)
    if (along_axis(in_l, in_l.reg[i], axis)) along.push_back(int(i));
  int off = dim_offset(in_l.shape, axis);
  uint32_t extent_mask = uint32_t(in_l.shape[axis] - 1);

  auto element = [&](int r) -> Acc {
    Acc a{cast(in[r], t, at), nullptr};
    if (arg) a.i = b.CreateAnd(b.CreateLShr(element_index(in_l, r), uint64_t(off)), extent_mask);
    return a;
  };
  // 1. within the thread
  std::vector<Acc> acc;
  for (int j = 0; j < (1 << kept.size()); ++j) {
    int base = 0;
    for (size_t k = 0; k < kept.size(); ++k)
      if (j >> k & 1) base |= 1 << kept[k];
    Acc a{nullptr, nullptr};
    for (int c = 0; c < (1 << along.size()); ++c) {
      int r = base;
      for (size_t k = 0; k < along.size(); ++k)
        if (c >> k & 1) r |= 1 << along[k];
      Acc e = element(r);
      a = a.v ? combine(*this, kind, at, a, e) : e;
    }
    acc.push_back(a);
  }
  // 2. across lanes
  for (size_t i = 0; i < in_l.lane.size(); ++i) {
    if (!along_axis(in_l, in_l.lane[i], axis)) continue;
    for (Acc& a : acc) {
      Acc o{shuffle_any(*this, a.v, 1 << i), arg ? shuffle_any(*this, a.i, 1 << i) : nullptr};
      a = combine(*this, kind, at, a, o);
    }
  }
  // 3. across warps, through shared memory
  std::vector<int> warp_bits;
  for (size_t i = 0; i < in_l.warp.size(); ++i)
    if (along_axis(in_l, in_l.warp[i], axis)) warp_bits.push_back(int(i));
  if (!warp_bits.empty()) {
    int W = 1 << warp_bits.size();
    int64_t n_out = std::max<int64_t>(1, out_l.numel());
    llvm::Type* ty = reg_type(at);
    unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
    int64_t idx_base = W * n_out * eb;  // byte offset of the index partials
    smem_reserve(idx_base + (arg ? W * n_out * 4 : 0));
    llvm::Value* wk = nullptr;
    for (size_t k = 0; k < warp_bits.size(); ++k) {
      llvm::Value* bit = b.CreateAnd(b.CreateLShr(warp_id(), uint64_t(warp_bits[k])), 1);
      if (k) bit = b.CreateShl(bit, uint64_t(k));
      wk = wk ? b.CreateOr(wk, bit) : bit;
    }
    llvm::Value* slot_base = b.CreateMul(wk, b.getInt32(uint32_t(n_out)));
    smem_before_write();
    if_then(owner_predicate(out_l, /*ignore_warp_copies=*/true), [&] {
      for (size_t j = 0; j < acc.size(); ++j) {
        llvm::Value* slot = b.CreateAdd(slot_base, element_index(out_l, int(j)));
        smem_store(acc[j].v, smem_ptr(b.CreateMul(slot, b.getInt32(eb))), eb);
        if (arg)
          smem_store(acc[j].i, smem_ptr(b.CreateAdd(b.CreateMul(slot, b.getInt32(4)), b.getInt32(uint32_t(idx_base)))),
                     4);
      }
    });
    barrier();
    for (size_t j = 0; j < acc.size(); ++j) {
      Acc a{nullptr, nullptr};
      for (int w = 0; w < W; ++w) {
        llvm::Value* slot = b.CreateAdd(element_index(out_l, int(j)), b.getInt32(uint32_t(w * n_out)));
        Acc e{smem_load(ty, smem_ptr(b.CreateMul(slot, b.getInt32(eb))), eb), nullptr};
        if (arg)
          e.i = smem_load(b.getInt32Ty(),
                          smem_ptr(b.CreateAdd(b.CreateMul(slot, b.getInt32(4)), b.getInt32(uint32_t(idx_base)))), 4);
        a = a.v ? combine(*this, kind, at, a, e) : e;
      }
      acc[j] = a;
    }
    smem_after_read();
  }
  Values out;
  for (Acc& a : acc) out.push_back(arg ? a.i : cast(a.v, at, op.result()->type.dtype));
  if (op.result()->type.is_scalar()) return set_scalar(op.result(), out[0]);
  set_natural(op.result(), Regs{out_l, std::move(out)});
}

void Lowerer::lower_scan(const ir::Operation& op) {
  const ir::Value* src = op.operands[0];
  int axis = int(op.i0);
  DType t = src->type.dtype;
  DType at = narrow_float(t) ? DType::f32 : t;
  bool fl = is_float(at);
  Layout l = preferred_layout(src);
  Values in = get(src, l);
  Values vals;
  for (llvm::Value* x : in) vals.push_back(cast(x, t, at));
  int off = dim_offset(l.shape, axis);
  uint32_t n_axis = uint32_t(l.shape[axis]);
  auto add = [&](llvm::Value* x, llvm::Value* y) { return fl ? b.CreateFAdd(x, y) : b.CreateAdd(x, y); };

  bool in_registers = true;
  for (uint32_t img : l.lane) in_registers &= !along_axis(l, img, axis);
  for (uint32_t img : l.warp) in_registers &= !along_axis(l, img, axis);
  if (in_registers) {
    // Each thread holds whole lines along the axis: a sequential scan per line.
    std::map<uint32_t, std::vector<std::pair<uint32_t, int>>> lines;  // rest of index -> (coord, reg)
    uint32_t axis_mask = (n_axis - 1) << off;
    for (int r = 0; r < l.num_regs(); ++r) {
      uint32_t e = l.reg_part(uint32_t(r));
      lines[e & ~axis_mask].push_back({(e & axis_mask) >> off, r});
    }
    Values out(vals.size());
    for (auto& [rest, line] : lines) {
      std::stable_sort(line.begin(), line.end());
      llvm::Value* run = nullptr;
      uint32_t prev = ~0u;
      llvm::Value* prev_val = nullptr;
      for (auto& [c, r] : line) {
        if (c == prev) { out[r] = prev_val; continue; }  // a duplicate register
        run = run ? add(run, vals[r]) : vals[r];
        out[r] = prev_val = run;
        prev = c;
      }
    }
    vals = out;
  } else {
    llvm::Type* ty = reg_type(at);
    unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
    int64_t numel = l.numel();
    smem_reserve(2 * numel * eb);
    smem_before_write();
    smem_store_tile(vals, l, ty, 0);
    barrier();
    int cur = 0;
    for (uint32_t d = 1; d < n_axis; d <<= 1) {
      Values next(vals.size());
      for (int r = 0; r < l.num_regs(); ++r) {
        llvm::Value* idx = element_index(l, r);
        llvm::Value* c = b.CreateAnd(b.CreateLShr(idx, uint64_t(off)), n_axis - 1);
        llvm::Value* has = b.CreateICmpUGE(c, b.getInt32(d));
        llvm::Value* from = b.CreateSelect(has, b.CreateSub(idx, b.getInt32(d << off)), idx);
        llvm::Value* slot = b.CreateAdd(from, b.getInt32(uint32_t(cur * numel)));
        llvm::Value* x = smem_load(ty, smem_ptr(b.CreateMul(slot, b.getInt32(eb))), eb);
        next[r] = b.CreateSelect(has, add(vals[r], x), vals[r]);
      }
      vals = next;
      cur = 1 - cur;
      smem_store_tile(vals, l, ty, cur * numel);
      barrier();
    }
    smem_after_read();
  }
  Values out;
  for (llvm::Value* x : vals) out.push_back(cast(x, at, t));
  set_natural(op.result(), Regs{l, std::move(out)});
}

}  // namespace tl::gpu

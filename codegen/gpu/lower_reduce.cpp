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
#include <bit>
#include <map>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

namespace Intr = llvm::Intrinsic;

struct Acc {
  llvm::Value* v;
  llvm::Value* i;  // argmax/argmin: index along the axis
};

}  // namespace

// Shuffles any scalar type through 32-bit lane exchanges (a pointer as its address).
llvm::Value* shuffle_any(Lowerer& L, llvm::Value* x, int mask) {
  auto& b = L.b;
  llvm::Type* ty = x->getType();
  if (ty->isPointerTy())
    return b.CreateIntToPtr(shuffle_any(L, b.CreatePtrToInt(x, b.getInt64Ty()), mask), ty);
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
    case ReduceKind::prod: return {fl ? b.CreateFMul(a.v, c.v) : b.CreateMul(a.v, c.v), nullptr};
    case ReduceKind::xor_sum: return {b.CreateXor(a.v, c.v), nullptr};
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
  if (!op.regions.empty()) return lower_combine_reduce(op);
  const ir::Value* src = op.operands[0];
  int axis = int(op.i0);
  auto kind = ReduceKind(op.i1);
  bool arg = kind == ReduceKind::argmax || kind == ReduceKind::argmin;
  DType t = src->type.dtype;
  DType at = gpu_accumulator_dtype(op);  // (f16/bf16 sums accumulate in f32)
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
    // The byte offset of the index partials (i32), after the value partials, rounded up
    // to 4 bytes: values narrower than 4 bytes (i8, f16) leave the i32s misaligned
    // otherwise (fuzz.differential seed 200395: CUDA_ERROR_MISALIGNED_ADDRESS).
    int64_t idx_base = (W * n_out * eb + 3) / 4 * 4;
    smem_check_scratch(idx_base + (arg ? W * n_out * 4 : 0));
    llvm::Value* wk = nullptr;
    for (size_t k = 0; k < warp_bits.size(); ++k) {
      llvm::Value* bit = b.CreateAnd(b.CreateLShr(warp_id(), uint64_t(warp_bits[k])), 1);
      if (k) bit = b.CreateShl(bit, uint64_t(k));
      wk = wk ? b.CreateOr(wk, bit) : bit;
    }
    llvm::Value* slot_base = b.CreateMul(wk, b.getInt32(uint32_t(n_out)));
    scratch_write_begins();
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
  }
  Values out;
  for (Acc& a : acc) out.push_back(arg ? a.i : cast(a.v, at, op.result()->type.dtype));
  if (op.result()->type.is_scalar()) return set_scalar(op.result(), out[0]);
  set_natural(op.result(), Regs{out_l, std::move(out)});
}

// A scan across lanes and warps bit by bit of the axis coordinate (Triton's scan keeps
// the partial sums in registers too; tl's first version staged the whole tile in shared
// memory for a Hillis-Steele pass per bit: 2 * numel elements of LDS, 32 KiB for a
// 4096-element f32 row, which halved a cumsum's occupancy on gfx942). It applies when
// every hardware bit (register, lane, warp) holds either no axis bit or exactly one, and
// nothing of another dimension beside it (blocked layouts). Each register keeps its
// inclusive prefix P within the aligned block of 2^k coordinates that holds it, and the
// block's total T. Going up one axis bit joins a block with its partner (coordinate ^ 2^k):
// both totals become T_lo + T_hi (in that order on both sides, so they stay equal), and
// the upper half's prefixes add T_lo. The partner is another register of the thread (free),
// another lane (one xor shuffle), or another warp: each block total once in shared memory,
// numel / 2^k elements, a barrier, and the partner's read back. Returns false (the caller
// takes the shared-memory path) when the layout does not fit.
static bool scan_by_bits(Lowerer& L, const Layout& l, int axis, DType at, ReduceKind kind, Values& vals) {
  auto& b = L.b;
  int off = dim_offset(l.shape, axis);
  uint32_t n_axis = uint32_t(l.shape[axis]);
  // owner[k]: which hardware bit holds axis bit k (kind 0 register, 1 lane, 2 warp).
  const std::optional<std::vector<HardwareBit>> holders = dim_bit_holders(l, axis);
  if (!holders) return false;
  std::vector<std::pair<int, int>> owner;
  for (const HardwareBit& h : *holders) owner.push_back({int(h.kind), h.index});
  // `add` is the scan's combine: + for cumsum, * for cumprod.
  auto add = [&](llvm::Value* x, llvm::Value* y) { return combine(L, kind, at, {x, nullptr}, {y, nullptr}).v; };
  llvm::Type* ty = L.reg_type(at);
  llvm::Constant* identity = kind == ReduceKind::prod ? (is_float(at) ? llvm::ConstantFP::get(ty, 1.0)
                                                                      : llvm::ConstantInt::get(ty, 1))
                                                      : llvm::Constant::getNullValue(ty);
  unsigned eb = unsigned(L.m_.getDataLayout().getTypeStoreSize(ty));
  int64_t numel = l.numel();
  // The lowest axis bit a warp holds has the most blocks: numel >> k slots.
  for (size_t k = 0; k < owner.size(); ++k)
    if (owner[k].first == 2) {
      L.smem_check_scratch((numel >> k) * eb);
      break;
    }
  Values P = vals, T = vals;
  // What lane and warp levels add to every prefix of a block, kept once per block (so the
  // partners' totals die at once) and added to the prefixes before the next register
  // level, which regroups the blocks, and at the end.
  std::map<uint32_t, llvm::Value*> carry;
  uint32_t carry_mask = 0;  // the block key of the carries: reg_part & carry_mask
  auto flush = [&] {
    for (int r = 0; r < l.num_regs(); ++r)
      if (auto it = carry.find(l.reg_part(uint32_t(r)) & carry_mask); it != carry.end())
        P[size_t(r)] = add(it->second, P[size_t(r)]);
    carry.clear();
  };
  for (size_t k = 0; k < owner.size(); ++k) {
    auto [kind, i] = owner[k];
    if (kind == 0) {
      flush();
      for (int r = 0; r < l.num_regs(); ++r) {
        if (r >> i & 1) continue;
        int hi = r | 1 << i;
        llvm::Value* t = add(T[size_t(r)], T[size_t(hi)]);
        P[size_t(hi)] = add(T[size_t(r)], P[size_t(hi)]);
        T[size_t(r)] = T[size_t(hi)] = t;
      }
      continue;
    }
    // Registers of one block (the same index but for axis bits below k) share its total:
    // one exchange and one new total per block.
    auto block_of = [&](int r) { return l.reg_part(uint32_t(r)) & ~(((1u << k) - 1) << off); };
    llvm::Value* is_hi = kind == 1 ? b.CreateAnd(L.lane_id(), b.getInt32(1u << i))
                                   : b.CreateAnd(L.warp_id(), b.getInt32(1u << i));
    is_hi = b.CreateICmpNE(is_hi, b.getInt32(0));
    std::map<uint32_t, std::pair<llvm::Value*, llvm::Value*>> joined;  // block -> (partner's T, new T)
    if (kind == 1) {
      for (int r = 0; r < l.num_regs(); ++r)
        if (!joined.count(block_of(r))) {
          llvm::Value* t = T[size_t(r)];
          llvm::Value* other = shuffle_any(L, t, 1 << i);
          joined[block_of(r)] = {other, b.CreateSelect(is_hi, add(other, t), add(t, other))};
        }
    } else {
      // Across warps: each block's total in shared memory at slot = (the index without
      // its axis field, compacted) * blocks + block number; the partner's read back.
      uint32_t blocks = n_axis >> k;
      auto slot_of = [&](llvm::Value* idx, bool partner) {
        llvm::Value* blk = b.CreateLShr(b.CreateAnd(b.CreateLShr(idx, uint64_t(off)), n_axis - 1), uint64_t(k));
        if (partner) blk = b.CreateXor(blk, 1);
        llvm::Value* low = b.CreateAnd(idx, b.getInt32((1u << off) - 1));
        llvm::Value* high = b.CreateLShr(idx, uint64_t(off + std::countr_zero(n_axis)));
        llvm::Value* rest = b.CreateOr(b.CreateShl(high, uint64_t(off)), low);
        return b.CreateMul(b.CreateAdd(b.CreateMul(rest, b.getInt32(blocks)), blk), b.getInt32(eb));
      };
      std::map<uint32_t, int> rep;  // block -> its first register
      for (int r = 0; r < l.num_regs(); ++r) rep.emplace(block_of(r), r);
      L.scratch_write_begins();
      std::map<uint32_t, llvm::Value*> idx;
      for (auto [blk, r] : rep) {
        idx[blk] = L.element_index(l, r);
        L.smem_store(T[size_t(r)], L.smem_ptr(slot_of(idx[blk], false)), eb);  // copies write the same bits
      }
      L.barrier();
      for (auto [blk, r] : rep) {
        llvm::Value* t = T[size_t(r)];
        llvm::Value* other = L.smem_load(ty, L.smem_ptr(slot_of(idx[blk], true)), eb);
        joined[blk] = {other, b.CreateSelect(is_hi, add(other, t), add(t, other))};
      }
    }
    // Blocks only grow: a carry's block (key at an earlier level) lies inside this level's.
    carry_mask = ~(((1u << k) - 1) << off);
    std::map<uint32_t, llvm::Value*> grown;
    for (auto& [blk, j] : joined) {
      llvm::Value* c = nullptr;
      for (auto& [old_blk, v] : carry)
        if ((old_blk & carry_mask) == blk) c = v;  // one per block: the key only lost bits below k
      llvm::Value* up = c ? add(j.first, c) : j.first;
      grown[blk] = c ? b.CreateSelect(is_hi, up, c)
                     : b.CreateSelect(is_hi, up, identity);
    }
    carry = std::move(grown);
    for (int r = 0; r < l.num_regs(); ++r) T[size_t(r)] = joined[block_of(r)].second;
  }
  flush();
  vals = P;
  return true;
}

void Lowerer::lower_scan(const ir::Operation& op) {
  if (!op.regions.empty()) return lower_combine_scan(op);
  const ir::Value* src = op.operands[0];
  int axis = int(op.i0);
  DType t = src->type.dtype;
  DType at = gpu_accumulator_dtype(op);
  const auto kind = ReduceKind(op.i1);  // sum or prod
  Layout l = preferred_layout(src);
  Values in = get(src, l);
  Values vals;
  for (llvm::Value* x : in) vals.push_back(cast(x, t, at));
  int off = dim_offset(l.shape, axis);
  uint32_t n_axis = uint32_t(l.shape[axis]);
  auto add = [&](llvm::Value* x, llvm::Value* y) { return combine(*this, kind, at, {x, nullptr}, {y, nullptr}).v; };

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
  } else if (!scan_by_bits(*this, l, axis, at, kind, vals)) {
    llvm::Type* ty = reg_type(at);
    unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
    int64_t numel = l.numel();
    smem_check_scratch(2 * numel * eb);
    scratch_write_begins();
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
  }
  Values out;
  for (llvm::Value* x : vals) out.push_back(cast(x, at, t));
  set_natural(op.result(), Regs{l, std::move(out)});
}

}  // namespace tl::gpu

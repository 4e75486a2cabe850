// tl::sort (Triton's bitonic tl.sort, with the indices tl::topk carries) and tl::histogram.
//
// sort is the bitonic network Triton builds (stage s merges blocks of 2^s, step j compare-
// exchanges the elements 2^j apart along the dim), run on the registers of the sort's
// layout bit by bit of the dim, as the scan goes (dim_bit_holders, layout.hpp): coordinate
// bit j held by a register bit pairs two registers of one thread (no data moves), by a
// lane bit is one xor shuffle a register, by a warp bit goes through shared memory (every
// register written at its flat index, a barrier, the partner's read back). assign_layouts
// gives the sort a blocked layout where its operand's is not of that form (sort_layout:
// registers along the dim first). The CPU runs the same network (codegen/cpu/sort.cpp), so
// equal keys land where they land here. A top-k (results k long along the dim) is Triton's
// bitonic top-k: blocks of k sorted, then the dim halved a bit at a time, the k kept merged
// after each halving. With a payload (the indices), value and index travel as one 64-bit
// key where both fit (Packing).
//
// histogram counts into shared memory with relaxed workgroup-scope atomics (each element
// once: copies of it in other lanes, warps or registers are skipped), then reads the bins
// back in the result's layout.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>

#include <bit>
#include <functional>
#include <limits>
#include <optional>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {

// A sort with a payload whose (key, payload) fit in 64 bits sorts one u64 an element: the
// key's order-preserving bits on top, the payload below them (reversed for a descending
// sort, so that equal keys still come in payload order), and for floats the key's own sign
// and mantissa at the bottom. The payload is unique along the dim (the positions tl::sort
// and tl::topk give it), so no two packed keys are equal and they compare as the pairs do:
// one unsigned compare a step instead of the float compare, the NaN tests and the tie-
// break, and one value through each shuffle or shared-memory trip instead of two (Triton's
// MoE kernels pack (logit, expert) into an int64 by hand for the same reason). Every NaN
// packs as one NaN above +inf and -0.0 as +0.0 (they compare as numbers), and the value
// comes back bit for bit: the exponent from the ordered bits (the canonical NaN and zero
// keep the original's), sign and mantissa from the bottom field.
struct Packing {
  int width = 0;       // W: the key's bits
  int mantissa = 0;    // M: a float's mantissa bits (the bottom field is M + 1 bits); 0 for integers
  int index_bits = 0;  // the payload's field, above the bottom field
  int index_shift() const { return mantissa ? mantissa + 1 : 0; }
};

std::optional<Packing> packing(DType t, const passes::ValueRange& payload) {
  Packing p;
  switch (t) {
    case DType::i8: case DType::u8: p.width = 8; break;
    case DType::i16: case DType::u16: p.width = 16; break;
    case DType::i32: case DType::u32: p.width = 32; break;
    case DType::f16: p.width = 16, p.mantissa = 10; break;
    case DType::bf16: p.width = 16, p.mantissa = 7; break;
    case DType::f32: p.width = 32, p.mantissa = 23; break;
    default: return std::nullopt;  // (64-bit keys leave no room)
  }
  if (payload.lo < 0 || payload.hi > std::numeric_limits<int32_t>::max()) return std::nullopt;
  p.index_bits = int(std::bit_width(uint64_t(payload.hi)));
  if (p.width + p.index_bits + p.index_shift() > 64) return std::nullopt;  // (f32: dims up to 256)
  return p;
}

}  // namespace

void Lowerer::lower_sort(const ir::Operation& op) {
  const ir::Value* keys = op.operands[0];
  const bool with_payload = op.operands.size() == 2;
  const DType t = keys->type.dtype;
  const int dim = int(op.i0);
  const bool descending = op.i1 != 0;
  // The layout it works in: its results' for a whole sort; a top-k's is recorded on the op
  // (its results hold what the halvings leave: topk_layout).
  const Layout& l = op.layout ? *op.layout : plan_.of(op.result());
  const Layout& out_l = plan_.of(op.result());
  const std::optional<std::vector<HardwareBit>> holders = dim_bit_holders(l, dim);
  if (!holders) fail(op, fmt::format("gpu lowering: sort's layout {} does not hold dim {} bit by bit (a tl bug)", l.str(), dim));
  const int bits = int(holders->size());
  const int kbits = std::countr_zero(unsigned(op.result()->type.shape[size_t(dim)]));
  const int off = dim_offset(l.shape, dim);
  const int nr = l.num_regs();
  Values key = get(keys, l);
  Values pay = with_payload ? get(op.operands[1], l) : Values{};
  llvm::Type* value_ty = key[0]->getType();
  // With a payload the order is total (the payload is unique along the dim): x precedes y
  // exactly when y does not precede x, one compare where a block's direction is only known
  // at run time.
  const bool unique = with_payload;

  const std::optional<Packing> pk = with_payload ? packing(t, axis_.get(op.operands[1]).range) : std::nullopt;
  llvm::Type* wt = pk ? b.getIntNTy(unsigned(pk->width)) : nullptr;
  llvm::Type* i64 = b.getInt64Ty();
  const uint64_t sign = pk ? uint64_t(1) << (pk->width - 1) : 0;
  const uint64_t mant = pk ? (uint64_t(1) << pk->mantissa) - 1 : 0;
  const uint64_t exp_bits = (sign - 1) & ~mant;  // a float's exponent field, all ones: +inf
  const uint64_t index_max = pk ? (uint64_t(1) << pk->index_bits) - 1 : 0;
  auto wc = [&](uint64_t c) { return llvm::ConstantInt::get(wt, c); };
  auto pack = [&](llvm::Value* x, llvm::Value* p) -> llvm::Value* {
    llvm::Value* v = is_float(t) ? b.CreateBitCast(x, wt) : x;
    llvm::Value* ord;
    if (!is_float(t)) {
      ord = is_signed(t) ? b.CreateXor(v, wc(sign)) : v;
    } else {
      llvm::Value* mag = b.CreateAnd(v, wc(sign - 1));
      llvm::Value* canon = b.CreateSelect(b.CreateICmpUGT(mag, wc(exp_bits)), wc(exp_bits + 1),
                                          b.CreateSelect(b.CreateICmpEQ(mag, wc(0)), wc(0), v));
      ord = b.CreateSelect(b.CreateICmpSLT(canon, wc(0)), b.CreateNot(canon), b.CreateOr(canon, wc(sign)));
    }
    llvm::Value* tie = b.CreateZExt(p, i64);
    if (descending) tie = b.CreateSub(b.getInt64(index_max), tie);
    llvm::Value* k = b.CreateOr(b.CreateShl(b.CreateZExt(ord, i64), uint64_t(64 - pk->width)),
                                b.CreateShl(tie, uint64_t(pk->index_shift())));
    if (!is_float(t)) return k;
    llvm::Value* low = b.CreateOr(b.CreateShl(b.CreateLShr(v, uint64_t(pk->width - 1)), uint64_t(pk->mantissa)),
                                  b.CreateAnd(v, wc(mant)));
    return b.CreateOr(k, b.CreateZExt(low, i64));
  };
  auto unpack = [&](llvm::Value* k) -> std::pair<llvm::Value*, llvm::Value*> {
    llvm::Value* ord = b.CreateTrunc(b.CreateLShr(k, uint64_t(64 - pk->width)), wt);
    llvm::Value* p = b.CreateAnd(b.CreateLShr(k, uint64_t(pk->index_shift())), b.getInt64(index_max));
    if (descending) p = b.CreateSub(b.getInt64(index_max), p);
    p = b.CreateTrunc(p, b.getInt32Ty());
    if (!is_float(t)) return {is_signed(t) ? b.CreateXor(ord, wc(sign)) : ord, p};
    llvm::Value* canon = b.CreateSelect(b.CreateICmpSLT(ord, wc(0)), b.CreateXor(ord, wc(sign)), b.CreateNot(ord));
    llvm::Value* low = b.CreateTrunc(k, wt);
    llvm::Value* v = b.CreateOr(b.CreateAnd(canon, wc(exp_bits)),
                                b.CreateOr(b.CreateShl(b.CreateLShr(low, uint64_t(pk->mantissa)), uint64_t(pk->width - 1)),
                                           b.CreateAnd(low, wc(mant))));
    return {b.CreateBitCast(v, value_ty), p};
  };
  if (pk) {
    for (int r = 0; r < nr; ++r) key[size_t(r)] = pack(key[size_t(r)], pay[size_t(r)]);
    pay.clear();
  }
  const bool pair = !pay.empty();  // a second value through the network

  // x before y in the sorted order: packed, as unsigned numbers; else by key (NaN above
  // every number: last ascending, first descending; f16/bf16 compared in f32), then by
  // payload, ascending both ways (stable).
  auto precedes = [&](llvm::Value* x, llvm::Value* y, llvm::Value* px, llvm::Value* py) -> llvm::Value* {
    if (pk) return descending ? b.CreateICmpUGT(x, y) : b.CreateICmpULT(x, y);
    llvm::Value *before, *tie = nullptr;
    if (is_float(t)) {
      if (t == DType::f16 || t == DType::bf16) x = cast(x, t, DType::f32), y = cast(y, t, DType::f32);
      llvm::Value* x_nan = b.CreateFCmpUNO(x, x);
      llvm::Value* y_nan = b.CreateFCmpUNO(y, y);
      before = descending ? b.CreateOr(b.CreateFCmpOGT(x, y), b.CreateAnd(x_nan, b.CreateNot(y_nan)))
                          : b.CreateOr(b.CreateFCmpOLT(x, y), b.CreateAnd(y_nan, b.CreateNot(x_nan)));
      if (pair) tie = b.CreateOr(b.CreateFCmpOEQ(x, y), b.CreateAnd(x_nan, y_nan));
    } else {
      const bool s = is_signed(t);
      before = b.CreateICmp(descending ? (s ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                                       : (s ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT),
                            x, y);
      if (pair) tie = b.CreateICmpEQ(x, y);
    }
    if (!pair) return before;
    return b.CreateOr(before, b.CreateAnd(tie, b.CreateICmpSLT(px, py)));
  };
  // Hardware bit h of register r's element, as an i1 (a constant for a register bit).
  auto bit_of = [&](const HardwareBit& h, int r) -> llvm::Value* {
    if (h.kind == HardwareBit::reg) return b.getInt1((r >> h.index) & 1);
    llvm::Value* id = h.kind == HardwareBit::lane ? lane_id() : warp_id();
    return b.CreateICmpNE(b.CreateAnd(id, b.getInt32(1u << h.index)), b.getInt32(0));
  };
  auto at = [](Values& v, int r) -> llvm::Value*& { return v[size_t(r)]; };

  // A top-k's halvings combine register pairs into one: the register bits they used up
  // (`dead`) mark registers no longer read.
  uint32_t dead = 0;
  auto live = [&](int r) { return (r & dead) == 0; };

  llvm::Type* kty = key[0]->getType();
  const unsigned keb = unsigned(m_.getDataLayout().getTypeStoreSize(kty));
  const int64_t pay_base = (l.numel() * keb + 3) / 4;  // the payload after the keys, in i32s
  bool reserved = false;
  // The partner of every live register across coordinate bit c of the dim, held by lane
  // or warp bit h: an xor shuffle, or a trip through shared memory (every register written
  // at its flat index, a barrier, the partner's read back).
  auto fetch = [&](const HardwareBit& h, int c, Values& other, Values& other_pay) {
    other.assign(size_t(nr), nullptr);
    other_pay.assign(pair ? size_t(nr) : 0, nullptr);
    if (h.kind == HardwareBit::lane) {
      for (int r = 0; r < nr; ++r) {
        if (!live(r)) continue;
        at(other, r) = shuffle_any(*this, at(key, r), 1 << h.index);
        if (pair) at(other_pay, r) = shuffle_any(*this, at(pay, r), 1 << h.index);
      }
      return;
    }
    if (!reserved) smem_check_scratch(pay_base * 4 + (pair ? l.numel() * 4 : 0));
    reserved = true;
    scratch_write_begins();
    smem_store_tile(key, l, kty, 0);  // (registers a halving used up too: no one reads them)
    if (pair) smem_store_tile(pay, l, b.getInt32Ty(), pay_base);
    barrier();
    const uint32_t partner_bit = 1u << (off + c);
    for (int r = 0; r < nr; ++r) {
      if (!live(r)) continue;
      llvm::Value* idx = b.CreateXor(element_index(l, r), b.getInt32(partner_bit));
      at(other, r) = smem_load(kty, smem_ptr(b.CreateMul(idx, b.getInt32(keb))), keb);
      if (pair)
        at(other_pay, r) =
            smem_load(b.getInt32Ty(), smem_ptr(b.CreateMul(b.CreateAdd(idx, b.getInt32(uint32_t(pay_base))), b.getInt32(4))), 4);
    }
  };

  // One compare-exchange step across coordinate bit j (Triton's _compare_and_swap): each
  // pair ordered in its block's direction, blocks where `reversed` holds the other way.
  auto step = [&](int j, const std::function<llvm::Value*(int)>& reversed) {
    const HardwareBit h = (*holders)[size_t(j)];
    if (h.kind == HardwareBit::reg) {
      for (int r = 0; r < nr; ++r) {
        if (r >> h.index & 1 || !live(r)) continue;
        const int hr = r | 1 << h.index;  // the pair's upper element
        llvm::Value* rev = reversed(r);
        llvm::Value* ph = pair ? at(pay, hr) : nullptr;
        llvm::Value* pl = pair ? at(pay, r) : nullptr;
        llvm::Value* swap = unique ? b.CreateXor(precedes(at(key, hr), at(key, r), ph, pl), rev)
                                   : b.CreateSelect(rev, precedes(at(key, r), at(key, hr), pl, ph),
                                                    precedes(at(key, hr), at(key, r), ph, pl));
        llvm::Value* lo = at(key, r);
        at(key, r) = b.CreateSelect(swap, at(key, hr), lo);
        at(key, hr) = b.CreateSelect(swap, lo, at(key, hr));
        if (pair) {
          at(pay, r) = b.CreateSelect(swap, ph, pl);
          at(pay, hr) = b.CreateSelect(swap, pl, ph);
        }
      }
      return;
    }
    // The partner lives in another lane or warp: each side keeps its own or takes the
    // partner's by the same comparison of (lower, upper).
    Values other, other_pay;
    fetch(h, j, other, other_pay);
    for (int r = 0; r < nr; ++r) {
      if (!live(r)) continue;
      // upper ^ reversed: compare (mine, partner's) the other way round, which is the
      // same (lower, upper) comparison the partner makes.
      llvm::Value* f = b.CreateXor(bit_of(h, r), reversed(r));
      llvm::Value *x = at(key, r), *y = at(other, r);
      llvm::Value* px = pair ? at(pay, r) : nullptr;
      llvm::Value* py = pair ? at(other_pay, r) : nullptr;
      llvm::Value* swap = unique ? b.CreateXor(precedes(y, x, py, px), f)
                                 : precedes(b.CreateSelect(f, x, y), b.CreateSelect(f, y, x),
                                            pair ? b.CreateSelect(f, px, py) : nullptr,
                                            pair ? b.CreateSelect(f, py, px) : nullptr);
      at(key, r) = b.CreateSelect(swap, y, x);
      if (pair) at(pay, r) = b.CreateSelect(swap, py, px);
    }
  };

  // A top-k's halving across coordinate bit c (Triton's max over that hypercube dim): the
  // two k-blocks either side are sorted in opposite directions, so the first of each
  // position's pair, in the sort's direction, make the best k of both as a bitonic
  // sequence. A register bit leaves the lower register of each pair; a lane or warp bit
  // leaves both sides holding the same k.
  auto halve = [&](int c) {
    const HardwareBit h = (*holders)[size_t(c)];
    auto keep_first = [&](int r, llvm::Value* y, llvm::Value* py) {
      llvm::Value* take = precedes(y, at(key, r), py, pair ? at(pay, r) : nullptr);
      at(key, r) = b.CreateSelect(take, y, at(key, r));
      if (pair) at(pay, r) = b.CreateSelect(take, py, at(pay, r));
    };
    if (h.kind == HardwareBit::reg) {
      for (int r = 0; r < nr; ++r)
        if (!(r >> h.index & 1) && live(r)) keep_first(r, at(key, r | 1 << h.index), pair ? at(pay, r | 1 << h.index) : nullptr);
      dead |= 1u << h.index;
      return;
    }
    Values other, other_pay;
    fetch(h, c, other, other_pay);
    for (int r = 0; r < nr; ++r)
      if (live(r)) keep_first(r, at(other, r), pair ? at(other_pay, r) : nullptr);
  };

  // Blocks whose coordinate bit `s` is set run the other way (they make the bitonic
  // sequences of the next merge); the last merge runs one way.
  auto direction_by = [&](int s) -> std::function<llvm::Value*(int)> {
    if (s == bits) return [&](int) -> llvm::Value* { return b.getFalse(); };
    const HardwareBit h = (*holders)[size_t(s)];
    return [&, h](int r) { return bit_of(h, r); };
  };
  // Stage s merges blocks of 2^s (Triton's bitonic sort, blocks of k for a top-k) ...
  for (int s = 1; s <= kbits; ++s)
    for (int j = s - 1; j >= 0; --j) step(j, direction_by(s));
  // ... then a top-k halves the rest of the dim one bit at a time, merging the k kept each
  // time (Triton's sort_impl with k: log k steps a halving, where the whole sort takes s).
  for (int i = kbits + 1; i <= bits; ++i) {
    halve(i - 1);
    for (int j = kbits - 1; j >= 0; --j) step(j, direction_by(i));
  }

  Values out_keys, out_pay;
  for (int r = 0; r < nr; ++r) {
    if (!live(r)) continue;
    if (pk) {
      auto [v, p] = unpack(at(key, r));
      out_keys.push_back(v);
      out_pay.push_back(p);
    } else {
      out_keys.push_back(at(key, r));
      if (pair) out_pay.push_back(at(pay, r));
    }
  }
  if (int(out_keys.size()) != out_l.num_regs())
    fail(op, fmt::format("gpu lowering: a top-k kept {} registers where its result's layout {} has {} (a tl bug)",
                         out_keys.size(), out_l.str(), out_l.num_regs()));
  set_natural(op.result(0), Regs{out_l, std::move(out_keys)});
  if (with_payload) set_natural(op.result(1), Regs{out_l, std::move(out_pay)});
}

void Lowerer::lower_histogram(const ir::Operation& op) {
  const ir::Value* x = op.operands[0];
  const ir::Value* mask = op.operands.size() > 1 ? op.operands[1] : nullptr;
  const DType t = x->type.dtype;
  const Layout lx = preferred_layout(x);
  Values v = get(x, lx);
  Values m = mask ? get(mask, lx) : Values{};
  const Layout& out_l = plan_.of(op.result());
  const int64_t bins = op.result()->type.shape[0];
  smem_check_scratch(bins * 4);
  scratch_write_begins();
  for (int64_t i = 0; i < bins; i += threads_) {
    llvm::Value* bin = b.CreateAdd(thread_id(), b.getInt32(uint32_t(i)));
    if_then(bins - i < threads_ ? b.CreateICmpULT(bin, b.getInt32(uint32_t(bins))) : nullptr,
            [&] { smem_store(b.getInt32(0), smem_ptr(b.CreateMul(bin, b.getInt32(4))), 4); });
  }
  barrier();
  // Each element counted once: by one of the threads holding it, from one of its registers.
  llvm::Value* owner = owner_predicate(lx);
  const uint32_t dup = lx.duplicate_reg_mask();
  auto ssid = llvm::SyncScope::ID(hooks_.sync_scope(ctx_, scope::cta));
  llvm::Type* wide = b.getInt64Ty();
  for (int r = 0; r < lx.num_regs(); ++r) {
    if (r & dup) continue;
    llvm::Value* val = b.CreateIntCast(v[size_t(r)], wide, is_signed(t));
    // (A u64 above 2^63 reads as negative: out of range either way.)
    llvm::Value* in = b.CreateAnd(b.CreateICmpSGE(val, b.getInt64(0)), b.CreateICmpSLT(val, b.getInt64(bins)));
    if (mask) in = b.CreateAnd(in, m[size_t(r)]);
    if (owner) in = b.CreateAnd(in, owner);
    if_then(in, [&] {
      llvm::Value* p = smem_ptr(b.CreateMul(b.CreateTrunc(val, b.getInt32Ty()), b.getInt32(4)));
      b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, p, b.getInt32(1), llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic,
                        ssid);
    });
  }
  barrier();
  Values out;
  for (int r = 0; r < out_l.num_regs(); ++r)
    out.push_back(smem_load(b.getInt32Ty(), smem_ptr(b.CreateMul(element_index(out_l, r), b.getInt32(4))), 4));
  set_natural(op.result(), Regs{out_l, std::move(out)});
}

}  // namespace tl::gpu

// tl::sort (Triton's bitonic tl.sort, with the indices tl::topk carries) and tl::histogram.
//
// sort is the bitonic network Triton builds (stage s merges blocks of 2^s, step j compare-
// exchanges the elements 2^j apart along the dim), run on the registers of the sort's
// layout bit by bit of the dim, as the scan goes (dim_bit_holders, layout.hpp): coordinate
// bit j held by a register bit pairs two registers of one thread (no data moves), by a
// lane bit is one xor shuffle a register, by a warp bit goes through shared memory (every
// register written at its flat index, a barrier, the partner's read back). assign_layouts
// gives the sort a blocked layout where its operand's is not of that form. The CPU runs the
// same network (codegen/cpu/sort.cpp), so equal keys land where they land here.
//
// histogram counts into shared memory with relaxed workgroup-scope atomics (each element
// once: copies of it in other lanes, warps or registers are skipped), then reads the bins
// back in the result's layout.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>

#include <bit>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

void Lowerer::lower_sort(const ir::Operation& op) {
  const ir::Value* keys = op.operands[0];
  const bool with_payload = op.operands.size() == 2;
  const DType t = keys->type.dtype;
  const Layout& l = plan_.of(op.result());
  const int dim = int(op.i0);
  const bool descending = op.i1 != 0;
  const std::optional<std::vector<HardwareBit>> holders = dim_bit_holders(l, dim);
  if (!holders) fail(op, fmt::format("gpu lowering: sort's layout {} does not hold dim {} bit by bit (a tl bug)", l.str(), dim));
  const int bits = int(holders->size());
  const int off = dim_offset(l.shape, dim);
  Values key = get(keys, l);
  Values pay = with_payload ? get(op.operands[1], l) : Values{};
  const int nr = l.num_regs();

  // x before y in the sorted order: by key (NaN above every number: last ascending, first
  // descending; f16/bf16 compared in f32), then by payload, ascending both ways (stable).
  auto precedes = [&](llvm::Value* x, llvm::Value* y, llvm::Value* px, llvm::Value* py) -> llvm::Value* {
    llvm::Value *before, *tie = nullptr;
    if (is_float(t)) {
      if (t == DType::f16 || t == DType::bf16) x = cast(x, t, DType::f32), y = cast(y, t, DType::f32);
      llvm::Value* x_nan = b.CreateFCmpUNO(x, x);
      llvm::Value* y_nan = b.CreateFCmpUNO(y, y);
      before = descending ? b.CreateOr(b.CreateFCmpOGT(x, y), b.CreateAnd(x_nan, b.CreateNot(y_nan)))
                          : b.CreateOr(b.CreateFCmpOLT(x, y), b.CreateAnd(y_nan, b.CreateNot(x_nan)));
      if (with_payload) tie = b.CreateOr(b.CreateFCmpOEQ(x, y), b.CreateAnd(x_nan, y_nan));
    } else {
      const bool s = is_signed(t);
      before = b.CreateICmp(descending ? (s ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                                       : (s ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT),
                            x, y);
      if (with_payload) tie = b.CreateICmpEQ(x, y);
    }
    if (!with_payload) return before;
    return b.CreateOr(before, b.CreateAnd(tie, b.CreateICmpSLT(px, py)));
  };
  // Hardware bit h of register r's element, as an i1 (a constant for a register bit).
  auto bit_of = [&](const HardwareBit& h, int r) -> llvm::Value* {
    if (h.kind == HardwareBit::reg) return b.getInt1((r >> h.index) & 1);
    llvm::Value* id = h.kind == HardwareBit::lane ? lane_id() : warp_id();
    return b.CreateICmpNE(b.CreateAnd(id, b.getInt32(1u << h.index)), b.getInt32(0));
  };

  llvm::Type* kty = key[0]->getType();
  const unsigned keb = unsigned(m_.getDataLayout().getTypeStoreSize(kty));
  const int64_t pay_base = (l.numel() * keb + 3) / 4;  // the payload after the keys, in i32s
  bool reserved = false;
  for (int s = 1; s <= bits; ++s) {
    for (int j = s - 1; j >= 0; --j) {
      const HardwareBit h = (*holders)[size_t(j)];
      // Blocks of 2^s whose coordinate bit s is set run the other way (they make the
      // bitonic sequences of the next stage); the last stage runs one way.
      auto reversed = [&](int r) -> llvm::Value* { return s == bits ? b.getFalse() : bit_of((*holders)[size_t(s)], r); };
      if (h.kind == HardwareBit::reg) {
        for (int r = 0; r < nr; ++r) {
          if (r >> h.index & 1) continue;
          const int hr = r | 1 << h.index;  // the pair's upper element
          llvm::Value* rev = reversed(r);
          llvm::Value* ph = with_payload ? pay[size_t(hr)] : nullptr;
          llvm::Value* pl = with_payload ? pay[size_t(r)] : nullptr;
          llvm::Value* swap = b.CreateSelect(rev, precedes(key[size_t(r)], key[size_t(hr)], pl, ph),
                                             precedes(key[size_t(hr)], key[size_t(r)], ph, pl));
          llvm::Value* lo = key[size_t(r)];
          key[size_t(r)] = b.CreateSelect(swap, key[size_t(hr)], lo);
          key[size_t(hr)] = b.CreateSelect(swap, lo, key[size_t(hr)]);
          if (with_payload) {
            pay[size_t(r)] = b.CreateSelect(swap, ph, pl);
            pay[size_t(hr)] = b.CreateSelect(swap, pl, ph);
          }
        }
        continue;
      }
      // The partner lives in another lane or warp: fetch it, and let each side keep its
      // own or take the partner's by the same comparison of (lower, upper).
      Values other(static_cast<size_t>(nr)), other_pay(with_payload ? static_cast<size_t>(nr) : 0);
      if (h.kind == HardwareBit::lane) {
        for (int r = 0; r < nr; ++r) {
          other[size_t(r)] = shuffle_any(*this, key[size_t(r)], 1 << h.index);
          if (with_payload) other_pay[size_t(r)] = shuffle_any(*this, pay[size_t(r)], 1 << h.index);
        }
      } else {
        if (!reserved) smem_check_scratch(pay_base * 4 + (with_payload ? l.numel() * 4 : 0));
        reserved = true;
        smem_before_write();
        smem_store_tile(key, l, kty, 0);
        if (with_payload) smem_store_tile(pay, l, b.getInt32Ty(), pay_base);
        barrier();
        const uint32_t partner_bit = 1u << (off + j);
        for (int r = 0; r < nr; ++r) {
          llvm::Value* idx = b.CreateXor(element_index(l, r), b.getInt32(partner_bit));
          other[size_t(r)] = smem_load(kty, smem_ptr(b.CreateMul(idx, b.getInt32(keb))), keb);
          if (with_payload)
            other_pay[size_t(r)] =
                smem_load(b.getInt32Ty(), smem_ptr(b.CreateMul(b.CreateAdd(idx, b.getInt32(uint32_t(pay_base))), b.getInt32(4))), 4);
        }
        smem_after_read();
      }
      for (int r = 0; r < nr; ++r) {
        // upper ^ reversed: compare (mine, partner's) the other way round, which is the
        // same (lower, upper) comparison the partner makes.
        llvm::Value* f = b.CreateXor(bit_of(h, r), reversed(r));
        llvm::Value* x = key[size_t(r)], *y = other[size_t(r)];
        llvm::Value* px = with_payload ? pay[size_t(r)] : nullptr;
        llvm::Value* py = with_payload ? other_pay[size_t(r)] : nullptr;
        llvm::Value* swap = precedes(b.CreateSelect(f, x, y), b.CreateSelect(f, y, x),
                                     with_payload ? b.CreateSelect(f, px, py) : nullptr,
                                     with_payload ? b.CreateSelect(f, py, px) : nullptr);
        key[size_t(r)] = b.CreateSelect(swap, y, x);
        if (with_payload) pay[size_t(r)] = b.CreateSelect(swap, py, px);
      }
    }
  }
  set_natural(op.result(0), Regs{l, std::move(key)});
  if (with_payload) set_natural(op.result(1), Regs{l, std::move(pay)});
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
  smem_before_write();
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
  smem_after_read();
  set_natural(op.result(), Regs{out_l, std::move(out)});
}

}  // namespace tl::gpu

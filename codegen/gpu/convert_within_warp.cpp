// Warp-local layout conversions (Triton's "conversion within a warp"): when no element
// crosses warps, each destination register of each lane is read from a source lane of
// the same warp with an indexed shuffle (GpuHooks::shuffle_idx: ds_bpermute on AMD,
// shfl.sync.idx on NVIDIA). No shared memory is allocated and no barrier is needed.
//
// The plan (which lane, which register, which selects) is computed on the host by
// warp_shuffle_plan (layout.cpp), which the tests simulate lane by lane; this file only
// emits it. For dst register r:
//   - the sender picks the register it sends from its own lane and warp bits (a select
//     tree over `send_basis`), so that lanes reading different source lanes can get
//     different source registers from one shuffle;
//   - when lanes that read the same source lane want different registers of it, one
//     shuffle per such register (`recv_basis`), and the receiver selects after;
//   - when every lane reads its own registers (`local`), no shuffle, the select alone.
// Shuffles repeated between dst registers (same source lane, same register) are made once.
#include <llvm/IR/Constants.h>

#include <map>

#include "codegen/gpu/lower_context.hpp"

namespace tl::gpu {
namespace {

// apply_bits(map, x) at run time for an i32 x (a lane or warp id): the bits that map to
// themselves are one AND, the others are moved into place one by one.
llvm::Value* emit_apply(llvm::IRBuilderBase& b, const std::vector<uint32_t>& map, llvm::Value* x) {
  llvm::Value* r = nullptr;
  auto add = [&](llvm::Value* t) { r = r ? b.CreateXor(r, t) : t; };
  uint32_t same = 0;
  for (size_t i = 0; i < map.size(); ++i)
    if (map[i] == 1u << i) same |= 1u << i;
  if (same) add(b.CreateAnd(x, b.getInt32(same)));
  for (size_t i = 0; i < map.size(); ++i) {
    uint32_t img = map[i];
    if (img == 0 || img == 1u << i) continue;
    llvm::Value* bit = b.CreateAnd(b.CreateLShr(x, uint64_t(i)), b.getInt32(1));
    add(__builtin_popcount(img) == 1 ? b.CreateShl(bit, uint64_t(__builtin_ctz(img)))
                                     : b.CreateMul(bit, b.getInt32(img)));
  }
  return r ? r : b.getInt32(0);
}

// i1 per pivot: whether x has that bit (so whether the basis vector is in x).
std::vector<llvm::Value*> pivot_bits(llvm::IRBuilderBase& b, const std::vector<uint32_t>& pivot, llvm::Value* x) {
  std::vector<llvm::Value*> bits;
  for (uint32_t p : pivot) bits.push_back(b.CreateICmpNE(b.CreateAnd(x, b.getInt32(1u << p)), b.getInt32(0)));
  return bits;
}

// v[base ^ combine(basis, c)] where bit i of c is the run-time bits[i].
llvm::Value* select_tree(llvm::IRBuilderBase& b, const Values& v, uint32_t base, const std::vector<uint32_t>& basis,
                         const std::vector<llvm::Value*>& bits, size_t i = 0) {
  if (i == basis.size()) return v[base];
  llvm::Value* off = select_tree(b, v, base, basis, bits, i + 1);
  llvm::Value* on = select_tree(b, v, base ^ basis[i], basis, bits, i + 1);
  return on == off ? on : b.CreateSelect(bits[i], on, off);
}

// shuffle_idx of any register type: pointers as integers, narrow values zero-extended
// to an i32 word, 64-bit values as two words.
llvm::Value* shuffle_idx_any(Lowerer& L, llvm::Value* x, llvm::Value* src_lane) {
  auto& b = L.b;
  llvm::Type* ty = x->getType();
  if (ty->isFloatTy())
    if (llvm::Value* f = L.hooks_.shuffle_idx_f32(b, x, src_lane)) return f;
  const llvm::DataLayout& dl = L.m_.getDataLayout();
  unsigned bits = unsigned(dl.getTypeSizeInBits(ty));
  llvm::Type* ity = b.getIntNTy(bits);
  llvm::Value* i = ty->isPointerTy() ? b.CreatePtrToInt(x, ity) : ty->isIntegerTy() ? x : b.CreateBitCast(x, ity);
  llvm::Value* r;
  if (bits == 64) {
    llvm::Value* lo = L.hooks_.shuffle_idx(b, b.CreateTrunc(i, b.getInt32Ty()), src_lane);
    llvm::Value* hi = L.hooks_.shuffle_idx(b, b.CreateTrunc(b.CreateLShr(i, 32), b.getInt32Ty()), src_lane);
    r = b.CreateOr(b.CreateZExt(lo, ity), b.CreateShl(b.CreateZExt(hi, ity), 32));
  } else {
    r = L.hooks_.shuffle_idx(b, bits < 32 ? b.CreateZExt(i, b.getInt32Ty()) : i, src_lane);
    if (bits < 32) r = b.CreateTrunc(r, ity);
  }
  return ty->isPointerTy() ? b.CreateIntToPtr(r, ty) : ty->isIntegerTy() ? r : b.CreateBitCast(r, ty);
}

}  // namespace

Values convert_within_warp(Lowerer& L, const WarpShufflePlan& p, const Values& v) {
  auto& b = L.b;
  llvm::Value* lane = L.lane_id();
  llvm::Value* warp = L.warp_id();
  // (Each operand emitted in a statement of its own, the warp's bits first: as arguments
  // of one call they were emitted in the host compiler's order, GCC's warp first, clang's
  // lane first, and a clang-built tl made other code.)
  // as a sender: which part of the sent register this lane's and warp's bits pick
  llvm::Value* send_warp = emit_apply(b, p.warp_reg, warp);
  llvm::Value* sx = b.CreateXor(emit_apply(b, p.send_map, lane), send_warp);
  std::vector<llvm::Value*> send_bits = pivot_bits(b, p.send_pivot, sx);
  // as a receiver: the source lane (less the per-register constant) and which shuffle to keep
  llvm::Value* from_warp = emit_apply(b, p.warp_lane, warp);
  llvm::Value* from = b.CreateXor(emit_apply(b, p.lane_map, lane), from_warp);
  std::vector<llvm::Value*> recv_bits = pivot_bits(b, p.recv_pivot, emit_apply(b, p.recv_map, lane));
  std::vector<uint32_t> units;  // shuffle k's bits, for the receiver's select tree
  for (size_t i = 0; i < p.recv_basis.size(); ++i) units.push_back(1u << i);

  std::map<std::pair<uint32_t, uint32_t>, llvm::Value*> made;
  Values out(p.num_dst_regs);
  for (int r = 0; r < p.num_dst_regs; ++r) {
    if (p.local[r]) {
      out[r] = select_tree(b, v, p.reg_base[r], p.send_basis, send_bits);
      continue;
    }
    Values got(p.shuffles_per_reg());
    for (int k = 0; k < p.shuffles_per_reg(); ++k) {
      std::pair<uint32_t, uint32_t> key{p.lane_base[r], p.reg_base[r] ^ combine(p.recv_basis, uint32_t(k))};
      llvm::Value*& s = made[key];
      if (!s) {
        llvm::Value* sent = select_tree(b, v, key.second, p.send_basis, send_bits);
        llvm::Value* src_lane = key.first ? b.CreateXor(from, b.getInt32(key.first)) : from;
        s = shuffle_idx_any(L, sent, src_lane);
      }
      got[k] = s;
    }
    out[r] = select_tree(b, got, 0, units, recv_bits);
  }
  return out;
}

}  // namespace tl::gpu

// Buffer loads and stores (AMD CDNA): tl::amd::buffer_load/buffer_store, and the loads
// convert_to_buffer_ops.cpp marked (Triton's ConvertToBufferOps). A buffer access takes its base from a 128-bit resource
// in SGPRs and a 32-bit byte offset per access from a VGPR; the hardware checks that
// offset against the resource's num_records and returns 0 (load) or drops the write
// (store) past it (CDNA3 ISA, "Buffer Instructions": range checking), so a masked-off
// lane needs no branch: its offset is moved to kBufferMaskedOffset, past the end.
#include <llvm/IR/Constants.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Operator.h>

#include <map>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {


std::optional<BufferAccess> Lowerer::buffer_access(const ir::Operation& op) {
  if (!hooks_.capabilities().has_buffer_ops()) return std::nullopt;
  const ir::Value* ptr = op.operands[0];
  if (ptr->type.is_scalar()) return std::nullopt;
  // tl::amd (the user asked) or convert_to_buffer_ops; the verifier kept the form
  if (op.i0 == ir::kBufferAccess) {
    ir::BufferOperands u = ir::buffer_operands(op);
    BufferAccess a{u.base, {u.offsets}};
    a.bound = mask_bound(op, a);
    return a;
  }
  // Ordinary loads and stores stay global: which become buffer accesses is decided
  // before layouts (convert_to_buffer_ops.cpp) and recorded as the mark read above.
  return std::nullopt;
}

// n when the op's mask is exactly `offsets < splat(n)`, with offsets one non-negative
// tile and n a uniform i32: then lanes are masked off exactly when their offset is at or
// past n, which is what num_records = n * sizeof(E) makes the hardware check (a vector
// access is wholly in or out: access_width keeps it within the mask's constancy).
// Without this every access needs its own masked offset (v_cndmask), one VGPR each, and
// the same offsets of x, gamma and y are one value that LLVM keeps live across the
// RMSNorm's reduction, where global accesses fold the per-register constants into the
// instruction's offset field: +1..+8 VGPRs in the forward kernels.
const ir::Value* Lowerer::mask_bound(const ir::Operation& op, const BufferAccess& a) {
  size_t mi = op.op == Op::load ? 1 : op.op == Op::store ? 2 : 3;  // (global_load_to_shared: 3)
  if (op.operands.size() <= mi || a.offsets.size() != 1) return nullptr;
  const ir::Operation* cmp = op.operands[mi]->def;
  if (!cmp || cmp->op != Op::cmp || CmpPred(cmp->i0) != CmpPred::lt || cmp->operands[0] != a.offsets[0])
    return nullptr;
  const ir::Operation* splat = cmp->operands[1]->def;
  if (!splat || splat->op != Op::splat) return nullptr;
  const ir::Value* n = splat->operands[0];
  if (n->type.dtype != DType::i32 || !ir::is_uniform_scalar(n) || !axis_.fits_nonnegative_i32(a.offsets[0])) return nullptr;
  // A lane past the bound keeps its own offset: its byte offset must not wrap 32 bits
  // back below the bound (an i32 offset of 2^30 f32 elements is 2^32 bytes).
  const ir::Value* ptr = op.op == Op::global_load_to_shared ? op.operands[2] : op.operands[0];
  int64_t eb = int64_t(m_.getDataLayout().getTypeStoreSize(mem_type(ptr->type.pointee)));
  if ((axis_.get(a.offsets[0]).range.hi + 1) * eb > int64_t(kBufferNumRecords)) return nullptr;
  return n;
}

// The resource of `a` whose base is moved `const_bytes` on: num_records the bound's bytes
// less const_bytes (clamped to [0, kBufferNumRecords]) when the mask is a bound, so that a
// lane is in range exactly when const_bytes + its offset is below the bound; else
// kBufferNumRecords (every unmasked lane was proven in range; masked ones, at
// kBufferMaskedOffset, stay out of range whatever the base).
llvm::Value* Lowerer::buffer_resource(const BufferAccess& a, unsigned eb, int64_t const_bytes) {
  llvm::Value* records = nullptr;
  if (a.bound) {
    llvm::Value* n = b.CreateMul(b.CreateSExt(scalar(a.bound), b.getInt64Ty()), b.getInt64(eb));
    if (const_bytes) n = b.CreateSub(n, b.getInt64(const_bytes));
    n = b.CreateIntrinsic(llvm::Intrinsic::smax, {b.getInt64Ty()}, {n, b.getInt64(0)});
    records = b.CreateIntrinsic(llvm::Intrinsic::smin, {b.getInt64Ty()}, {n, b.getInt64(kBufferNumRecords)});
  }
  llvm::Value* base = scalar(a.base);
  if (const_bytes) base = b.CreateInBoundsGEP(b.getInt8Ty(), base, b.getInt64(const_bytes));
  return hooks_.buffer_resource(b, base, records);
}


// The i32 byte offsets of `a` in layout l, one per register, without their constant parts,
// which go to consts (bytes, one per register): the base of a resource per constant
// carries them, as a global access's SGPR base or immediate offset would. Registers that
// differ only by a constant (the 16-byte accesses of one thread along a row) then share
// one offset VGPR, and so do accesses of other tensors at the same offsets (the RMSNorm's
// x, gamma and y): one VGPR live across the reduction instead of one per access.
Values Lowerer::buffer_offsets(const BufferAccess& a, const Layout& l, unsigned eb, std::vector<int64_t>& consts) {
  const llvm::DataLayout& dl = m_.getDataLayout();
  Values sum = get(a.offsets[0], l);
  consts.assign(sum.size(), 0);
  for (size_t r = 0; r < sum.size(); ++r) std::tie(sum[r], consts[r]) = split_constant(sum[r], dl);
  for (size_t i = 1; i < a.offsets.size(); ++i) {
    Values more = get(a.offsets[i], l);
    for (size_t r = 0; r < sum.size(); ++r) {
      auto [x, k] = split_constant(more[r], dl);
      consts[r] += k;
      sum[r] = b.CreateAdd(sum[r], x, "", /*HasNUW=*/true, /*HasNSW=*/true);
    }
  }
  for (size_t r = 0; r < sum.size(); ++r) {
    sum[r] = b.CreateMul(sum[r], b.getInt32(eb), "", /*HasNUW=*/true, /*HasNSW=*/true);
    consts[r] *= int64_t(eb);
  }
  return sum;
}

llvm::Value* Lowerer::masked_buffer_offset(llvm::Value* off, llvm::Value* cond) {
  if (!cond) return off;
  return b.CreateSelect(cond, off, b.getInt32(kBufferMaskedOffset));
}

namespace {
// A buffer access's per-register byte offsets, and its resources: one per constant part
// of the offsets (buffer_offsets), made where first used.
class BufferRegisters {
 public:
  BufferRegisters(Lowerer& L, const BufferAccess& a, const Layout& l, unsigned eb) : L_(L), a_(a), eb_(eb) {
    offsets = L.buffer_offsets(a, l, eb, consts_);
  }
  llvm::Value* resource(int r) {
    llvm::Value*& x = resources_[consts_[size_t(r)]];
    if (!x) x = L_.buffer_resource(a_, eb_, consts_[size_t(r)]);
    return x;
  }
  Values offsets;

 private:
  Lowerer& L_;
  const BufferAccess& a_;
  unsigned eb_;
  std::vector<int64_t> consts_;
  std::map<int64_t, llvm::Value*> resources_;
};
}  // namespace

// tl::amd::buffer_load_to_shared's copy of one chunk of layout `l` (`bytes` a lane) at
// register r into `shared`: a buffer load into LDS through the op's resource. With `cond`
// (the chunk's mask), a masked-off lane's offset goes past the bound, so the hardware
// writes its zeros with no branch (not needed where the resource's bound is the mask).
// The offsets and every chunk's resource are made here, before any branch the caller
// puts a copy in, so that each dominates all its uses.
std::function<llvm::Instruction*(int, llvm::Value*, llvm::Value*)> Lowerer::buffer_chunk_copier(
    const ir::Operation& op, const Layout& l, int bytes) {
  ir::BufferOperands u = ir::buffer_operands(op);
  BufferAccess a{u.base, {u.offsets}};
  a.bound = mask_bound(op, a);
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(mem_type(op.operands[0]->type.dtype)));
  const int per = bytes / int(eb);
  BufferRegisters regs(*this, a, l, eb);
  Values resources(size_t(l.num_regs()));
  for (int r = 0; r < l.num_regs(); r += per) resources[size_t(r)] = regs.resource(r);
  const bool bounded = a.bound != nullptr;
  return [this, offsets = regs.offsets, resources, bounded, bytes](int r, llvm::Value* shared, llvm::Value* cond) {
    llvm::Value* off = masked_buffer_offset(offsets[size_t(r)], bounded ? nullptr : cond);
    return hooks_.buffer_copy_to_shared(b, resources[size_t(r)], off, shared, bytes);
  };
}

void Lowerer::lower_buffer_load(const ir::Operation& op, const BufferAccess& a) {
  const ir::Value* ptr = op.operands[0];
  const ir::Value* mask = op.operands.size() > 1 ? op.operands[1] : nullptr;
  const ir::Value* other = op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType t = op.result()->type.dtype;
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  const Layout& l = plan_.of(op.result());
  BufferRegisters regs(*this, a, l, eb);
  Values masks = mask ? get(mask, l) : Values{};
  Values others = other ? get(other, l) : Values{};
  int v = access_width(axis_, l, ptr, mask);
  llvm::Type* vty = v > 1 ? llvm::FixedVectorType::get(ty, v) : ty;
  uint32_t dup = l.duplicate_reg_mask();
  Values out(l.num_regs());
  for (int r = 0; r < l.num_regs(); r += v) {
    if (r & dup) continue;
    llvm::Value* cond = mask && !a.bound ? masks[r] : nullptr;
    llvm::Value* val =
        hooks_.buffer_load(b, vty, regs.resource(r), masked_buffer_offset(regs.offsets[r], cond), ir::access_flags(op));
    // Out of range reads 0: `other` only needs selecting in when it may not be 0.
    if (other) {
      llvm::Value* fallback = pack_for_memory(others, r, v, t);
      auto* c = llvm::dyn_cast<llvm::Constant>(fallback);
      if (!c || !c->isNullValue()) val = b.CreateSelect(masks[r], val, fallback);
    }
    for (int k = 0; k < v; ++k) out[r + k] = from_mem(v > 1 ? b.CreateExtractElement(val, uint64_t(k)) : val, t);
  }
  for (int r = 0; r < l.num_regs(); ++r)
    if (!out[r]) out[r] = out[r & ~dup];
  set_natural(op.result(), Regs{l, std::move(out)});
}

void Lowerer::lower_buffer_store(const ir::Operation& op, const BufferAccess& a) {
  const ir::Value* ptr = op.operands[0];
  const ir::Value* val = op.operands[1];
  const ir::Value* mask = op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType t = val->type.dtype;
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  const Layout& l = plan_.op_layout(&op);
  BufferRegisters regs(*this, a, l, eb);
  Values vals = get(val, l);
  Values masks = mask ? get(mask, l) : Values{};
  // Copies of replicated elements, like masked-off ones, go past the end: dropped.
  llvm::Value* owner = owner_predicate(l);
  int v = access_width(axis_, l, ptr, mask);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += v) {
    if (r & dup) continue;
    llvm::Value* cond = owner;
    if (mask && !a.bound) cond = cond ? b.CreateAnd(cond, masks[r]) : masks[r];
    llvm::Value* x = pack_for_memory(vals, r, v, t);
    hooks_.buffer_store(b, x, regs.resource(r), masked_buffer_offset(regs.offsets[r], cond), ir::access_flags(op));
  }
}

}  // namespace tl::gpu

// Global-memory ops: loads and stores vectorized as wide as the layout's per-thread runs,
// axis analysis (contiguity, alignment) and the mask's constancy allow; masked-off
// elements are not accessed (a branch around the access, `other` merged after it).
// Buffer accesses (AMD) are made in lower_buffer.cpp instead.
// Elements held by several threads (replication) are stored, and atomics executed,
// by exactly one of them; an atomic's old value is then shared with the copies.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

llvm::AtomicOrdering ordering(sem s) {
  switch (s) {
    case sem::relaxed: return llvm::AtomicOrdering::Monotonic;
    case sem::acquire: return llvm::AtomicOrdering::Acquire;
    case sem::release: return llvm::AtomicOrdering::Release;
    case sem::acq_rel: return llvm::AtomicOrdering::AcquireRelease;
  }
  return llvm::AtomicOrdering::SequentiallyConsistent;
}

// One global access of the op, with its cache modifier, eviction policy and volatile:
// the target's own instruction where it makes one, else LLVM's load or store marked for
// the backend (hooks.hpp, load_with_policy).
llvm::Value* global_load(llvm::IRBuilderBase& b, GpuHooks& hooks, llvm::Type* ty, llvm::Value* ptr, unsigned align,
                         const ir::AccessFlags& a) {
  if (!a.is_default())
    if (llvm::Value* v = hooks.load_with_policy(b, ty, ptr, align, a)) return v;
  llvm::LoadInst* ld = b.CreateAlignedLoad(ty, ptr, llvm::Align(align));
  if (!a.is_default()) hooks.decorate_access(ld, a, /*load=*/true);
  return ld;
}

void global_store(llvm::IRBuilderBase& b, GpuHooks& hooks, llvm::Value* v, llvm::Value* ptr, unsigned align,
                  const ir::AccessFlags& a) {
  if (!a.is_default() && hooks.store_with_policy(b, v, ptr, align, a)) return;
  llvm::StoreInst* st = b.CreateAlignedStore(v, ptr, llvm::Align(align));
  if (!a.is_default()) hooks.decorate_access(st, a, /*load=*/false);
}

}  // namespace

void Lowerer::lower_load(const ir::Operation& op) {
  const ir::AccessFlags access = ir::access_flags(op);
  const ir::Value* ptr = op.operands[0];
  const ir::Value* mask = op.operands.size() > 1 ? op.operands[1] : nullptr;
  const ir::Value* other = op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType t = op.result()->type.dtype;
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  if (ptr->type.is_scalar()) {
    llvm::Value* other_v = other ? to_mem(scalar(other), t) : llvm::Constant::getNullValue(ty);
    llvm::Value* v = if_then_value(mask ? scalar(mask) : nullptr,
                                   [&] { return global_load(b, hooks_, ty, scalar(ptr), eb, access); }, other_v);
    return set_scalar(op.result(), from_mem(v, t));
  }
  if (auto a = buffer_access(op)) return lower_buffer_load(op, *a);
  const Layout& l = plan_.of(op.result());
  Values ptrs = get(ptr, l);
  Values masks = mask ? get(mask, l) : Values{};
  Values others = other ? get(other, l) : Values{};
  int v = access_width(axis_, l, ptr, mask);
  llvm::Type* vty = v > 1 ? llvm::FixedVectorType::get(ty, v) : ty;
  uint32_t dup = l.duplicate_reg_mask();
  Values out(l.num_regs());
  for (int r = 0; r < l.num_regs(); r += v) {
    if (r & dup) continue;
    llvm::Value* fallback = other ? pack_for_memory(others, r, v, t) : llvm::Constant::getNullValue(vty);
    llvm::Value* val = if_then_value(mask ? masks[r] : nullptr,
                                     [&] { return global_load(b, hooks_, vty, ptrs[r], eb * v, access); }, fallback);
    for (int k = 0; k < v; ++k) out[r + k] = from_mem(v > 1 ? b.CreateExtractElement(val, uint64_t(k)) : val, t);
  }
  for (int r = 0; r < l.num_regs(); ++r)
    if (!out[r]) out[r] = out[r & ~dup];
  set_natural(op.result(), Regs{l, std::move(out)});
}

void Lowerer::lower_store(const ir::Operation& op) {
  const ir::AccessFlags access = ir::access_flags(op);
  const ir::Value* ptr = op.operands[0];
  const ir::Value* val = op.operands[1];
  const ir::Value* mask = op.operands.size() > 2 ? op.operands[2] : nullptr;
  DType t = val->type.dtype;
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  if (ptr->type.is_scalar()) {  // every thread holds it; thread 0 stores
    llvm::Value* cond = owner_predicate(scalar_layout(ws_, nw_));
    if (mask) cond = cond ? b.CreateAnd(cond, scalar(mask)) : scalar(mask);
    llvm::Value* p = scalar(ptr);
    llvm::Value* x = to_mem(scalar(val), t);
    return if_then(cond, [&] { global_store(b, hooks_, x, p, eb, access); });
  }
  if (auto a = buffer_access(op)) return lower_buffer_store(op, *a);
  const Layout& l = plan_.op_layout(&op);
  Values ptrs = get(ptr, l);
  Values vals = get(val, l);
  Values masks = mask ? get(mask, l) : Values{};
  llvm::Value* owner = owner_predicate(l);
  int v = access_width(axis_, l, ptr, mask);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += v) {
    if (r & dup) continue;
    llvm::Value* cond = owner;
    if (mask) cond = cond ? b.CreateAnd(cond, masks[r]) : masks[r];
    llvm::Value* x = pack_for_memory(vals, r, v, t);
    if_then(cond, [&] { global_store(b, hooks_, x, ptrs[r], eb * v, access); });
  }
}

void Lowerer::lower_atomic(const ir::Operation& op) {
  bool cas = op.op == Op::atomic_cas;
  const ir::Value* ptr = op.operands[0];
  const ir::Value* mask = (!cas && op.operands.size() > 2) ? op.operands[2] : nullptr;
  DType t = op.result()->type.dtype;
  llvm::Type* ty = reg_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  sem s = sem(op.i1 & 0xff);
  scope sc = scope((op.i1 >> 8) & 0xff);
  auto ssid = llvm::SyncScope::ID(hooks_.sync_scope(ctx_, sc));

  auto emit = [&](llvm::Value* p, llvm::Value* x, llvm::Value* cmp) -> llvm::Value* {
    llvm::Instruction* inst;
    llvm::Value* old;
    if (cas) {
      // cmpxchg is integer-only: floats travel as their bits
      llvm::Type* ity = b.getIntNTy(eb * 8);
      llvm::Value* c = ty->isFloatingPointTy() ? b.CreateBitCast(cmp, ity) : cmp;
      llvm::Value* n = ty->isFloatingPointTy() ? b.CreateBitCast(x, ity) : x;
      llvm::AtomicOrdering fail_order = s == sem::acquire || s == sem::acq_rel ? llvm::AtomicOrdering::Acquire
                                                                                : llvm::AtomicOrdering::Monotonic;
      auto* i = b.CreateAtomicCmpXchg(p, c, n, llvm::MaybeAlign(eb), ordering(s), fail_order, ssid);
      inst = i;
      old = b.CreateExtractValue(i, 0);
      if (ty->isFloatingPointTy()) old = b.CreateBitCast(old, ty);
    } else {
      bool fl = is_float(t), sg = is_signed(t);
      llvm::AtomicRMWInst::BinOp k;
      switch (AtomicKind(op.i0)) {
        case AtomicKind::add: k = fl ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add; break;
        case AtomicKind::max: k = fl ? llvm::AtomicRMWInst::FMax : sg ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::UMax; break;
        case AtomicKind::min: k = fl ? llvm::AtomicRMWInst::FMin : sg ? llvm::AtomicRMWInst::Min : llvm::AtomicRMWInst::UMin; break;
        case AtomicKind::xchg: k = llvm::AtomicRMWInst::Xchg; break;
        case AtomicKind::band: k = llvm::AtomicRMWInst::And; break;
        case AtomicKind::bor: k = llvm::AtomicRMWInst::Or; break;
        case AtomicKind::bxor: k = llvm::AtomicRMWInst::Xor; break;
        default: fail(op, "unknown atomic kind");
      }
      bool fenced = hooks_.order_rmw_with_fences() && s != sem::relaxed;
      if (fenced && (s == sem::release || s == sem::acq_rel)) b.CreateFence(llvm::AtomicOrdering::Release, ssid);
      auto* i = b.CreateAtomicRMW(k, p, x, llvm::MaybeAlign(eb),
                                  fenced ? llvm::AtomicOrdering::Monotonic : ordering(s), ssid);
      if (fenced && (s == sem::acquire || s == sem::acq_rel)) b.CreateFence(llvm::AtomicOrdering::Acquire, ssid);
      inst = i;
      old = i;
    }
    hooks_.decorate_atomic(inst, sc);
    return old;
  };

  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  if (ptr->type.is_scalar()) {
    // A scalar atomic is one thread's, done for the whole program. With release semantics
    // it publishes what every thread of the program wrote before it (a lock released after
    // a tile's stores), so the threads meet first; with acquire semantics every thread's
    // later accesses come after it (when its result is read, the broadcast of it orders
    // them already).
    const bool many = threads_ > 1;
    if (many && (s == sem::release || s == sem::acq_rel)) barrier(/*user=*/true);
    Layout l = scalar_layout(ws_, nw_);
    llvm::Value* cond = owner_predicate(l);
    if (mask) cond = cond ? b.CreateAnd(cond, scalar(mask)) : scalar(mask);
    llvm::Value* p = scalar(ptr);
    llvm::Value* x = scalar(op.operands[cas ? 2 : 1]);
    llvm::Value* c = cas ? scalar(op.operands[1]) : nullptr;
    llvm::Value* old = if_then_value(cond, [&] { return emit(p, x, c); }, zero);
    if (has_uses(op.result())) old = broadcast_from_owners({old}, l, t)[0];
    else if (many && (s == sem::acquire || s == sem::acq_rel)) barrier(/*user=*/true);
    return set_scalar(op.result(), old);
  }
  const Layout& l = plan_.op_layout(&op);
  Values ptrs = get(ptr, l);
  Values vals = get(op.operands[cas ? 2 : 1], l);
  Values cmps = cas ? get(op.operands[1], l) : Values{};
  Values masks = mask ? get(mask, l) : Values{};
  llvm::Value* owner = owner_predicate(l);
  uint32_t dup = l.duplicate_reg_mask();
  Values old(l.num_regs(), zero);
  for (int r = 0; r < l.num_regs(); ++r) {
    if (r & dup) continue;
    llvm::Value* cond = owner;
    if (mask) cond = cond ? b.CreateAnd(cond, masks[r]) : masks[r];
    old[r] = if_then_value(cond, [&] { return emit(ptrs[r], vals[r], cas ? cmps[r] : nullptr); }, zero);
  }
  if (has_uses(op.result())) old = broadcast_from_owners(old, l, t);
  set_natural(op.result(), Regs{l, std::move(old)});
}

}  // namespace tl::gpu

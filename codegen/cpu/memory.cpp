// One lane of the memory ops: loads, stores and atomics, with their masks and the
// optional bounds check. A masked lane is a branch around the access, never a load
// whose result is discarded: masked-off addresses are not touched. The vectorizer turns
// the branch into a masked load/store where the addresses are consecutive and the CPU
// has masked accesses of that width; elsewhere memory_loop splits the tile into chunks
// that run unmasked when all their lanes are on.
#include <llvm/IR/Constants.h>

#include <algorithm>

#include "codegen/cpu/lower.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::codegen::cpu {

using llvm::BasicBlock;
using llvm::Value;

namespace {

llvm::AtomicOrdering success_ordering(int64_t attr) {
  switch (sem(attr & 0xff)) {
    case sem::relaxed: return llvm::AtomicOrdering::Monotonic;
    case sem::acquire: return llvm::AtomicOrdering::Acquire;
    case sem::release: return llvm::AtomicOrdering::Release;
    case sem::acq_rel: return llvm::AtomicOrdering::AcquireRelease;
  }
  return llvm::AtomicOrdering::SequentiallyConsistent;
}

// A failed compare-exchange stores nothing, so it cannot have release semantics.
llvm::AtomicOrdering failure_ordering(int64_t attr) {
  switch (sem(attr & 0xff)) {
    case sem::acquire: case sem::acq_rel: return llvm::AtomicOrdering::Acquire;
    default: return llvm::AtomicOrdering::Monotonic;
  }
}

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16 || is_fp8(t); }

}  // namespace

void Lowerer::check_access(const ir::Operation& op, Value* ptr, DType t, const char* what) {
  if (!opts_.bounds_check) return;
  Value* ok = b_.CreateCall(check_fn(), {rt_ctx_, b_.CreatePtrToInt(ptr, b_.getInt64Ty()),
                                         b_.getInt64(uint64_t(byte_width(t)))});
  BasicBlock* cont = new_block("in.bounds");
  b_.CreateCondBr(b_.CreateICmpNE(ok, b_.getInt32(0)), cont, fault_block(kFaultOutOfBounds, op, what));
  b_.SetInsertPoint(cont);
}

// Runs `lane` (which emits the access and returns its value, or null) only where `mask`
// is true; masked-off lanes give `off`. Every operand must be read before the call, so
// that no element computed inside the branch is reused after it.
static Value* predicated(Lowerer& L, Value* mask, Value* off, llvm::Type* ty, const std::function<Value*()>& lane) {
  auto& b = L.b();
  if (!mask || llvm::isa<llvm::ConstantInt>(mask)) {
    if (mask && llvm::cast<llvm::ConstantInt>(mask)->isZero()) return off;
    return lane();
  }
  BasicBlock* pre = b.GetInsertBlock();
  BasicBlock* on = L.new_block("lane.on");
  BasicBlock* join = L.new_block("lane.done");
  b.CreateCondBr(mask, on, join);
  b.SetInsertPoint(on);
  Value* v = lane();
  BasicBlock* on_end = b.GetInsertBlock();
  b.CreateBr(join);
  b.SetInsertPoint(join);
  if (!ty) return nullptr;
  llvm::PHINode* phi = b.CreatePHI(ty, 2);
  phi->addIncoming(off, pre);
  phi->addIncoming(v, on_end);
  return phi;
}

bool Lowerer::native_masked(DType t) const {
  if (has_avx512bw_) return true;             // masked vector accesses of every width
  return has_avx_ && byte_width(t) >= 4;     // vmaskmov: 32- and 64-bit lanes only
}

void Lowerer::memory_loop(const ir::Operation& op, const std::function<void(const Idx&)>& body) {
  const std::vector<int>& shape = op.operands[0]->type.shape;
  const size_t mask_at = op.op == Op::load ? 1 : 2;
  const ir::Value* mask = op.operands.size() > mask_at ? op.operands[mask_at] : nullptr;
  const DType t = op.operands[0]->type.pointee;
  // Chunks of one 32-byte vector along the last dimension.
  const int chunk = std::min(shape.back(), 32 / byte_width(t));
  if (!mask || opts_.bounds_check || native_masked(t) || chunk < 8) {
    loop_nest(shape, body);
    return;
  }
  // Per chunk: all lanes on (the usual case; a ragged edge has one partial chunk) runs
  // the vectorized unmasked loop, else the scalar masked one.
  std::vector<int> chunks = shape;
  chunks.back() /= chunk;
  const int last = int(shape.size()) - 1;
  loop_nest(chunks, [&](const Idx& ci) {
    Value* base = b_.CreateMul(ci.dims[last], b_.getInt64(chunk), "", true, true);
    auto lane = [&](const Idx& j) {
      std::vector<Value*> dims = ci.dims;
      dims[last] = b_.CreateAdd(base, j.dims[0], "", true, true);
      return idx_from_dims(shape, dims);
    };
    Value* all = alloc_scalar(b_.getInt1Ty(), "mask.all");
    b_.CreateStore(b_.getTrue(), all);
    loop_nest({chunk}, [&](const Idx& j) {
      b_.CreateStore(b_.CreateAnd(b_.CreateLoad(b_.getInt1Ty(), all), elem(mask, lane(j))), all);
    });
    BasicBlock* full = new_block("mask.full");
    BasicBlock* partial = new_block("mask.partial");
    BasicBlock* join = new_block("mask.done");
    b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), all), full, partial);
    b_.SetInsertPoint(full);
    ignore_mask_ = true;
    loop_nest({chunk}, [&](const Idx& j) { body(lane(j)); });
    ignore_mask_ = false;
    b_.CreateBr(join);
    b_.SetInsertPoint(partial);
    scalar_loops_ = true;
    loop_nest({chunk}, [&](const Idx& j) { body(lane(j)); });
    scalar_loops_ = false;
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  });
}

Value* Lowerer::load_elem(const ir::Operation& op, const Idx& idx) {
  DType t = op.result()->type.dtype;
  Value* p = elem(op.operands[0], idx);
  Value* mask = op.operands.size() > 1 && !ignore_mask_ ? elem(op.operands[1], idx) : nullptr;
  Value* other = op.operands.size() > 2 && mask ? elem(op.operands[2], idx) : zero(t);
  return predicated(*this, mask, other, reg_type(t), [&]() -> Value* {
    check_access(op, p, t, "load");
    // Cache modifiers and eviction policies are hints for GPU caches: nothing to do here.
    // A volatile load stays one (a flag another program sets is read anew each time).
    auto* ld = b_.CreateAlignedLoad(mem_type(t), p, llvm::Align(byte_width(t)));
    ld->setVolatile(ir::access_flags(op).is_volatile);
    return from_mem(ld, t);
  });
}

void Lowerer::store_elem(const ir::Operation& op, const Idx& idx) {
  DType t = op.operands[1]->type.dtype;
  Value* p = elem(op.operands[0], idx);
  Value* v = elem(op.operands[1], idx);
  Value* mask = op.operands.size() > 2 && !ignore_mask_ ? elem(op.operands[2], idx) : nullptr;
  predicated(*this, mask, nullptr, nullptr, [&]() -> Value* {
    check_access(op, p, t, "store");
    b_.CreateAlignedStore(to_mem(v, t), p, llvm::Align(byte_width(t)))->setVolatile(ir::access_flags(op).is_volatile);
    return nullptr;
  });
}

Value* Lowerer::atomic_rmw_elem(const ir::Operation& op, const Idx& idx) {
  DType t = op.result()->type.dtype;
  Value* p = elem(op.operands[0], idx);
  Value* v = elem(op.operands[1], idx);
  Value* mask = op.operands.size() > 2 ? elem(op.operands[2], idx) : nullptr;
  const auto kind = AtomicKind(op.i0);
  const auto order = success_ordering(op.i1);
  const llvm::Align align(byte_width(t));
  return predicated(*this, mask, zero(t), reg_type(t), [&]() -> Value* {
    check_access(op, p, t, "atomic");
    if (narrow_float(t)) {
      // No native 16-bit float atomics: a compare-exchange loop on the code, computing
      // in f32 and rounding like every other f16/bf16 op.
      Op combine = kind == AtomicKind::add ? Op::add : kind == AtomicKind::max ? Op::max : Op::min;
      BasicBlock* pre = b_.GetInsertBlock();
      auto* init = b_.CreateAlignedLoad(mem_type(t), p, align);
      init->setAtomic(llvm::AtomicOrdering::Monotonic);
      BasicBlock* loop = new_block("atomic.retry");
      BasicBlock* done = new_block("atomic.done");
      b_.CreateBr(loop);
      b_.SetInsertPoint(loop);
      llvm::PHINode* cur = b_.CreatePHI(mem_type(t), 2);
      cur->addIncoming(init, pre);
      Value* next = kind == AtomicKind::xchg ? v : binary(combine, t, cur, v);
      auto* pair = b_.CreateAtomicCmpXchg(p, cur, next, align, order, failure_ordering(op.i1));
      cur->addIncoming(b_.CreateExtractValue(pair, 0), loop);
      b_.CreateCondBr(b_.CreateExtractValue(pair, 1), done, loop);
      b_.SetInsertPoint(done);
      return cur;
    }
    using B = llvm::AtomicRMWInst::BinOp;
    const bool f = is_float(t), s = is_signed(t);
    B bop;
    switch (kind) {
      case AtomicKind::add: bop = f ? B::FAdd : B::Add; break;
      case AtomicKind::max: bop = f ? B::FMax : s ? B::Max : B::UMax; break;
      case AtomicKind::min: bop = f ? B::FMin : s ? B::Min : B::UMin; break;
      case AtomicKind::xchg: bop = B::Xchg; break;
      case AtomicKind::band: bop = B::And; break;
      case AtomicKind::bor: bop = B::Or; break;
      case AtomicKind::bxor: bop = B::Xor; break;
      default: throw compile_error("tl cpu: unknown atomic kind", op.loc.file, op.loc.line);
    }
    return b_.CreateAtomicRMW(bop, p, to_mem(v, t), align, order);
  });
}

Value* Lowerer::atomic_cas_elem(const ir::Operation& op, const Idx& idx) {
  DType t = op.result()->type.dtype;
  Value* p = elem(op.operands[0], idx);
  Value* cmp = elem(op.operands[1], idx);
  Value* v = elem(op.operands[2], idx);
  check_access(op, p, t, "atomic");
  // cmpxchg compares bits: floats go through the integer of their width.
  llvm::Type* bits = b_.getIntNTy(bit_width(t) < 8 ? 8 : bit_width(t));
  Value* c = b_.CreateBitCast(to_mem(cmp, t), bits);
  Value* n = b_.CreateBitCast(to_mem(v, t), bits);
  auto* pair = b_.CreateAtomicCmpXchg(p, c, n, llvm::Align(byte_width(t)), success_ordering(op.i1),
                                      failure_ordering(op.i1));
  return from_mem(b_.CreateBitCast(b_.CreateExtractValue(pair, 0), mem_type(t)), t);
}

// A shared buffer is a stack array of `stages` tiles (lower_op, shared_alloc); a stage
// is a row-major tile at stage * numel. The program is one thread, so a load is a copy
// into the result's buffer (a load is never recomputed) and a store a copy out.
Value* Lowerer::shared_stage_ptr(const ir::Operation& op) {
  const ir::Type& bt = op.operands[0]->type;
  Value* stage = b_.CreateSExt(elem(op.operands[1], Idx{}), b_.getInt64Ty());
  Value* first = b_.CreateMul(stage, b_.getInt64(uint64_t(bt.numel())), "", true, true);
  return b_.CreateInBoundsGEP(mem_type(bt.dtype), elem(op.operands[0], Idx{}), first);
}

void Lowerer::lower_shared_store(const ir::Operation& op) {
  const ir::Value* v = op.operands[2];
  Value* dst = shared_stage_ptr(op);
  loop_nest(v->type.shape, [&](const Idx& idx) { store_buf(dst, v->type.dtype, idx.flat, elem(v, idx)); });
}

// The copy has the GPU's results: every element of the stage is written, masked-off
// ones with `other` (0 when absent), as a tl::load followed by a shared store.
void Lowerer::lower_global_load_to_shared(const ir::Operation& op) {
  DType t = op.operands[0]->type.dtype;
  Value* dst = shared_stage_ptr(op);
  size_t n = op.operands.size();
  loop_nest(op.operands[2]->type.shape, [&](const Idx& idx) {
    Value* p = elem(op.operands[2], idx);
    Value* mask = n > 3 && !ignore_mask_ ? elem(op.operands[3], idx) : nullptr;
    Value* other = n > 4 && mask ? elem(op.operands[4], idx) : zero(t);
    Value* v = predicated(*this, mask, other, reg_type(t), [&]() -> Value* {
      check_access(op, p, t, "global_load_to_shared");
      return from_mem(b_.CreateAlignedLoad(mem_type(t), p, llvm::Align(byte_width(t))), t);
    });
    store_buf(dst, t, idx.flat, v);
  });
}

}  // namespace tl::codegen::cpu

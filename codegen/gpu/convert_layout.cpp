// Layout conversion (Triton's ConvertLayoutOp lowering) and the shared-memory buffer.
// A conversion stays in registers when every thread already holds the elements it
// needs (register_only_conversion: a permutation or selection of its registers); when
// no element crosses warps it exchanges lanes with shuffles (convert_within_warp.cpp);
// otherwise each thread writes its elements to shared memory and reads back the ones the
// new layout gives it, with barriers around the exchange, at the offsets of the encoding
// plan_shared_encodings recorded on the op (shared_encoding.hpp).
// The shared memory: the user's buffers and the scratch region every conversion reuses,
// where allocate_shared_memory put them (Operation::smem); alias scopes per buffer.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

void Lowerer::smem_setup() {
  smem_plan_ = recorded_shared_memory(f_, hooks_.capabilities());
  ir::walk(const_cast<ir::Block&>(f_.body), [&](ir::Operation& op) { has_copies_ |= op.op == Op::global_load_to_shared; });
  size_t n = smem_plan_.buffers.size() + 1;  // the users' buffers, then the scratch region
  // One alias scope per buffer in one domain: an access carries its buffer's scope and
  // `noalias` of every other, so LLVM (and the AMDGPU backend's SIInsertWaitcnts, which
  // asks alias analysis whether an LDS read may depend on an earlier LDS DMA) knows that
  // accesses to different buffers are independent. Buffers sharing bytes are never
  // live together, and their accesses are separated by a barrier (insert_shared_barriers),
  // which orders memory whatever the metadata says.
  llvm::MDBuilder mdb(ctx_);
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain("tl.shared");
  std::vector<llvm::Metadata*> scopes;
  for (size_t i = 0; i < n; ++i)
    scopes.push_back(mdb.createAnonymousAliasScope(
        domain, i + 1 < n ? fmt::format("tl.shared.buffer{}", i) : std::string("tl.shared.scratch")));
  // A user buffer's direct-to-shared copies (global_load_to_shared) get a scope of their
  // own, Triton's AsyncCopies scope per buffer: every access to another buffer is noalias
  // with them, a plain read of the buffer is not (LLVM waits for the copies before it,
  // vmcnt(0) on AMD), and a relaxed one is (annotateLocalLoadsSyncedViaAsyncWait).
  std::vector<llvm::Metadata*> copies;
  for (size_t i = 0; i + 1 < n; ++i)
    copies.push_back(mdb.createAnonymousAliasScope(domain, fmt::format("tl.shared.buffer{}.copies", i)));
  smem_scope_.clear();
  smem_noalias_.clear();
  smem_copy_scope_.clear();
  smem_copy_noalias_.clear();
  smem_relaxed_noalias_.clear();
  for (size_t i = 0; i < n; ++i) {
    std::vector<llvm::Metadata*> others;
    for (size_t j = 0; j < n; ++j)
      if (j != i) others.push_back(scopes[j]);
    for (size_t j = 0; j < copies.size(); ++j)
      if (j != i) others.push_back(copies[j]);
    smem_scope_.push_back(llvm::MDNode::get(ctx_, {scopes[i]}));
    smem_noalias_.push_back(others.empty() ? nullptr : llvm::MDNode::get(ctx_, others));
    if (i < copies.size()) {
      std::vector<llvm::Metadata*> relaxed = others;
      relaxed.push_back(copies[i]);
      smem_relaxed_noalias_.push_back(llvm::MDNode::get(ctx_, relaxed));
      smem_copy_scope_.push_back(llvm::MDNode::get(ctx_, {copies[i]}));
      std::vector<llvm::Metadata*> not_copy;
      for (size_t j = 0; j < n; ++j)
        if (j != i) not_copy.push_back(scopes[j]);
      for (size_t j = 0; j < copies.size(); ++j)
        if (j != i) not_copy.push_back(copies[j]);
      smem_copy_noalias_.push_back(not_copy.empty() ? nullptr : llvm::MDNode::get(ctx_, not_copy));
    }
  }
}

namespace {
llvm::GlobalVariable* placeholder(llvm::Module& m, llvm::IRBuilderBase& b, unsigned space) {
  // A placeholder until the total is known (Lowerer::run replaces it).
  auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
  auto* g = new llvm::GlobalVariable(m, ty, false, llvm::GlobalValue::InternalLinkage, llvm::PoisonValue::get(ty),
                                     "tl_shared_placeholder", nullptr, llvm::GlobalValue::NotThreadLocal, space);
  g->setAlignment(llvm::Align(16));
  return g;
}
}  // namespace

llvm::Value* Lowerer::smem_ptr(llvm::Value* byte_offset) {
  const ir::Operation* op = lowering_op_;
  return smem_ptr(byte_offset, op && op->smem && op->op != Op::shared_alloc ? op->smem->offset : smem_plan_.scratch_offset);
}

llvm::Value* Lowerer::smem_ptr(llvm::Value* byte_offset, int64_t base) {
  if (!smem_) smem_ = placeholder(m_, b, hooks_.shared_address_space());
  if (base) byte_offset = b.CreateAdd(byte_offset, b.getInt32(uint32_t(base)), "", true, true);
  return b.CreateGEP(b.getInt8Ty(), smem_, byte_offset);
}

llvm::Value* Lowerer::smem_buffer_base(int buffer) {
  if (!smem_) smem_ = placeholder(m_, b, hooks_.shared_address_space());
  return b.CreateGEP(b.getInt8Ty(), smem_, b.getInt32(uint32_t(smem_plan_.buffers.at(size_t(buffer)).offset)));
}

void Lowerer::lower_shared_alloc(const ir::Operation& op) {
  // The buffer is its base pointer (a scalar to loops and branches, which pass it on).
  set_scalar(op.result(), smem_buffer_base(smem_plan_.index_of(&op)));
}

int64_t Lowerer::smem_total() const {
  return smem_plan_.scratch_bytes ? std::max(smem_plan_.buffer_bytes, smem_plan_.scratch_offset + smem_plan_.scratch_bytes)
                                  : smem_plan_.buffer_bytes;
}

void Lowerer::smem_check_scratch(int64_t bytes) {
  // allocate_shared_memory gave the op its scratch (scratch_bytes): an op using more, or
  // one it gave none, would use bytes a live buffer may hold.
  const ir::Operation* op = lowering_op_;
  if (!op || !op->smem || op->op == Op::shared_alloc || bytes > op->smem->bytes)
    throw compile_error(fmt::format("gpu lowering: '{}' exchanges {} bytes through the scratch region, where the "
                                    "shared-memory allocator gave it {} (scratch_bytes; a tl bug)",
                                    op ? op_name(op->op) : "?", bytes, op && op->smem ? op->smem->bytes : 0),
                        op ? op->loc.file : nullptr, op ? op->loc.line : 0);
}

llvm::Value* Lowerer::smem_load(llvm::Type* ty, llvm::Value* ptr, unsigned align, int buffer, bool relaxed) {
  llvm::LoadInst* ld = b.CreateAlignedLoad(ty, ptr, llvm::Align(align));
  smem_tag_read(ld, buffer, relaxed);
  return ld;
}

void Lowerer::smem_tag_read(llvm::Instruction* read, int buffer, bool relaxed) {
  if (!read || buffer == kUnknownBuffer) return;
  read->setMetadata(llvm::LLVMContext::MD_alias_scope, smem_scope_[size_t(smem_id(buffer))]);
  llvm::MDNode* others = relaxed && buffer != kScratch ? smem_relaxed_noalias_[size_t(buffer)]
                                                       : smem_noalias_[size_t(smem_id(buffer))];
  if (others) read->setMetadata(llvm::LLVMContext::MD_noalias, others);
}

void Lowerer::smem_tag_copy(llvm::Instruction* copy, int buffer) {
  if (!copy || buffer == kUnknownBuffer || buffer == kScratch) return;
  copy->setMetadata(llvm::LLVMContext::MD_alias_scope, smem_copy_scope_[size_t(buffer)]);
  if (auto* others = smem_copy_noalias_[size_t(buffer)]) copy->setMetadata(llvm::LLVMContext::MD_noalias, others);
}

void Lowerer::smem_store(llvm::Value* v, llvm::Value* ptr, unsigned align, int buffer, bool relaxed) {
  llvm::StoreInst* st = b.CreateAlignedStore(v, ptr, llvm::Align(align));
  if (buffer == kUnknownBuffer) return;
  st->setMetadata(llvm::LLVMContext::MD_alias_scope, smem_scope_[size_t(smem_id(buffer))]);
  llvm::MDNode* others = relaxed && buffer != kScratch ? smem_relaxed_noalias_[size_t(buffer)]
                                                       : smem_noalias_[size_t(smem_id(buffer))];
  if (others) st->setMetadata(llvm::LLVMContext::MD_noalias, others);
}

void Lowerer::scratch_write_begins() {
  if (deferred_barrier_ || exchanged_op_ == lowering_op_) barrier();
  exchanged_op_ = lowering_op_;
}

void Lowerer::barrier(bool user) {
  deferred_barrier_ = false;
  // With direct-to-shared copies in the kernel, the compiler's barriers order shared
  // memory only, so that they do not wait for the copies an async_wait left in flight.
  // (Kernels without copies keep the fenced barrier: their code is unchanged.)
  if (!user && has_copies_) hooks_.shared_barrier(b);
  else hooks_.barrier(b);
}

namespace {
int group_size(const Layout& l, unsigned eb) {
  int g = std::min(contiguous_run(l, 1), std::max(1, int(16 / eb)));
  return std::min(g, l.num_regs());
}
}  // namespace

llvm::Value* Lowerer::padded_element_index(const Layout& l, int r, const Padding& pad) {
  return layout_padded_element_index(b, l, thread_index(l), r, pad);
}

void Lowerer::smem_store_tile(const Values& v, const Layout& l, llvm::Type* ty, int64_t base_elems, int group,
                              const Padding& pad) {
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  int g = group > 0 ? group : group_size(l, eb);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += g) {
    if (r & dup) continue;  // a copy of another register
    llvm::Value* idx = padded_element_index(l, r, pad);
    if (base_elems) idx = b.CreateAdd(idx, b.getInt32(uint32_t(base_elems)), "", true, true);
    llvm::Value* p = smem_ptr(b.CreateMul(idx, b.getInt32(eb), "", true, true));
    if (g == 1) {
      smem_store(v[r], p, eb);
      continue;
    }
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, g));
    for (int k = 0; k < g; ++k) vec = b.CreateInsertElement(vec, v[r + k], uint64_t(k));
    smem_store(vec, p, eb * g);
  }
}

Values Lowerer::smem_load_tile(const Layout& l, llvm::Type* ty, int64_t base_elems) {
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  int g = group_size(l, eb);
  uint32_t dup = l.duplicate_reg_mask();
  Values out(l.num_regs());
  for (int r = 0; r < l.num_regs(); r += g) {
    if (r & dup) continue;
    llvm::Value* idx = element_index(l, r);
    if (base_elems) idx = b.CreateAdd(idx, b.getInt32(uint32_t(base_elems)), "", true, true);
    llvm::Value* p = smem_ptr(b.CreateMul(idx, b.getInt32(eb), "", true, true));
    if (g == 1) {
      out[r] = smem_load(ty, p, eb);
      continue;
    }
    llvm::Value* vec = smem_load(llvm::FixedVectorType::get(ty, g), p, eb * g);
    for (int k = 0; k < g; ++k) out[r + k] = b.CreateExtractElement(vec, uint64_t(k));
  }
  for (int r = 0; r < l.num_regs(); ++r)
    if (!out[r]) out[r] = out[r & ~dup];
  return out;
}

Lowerer::Exchange Lowerer::exchange_write(const Values& v, const Layout& from, const Layout& to, DType t,
                                          const ir::SharedEncoding& enc, bool transposed_read, bool own_barrier) {
  llvm::Type* ty = mem_type(t);
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  smem_check_scratch(shared_elements(from.numel(), enc) * eb);
  // Each side moves its registers at the encoding's offsets, as many a vector as its
  // layout holds consecutively along the fastest dim (shared_access_group).
  const LinearMap offsets = shared_offsets(from.shape, enc);
  Values mem;
  for (llvm::Value* x : v) mem.push_back(to_mem(x, t));
  scratch_write_begins();
  smem_store_tile(mem, compose(offsets, from, from.shape), ty, 0, shared_access_group(from, enc, int(eb)),
                  enc.padding);
  if (own_barrier) barrier();
  Exchange x{to, {}, ty, t, 0, transposed_read, enc.padding, lowering_op_->smem->offset};
  if (transposed_read) {
    // One read fills 8 bytes of registers of `to`, its lanes addressing through the layout
    // transposed_read_layout gives (plan_shared_encodings checked it applies).
    auto a = transposed_read_layout(to, offsets, int(eb));
    if (!a) throw compile_error("gpu lowering: a transposed read planned where it cannot read " + to.str() + " (a tl bug)");
    x.addr = compose(offsets, *a, to.shape);
    x.group = transposed_read_slots(int(eb));
  } else {
    x.addr = compose(offsets, to, to.shape);
    x.group = shared_access_group(to, enc, int(eb));
  }
  return x;
}

void Lowerer::exchange_read(const Exchange& x, int first, int count, Values& out) {
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(x.ty));
  const int g = x.group, last = first + count;
  const uint32_t dup = x.to.duplicate_reg_mask();
  for (int r = first / g * g; r < last; r += g) {
    if ((r & dup) || out[size_t(r)]) continue;
    llvm::Value* idx = padded_element_index(x.addr, r, x.pad);
    llvm::Value* p = smem_ptr(b.CreateMul(idx, b.getInt32(eb), "", true, true), x.base);
    llvm::Value* vec;
    if (x.transposed) {
      vec = hooks_.load_shared_transposed(b, p, int(8 * eb));
      if (!vec) throw compile_error(fmt::format("gpu lowering: {} has no transposing shared-memory read", hooks_.target_name()));
      vec = b.CreateBitCast(vec, llvm::FixedVectorType::get(x.ty, unsigned(g)));
    } else if (g == 1) {
      out[size_t(r)] = from_mem(smem_load(x.ty, p, eb), x.t);
      continue;
    } else {
      vec = smem_load(llvm::FixedVectorType::get(x.ty, unsigned(g)), p, eb * unsigned(g));
    }
    for (int k = 0; k < g; ++k) out[size_t(r + k)] = from_mem(b.CreateExtractElement(vec, uint64_t(k)), x.t);
  }
  for (int r = first; r < last; ++r)
    if (!out[size_t(r)]) {
      if (!out[size_t(r & ~dup)]) exchange_read(x, r & ~dup, 1, out);
      out[size_t(r)] = out[size_t(r & ~dup)];
    }
}

Values Lowerer::convert(const Values& v, const Layout& from, const Layout& to, DType t, ir::ConvertPath path,
                        const ir::SharedEncoding* enc, bool transposed_read) {
  if (from.shape != to.shape)
    throw compile_error(fmt::format("gpu lowering: layout conversion between shapes {} and {}", from.str(), to.str()));
  // The path plan_conversion_paths recorded (conversion_path); one that does not apply
  // to these layouts is a tl bug.
  if (path == ir::ConvertPath::registers) {
    auto map = register_only_conversion(from, to);
    if (!map) throw compile_error("gpu lowering: a conversion planned in registers needs data from other threads");
    Values out;
    for (int r : *map) out.push_back(v[r]);
    return out;
  }
  // Nothing crosses warps: lanes exchange through indexed shuffles, no shared memory and
  // no barrier.
  if (path == ir::ConvertPath::warp_shuffle) {
    auto plan = warp_shuffle_plan(from, to);
    if (!plan) throw compile_error("gpu lowering: a conversion planned within warps crosses warps");
    return convert_within_warp(*this, *plan, v);
  }
  if (path != ir::ConvertPath::shared) throw compile_error("gpu lowering: a conversion without a planned path");
  if (!enc) throw compile_error("gpu lowering: a conversion through shared memory without an encoding (a tl bug)");
  Exchange x = exchange_write(v, from, to, t, *enc, transposed_read);
  Values out(size_t(to.num_regs()));
  exchange_read(x, 0, to.num_regs(), out);
  return out;
}

Values Lowerer::broadcast_from_owners(const Values& v, const Layout& l, DType t) {
  uint32_t dup = l.duplicate_reg_mask();
  Values out(v.size());
  for (size_t r = 0; r < v.size(); ++r) out[r] = v[r & ~dup];
  llvm::Value* owner = owner_predicate(l);
  if (!owner) return out;
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  smem_check_scratch(std::max<int64_t>(1, l.numel()) * eb);
  Values mem;
  for (llvm::Value* x : out) mem.push_back(to_mem(x, t));
  scratch_write_begins();
  if_then(owner, [&] { smem_store_tile(mem, l, ty); });
  barrier();
  Values res = smem_load_tile(l, ty);
  for (auto& x : res) x = from_mem(x, t);
  return res;
}

void Lowerer::lower_convert_layout(const ir::Operation& op) {
  const ir::Value* src = op.operands[0];
  const Regs& n = natural(src);
  const Layout& to = plan_.of(op.result());
  // Read by its dot, a K step at a time (lower_dot.cpp): only the write; the barrier
  // before the dot's reads is insert_shared_barriers'.
  if (op.i1 & ir::kConversionReadByDot) {
    if (ir::ConvertPath(op.i0) != ir::ConvertPath::shared || !op.shared)
      throw compile_error("gpu lowering: a conversion read by its dot is not through shared memory (a tl bug)");
    exchanges_read_by_dot_.emplace(op.result(), exchange_write(n.v, n.layout, to, src->type.dtype, *op.shared,
                                                               op.i1 & ir::kTransposedRead, /*own_barrier=*/false));
    return;
  }
  set_natural(op.result(), Regs{to, convert(n.v, n.layout, to, src->type.dtype, ir::ConvertPath(op.i0),
                                            op.shared ? &*op.shared : nullptr, op.i1 & ir::kTransposedRead)});
}

}  // namespace tl::gpu

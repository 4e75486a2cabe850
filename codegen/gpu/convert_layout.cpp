// Layout conversion (Triton's ConvertLayoutOp lowering) and the shared-memory buffer.
// A conversion stays in registers when every thread already holds the elements it
// needs (register_only_conversion: a permutation or selection of its registers); when
// no element crosses warps it exchanges lanes with shuffles (convert_within_warp.cpp);
// otherwise each thread writes its elements to shared memory at their flat index and
// reads back the ones the new layout gives it, with barriers around the exchange.
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

llvm::Value* Lowerer::smem_ptr(llvm::Value* byte_offset) {
  if (!smem_) {
    // A placeholder until the largest use is known (Lowerer::run replaces it).
    auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
    smem_ = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage, llvm::PoisonValue::get(ty),
                                     "tl_shared_placeholder", nullptr, llvm::GlobalValue::NotThreadLocal,
                                     hooks_.shared_address_space());
    smem_->setAlignment(llvm::Align(16));
  }
  return b.CreateGEP(b.getInt8Ty(), smem_, byte_offset);
}

void Lowerer::smem_reserve(int64_t bytes) {
  smem_bytes_ = std::max(smem_bytes_, (bytes + 15) / 16 * 16);
  // The target's whole budget, dynamic shared memory included: the buffer becomes
  // dynamic past the static limit (Lowerer::run).
  int64_t limit = hooks_.capabilities().shared_bytes_per_program;
  if (smem_bytes_ > limit)
    throw compile_error(fmt::format("gpu lowering: {} bytes of shared memory needed, more than the {} a program "
                                    "may use on {}; use smaller tiles",
                                    smem_bytes_, limit, hooks_.target_name()));
}

void Lowerer::smem_before_write() {
  if (smem_busy_) barrier();
  smem_busy_ = false;
}

namespace {
int group_size(const Layout& l, unsigned eb) {
  int g = std::min(contiguous_run(l, 1), std::max(1, int(16 / eb)));
  return std::min(g, l.num_regs());
}
}  // namespace

void Lowerer::smem_store_tile(const Values& v, const Layout& l, llvm::Type* ty, int64_t base_elems) {
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  int g = group_size(l, eb);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += g) {
    if (r & dup) continue;  // a copy of another register
    llvm::Value* idx = element_index(l, r);
    if (base_elems) idx = b.CreateAdd(idx, b.getInt32(uint32_t(base_elems)), "", true, true);
    llvm::Value* p = smem_ptr(b.CreateMul(idx, b.getInt32(eb), "", true, true));
    if (g == 1) {
      b.CreateAlignedStore(v[r], p, llvm::Align(eb));
      continue;
    }
    llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, g));
    for (int k = 0; k < g; ++k) vec = b.CreateInsertElement(vec, v[r + k], uint64_t(k));
    b.CreateAlignedStore(vec, p, llvm::Align(eb * g));
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
      out[r] = b.CreateAlignedLoad(ty, p, llvm::Align(eb));
      continue;
    }
    llvm::Value* vec = b.CreateAlignedLoad(llvm::FixedVectorType::get(ty, g), p, llvm::Align(eb * g));
    for (int k = 0; k < g; ++k) out[r + k] = b.CreateExtractElement(vec, uint64_t(k));
  }
  for (int r = 0; r < l.num_regs(); ++r)
    if (!out[r]) out[r] = out[r & ~dup];
  return out;
}

Values Lowerer::convert(const Values& v, const Layout& from, const Layout& to, DType t) {
  if (from.shape != to.shape)
    throw compile_error(fmt::format("gpu lowering: layout conversion between shapes {} and {}", from.str(), to.str()));
  if (auto map = register_only_conversion(from, to)) {
    Values out;
    for (int r : *map) out.push_back(v[r]);
    return out;
  }
  // Nothing crosses warps: lanes exchange through indexed shuffles, no shared memory and
  // no barrier. Cost rule: the shared-memory round trip makes at least one access per
  // distinct element a thread writes and one per element it reads, plus two barriers
  // that stall the whole program; a shuffle costs about one such access (ds_bpermute
  // goes through the LDS crossbar, shfl through the shared-memory pipe). So shuffles are
  // taken while they are no more than those accesses (the barriers are the gain); an
  // all-to-all inside a warp (a 32x32 transpose held by one warp) needs a shuffle per
  // (register, source register) pair and stays in shared memory.
  if (auto plan = warp_shuffle_plan(from, to)) {
    auto distinct = [](const Layout& l) { return l.num_regs() >> __builtin_popcount(l.duplicate_reg_mask()); };
    if (plan->num_shuffles() <= distinct(from) + distinct(to)) return convert_within_warp(*this, *plan, v);
  }
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  smem_reserve(from.numel() * eb);
  Values mem;
  for (llvm::Value* x : v) mem.push_back(to_mem(x, t));
  smem_before_write();
  smem_store_tile(mem, from, ty);
  barrier();
  Values out = smem_load_tile(to, ty);
  smem_after_read();
  for (auto& x : out) x = from_mem(x, t);
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
  smem_reserve(std::max<int64_t>(1, l.numel()) * eb);
  Values mem;
  for (llvm::Value* x : out) mem.push_back(to_mem(x, t));
  smem_before_write();
  if_then(owner, [&] { smem_store_tile(mem, l, ty); });
  barrier();
  Values res = smem_load_tile(l, ty);
  smem_after_read();
  for (auto& x : res) x = from_mem(x, t);
  return res;
}

}  // namespace tl::gpu

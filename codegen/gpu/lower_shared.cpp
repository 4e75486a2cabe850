// shared_load / shared_store: one stage of a user's shared buffer (tl::shared), Triton's
// local_load / local_store. A stage lies at buffer base + stage * tile bytes (the stage
// is a run-time i32) in the swizzled row-major form of shared_tile_layout (layout.hpp):
// each thread moves its registers at the swizzled offsets of their elements, a whole
// 16-byte vector at a time where its layout gives it that many contiguous elements along
// the last dim (ds_read_b128 / ds_write_b128, ld/st.shared.v4); the swizzle keeps such a
// vector contiguous and spreads the vectors one 8-lane phase touches over distinct banks.
//
// Ordering between threads is the IR's business: codegen/passes/insert_barriers.cpp put
// an Op::barrier wherever one access of a buffer may conflict with another's. The
// per-buffer state here (smem_before_write) only adds the barrier the IR cannot know
// about: a buffer the allocator placed in bytes an earlier, dead buffer used.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {
// The registers of `l` moved per access: a run of contiguous elements along the last
// dim, no longer than one swizzle vector (which the swizzle keeps contiguous).
int access_group(const Layout& l, int vec) { return std::max(1, std::min({contiguous_run(l, 1), vec, l.num_regs()})); }
}  // namespace

// The buffer `v` is, for its alias scope; kUnknownBuffer when it may be several (a loop
// or branch choosing between buffers): its accesses then carry no scope.
int Lowerer::smem_buffer_of(const ir::Value* v) const {
  auto it = smem_plan_.buffers_of.find(v);
  return it != smem_plan_.buffers_of.end() && it->second.size() == 1 ? it->second[0] : kUnknownBuffer;
}

llvm::Value* Lowerer::shared_stage_base(const ir::Operation& op, unsigned eb) {
  const ir::Type& bt = op.operands[0]->type;
  llvm::Value* tile_bytes = b.getInt32(uint32_t(bt.numel() * eb));
  llvm::Value* first = b.CreateMul(scalar(op.operands[1]), tile_bytes, "stage.offset", true, true);
  return b.CreateGEP(b.getInt8Ty(), scalar(op.operands[0]), first, "stage");
}

void Lowerer::lower_shared_store(const ir::Operation& op) {
  const ir::Value* v = op.operands[2];
  DType t = v->type.dtype;
  // The value where it already lives (a store takes any layout: the offsets follow it).
  Layout l = is_lazy(v) ? default_layout(v->type.shape) : natural(v).layout;
  Values regs = get(v, l);
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  const TargetCapabilities& caps = hooks_.capabilities();
  SharedTileLayout st = shared_tile_layout(v->type.shape, int(eb), caps.shared_banks * caps.shared_bank_bytes);
  Layout offsets = compose(st.offsets, l, v->type.shape);
  int g = access_group(l, st.vec);
  int buffer = smem_buffer_of(op.operands[0]);
  auto ids = smem_plan_.buffers_of.find(op.operands[0]);
  if (ids != smem_plan_.buffers_of.end())
    for (int id : ids->second) smem_before_write(id);
  llvm::Value* base = shared_stage_base(op, eb);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += g) {
    if (r & dup) continue;  // a copy of another register
    llvm::Value* p = b.CreateGEP(ty, base, element_index(offsets, r));
    smem_store(pack_for_memory(regs, r, g, t), p, eb * unsigned(g), buffer);
  }
  if (ids != smem_plan_.buffers_of.end())
    for (int id : ids->second) smem_after_write(id);
}

void Lowerer::lower_shared_load(const ir::Operation& op) {
  const ir::Value* res = op.result();
  DType t = res->type.dtype;
  const Layout& l = plan_.of(res);
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  const TargetCapabilities& caps = hooks_.capabilities();
  SharedTileLayout st = shared_tile_layout(res->type.shape, int(eb), caps.shared_banks * caps.shared_bank_bytes);
  Layout offsets = compose(st.offsets, l, res->type.shape);
  int g = access_group(l, st.vec);
  int buffer = smem_buffer_of(op.operands[0]);
  llvm::Value* base = shared_stage_base(op, eb);
  uint32_t dup = l.duplicate_reg_mask();
  Values out(l.num_regs());
  for (int r = 0; r < l.num_regs(); r += g) {
    if (r & dup) continue;
    llvm::Value* p = b.CreateGEP(ty, base, element_index(offsets, r));
    if (g == 1) {
      out[r] = smem_load(ty, p, eb, buffer);
      continue;
    }
    llvm::Value* vec = smem_load(llvm::FixedVectorType::get(ty, unsigned(g)), p, eb * unsigned(g), buffer);
    for (int k = 0; k < g; ++k) out[r + k] = b.CreateExtractElement(vec, uint64_t(k));
  }
  for (int r = 0; r < l.num_regs(); ++r) {
    if (!out[r]) out[r] = out[r & ~dup];
  }
  for (auto& x : out) x = from_mem(x, t);
  auto ids = smem_plan_.buffers_of.find(op.operands[0]);
  if (ids != smem_plan_.buffers_of.end())
    for (int id : ids->second) smem_after_read(id);
  set_natural(res, Regs{l, std::move(out)});
}

}  // namespace tl::gpu

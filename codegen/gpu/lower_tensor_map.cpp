// tensor_map_load: one TMA box into one stage of a shared buffer (a descriptor load under
// launch_options::tma, dsl/src/descriptor.cpp). The stage's base, the op's scratch (its
// mbarrier) and the coordinates innermost first, as the map's dims are; the copy and its
// wait are the target's (GpuHooks::tensor_map_load: NVIDIA sm_90's cp.async.bulk.tensor).
// The box lands in the layout the buffer's encoding says (the trace recorded the one the
// map's swizzle writes), so the shared_load after it reads it like any stage.
#include <fmt/format.h>

#include "codegen/gpu/lower_context.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

void Lowerer::lower_tensor_map_load(const ir::Operation& op) {
  const ir::Type& bt = op.operands[0]->type;
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(mem_type(bt.dtype)));
  if (!op.smem) fail(op, "gpu lowering: a tensor_map_load without its mbarrier's scratch (a tl bug)");
  llvm::Value* dst = shared_stage_base(op, eb);
  llvm::Value* mbarrier = smem_ptr(b.getInt32(0));
  std::vector<llvm::Value*> coords;
  for (size_t i = op.operands.size(); i-- > 3;) coords.push_back(scalar(op.operands[i]));
  const int bytes = int(bt.numel() * eb);
  if (!hooks_.tensor_map_load(b, tid_, dst, mbarrier, scalar(op.operands[2]), coords, bytes))
    fail(op, fmt::format("tensor descriptor load: {} has no TMA (a tl bug: only sm_90 launches take tensor maps)",
                         hooks_.target_name()));
}

}  // namespace tl::gpu

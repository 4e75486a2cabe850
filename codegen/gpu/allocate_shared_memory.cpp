// allocate_shared_memory (passes.hpp): the allocator's answer (shared_memory.cpp: buffer
// offsets, the scratch region above the buffers live where it is used, each op's scratch
// bytes) recorded in the IR, before lowering, as Triton's AllocationAnalysis feeds its
// lowering. A program that does not fit is found here, before any of it is emitted, and
// said as data (SharedMemoryOverflow: the buffer or the op whose scratch does not fit, the
// buffers live there), which codegen/pipeline.cpp answers with fewer pipeline stages or a
// compile error at that line.
#include <fmt/format.h>

#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/shared_memory.hpp"

namespace tl::gpu {

std::optional<SharedMemoryOverflow> allocate_shared_memory(ir::Function& f, const PlanTarget& t,
                                                           std::vector<std::string>& remarks) {
  SharedMemoryPlan plan = plan_shared_memory(f, *t.caps, t.caps->arch);
  if (plan.overflow) return std::move(plan.overflow);
  ir::walk(f.body, [&](ir::Operation& op) {
    op.smem.reset();
    if (op.op == Op::shared_alloc) {
      const SharedBuffer& buf = plan.buffers[size_t(plan.index_of(&op))];
      op.smem = ir::Operation::SharedSlice{buf.offset, buf.bytes};
    } else if (const int64_t bytes = scratch_bytes(op)) {
      op.smem = ir::Operation::SharedSlice{plan.scratch_at.at(&op), (bytes + 15) / 16 * 16};
    }
  });
  // The scratch placed in bytes of buffers not live where it is used: what let the program
  // fit, said where the user looks.
  if (plan.scratch_bytes && plan.scratch_offset < plan.buffer_bytes)
    remarks.push_back(fmt::format(
        "shared memory: the {} bytes of scratch that layout conversions and reductions exchange data through share "
        "bytes with tl::shared buffers not live where they are used ({} bytes at offset {}, {} of buffers): {} bytes "
        "in all",
        plan.scratch_bytes, plan.scratch_bytes, plan.scratch_offset, plan.buffer_bytes,
        std::max(plan.buffer_bytes, plan.scratch_offset + plan.scratch_bytes)));
  return std::nullopt;
}

}  // namespace tl::gpu

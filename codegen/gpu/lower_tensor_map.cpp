// tensor_map_load: one TMA box into one stage of a shared buffer (a descriptor load under
// launch_options::tma, dsl/src/descriptor.cpp), the mbarriers of the pipeliner's TMA
// stages (Op::mbarrier), and tensor_map_store: one box written from a stage. The stage's base, the mbarrier and the coordinates innermost
// first, as the map's dims are; the instructions are the target's (GpuHooks: NVIDIA
// sm_90's cp.async.bulk.tensor and mbarrier). The box lands in the layout the buffer's
// encoding says (the trace recorded the one the map's swizzle writes), so the shared_load
// after it reads it like any stage.
//
// A load of its own (no kTensorMapIssue) is a copy waited for at once, on an mbarrier in
// the op's 8 bytes of scratch:
//
//   thread 0: init (1 arrival); bar.sync; one thread: arm + copy; all: wait phase 0;
//   bar.sync; thread 0: inval
//
// The first bar.sync is what makes the init visible to the threads that wait; the second
// keeps the inval (and whatever reuses the 8 bytes next) after every thread's wait. The
// arm and the copy are one thread's, in order, and a thread may start waiting before the
// arm (the phase cannot complete without its arrival): Triton's same load has a bar.sync
// after the arm and another after the copy, which order nothing more.
//
// The pipeliner's copies (kTensorMapIssue) only arm and issue: the stage's mbarrier, in
// the loop's i64 [1] buffer of one stage an mbarrier (passes/pipeline_loops.cpp), is
// initialised before the loop and waited on in the iteration that reads the stage.
#include <fmt/format.h>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

void Lowerer::lower_tensor_map_load(const ir::Operation& op) {
  const ir::Type& bt = op.operands[0]->type;
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(mem_type(bt.dtype)));
  const bool issue = op.i1 == ir::kTensorMapIssue;
  const size_t rank = bt.shape.size();
  llvm::Value* dst = shared_stage_base(op, eb);
  std::vector<llvm::Value*> coords;
  for (size_t i = 3 + rank; i-- > 3;) coords.push_back(scalar(op.operands[i]));
  const int bytes = int(bt.numel() * eb);
  auto no_tma = [&] {
    fail(op, fmt::format("tensor descriptor load: {} has no TMA (a tl bug: only sm_90 launches take tensor maps)",
                         hooks_.target_name()));
  };
  if (issue) {
    // The stage's mbarrier: 8 bytes a stage of the loop's mbarrier buffer.
    llvm::Value* stage = scalar(op.operands[1]);
    llvm::Value* bar = b.CreateGEP(b.getInt8Ty(), scalar(op.operands[3 + rank]),
                                   b.CreateMul(stage, b.getInt32(8), "tma.bar.offset", true, true), "tma.bar");
    if (!hooks_.tensor_map_issue(b, tid_, dst, bar, scalar(op.operands[2]), coords, bytes,
                                 scalar(op.operands[4 + rank])))
      no_tma();
    return;
  }
  if (!op.smem) fail(op, "gpu lowering: a tensor_map_load without its mbarrier's scratch (a tl bug)");
  llvm::Value* mbarrier = smem_ptr(b.getInt32(0));
  if (!hooks_.mbarrier_init(b, tid_, mbarrier, 1, 1)) no_tma();
  hooks_.barrier(b);
  hooks_.tensor_map_issue(b, tid_, dst, mbarrier, scalar(op.operands[2]), coords, bytes, nullptr);
  hooks_.mbarrier_wait(b, mbarrier, b.getInt32(0));
  hooks_.barrier(b);
  hooks_.mbarrier_inval(b, tid_, mbarrier, 1);
}

// The store: every thread's fence.proxy.async (its writes of the stage, through the
// generic proxy, ordered before the copy's reads through the async one), a bar.sync, and
// one thread of warp 0 issues the copy in a bulk group and waits until it has read the
// stage (cp.async.bulk.wait_group.read 0), Triton's instructions for it. Triton waits
// there only before the stage is written again (and at the kernel's end); here the
// issuing thread waits at once, so that a later barrier orders whatever reuses the bytes.
void Lowerer::lower_tensor_map_store(const ir::Operation& op) {
  const ir::Type& bt = op.operands[0]->type;
  const unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(mem_type(bt.dtype)));
  std::vector<llvm::Value*> coords;
  for (size_t i = op.operands.size(); i-- > 3;) coords.push_back(scalar(op.operands[i]));
  hooks_.fence_async_shared(b);
  hooks_.barrier(b);
  if (!hooks_.tensor_map_store(b, tid_, shared_stage_base(op, eb), scalar(op.operands[2]), coords))
    fail(op, fmt::format("tensor descriptor store: {} has no TMA (a tl bug: only sm_90 launches take tensor maps)",
                         hooks_.target_name()));
}

void Lowerer::lower_mbarrier(const ir::Operation& op) {
  llvm::Value* bars = scalar(op.operands[0]);
  const int count = op.operands[0]->type.stages;
  bool ok = false;
  switch (op.i0) {
    case ir::kMbarrierInit: ok = hooks_.mbarrier_init(b, tid_, bars, count, int(op.i1)); break;
    case ir::kMbarrierInval: ok = hooks_.mbarrier_inval(b, tid_, bars, count); break;
    case ir::kMbarrierWait: {
      llvm::Value* at = b.CreateMul(scalar(op.operands[1]), b.getInt32(8), "mbarrier.offset", true, true);
      ok = hooks_.mbarrier_wait(b, b.CreateGEP(b.getInt8Ty(), bars, at, "mbarrier"), scalar(op.operands[2]));
      break;
    }
    default: break;
  }
  if (!ok) fail(op, fmt::format("mbarrier: {} has none (a tl bug: only sm_90 TMA stages make them)", hooks_.target_name()));
}

}  // namespace tl::gpu

// insert_shared_barriers (passes.hpp): Triton's Membar where Triton runs it, after the
// allocation, over the bytes each access touches (codegen/passes/insert_barriers.cpp's
// analysis with a model of byte ranges). The tile IR's barriers (placed per buffer
// before any GPU planning) are there already; this adds those that only the planning
// makes necessary:
// - an exchange through scratch (a conversion through shared memory, a cross-warp
//   reduction, scan, sort, gather, flip, histogram, an atomic's broadcast old value)
//   after the reads of the previous one: every use's scratch lies at its recorded slice
//   (Operation::smem), and the op's own lowering orders its write before its read;
// - a buffer the allocator placed in the bytes of a dead buffer or of scratch;
// - an operand plan_dot_operand_sources staged in a buffer of its own, before the dot
//   reads it;
// - reads a dot makes itself (kReadByDot operands and kConversionReadByDot conversions'
//   scratch, read at the dot, a K step at a time), at the dot.
// With warpgroup dots (sm_90), every barrier is preceded by a fence.proxy.async: wgmma
// reads its operands through the async proxy, the threads' stores and cp.async copies
// write through the generic one, and the fence by the writers before the barrier orders
// them for the reader (PTX ISA, "Proxies"; CUTLASS's fence_view_async_shared). Every
// write a dot reads reaches it through a barrier, and a fence where nothing was written
// costs little.
#include <unordered_map>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"
#include "codegen/passes/shared_buffers.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

int insert_shared_barriers(ir::Function& f, const PlanTarget& t) {
  const passes::SharedBuffers shared(f);
  auto ranges = [&](const ir::Value* v) {
    std::vector<passes::SharedRange> out;
    for (const ir::Operation* alloc : shared.of(v)) {
      if (!alloc->smem) throw compile_error("gpu planning: a shared buffer without an allocation (a tl bug)");
      out.push_back({alloc->smem->offset, alloc->smem->offset + alloc->smem->bytes});
    }
    return out;
  };
  // The buffers each dot reads itself (its operands' shared_loads marked kReadByDot).
  std::unordered_map<const ir::Operation*, std::vector<const ir::Value*>> read_by_dot;
  bool warpgroup_dots = false;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::dot) return;
    const bool warpgroup = recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size).warpgroup();
    warpgroup_dots |= warpgroup;
    for (int i = 0; i < 2; ++i) {
      const ir::Operation* read = nullptr;
      if (warpgroup) {
        if (auto m = match_descriptor_operand(op.operands[size_t(i)], i)) read = m->read;
      } else if (auto m = match_shared_dot_operand(op.operands[size_t(i)])) {
        read = m->read;
      }
      if (read && read->i1 == ir::kReadByDot) read_by_dot[&op].push_back(read->operands[0]);
    }
  });
  const passes::SharedAccessModel model = [&](const ir::Operation& op, std::vector<passes::SharedAccess>& out) {
    switch (op.op) {
      case Op::shared_load:
        if (op.i1 != ir::kReadByDot) out.push_back({passes::SharedAccess::read, ranges(op.operands[0])});
        return;
      case Op::shared_store: out.push_back({passes::SharedAccess::write, ranges(op.operands[0])}); return;
      case Op::tensor_map_load:
        // The stage, and its mbarrier in the op's scratch (initialised, waited on and
        // invalidated within the op, between barriers of its own). The pipeliner's issued
        // copy: its stage, complete at its mbarrier's wait (insert_barriers.cpp).
        if (op.i1 == ir::kTensorMapIssue) {
          out.push_back({passes::SharedAccess::copy, ranges(op.operands[0])});
          // (and the arm of its stage's mbarrier: a read after thread 0's init, as
          // insert_barriers.cpp models it)
          out.push_back({passes::SharedAccess::read, ranges(op.operands[3 + op.operands[0]->type.shape.size()])});
          return;
        }
        out.push_back({passes::SharedAccess::write, ranges(op.operands[0])});
        if (op.smem) out.push_back({passes::SharedAccess::exchange, {{op.smem->offset, op.smem->offset + op.smem->bytes}}});
        return;
      case Op::mbarrier:  // (as insert_barriers models it)
        out.push_back({op.i0 == ir::kMbarrierWait ? passes::SharedAccess::read : passes::SharedAccess::write,
                       ranges(op.operands[0])});
        return;
      case Op::tensor_map_store:  // (after its own fence and barrier: insert_barriers.cpp)
        out.push_back({passes::SharedAccess::read, ranges(op.operands[0])});
        return;
      case Op::global_load_to_shared:
        // (a compiler copy plan_copies loads and stores writes nothing itself: its shared_store does)
        if (!(op.copy && op.copy->chunk_bytes == 0)) out.push_back({passes::SharedAccess::copy, ranges(op.operands[0])});
        return;
      case Op::shared_alloc: return;
      case Op::convert_layout:
        // One read by its dot only writes (plan_dot_operand_sources): the barrier before
        // the dot's reads is placed here, and one serves every conversion written before it.
        if ((op.i1 & ir::kConversionReadByDot) && op.smem) {
          out.push_back({passes::SharedAccess::write, {{op.smem->offset, op.smem->offset + op.smem->bytes}}});
          return;
        }
        if (op.smem) out.push_back({passes::SharedAccess::exchange, {{op.smem->offset, op.smem->offset + op.smem->bytes}}});
        return;
      case Op::dot:
        if (auto it = read_by_dot.find(&op); it != read_by_dot.end())
          for (const ir::Value* buf : it->second) out.push_back({passes::SharedAccess::read, ranges(buf)});
        // A conversion's scratch this dot reads (kConversionReadByDot): its reads are the
        // dot's, after a barrier placed here for the conversion's writes.
        for (int i = 0; i < 2; ++i) {
          const ir::Operation* c = op.operands[size_t(i)]->def;
          if (c && c->op == Op::convert_layout && (c->i1 & ir::kConversionReadByDot) && c->smem)
            out.push_back({passes::SharedAccess::read, {{c->smem->offset, c->smem->offset + c->smem->bytes}}});
        }
        return;
      default:
        if (op.smem) out.push_back({passes::SharedAccess::exchange, {{op.smem->offset, op.smem->offset + op.smem->bytes}}});
        return;
    }
  };
  const int inserted = passes::insert_barriers(f, model);
  if (warpgroup_dots) {
    std::vector<ir::Operation*> barriers;
    ir::walk(f.body, [&](ir::Operation& op) {
      if (op.op == Op::barrier) barriers.push_back(&op);
    });
    for (ir::Operation* bar : barriers) {
      ir::Builder b(*bar->parent);
      b.before(*bar);
      b.create(Op::fence_async_shared, {}, {}, bar->loc);
    }
  }
  return inserted;
}

}  // namespace tl::gpu

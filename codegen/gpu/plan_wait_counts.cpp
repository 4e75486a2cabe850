// plan_wait_counts (passes.hpp): the number each of the pipeliner's waits gives the
// hardware, recorded on the op (`async_wait num_outstanding=N loads`), Triton's
// UpdateAsyncWaitCount. The pipeliner counts copy groups (the global_load_to_shared ops
// that may stay in flight: kWaitCountsCopies), which is what NVIDIA's
// cp.async.wait_group counts; AMD's s_waitcnt vmcnt counts memory loads, every one a
// wave issued, register loads included, and completes them in order. So on such a
// target (TargetCapabilities::copy_waits_count_loads) the count becomes the loads issued
// after the last copy that must have landed: the later copies' loads, from their
// recorded copy plans (plan_copies), and the register loads in between, from their
// layouts. A count too high lets a copy that must have landed stay in flight (wrong
// results); too low only waits longer: where a path is unknown the least is taken.
#include "codegen/gpu/layout_plan.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {

class WaitCounter {
 public:
  WaitCounter(const passes::AxisAnalysis& axis, const TargetCapabilities& caps) : axis_(axis), caps_(caps) {}

  // The loads that may stay in flight at position `pos` of `b` when the `groups` copy ops
  // issued last may: those copies' loads and every register load issued after the copy
  // before them, the one that must have landed, walking back through the program: into
  // the loop's previous iteration and, as the first iteration's alternative, before the
  // loop; out of a branch to before it. The least over those paths, counting nothing past
  // a branch or inner loop that copies (a lower bound).
  int loads_of_last_copies(const ir::Block& b, size_t pos, int groups, int wraps) const {
    int sum = 0, found = 0;
    for (size_t i = pos; i-- > 0;) {
      const ir::Operation& op = *b.ops[i];
      if (op.op == Op::global_load_to_shared) {
        if (groups == 0) return sum;  // the copy waited for
        sum += copy_loads_per_thread(op);
        --groups;
        ++found;
        continue;
      }
      if (op.op == Op::load) {
        sum += register_loads_per_thread(op);
        continue;
      }
      bool copies = false;
      for (auto& r : op.regions)
        ir::walk(*r, [&](ir::Operation& o) { copies |= o.op == Op::global_load_to_shared; });
      if (copies) return sum;
    }
    const ir::Operation* parent = b.parent;
    if (!parent) return sum;
    const ir::Block& outer = *parent->parent;
    size_t at = 0;
    while (outer.ops[at].get() != parent) ++at;
    int before = loads_of_last_copies(outer, at, groups, 0);
    if (parent->op != Op::for_) return sum + before;
    // A whole pass over the body that copies nothing finds nothing the next time either.
    if (wraps >= 16 || (wraps > 0 && pos == b.ops.size() && found == 0)) return sum;
    return sum + std::min(before, loads_of_last_copies(b, b.ops.size(), groups, wraps + 1));
  }

 private:
  // Loads every thread certainly issues for a copy (0 where some do not): one a chunk of
  // its plan, a masked-off chunk included where the target fills it with a zero copy.
  int copy_loads_per_thread(const ir::Operation& op) const {
    const bool masked = op.operands.size() > 3;
    if (masked && !(ir::copy_fills_zeros(op) && caps_.has_zero_copy())) return 0;  // a masked-off chunk issues nothing
    if (!op.copy) throw compile_error("gpu planning: a copy without a plan (plan_copies runs first; a tl bug)");
    if (op.copy->chunk_bytes == 0) return 0;  // loaded and stored before it: its commit group only
    for (uint32_t w : op.layout->warp)
      if (w == 0) return 0;  // copied by some warps only (owner_predicate)
    const int per = op.copy->chunk_bytes / byte_width(op.operands[0]->type.dtype);
    return op.layout->num_regs() / per;
  }

  // The load instructions a tile load certainly issues per thread (a lower bound): a
  // buffer load issues one per vector access, masked or not; a masked global load branches
  // around a wave with no lane on, so it counts none. Only 16-byte accesses count: LLVM
  // may merge narrower neighbouring loads into one instruction (SILoadStoreOptimizer).
  int register_loads_per_thread(const ir::Operation& op) const {
    if (op.result()->type.is_scalar() || !op.result()->layout) return 0;
    const ir::Value* ptr = op.operands[0];
    const ir::Value* mask = op.operands.size() > 1 ? op.operands[1] : nullptr;
    const bool buffer_load = caps_.has_buffer_ops() && op.i0 == ir::kBufferAccess;
    if (mask && !buffer_load) return 0;
    const Layout& l = *op.result()->layout;
    const int v = access_width(axis_, l, ptr, mask);
    if (v * byte_width(op.result()->type.dtype) != 16) return 0;
    const uint32_t dup = l.duplicate_reg_mask();
    int n = 0;
    for (int r = 0; r < l.num_regs(); r += v) n += (uint32_t(r) & dup) == 0;
    return n;
  }

  const passes::AxisAnalysis& axis_;
  const TargetCapabilities& caps_;
};

void plan_block(ir::Block& b, const WaitCounter& counter) {
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Operation& op = *b.ops[i];
    for (auto& r : op.regions) plan_block(*r, counter);
    if (op.op != Op::async_wait || op.i1 != ir::kWaitCountsCopies) continue;
    op.i0 = counter.loads_of_last_copies(b, i, int(op.i0), 0);
    op.i1 = ir::kWaitCountsLoads;
  }
}

}  // namespace

void plan_wait_counts(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t) {
  if (!t.caps->copy_waits_count_loads) return;
  plan_block(f.body, WaitCounter(axis, *t.caps));
}

}  // namespace tl::gpu

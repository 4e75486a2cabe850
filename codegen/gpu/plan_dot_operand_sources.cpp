// plan_dot_operand_sources (passes.hpp): where a dot's operand is a tile read from a shared
// buffer (match_shared_dot_operand: a shared_load, through a cast and/or trans) already in
// the operand's layout, the dot reads it itself, a K step at a time next to the
// instructions that use it, as Triton's local_loads per K step (and its AMD backend's
// interleaving of ds_reads with MFMAs), instead of holding the whole [M, K] and [K, N]
// tiles in registers before the first instruction. Marked on the shared_load
// (ir::kReadByDot); the lowering emits nothing at the read and converts (a cast) each
// register as its K step needs it.
#include <unordered_map>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {

void plan_dot_operand_sources(ir::Function& f, const PlanTarget& t) {
  std::unordered_map<const ir::Value*, int> uses;
  ir::walk(f.body, [&](ir::Operation& op) {
    for (const ir::Value* v : op.operands) ++uses[v];
  });
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::dot) return;
    const DotPlan p = recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size);
    for (int i = 0; i < 2; ++i) {
      auto m = match_shared_dot_operand(op.operands[size_t(i)]);
      if (!m) continue;
      // Only the dot reads it (the read, its cast and its transpose have no other use),
      // in the same block.
      const ir::Value* read = m->read->result();
      if ((m->trans && uses[m->trans->result()] != 1) || uses[m->registers] != 1 || uses[read] != 1 ||
          m->read->parent != op.parent)
        continue;
      // The registers are the read's (a transpose renames no register; a cast converts
      // each register where it stands).
      const Layout& want = i == 0 ? p.a : p.b;
      const Layout& have = *m->registers->layout;
      if (!(m->trans ? trans_layout(have, m->trans->ints) == want : have == want)) continue;
      if (m->cast && !(*read->layout == have)) continue;
      // Reading later is reading the same bytes: nothing between writes memory.
      bool between = false, clean = true;
      for (const auto& o : op.parent->ops) {
        if (o.get() == &op) break;
        if (between) clean &= !ir::writes_or_has_effects(*o);
        between |= o.get() == m->read;
      }
      if (clean) const_cast<ir::Operation*>(m->read)->i1 = ir::kReadByDot;
    }
  });
}

}  // namespace tl::gpu

// plan_conversion_paths (passes.hpp): each convert_layout's path, by the one rule
// (conversion_path, layout.hpp): registers, warp shuffles or shared memory. Recorded in
// the op (i0, printed `path=...`) and counted in the compile report.
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/passes.hpp"

namespace tl::gpu {

ir::ConvertPath conversion_path_at(const Layout& from, const Layout& to, const ir::Block* where, const PlanTarget& t) {
  bool in_loop = false;
  if (t.caps->register_pressure_rules)
    for (const ir::Block* b = where; b && b->parent && !in_loop; b = b->parent->parent)
      in_loop = b->parent->op == Op::for_ || b->parent->op == Op::while_;
  return conversion_path(from, to, in_loop);
}

void plan_conversion_path(ir::Operation& conv, const PlanTarget& t) {
  conv.i0 = int64_t(conversion_path_at(*conv.operands[0]->layout, *conv.result()->layout, conv.parent, t));
}

void plan_conversion_paths(ir::Function& f, const PlanTarget& t) {
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::convert_layout) plan_conversion_path(op, t);
  });
}

std::vector<int> conversion_path_counts(ir::Function& f) {
  std::vector<int> count(4, 0);
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::convert_layout) ++count[size_t(op.i0)];
  });
  return count;
}

}  // namespace tl::gpu

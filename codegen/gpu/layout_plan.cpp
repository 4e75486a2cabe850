// The lowering's read-only view of the middle end's decisions (layout_plan.hpp).
#include "codegen/gpu/layout_plan.hpp"

#include <fmt/format.h>

#include "tl/error.hpp"

namespace tl::gpu {

LayoutPlan::LayoutPlan(const ir::Function& f, const TargetCapabilities& caps, int wave_size, int num_warps)
    : num_warps_(num_warps) {
  ir::walk(const_cast<ir::Block&>(f.body), [&](ir::Operation& op) {
    for (const ir::Value* v : op.operands) used_.insert(v);
    if (op.op == Op::dot) dots_.emplace(&op, recorded_dot_plan(caps, op, num_warps, wave_size));
  });
}

const Layout& LayoutPlan::of(const ir::Value* v) const {
  if (!v->layout) throw compile_error(fmt::format("layout plan: a {} without a layout (a tl bug)", v->type.str()));
  return *v->layout;
}

const DotPlan& LayoutPlan::dot(const ir::Operation* op) const {
  auto it = dots_.find(op);
  if (it == dots_.end()) throw compile_error("layout plan: a dot without a plan", op->loc.file, op->loc.line);
  return it->second;
}

const Layout& LayoutPlan::op_layout(const ir::Operation* op) const {
  if (!op->layout)
    throw compile_error(fmt::format("layout plan: no layout for '{}'", op_name(op->op)), op->loc.file, op->loc.line);
  return *op->layout;
}

}  // namespace tl::gpu

// What the GPU lowering reads of the middle end's decisions (codegen/gpu/passes.hpp):
// every tile value's layout, rematerialized values, the layout a store or atomic works
// in, each tl::dot's matrix-core plan. All of it is recorded in the IR by the passes
// (printed with TL_DUMP_IR); this view only reads it back, so the lowering decides
// nothing about layouts. Private to codegen/gpu.
#pragma once

#include <unordered_map>
#include <unordered_set>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/passes/axis_analysis.hpp"

namespace tl::gpu {

class LayoutPlan {
 public:
  LayoutPlan() = default;
  // Reads the plan the passes recorded in `f` (a compile error, a tl bug, where a dot has
  // none); dots are rebuilt against `caps`.
  LayoutPlan(const ir::Function& f, const TargetCapabilities& caps, int wave_size, int num_warps);

  // A value emitted where it is used, in whatever layout its user works in (cheap index
  // math), as Triton's RemoveLayoutConversions rematerializes instead of converting.
  bool rematerialized(const ir::Value* v) const { return v->rematerialized; }
  // The layout tile `v` lives in (for a rematerialized value: where it is emitted when
  // its user has no preference).
  const Layout& of(const ir::Value* v) const;
  // The layout a store, a tile atomic or a global_load_to_shared works in.
  const Layout& op_layout(const ir::Operation* op) const;
  // A tl::dot's matrix-core plan: instruction, warps, operand and accumulator layouts.
  const DotPlan& dot(const ir::Operation* op) const;
  int num_warps() const { return num_warps_; }
  bool has_uses(const ir::Value* v) const { return used_.count(v) != 0; }

 private:
  int num_warps_ = 0;
  std::unordered_set<const ir::Value*> used_;
  std::unordered_map<const ir::Operation*, DotPlan> dots_;
};

// How many consecutive registers of `l` one access through `ptr` may cover: the
// layout's run along its fastest dim, the pointer's contiguity and alignment, and the
// mask's constancy. (assign_layouts plans with it; the lowering issues it.)
int access_width(const passes::AxisAnalysis& axis, const Layout& l, const ir::Value* ptr, const ir::Value* mask);

}  // namespace tl::gpu

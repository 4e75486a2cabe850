// Layout assignment, the GPU lowering's first step (assign_layouts.cpp): before any code
// is emitted, every tile value gets the one distributed layout (layout.hpp) it will live
// in, so that the lowering only reads decisions and two values of the same shape (an
// operand tile and an accumulator, a row-major and a column-major load) may differ.
// Private to codegen/gpu.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/passes/axis_analysis.hpp"

namespace tl::gpu {

class LayoutPlan {
 public:
  // A value emitted where it is used, in whatever layout its user works in (cheap index
  // math: splat, arange, broadcast, integer and pointer arithmetic on those), as
  // Triton's RemoveLayoutConversions rematerializes instead of converting.
  bool rematerialized(const ir::Value* v) const { return lazy_.count(v) != 0; }
  // The layout tile `v` lives in. A rematerialized value has none of its own: this is
  // then its shape's default, the layout a user with no preference reads it in.
  const Layout& of(const ir::Value* v);
  // The default of a shape: the coalesced layout the memory ops of that shape vote for
  // (the widest access wins), or a plain row-major blocked layout.
  const Layout& shape_default(const std::vector<int>& shape);
  // The layout a store or a tile atomic works in (an op without a tile result).
  const Layout& op_layout(const ir::Operation* op) const;
  // A tl::dot's matrix-core plan: instruction, warps, operand and accumulator layouts.
  const DotPlan& dot(const ir::Operation* op) const;
  int num_warps() const { return num_warps_; }
  bool has_uses(const ir::Value* v) const { return used_.count(v) != 0; }
  // The tile IR with each assigned value's layout, for TL_DUMP_IR.
  std::string str(const ir::Function& f);

 private:
  friend class LayoutPlanner;
  int wave_size_ = 0, num_warps_ = 0;
  std::unordered_set<const ir::Value*> lazy_, used_;
  std::unordered_map<const ir::Value*, Layout> layouts_;
  std::unordered_map<const ir::Operation*, Layout> op_layouts_;
  std::unordered_map<const ir::Operation*, DotPlan> dots_;
  std::map<std::vector<int>, Layout> defaults_;
};

// Assigns layouts. Anchors: loads and stores (coalesced along their pointer's most
// contiguous dim, as wide as alignment allows), reductions (the slice of their input),
// atomics. Elementwise ops follow their operands; loads are made in the layout all their
// users want when that costs no access width; stores store from the value's own layout
// when that costs nothing. Loop-carried values take the layout of what the loop body
// yields (iterated to a fixed point), so an accumulator lives in the layout its update
// produces, not in that of the `zeros` it starts from.
// What tl::dot is planned against: the target's matrix instructions and the launch's
// matrix_instr_nonkdim and kpack. Without it (null), a dot is a compile error.
struct DotTarget {
  const TargetCapabilities* caps = nullptr;
  int nonkdim = 0, kpack = 1;
};
LayoutPlan assign_layouts(const ir::Function& f, const passes::AxisAnalysis& axis, int wave_size, int num_warps,
                          const DotTarget& dot = {});

// How many consecutive registers of `l` one access through `ptr` may cover: the
// layout's run along its fastest dim, the pointer's contiguity and alignment, and the
// mask's constancy.
int access_width(const passes::AxisAnalysis& axis, const Layout& l, const ir::Value* ptr, const ir::Value* mask);

}  // namespace tl::gpu

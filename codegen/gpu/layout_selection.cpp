// Layout selection, Triton's Coalesce pass in one step: memory ops are the anchors.
// For each tile shape, the loads/stores of that shape vote for the order (their most
// contiguous dim first) and the elements per thread along it: as many as one 16-byte
// access holds, as contiguity and alignment allow (axis analysis), and no more than the
// tile gives each thread. Elementwise ops of that shape then use the same layout, so
// the common kernels (row-wise loads, math, stores) need no conversions at all. An
// access that cannot use the full width (an unaligned specialization) still uses the
// shape's layout; it just issues narrower loads.
#include <algorithm>

#include "codegen/gpu/lower_context.hpp"

namespace tl::gpu {

std::map<std::vector<int>, Layout> select_layouts(const ir::Function& f, const passes::AxisAnalysis& axis,
                                                  int wave_size, int num_warps) {
  struct Vote {
    std::vector<int> order;
    int vec = 0;
  };
  std::map<std::vector<int>, Vote> votes;
  ir::walk(const_cast<ir::Block&>(f.body), [&](ir::Operation& op) {
    if (op.op != Op::load && op.op != Op::store) return;
    const ir::Value* ptr = op.operands[0];
    if (ptr->type.is_scalar()) return;
    int rank = ptr->type.rank();
    const passes::AxisInfo& ai = axis.get(ptr);
    std::vector<int> order(rank);
    for (int d = 0; d < rank; ++d) order[d] = rank - 1 - d;
    // most contiguous dim first; ties keep the row-major default
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ai.contiguity[a] > ai.contiguity[b]; });
    int vec = axis.vector_width(ptr, order[0]);
    Vote& v = votes[ptr->type.shape];
    if (vec > v.vec || v.order.empty()) v = Vote{order, vec};
  });
  std::map<std::vector<int>, Layout> out;
  for (auto& [shape, v] : votes) out[shape] = default_layout(shape, v.order, v.vec, wave_size, num_warps);
  return out;
}

}  // namespace tl::gpu

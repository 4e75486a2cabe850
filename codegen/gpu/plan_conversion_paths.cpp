// plan_conversion_paths (passes.hpp): each convert_layout's path, by the one rule
// (conversion_path, layout.hpp): registers, warp shuffles or shared memory. Recorded in
// the op (i0, printed `path=...`) and counted in the compile report.
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/passes.hpp"

namespace tl::gpu {

std::vector<int> plan_conversion_paths(ir::Function& f) {
  std::vector<int> count(4, 0);
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::convert_layout) return;
    ir::ConvertPath p = conversion_path(*op.operands[0]->layout, *op.result()->layout);
    op.i0 = int64_t(p);
    ++count[size_t(p)];
  });
  return count;
}

}  // namespace tl::gpu

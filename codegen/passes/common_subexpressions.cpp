// Common-subexpression elimination within each block (and into nested regions, which
// see the values of the blocks around them). Tracing emits many equal constants and
// splats; merging them keeps the lowered code small and compile times short.
#include <map>
#include <tuple>

#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

bool pure(const ir::Operation& op) {
  switch (op.op) {
    case Op::load: case Op::store: case Op::atomic_rmw: case Op::atomic_cas: case Op::assert_:
    case Op::print: case Op::yield: case Op::for_: case Op::if_:
      return false;
    default:
      return op.results.size() == 1;
  }
}

using Key = std::tuple<int, std::vector<const ir::Value*>, int64_t, int64_t, double, std::vector<int>, std::string,
                       DType, DType, std::vector<int>>;

Key key_of(const ir::Operation& op) {
  const ir::Type& t = op.result()->type;
  return {int(op.op), {op.operands.begin(), op.operands.end()}, op.i0, op.i1, op.f, op.ints, op.str,
          t.dtype, t.pointee, t.shape};
}

void run(ir::Block& b, std::map<Key, ir::Value*> seen, ir::Block& root) {
  for (auto& op : b.ops) {
    if (pure(*op)) {
      Key k = key_of(*op);
      auto it = seen.find(k);
      if (it != seen.end()) {
        ir::replace_all_uses(root, op->result(), it->second);
        continue;  // the now-unused op is removed by dead-code elimination
      }
      seen.emplace(std::move(k), op->result());
    }
    for (auto& r : op->regions) run(*r, seen, root);
  }
}

}  // namespace

void eliminate_common_subexpressions(ir::Function& f) { run(f.body, {}, f.body); }

}  // namespace tl::passes

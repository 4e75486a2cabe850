// Dead-code elimination: an op without side effects whose results nobody reads goes,
// innermost regions first, repeated until nothing changes.
#include <unordered_set>

#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

bool has_side_effects(const ir::Operation& op) {
  switch (op.op) {
    case Op::store: case Op::atomic_rmw: case Op::atomic_cas: case Op::assert_: case Op::print:
    case Op::yield: case Op::for_: case Op::if_:
      return true;
    default:
      return false;
  }
}

void collect_uses(ir::Block& b, std::unordered_set<const ir::Value*>& used) {
  ir::walk(b, [&](ir::Operation& op) {
    for (auto* v : op.operands) used.insert(v);
  });
}

bool sweep(ir::Block& b, const std::unordered_set<const ir::Value*>& used) {
  bool changed = false;
  for (auto& op : b.ops)
    for (auto& r : op->regions) changed |= sweep(*r, used);
  auto dead = [&](const std::unique_ptr<ir::Operation>& op) {
    if (has_side_effects(*op)) return false;
    for (auto& r : op->results)
      if (used.count(r.get())) return false;
    return true;
  };
  size_t before = b.ops.size();
  std::erase_if(b.ops, dead);
  return changed || b.ops.size() != before;
}

}  // namespace

void eliminate_dead_code(ir::Function& f) {
  for (;;) {
    std::unordered_set<const ir::Value*> used;
    collect_uses(f.body, used);
    if (!sweep(f.body, used)) return;
  }
}

}  // namespace tl::passes

// Dead-code elimination: an op whose results nobody reads goes when the op-properties
// table says nothing else observes it (no memory write, no side effect, none inside its
// regions either), innermost regions first, repeated until nothing changes.
#include <unordered_set>

#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

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
    if (!ir::is_removable_if_unused(*op)) return false;
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

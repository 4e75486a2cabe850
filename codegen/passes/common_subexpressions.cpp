// Common-subexpression elimination within each block (and into nested regions, which
// see the values of the blocks around them). Tracing emits many equal constants and
// splats; merging them keeps the lowered code small and compile times short.
//
// What may merge comes from the op-properties table: pure ops whenever they are equal;
// ops that only read memory when, in addition, no write or other effect (a store, an
// atomic, a barrier, a loop or branch containing one) runs between them. Each such
// ordering point starts a new memory epoch, and reads carry their epoch in their key.
#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

bool reads_only(const ir::Operation& op) {
  const ir::OpProperties& p = ir::properties(op.op);
  return p.has(ir::kReadsMemory) && !p.has(ir::kWritesMemory) && !p.has(ir::kSideEffects);
}

bool mergeable(const ir::Operation& op) {
  if (op.results.size() != 1 || !op.regions.empty()) return false;
  if (ir::writes_or_has_effects(op)) return false;  // a volatile load reads anew every time
  return ir::is_pure(op) || reads_only(op);
}

// The float attribute is compared by its bits, not its value: +0 and -0 are equal
// values but different constants (1/x, copysign, a stored -0), NaN equals nothing by
// value and would break the map's ordering (merging it with any constant), and NaNs of
// other payloads or signs stay apart.
using Key = std::tuple<int, std::vector<const ir::Value*>, int64_t, int64_t, uint64_t, std::vector<int>, std::string,
                       std::string, int64_t>;

Key key_of(const ir::Operation& op, int64_t epoch) {
  return {int(op.op), {op.operands.begin(), op.operands.end()}, op.i0, op.i1, std::bit_cast<uint64_t>(op.f), op.ints, op.str,
          op.result()->type.str(), reads_only(op) ? epoch : 0};
}

struct Run {
  int64_t next_epoch = 0;
  // Merged results and the value each now stands as: an op's operands are read through
  // this when the walk reaches it (in SSA every use comes after its definition in the
  // walk), one pass, where replacing the uses of each merged op walked the whole function
  // (a static_range(2048) of masked loads: 44 s to compile for sm_90, 90% of it there).
  std::unordered_map<const ir::Value*, ir::Value*> merged;
  // The mergeable ops of the blocks around the current op, by key. A region adds its own
  // and takes them out when it ends, instead of getting a copy of the map.
  std::map<Key, ir::Value*> seen;

  void block(ir::Block& b, int64_t epoch) {
    std::vector<std::map<Key, ir::Value*>::iterator> added;
    for (auto& op : b.ops) {
      for (ir::Value*& v : op->operands) {
        auto m = merged.find(v);
        if (m != merged.end()) v = m->second;
      }
      if (mergeable(*op)) {
        Key k = key_of(*op, epoch);
        auto it = seen.find(k);
        if (it != seen.end()) {
          merged.emplace(op->result(), it->second);
          continue;  // the now-unused op is removed by dead-code elimination
        }
        added.push_back(seen.emplace(std::move(k), op->result()).first);
      }
      bool effects = ir::writes_or_has_effects(*op);
      // A loop body runs after its own earlier iterations: its writes precede its reads.
      int64_t inner = (op->op == Op::for_ || op->op == Op::while_) && effects ? ++next_epoch : epoch;
      for (auto& r : op->regions) block(*r, inner);
      if (effects) epoch = ++next_epoch;
    }
    for (auto it : added) seen.erase(it);
  }
};

}  // namespace

void eliminate_common_subexpressions(ir::Function& f) { Run{}.block(f.body, 0); }

}  // namespace tl::passes

// `acc += tl::dot(a, b)` folded into the dot's own accumulator: add(x, dot(a, b, 0)) ->
// dot(a, b, x) (Triton's combine pass does the same). Triton's tutorials accumulate this
// way; unfolded, every iteration holds a second accumulator-sized tile (the dot's
// zero-started result) and adds it elementwise, which doubles the accumulator's
// registers. Only where the dot's result is read by the add alone and its accumulator is
// a zero constant of the add's type. A float sum then rounds in the dot's order
// (x + a.b accumulated into x, not a.b rounded first): Triton's behaviour, and exact for
// integer dots.
#include <algorithm>

#include "codegen/ir/builder.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

int combine(ir::Block& b, ir::Block& scope) {
  int n = 0;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Operation* op = b.ops[i].get();
    for (auto& r : op->regions) n += combine(*r, scope);
    if (op->op != Op::add) continue;
    for (int side = 0; side < 2; ++side) {
      ir::Value* d = op->operands[size_t(side)];
      ir::Value* x = op->operands[size_t(1 - side)];
      ir::Operation* dot = d->def;
      if (!dot || dot->op != Op::dot || dot->parent != &b || x->type != d->type || !ir::is_zero_constant(dot->operands[2]))
        continue;
      if (ir::uses_of(scope, d).size() != 1) continue;
      // The dot takes the add's place (x may be defined between the two) and its users.
      dot->operands[2] = x;
      ir::replace_all_uses(scope, op->result(), d);
      auto at = std::find_if(b.ops.begin(), b.ops.end(), [&](auto& o) { return o.get() == dot; });
      std::swap(*at, b.ops[i]);
      b.ops.erase(at);  // the add, unused now (it was after the dot: i moves back one)
      --i;
      ++n;
      break;
    }
  }
  return n;
}

}  // namespace

int combine_dot_accumulate(ir::Function& f) { return combine(f.body, f.body); }

}  // namespace tl::passes

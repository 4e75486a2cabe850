#include "codegen/passes/shared_buffers.hpp"

#include <algorithm>

namespace tl::passes {

SharedBuffers::SharedBuffers(const ir::Function& f) {
  collect(f.body);
  for (bool changed = true; changed;) {
    changed = false;
    propagate(f.body, changed);
  }
}

const std::vector<const ir::Operation*>& SharedBuffers::of(const ir::Value* v) const {
  static const std::vector<const ir::Operation*> none;
  auto it = of_.find(v);
  return it == of_.end() ? none : it->second;
}

void SharedBuffers::collect(const ir::Block& b) {
  for (auto& op : b.ops) {
    if (op->op == Op::shared_alloc) {
      allocs_.push_back(op.get());
      of_[op->result()] = {op.get()};
    }
    for (auto& r : op->regions) collect(*r);
  }
}

void SharedBuffers::merge(const ir::Value* into, const ir::Value* from, bool& changed) {
  auto it = of_.find(from);
  if (it == of_.end()) return;
  std::vector<const ir::Operation*> src = it->second;  // (`into` may rehash the map)
  auto& dst = of_[into];
  for (const ir::Operation* a : src)
    if (std::find(dst.begin(), dst.end(), a) == dst.end()) {
      dst.push_back(a);
      changed = true;
    }
}

void SharedBuffers::propagate(const ir::Block& b, bool& changed) {
  for (auto& op : b.ops) {
    for (auto& r : op->regions) propagate(*r, changed);
    if (op->op == Op::for_) {
      const ir::Block& body = *op->regions[0];
      const ir::Operation* y = body.terminator();
      for (size_t i = 0; i < op->results.size(); ++i)
        for (const ir::Value* src : {op->operands[3 + i], y->operands[i]}) {
          merge(body.args[1 + i].get(), src, changed);
          merge(op->result(int(i)), src, changed);
        }
    } else if (op->op == Op::if_) {
      for (size_t i = 0; i < op->results.size(); ++i)
        for (auto& r : op->regions) merge(op->result(int(i)), r->terminator()->operands[i], changed);
    }
  }
}

}  // namespace tl::passes

// Which tile values get a buffer and which are recomputed where they are read.
//
// Every loop over a tile costs compile time (LLVM vectorizes and schedules each one)
// and run time (a pass over a stack buffer), so values that are cheap to recompute, or
// read exactly once, are not stored:
//
//   cheap   index, address and mask arithmetic (arange, splat, broadcast, reshape,
//           trans, addptr, integer + - * & | ^ << >> min max, division by a constant),
//           comparisons, selects and casts: recomputed at every read. They may only
//           read buffers, scalars and other cheap values, so that recomputing them
//           never recomputes anything expensive.
//   fused   any other pure elementwise op (float arithmetic, math, fma) whose result
//           has one reader, in the same block, that reads each element once (anything
//           but broadcast): computed inside the reader's loop.
//   buffer  everything else, and always loads, atomics, reductions, scans and the
//           results of for/if. Loads are never recomputed: a store between the load
//           and the reader's loop could change what they see.
#include <unordered_map>
#include <unordered_set>

#include "codegen/cpu/lower.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::codegen::cpu {

namespace {

bool cheap_op(const ir::Operation& op) {
  DType t = op.result()->type.dtype;
  switch (op.op) {
    case Op::arange: case Op::splat: case Op::broadcast: case Op::reshape: case Op::expand_dims:
    case Op::trans: case Op::addptr: case Op::select: case Op::cmp: case Op::cast: case Op::bitcast:
    case Op::hint: case Op::join: case Op::split: case Op::cat: case Op::flip: case Op::gather:
      return true;
    case Op::add: case Op::sub: case Op::mul: case Op::band: case Op::bor: case Op::bxor: case Op::shl:
    case Op::shr: case Op::min: case Op::max: case Op::neg: case Op::bnot:
      return is_int(t);
    case Op::div: case Op::rem: {  // strength-reduced: `offs / N`, `offs % N`
      const ir::Operation* d = op.operands[1]->def;
      if (d && (d->op == Op::splat || d->op == Op::broadcast)) d = d->operands[0]->def;
      return is_int(t) && d && d->op == Op::constant;
    }
    default:
      return false;
  }
}

bool pure_elementwise(const ir::Operation& op) {
  return ir::has_trait(op.op, ir::kPure) && ir::has_trait(op.op, ir::kElementwise);
}

}  // namespace

void Lowerer::plan_fusion() {
  // Readers of each value: distinct ops (an op reading a value twice reads it at the
  // same element, which the per-element cache computes once).
  std::unordered_map<const ir::Value*, std::vector<const ir::Operation*>> readers;
  ir::walk(const_cast<ir::Block&>(f_.body), [&](ir::Operation& op) {
    std::unordered_set<const ir::Value*> seen;
    for (const ir::Value* v : op.operands)
      if (seen.insert(v).second) readers[v].push_back(&op);
  });
  enum Kind { buffer, cheap, fused };
  std::unordered_map<const ir::Value*, Kind> kind;
  auto kind_of = [&](const ir::Value* v) {
    auto it = kind.find(v);
    return it == kind.end() ? buffer : it->second;
  };
  ir::walk(const_cast<ir::Block&>(f_.body), [&](ir::Operation& op) {
    if (op.results.size() != 1 || op.result()->type.is_scalar()) return;
    const ir::Value* r = op.result();
    bool reads_fused = false;
    for (const ir::Value* v : op.operands) reads_fused |= kind_of(v) == fused;
    if (cheap_op(op) && !reads_fused) {
      kind[r] = cheap;
    } else if (pure_elementwise(op)) {
      auto& rs = readers[r];
      if (rs.size() == 1 && rs[0]->parent == op.parent && rs[0]->op != Op::broadcast) kind[r] = fused;
    }
  });
  for (auto& [v, k] : kind)
    if (k != buffer) remat_.insert(v);
}

bool Lowerer::is_rematerializable(const ir::Operation& op) const { return remat_.count(op.result()) != 0; }

}  // namespace tl::codegen::cpu

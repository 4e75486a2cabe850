// The one reading of a compiler copy's i32 offsets as the form a tile's offsets take
// (issue 39: one answer per question): uniform scalars (splats of a scalar LLVM keeps in
// SGPRs, ir::is_uniform_scalar), aranges, broadcasts and reshapes of these, sums,
// differences, products by a constant and products of uniform parts. plan_copies folds it
// into a bound (whether the copy goes through a buffer resource), the lowering into the
// values it emits (the resource's base, a lane's offset, soffset's constants); both walk
// the offsets through this one function, so the lowering cannot meet a case the plan did
// not accept, nor the plan accept one the lowering does not emit.
//
// Every node is rematerialized address math: the lowering re-emits it in the copy layout
// to split it. `A` is the fold's algebra:
//   A::Term                        what a node folds to;
//   A::Where                       what travels down (the lowering: the layout a node is
//                                  emitted in);
//   where(op, w)                   the Where of a broadcast's / reshape's / expand_dims'
//                                  operand, the op's own being w;
//   uniform(scalar, w)             a splat of a uniform scalar;
//   arange(v, w)                   an arange tile v (nullopt: not accepted, e.g. it may
//                                  be negative);
//   add(x, y), sub(x, y)           x + y, x - y (nullopt: not accepted);
//   scale(x, c)                    x * c, c a constant >= 0;
//   mul_uniform(x, y)              x * y where neither is a scale of a constant.
// Each returns std::optional<Term>; nullopt anywhere makes the whole fold nullopt.
#pragma once

#include <cstdint>
#include <optional>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {

template <class A>
std::optional<typename A::Term> fold_copy_offsets(const ir::Value* v, A& a, const typename A::Where& w,
                                                  int depth = 0) {
  const ir::Operation* d = v->def;
  if (depth > 32 || !d || !v->rematerialized || v->type.dtype != DType::i32) return std::nullopt;
  switch (d->op) {
    case Op::splat:
      if (!ir::is_uniform_scalar(d->operands[0])) return std::nullopt;
      return a.uniform(d->operands[0], w);
    case Op::arange: return a.arange(v, w);
    case Op::broadcast: case Op::reshape: case Op::expand_dims:
      return fold_copy_offsets(d->operands[0], a, a.where(*d, w), depth + 1);
    case Op::add: case Op::sub: {
      auto x = fold_copy_offsets(d->operands[0], a, w, depth + 1);
      if (!x) return std::nullopt;
      auto y = fold_copy_offsets(d->operands[1], a, w, depth + 1);
      if (!y) return std::nullopt;
      return d->op == Op::add ? a.add(*x, *y) : a.sub(*x, *y);
    }
    case Op::mul: {
      for (int side = 0; side < 2; ++side) {
        auto c = ir::splat_int_constant(d->operands[size_t(1 - side)]);
        if (!c || *c < 0) continue;
        auto x = fold_copy_offsets(d->operands[size_t(side)], a, w, depth + 1);
        if (!x) return std::nullopt;
        return a.scale(*x, *c);
      }
      auto x = fold_copy_offsets(d->operands[0], a, w, depth + 1);
      if (!x) return std::nullopt;
      auto y = fold_copy_offsets(d->operands[1], a, w, depth + 1);
      if (!y) return std::nullopt;
      return a.mul_uniform(*x, *y);
    }
    default: return std::nullopt;
  }
}

}  // namespace tl::gpu

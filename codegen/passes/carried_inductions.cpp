// Loop-carried inductions rewritten from the induction variable (LLVM's IndVarSimplify,
// and what Triton's AMD backend does to carried pointers before pipelining them).
//
// Triton's K loop carries its operand pointers and advances them each iteration:
//
//   a = A + offsets                       a_0 = A + offsets
//   for k in range(lb, ub, step):   ==>   for k in range(lb, ub, step):
//     x = load(a, ...)                      x = load(a_0 + j(k) * s, ...)
//     a += s                                (a no longer carried)
//
// A carried value `c` whose next value is `c + s` (addptr, or an integer add or
// subtract) with `s` the same every iteration is, at iteration j = (k - lb) / step,
// exactly c_0 + j*s (integers wrap as the repeated adds would; pointer offsets are
// multiplied in 64 bits, as the repeated 64-bit pointer adds accumulate). Reading it
// that way inside the body makes whatever depends on it (a load's pointers, its mask:
// `k_remaining -= BLOCK_K`) a function of the induction variable and loop-invariant
// values, which the pipeliner can compute for iterations ahead; the loop stops carrying
// the value when nothing after the loop reads it. A step computed in the body from
// loop-invariant values only (`BLOCK_K * stride_ak`) is hoisted before the loop.
//
// Only loops the pipeliner pipelines (loop_num_stages > 1): it is what needs it
// (codegen/pipeline.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

// The body ops `v` is computed from when it is the same every iteration: defined before
// the loop, or by side-effect-free ops directly in the body from such values only.
bool loop_invariant(ir::Value* v, ir::Operation& loop, std::set<ir::Operation*>& slice) {
  if (!ir::defined_inside(v, &loop)) return true;
  ir::Operation* d = v->def;
  if (!d || d->parent != loop.regions[0].get() || !ir::is_pure(*d) || !d->regions.empty()) return false;
  if (slice.count(d)) return true;
  for (ir::Value* o : d->operands)
    if (!loop_invariant(o, loop, slice)) return false;
  slice.insert(d);
  return true;
}

// One carried value of the form c' = c + s (or c - s).
struct Induction {
  int index = 0;            // among the carried values
  ir::Operation* update = nullptr;
  ir::Value* step = nullptr;
  bool subtract = false;
};

std::optional<Induction> induction_of(ir::Operation& loop, int i, std::set<ir::Operation*>& hoist) {
  ir::Block& body = *loop.regions[0];
  ir::Value* arg = body.args[size_t(i) + 1].get();
  ir::Value* next = body.terminator()->operands[size_t(i)];
  ir::Operation* u = next->def;
  if (!u || u->parent != &body || u->results.size() != 1) return std::nullopt;
  Induction ind{i, u, nullptr, false};
  const DType t = arg->type.dtype;
  // Through hints: `tl::multiple_of(a_ptrs, {16, 16}); ...; a_ptrs += BLOCK_K` (Triton's
  // tutorial 08, the in-place form) advances hint(c), which is c.
  auto unhinted = [&](ir::Value* v) {
    while (v->def && v->def->op == Op::hint && v->def->parent == &body) v = v->def->operands[0];
    return v;
  };
  if (u->op == Op::addptr && unhinted(u->operands[0]) == arg) {
    ind.step = u->operands[1];
  } else if (u->op == Op::add && is_int(t) && t != DType::i1) {
    if (u->operands[0] == arg) ind.step = u->operands[1];
    else if (u->operands[1] == arg) ind.step = u->operands[0];
  } else if (u->op == Op::sub && is_int(t) && t != DType::i1 && u->operands[0] == arg) {
    ind.step = u->operands[1], ind.subtract = true;
  }
  if (!ind.step || ind.step == arg) return std::nullopt;
  std::set<ir::Operation*> slice;
  if (!loop_invariant(ind.step, loop, slice)) return std::nullopt;
  hoist.insert(slice.begin(), slice.end());
  return ind;
}

// The scalar a splat (or broadcast of a splat) replicates, or null.
ir::Value* splatted_scalar(ir::Value* v) {
  while (v->def && (v->def->op == Op::splat || v->def->op == Op::broadcast) && !v->type.is_scalar())
    v = v->def->operands[0];
  return v->type.is_scalar() ? v : nullptr;
}

bool is_constant(const ir::Value* v, int64_t k) {
  return v->def && v->def->op == Op::constant && v->def->i0 == k && !is_float(v->type.dtype);
}

int rewrite_loop(ir::Operation& loop, ir::Block& scope) {
  ir::Block& body = *loop.regions[0];
  std::set<ir::Operation*> hoist;
  std::vector<Induction> inductions;
  for (int i = 0; i < int(loop.results.size()); ++i)
    if (auto ind = induction_of(loop, i, hoist)) inductions.push_back(*ind);
  if (inductions.empty()) return 0;

  const ir::SrcLoc loc = loop.loc;
  const ir::Type i32{DType::i32, DType::i32, {}};
  // The step's computation, moved before the loop (it reads nothing the loop defines).
  {
    ir::Builder pre(*loop.parent);
    pre.before(loop);
    std::vector<ir::Operation*> ordered;
    for (auto& op : body.ops)
      if (hoist.count(op.get())) ordered.push_back(op.get());
    for (ir::Operation* op : ordered) {
      auto it = std::find_if(body.ops.begin(), body.ops.end(), [&](auto& o) { return o.get() == op; });
      std::unique_ptr<ir::Operation> moved = std::move(*it);
      body.ops.erase(it);
      pre.insert(std::move(moved));
    }
  }
  // The iteration index j = (iv - lb) / step, at the top of the body (exact: iv - lb is
  // a multiple of step, of the step's sign). iv - lb may not fit an i32 (lb = INT_MIN,
  // iv > 0) but is right modulo 2^32: read as a u32 it is exact for a positive step, so
  // a positive constant step divides it unsigned.
  ir::Builder top(body);
  top.before(*body.ops.front());
  ir::Value *iv = body.args[0].get(), *lb = loop.operands[0], *lstep = loop.operands[2];
  ir::Value* j = iv;
  if (!is_constant(lb, 0)) j = top.create1(Op::sub, {j, lb}, i32, loc);
  if (!is_constant(lstep, 1)) {
    bool positive = lstep->def && lstep->def->op == Op::constant && lstep->def->i0 > 0;
    if (positive && !is_constant(lb, 0)) {
      const ir::Type u32{DType::u32, DType::u32, {}};
      ir::Value* q = top.create1(Op::div, {top.create1(Op::cast, {j}, u32, loc), top.create1(Op::cast, {lstep}, u32, loc)},
                                 u32, loc);
      j = top.create1(Op::cast, {q}, i32, loc);
    } else {
      j = top.create1(Op::div, {j, lstep}, i32, loc);
    }
  }

  int rewritten = 0;
  for (const Induction& ind : inductions) {
    ir::Value* arg = body.args[size_t(ind.index) + 1].get();
    ir::Value* init = loop.operands[3 + size_t(ind.index)];
    const ir::Type& t = arg->type;
    // j * s, in the step's type (64 bits for a pointer's offsets), a scalar product
    // splat to the tile where the step is a splat.
    ir::Value* s = ind.step;
    const bool pointer = t.is_ptr();
    const DType off = pointer ? DType::i64 : t.dtype;
    ir::Value* scalar = splatted_scalar(s);
    ir::Value* offset;
    auto widen = [&](ir::Builder& b, ir::Value* v, const ir::Type& to) {
      return v->type.dtype == to.dtype ? v : b.create1(Op::cast, {v}, to, loc);
    };
    if (scalar) {
      ir::Builder pre(*loop.parent);
      pre.before(loop);
      ir::Value* x = widen(pre, scalar, ir::Type{off, off, {}});
      ir::Value* js = top.create1(Op::mul, {widen(top, j, ir::Type{off, off, {}}), x}, ir::Type{off, off, {}}, loc);
      offset = t.is_scalar() ? js : top.create1(Op::splat, {js}, ir::Type{off, off, t.shape}, loc);
    } else {
      ir::Builder pre(*loop.parent);
      pre.before(loop);
      const ir::Type tile{off, off, t.shape};
      ir::Value* x = widen(pre, s, tile);
      ir::Value* jt = top.create1(Op::splat, {widen(top, j, ir::Type{off, off, {}})}, tile, loc);
      offset = top.create1(Op::mul, {jt, x}, tile, loc);
    }
    ir::Value* now = top.create1(pointer ? Op::addptr : (ind.subtract ? Op::sub : Op::add), {init, offset}, t, loc);
    // Every read of the carried value but its own update now reads `now`.
    for (auto [user, k] : ir::uses_of(body, arg))
      if (user != ind.update && user != body.terminator()) user->operands[size_t(k)] = now;
    ++rewritten;
  }
  // Carried values that nothing reads any more (the update alone, the result unused
  // after the loop) stop being carried, last first so that the indices stay valid.
  for (auto it = inductions.rbegin(); it != inductions.rend(); ++it) {
    ir::Value* arg = body.args[size_t(it->index) + 1].get();
    ir::Value* next = it->update->result();
    auto arg_uses = ir::uses_of(body, arg), next_uses = ir::uses_of(body, next);
    // (no use left: the update read the carried value through a hint, which now reads `now`)
    if (!ir::uses_of(scope, loop.result(it->index)).empty() || arg_uses.size() > 1 || next_uses.size() != 1) continue;
    body.terminator()->operands[size_t(it->index)] = arg;
    auto u = std::find_if(body.ops.begin(), body.ops.end(), [&](auto& o) { return o.get() == it->update; });
    body.ops.erase(u);
    ir::remove_carried_value(scope, loop, it->index);
  }
  return rewritten;
}

int walk_loops(ir::Block& b, ir::Block& scope, int default_stages) {
  int n = 0;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    ir::Operation* op = b.ops[i].get();
    for (auto& r : op->regions) n += walk_loops(*r, scope, default_stages);
    if (op->op != Op::for_) continue;
    const int stages = loop_num_stages(*op, default_stages);
    if (stages > 1) n += rewrite_loop(*op, scope);
    while (b.ops[i].get() != op) ++i;  // past what was hoisted before it
  }
  return n;
}

}  // namespace

int rewrite_carried_inductions(ir::Function& f, int default_num_stages) {
  return walk_loops(f.body, f.body, default_num_stages);
}

}  // namespace tl::passes

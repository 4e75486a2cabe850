// Building and rewriting tile IR after tracing: what passes such as the software
// pipeliner need to make new ops, copy loop bodies and change what a loop carries.
// The tracer records through its own front end (dsl/src/trace.cpp); everything that
// rewrites the IR later goes through here, so the invariants verify() checks (parents,
// result and argument indices, one yield per region) are kept in one place.
#pragma once

#include <functional>
#include <optional>

#include <memory>
#include <unordered_map>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace tl::ir {

// Inserts new ops into a block at a position that stays put as ops are added: every
// create() goes before the op that was at the insertion point (or at the block's end).
class Builder {
 public:
  explicit Builder(Block& b) { at_end(b); }

  void at_end(Block& b) { block_ = &b; index_ = b.ops.size(); }
  void before(Operation& op);
  void after(Operation& op);
  Block& block() const { return *block_; }

  // Creates an op with these operands and result types at the insertion point; `loc`
  // is the user's line it stands for (a pass keeps the line of the op it rewrites).
  Operation& create(Op op, std::vector<Value*> operands, std::vector<Type> results, SrcLoc loc);
  Value* create1(Op op, std::vector<Value*> operands, Type result, SrcLoc loc);
  Value* constant(DType t, int64_t value, SrcLoc loc);
  Value* constant_f(DType t, double value, SrcLoc loc);
  // A `for` over [lb, ub) by step carrying `inits`: its body has the induction variable
  // and one argument per init, and no ops (the caller fills it and ends it with yield).
  Operation& create_for(Value* lb, Value* ub, Value* step, const std::vector<Value*>& inits, SrcLoc loc);

  // Moves an existing op (owned elsewhere) in at the insertion point.
  Operation& insert(std::unique_ptr<Operation> op);

 private:
  Block* block_ = nullptr;
  size_t index_ = 0;
};

// Old value -> new value, for clones. Values not in the map stand for themselves
// (defined outside what is cloned, so visible to the copy too).
class ValueMap {
 public:
  void map(const Value* from, Value* to) { m_[from] = to; }
  Value* lookup(Value* v) const {
    auto it = m_.find(v);
    return it == m_.end() ? v : it->second;
  }
  bool contains(const Value* v) const { return m_.count(v) != 0; }

 private:
  std::unordered_map<const Value*, Value*> m_;
};

// A deep copy of `op` (regions included) whose operands are read through `map`; its
// results and region arguments are added to `map`. The copy has no parent yet.
std::unique_ptr<Operation> clone(const Operation& op, ValueMap& map);
// Copies the ops of `src` (its terminator too, unless `skip_terminator`) to the builder's
// insertion point, operands through `map`. `src`'s arguments must already be mapped by
// the caller when the copy should read something else.
void clone_ops(const Block& src, Builder& at, ValueMap& map, bool skip_terminator = false);

// A deep copy of a whole function (what the GPU middle end plans on, so that the traced
// function can be compiled again for another target). `map`, where not null, gets every
// old value's copy.
std::unique_ptr<Function> clone_function(const Function& f, ValueMap* map = nullptr);

// Every op that uses `v`, with the operand index, inside `scope` (recursively).
std::vector<std::pair<Operation*, int>> uses_of(Block& scope, const Value* v);
// Whether `v` is computed in `body` (through ops of `body` itself) from the result of an op
// `from` accepts: the attention backward's P^T from a dot the iteration waits for.
bool computed_in_block_from(const Block& body, const Value* v, const std::function<bool(const Operation&)>& from);
// Whether `b` is a region of `op` or nested inside one; whether `v` is defined there
// (an op's result or a block argument), i.e. not visible before `op`.
bool is_inside(const Block* b, const Operation* op);
bool defined_inside(const Value* v, const Operation* op);
// A constant zero (+0.0 for floats), splat or broadcast to a tile or not: what a load's
// `other`, a copy's fill or a dot's accumulator is when it adds nothing.
bool is_zero_constant(const Value* v);
// A tl::dot_scaled: a dot of five operands (a, b, acc, a_scale, b_scale; docs/ir.md).
inline bool is_scaled_dot(const Operation& op) { return op.op == Op::dot && op.operands.size() == 5; }
// Whether a global_load_to_shared writes zeros for its masked-off elements (no `other`,
// or a zero one): what a copy can write without a branch (a buffer load past its bound,
// AMD's zero copy).
bool copy_fills_zeros(const Operation& copy);
// The value of `v` when it is a splat of an integer constant (a tile's constant stride).
std::optional<int64_t> splat_int_constant(const Value* v);

// `for` loops: operands (lb, ub, step, inits...), body arguments (iv, carried...),
// yield operands (carried...) and results (carried...) always line up.
// Adds a carried value starting at `init`; its body argument is returned, and the
// yield gets `yielded` (which must be visible at the end of the body; pass nullptr to
// yield the body argument itself, i.e. carry the value unchanged). The new result is
// for_op.results.back().
Value* add_carried_value(Operation& for_op, Value* init, Value* yielded = nullptr);
// Removes carried value i (0-based among the carried values). Neither the loop's result
// nor the body argument may have uses left in `scope` other than the yield's own operand
// i; a compile_error names the loop's line otherwise.
void remove_carried_value(Block& scope, Operation& for_op, int i);

}  // namespace tl::ir

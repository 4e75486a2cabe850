// See builder.hpp.
#include "codegen/ir/builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "tl/error.hpp"

namespace tl::ir {
namespace {

size_t position_of(const Operation& op) {
  const Block& b = *op.parent;
  auto it = std::find_if(b.ops.begin(), b.ops.end(), [&](auto& p) { return p.get() == &op; });
  if (it == b.ops.end()) throw compile_error("ir builder: an op is not in the block it names as its parent");
  return size_t(it - b.ops.begin());
}

[[noreturn]] void fail(const Operation& op, const std::string& what) {
  throw compile_error(fmt::format("ir builder: {}: {}", op_name(op.op), what), op.loc.file, op.loc.line);
}

void require_for(const Operation& op) {
  if (op.op != Op::for_ || op.regions.size() != 1 || !op.regions[0]->terminator())
    fail(op, "expected a complete for loop (a body ending in yield)");
}

}  // namespace

void Builder::before(Operation& op) {
  block_ = op.parent;
  index_ = position_of(op);
}

void Builder::after(Operation& op) {
  block_ = op.parent;
  index_ = position_of(op) + 1;
}

Operation& Builder::insert(std::unique_ptr<Operation> op) {
  op->parent = block_;
  index_ = std::min(index_, block_->ops.size());
  auto it = block_->ops.insert(block_->ops.begin() + std::ptrdiff_t(index_), std::move(op));
  ++index_;
  return **it;
}

Operation& Builder::create(Op op, std::vector<Value*> operands, std::vector<Type> results, SrcLoc loc) {
  auto o = std::make_unique<Operation>();
  o->op = op;
  o->operands = std::move(operands);
  o->loc = loc;
  for (auto& t : results) o->add_result(std::move(t));
  return insert(std::move(o));
}

Value* Builder::create1(Op op, std::vector<Value*> operands, Type result, SrcLoc loc) {
  return create(op, std::move(operands), {std::move(result)}, loc).result();
}

Value* Builder::constant(DType t, int64_t value, SrcLoc loc) {
  Operation& o = create(Op::constant, {}, {Type{t, t, {}}}, loc);
  o.i0 = value;
  return o.result();
}

Value* Builder::constant_f(DType t, double value, SrcLoc loc) {
  Operation& o = create(Op::constant, {}, {Type{t, t, {}}}, loc);
  o.f = value;
  return o.result();
}

Operation& Builder::create_for(Value* lb, Value* ub, Value* step, const std::vector<Value*>& inits, SrcLoc loc) {
  std::vector<Value*> operands{lb, ub, step};
  std::vector<Type> results;
  for (Value* v : inits) {
    operands.push_back(v);
    results.push_back(v->type);
  }
  Operation& loop = create(Op::for_, std::move(operands), std::move(results), loc);
  loop.i0 = 1;
  Block* body = loop.add_region();
  body->add_arg(lb->type);
  for (Value* v : inits) body->add_arg(v->type);
  return loop;
}

std::unique_ptr<Operation> clone(const Operation& op, ValueMap& map) {
  auto c = std::make_unique<Operation>();
  c->op = op.op;
  c->loc = op.loc;
  c->i0 = op.i0;
  c->i1 = op.i1;
  c->f = op.f;
  c->ints = op.ints;
  c->str = op.str;
  c->layout = op.layout;
  c->shared = op.shared;
  c->copy = op.copy;
  c->smem = op.smem;
  // (GPU planning's marks travel with the values they describe.)
  auto copy_plan = [](const Value* from, Value* to) {
    to->layout = from->layout;
    to->rematerialized = from->rematerialized;
    return to;
  };
  for (Value* v : op.operands) c->operands.push_back(map.lookup(v));
  for (auto& r : op.results) map.map(r.get(), copy_plan(r.get(), c->add_result(r->type)));
  for (auto& region : op.regions) {
    Block* nb = c->add_region();
    for (auto& a : region->args) map.map(a.get(), copy_plan(a.get(), nb->add_arg(a->type)));
    Builder inner(*nb);
    clone_ops(*region, inner, map);
  }
  return c;
}

void clone_ops(const Block& src, Builder& at, ValueMap& map, bool skip_terminator) {
  for (auto& op : src.ops) {
    if (skip_terminator && op.get() == src.terminator()) continue;
    at.insert(clone(*op, map));
  }
}

std::vector<std::pair<Operation*, int>> uses_of(Block& scope, const Value* v) {
  std::vector<std::pair<Operation*, int>> out;
  walk(scope, [&](Operation& op) {
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.operands[i] == v) out.emplace_back(&op, int(i));
  });
  return out;
}

bool computed_in_block_from(const Block& body, const Value* v, const std::function<bool(const Operation&)>& from) {
  std::vector<const Value*> work{v};
  std::unordered_set<const Operation*> seen;
  while (!work.empty()) {
    const Operation* d = work.back()->def;
    work.pop_back();
    if (!d || d->parent != &body || !seen.insert(d).second) continue;
    if (from(*d)) return true;
    for (const Value* o : d->operands) work.push_back(o);
  }
  return false;
}

bool is_inside(const Block* b, const Operation* op) {
  for (; b && b->parent; b = b->parent->parent)
    if (b->parent == op) return true;
  return false;
}

bool defined_inside(const Value* v, const Operation* op) { return is_inside(v->def ? v->def->parent : v->owner, op); }

bool is_zero_constant(const Value* v) {
  while (v->def && (v->def->op == Op::splat || v->def->op == Op::broadcast)) v = v->def->operands[0];
  if (!v->def || v->def->op != Op::constant) return false;
  return v->def->i0 == 0 && v->def->f == 0.0 && !std::signbit(v->def->f);
}

bool copy_fills_zeros(const Operation& copy) {
  return copy.operands.size() < 5 || is_zero_constant(copy.operands[4]);
}

std::optional<int64_t> splat_int_constant(const Value* v) {
  const Operation* d = v->def;
  if (!d || d->op != Op::splat || !d->operands[0]->def || d->operands[0]->def->op != Op::constant ||
      !is_int(d->operands[0]->type.dtype))
    return std::nullopt;
  return d->operands[0]->def->i0;
}

Value* add_carried_value(Operation& for_op, Value* init, Value* yielded) {
  require_for(for_op);
  Block& body = *for_op.regions[0];
  Value* arg = body.add_arg(init->type);
  for_op.operands.push_back(init);
  body.terminator()->operands.push_back(yielded ? yielded : arg);
  for_op.add_result(init->type);
  return arg;
}

void remove_carried_value(Block& scope, Operation& for_op, int i) {
  require_for(for_op);
  Block& body = *for_op.regions[0];
  Operation* yield = body.terminator();
  if (i < 0 || size_t(i) >= for_op.results.size()) fail(for_op, fmt::format("no carried value {}", i));
  Value* result = for_op.result(i);
  Value* arg = body.args[size_t(i) + 1].get();
  if (!uses_of(scope, result).empty()) fail(for_op, fmt::format("carried value {} is still used after the loop", i));
  for (auto& [user, operand] : uses_of(body, arg))
    if (user != yield || operand != i) fail(for_op, fmt::format("carried value {} is still read in the loop body", i));
  for_op.operands.erase(for_op.operands.begin() + 3 + i);
  yield->operands.erase(yield->operands.begin() + i);
  body.args.erase(body.args.begin() + 1 + i);
  for_op.results.erase(for_op.results.begin() + i);
  for (size_t k = 0; k < body.args.size(); ++k) body.args[k]->index = int(k);
  for (size_t k = 0; k < for_op.results.size(); ++k) for_op.results[k]->index = int(k);
}

std::unique_ptr<Function> clone_function(const Function& f, ValueMap* map) {
  auto out = std::make_unique<Function>();
  out->name = f.name;
  out->loc = f.loc;
  out->arg_info = f.arg_info;
  out->num_warps = f.num_warps;
  ValueMap own;
  ValueMap& m = map ? *map : own;
  for (auto& a : f.body.args) m.map(a.get(), out->body.add_arg(a->type));
  Builder at(out->body);
  clone_ops(f.body, at, m);
  return out;
}

}  // namespace tl::ir

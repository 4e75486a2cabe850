// Register estimates over the planned tile IR (register_pressure.hpp).
#include "codegen/gpu/register_pressure.hpp"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {

int64_t registers_of(const ir::Value* v) {
  if (!v->layout || v->rematerialized) return 0;
  const Layout& l = *v->layout;
  int64_t elements = l.num_regs() >> __builtin_popcount(l.duplicate_reg_mask());
  return (elements * std::max(1, bit_width(v->type.dtype)) + 31) / 32;
}

int64_t carried_registers(ir::Operation& loop) {
  ir::Block& body = *loop.regions[0];
  int64_t n = 0;
  for (auto& a : body.args) n += registers_of(a.get());
  std::unordered_set<const ir::Value*> inside, live_in;
  ir::walk(body, [&](ir::Operation& op) {
    for (auto& r : op.results) inside.insert(r.get());
    for (auto& r : op.regions)
      for (auto& a : r->args) inside.insert(a.get());
  });
  ir::walk(body, [&](ir::Operation& op) {
    for (const ir::Value* v : op.operands)
      if (!inside.count(v) && v->owner != &body && live_in.insert(v).second) n += registers_of(v);
  });
  return n;
}

namespace {

// Whether a dot reads `v` from shared memory itself, a K step at a time: no registers hold
// it whole.
bool read_by_dot(const ir::Value* v) {
  while (v->def && (v->def->op == Op::trans || v->def->op == Op::reshape || v->def->op == Op::bitcast ||
                    v->def->op == Op::cast))
    v = v->def->operands[0];
  const ir::Operation* d = v->def;
  if (!d) return false;
  if (d->op == Op::shared_load) return d->i1 == ir::kReadByDot;
  return d->op == Op::convert_layout && (d->i1 & ir::kConversionReadByDot);
}

// Whether `op` only renames its operand's registers (or, a splat, holds one scalar): its
// result costs nothing beyond the operand, which lives as long as the result is read (a
// row statistic broadcast along the scores' columns is the column's registers).
bool renames(const ir::Operation& op) {
  switch (op.op) {
    case Op::broadcast: case Op::expand_dims: case Op::reshape: case Op::trans: case Op::splat: return true;
    case Op::bitcast: return bit_width(op.result()->type.dtype) == bit_width(op.operands[0]->type.dtype);
    default: return false;
  }
}

// The value whose registers `v` renames (itself where it renames none).
const ir::Value* renamed(const ir::Value* v) {
  while (v->def && renames(*v->def)) v = v->def->operands[0];
  return v;
}

}  // namespace

int64_t descriptor_registers(ir::Operation& loop, const PlanTarget& t) {
  int64_t n = 0;
  for (auto& o : loop.regions[0]->ops) {
    if (o->op != Op::dot) continue;
    const DotPlan p = recorded_dot_plan(*t.caps, *o, t.num_warps, t.wave_size);
    if (!p.warpgroup()) continue;
    for (int i = 0; i < 2; ++i) {
      auto m = match_descriptor_operand(o->operands[size_t(i)], i);
      if (!m || ir::defined_inside(m->alloc->result(), &loop) ||
          (m->read->operands.size() > 1 && ir::defined_inside(m->read->operands[1], &loop)))
        continue;
      const int groups = i == 0 ? p.warps_m / 4 : p.warps_n;
      if (groups > 1) n += 2 * int64_t(p.k_steps) * (i == 0 ? p.reps_m : p.reps_n);
    }
  }
  return n;
}

int64_t peak_live_registers(ir::Operation& loop, const PlanTarget& t, const std::vector<HeldUntil>& held) {
  ir::Block& body = *loop.regions[0];
  const int n = int(body.ops.size());
  // Each op of the body (nested ones too) -> the position of its top-level op.
  std::unordered_map<const ir::Operation*, int> at;
  for (int i = 0; i < n; ++i) {
    at[body.ops[size_t(i)].get()] = i;
    for (auto& r : body.ops[size_t(i)]->regions) ir::walk(*r, [&](ir::Operation& o) { at[&o] = i; });
  }
  // Live after op i, for each i: `after[i]`; registers live throughout: `always`.
  std::vector<int64_t> after(size_t(std::max(n, 1)), 0);
  int64_t always = descriptor_registers(loop, t);
  auto add = [&](int from, int to, int64_t regs) {  // live after ops from..to-1
    for (int i = std::max(from, 0); i < std::min(to, n); ++i) after[size_t(i)] += regs;
  };
  // The last position each value of the body is used at (uses in nested regions at their
  // top-level op).
  std::unordered_map<const ir::Value*, int> last;
  for (int i = 0; i < n; ++i) {
    auto note = [&](const ir::Operation& o) {
      for (const ir::Value* v : o.operands) {
        v = renamed(v);
        last[v] = std::max(last.count(v) ? last[v] : -1, i);
      }
    };
    note(*body.ops[size_t(i)]);
    for (auto& r : body.ops[size_t(i)]->regions) ir::walk(*r, note);
  }
  // The tiles read from before the loop: throughout. The carried ones: from the body's
  // start to their last use (the yielded value takes their registers from its op on).
  std::unordered_set<const ir::Value*> counted;
  auto outer = [&](const ir::Operation& o) {
    for (const ir::Value* v : o.operands)
      if (!ir::defined_inside(v, &loop) && counted.insert(renamed(v)).second) always += registers_of(renamed(v));
  };
  ir::walk(body, outer);
  for (auto& a : body.args)
    if (auto u = last.find(a.get()); u != last.end()) add(0, u->second, registers_of(a.get()));
  std::unordered_map<const ir::Value*, const ir::Operation*> until;
  for (const HeldUntil& h : held) until[renamed(h.value)] = h.until;
  for (int i = 0; i < n; ++i)
    for (auto& r : body.ops[size_t(i)]->results) {
      const ir::Value* v = r.get();
      auto u = last.find(v);
      if (u == last.end() || read_by_dot(v) || renames(*body.ops[size_t(i)]) || v->type.dtype == DType::ptr) continue;
      const int64_t regs = registers_of(v);
      int end = u->second;
      if (auto h = until.find(v); h != until.end() && at.count(h->second)) {
        const int w = at[h->second];
        if (w >= i) {
          end = std::max(end, w + 1);
        } else {  // across the back edge
          end = n;
          add(0, w + 1, regs);
        }
      }
      add(i, end, regs);
    }
  return always + *std::max_element(after.begin(), after.end());
}

}  // namespace tl::gpu

// Triton's ConvertToBufferOps (AMD): the register loads of a loop's dot operands become
// buffer loads, in the form tl::amd::buffer_load traces (`addptr(splat(base), offsets)`,
// i0 = kBufferAccess), so that TL_DUMP_IR shows the choice and the lowering only emits it.
//
// Why these loads: a buffer load masks a lane by moving its offset past the resource's
// end (no branch, no `other` registers written before the load), its base stays in SGPRs
// and one offset VGPR serves every register of a thread; in a pipelined K loop that is
// the loads of the next iteration issued without the exec-mask branches that make LLVM
// wait for every load in flight before them (tutorial 03 on gfx942: `s_waitcnt vmcnt(0)`
// ahead of its loads). Why only these: the same rule on every load cost RMSNorm's
// wide-row forwards registers (codegen/gpu/README.md, "Buffer accesses").
//
// When it is correct: the byte offset of every lane the mask keeps must fit the buffer's
// 31 bits. Like Triton, tl knows that from the launch: a pointer argument passed as a
// tl::buffer of less than 2 GiB (ir::ArgInfo::pointer_range_32, Triton's
// `tt.pointer_range = 32`) is accessed only less than 2 GiB past it. So the base must be
// such an argument moved by uniform scalars that axis analysis proves non-negative, and
// every tile offset a non-negative i32 (tl::assume of the strides proves tutorial 03's):
// then a kept lane's offset from the base is at most its offset from the argument. A
// raw pointer's range is unknown and its loads stay global.
#include <unordered_map>
#include <unordered_set>

#include "codegen/gpu/passes.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {
namespace {

using Users = std::unordered_map<const ir::Value*, std::vector<std::pair<ir::Operation*, int>>>;

void collect_users(ir::Block& b, Users& users) {
  for (auto& op : b.ops) {
    for (size_t i = 0; i < op->operands.size(); ++i) users[op->operands[i]].push_back({op.get(), int(i)});
    for (auto& r : op->regions) collect_users(*r, users);
  }
}

class BufferOpConverter {
 public:
  BufferOpConverter(ir::Function& f, const passes::AxisAnalysis& axis, bool copies_to_shared)
      : f_(f), axis_(axis), copies_to_shared_(copies_to_shared) {
    collect_users(f.body, users_);
  }

  int run() {
    std::vector<ir::Operation*> loads;
    find_loads(f_.body, /*in_loop=*/false, loads);
    int converted = 0;
    for (ir::Operation* load : loads) converted += convert(*load);
    return converted;
  }

 private:
  void find_loads(ir::Block& b, bool in_loop, std::vector<ir::Operation*>& out) {
    for (auto& op : b.ops) {
      if (op->op == Op::load && op->i0 == 0 && in_loop && !op->operands[0]->type.is_scalar() &&
          reaches_dot_operand(op->result()))
        out.push_back(op.get());
      // The pipeliner's copies staging dot operands (its prologue's too), where the
      // target has buffer loads into LDS (gfx950), as Triton's pass converts its
      // pipeliner's async copies. Only with no `other` or a zero one: an out-of-range
      // buffer load writes zeros.
      if (op->op == Op::global_load_to_shared && op->i1 == ir::kCompilerCopy && copies_to_shared_ &&
          (op->operands.size() < 5 || ir::is_zero_constant(op->operands[4])))
        out.push_back(op.get());
      for (auto& r : op->regions) find_loads(*r, in_loop || op->op == Op::for_ || op->op == Op::while_, out);
    }
  }

  // Whether v is read as a dot's A or B, through casts, transposes, layout conversions
  // and the loop-carried values of a pipelined loop (the registers of the iterations in
  // flight: a load's value yielded, then read from the body's argument next iteration).
  bool reaches_dot_operand(const ir::Value* v) {
    std::vector<const ir::Value*> work{v};
    std::unordered_set<const ir::Value*> seen{v};
    auto push = [&](const ir::Value* x) {
      if (seen.insert(x).second) work.push_back(x);
    };
    while (!work.empty()) {
      const ir::Value* x = work.back();
      work.pop_back();
      for (auto [user, index] : users_[x]) {
        switch (user->op) {
          case Op::dot:
            if (index < 2) return true;
            break;
          case Op::cast: case Op::trans: case Op::convert_layout: case Op::hint: push(user->result()); break;
          case Op::yield: {
            // a for's yield operand i is its body's argument i + 1 (after the induction
            // variable) in the next iteration
            const ir::Block* body = user->parent;
            if (body->parent && body->parent->op == Op::for_ && size_t(index) + 1 < body->args.size())
              push(body->args[index + 1].get());
            break;
          }
          default: break;
        }
      }
    }
    return false;
  }

  // A uniform scalar pointer into an argument of small range, moved only forward: the
  // argument itself, or addptr of such a pointer and a non-negative uniform scalar.
  bool small_range_base(const ir::Value* p, int depth = 0) const {
    if (depth > 16 || !p->type.is_scalar() || !p->type.is_ptr()) return false;
    if (!p->def) {
      if (p->owner != &f_.body) return false;
      size_t i = size_t(p->index);
      return i < f_.arg_info.size() && f_.arg_info[i].pointer_range_32;
    }
    if (p->def->op != Op::addptr) return false;
    const ir::Value* step = p->def->operands[1];
    return ir::is_uniform_scalar(step) && axis_.get(step).range.lo >= 0 && small_range_base(p->def->operands[0], depth + 1);
  }

  int convert(ir::Operation& load) {
    const bool copy = load.op == Op::global_load_to_shared;
    ir::Value*& pointer = load.operands[copy ? 2 : 0];
    // ptr = addptr(...addptr(splat(base), o1)..., on): each o an i32 tile of non-negative
    // offsets, or a splat of a uniform non-negative scalar, which moves the base instead.
    std::vector<ir::Value*> tile_offsets, scalar_steps;
    ir::Value* p = pointer;
    while (p->def && p->def->op == Op::addptr) {
      ir::Value* o = p->def->operands[1];
      const ir::Operation* od = o->def;
      if (od && od->op == Op::splat && ir::is_uniform_scalar(od->operands[0]) &&
          axis_.get(od->operands[0]).range.lo >= 0 && is_int(od->operands[0]->type.dtype))
        scalar_steps.push_back(od->operands[0]);
      else if (!o->type.is_scalar() && o->type.dtype == DType::i32 && axis_.fits_nonnegative_i32(o))
        tile_offsets.push_back(o);
      else
        return 0;
      p = p->def->operands[0];
    }
    if (tile_offsets.empty() || !p->def || p->def->op != Op::splat) return 0;
    ir::Value* base = p->def->operands[0];
    if (!ir::is_uniform_scalar(base) || !small_range_base(base)) return 0;

    ir::Builder at(*load.parent);
    at.before(load);
    const ir::SrcLoc loc = load.loc;
    for (auto it = scalar_steps.rbegin(); it != scalar_steps.rend(); ++it)
      base = at.create1(Op::addptr, {base, *it}, base->type, loc);
    ir::Value* offsets = tile_offsets.back();
    for (auto it = tile_offsets.rbegin() + 1; it != tile_offsets.rend(); ++it) {
      ir::Operation& add = at.create(Op::add, {offsets, *it}, {offsets->type}, loc);
      add.i1 = ir::kIndexArithmetic;  // (each term and, for a kept lane, the sum fit: see above)
      offsets = add.result();
    }
    ir::Value* splat = at.create1(Op::splat, {base}, pointer->type, loc);
    pointer = at.create1(Op::addptr, {splat, offsets}, pointer->type, loc);
    (copy ? load.i1 : load.i0) = ir::kBufferAccess;
    return 1;
  }

  ir::Function& f_;
  const passes::AxisAnalysis& axis_;
  const bool copies_to_shared_;
  Users users_;
};

}  // namespace

int convert_to_buffer_ops(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t) {
  if (!t.caps->has_buffer_ops()) return 0;
  return BufferOpConverter(f, axis, t.caps->buffer_load_to_shared).run();
}

}  // namespace tl::gpu

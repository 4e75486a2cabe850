// insert_layout_conversions (passes.hpp): every change of layout becomes an explicit
// convert_layout op (Triton's ttg.convert_layout), inserted where the value is read in
// the other layout: before the op, before a loop for its initial values, before a yield
// for what a loop or branch carries on. assign_layouts has already kept conversions off
// the common paths (loads made in the layout their users want, rematerialized index
// math, accumulators carried in the layout their update makes, chained dots sharing
// P's layout); what is left shows in the IR and the compile report.
#include <map>
#include <tuple>
#include <optional>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {
namespace {

// A value with a layout of its own (not a scalar, a shared buffer or rematerialized math).
bool eager(const ir::Value* v) { return v->layout && !v->rematerialized; }

bool elementwise_tile_op(Op op) {
  return ir::has_trait(op, ir::kElementwise) && op != Op::load && op != Op::store && op != Op::atomic_rmw &&
         op != Op::atomic_cas;
}

}  // namespace

std::optional<Layout> operand_layout(const ir::Operation& op, int index, const PlanTarget& t) {
  const ir::Value* v = op.operands[size_t(index)];
  if (!eager(v)) return std::nullopt;
  // A rematerialized op has no operand with a layout of its own; a tile op whose result
  // is a scalar (a one-element tile read back) reads any copy of it.
  if (op.results.size() == 1 && (op.result()->rematerialized || op.result()->type.is_scalar())) return std::nullopt;
  switch (op.op) {
    case Op::load: return op.result()->layout;
    case Op::store: case Op::atomic_rmw: case Op::atomic_cas: return op.layout;
    case Op::broadcast: return broadcast_source_layout(*op.result()->layout, v->type.shape);
    // join, split and cat rename registers in the layouts assign_layouts made for them;
    // flip works in its result's (layout.hpp).
    case Op::join: return join_source_layout(*op.result()->layout);
    case Op::cat: return cat_source_layout(*op.result()->layout);
    case Op::split: return split_source_layout(*v->layout, *op.result()->layout);
    case Op::flip: return op.result()->layout;
    // A combine's operands (tl::reduce / tl::associative_scan of a tuple) are read
    // together, element by element: all in the first one's layout.
    case Op::reduce: case Op::scan: return index > 0 ? op.operands[0]->layout : std::nullopt;
    // A copy's pointers, mask and other: its copy layout, once plan_copies chose it (which
    // converts them itself: it runs after this pass); a buffer copy's pointers only carry
    // its base and offsets.
    case Op::global_load_to_shared:
      if (!op.copy || index < 2 || op.copy->chunk_bytes == 0) return std::nullopt;  // (0: loaded and stored)
      if (index == 2 && (op.i1 == ir::kBufferAccess || op.copy->through_resource)) return std::nullopt;
      return op.layout;
    case Op::gather: return index == 1 ? op.result()->layout : std::nullopt;  // src: any (through shared memory)
    // sort's keys and indices in its result's layout (a top-k's: the layout it works in,
    // recorded on the op); histogram's mask in its values'.
    case Op::sort: return op.layout ? op.layout : op.result()->layout;
    case Op::histogram: return index == 1 ? op.operands[0]->layout : std::nullopt;
    case Op::dot: {
      DotPlan p = recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size);
      // tl::dot_scaled's scales (operands 3, 4): a lane holds the byte each instruction reads.
      return index == 0 ? p.a : index == 1 ? p.b : index == 2 ? p.acc : index == 3 ? p.a_scale : p.b_scale;
    }
    case Op::for_:  // operands 0-2 are the bounds; then the carried values' initial values
      return index >= 3 ? op.regions[0]->args[size_t(index - 3 + 1)]->layout : std::nullopt;
    case Op::while_:
      return op.regions[0]->args[size_t(index)]->layout;
    case Op::yield: {
      const ir::Operation* owner = op.parent ? op.parent->parent : nullptr;
      if (!owner) return std::nullopt;
      if (owner->op == Op::for_) return owner->regions[0]->args[size_t(index + 1)]->layout;
      // A while's condition region yields (condition, values...), its body the values;
      // both go to the carried values' layout, that of the regions' arguments.
      if (owner->op == Op::while_) {
        const bool condition_region = op.parent == owner->regions[0].get();
        if (condition_region && index == 0) return std::nullopt;
        return owner->regions[0]->args[size_t(condition_region ? index - 1 : index)]->layout;
      }
      return owner->result(index)->layout;
    }
    // reshape and trans rename their operand's registers (assign_layouts gives their
    // results the renamed layout); reductions, scans, shared stores and asserts work in
    // their operand's own layout; a conversion is the change itself.
    default:
      break;
  }
  if (elementwise_tile_op(op.op) && op.results.size() == 1 && op.result()->layout) return op.result()->layout;
  return std::nullopt;
}

int insert_layout_conversions(ir::Function& f, const PlanTarget& t) {
  // First every read that needs a conversion, then the rewrites (which move ops).
  struct Need {
    ir::Operation* op;
    size_t operand;
    Layout want;
  };
  std::vector<Need> needs;
  ir::walk(f.body, [&](ir::Operation& op) {
    for (size_t k = 0; k < op.operands.size(); ++k) {
      auto want = operand_layout(op, int(k), t);
      if (want && !(*want == *op.operands[k]->layout)) needs.push_back({&op, k, *want});
    }
  });
  // A conversion goes into the block that defines its value, before the op there that
  // holds the read: a loop-invariant value (attention's Q block) converts once before
  // the loop, not every iteration, as Triton hoists conversions out of loops. Only where
  // the new layout holds no more distinct elements a thread than the old: the converted
  // tile then lives across the loop instead of its source, at no register cost (a tile
  // that the new layout copies into every warp, a decode kernel's Q read by 8 warps
  // splitting N, would hold 8 times the registers through the loop). One conversion of a
  // value to a layout serves every later read (the walk is in program order, so the
  // first dominates the rest).
  // Through shared memory, a conversion left in the loop costs an exchange and two barriers
  // an iteration: hoisted, it costs the registers the larger layout holds, taken where
  // that is at most 16 32-bit registers a thread (Q as the A operand of a dot whose 4
  // warps all read it, 32x64 bf16: 12 more; samples/attention's causal forward at 32x32
  // D=64 from 136 VGPRs and 24 s_barriers to 132 and 17 on gfx942, 112 and 13 to 110 and
  // 10 on gfx950), not the decode kernel's 8-fold Q.
  auto distinct_regs = [](const Layout& l) { return l.num_regs() >> __builtin_popcount(l.duplicate_reg_mask()); };
  auto hoists = [&](const ir::Value& v, const Layout& want, const ir::Block* home) {
    const int more = distinct_regs(want) - distinct_regs(*v.layout);
    if (more <= 0) return true;
    const int64_t bytes = int64_t(more) * std::max(1, byte_width(v.type.dtype));
    return bytes <= 16 * 4 && conversion_path_at(*v.layout, want, home, t) == ir::ConvertPath::shared;
  };
  std::map<std::tuple<const ir::Value*, std::string, const ir::Block*>, ir::Value*> made;
  int64_t buffer_bytes = 0;  // every shared buffer's, as if all were live at once
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::shared_alloc) return;
    const ir::Type& bt = op.result()->type;
    buffer_bytes += bt.numel() * bt.stages * byte_width(bt.dtype);
  });
  int inserted = 0;
  for (const Need& n : needs) {
    ir::Value* v = n.op->operands[n.operand];
    const ir::Block* home = v->def ? v->def->parent : v->owner;
    ir::Operation* at = n.op;
    bool hoisted = false;
    if (hoists(*v, n.want, home))
      while (at->parent != home && at->parent->parent) {
        at = at->parent->parent;
        hoisted = true;
      }
    // A conversion through shared memory hoisted out of a loop or branch past a
    // shared_alloc, in a program whose buffers and this conversion's scratch together
    // exceed the target's shared memory, goes right after the value's definition where
    // every read of the value is inside that loop or branch: the source dies where the
    // converted tile is born (no register cost either way), and its scratch is used
    // before the buffers allocated later are live (a hand-staged kernel's tl::shared
    // stages, whose bytes the allocator then lets the scratch share: shared_memory.cpp).
    // Any other stays before the loop: moved, it gains nothing and perturbs LLVM's
    // schedule (fp8_decode's spilling candidates spilled more).
    const int64_t scratch = v->type.numel() * byte_width(v->type.dtype);
    bool after_def = false;
    if (hoisted && v->def && buffer_bytes + scratch > t.caps->shared_bytes_per_program &&
        conversion_path_at(*v->layout, n.want, home, t) == ir::ConvertPath::shared) {
      bool alloc_between = false, past_def = false;
      for (auto& o : home->ops) {
        if (o.get() == at) break;
        if (o.get() == v->def) past_def = true;
        else if (past_def && o->op == Op::shared_alloc) alloc_between = true;
      }
      after_def = alloc_between;
      for (auto& [user, index] : ir::uses_of(f.body, v)) after_def &= ir::is_inside(user->parent, at);
    }
    ir::Value*& conv = made[{v, n.want.str(), at->parent}];
    if (!conv) {
      ir::Builder b(*at->parent);
      if (after_def) b.after(*v->def);
      else b.before(*at);
      conv = b.create1(Op::convert_layout, {v}, v->type, n.op->loc);
      conv->layout = n.want;
      ++inserted;
    }
    n.op->operands[n.operand] = conv;
  }
  return inserted;
}

}  // namespace tl::gpu

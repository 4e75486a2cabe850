// assign_layouts (passes.hpp): one forward walk over the tile IR that gives every tile
// value its layout, in the order the lowering emits code, recorded in the IR
// (Value::layout, Value::rematerialized, Operation::layout for stores and atomics).
//
// Anchors, Triton's Coalesce pass per op: a load or store is coalesced along its own
// pointer's most contiguous dim; its elements per thread are as many as one 16-byte
// access holds, as contiguity and alignment allow. Memory ops of one shape and one
// order share the widest of their widths (a masked or unaligned access in the same
// layout just issues narrower instructions), and the shape's default (for values with
// no anchor of their own) is the widest op's layout. Two loads of one shape coalesced
// along different dims (an A tile and a transposed B tile) keep different layouts.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/layout_plan.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {

int floor_pow2(int64_t x) {
  int v = 1;
  while (int64_t(v) * 2 <= x) v *= 2;
  return v;
}

// The coalescing order of a pointer tile: its most contiguous dim first; ties keep the
// row-major default.
std::vector<int> coalesced_order(const passes::AxisAnalysis& axis, const ir::Value* ptr) {
  int rank = ptr->type.rank();
  const passes::AxisInfo& ai = axis.get(ptr);
  std::vector<int> order(rank);
  for (int d = 0; d < rank; ++d) order[d] = rank - 1 - d;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ai.contiguity[a] > ai.contiguity[b]; });
  return order;
}

// A value distributed over the program's threads: a register tile (not a scalar, which
// every thread holds, nor a shared-memory buffer, which is an address).
bool distributed(const ir::Value* v) { return !v->type.is_scalar() && !v->type.is_shared(); }

bool is_memory_anchor(const ir::Operation& op) {
  return (op.op == Op::load || op.op == Op::store) && !op.operands[0]->type.is_scalar();
}

}  // namespace

int access_width(const passes::AxisAnalysis& axis, const Layout& l, const ir::Value* ptr, const ir::Value* mask) {
  if (l.reg.empty() || l.reg[0] == 0 || (l.reg[0] & (l.reg[0] - 1)) != 0) return 1;
  int bit = __builtin_ctz(l.reg[0]);
  int d = dim_of_bit(l.shape, bit);
  int run = contiguous_run(l, uint32_t(1) << dim_offset(l.shape, d));
  int v = std::min(run, axis.vector_width(ptr, d));
  if (mask) v = std::min(v, floor_pow2(axis.mask_constancy(mask, d)));
  return std::max(1, v);
}

// `l` with the register bits holding the first coordinate bits of `like`'s fastest dim (its
// register bit 0's) moved to the front, in order, the others after them as they were.
Layout contiguous_registers_first(const Layout& l, const Layout& like) {
  if (like.reg.empty() || like.reg[0] == 0 || (like.reg[0] & (like.reg[0] - 1)) != 0) return l;
  const int off = dim_offset(l.shape, dim_of_bit(l.shape, __builtin_ctz(like.reg[0])));
  std::vector<uint32_t> front, rest = l.reg;
  for (int j = 0;; ++j) {
    auto it = std::find(rest.begin(), rest.end(), uint32_t(1) << (off + j));
    if (it == rest.end()) break;
    front.push_back(*it);
    rest.erase(it);
  }
  Layout out = l;
  out.reg = front;
  out.reg.insert(out.reg.end(), rest.begin(), rest.end());
  return out;
}

// ------------------------------------------------------------------ the plan being made

// What the planner has decided so far; written into the IR when it is done.
struct PlanState {
  int wave_size_ = 0, num_warps_ = 0;
  std::unordered_set<const ir::Value*> lazy_;
  std::unordered_map<const ir::Value*, Layout> layouts_;
  std::unordered_map<const ir::Operation*, Layout> op_layouts_;
  std::unordered_map<const ir::Operation*, DotPlan> dots_;
  std::map<std::vector<int>, Layout> defaults_;

  // The default of a shape: the coalesced layout the memory ops of that shape vote for
  // (the widest access wins), or a plain row-major blocked layout.
  const Layout& shape_default(const std::vector<int>& shape) {
    auto it = defaults_.find(shape);
    if (it != defaults_.end()) return it->second;
    std::vector<int> order;
    for (int d = int(shape.size()) - 1; d >= 0; --d) order.push_back(d);
    return defaults_[shape] = default_layout(shape, order, 1, wave_size_, num_warps_);
  }
  // The layout tile `v` lives in; a rematerialized value's is its shape's default, the
  // layout a user with no preference reads it in.
  const Layout& of(const ir::Value* v) {
    auto it = layouts_.find(v);
    if (it != layouts_.end()) return it->second;
    if (!distributed(v)) throw compile_error("layout plan: a scalar or shared buffer has no distributed layout");
    return shape_default(v->type.shape);
  }
};

// ------------------------------------------------------------------ the planner

class LayoutPlanner {
 public:
  LayoutPlanner(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t)
      : f_(f), axis_(axis), threads_(t.wave_size * t.num_warps), target_(t) {
    plan_.wave_size_ = t.wave_size;
    plan_.num_warps_ = t.num_warps;
  }

  void run() {
    ir::walk(f_.body, [&](ir::Operation& op) {
      if (op.op != Op::dot) return;
      plan_.dots_[&op] = recorded_dot_plan(*target_.caps, op, target_.num_warps, target_.wave_size);
    });
    vote();
    analyze_uses(f_.body);
    block(f_.body);
    record(f_.body);
  }

 private:
  // ---- anchors
  void vote() {
    struct Vote {
      std::vector<int> order;
      int vec = 0;
    };
    std::map<std::vector<int>, Vote> by_shape;
    ir::walk(const_cast<ir::Block&>(f_.body), [&](ir::Operation& op) {
      if (op.op == Op::shared_load || op.op == Op::shared_store) {
        // A shared tile is read and written best 16 bytes per thread along its last
        // dim (shared_tile_layout): its shape's default should allow that too.
        const ir::Type& bt = op.operands[0]->type;
        std::vector<int> order;
        for (int d = bt.rank() - 1; d >= 0; --d) order.push_back(d);
        int vec = std::max(1, std::min(bt.shape.back(), 16 / std::max(1, int(byte_width(bt.dtype)))));
        Vote& v = by_shape[bt.shape];
        if (vec > v.vec || v.order.empty()) v = Vote{order, vec};
        int& w = widest_[{bt.shape, order}];
        w = std::max(w, vec);
        return;
      }
      if (!is_memory_anchor(op)) return;
      const ir::Value* ptr = op.operands[0];
      std::vector<int> order = coalesced_order(axis_, ptr);
      int vec = axis_.vector_width(ptr, order[0]);
      Vote& v = by_shape[ptr->type.shape];
      if (vec > v.vec || v.order.empty()) v = Vote{order, vec};
      int& w = widest_[{ptr->type.shape, order}];
      w = std::max(w, vec);
    });
    for (auto& [shape, v] : by_shape)
      plan_.defaults_[shape] = default_layout(shape, v.order, v.vec, plan_.wave_size_, plan_.num_warps_);
  }

  Layout anchor(const ir::Operation& op) {
    const ir::Value* ptr = op.operands[0];
    std::vector<int> order = coalesced_order(axis_, ptr);
    int vec = widest_.at({ptr->type.shape, order});
    return default_layout(ptr->type.shape, order, vec, plan_.wave_size_, plan_.num_warps_);
  }

  // ---- which values are rematerialized, and who uses what
  static bool lazy_candidate(const ir::Operation& op) {
    if (op.results.size() != 1 || !distributed(op.result())) return false;
    switch (op.op) {
      case Op::splat: case Op::arange: case Op::broadcast: case Op::reshape: case Op::expand_dims: case Op::trans:
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::min: case Op::max:
      case Op::band: case Op::bor: case Op::bxor: case Op::shl: case Op::shr: case Op::neg: case Op::bnot:
      case Op::abs: case Op::cmp: case Op::select: case Op::bitcast: case Op::addptr: case Op::hint:
        return true;
      case Op::cast:  // FP8 converts are not cheap
        return !is_fp8(op.result()->type.dtype) && !is_fp8(op.operands[0]->type.dtype);
      default:
        return false;
    }
  }

  void analyze_uses(const ir::Block& blk) {
    for (auto& op : blk.ops) {
      for (size_t i = 0; i < op->operands.size(); ++i) {
        users_[op->operands[i]].emplace_back(op.get(), int(i));
      }
      for (auto& r : op->regions) analyze_uses(*r);
      if (lazy_candidate(*op)) {
        bool ok = true;
        for (const ir::Value* v : op->operands) ok &= v->type.is_scalar() || plan_.lazy_.count(v);
        if (ok) plan_.lazy_.insert(op->result());
      }
    }
  }

  bool lazy(const ir::Value* v) const { return plan_.lazy_.count(v) != 0; }
  bool eager_tile(const ir::Value* v) const { return distributed(v) && !lazy(v); }

  // The layout every use of a tile would have it in, if they agree: a broadcast reads
  // its operand in the projection of its result's layout; reshapes, elementwise ops and
  // loop or branch hand-offs pass on what their results want; any other use (a
  // reduction, a store) takes any layout. Loads are made in it, as Triton's backward
  // rematerialization of a layout conversion into its load: an RMSNorm's gamma row or
  // per-row 1/rms, broadcast over the program's rows, then needs no trip through shared
  // memory and no barrier. Threads holding broadcast copies load the same addresses.
  // `v` is a dot's a or b, or transposed into one.
  bool feeds_dot_operand(const ir::Value* v) const {
    auto it = users_.find(v);
    if (it == users_.end()) return false;
    for (auto [u, index] : it->second)
      if ((u->op == Op::dot && index < 2) || (u->op == Op::trans && feeds_dot_operand(u->result()))) return true;
    return false;
  }

  // Whether the program has a warpgroup dot (sm_90's wgmma: the only dots that take an
  // upcast in their operand layout so far, see below).
  bool warpgroup_dots() const {
    return std::any_of(plan_.dots_.begin(), plan_.dots_.end(), [](const auto& d) { return d.second.warpgroup(); });
  }

  // Whether `dot` is one decompose_scaled_dots computed transposed (acc^T = b a^T + acc^T:
  // its accumulator a transpose). Only its upcast A is made in the operand layout: tutorial
  // 10's (both operands upcast, the dot as written) holds its whole K tile in registers
  // that way, where converting it lets the dot read a K step at a time (sm_90 128x128x128
  // w4: 0 -> 504 B of spill stores).
  static bool transposed_dot(const ir::Operation& dot) {
    const ir::Value* acc = dot.operands[2];
    return acc->def && acc->def->op == Op::trans;
  }

  // Whether `v` is tl::dot_scaled's upcast (decompose_scaled_dots) of packed e2m1 values
  // read from a shared buffer (the pipeliner's stage, or the user's of bytes): pure ops
  // down to that read. A warpgroup dot takes such an A from registers in its operand
  // layout, so the read and every step of the upcast are made in (projections of) that
  // layout, as Triton's local_load into a dot operand followed by fp4_to_fp: no
  // conversion through shared memory between the upcast and the dot.
  bool upcast_from_shared(const ir::Value* v, int depth = 24) const {
    const ir::Operation* d = v->def;
    if (!d || depth == 0) return false;
    if (d->op == Op::shared_load) return v->type.dtype == DType::f4e2m1 || v->type.dtype == DType::u8;
    switch (d->op) {
      case Op::cast: case Op::bitcast: case Op::reshape: case Op::join: case Op::band: case Op::shr:
      case Op::mul:
        break;
      case Op::inline_asm_elementwise:  // (pure: sm_90's e2m1 byte-permute upcast)
        if (d->i1 != 1) return false;
        break;
      default:
        return false;
    }
    for (const ir::Value* x : d->operands)
      if (!x->type.is_scalar() && x->def && x->def->op != Op::splat && x->def->op != Op::broadcast &&
          upcast_from_shared(x, depth - 1))
        return true;
    return false;
  }

  std::optional<Layout> wanted_layout(const ir::Value* v) {
    if (!distributed(v)) return std::nullopt;
    if (auto it = wanted_.find(v); it != wanted_.end()) return it->second;
    wanted_[v] = std::nullopt;  // while in progress (a loop-carried cycle): no preference
    std::optional<Layout> want;
    bool conflict = false;
    auto meet = [&](const std::optional<Layout>& l) {
      if (!l) return;
      if (!want) want = l;
      else if (!(*want == *l)) conflict = true;
    };
    static const std::vector<std::pair<const ir::Operation*, int>> no_users;
    auto it = users_.find(v);
    for (auto [u, index] : it == users_.end() ? no_users : it->second) {
      switch (u->op) {
        case Op::broadcast:
          meet(broadcast_source_layout(broadcast_layout(u->result()), v->type.shape));
          break;
        case Op::reshape: case Op::expand_dims:
          if (auto w = wanted_layout(u->result())) meet(reshape_layout(*w, v->type.shape));
          break;
        // What would make a split, join or cat free: the layouts assign_layouts gives
        // their results, run backwards (a load of [n, 2] made with the 2 in registers).
        case Op::split:
          if (auto w = wanted_layout(u->result())) meet(join_layout(*w));
          break;
        case Op::join:
          if (auto w = wanted_layout(u->result()))
            if (auto i = sole_register_bit(*w, 1)) meet(split_layout(*w, *i));
          break;
        case Op::cat:
          if (auto w = wanted_layout(u->result()))
            if (sole_register_bit(*w, uint32_t(v->type.numel())) == int(w->reg.size()) - 1) meet(cat_source_layout(*w));
          break;
        case Op::flip:
          meet(wanted_layout(u->result()));
          break;
        case Op::gather:  // the index is read in the result's layout
          if (index == 1) meet(wanted_layout(u->result()));
          break;
        // A sort's keys (its positions are index math, made where they are read).
        case Op::sort:
          if (index == 0 && v->type.numel() >= threads_)
            meet(sort_layout(v->type.shape, int(u->i0), target_.wave_size, target_.num_warps));
          break;
        case Op::cast:
          // (An FP8 tile keeps the layout its own access wants, but a read from shared
          // memory converted for a dot is read in the dot's operand layout.)
          if ((!is_fp8(u->result()->type.dtype) && !is_fp8(v->type.dtype)) ||
              (match_shared_dot_operand(u->result()) && feeds_dot_operand(u->result())))
            meet(wanted_layout(u->result()));
          break;
        // addptr too: a gathered row index (an embedding's ids) becomes pointers before
        // its broadcast over the row, and loads in the broadcast's layout.
        case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::min: case Op::max: case Op::neg:
        case Op::abs: case Op::select: case Op::addptr: case Op::hint:
          meet(wanted_layout(u->result()));
          break;
        // (The nibbles and bit fields of tl::dot_scaled's upcast, between a staged read of
        // packed e2m1 bytes and the warpgroup dot that wants it as its A.)
        // (Not the e8m0 scales' decoding: loaded in the projection of the operand layout, a
        // prefetched scale tile held 64 registers a thread with its broadcast copies, and
        // gpt-oss-20b's gate/up at 128x128x128 w8 spilled 7.9 KB.)
        case Op::band: case Op::bor: case Op::shl: case Op::shr: case Op::bitcast:
          if (warpgroup_dots() && u->result()->type.shape == v->type.shape && upcast_from_shared(u->result()))
            meet(wanted_layout(u->result()));
          break;
        // (sm_90's e2m1 upcast as a pure inline asm: the bytes in its results' layout.)
        case Op::inline_asm_elementwise:
          if (warpgroup_dots() && u->i1 == 1 && index == 0 && upcast_from_shared(u->result()))
            for (auto& r : u->results) meet(wanted_layout(r.get()));
          break;
        // A dot's accumulator is wanted in the dot's accumulator layout (a loop's carried
        // accumulator then never converts); an operand read from a shared buffer is read
        // straight into its operand layout (Triton's local_load into a dot operand), while
        // one loaded from global memory keeps its coalesced layout and converts.
        // A transposed dot operand read from a shared buffer (B^T stored K-contiguous)
        // is read in the transpose of the operand layout.
        case Op::trans:
          if (match_shared_dot_operand(u->result()))
            if (auto w = wanted_layout(u->result())) meet(trans_source_layout(*w, u->ints));
          break;
        case Op::dot: {
          const DotPlan& p = plan_.dots_.at(u);
          if (index == 2) meet(p.acc);
          // tl::dot_scaled's scales: loaded straight into the bytes each instruction reads.
          else if (index >= 3) meet(index == 3 ? p.a_scale : p.b_scale);
          else if (match_shared_dot_operand(v) || (index == 0 && p.warpgroup() && transposed_dot(*u) && upcast_from_shared(v)))
            meet(index == 0 ? p.a : p.b);
          break;
        }
        case Op::for_:  // an initial value of a loop-carried tile (operands 0-2 are the bounds)
          if (index >= 3) {
            meet(wanted_layout(u->regions[0]->args[size_t(index - 3 + 1)].get()));
            meet(wanted_layout(u->result(index - 3)));
          }
          break;
        // A while's carried tile is wanted as its users in either region and after the
        // loop want it (a dot's accumulator carried by a while stays in the dot's layout).
        case Op::while_:
          for (auto& r : u->regions) meet(wanted_layout(r->args[size_t(index)].get()));
          meet(wanted_layout(u->result(index)));
          break;
        case Op::yield: {
          const ir::Operation* owner = u->parent ? u->parent->parent : nullptr;
          if (owner && owner->op == Op::while_) {
            const bool condition_region = u->parent == owner->regions[0].get();
            if (condition_region && index == 0) break;  // the condition
            const size_t i = size_t(condition_region ? index - 1 : index);
            for (auto& r : owner->regions) meet(wanted_layout(r->args[i].get()));
            meet(wanted_layout(owner->result(int(i))));
            break;
          }
          if (owner && owner->op == Op::for_) meet(wanted_layout(owner->regions[0]->args[size_t(index + 1)].get()));
          if (owner) meet(wanted_layout(owner->result(index)));
          break;
        }
        default:
          break;
      }
    }
    return wanted_[v] = conflict ? std::nullopt : want;
  }

  // The layout a broadcast is made in: that of a dot's accumulator it is combined with
  // by an elementwise op (an epilogue's per-row and per-column scales, `acc *
  // expand_dims(rs, 1)`), so that the scales load into slices of the accumulator's
  // layout instead of converting a whole [M, N] tile through shared memory (Triton's
  // forward propagation of the MMA layout); else that of a tile it is combined with that
  // already has its layout (the upcast e2m1 values times their broadcast e8m0 scales,
  // decompose_scaled_dots: the [rows, K / 32, 1] scales convert, not a [rows, K / 32, 32]
  // f32 tile, 64 KiB of scratch at 128x128); else its shape's default.
  Layout broadcast_layout(const ir::Value* res) {
    static const std::vector<std::pair<const ir::Operation*, int>> none;
    auto it = users_.find(res);
    const auto& users = it == users_.end() ? none : it->second;
    auto elementwise_user = [](const ir::Operation* u) {
      return has_trait(u->op, ir::kElementwise) && u->op != Op::load && u->op != Op::store;
    };
    for (auto [u, index] : users) {
      if (!elementwise_user(u)) continue;
      for (const ir::Value* o : u->operands)
        if (o != res)
          if (const Layout* l = accumulator_layout_of(o, 8)) return *l;
    }
    for (auto [u, index] : users) {
      if (!elementwise_user(u)) continue;
      for (const ir::Value* o : u->operands)
        if (o != res && eager_tile(o) && !weak_.count(o) && o->type.shape == res->type.shape)
          if (auto l = plan_.layouts_.find(o); l != plan_.layouts_.end()) return l->second;
    }
    return plan_.shape_default(res->type.shape);
  }
  // The dot accumulator layout `v` is (or, not planned yet, an elementwise op on it will
  // be: it works in its first eager operand's layout), or null.
  const Layout* accumulator_layout_of(const ir::Value* v, int depth) {
    if (!eager_tile(v) || depth == 0) return nullptr;
    if (auto l = plan_.layouts_.find(v); l != plan_.layouts_.end()) {
      for (const auto& d : plan_.dots_)
        if (d.second.acc == l->second) return &d.second.acc;
      return nullptr;
    }
    const ir::Operation* d = v->def;
    // (a warpgroup dot not reached yet: plan_dots chose its accumulator layout already. A
    // row statistic read before the dot it is applied to, the attention backward's LSE
    // staged by the pipeliner, is then read straight in the accumulator's columns. Only
    // sm_90's wgmma so far, where the pipeliner stages such rows: elsewhere the row is a
    // register load that keeps its own wide layout, unmeasured on AMD.)
    if (d && d->op == Op::dot) {
      auto p = plan_.dots_.find(d);
      return p == plan_.dots_.end() || !p->second.warpgroup() ? nullptr : &p->second.acc;
    }
    if (!d || !has_trait(d->op, ir::kElementwise) || d->op == Op::load || d->op == Op::store) return nullptr;
    for (const ir::Value* x : d->operands)
      if (eager_tile(x)) return accumulator_layout_of(x, depth - 1);
    return nullptr;
  }

  // Whether `v` is what register-only shape ops (reshape, trans, split, join, cat) and
  // elementwise ops make of a dot's result: tutorial 09's EPILOGUE_SUBTILE halves (the
  // accumulator reshaped, permuted and split) are stored from their MFMA-derived layout
  // as the whole accumulator is.
  bool from_accumulator(const ir::Value* v, int depth) const {
    const ir::Operation* d = v->def;
    if (depth == 0 || !eager_tile(v)) return false;
    if (auto l = plan_.layouts_.find(v); l != plan_.layouts_.end())  // (a loop's carried accumulator)
      for (const auto& dot : plan_.dots_)
        if (dot.second.acc == l->second) return true;
    if (!d) return false;
    switch (d->op) {
      case Op::dot: return true;
      case Op::reshape: case Op::expand_dims: case Op::trans: case Op::split: case Op::join: case Op::cat:
        return from_accumulator(d->operands[0], depth - 1);
      default: break;
    }
    if (!has_trait(d->op, ir::kElementwise) || d->op == Op::load || d->op == Op::store) return false;
    for (const ir::Value* x : d->operands)
      if (eager_tile(x)) return from_accumulator(x, depth - 1);
    return false;
  }

  // ---- the walk
  void set(const ir::Value* v, const Layout& l) { plan_.layouts_[v] = l; }

  void block(const ir::Block& b) {
    for (auto& o : b.ops) op(*o);
  }

  void op(const ir::Operation& o) {
    switch (o.op) {
      case Op::for_: return loop(o);
      case Op::while_: return while_loop(o);
      case Op::if_: return branch(o);
      case Op::load: return load(o);
      // A shared load is an anchor like a load: the layout its users want (a transpose
      // or reduction of what was stored reads straight into it), else its shape's default.
      case Op::shared_load: {
        auto want = wanted_layout(o.result());
        return set(o.result(), want ? *want : plan_.shape_default(o.result()->type.shape));
      }
      case Op::store: return store(o);
      case Op::atomic_rmw: case Op::atomic_cas: return atomic(o);
      case Op::reduce: {  // (a combine's N results: all in the layout of the first operand's)
        if (o.result()->type.is_scalar()) return;
        for (auto& r : o.results) set(r.get(), reduce_layout(plan_.of(o.operands[0]), int(o.i0)));
        return;
      }
      case Op::scan:
        for (auto& r : o.results) set(r.get(), plan_.of(o.operands[0]));
        return;
      // sort works in its operand's layout where that holds the sorted dim bit by bit
      // (lower_sort.cpp), else in sort_layout (blocked: it always does); its indices
      // travel in the same registers. A top-k's results keep what its halvings leave
      // (topk_layout), the layout it works in recorded on the op.
      case Op::sort: {
        const int d = int(o.i0);
        Layout l = plan_.of(o.operands[0]);
        if (!dim_bit_holders(l, d)) l = sort_layout(l.shape, d, target_.wave_size, target_.num_warps);
        const int k = o.result()->type.shape[size_t(d)];
        if (k < l.shape[size_t(d)]) {
          plan_.op_layouts_[&o] = l;
          l = topk_layout(l, d, k);
        }
        for (size_t i = 0; i < o.results.size(); ++i) set(o.result(int(i)), l);
        return;
      }
      case Op::histogram: return set(o.result(), plan_.shape_default(o.result()->type.shape));
      case Op::dot: return set(o.result(), plan_.dots_.at(&o).acc);
      // Elementwise, with every result in the one layout (one asm gives them together).
      case Op::inline_asm_elementwise:
        if (!eager_tile(o.result())) return;
        elementwise(o);
        for (size_t i = 1; i < o.results.size(); ++i) set(o.result(int(i)), plan_.of(o.result()));
        return;
      default: break;
    }
    if (o.results.size() != 1 || !eager_tile(o.result())) return;
    const ir::Value* res = o.result();
    switch (o.op) {
      case Op::reshape: case Op::expand_dims: return set(res, reshape_layout(plan_.of(o.operands[0]), res->type.shape));
      case Op::trans: return set(res, trans_layout(plan_.of(o.operands[0]), o.ints));
      case Op::broadcast: return set(res, broadcast_layout(res));
      // Triton's join/split/cat inference (layout.hpp): the results are laid out so that
      // nothing moves; a split whose 2 is not in one thread's registers converts first.
      case Op::join: case Op::cat: {
        const ir::Value* from = eager_tile(o.operands[0]) || !eager_tile(o.operands[1]) ? o.operands[0] : o.operands[1];
        return set(res, o.op == Op::join ? join_layout(plan_.of(from)) : cat_layout(plan_.of(from)));
      }
      case Op::split: {
        const Layout& src = plan_.of(o.operands[0]);
        if (auto i = sole_register_bit(src, 1)) return set(res, split_layout(src, *i));
        return set(res, plan_.shape_default(res->type.shape));
      }
      case Op::flip: return set(res, plan_.of(o.operands[0]));
      case Op::gather: return set(res, plan_.of(o.operands[1]));  // the index's (src is read from shared memory)
      default: break;
    }
    elementwise(o);
  }

  // Work in the layout of the first operand that has one of its own, the others follow;
  // a loop-carried value's layout is only a starting guess while its loop is being
  // planned ("weak"), so any other operand's layout wins over it.
  void elementwise(const ir::Operation& o) {
    const ir::Value* res = o.result();
    const ir::Value* pick = nullptr;
    for (const ir::Value* x : o.operands)
      if (eager_tile(x) && !weak_.count(x)) {
        pick = x;
        break;
      }
    bool from_weak = false;
    if (!pick)
      for (const ir::Value* x : o.operands)
        if (eager_tile(x)) {
          pick = x;
          from_weak = true;
          break;
        }
    set(res, pick ? plan_.of(pick) : plan_.shape_default(res->type.shape));
    if (from_weak) weak_.insert(res);
    else weak_.erase(res);
  }

  // Whether `v` is yielded to the next iteration of a loop.
  bool carried_by_loop(const ir::Value* v) {
    auto it = users_.find(v);
    if (it == users_.end()) return false;
    for (auto [u, index] : it->second)
      if (u->op == Op::yield && u->parent && u->parent->parent && u->parent->parent->op == Op::for_) return true;
    return false;
  }

  void load(const ir::Operation& o) {
    const ir::Value* ptr = o.operands[0];
    if (ptr->type.is_scalar()) return;
    const ir::Value* mask = o.operands.size() > 1 ? o.operands[1] : nullptr;
    // The layout its users want, unless that would narrow the accesses, or, for a load
    // the pipeliner issues an iteration ahead (its result carried to the next iteration
    // by the loop's yield), hold more distinct registers: those stay live across the
    // whole loop (a decode kernel's per-token scale, wanted broadcast over the columns an
    // MFMA accumulator gives a lane: 16 registers instead of 1, twice, at D = 64).
    Layout l = anchor(o);
    auto distinct = [](const Layout& x) { return x.num_regs() >> __builtin_popcount(x.duplicate_reg_mask()); };
    if (auto want = wanted_layout(o.result());
        want && access_width(axis_, *want, ptr, mask) >= access_width(axis_, l, ptr, mask) &&
        !(target_.caps->register_pressure_rules && carried_by_loop(o.result()) && distinct(*want) > distinct(l)))
      l = *want;
    set(o.result(), l);
  }

  // A store works in its anchor, or in the value's own layout when the value already
  // lives in another one, such as a reduction's result, and storing from there costs
  // nothing: the same vector width, or a tile small enough that every thread stores at
  // most one element of it. Converting would take a trip through shared memory and two
  // barriers on the program's critical path (an RMSNorm's per-row 1/rms). The pointer
  // and mask must be rematerialized or held in that layout already.
  void store(const ir::Operation& o) {
    const ir::Value* ptr = o.operands[0];
    if (ptr->type.is_scalar()) return;
    const ir::Value* val = o.operands[1];
    const ir::Value* mask = o.operands.size() > 2 ? o.operands[2] : nullptr;
    Layout own_anchor = anchor(o);
    Layout chosen = own_anchor;
    if (!lazy(val)) {
      Layout own = plan_.of(val);
      auto index_math = [&](const ir::Value* v) { return !v || v->type.is_scalar() || lazy(v); };
      // The value's registers reordered so that those running along the store's fastest
      // dim come first, where that widens its accesses: a register-only conversion, nothing
      // moves between threads (a join's result holds the joined 2 in register bit 0: a dot
      // accumulator's halves split and joined back, or interleaved, are the accumulator's
      // registers in another order, stored as it is).
      if (Layout r = contiguous_registers_first(own, own_anchor);
          !(r == own) && index_math(ptr) && index_math(mask) &&
          access_width(axis_, r, ptr, mask) > access_width(axis_, own, ptr, mask))
        own = r;
      auto available = [&](const ir::Value* v) { return index_math(v) || plan_.of(v) == own; };
      if (!(own == own_anchor) && available(ptr) && available(mask)) {
        int own_width = access_width(axis_, own, ptr, mask), anchor_width = access_width(axis_, own_anchor, ptr, mask);
        bool small = own.numel() <= int64_t(threads_);
        // A dot's accumulator (or what an epilogue computes in its layout) is stored
        // from there when each access still moves 4 bytes or more, as Triton's AMD
        // epilogue stores from the (transposed) MFMA layout: converting a 128x128 f32
        // tile would take 64 KiB of shared memory and two barriers.
        bool from_dot = std::any_of(plan_.dots_.begin(), plan_.dots_.end(),
                                    [&](const auto& d) { return d.second.acc == own; }) ||
                        from_accumulator(val, 16);  // (split, scaled, joined back: 9 ops deep)
        bool wide_enough = own_width >= anchor_width ||
                           (from_dot && own_width * byte_width(val->type.dtype) >= 4);
        if ((own_width > 1 || small) && wide_enough) chosen = own;
      }
    }
    plan_.op_layouts_[&o] = chosen;
  }

  void atomic(const ir::Operation& o) {
    const ir::Value* ptr = o.operands[0];
    if (ptr->type.is_scalar()) return;
    Layout l = plan_.shape_default(ptr->type.shape);
    plan_.op_layouts_[&o] = l;
    set(o.result(), l);
  }

  // Loop-carried values start in their init's layout and then take the layout of what
  // the body yields, until that no longer changes (a few rounds at most: layouts only
  // move from a starting guess to an anchored one). A round that would still change
  // something after the last is not taken, so the body's layouts always belong to the
  // carried layouts they were planned with.
  void loop(const ir::Operation& o) {
    const ir::Block& body = *o.regions[0];
    size_t n = o.results.size();
    std::vector<std::optional<Layout>> carried(n);
    for (size_t i = 0; i < n; ++i)
      if (distributed(o.operands[3 + i])) carried[i] = plan_.of(o.operands[3 + i]);
    constexpr int kMaxRounds = 4;
    for (int round = 0;; ++round) {
      for (size_t i = 0; i < n; ++i)
        if (carried[i]) {
          set(body.args[1 + i].get(), *carried[i]);
          weak_.insert(body.args[1 + i].get());
        }
      block(body);
      const ir::Operation* y = body.terminator();
      bool changed = false;
      std::vector<std::optional<Layout>> next = carried;
      for (size_t i = 0; i < n; ++i) {
        const ir::Value* v = y->operands[i];
        if (!carried[i] || !eager_tile(v) || weak_.count(v)) continue;
        if (!(plan_.of(v) == *carried[i])) next[i] = plan_.of(v), changed = true;
      }
      if (!changed || round + 1 == kMaxRounds) break;
      carried = std::move(next);
    }
    for (size_t i = 0; i < n; ++i) {
      weak_.erase(body.args[1 + i].get());
      if (carried[i]) set(o.result(int(i)), *carried[i]);
    }
  }

  // A while loop carries each tile in the layout its users in the loop and after it want
  // (wanted_layout, where they agree: a dot's accumulator in the dot's layout), else in its
  // initial value's: both regions' arguments and the results take it, and the initial
  // value and what the regions yield are converted to it (insert_layout_conversions).
  void while_loop(const ir::Operation& o) {
    for (size_t i = 0; i < o.results.size(); ++i) {
      if (!distributed(o.operands[i])) continue;
      const std::optional<Layout> want = wanted_layout(o.regions[0]->args[i].get());
      const Layout l = want ? *want : plan_.of(o.operands[i]);
      for (auto& r : o.regions) set(r->args[i].get(), l);
      set(o.result(int(i)), l);
    }
    for (auto& r : o.regions) block(*r);
  }

  void branch(const ir::Operation& o) {
    for (auto& r : o.regions) block(*r);
    const ir::Operation* y = o.regions[0]->terminator();
    for (size_t i = 0; i < o.results.size(); ++i)
      if (distributed(o.result(int(i)))) set(o.result(int(i)), plan_.of(y->operands[i]));
  }

  // ---- the plan into the IR
  void record_value(ir::Value* v) {
    v->layout.reset();
    v->rematerialized = false;
    if (!distributed(v)) return;
    v->rematerialized = lazy(v);
    v->layout = plan_.of(v);
  }
  void record(ir::Block& b) {
    for (auto& a : b.args) record_value(a.get());
    for (auto& op : b.ops) {
      for (auto& r : op->results) record_value(r.get());
      op->layout.reset();
      if (auto it = plan_.op_layouts_.find(op.get()); it != plan_.op_layouts_.end()) op->layout = it->second;
      for (auto& r : op->regions) record(*r);
    }
  }

  ir::Function& f_;
  const passes::AxisAnalysis& axis_;
  int threads_;
  PlanTarget target_;
  PlanState plan_;
  std::map<std::pair<std::vector<int>, std::vector<int>>, int> widest_;  // (shape, order) -> widest access
  std::unordered_map<const ir::Value*, std::vector<std::pair<const ir::Operation*, int>>> users_;
  std::unordered_map<const ir::Value*, std::optional<Layout>> wanted_;
  std::unordered_set<const ir::Value*> weak_;
};

void assign_layouts(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t) {
  LayoutPlanner(f, axis, t).run();
}

}  // namespace tl::gpu

// Software pipelining of tl::range loops by num_stages (Triton's loop pipeliner, over
// tl's structured IR). A loop with N > 1 stages issues each eligible load N-1
// iterations ahead of the iteration that uses it, so that its memory latency overlaps
// the arithmetic of the iterations in between:
//
//   prologue      for k in 0..N-2: the loads of iteration k (masked off past the end)
//   steady state  each iteration uses the values loaded N-1 iterations earlier and
//                 issues the loads of iteration i+N-1 (masked off past the end)
//
// The "masked epilogue" is the loop's own last N-1 iterations: the loads they issue
// for iterations that do not exist are masked off (nothing is read), so the loop keeps
// its trip count and there is no peeled copy of the body; 0, 1, fewer than N or any
// number of iterations run exactly the iterations the user wrote.
//
// Where the value goes:
// - into registers (the default): the loaded tiles of the N-1 iterations in flight
//   are loop-carried values; a loop with only such loads is rebuilt unrolled N-1 times
//   so that each tile keeps its registers from load to use (unroll_registers), one
//   with shared-memory loads too rotates them by one each iteration;
// - into shared memory, when the load's only use is storing it into a one-stage
//   shared buffer that nothing outside the loop touches (the user staging a tile for
//   reads by other threads, and later for tl::dot): the buffer gets N stages (N+1 where a
//   dot reading it may run asynchronously: PipelineOptions::dot_may_run_async) and the
//   load becomes a direct copy (global_load_to_shared: AMD global_load_lds, NVIDIA
//   cp.async) into the stage of iteration i+N-1; the loop waits for the oldest copy only
//   (async_wait counting copy groups: N-2 of them may stay in flight) and the buffer's
//   reads read stage i mod N. Only where the target can copy it: some direct-to-shared
//   width of its table fits the pointers' contiguity and alignment and the mask's
//   constancy (a K masked element by element, a ragged GEMM's, goes to registers). The
//   copies write the stage the previous iteration read (kCopyIntoLastReadStage), free
//   once the barrier after this iteration's wait has run: insert_barriers adds none of
//   their own, one barrier an iteration as Triton. With 2 stages they go right after that
//   barrier, with more at the end of the body (transform() says why);
// - into shared memory too, on a GPU, a plain load whose value only feeds tl::dot
//   operands (through casts and transposes), as Triton's pipeliner stages a dot's
//   operands: stage_for_dot gives it a one-stage buffer of the compiler's own (the store
//   and read a user would write) and the form above follows. Only where the copy is
//   possible and the dot reads the buffer wide (K along the contiguous dim, or the
//   target's transposing read at that width: PipelineOptions::transposed_dot_read_bits).
//   A load of OCP MX packed values (f4e2m1 weights, e8m0 scales) that reaches a dot
//   through tl::dot_scaled's upcast is staged the same way (upcast_for_dot), read back in
//   the upcast's layout.
//   A rank-1 load broadcast into an elementwise op on a warpgroup dot's result (the
//   attention backward's LSE and Delta) is staged the same way and read back in the
//   accumulator's columns (broadcast_into_dot_result), not shuffled into them each iteration;
//   A rank-2 load whose pointers run contiguous along dim 0 (attention's K^T,
//   `K + n[None, :] * D + d[:, None]`) is copied transposed: its address math is rebuilt
//   for the [N, K] tile (transposed_expr), copied row-contiguous into a buffer of that
//   shape, and the dot reads tl::trans of the buffer, K-contiguous (samples/gemm's B^T;
//   where PipelineOptions::copy_transposed says so);
//
// - TMA copies (NVIDIA sm_90 under launch_options::tma: a descriptor load traced as a
//   one-stage buffer of its own, tensor_map_load into it and shared_loads of it, waited
//   for at once) get the same stages, in Triton's form for them: the buffer moves before
//   the loop with N stages (N+1 as above), and the loop gets one mbarrier a stage (an
//   i64 [1] buffer of as many stages: Op::mbarrier init before the loop, inval after).
//   The copy of iteration i+N-1 is issued (kTensorMapIssue: one thread arms the stage's
//   mbarrier with the box's bytes and issues it) where the copies above are, and each
//   iteration waits on its stage's mbarrier for the phase it is at (a carried parity,
//   flipped each time the stage wraps to 0) before its reads, every thread itself: no
//   async_wait, no barrier for the data (insert_barriers.cpp). Only loop-invariant maps,
//   coordinates computed as a load's pointers are, and loops that store nothing (a store
//   through the map's tensor would not be seen as one).
//
// A load is eligible when it sits directly in the loop body (not in a branch or an
// inner loop), its pointer, mask and other are computed only from the induction
// variable and values defined before the loop, by side-effect-free ops, which are
// cloned for the iterations ahead (a value carried and advanced by a loop-invariant
// step was rewritten from the induction variable before this pass:
// carried_inductions.cpp), and no store or atomic in the loop writes through
// the same kernel argument (or through a pointer whose argument is unknown): such a
// load might read what an earlier iteration writes. Pointer arguments are otherwise
// assumed not to alias one another, as Triton's pipeliner assumes. A loop that issues
// its own asynchronous copies is a pipeline already and is left alone.
//
// Which loops (loop_num_stages, Triton's AssignLatencies rule): a loop with its own
// tl::num_stages(N) is pipelined at N, every eligible load of it. The launch's num_stages
// applies only to innermost loops (no loop inside) with a tl::dot directly in the body,
// and pipelines only the loads whose values reach the A or B operand of such a dot:
// a persistent matmul's outer tile loop is not pipelined, its K loop is; a loop of
// elementwise loads is left as written unless it asks.
//
// Every loop with N > 1 (its own or the launch's) gets a line in the compile report
// (`pipelined: ...`): what was pipelined, or why nothing was.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/axis_analysis.hpp"
#include "codegen/passes/direct_copy.hpp"
#include "codegen/passes/passes.hpp"
#include "codegen/passes/shared_budget.hpp"

namespace tl::passes {
namespace {

std::string where(const ir::SrcLoc& l) { return ir::short_location(l); }

// The kernel argument a pointer is computed from (through pointer arithmetic and
// reshaping), or null when that is not known.
const ir::Value* pointer_argument(const ir::Value* p) {
  while (p->def) {
    switch (p->def->op) {
      case Op::addptr: case Op::splat: case Op::broadcast: case Op::reshape: case Op::expand_dims: case Op::trans:
        p = p->def->operands[0];
        break;
      default: return nullptr;
    }
  }
  return p->owner && !p->owner->parent ? p : nullptr;
}

// Looks through ops that only replicate or reshape a value.
const ir::Value* through_shape(const ir::Value* v) {
  while (v->def && (v->def->op == Op::splat || v->def->op == Op::broadcast || v->def->op == Op::reshape ||
                    v->def->op == Op::expand_dims))
    v = v->def->operands[0];
  return v;
}

// Whether every element of `x` is at least `iv`: x is iv, or iv plus something
// AxisAnalysis's range proves non-negative (an arange from 0 up, a constant >= 0; the
// one answer to "is it non-negative", which buffer offsets ask too). The relation to iv
// is this function's, which AxisAnalysis's per-value ranges cannot state.
bool at_least(const ir::Value* x, const ir::Value* iv, const AxisAnalysis& axis) {
  x = through_shape(x);
  if (x == iv) return true;
  if (!x->def || x->def->op != Op::add) return false;
  auto nonnegative = [&](const ir::Value* v) { return axis.get(v).range.lo >= 0; };
  const ir::Value *a = x->def->operands[0], *b = x->def->operands[1];
  return (at_least(a, iv, axis) && nonnegative(b)) || (at_least(b, iv, axis) && nonnegative(a));
}

// Whether `mask` is false wherever the iteration at `iv` does not exist (iv >= ub):
// an and of terms one of which is `x < ub` with x >= iv, the user's own bound check
// (`k + tl::arange(0, B) < n` for `tl::range(.., n, ..)`). Then the mask alone keeps the
// loads of iterations past the end from reading, as in a hand-written prefetch.
bool mask_bounds_iteration(const ir::Value* mask, const ir::Value* iv, const ir::Value* ub, const AxisAnalysis& axis) {
  mask = through_shape(mask);
  if (!mask->def || !is_int(iv->type.dtype)) return false;
  if (mask->def->op == Op::band)
    return mask_bounds_iteration(mask->def->operands[0], iv, ub, axis) ||
           mask_bounds_iteration(mask->def->operands[1], iv, ub, axis);
  if (mask->def->op != Op::cmp) return false;
  auto pred = CmpPred(mask->def->i0);
  const ir::Value *a = mask->def->operands[0], *b = mask->def->operands[1];
  if (pred == CmpPred::lt) return through_shape(b) == ub && at_least(a, iv, axis);
  if (pred == CmpPred::gt) return through_shape(a) == ub && at_least(b, iv, axis);
  return false;
}

// The loads of `loop`'s body (directly in it) whose values reach the A or B operand of
// a tl::dot directly in the body, through ops of the body (Triton's AssignLatencies walk
// from each dot back through its operands' producers in the loop's block; the
// accumulator is not followed). A read of a tl::shared buffer the body writes leads on
// to what the body stores there: the user's own staging of a dot operand.
std::set<const ir::Operation*> loads_feeding_dots(const ir::Operation& loop) {
  const ir::Block& body = *loop.regions[0];
  std::set<const ir::Operation*> loads, seen;
  std::vector<const ir::Operation*> work;
  auto visit = [&](const ir::Value* v) {
    if (v->def && v->def->parent == &body && seen.insert(v->def).second) work.push_back(v->def);
  };
  for (auto& op : body.ops)
    if (op->op == Op::dot) {
      visit(op->operands[0]);
      visit(op->operands[1]);
    }
  while (!work.empty()) {
    const ir::Operation* op = work.back();
    work.pop_back();
    if (op->op == Op::load) loads.insert(op);
    if (op->op == Op::shared_load)
      for (auto& w : body.ops) {
        if (w->op == Op::shared_store && w->operands[0] == op->operands[0]) visit(w->operands[2]);
        // (a TMA copy into the buffer: a load too)
        if (w->op == Op::tensor_map_load && w->operands[0] == op->operands[0]) loads.insert(w.get());
      }
    for (const ir::Value* o : op->operands) visit(o);
  }
  return loads;
}

// One load to pipeline: the body ops its operands are computed from, and, for the
// shared-memory form, the shared_store that is its only use.
struct LoadPlan {
  ir::Operation* load = nullptr;
  std::set<ir::Operation*> slice;
  ir::Operation* store = nullptr;  // shared_store(buffer, 0, load) or null (registers)
};

// One TMA copy to stage (see the top of the file): tensor_map_load(buffer, 0, map,
// coordinates...) into a one-stage buffer allocated in the body (`alloc`), read after it.
struct TmaPlan {
  ir::Operation* copy = nullptr;
  ir::Operation* alloc = nullptr;
  std::set<ir::Operation*> slice;
};

class Pipeliner {
 public:
  Pipeliner(ir::Function& f, const PipelineOptions& o, std::vector<std::string>& remarks)
      : f_(f), o_(o), remarks_(remarks) {}

  int run() {
    // (numbered before any loop is rebuilt: PipelineOptions::loop_limits' keys)
    ir::walk(f_.body, [&](ir::Operation& op) {
      if (op.op == Op::for_) numbers_.emplace(&op, int(numbers_.size()));
    });
    process(f_.body);
    return pipelined_;
  }

 private:
  // Inner loops first: an outer loop's pipelining clones only address arithmetic, never
  // an inner loop.
  void process(ir::Block& b) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      ir::Operation* op = b.ops[i].get();
      for (auto& r : op->regions) process(*r);
      if (op->op != Op::for_) continue;
      ir::Operation* now = pipeline(*op);  // (a new loop where it was rebuilt)
      while (b.ops[i].get() != now) ++i;   // past the prologue placed before it
    }
  }

  // Why `v` cannot be recomputed for another iteration ahead, or "" (adding the body ops
  // it needs to `slice`).
  std::string slice_of(ir::Value* v, ir::Operation& loop, const ir::Operation& load, std::set<ir::Operation*>& slice) {
    ir::Block& body = *loop.regions[0];
    if (!ir::defined_inside(v, &loop) || v == body.args[0].get()) return "";
    if (!v->def)
      return fmt::format("load at {} depends on a loop-carried value", where(load.loc));
    ir::Operation* d = v->def;
    if (slice.count(d)) return "";
    if (!ir::is_pure(*d) || !d->regions.empty())
      return fmt::format("load at {} depends on the {} at {}", where(load.loc), op_name(d->op), where(d->loc));
    if (d->parent != &body)
      return fmt::format("load at {} depends on a value computed in a branch", where(load.loc));
    slice.insert(d);
    for (ir::Value* o : d->operands)
      if (std::string why = slice_of(o, loop, load, slice); !why.empty()) return why;
    return "";
  }

  // The shared_store that is the load's only use, when the load can become a direct copy
  // into that store's buffer (see the top of the file); null otherwise.
  ir::Operation* shared_destination(ir::Operation& loop, ir::Operation& load) {
    ir::Block& body = *loop.regions[0];
    auto uses = ir::uses_of(body, load.result());
    if (uses.size() != 1) return nullptr;
    auto [store, index] = uses[0];
    if (store->op != Op::shared_store || index != 2 || store->parent != &body) return nullptr;
    if (!copyable(load)) return nullptr;
    ir::Value* buf = store->operands[0];
    if (!buf->def || buf->def->op != Op::shared_alloc || ir::defined_inside(buf, &loop) || buf->type.stages != 1) return nullptr;
    // Every access of the buffer is this store, or a read after it in the same iteration.
    size_t store_at = index_in(body, store);
    for (auto [user, i] : ir::uses_of(f_.body, buf)) {
      if (user == store) continue;
      if (user->op != Op::shared_load || !ir::is_inside(user->parent, &loop)) return nullptr;
      const ir::Operation* top = user;
      while (top->parent != &body) top = top->parent->parent;
      if (index_in(body, top) <= store_at) return nullptr;
    }
    // (this buffer counted at the loop's stages instead of its own one)
    const ir::Type& bt = buf->type;
    if (!fits_shared(bt.numel() * byte_width(bt.dtype) * (loop_stages_ - bt.stages))) return nullptr;
    multi_buffered_.insert(buf->def);
    return store;
  }

  // Whether every use of `v` is a tl::dot operand, directly or through casts (bitcasts
  // too: u8 codes as their MX format for a scaled dot) and transposes; `k_contiguous`
  // says whether each of them has K along `v`'s last
  // (contiguous) dim, as a row-major A or a transposed B^T: read from shared memory a
  // row of k at a time, wide on every target.
  static bool only_feeds_dots(ir::Block& body, const ir::Value* v, bool& k_contiguous, bool transposed = false) {
    auto uses = ir::uses_of(body, v);
    if (uses.empty()) return false;
    for (auto [user, i] : uses) {
      if (user->op == Op::dot && i < 2) {
        k_contiguous &= (i == 0) != transposed;
        continue;
      }
      if ((user->op == Op::cast || user->op == Op::bitcast) &&
          only_feeds_dots(body, user->result(), k_contiguous, transposed))
        continue;
      if (user->op == Op::trans && v->type.rank() == 2 &&
          only_feeds_dots(body, user->result(), k_contiguous, !transposed))
        continue;
      return false;
    }
    return true;
  }

  // Whether `load` reads OCP MX packed values (f4e2m1, or e8m0 scales) that reach a
  // tl::dot of the body through their upcast (decompose_scaled_dots: bitcasts, nibble
  // shifts, joins, multiplies): Triton's pipeliner stages tl.dot_scaled's packed operand
  // and its scales too. The buffer is read back in the upcast's own layout, a row of
  // bytes at a time (K-contiguous), so the dot's reading rule does not apply.
  static bool upcast_for_dot(ir::Block& body, const ir::Operation& load) {
    const DType d = load.result()->type.dtype;
    if (d != DType::f4e2m1 && d != DType::e8m0) return false;
    std::vector<const ir::Value*> work{load.result()};
    std::set<const ir::Value*> seen;
    while (!work.empty()) {
      const ir::Value* v = work.back();
      work.pop_back();
      for (auto [user, i] : ir::uses_of(body, v)) {
        if (user->op == Op::dot && i < 2) return true;
        if (user->op == Op::shared_store && i == 2) {  // (sm_90: the upcast B through its buffer)
          for (auto& r : body.ops)
            if (r->op == Op::shared_load && r->operands[0] == user->operands[0] && seen.insert(r->result()).second)
              work.push_back(r->result());
          continue;
        }
        if (!ir::is_pure(*user) || !user->regions.empty()) continue;
        // (a pure inline asm may give several results, each followed: the sm_90 e2m1
        // upcast's low and high nibbles)
        if (user->results.size() != 1 && user->op != Op::inline_asm_elementwise) continue;
        for (auto& r : user->results)
          if (seen.insert(r.get()).second) work.push_back(r.get());
      }
    }
    return false;
  }

  // Whether `v`, a rank-1 tile, reaches (through elementwise ops, then expand_dims or a
  // reshape to rank 2 and a broadcast) an elementwise op of the body with an operand
  // computed there from a tl::dot's result: a per-row statistic applied to an accumulator,
  // the attention backward's LSE and Delta (exp2(s - lse[None, :]), dp - delta[None, :]).
  // Held in registers, such a tile is loaded in its own coalesced layout and spread to the
  // accumulator's columns by warp shuffles every iteration (dK/dV at 64x64 D=64 on sm_90:
  // 32 shuffles a lane, with their copies and selects); staged, it is read back from
  // shared memory straight in the layout the broadcast wants, as Triton's pipeliner
  // stages every pipelined load and reads it in its user's layout.
  // Only a dot whose operands the target reads through descriptors (sm_90's wgmma:
  // PipelineOptions::stage_broadcast_rows).
  bool broadcast_into_dot_result(ir::Block& body, const ir::Value* v) {
    if (v->type.rank() != 1 || !o_.dot_reads_descriptors) return false;
    auto from_dot = [&](const ir::Operation& d) { return d.op == Op::dot && o_.dot_reads_descriptors(d); };
    std::vector<const ir::Value*> work{v};
    std::set<const ir::Value*> seen{v};
    while (!work.empty()) {
      const ir::Value* x = work.back();
      work.pop_back();
      for (auto [user, i] : ir::uses_of(body, x)) {
        if (user->results.size() != 1 || !user->regions.empty() || !ir::is_pure(*user)) continue;
        const ir::Value* r = user->result();
        if (x->type.rank() == 2 && ir::has_trait(user->op, ir::kElementwise))
          for (size_t j = 0; j < user->operands.size(); ++j)
            if (int(j) != i && user->operands[j]->type.rank() == 2 &&
                ir::computed_in_block_from(body, user->operands[j], from_dot))
              return true;
        const bool follow = ((user->op == Op::expand_dims || user->op == Op::reshape) && x->type.rank() == 1 &&
                             r->type.rank() == 2) ||
                            (user->op == Op::broadcast && x->type.rank() == 2) ||
                            (ir::has_trait(user->op, ir::kElementwise) && r->type.shape == x->type.shape);
        if (follow && seen.insert(r).second) work.push_back(r);
      }
    }
    return false;
  }

  // Whether every dot `v` feeds (through transposes) reads its staged operands through
  // matrix descriptors (PipelineOptions::dot_reads_descriptors). A cast on the way needs
  // the tile in registers: a descriptor reads the buffer in the dot's own type.
  bool all_dots_read_descriptors(ir::Block& body, const ir::Value* v) {
    if (!o_.dot_reads_descriptors) return false;
    for (auto [user, i] : ir::uses_of(body, v)) {
      if (user->op == Op::dot && i < 2 && o_.dot_reads_descriptors(*user)) continue;
      if (user->op == Op::trans && all_dots_read_descriptors(body, user->result())) continue;
      return false;
    }
    return true;
  }

  // A load whose value only feeds tl::dot, staged through a one-stage shared buffer of
  // the compiler's own (the store and read a user writes with tl::shared, samples/gemm's
  // idiom), when the target can copy it there directly and the stages fit: the dot then
  // reads its operand from shared memory, and the load becomes copies issued iterations
  // ahead like the user's. `scratch`: shared bytes to leave free (for the conversions of
  // the loop's other dot operands). Returns the store (the plan's shared form), or null.
  ir::Operation* stage_for_dot(ir::Operation& loop, LoadPlan& plan, int64_t scratch) {
    ir::Operation& load = *plan.load;
    ir::Block& body = *loop.regions[0];
    bool k_contiguous = true;
    if (o_.wave_size <= 1 || load.parent != &body) return nullptr;
    const bool upcast = upcast_for_dot(body, load);
    // (a row statistic broadcast into an accumulator is read back in the broadcast's
    // layout, the accumulator's columns, as Triton reads it: no dot reading rule applies)
    const bool row = !upcast && o_.stage_broadcast_rows && broadcast_into_dot_result(body, load.result());
    if (!upcast && !row && !only_feeds_dots(body, load.result(), k_contiguous)) return nullptr;
    // Copied as it is, or transposed (contiguous along dim 0, not the last): the
    // buffer's rows then run along the other dim, which flips which dim is contiguous.
    const bool transposed = !upcast && !row && o_.copy_transposed && !copyable(load) && load.result()->type.rank() == 2 &&
                            copyable(load, 0) && transposable(load.result(), true);
    if (!copyable(load) && !transposed) return nullptr;
    if (transposed) {
      // Only where every use reads it K-contiguous once transposed (every use N-contiguous
      // as it is). A tile that feeds one dot as it is and another transposed (the
      // backward's Q^T and K^T) was measured slower staged where mma.sync reads it: the
      // backward kernels fell from 0.79 to 0.52 of Triton's on the H100, spilling more.
      // Where every dot it feeds reads its operands through matrix descriptors (sm_90's
      // wgmma), the one stage serves both ways: each dot gets a read of its own
      // (split_dot_operand_reads), the transposed one by the descriptor's transpose bit.
      k_contiguous = true;
      only_feeds_dots(body, load.result(), k_contiguous, /*transposed=*/true);
      if (!k_contiguous && !all_dots_read_descriptors(body, load.result())) return nullptr;
    }
    // An operand whose rows run along M or N (an N-contiguous B) is read across them:
    // only where the target has a transposing read of shared tiles at its width, else
    // the dot would read it an element at a time where its layout conversion reads wide.
    const int bits = bit_width(load.result()->type.dtype);
    if (!k_contiguous && std::find(o_.transposed_dot_read_bits.begin(), o_.transposed_dot_read_bits.end(), bits) ==
                             o_.transposed_dot_read_bits.end())
      return nullptr;
    const ir::Type t = load.result()->type;
    // (e2m1 tiles count a byte an element as they are stored, two codes a byte, and are
    // also held upcast to bf16 where the dot reads them: a buffer of their own on sm_90, a
    // conversion's scratch elsewhere. Uncounted, gfx942's MoE K loop staged its weights
    // and then fit no second stage at all.)
    const int64_t upcast_bytes = upcast && t.dtype == DType::f4e2m1 ? t.numel() * 4 : 0;
    if (!fits_shared(t.numel() * std::max(1, byte_width(t.dtype)) * loop_stages_ + scratch + upcast_bytes)) return nullptr;
    ir::Operation* copy = &load;
    if (transposed) {
      // The load again with every operand's address math rebuilt transposed, before it;
      // the old load goes once its uses read the buffer.
      ir::Builder before(body);
      before.before(load);
      ir::ValueMap map;
      copy = transposed_expr(load.result(), loop, before, map)->def;
      plan.load = copy;
      plan.slice.clear();
      for (ir::Value* v : copy->operands) slice_of(v, loop, *copy, plan.slice);
    }
    const ir::Type ct = copy->result()->type;
    ir::Builder pre(*loop.parent);
    pre.before(loop);
    ir::Value* buf = pre.create1(Op::shared_alloc, {}, ir::Type::shared_buffer(ct.dtype, ct.shape, 1), load.loc);
    ir::Builder at(body);
    at.after(*copy);
    ir::Value* zero = at.constant(DType::i32, 0, load.loc);
    ir::Operation& store = at.create(Op::shared_store, {buf, zero, copy->result()}, {}, load.loc);
    ir::Value* read = at.create1(Op::shared_load, {buf, zero}, ct, load.loc);
    if (transposed) {
      ir::Operation& tr = at.create(Op::trans, {read}, {t}, load.loc);
      tr.ints = {1, 0};
      read = tr.result();
    }
    for (auto [user, i] : ir::uses_of(body, load.result()))
      if (user != &store) user->operands[size_t(i)] = read;
    if (transposed) body.ops.erase(body.ops.begin() + std::ptrdiff_t(index_in(body, &load)));
    multi_buffered_.insert(buf->def);
    return &store;
  }

  // Whether `v` (rank 2; `root`: the load itself) can be rebuilt transposed by
  // transposed_expr: made of splats, broadcasts, reshapes of rank-1 tiles (expand_dims)
  // and elementwise pure ops, down to rank-1 or scalar values.
  static bool transposable(const ir::Value* v, bool root = false) {
    if (v->type.rank() != 2) return true;
    const ir::Operation* d = v->def;
    if (!d || d->results.size() != 1 || !d->regions.empty()) return false;
    if (d->op == Op::reshape) return d->operands[0]->type.rank() <= 1;
    if (!(root && d->op == Op::load) && d->op != Op::splat && d->op != Op::broadcast &&
        !(ir::is_pure(*d) && ir::has_trait(d->op, ir::kElementwise)))
      return false;
    for (const ir::Value* o : d->operands)
      if (!transposable(o)) return false;
    return true;
  }

  // `v` (rank 2) computed again as its transpose, at `at`: each op of its expression
  // cloned with its operands transposed and its result's two dims swapped (a splat, a
  // broadcast or an elementwise op means the same on the swapped shape; a reshape of a
  // rank-1 tile to [n, 1] becomes one to [1, n]).
  ir::Value* transposed_expr(ir::Value* v, ir::Operation& loop, ir::Builder& at, ir::ValueMap& map) {
    if (v->type.rank() != 2) return v;
    if (map.contains(v)) return map.lookup(v);
    ir::Operation* d = v->def;
    ir::ValueMap operands;
    for (ir::Value* o : d->operands) operands.map(o, transposed_expr(o, loop, at, map));
    std::unique_ptr<ir::Operation> c = ir::clone(*d, operands);
    std::swap(c->results[0]->type.shape[0], c->results[0]->type.shape[1]);
    if (c->op == Op::hint && c->ints.size() == 2) std::swap(c->ints[0], c->ints[1]);  // its facts are per dim
    ir::Value* r = c->result();
    at.insert(std::move(c));
    map.map(v, r);
    return r;
  }

  // Whether the shared buffers live inside the loop being pipelined (at most together:
  // passes::live_shared_bytes), those it multi-buffers at its stage count and `extra`
  // more bytes fit the target's shared memory. (The multi-buffered ones are counted
  // apart: pipelined, each is live over the whole loop, a TMA copy's buffer made in the
  // body included.)
  bool fits_shared(int64_t extra) {
    if (o_.shared_bytes_limit <= 0) return true;
    int64_t staged = 0;
    for (const ir::Operation* alloc : multi_buffered_) {
      const ir::Type& t = alloc->result()->type;
      staged += t.numel() * byte_width(t.dtype) * loop_stages_;
    }
    auto others = [&](const ir::Operation& alloc) {
      const ir::Type& t = alloc.result()->type;
      return multi_buffered_.count(&alloc) ? int64_t(0) : t.numel() * byte_width(t.dtype) * t.stages;
    };
    return passes::live_shared_bytes(f_, loop_, others) + staged + extra <= o_.shared_bytes_limit;
  }

  // Whether the GPU can issue `load` as direct copies: passes::direct_copy_widths, the
  // rule plan_copies applies once layouts exist (it also knows the stage's swizzle
  // vector: should it refuse every width, it loads and stores instead), and no `other`
  // but zero (AMD's copy fills masked-off chunks with 0).
  // `dim`: the dim the copies run along (-1: the last; 0 for a copy of the transpose).
  bool copyable(const ir::Operation& load, int dim = -1) {
    if (load.operands.size() > 2 && !ir::is_zero_constant(load.operands[2])) return false;
    if (o_.direct_to_shared_widths.empty()) return o_.wave_size <= 1;  // the CPU copies anything; a GPU without copies nothing
    passes::DirectCopyQuery q;
    q.ptr = load.operands[0];
    q.mask = load.operands.size() > 1 ? load.operands[1] : nullptr;
    q.dim = dim;
    q.target_widths.assign(o_.direct_to_shared_widths.begin(), o_.direct_to_shared_widths.end());
    q.wave_size = o_.wave_size;
    return !passes::direct_copy_widths(*axis_, q).empty();
  }

  static size_t index_in(const ir::Block& b, const ir::Operation* op) {
    for (size_t i = 0; i < b.ops.size(); ++i)
      if (b.ops[i].get() == op) return i;
    return b.ops.size();
  }

  // Plans the TMA copy `op` of `loop`'s body (appended to `tmas`), or says why not. `fed`:
  // the loop pipelines it (its own num_stages, or the copy feeds a dot); `writes`: the
  // loop stores or atomically updates memory.
  std::string tma_plan(ir::Operation& loop, ir::Operation& op, bool fed, bool writes, std::vector<TmaPlan>& tmas) {
    ir::Block& body = *loop.regions[0];
    const std::string at = where(op.loc);
    if (op.parent != &body) return fmt::format("TMA load at {} is inside a branch or an inner loop", at);
    if (!fed)
      return fmt::format("TMA load at {} does not feed a tl::dot (the launch's num_stages pipelines the loads of "
                         "tl::dot operands; tl::num_stages on the loop pipelines every load)", at);
    // (the map's tensor may be what a store writes: the map is not the store's pointer)
    if (writes) return fmt::format("TMA load at {}: the loop writes memory, which the copy ahead might read", at);
    ir::Value* buf = op.operands[0];
    ir::Operation* alloc = buf->def;
    if (!alloc || alloc->op != Op::shared_alloc || alloc->parent != &body || buf->type.stages != 1 ||
        !ir::is_zero_constant(op.operands[1]))
      return fmt::format("TMA load at {} is not into a one-stage buffer of its own", at);
    // Every other access of the buffer is a read after the copy in the same iteration.
    const size_t copy_at = index_in(body, &op);
    for (auto [user, i] : ir::uses_of(f_.body, buf)) {
      if (user == &op) continue;
      if (user->op != Op::shared_load || user->parent != &body || index_in(body, user) <= copy_at)
        return fmt::format("TMA load at {}: its buffer is used otherwise than read after it", at);
    }
    TmaPlan p{&op, alloc, {}};
    for (size_t i = 2; i < op.operands.size(); ++i)
      if (std::string why = slice_of(op.operands[i], loop, op, p.slice); !why.empty()) return why;
    multi_buffered_.insert(alloc);
    if (!fits_shared(0)) {
      multi_buffered_.erase(alloc);
      return fmt::format("TMA load at {}: its stages do not fit the target's shared memory", at);
    }
    tma_buffers_.insert(buf);
    tmas.push_back(std::move(p));
    return "";
  }

  // Returns the loop as it now is (a new op when rebuilt).
  ir::Operation* pipeline(ir::Operation& loop) {
    const bool own = loop.i0 > 0;  // tl::num_stages on the loop; else the launch's
    const int asked = own ? int(loop.i0) : o_.num_stages;
    if (asked <= 1) return &loop;
    std::string head = fmt::format("pipelined: loop at {} num_stages={}:", where(loop.loc), asked);
    auto decline = [&](const std::string& why) {
      remarks_.push_back(fmt::format("{} no ({})", head, why));
      return &loop;
    };
    std::string not_chosen;
    if (loop_num_stages(loop, o_.num_stages, &not_chosen) <= 1) return decline(not_chosen);
    const int number = numbers_.count(&loop) ? numbers_.at(&loop) : -1;
    const auto limit = o_.loop_limits.find(number);
    const bool limited = limit != o_.loop_limits.end();
    const int n = limited ? std::min(asked, limit->second.max_stages) : asked;
    if (n <= 1) return decline("its stages did not fit the target's shared memory");
    // The launch's num_stages pipelines the loads that feed a tl::dot only (Triton's
    // loadOpsToIndirectionLevel); the loop's own, every load it can.
    std::set<const ir::Operation*> dot_fed;
    if (!own) dot_fed = loads_feeding_dots(loop);
    loop_stages_ = n;
    loop_ = &loop;
    multi_buffered_.clear();
    axis_.emplace(f_);  // of the function as it is now (earlier loops may have been rebuilt)
    ir::Block& body = *loop.regions[0];

    bool own_copies = false;
    std::vector<const ir::Operation*> writes;
    ir::walk(body, [&](ir::Operation& op) {
      own_copies |= op.op == Op::global_load_to_shared || op.op == Op::async_wait;
      if (op.op == Op::store || op.op == Op::atomic_rmw || op.op == Op::atomic_cas || op.op == Op::tensor_map_store)
        writes.push_back(&op);
    });
    if (own_copies) return decline("the loop issues its own asynchronous copies");
    // The prologue, the "iteration k ahead exists" tests and the unrolled trips count
    // upward; a loop that may run downward (or whose step may be 0) runs as written.
    if (axis_->get(loop.operands[2]).range.lo <= 0) return decline("its step is not known to be positive");

    std::vector<LoadPlan> plans;
    std::vector<std::string> declined;
    ir::walk(body, [&](ir::Operation& op) {
      if (op.op != Op::load) return;
      if (ir::access_flags(op).is_volatile) {  // it must read memory when the program says, not an iteration early
        declined.push_back(fmt::format("load at {} is volatile", where(op.loc)));
        return;
      }
      if (op.parent != &body) {
        declined.push_back(fmt::format("load at {} is inside a branch or an inner loop", where(op.loc)));
        return;
      }
      if (!own && !dot_fed.count(&op)) {
        declined.push_back(fmt::format("load at {} does not feed a tl::dot (the launch's num_stages pipelines the "
                                       "loads of tl::dot operands; tl::num_stages on the loop pipelines every load)",
                                       where(op.loc)));
        return;
      }
      LoadPlan p{&op, {}, nullptr};
      std::string why;
      for (ir::Value* v : op.operands)
        if (why.empty()) why = slice_of(v, loop, op, p.slice);
      const ir::Value* arg = pointer_argument(op.operands[0]);
      for (const ir::Operation* w : writes) {
        if (!why.empty()) break;
        const ir::Value* warg = pointer_argument(w->operands[0]);
        if (!arg || !warg || arg == warg)
          why = fmt::format("load at {} may read what the {} at {} writes", where(op.loc), op_name(w->op), where(w->loc));
      }
      if (!why.empty()) {
        declined.push_back(why);
        return;
      }
      plans.push_back(std::move(p));
    });
    std::vector<TmaPlan> tmas;
    tma_buffers_.clear();
    tma_allocs_.clear();
    ir::walk(body, [&](ir::Operation& op) {
      if (op.op != Op::tensor_map_load || op.i1 != 0) return;
      if (std::string why = tma_plan(loop, op, own || dot_fed.count(&op), !writes.empty(), tmas); !why.empty())
        declined.push_back(why);
    });
    if (plans.empty() && tmas.empty())
      return decline(declined.empty() ? "no load in the loop body" : declined.front());
    int staged = 0;
    for (auto& p : plans) p.store = shared_destination(loop, *p.load);
    for (auto& p : plans) {
      if (p.store) continue;
      // The dot operands left in registers reach their layouts through shared memory
      // (a conversion's scratch, the size of the largest): room for it stays.
      int64_t scratch = 0;
      for (auto& q : plans) {
        bool k_contiguous = true;
        const ir::Type& t = q.load->result()->type;
        if (&q != &p && !q.store && only_feeds_dots(*loop.regions[0], q.load->result(), k_contiguous))
          scratch = std::max(scratch, t.numel() * byte_width(t.dtype));
      }
      if ((p.store = stage_for_dot(loop, p, scratch))) ++staged;
    }

    // One stage more for a dot left in flight across iterations (PipelineOptions::
    // dot_may_run_async), where the program's shared memory has room for it.
    buffers_ = n;
    bool async_dot = false;
    if (o_.dot_may_run_async && (!limited || limit->second.async_dot_stage))
      for (auto& op : body.ops) {
        // (B from the stages, and A too or, as plan_async_dots asks, a 16-bit tile in
        // registers computed from the result of a dot the iteration waits for, when this
        // dot accumulates into a carried value: the attention backward's dV and dK; or,
        // tl::dot_scaled's upcast of a staged packed tile into a dot decompose_scaled_dots
        // transposed, whose accumulator is carried transposed: samples/moe's gate and up,
        // each in flight while the other's A is upcast; a single such dot (the down
        // projection) in flight until the next iteration's upcast is about to write its A,
        // where plan_async_dots waits for it)
        if (op->op != Op::dot || !o_.dot_may_run_async(*op)) continue;
        const ir::Value* a = op->operands[0];
        const ir::Value* acc = op->operands[2];
        if (acc->def && acc->def->op == Op::trans) acc = acc->def->operands[0];
        auto staged_read = [&](const ir::Operation& d) {
          return d.op == Op::shared_load && reads_staged_buffer(d.result(), plans);
        };
        const bool register_a = bit_width(a->type.dtype) == 16 && carried(body, acc) &&
                                (computed_from_waited_dot(body, a) || ir::computed_in_block_from(body, a, staged_read));
        async_dot |= reads_staged_buffer(op->operands[1], plans) && (reads_staged_buffer(a, plans) || register_a);
      }
    if (async_dot) {
      int64_t stage_more = 0;  // one more stage of every buffer this loop multi-buffers
      for (const ir::Operation* buf : multi_buffered_) {
        const ir::Type& t = buf->result()->type;
        stage_more += t.numel() * byte_width(t.dtype);
      }
      if (fits_shared(stage_more)) buffers_ = n + 1;
    }
    std::vector<const ir::Operation*> allocs;  // (the buffers it stages into, each once, for the report)
    for (auto& p : plans)
      if (p.store && std::find(allocs.begin(), allocs.end(), p.store->operands[0]->def) == allocs.end())
        allocs.push_back(p.store->operands[0]->def);
    ir::Operation* now = transform(loop, n, plans, tmas);
    for (const ir::Operation* a : tma_allocs_) allocs.push_back(a);
    if (buffers_ > n) now->i1 = ir::kAsyncDotStage;
    ++pipelined_;
    int to_shared = int(std::count_if(plans.begin(), plans.end(), [](auto& p) { return p.store != nullptr; }));
    const int tma = int(tmas.size());
    std::string line = fmt::format("{} yes ({} load{} into registers, {} into shared memory", head,
                                   int(plans.size()) - to_shared, plans.size() - to_shared == 1 ? "" : "s", to_shared);
    if (staged > 0) line += fmt::format(", {} of them staged there for tl::dot by the compiler", staged);
    if (tma > 0) line += fmt::format(", {} TMA cop{} on mbarriers", tma, tma == 1 ? "y" : "ies");
    if (buffers_ > n) line += fmt::format(", {} buffers a tile for the asynchronous dot", buffers_);
    else if (async_dot) line += ", no room for a buffer more: its dot stays synchronous";
    else if (limited && !limit->second.async_dot_stage)
      line += ", no buffer more for an asynchronous dot: it did not fit the target's shared memory";
    if (n < asked)
      line += fmt::format(", at {} stages: {} did not fit the target's shared memory", n, asked);
    line += ")";
    if (to_shared + tma > 0 && staged_) staged_->push_back(StagedLoop{number, now->loc, n, buffers_, std::move(allocs)});
    for (auto& d : declined) line += fmt::format("; not pipelined: {}", d);
    remarks_.push_back(line);
    return now;
  }

  // Whether `v` (a dot operand, through a transpose) is a read of a buffer one of `plans`
  // copies into.
  // Whether `v` is one of `body`'s carried values (not its induction variable).
  static bool carried(const ir::Block& body, const ir::Value* v) { return v->owner == &body && v->index >= 1; }

  // Whether `v` is computed in `body` from the result of a dot that does not accumulate
  // into a carried value (its result is read in the iteration, which waits for it).
  static bool computed_from_waited_dot(const ir::Block& body, const ir::Value* v) {
    return ir::computed_in_block_from(
        body, v, [&](const ir::Operation& d) { return d.op == Op::dot && !carried(body, d.operands[2]); });
  }

  bool reads_staged_buffer(const ir::Value* v, const std::vector<LoadPlan>& plans) const {
    while (v->def && v->def->op == Op::trans) v = v->def->operands[0];  // (Q^T read transposed again)
    if (!v->def || v->def->op != Op::shared_load) return false;
    if (tma_buffers_.count(v->def->operands[0])) return true;
    for (auto& p : plans)
      if (p.store && p.store->operands[0] == v->def->operands[0]) return true;
    return false;
  }

  // The load's operands for the iteration whose induction variable `map` gives, masked
  // off where `pred` (scalar i1: that iteration exists) is false.
  std::vector<ir::Value*> operands_ahead(ir::Builder& b, const ir::Operation& load, ir::ValueMap& map, ir::Value* pred) {
    ir::Value* ptr = map.lookup(load.operands[0]);
    const ir::Operation& loop = *load.parent->parent;
    if (load.operands.size() > 1 &&
        mask_bounds_iteration(load.operands[1], load.parent->args[0].get(), loop.operands[1], *axis_)) {
      std::vector<ir::Value*> ops{ptr, map.lookup(load.operands[1])};
      if (load.operands.size() > 2) ops.push_back(map.lookup(load.operands[2]));
      return ops;
    }
    ir::Value* mask = pred;
    if (!ptr->type.is_scalar()) mask = b.create1(Op::splat, {pred}, ptr->type.with_dtype(DType::i1), load.loc);
    if (load.operands.size() > 1)
      mask = b.create1(Op::band, {map.lookup(load.operands[1]), mask}, mask->type, load.loc);
    std::vector<ir::Value*> ops{ptr, mask};
    if (load.operands.size() > 2) ops.push_back(map.lookup(load.operands[2]));
    return ops;
  }

  // Clones the slices' ops (in body order) at `b`, reading the induction variable as `iv`.
  void clone_slices(ir::Builder& b, ir::Block& body, const std::set<ir::Operation*>& slice, ir::Value* iv,
                    ir::ValueMap& map) {
    map.map(body.args[0].get(), iv);
    std::vector<const ir::Operation*> ordered;  // (the builder may be inserting into `body`)
    for (auto& op : body.ops)
      if (slice.count(op.get())) ordered.push_back(op.get());
    for (const ir::Operation* op : ordered) b.insert(ir::clone(*op, map));
  }

  ir::Operation* transform(ir::Operation& loop, int n, std::vector<LoadPlan>& plans, std::vector<TmaPlan>& tmas) {
    ir::Block& body = *loop.regions[0];
    ir::SrcLoc loc = loop.loc;
    ir::Value *lb = loop.operands[0], *ub = loop.operands[1], *step = loop.operands[2];
    std::set<ir::Operation*> slice;
    for (auto& p : plans) slice.insert(p.slice.begin(), p.slice.end());
    for (auto& p : tmas) slice.insert(p.slice.begin(), p.slice.end());
    const ir::Type i32{DType::i32, DType::i32, {}}, i64{DType::i64, DType::i64, {}}, i1{DType::i1, DType::i1, {}};

    // Whether iteration `k` iterations after the one at `iv` exists: (ub - iv) > k * step,
    // in 64 bits so that neither side wraps near the ends of the i32 range.
    auto exists_ahead = [&](ir::Builder& b, ir::Value* iv, int k) {
      ir::Value* left = b.create1(Op::sub, {b.create1(Op::cast, {ub}, i64, loc), b.create1(Op::cast, {iv}, i64, loc)}, i64, loc);
      ir::Value* right = b.create1(Op::mul, {b.create1(Op::cast, {step}, i64, loc), b.constant(DType::i64, k, loc)}, i64, loc);
      ir::Operation& c = b.create(Op::cmp, {left, right}, {i1}, loc);
      c.i0 = int64_t(CmpPred::gt);
      return c.result();
    };
    auto iv_ahead = [&](ir::Builder& b, ir::Value* iv, int k) {
      return k == 0 ? iv : b.create1(Op::add, {iv, b.create1(Op::mul, {step, b.constant(DType::i32, k, loc)}, i32, loc)}, i32, loc);
    };

    // Prologue: iterations 0..n-2.
    ir::Builder pre(*loop.parent);
    pre.before(loop);
    // TMA: each buffer before the loop with its stages, and the mbarriers (one a stage,
    // each expecting one arrival a copy of the stage) initialised.
    ir::Value* mbarriers = nullptr;
    if (!tmas.empty()) {
      for (auto& p : tmas) {
        const ir::Type& t = p.alloc->result()->type;
        ir::Value* buf = pre.create1(Op::shared_alloc, {}, ir::Type::shared_buffer(t.dtype, t.shape, buffers_), p.alloc->loc);
        buf->def->shared = p.alloc->shared;
        ir::replace_all_uses(body, p.alloc->result(), buf);
        erase(body, p.alloc);
        p.alloc = buf->def;
        tma_allocs_.push_back(buf->def);
      }
      mbarriers = pre.create1(Op::shared_alloc, {}, ir::Type::shared_buffer(DType::i64, {1}, buffers_), loc);
      ir::Operation& init = pre.create(Op::mbarrier, {mbarriers}, {}, loc);
      init.i0 = ir::kMbarrierInit;
      init.i1 = int64_t(tmas.size());
    }
    // The copy of `p` into `stage` for the iteration whose values `map` gives, where `pred`.
    auto issue = [&](ir::Builder& b, const TmaPlan& p, ir::Value* stage, ir::ValueMap& map, ir::Value* pred) -> ir::Operation& {
      std::vector<ir::Value*> ops{p.copy->operands[0], stage};
      for (size_t i = 2; i < p.copy->operands.size(); ++i) ops.push_back(map.lookup(p.copy->operands[i]));
      ops.push_back(mbarriers);
      ops.push_back(pred);
      ir::Operation& c = b.create(Op::tensor_map_load, ops, {}, p.copy->loc);
      c.i1 = ir::kTensorMapIssue;
      return c;
    };
    std::vector<std::vector<ir::Value*>> first(plans.size());  // registers: the value of iteration k
    for (int k = 0; k < n - 1; ++k) {
      ir::Value* iv = iv_ahead(pre, lb, k);
      ir::Value* pred = exists_ahead(pre, lb, k);
      ir::ValueMap map;
      clone_slices(pre, body, slice, iv, map);
      for (size_t i = 0; i < plans.size(); ++i) {
        const ir::Operation& ld = *plans[i].load;
        auto ops = operands_ahead(pre, ld, map, pred);
        if (plans[i].store) {
          copy_into(pre, plans[i], pre.constant(DType::i32, k, loc), ops);
        } else {
          ir::Operation& c = pre.create(Op::load, ops, {ld.result()->type}, ld.loc);
          c.i0 = ld.i0;
          c.i1 = ld.i1;  // the access's cache modifier and eviction policy
          first[i].push_back(c.result());
        }
      }
      for (auto& p : tmas) issue(pre, p, pre.constant(DType::i32, k, loc), map, pred);
    }

    if (tmas.empty() && std::none_of(plans.begin(), plans.end(), [](auto& p) { return p.store != nullptr; }))
      return unroll_registers(loop, n, plans, slice, first, exists_ahead, iv_ahead);

    // Steady state (a loop with loads through shared memory). Register loads, if any:
    // carried values s_0..s_{n-2} (s_0 is this iteration's),
    // the loads of iteration i+n-1 issued at the top of the body.
    ir::Operation* yield = body.terminator();
    std::vector<std::vector<ir::Value*>> carried(plans.size());
    for (size_t i = 0; i < plans.size(); ++i)
      if (!plans[i].store)
        for (int s = 0; s < n - 1; ++s) carried[i].push_back(ir::add_carried_value(loop, first[i][size_t(s)]));
    // The stage this iteration reads (i mod n).
    ir::Value* stage = ir::add_carried_value(loop, pre.constant(DType::i32, 0, loc));
    // (TMA: the parity of the phase this iteration's stage's mbarrier is at)
    ir::Value* phase = tmas.empty() ? nullptr : ir::add_carried_value(loop, pre.constant(DType::i32, 0, loc));

    ir::Builder top(body);
    top.before(*body.ops.front());
    ir::Value* iv = body.args[0].get();
    // What iteration i+n-1 loads is computed where it is issued: "that iteration
    // exists" (pred) and the slices' ops cloned for it (map).
    ir::Value* pred = nullptr;
    ir::ValueMap map;
    auto compute_ahead = [&](ir::Builder& at) {
      pred = exists_ahead(at, iv, n - 1);
      map = ir::ValueMap();
      clone_slices(at, body, slice, iv_ahead(at, iv, n - 1), map);
    };
    // First the loads of iteration i+n-1 into registers (rotated through the carried
    // values), then the wait for this iteration's copies and, with 2 stages, the copies of
    // iteration i+n-1 (below). The register loads go before the wait, as Triton's AMD
    // pipeliner issues the next loads before waiting: they touch no shared memory, and
    // where the wait counts loads (AMD's vmcnt) they may stay in flight through it
    // (codegen/gpu/plan_wait_counts.cpp), where after it they would
    // be waited for at the next iteration's top anyway.
    if (n == 2 || std::any_of(plans.begin(), plans.end(), [](auto& p) { return !p.store; })) compute_ahead(top);
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans[i].store) continue;
      const ir::Operation& ld = *plans[i].load;
      ir::Operation& c = top.create(Op::load, operands_ahead(top, ld, map, pred), {ld.result()->type}, ld.loc);
      c.i0 = ld.i0;
      c.i1 = ld.i1;
      ir::replace_all_uses(body, ld.result(), carried[i][0]);
      // rotate: s_k <- s_{k+1}, s_{n-2} <- the load just issued
      for (int s = 0; s < n - 1; ++s)
        set_yield(loop, carried[i][size_t(s)], s + 1 < n - 1 ? carried[i][size_t(s + 1)] : c.result());
    }
    {
      // The copies of iteration i are the oldest in flight: the n-2 later iterations'
      // copies (one group per pipelined load each) may stay outstanding.
      int groups = 0;
      for (auto& p : plans) groups += p.store != nullptr;
      if (groups > 0) {
        ir::Operation& w = top.create(Op::async_wait, {}, {}, loc);
        w.i0 = int64_t(n - 2) * groups;
        w.i1 = ir::kWaitCountsCopies;
      }
      // The TMA copies of iteration i: every thread waits on the stage's mbarrier.
      if (!tmas.empty()) top.create(Op::mbarrier, {mbarriers, stage, phase}, {}, loc).i0 = ir::kMbarrierWait;
    }
    // The copies go into the stage that iteration i-1 read (stage (i+n-1) mod n), free
    // once the barrier after the wait has run (with a buffer more for an asynchronous dot,
    // (i+n-1) mod (n+1): the stage of iteration i-2, whose dots the barrier saw finished
    // everywhere, while i-1's may still be reading theirs). With 2 stages, right here, before the
    // iteration's own work: they land while it runs (at the end of the body they would be
    // waited for at the top of the next iteration, having overlapped nothing). With more, at the end of the
    // body, after the iteration's reads and dots are issued: the n-2 iterations between
    // issue and wait hide their latency anyway, and issuing them there keeps their
    // address arithmetic off the path to this iteration's first matrix instructions. H100,
    // mma.sync, samples/gemm bf16 128x256x64 3 stages 8 warps: 395 / 410 TFLOP/s at the
    // end against 386 / 403 here at 4096^3 / 8192^3 (the tutorial transcription 395 / 407
    // against 388 / 403); FP8 128x128x128 went the other way by 1-2 %
    // (bench/results/h100-2026-11-24-pipeliner).
    ir::Builder copies(body);
    if (n == 2) copies = top;
    else copies.before(*yield);
    ir::Value* nv = copies.constant(DType::i32, buffers_, loc);
    ir::Value* write_stage = copies.create1(
        Op::rem, {copies.create1(Op::add, {stage, copies.constant(DType::i32, n - 1, loc)}, i32, loc), nv}, i32, loc);
    if (n != 2) compute_ahead(copies);
    for (auto& p : plans)
      if (p.store)
        copy_into(copies, p, write_stage, operands_ahead(copies, *p.load, map, pred)).i0 = ir::kCopyIntoLastReadStage;
    for (auto& p : tmas) issue(copies, p, write_stage, map, pred).i0 = ir::kCopyIntoLastReadStage;
    {
      // Reads of the buffers read this iteration's stage, synchronized by the wait above.
      for (auto& p : plans) {
        if (!p.store) continue;
        ir::Value* buf = p.store->operands[0];
        buf->type.stages = buffers_;
        for (auto [user, i] : ir::uses_of(body, buf))
          if (user->op == Op::shared_load) {
            user->operands[1] = stage;
            user->i0 = 1;  // relaxed: the async_wait made the stage complete
          }
      }
      for (auto& p : tmas)
        for (auto [user, i] : ir::uses_of(body, p.alloc->result()))
          if (user->op == Op::shared_load) {
            user->operands[1] = stage;
            user->i0 = 1;  // relaxed: the mbarrier wait made the stage complete
          }
      // At the end of the body: the next stage to read.
      ir::Builder end(body);
      end.before(*yield);
      ir::Value* next = end.create1(Op::rem, {end.create1(Op::add, {stage, end.constant(DType::i32, 1, loc)}, i32, loc),
                                              end.constant(DType::i32, buffers_, loc)},
                                    i32, loc);
      set_yield(loop, stage, next);
      if (phase) {
        // The parity flips each time the stages wrap around to stage 0.
        ir::Operation& wraps = end.create(Op::cmp, {next, end.constant(DType::i32, 0, loc)}, {i1}, loc);
        wraps.i0 = int64_t(CmpPred::eq);
        ir::Value* flipped = end.create1(Op::bxor, {phase, end.constant(DType::i32, 1, loc)}, i32, loc);
        set_yield(loop, phase, end.create1(Op::select, {wraps.result(), flipped, phase}, i32, loc));
      }
      // After the loop no copy may still be landing: the buffer's memory may be reused.
      // (Every TMA copy issued was for an iteration that ran and waited for it; the
      // mbarriers are invalidated once no thread waits on them: insert_barriers.)
      ir::Builder after(*loop.parent);
      after.after(loop);
      if (std::any_of(plans.begin(), plans.end(), [](auto& p) { return p.store != nullptr; }))
        after.create(Op::async_wait, {}, {}, loc).i0 = 0;
      if (mbarriers) after.create(Op::mbarrier, {mbarriers}, {}, loc).i0 = ir::kMbarrierInval;
    }
    // The original loads (and the stores of the shared form) go; what only they used is
    // left to dead-code elimination.
    for (auto& p : plans) {
      if (p.store) erase(body, p.store);
      erase(body, p.load);
    }
    for (auto& p : tmas) erase(body, p.copy);
    return &loop;
  }

  // Loads into registers only: the loop is rebuilt unrolled by U = n-1 (modulo variable
  // expansion), so that the tile of iteration i lives in slot i mod U from its load to
  // its use and no register is copied between iterations (rotating n-1 carried tiles
  // would copy each every iteration, and a copy waits for its load: with n > 2 nothing
  // would stay in flight). Each trip runs sub-iterations j = 0..U-1 at iv0 + j*step, every
  // one but the first under "that iteration exists"; sub-iteration j uses slot j and
  // loads the iteration U ahead (slot j of the next trip) before the rest of its body.
  template <class Exists, class Ahead>
  ir::Operation* unroll_registers(ir::Operation& loop, int n, std::vector<LoadPlan>& plans,
                                  const std::set<ir::Operation*>& slice,
                                  const std::vector<std::vector<ir::Value*>>& first, Exists&& exists_ahead,
                                  Ahead&& iv_ahead) {
    ir::Block& body = *loop.regions[0];
    ir::SrcLoc loc = loop.loc;
    const int u = n - 1;
    const size_t carried = loop.results.size(), np = plans.size();
    ir::Value *lb = loop.operands[0], *step = loop.operands[2];
    const ir::Type i32{DType::i32, DType::i32, {}};
    ir::Builder pre(*loop.parent);
    pre.before(loop);
    ir::Value* trip_step = u == 1 ? step : pre.create1(Op::mul, {step, pre.constant(DType::i32, u, loc)}, i32, loc);
    std::vector<ir::Value*> inits(loop.operands.begin() + 3, loop.operands.end());
    for (size_t p = 0; p < np; ++p)
      for (int j = 0; j < u; ++j) inits.push_back(first[p][size_t(j)]);
    ir::Operation& nl = pre.create_for(lb, loop.operands[1], trip_step, inits, loc);
    ir::Block& nb = *nl.regions[0];
    ir::Value* iv0 = nb.args[0].get();
    std::vector<ir::Value*> cur;
    for (size_t c = 0; c < carried; ++c) cur.push_back(nb.args[1 + c].get());
    auto slot = [&](size_t p, int j) { return nb.args[1 + carried + p * size_t(u) + size_t(j)].get(); };
    std::vector<std::vector<ir::Value*>> next(np, std::vector<ir::Value*>(size_t(u)));
    ir::Builder at(nb);
    const ir::Operation* yield = body.terminator();

    // One iteration of the original body at `iv` into `b`, reading slot j; returns the
    // carried values it yields and the tiles it loads ahead.
    auto iteration = [&](ir::Builder& b, ir::Value* iv, int j, std::vector<ir::Value*>& ahead) {
      ir::Value* pred = exists_ahead(b, iv, n - 1);
      ir::ValueMap am;
      clone_slices(b, body, slice, iv_ahead(b, iv, n - 1), am);
      for (size_t p = 0; p < np; ++p) {
        const ir::Operation& ld = *plans[p].load;
        ir::Operation& c = b.create(Op::load, operands_ahead(b, ld, am, pred), {ld.result()->type}, ld.loc);
        c.i0 = ld.i0;
        c.i1 = ld.i1;
        ahead.push_back(c.result());
      }
      ir::ValueMap m;
      m.map(body.args[0].get(), iv);
      for (size_t c = 0; c < carried; ++c) m.map(body.args[1 + c].get(), cur[c]);
      for (size_t p = 0; p < np; ++p) m.map(plans[p].load->result(), slot(p, j));
      for (auto& op : body.ops) {
        if (op.get() == yield) continue;
        bool is_plan = std::any_of(plans.begin(), plans.end(), [&](auto& pl) { return pl.load == op.get(); });
        if (!is_plan) b.insert(ir::clone(*op, m));
      }
      std::vector<ir::Value*> out;
      for (ir::Value* v : yield->operands) out.push_back(m.lookup(v));
      return out;
    };

    for (int j = 0; j < u; ++j) {
      if (j == 0) {  // iv0 < ub: the loop's own condition
        std::vector<ir::Value*> ahead;
        cur = iteration(at, iv0, 0, ahead);
        for (size_t p = 0; p < np; ++p) next[p][0] = ahead[p];
        continue;
      }
      ir::Value* iv = at.create1(Op::add, {iv0, at.create1(Op::mul, {step, at.constant(DType::i32, j, loc)}, i32, loc)},
                                 i32, loc);
      std::vector<ir::Type> types;
      for (ir::Value* v : cur) types.push_back(v->type);
      for (size_t p = 0; p < np; ++p) types.push_back(slot(p, j)->type);
      ir::Operation& branch = at.create(Op::if_, {exists_ahead(at, iv0, j)}, types, loc);
      ir::Block& then_b = *branch.add_region();
      ir::Block& else_b = *branch.add_region();
      ir::Builder tb(then_b), eb(else_b);
      std::vector<ir::Value*> ahead;
      std::vector<ir::Value*> out = iteration(tb, iv, j, ahead);
      out.insert(out.end(), ahead.begin(), ahead.end());
      tb.create(Op::yield, out, {}, loc);
      std::vector<ir::Value*> same = cur;
      for (size_t p = 0; p < np; ++p) same.push_back(slot(p, j));
      eb.create(Op::yield, same, {}, loc);
      for (size_t c = 0; c < carried; ++c) cur[c] = branch.result(int(c));
      for (size_t p = 0; p < np; ++p) next[p][size_t(j)] = branch.result(int(carried + p));
    }
    std::vector<ir::Value*> yields = cur;
    for (size_t p = 0; p < np; ++p)
      for (int j = 0; j < u; ++j) yields.push_back(next[p][size_t(j)]);
    at.create(Op::yield, yields, {}, loc);

    for (size_t c = 0; c < carried; ++c) ir::replace_all_uses(f_.body, loop.result(int(c)), nl.result(int(c)));
    erase(*loop.parent, &loop);
    return &nl;
  }

  ir::Operation& copy_into(ir::Builder& b, const LoadPlan& p, ir::Value* stage, std::vector<ir::Value*> ops) {
    std::vector<ir::Value*> operands{p.store->operands[0], stage};
    operands.push_back(ops[0]);
    operands.push_back(ops[1]);  // (a zero `other` is what the copy fills anyway)
    ir::Operation& copy = b.create(Op::global_load_to_shared, operands, {}, p.load->loc);
    copy.i1 = ir::kCompilerCopy;  // the target picks the instruction
    return copy;
  }

  // Makes the loop yield `v` for the carried value whose body argument is `arg`.
  static void set_yield(ir::Operation& loop, ir::Value* arg, ir::Value* v) {
    loop.regions[0]->terminator()->operands[size_t(arg->index - 1)] = v;
  }

  static void erase(ir::Block& b, ir::Operation* op) {
    auto it = std::find_if(b.ops.begin(), b.ops.end(), [&](auto& o) { return o.get() == op; });
    if (it != b.ops.end()) b.ops.erase(it);
  }

  ir::Function& f_;
  const PipelineOptions& o_;
  std::vector<std::string>& remarks_;
  std::optional<AxisAnalysis> axis_;
  int loop_stages_ = 1;
  const ir::Operation* loop_ = nullptr;  // the loop being pipelined
  // The stages the loop's buffers get: num_stages, or one more for an asynchronous dot.
  int buffers_ = 1;
  // The buffers this loop's plans already multi-buffer (counted at loop_stages_ when the
  // next one is checked against the target's shared memory).
  std::set<const ir::Operation*> multi_buffered_;
  int pipelined_ = 0;

 public:
  std::unordered_map<const ir::Operation*, int> numbers_;  // for loop -> its number
  std::vector<StagedLoop>* staged_ = nullptr;              // pipeline_loops' report

 private:
  // This loop's TMA buffers (as its planned copies write them), and their allocations
  // before the loop once transformed.
  std::set<const ir::Value*> tma_buffers_;
  std::vector<const ir::Operation*> tma_allocs_;
};

}  // namespace

int loop_num_stages(const ir::Operation& loop, int launch_num_stages, std::string* why_not) {
  if (loop.i0 > 0) return int(loop.i0);
  if (launch_num_stages <= 1) return 1;
  auto no = [&](const char* why) {
    if (why_not)
      *why_not = fmt::format("the launch's num_stages pipelines innermost loops whose loads feed a tl::dot, as "
                             "Triton's does; {}: give it tl::num_stages({}) to pipeline it",
                             why, launch_num_stages);
    return 1;
  };
  bool inner_loop = false, dot = false;
  ir::walk(*loop.regions[0], [&](ir::Operation& op) { inner_loop |= op.op == Op::for_ || op.op == Op::while_; });
  if (inner_loop) return no("this loop contains a loop");
  for (auto& op : loop.regions[0]->ops) dot |= op->op == Op::dot;
  if (!dot) return no("this loop has no tl::dot in its body");
  if (loads_feeding_dots(loop).empty()) return no("no load in this loop's body feeds its tl::dot");
  return launch_num_stages;
}

int pipeline_loops(ir::Function& f, const PipelineOptions& o, std::vector<std::string>& remarks,
                   std::vector<StagedLoop>* staged) {
  Pipeliner p(f, o, remarks);
  p.staged_ = staged;
  return p.run();
}

}  // namespace tl::passes

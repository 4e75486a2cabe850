// plan_async_dots (passes.hpp): NVIDIA's warpgroup dots left in flight across a loop's
// iterations, and the proxy fences their operand reads need.
//
// A wgmma is issued, committed as a group, and completes later; wgmma.wait_group N waits
// until at most N of the warpgroup's groups are still in flight. Triton's pipeliner keeps
// one in flight (warp_group_dot_wait {pendings = 1} right after the dot): the tensor cores
// run iteration i's dot while the warps issue iteration i+1's copies and wait for its
// data. That is safe when:
//  - nothing but the next iteration's dot reads the accumulator in the loop (wgmma orders
//    the accumulator accesses of a chain of wgmmas itself); after the loop a dot_wait 0
//    gives the result back to everything else;
//  - no copy overwrites a stage an unfinished dot still reads. After the barrier at the
//    top of iteration i every warpgroup has passed its wait(1) of iteration i-1, so the
//    dots of iteration i-2 and earlier are complete everywhere, but i-1's may not be. The
//    copies issued in iteration i write stage (i + S - 1) mod B with S = num_stages: with
//    B = S + 1 buffers that is the stage of iteration i-2, free; with B = S it would be
//    i-1's, still being read. The pipeliner gives the buffers of a loop whose dots may
//    run asynchronously one stage more (Triton's numBuffers + 1 for mma v3) and marks the
//    loop (`for ... async_dot_stage`, ir::kAsyncDotStage); a loop without the mark keeps
//    its dots synchronous here.
//  - the registers hold it: a dot in flight keeps its accumulator and its A registers
//    until its group completes. Of a loop's candidates the most that fit a thread's
//    registers by the one estimate of them (register_pressure.hpp) stay in flight; none
//    where no choice fits.
// (The fences of the async proxy before the barriers: insert_shared_barriers.)
#include <algorithm>
#include <optional>
#include <set>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/register_pressure.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::gpu {
namespace {

// Registers a thread keeps for what register_pressure.hpp's estimate leaves out (addresses,
// indices, masks, loop counters). Measured, ptxas 12.8 on 110 sm_90 kernels (the attention
// sample's backward candidates, samples/moe, tutorial 03): 4 to 65 registers more than the
// estimate of the loop with its dots in flight; dK/dV 64x128 w8 D = 128 with no dot in
// flight, estimated 240, in 244 (246 causal), and with dK's alone in flight (240 too) it
// spilled 48 bytes causal: the boundary is not sharper than that.
constexpr int64_t kUncountedRegisters = 16;

// Whether `v`'s only use in `body` is `user`'s operand `index`.
bool only_use(ir::Block& body, const ir::Value* v, const ir::Operation* user, int index) {
  auto uses = ir::uses_of(body, v);
  return uses.size() == 1 && uses[0].first == user && uses[0].second == index;
}

// Whether `v` is computed in `body` from the result of a warpgroup dot that stays
// synchronous (its accumulator is not carried: make_async leaves it alone).
bool after_synchronous_dot(ir::Block& body, const ir::Value* v, const PlanTarget& t) {
  return ir::computed_in_block_from(body, v, [&](const ir::Operation& d) {
    const ir::Value* acc = d.op == Op::dot ? d.operands[2] : nullptr;
    return acc && (acc->owner != &body || acc->index < 1) &&
           recorded_dot_plan(*t.caps, d, t.num_warps, t.wave_size).warpgroup();
  });
}

// Whether `v` is computed in `body` by pure ops from reads of shared buffers (at least
// one; values from outside the body count as inputs), each read accepted by `read_ok`:
// the A operand a wgmma reads from registers that tl::dot_scaled's upcast recomputes each
// iteration (the two rules below ask it).
template <class ReadOk>
bool computed_from_shared_reads(const ir::Block& body, const ir::Value* v, ReadOk read_ok) {
  bool reads = false;
  std::vector<const ir::Value*> work{v};
  std::set<const ir::Value*> seen;
  while (!work.empty()) {
    const ir::Value* x = work.back();
    work.pop_back();
    if (!seen.insert(x).second || !x->def || x->def->parent != &body) continue;
    const ir::Operation& d = *x->def;
    if (d.op == Op::shared_load) {
      if (!read_ok(d)) return false;
      reads = true;
      continue;
    }
    // (a pure inline asm too: the sm_90 e2m1 upcast, decompose_scaled_dots)
    if (!ir::is_pure(d) || !d.regions.empty()) return false;
    for (const ir::Value* o : d.operands) work.push_back(o);
  }
  return reads;
}

// Whether `v` (a dot's A, 16-bit, in registers) is computed in `body` from reads of shared
// buffers (tl::dot_scaled's upcast of a staged packed tile, decompose_scaled_dots' swapped
// dot) that all come after the warpgroup dot before `dot` in the body, where the body
// has another warpgroup dot. Every warpgroup dot is followed by a wait (wait_group 1 when
// asynchronous, 0 when not), which completes every group but the newest: the one after
// the previous dot (or, for the body's first dot, the last dot's of the previous
// iteration) has completed this dot's previous group before the reads that recompute its
// A registers. (samples/moe's gate and up dots: gate's wgmma runs while up's weights are
// upcast, up's across the loop's head into the next gate upcast.)
bool upcast_after_previous_dot(ir::Block& body, const ir::Operation& dot, const ir::Value* v, const PlanTarget& t) {
  auto at = [&](const ir::Operation* op) {
    for (size_t i = 0; i < body.ops.size(); ++i)
      if (body.ops[i].get() == op) return int(i);
    return -1;
  };
  const int here = at(&dot);
  int previous = -1, dots = 0;
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const ir::Operation& o = *body.ops[i];
    if (o.op != Op::dot || !recorded_dot_plan(*t.caps, o, t.num_warps, t.wave_size).warpgroup()) continue;
    ++dots;
    if (int(i) < here) previous = int(i);
  }
  if (dots < 2 || here < 0) return false;
  return computed_from_shared_reads(body, v, [&](const ir::Operation& read) { return at(&read) > previous; });
}

// Where a wait for `dot`'s group must come in `body` so that the registers of its A (`v`,
// 16-bit) are not written while the wgmma reads them, where the body has no other
// warpgroup dot and `v` is computed by pure ops from reads of shared buffers (tl::
// dot_scaled's upcast of a staged packed tile into the dot decompose_scaled_dots
// transposed: samples/moe's down projection); null otherwise. A's registers are written
// by the op that computes them, found below the renamings (reshape, bitcast, trans: the
// same registers), and nothing before it in the body writes them: a wait_group 0 just
// before it keeps them unchanged until the wgmma has completed, and the dot of iteration
// i runs while iteration i+1 issues its copies, waits for its stage and upcasts (Triton's
// wait before the next write of a register operand).
const ir::Operation* a_registers_written(ir::Block& body, const ir::Operation& dot, const ir::Value* v,
                                       const PlanTarget& t) {
  for (auto& o : body.ops)
    if (o.get() != &dot && o->op == Op::dot && recorded_dot_plan(*t.caps, *o, t.num_warps, t.wave_size).warpgroup())
      return nullptr;
  if (!computed_from_shared_reads(body, v, [](const ir::Operation&) { return true; })) return nullptr;
  while (v->def && v->def->parent == &body &&
         (v->def->op == Op::reshape || v->def->op == Op::bitcast || v->def->op == Op::trans))
    v = v->def->operands[0];
  return v->def && v->def->parent == &body ? v->def : nullptr;
}

// How `dot` (in `loop`'s body) runs asynchronously, where the conditions above hold.
struct AsyncPlan {
  ir::Operation* dot = nullptr;
  ir::Operation* loop = nullptr;
  const ir::Operation* wait_before = nullptr;  // (where the dot's group must be complete)
  ir::Operation* acc_trans = nullptr;
  ir::Operation* result_trans = nullptr;
  const ir::Value* acc = nullptr;  // the carried accumulator (body argument)
  int slot = 0;                    // its carried index
  bool a_in_registers = false;
};

std::optional<AsyncPlan> plan_async(ir::Operation& dot, ir::Operation& loop, int num_stages, const PlanTarget& t) {
  // (the pipeliner says whether it gave the loop's buffers the stage more: kAsyncDotStage;
  // its shared operands must be read from those buffers, num_stages + 1 stages each)
  const int n = passes::loop_num_stages(loop, num_stages);
  if (n < 2 || loop.i1 != ir::kAsyncDotStage) return std::nullopt;
  ir::Block& body = *loop.regions[0];
  AsyncPlan p;
  p.dot = &dot;
  p.loop = &loop;
  // A may come from registers (the attention backward's P^T and dS^T, 16-bit), which the
  // wgmma reads until its group completes: only where they are computed from a
  // synchronous warpgroup dot's result, whose wait (wait_group 0) in the next iteration
  // completes this group before they are written again; or upcast from shared reads, with
  // the wait after the previous warpgroup dot (upcast_after_previous_dot) or, the body's
  // only one, a wait of its own before they are written (a_registers_written).
  for (int i = 0; i < 2; ++i) {
    auto m = match_descriptor_operand(dot.operands[size_t(i)], i);
    if (!m && i == 0 && bit_width(dot.operands[0]->type.dtype) == 16 &&
        (after_synchronous_dot(body, dot.operands[0], t) || upcast_after_previous_dot(body, dot, dot.operands[0], t))) {
      p.a_in_registers = true;
      continue;
    }
    if (!m && i == 0 && bit_width(dot.operands[0]->type.dtype) == 16 &&
        (p.wait_before = a_registers_written(body, dot, dot.operands[0], t))) {
      p.a_in_registers = true;
      continue;
    }
    if (!m || m->alloc->result()->type.stages != n + 1) return std::nullopt;
  }
  ir::Operation* yield = body.terminator();
  const ir::Value* acc = dot.operands[2];
  // A dot decompose_scaled_dots transposed (acc^T = b a^T + acc^T) takes the carried
  // accumulator transposed and gives its result back transposed: layout renamings, the
  // same registers.
  if (acc->def && acc->def->op == Op::trans && acc->def->parent == &body && only_use(body, acc, &dot, 2)) {
    auto uses = ir::uses_of(body, dot.result());
    if (uses.size() != 1 || uses[0].first->op != Op::trans) return std::nullopt;
    p.acc_trans = acc->def;
    p.result_trans = uses[0].first;
    acc = p.acc_trans->operands[0];
  }
  if (acc->owner != &body || acc->index < 1) return std::nullopt;  // the accumulator is carried
  p.acc = acc;
  p.slot = acc->index - 1;
  const ir::Value* out = p.result_trans ? p.result_trans->result() : dot.result();
  if (yield->operands[size_t(p.slot)] != out) return std::nullopt;  // ... from this dot
  if (!only_use(body, out, yield, p.slot) || !only_use(body, acc, p.acc_trans ? p.acc_trans : &dot, p.acc_trans ? 0 : 2))
    return std::nullopt;
  return p;
}

// Makes the planned dot asynchronous: marked, a wait leaving its group in flight after it,
// a full wait after the loop (and, where A's registers are recomputed in the body, one
// before they are written).
void make_async(ir::Function& f, const AsyncPlan& p) {
  ir::Operation& dot = *p.dot;
  ir::Operation& loop = *p.loop;
  ir::Block& body = *loop.regions[0];
  ir::Operation* yield = body.terminator();
  const ir::Value* acc = p.acc;
  const ir::Operation* wait_before = p.wait_before;
  dot.i1 = ir::kAsyncDot;
  ir::Builder in(body);
  if (wait_before) {
    // The carried accumulator through a wait for every group (the previous iteration's
    // dot) before A's registers are written again.
    // (before the accumulator's transposition too, where that comes first)
    auto before = [&](const ir::Operation* a, const ir::Operation* b) {
      for (auto& o : body.ops) {
        if (o.get() == a) return true;
        if (o.get() == b) return false;
      }
      return false;
    };
    if (p.acc_trans && before(p.acc_trans, wait_before)) wait_before = p.acc_trans;
    in.before(*const_cast<ir::Operation*>(wait_before));
    ir::Value* complete = in.create1(Op::dot_wait, {const_cast<ir::Value*>(acc)}, acc->type, dot.loc);
    complete->def->i0 = 0;
    complete->layout = acc->layout;
    if (p.acc_trans) p.acc_trans->operands[0] = complete;
    else dot.operands[2] = complete;
  }
  in.after(dot);
  ir::Value* pending = in.create1(Op::dot_wait, {dot.result()}, dot.result()->type, dot.loc);
  pending->def->i0 = 1;
  pending->layout = dot.result()->layout;
  if (p.result_trans) p.result_trans->operands[0] = pending;
  else yield->operands[size_t(p.slot)] = pending;
  ir::Value* result = loop.result(p.slot);
  ir::Builder after(*loop.parent);
  after.after(loop);
  ir::Value* done = after.create1(Op::dot_wait, {result}, result->type, dot.loc);
  done->layout = result->layout;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (&op == done->def) return;
    for (auto& x : op.operands)
      if (x == result) x = done;
  });
}

// The register A operands `in_flight` (a loop's planned dots) hold past their dots: each
// until the wait that completes its group, the next warpgroup dot's in the body (a wait
// after every one leaves at most the newest group in flight), across the back edge for
// the body's last, or its own wait before A is written again.
std::vector<HeldUntil> held_in_flight(ir::Block& body, const std::vector<const AsyncPlan*>& in_flight,
                                      const PlanTarget& t) {
  std::vector<const ir::Operation*> dots;
  for (auto& o : body.ops)
    if (o->op == Op::dot && recorded_dot_plan(*t.caps, *o, t.num_warps, t.wave_size).warpgroup())
      dots.push_back(o.get());
  std::vector<HeldUntil> held;
  for (const AsyncPlan* p : in_flight) {
    if (!p->a_in_registers) continue;
    const ir::Operation* until = p->wait_before;
    if (!until) {
      auto it = std::find(dots.begin(), dots.end(), p->dot);
      if (it == dots.end()) continue;
      until = std::next(it) == dots.end() ? dots.front() : *std::next(it);
    }
    held.push_back({p->dot->operands[0], until});
  }
  return held;
}

}  // namespace

int plan_async_dots(ir::Function& f, const PlanTarget& t, int num_stages) {
  std::vector<ir::Operation*> dots;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::dot && recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size).warpgroup()) dots.push_back(&op);
  });
  if (dots.empty()) return 0;
  // The dots that may run asynchronously, by loop (in program order).
  std::vector<std::pair<ir::Operation*, std::vector<AsyncPlan>>> loops;
  for (ir::Operation* dot : dots) {
    ir::Operation* loop = dot->parent->parent;
    if (!loop || loop->op != Op::for_) continue;
    auto p = plan_async(*dot, *loop, num_stages, t);
    if (!p) continue;
    if (loops.empty() || loops.back().first != loop) loops.push_back({loop, {}});
    loops.back().second.push_back(*p);
  }
  int async = 0;
  for (auto& [loop, plans] : loops) {
    // A dot in flight holds its registers (its accumulator, its A) until its group
    // completes, beside what the loop computes meanwhile. Of the loop's candidates the most
    // whose loop fits a thread's registers by register_pressure.hpp's estimate (less
    // kUncountedRegisters) stay in flight, the one that leaves the lower peak where not
    // all fit; where none fits, none: ptxas then spills, and more so with wgmmas in flight.
    // The attention backward's dK/dV at 64x128, D = 128, 8 warps: estimated 240 with no dot
    // in flight, 256 with dV's (its P^T held across dP^T's wgmma); ptxas spilled 132 bytes
    // causal with both in flight, 48 with dK's alone, nothing with neither (246 registers).
    ir::Block& body = *loop->regions[0];
    const int m = int(plans.size());
    int best = 0, best_count = 0;
    int64_t best_peak = 0;
    for (int mask = (1 << m) - 1; mask > 0; --mask) {
      std::vector<const AsyncPlan*> chosen;
      for (int i = 0; i < m; ++i)
        if (mask >> i & 1) chosen.push_back(&plans[size_t(i)]);
      const int64_t peak = peak_live_registers(*loop, t, held_in_flight(body, chosen, t));
      if (peak > t.caps->registers_per_thread - kUncountedRegisters) continue;
      const int count = int(chosen.size());
      if (count > best_count || (count == best_count && peak < best_peak)) best = mask, best_count = count, best_peak = peak;
    }
    for (int i = 0; i < m; ++i)
      if (best >> i & 1) {
        make_async(f, plans[size_t(i)]);
        ++async;
      }
  }
  return async;
}

}  // namespace tl::gpu

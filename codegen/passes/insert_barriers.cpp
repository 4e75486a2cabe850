// Barriers for shared memory (Triton's Membar, over tl's structured regions instead of
// a CFG). A program's threads share its shared buffers: a shared_load may read elements
// another thread's shared_store wrote (read after write), and a shared_store may
// overwrite elements another thread's earlier shared_load has still to read (write
// after read: the next iteration of a loop) or wrote (write after write). Each of those
// needs an Op::barrier between the two accesses; this pass inserts one before the
// second access unless a barrier (the user's tl::barrier() or one inserted earlier)
// already separates them. Two reads in a row need none.
//
// The state is, per address range (a buffer, or bytes of shared memory), whether reads
// or writes may be pending, that is made since the last barrier on some path to here.
// It flows in program order;
// - a barrier clears it;
// - an if runs both regions from the state before it and continues with their join;
// - a for's body starts from the join of the state before the loop and the state at the
//   end of its body (the back-edge), iterated to a fixed point before anything is
//   inserted; the state after the loop is that join too (zero iterations included).
//   When what is pending before the loop would cost the body barriers that the back-edge
//   alone would not, one barrier goes before the loop instead (run once, not per
//   iteration);
// - a while runs its condition region and body in turn from the join of the state
//   before it and the body's end, and continues with the condition region's end.
// Granularity is the whole buffer: which stage an access touches is a run-time value,
// so a double-buffered loop gets a barrier between its store and its load of the other
// stage, as Triton's does for one allocation.
//
// The analysis is one, run twice over the program (passes.hpp's SharedAccessModel says
// where each op's accesses fall):
// - here, on the tile IR of every target, with each buffer its own address (which
//   buffers a shared-typed value may be: passes::SharedBuffers): the user's and the
//   pipeliner's buffers;
// - on a GPU, once shared memory is allocated (codegen/gpu/insert_shared_barriers.cpp),
//   over byte ranges: what the planning added (staged dot operands, the scratch of
//   conversions and cross-warp reductions, buffers placed in the bytes of dead ones),
//   around the barriers placed here.
// An `exchange` (an op that moves data between threads through its scratch) writes its
// bytes, waits at a barrier of its own and reads them back: it needs what a write
// needs, its barrier orders every access before it, and leaves its reads pending.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"
#include "codegen/passes/shared_buffers.hpp"

namespace tl::passes {
namespace {

// kInFlight: a global_load_to_shared into the buffer has been issued and no async_wait
// has run since. Its data lands when the wait says so, not when issued, so a barrier
// does not publish it (the bit survives barriers); an async_wait turns it into kWrites,
// which the next barrier publishes. So a read after `copy; async_wait; ` gets its
// barrier after the wait, whatever barriers came between the copy and the wait.
// kInFlightAhead: the same for the pipeliner's copies into the stage the previous
// iteration read (kCopyIntoLastReadStage), issued before this iteration's reads of its
// own stage: those reads do not wait for them, the next wait lands them as any copy.
// A TMA copy the pipeliner issues (tensor_map_load kTensorMapIssue) is ordered like a copy
// after what came before it, but leaves nothing pending: every thread that reads its stage
// has waited on the stage's mbarrier first, which makes the bytes visible to it (the
// mbarrier's complete_tx), and no barrier could stand in for that wait.
enum : uint8_t { kReads = 1, kWrites = 2, kInFlight = 4, kInFlightAhead = 8 };
// Byte range (or, on the tile IR, buffer number) -> pending accesses.
using State = std::map<std::pair<int64_t, int64_t>, uint8_t>;

void join_into(State& into, const State& from) {
  for (auto& [buf, bits] : from) into[buf] |= bits;
}

// What a barrier leaves pending: copies still in flight.
void clear(State& s) {
  for (auto it = s.begin(); it != s.end();) {
    it->second &= kInFlight | kInFlightAhead;
    it = it->second ? std::next(it) : s.erase(it);
  }
}

bool overlaps(const std::pair<int64_t, int64_t>& a, const SharedRange& b) {
  return a.first < b.end && b.begin < a.second;
}

class InsertBarriers {
 public:
  InsertBarriers(ir::Function& f, const SharedAccessModel& model) : f_(f), model_(model) {}

  int run() {
    State s;
    walk(f_.body, s, /*insert=*/true);
    return inserted_;
  }

 private:
  // Whether `s` holds, on bytes `r`, an access of one of the kinds in `against`.
  static bool conflicts(const State& s, const SharedRange& r, uint8_t against) {
    for (auto& [range, bits] : s)
      if ((bits & against) && overlaps(range, r)) return true;
    return false;
  }

  // Runs `b` from state `s` (updated to the state at its end). With `insert`, barriers
  // are added where needed; without, the same decisions are only simulated (a barrier
  // that would be inserted still clears the state), so that a loop's fixed point sees
  // exactly what the inserting walk will do.
  void walk(ir::Block& b, State& s, bool insert) {
    // A barrier has run since this block began (in a loop body: since the iteration's top).
    bool barrier_in_block = false;
    for (size_t i = 0; i < b.ops.size(); ++i) {
      ir::Operation& op = *b.ops[i];
      switch (op.op) {
        case Op::barrier: clear(s), barrier_in_block = true; break;
        case Op::async_wait:
          // Stage-blind like the rest: every copy in flight counts as landed (the
          // user's n says which ones; a read of a stage still in flight is their bug).
          for (auto& [buf, bits] : s)
            if (bits & (kInFlight | kInFlightAhead)) bits = uint8_t((bits & ~(kInFlight | kInFlightAhead)) | kWrites);
          break;
        case Op::if_: {
          State then_s = s, else_s = s;
          walk(*op.regions[0], then_s, insert);
          walk(*op.regions[1], else_s, insert);
          join_into(then_s, else_s);
          s = std::move(then_s);
          break;
        }
        case Op::for_: {
          // A conflict with what was pending before the loop is cheaper fenced once, before
          // it, than in every iteration: if the body needs more barriers when entered
          // from `s` than from a clean state, put one before the loop.
          ir::Block& body = *op.regions[0];
          if (!s.empty() && body_barriers(body, s) > body_barriers(body, {})) {
            if (insert) {
              ir::Builder at(b);
              at.before(op);
              at.create(Op::barrier, {}, {}, op.loc).i0 = 1;
              ++inserted_;
              ++i;
            } else {
              ++simulated_;
            }
            clear(s);
          }
          State entry = loop_entry(body, s);
          State end = entry;
          walk(body, end, insert);
          s = std::move(entry);  // before the loop (no iteration) joined with the back-edge
          join_into(s, end);
          break;
        }
        case Op::while_: {
          // The condition region, then the body, again and again; the loop leaves after
          // the condition region. Its entry state joins the state before the loop with
          // the body's end (to a fixed point, as loop_entry), and the exit state is the
          // condition region's end, from that entry.
          ir::Block& before = *op.regions[0];
          ir::Block& after = *op.regions[1];
          int saved = simulated_;
          State entry = s;
          for (int round = 0; round < 16; ++round) {
            State end = entry;
            walk(before, end, /*insert=*/false);
            walk(after, end, /*insert=*/false);
            State next = entry;
            join_into(next, end);
            if (next == entry) break;
            entry = std::move(next);
          }
          simulated_ = saved;
          walk(before, entry, insert);
          s = entry;
          walk(after, entry, insert);
          break;
        }
        case Op::tensor_map_store:
          // Its lowering begins with a barrier of its own (after every thread's proxy
          // fence): what came before it is ordered; then its accesses, as the model says.
          clear(s), barrier_in_block = true;
          [[fallthrough]];
        default: {
          accesses_.clear();
          model_(op, accesses_);
          if (!accesses_.empty()) {
            // The pipeliner's copy into the stage the previous iteration read: the reads
            // pending since this iteration's barrier are of other stages.
            const bool in_loop = b.parent && b.parent->op == Op::for_;
            const bool tma_issue = op.op == Op::tensor_map_load && op.i1 == ir::kTensorMapIssue;
            const bool ahead = (op.op == Op::global_load_to_shared || tma_issue) &&
                               op.i0 == ir::kCopyIntoLastReadStage && in_loop;
            bool conflict = false;
            for (const SharedAccess& a : accesses_) {
              // A read waits for writes (a copy's only once landed: kInFlight); anything
              // that writes (a copy too: it must not overtake another thread's read of
              // the stage) for reads and writes.
              const uint8_t against = a.kind == SharedAccess::read ? uint8_t(kWrites | kInFlight)
                                      : a.kind == SharedAccess::copy && ahead && barrier_in_block ? uint8_t(kWrites)
                                                                                                    : uint8_t(kReads | kWrites);
              for (const SharedRange& r : a.ranges) conflict |= conflicts(s, r, against);
            }
            if (conflict) {
              if (insert) {
                ir::Builder at(b);
                at.before(op);
                at.create(Op::barrier, {}, {}, op.loc).i0 = 1;  // the line of the access that needs it
                ++inserted_;
                ++i;  // the access moved one place down
              } else {
                ++simulated_;
              }
              clear(s);
              barrier_in_block = true;
            }
            for (const SharedAccess& a : accesses_) {
              if (a.kind == SharedAccess::exchange) {
                clear(s);  // (its own barrier, between its writes and its reads)
                barrier_in_block = true;
              }
              if (tma_issue && a.kind == SharedAccess::copy) continue;
              const uint8_t bit = a.kind == SharedAccess::read || a.kind == SharedAccess::exchange ? kReads
                                  : a.kind == SharedAccess::write                                 ? kWrites
                                  : ahead                                                          ? kInFlightAhead
                                                                                                   : kInFlight;
              for (const SharedRange& r : a.ranges) s[{r.begin, r.end}] |= bit;
            }
          }
          for (auto& r : op.regions) walk(*r, s, insert);  // (regions of other ops: a combine's)
          break;
        }
      }
    }
  }

  // The state a loop body starts from when the loop is entered with `before`: joined
  // with the state at the end of the body, to a fixed point (each round only adds
  // bits, so a few rounds suffice).
  State loop_entry(ir::Block& body, const State& before) {
    int saved = simulated_;  // (the rounds place nothing: the walk after them counts)
    State entry = before;
    for (int round = 0; round < 16; ++round) {
      State end = entry;
      walk(body, end, /*insert=*/false);
      State next = entry;
      join_into(next, end);
      if (next == entry) break;
      entry = std::move(next);
    }
    simulated_ = saved;
    return entry;
  }

  // How many barriers one iteration of `body` would get if the loop were entered with
  // `before` pending.
  int body_barriers(ir::Block& body, const State& before) {
    State end = loop_entry(body, before);
    int saved = simulated_;
    walk(body, end, /*insert=*/false);
    int n = simulated_ - saved;
    simulated_ = saved;
    return n;
  }

  ir::Function& f_;
  const SharedAccessModel& model_;
  std::vector<SharedAccess> accesses_;  // (the op's, reused)
  int simulated_ = 0;  // barriers the non-inserting walks would have placed
  int inserted_ = 0;
};

}  // namespace

int insert_barriers(ir::Function& f, const SharedAccessModel& model) { return InsertBarriers(f, model).run(); }

int insert_barriers(ir::Function& f) {
  // Each buffer its own address: buffer k is the range [k, k + 1).
  const SharedBuffers shared(f);
  std::unordered_map<const ir::Operation*, int64_t> number;
  for (const ir::Operation* alloc : shared.allocations()) number.emplace(alloc, int64_t(number.size()));
  auto ranges = [&](const ir::Value* v) {
    std::vector<SharedRange> out;
    for (const ir::Operation* alloc : shared.of(v)) out.push_back({number.at(alloc), number.at(alloc) + 1});
    return out;
  };
  const SharedAccessModel model = [&](const ir::Operation& op, std::vector<SharedAccess>& out) {
    switch (op.op) {
      case Op::shared_load: out.push_back({SharedAccess::read, ranges(op.operands[0])}); break;
      case Op::shared_store: out.push_back({SharedAccess::write, ranges(op.operands[0])}); break;
      // (complete for every thread when it ends: its own mbarrier wait; the pipeliner's
      // issued copies complete at the mbarrier wait of their stage)
      case Op::tensor_map_load:
        out.push_back({op.i1 == ir::kTensorMapIssue ? SharedAccess::copy : SharedAccess::write, ranges(op.operands[0])});
        // The issuing thread arms the stage's mbarrier (arrive.expect_tx), which thread 0
        // initialised: a read of it, so that the init is published by a barrier before the
        // first arm (elect.sync need not choose thread 0; racecheck on the H200 reported
        // the init and the arm as a hazard without it). Before the loop: no cost in it.
        if (op.i1 == ir::kTensorMapIssue)
          out.push_back({SharedAccess::read, ranges(op.operands[3 + op.operands[0]->type.shape.size()])});
        break;
      // (the mbarriers: initialised and invalidated by one thread, waited on by all; the
      // copies' arrivals are the hardware's, atomic)
      case Op::mbarrier:
        out.push_back({op.i0 == ir::kMbarrierWait ? SharedAccess::read : SharedAccess::write, ranges(op.operands[0])});
        break;
      // (after its own barrier, InsertBarriers::walk: a read of the stage, complete for
      // the issuing thread before it goes on)
      case Op::tensor_map_store: out.push_back({SharedAccess::read, ranges(op.operands[0])}); break;
      case Op::global_load_to_shared: out.push_back({SharedAccess::copy, ranges(op.operands[0])}); break;
      default: break;
    }
  };
  return insert_barriers(f, model);
}

}  // namespace tl::passes

// plan_dot_operand_sources (passes.hpp): where each dot reads its operands from.
//
// 1. An operand that reaches its layout through a conversion in shared memory (a plain
//    tl::load of K^T or V in a register layout of its own) is staged instead: the tile is
//    stored once into a shared buffer of its own, as soon as it exists, and the dot reads
//    it back from there, as Triton turns a convert_layout into a dot operand into
//    local_alloc + local_load. The buffer lies along the tile's contiguous dim (a K^T
//    loaded D-contiguous is stored as K, transposed back on the read), so that the
//    stores are a thread's contiguous 16 bytes and the reads follow the operand's k pairs.
//    The barrier between the stores and the read is insert_shared_barriers'. Only where
//    the dot then reads it wider than the conversion would (ldmatrix) or where keeping
//    the converted tile would crowd a thread's registers across its loop, and while the
//    program's shared memory allows it.
// 2. Where an operand is a tile read from a shared buffer (match_shared_dot_operand: a
//    shared_load, through a cast and/or trans) already in the operand's layout, the dot
//    reads it itself, a K step at a time next to the instructions that use it, as
//    Triton's local_loads per K step (and its AMD backend's interleaving of ds_reads with
//    MFMAs), instead of holding the whole [M, K] and [K, N] tiles in registers before the
//    first instruction. Marked on the shared_load (ir::kReadByDot); the lowering emits
//    nothing at the read and converts (a cast) each register as its K step needs it.
// 3. An operand converted through shared memory right before its dot is read by the dot
//    from the conversion's scratch the same way (ir::kConversionReadByDot on the
//    convert_layout, which then only writes). Runs after plan_conversion_paths: it reads
//    the recorded paths.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/register_pressure.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/shared_budget.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

// The smallest tile staged for a wider read alone. Measured on the H100: tutorial-06
// attention's K^T and V (8 KiB at 64x64, D = 64; 16 KiB at D = 128) went from 44 to 173
// TFLOP/s staged, while the FP8 decode sample's 2 and 4 KiB P and Q tiles (M = 16, two warps
// splitting N) ran 0.90x staged on its four uniform shapes (60.9 against 56.9 us at
// B=1, S=32768), though 1.22x on its ragged batch.
constexpr int64_t kStageForWidthBytes = 8 * 1024;

int64_t tile_bytes(const ir::Type& t) { return t.numel() * byte_width(t.dtype) * std::max(1, t.stages); }

// The dim along which `l` holds consecutive elements in consecutive registers (its
// register bit 0), or -1.
int fastest_dim(const Layout& l) {
  if (l.reg.empty() || !l.reg[0] || (l.reg[0] & (l.reg[0] - 1))) return -1;
  return dim_of_bit(l.shape, __builtin_ctz(l.reg[0]));
}

void erase(ir::Operation& op) {
  auto& ops = op.parent->ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].get() == &op) return void(ops.erase(ops.begin() + long(i)));
}

// The position of `op` in `ops`.
size_t index_in(const std::vector<std::unique_ptr<ir::Operation>>& ops, const ir::Operation* op) {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].get() == op) return i;
  throw compile_error("gpu planning: an op not in its block (a tl bug)");
}

// Whether `dot` reads `v` as its A or B operand.
bool reads(const ir::Operation& dot, const ir::Value* v) {
  return dot.op == Op::dot && (dot.operands[0] == v || dot.operands[1] == v);
}

// The dot in `b`, or in an if of it (nested ifs too, not a loop: it would read the
// scratch again each iteration), that reads `v`; null where none does.
const ir::Operation* dot_in(const ir::Block& b, const ir::Value* v) {
  for (const auto& o : b.ops) {
    if (reads(*o, v)) return o.get();
    if (o->op == Op::if_)
      for (const auto& r : o->regions)
        if (const ir::Operation* d = dot_in(*r, v)) return d;
  }
  return nullptr;
}

// The dot that reads `conv`'s result, where it can read the conversion's scratch itself:
// the op right after it, or in the if that comes after it and after other conversions
// through shared memory only (the pipeliner's loop unrolled in two converts the second
// iteration's K^T and V before the if that runs it); null elsewhere.
const ir::Operation* dot_reading(const ir::Operation& conv) {
  const auto& ops = conv.parent->ops;
  for (size_t i = index_in(ops, &conv) + 1; i < ops.size(); ++i) {
    const ir::Operation& o = *ops[i];
    if (reads(o, conv.result())) return i == index_in(ops, &conv) + 1 ? &o : nullptr;
    if (o.op == Op::if_) {
      for (const auto& r : o.regions)
        if (const ir::Operation* d = dot_in(*r, conv.result())) return d;
      return nullptr;
    }
    if (o.op != Op::convert_layout || ir::ConvertPath(o.i0) != ir::ConvertPath::shared) return nullptr;
  }
  return nullptr;
}

// Part 1: dot operands converted through shared memory become staged buffers.
void stage_operands_converted_in_shared_memory(ir::Function& f, const PlanTarget& t) {
  // What the program already holds in shared memory: its buffers live together at most
  // (passes::live_shared_bytes: attention's masked and unmasked loops, each with its own
  // stages, are not live together, and the allocator puts them in the same bytes) and
  // the largest conversion scratch.
  int64_t buffers = passes::live_shared_bytes(f), scratch = 0;
  // Each value's uses (op, operand index), in program order; the candidates are the
  // conversions some dot reads as an operand, each once, in the order of their first dot.
  std::unordered_map<const ir::Value*, std::vector<std::pair<ir::Operation*, int>>> users;
  std::vector<ir::Operation*> candidates;
  ir::walk(f.body, [&](ir::Operation& op) {
    for (size_t j = 0; j < op.operands.size(); ++j) {
      auto& u = users[op.operands[j]];
      if (op.op == Op::dot && j < 2 && u.empty() && op.operands[j]->def) candidates.push_back(op.operands[j]->def);
      u.emplace_back(&op, int(j));
    }
  });
  auto through_shared = [](const ir::Operation* c) {
    return c && c->op == Op::convert_layout && ir::ConvertPath(c->i0) == ir::ConvertPath::shared;
  };
  ir::walk(f.body, [&](ir::Operation& op) {
    if (through_shared(&op)) scratch = std::max(scratch, tile_bytes(op.result()->type));
  });
  const int64_t budget = t.caps->shared_bytes_per_program;
  for (ir::Operation* conv : candidates) {
    if (!through_shared(conv)) continue;
    // The dots reading the converted tile, all as the same operand (A or B): one buffer
    // serves them all, a read before each. Attention's backward reads its Q (dQ) or K and
    // V (dK/dV) in two loops, the masked blocks' and the rest: left in registers they
    // held 64 more registers a thread in each loop, where ptxas spilled (dK/dV causal
    // 64x64 w4 D = 128: 164 bytes; dQ 128x32 w4: 464).
    const auto& uses = users[conv->result()];
    const int i = uses.front().second;
    bool only_dots = true;
    for (auto [user, j] : uses) only_dots &= user->op == Op::dot && j == i;
    if (!only_dots) continue;
    // Where the dot then reads it wide (ldmatrix, for 16- and 8-bit tiles) while the
    // conversion, run every iteration, reads it two bytes at a time: tutorial-06
    // attention at 64x64, D = 64 on the H100 went from 44 to 173 TFLOP/s (a conversion
    // hoisted out of the loop runs once: attention's Q stays in registers). Or where the
    // converted tile would crowd the registers: the loop's carried and read-in tiles and
    // it over three quarters of a thread's registers (at 128x64, D = 128 on 4 NVIDIA warps
    // the loop carries 196 registers and each warp's whole K^T operand would add 128:
    // ptxas spilled 10 KB).
    // Elsewhere the conversion's scratch, shared by every conversion, costs less shared
    // memory than a buffer per operand (the AMD GEMM tiles of dot_codegen_test keep their
    // LDS and registers).
    const int bits = bit_width(conv->operands[0]->type.dtype);
    bool read_wide = false, crowded = false;
    for (auto [d, j] : uses) {
      read_wide |= t.caps->load_matrix && (bits == 16 || bits == 8) && conv->parent == d->parent &&
                   tile_bytes(conv->operands[0]->type) >= kStageForWidthBytes;
      ir::Operation* loop = d->parent->parent;
      crowded |= loop && loop->op == Op::for_ &&
                 4 * (carried_registers(*loop) + registers_of(conv->result())) > 3 * t.caps->registers_per_thread;
    }
    if (!read_wide && !crowded) continue;
    ir::Value* v = conv->operands[0];
    const ir::Type& vt = v->type;
    if (vt.rank() != 2 || vt.dtype == DType::i1) continue;
    const int64_t bytes = (tile_bytes(vt) + 127) / 128 * 128;
    if (buffers + bytes + scratch > budget) continue;
    buffers += bytes;
    const ir::SrcLoc loc = conv->loc;
    const Layout want = *conv->result()->layout;
    const bool transposed = fastest_dim(*v->layout) == 0;
    const std::vector<int> perm = {1, 0};
    const std::vector<int> shape = transposed ? std::vector<int>{vt.shape[1], vt.shape[0]} : vt.shape;
    // The buffer, for the whole program.
    ir::Builder top(f.body);
    top.before(*f.body.ops.front());
    ir::Value* buf = top.create1(Op::shared_alloc, {}, ir::Type::shared_buffer(vt.dtype, shape, 1), loc);
    // The store, as soon as the tile exists: in its own block (before the loop for a
    // loop-invariant tile such as attention's Q, stored once).
    ir::Block& home = v->def ? *v->def->parent : *v->owner;
    ir::Builder st(home);
    if (v->def && v->def->parent == &home) st.after(*v->def);
    else st.before(*home.ops.front());
    ir::Value* stage = st.constant(DType::i32, 0, loc);
    ir::Value* stored = v;
    if (transposed) {
      ir::Operation& tr = st.create(Op::trans, {v}, {vt.with_shape(shape)}, loc);
      tr.ints = perm;
      stored = tr.result();
      stored->layout = trans_layout(*v->layout, perm);
    }
    st.create(Op::shared_store, {buf, stage, stored}, {}, loc);
    // The reads, each right before its dot, which reads it a K step at a time (part 2).
    for (auto [d, j] : uses) {
      ir::Builder rd(*d->parent);
      rd.before(*d);
      ir::Value* read = rd.create1(Op::shared_load, {buf, stage}, ir::Type{vt.dtype, vt.pointee, shape}, loc);
      read->layout = transposed ? trans_source_layout(want, perm) : want;
      ir::Value* replacement = read;
      if (transposed) {
        ir::Operation& tr = rd.create(Op::trans, {read}, {vt}, loc);
        tr.ints = perm;
        replacement = tr.result();
        replacement->layout = want;
      }
      d->operands[size_t(j)] = replacement;
    }
    erase(*conv);
  }
}

}  // namespace

void plan_dot_operand_sources(ir::Function& f, const PlanTarget& t) {
  stage_operands_converted_in_shared_memory(f, t);
  std::unordered_map<const ir::Value*, int> uses;
  ir::walk(f.body, [&](ir::Operation& op) {
    for (const ir::Value* v : op.operands) ++uses[v];
  });
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::dot) return;
    const DotPlan p = recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size);
    if (p.warpgroup()) {
      // A warpgroup dot reads its operands itself, through matrix descriptors: the reads
      // emit nothing (plan_dots chose it only where both are such reads).
      for (int i = 0; i < 2; ++i)
        if (auto m = match_descriptor_operand(op.operands[size_t(i)], i))
          const_cast<ir::Operation*>(m->read)->i1 = ir::kReadByDot;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      auto m = match_shared_dot_operand(op.operands[size_t(i)]);
      if (!m) continue;
      // Only the dot reads it (the read, its cast and its transpose have no other use),
      // in the same block.
      const ir::Value* read = m->read->result();
      if ((m->trans && uses[m->trans->result()] != 1) || uses[m->registers] != 1 || uses[read] != 1 ||
          m->read->parent != op.parent)
        continue;
      // The registers are the read's (a transpose renames no register; a cast converts
      // each register where it stands).
      const Layout& want = i == 0 ? p.a : p.b;
      const Layout& have = *m->registers->layout;
      if (!(m->trans ? trans_layout(have, m->trans->ints) == want : have == want)) continue;
      if (m->cast && !(*read->layout == have)) continue;
      // Reading later is reading the same bytes: nothing between writes memory.
      bool between = false, clean = true;
      for (const auto& o : op.parent->ops) {
        if (o.get() == &op) break;
        if (between) clean &= !ir::writes_or_has_effects(*o);
        between |= o.get() == m->read;
      }
      if (clean) const_cast<ir::Operation*>(m->read)->i1 = ir::kReadByDot;
    }
  });
  // 3. An operand converted through shared memory for its dot (K^T and V of attention on
  //    AMD, where they are not staged) is read by the dot from the conversion's scratch
  //    the same way, a K step at a time: the conversion only writes, and the barrier
  //    between its writes and the dot's reads is insert_shared_barriers'. The dot comes
  //    right after the conversion, or in the if after it (dot_reading): the allocator
  //    keeps the scratch until the dot (shared_memory.cpp), in a slot of its own.
  //    A dot further away keeps two scratches live at once (its own and the next
  //    exchange's): only where the program's buffers leave room for two.
  int64_t scratch = 0;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::convert_layout && ir::ConvertPath(op.i0) == ir::ConvertPath::shared)
      scratch = std::max(scratch, tile_bytes(op.result()->type));
  });
  const bool room_for_two = passes::live_shared_bytes(f) + 2 * scratch <= t.caps->shared_bytes_per_program;
  ir::walk(f.body, [&](ir::Operation& conv) {
    if (conv.op != Op::convert_layout || ir::ConvertPath(conv.i0) != ir::ConvertPath::shared ||
        uses[conv.result()] != 1)
      return;
    const ir::Operation* dot = dot_reading(conv);
    if (dot && !room_for_two && dot->parent != conv.parent) return;
    // (Not a warpgroup dot's: it takes a register A whole, as the conversion leaves it;
    // marked, the conversion was never made and the lowering failed, "tile used before it
    // was lowered": samples/moe's 128x256x128 w8 MXFP4 gate/up, tutorial 10's 128x128x256
    // w8 on sm_90.)
    if (dot && !recorded_dot_plan(*t.caps, *dot, t.num_warps, t.wave_size).warpgroup())
      conv.i1 |= ir::kConversionReadByDot;
  });
}

}  // namespace tl::gpu

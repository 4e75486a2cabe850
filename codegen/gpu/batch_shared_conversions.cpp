// batch_shared_conversions (passes.hpp): two conversions through shared memory of one
// loop body, between the same layouts and of the same type, made as one: the two tiles
// joined (join_layout: side by side in each thread's registers, nothing moves), one
// convert_layout of the pair, and split back (nothing moves). A conversion through shared
// memory stores, waits at a barrier for every warp, and loads; two of them in an
// iteration cost two such barriers and one more between them (the second's stores must
// wait until every warp has read the first's scratch, which they share). One conversion
// of both costs one.
//
// samples/moe's gate/up kernel on sm_90: tl::dot_scaled's e8m0 scales of gate's and up's
// weights ([BLOCK_N, BLOCK_K / 32] each, loaded an iteration ahead in their coalesced
// layout) convert to the projection of the upcast weights' layout every K step, each
// before its own dot: 4 barriers a K step, 2 once batched. The second conversion's operand
// is computed from values available at the first (the tile loaded ahead and decoded by
// pure ops): those ops move up to the first conversion, and the pair converts there.
//
// Only in loop bodies, where it is paid every iteration; only pairs whose second operand
// does not depend on the first conversion's result, and of at most kMaxPairBytes. The
// second result lives from the first conversion to its users: registers for barriers.
// ptxas 12.8, sm_90a, gpt-oss-20b's layer, gate/up loop: 128x128x128 w8 4 -> 2 barriers,
// 996 -> 999 SASS instructions, 36 -> 68 B of spill stores (the loop's local loads 1 -> 7,
// of values from before it); 16x64x128 w4 167 -> 165 registers, 992 -> 983 instructions.
// gfx942 (64x128x128 mfma32) 320 -> 298 VGPRs.
#include <algorithm>
#include <set>

#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {
namespace {

bool through_shared(const ir::Operation& op) {
  return op.op == Op::convert_layout && op.i0 == int64_t(ir::ConvertPath::shared) && op.results.size() == 1 &&
         op.operands[0]->layout && !op.operands[0]->rematerialized && op.result()->layout;
}

// The most bytes a pair may take (both tiles): the scratch of a batched pair is live at
// once, and where the conversions are large it competes with the pipeline's stages (gfx942's
// MoE gate/up converts two 32 KiB upcast weight tiles an iteration: batched, 64 KiB of
// scratch left no room for a second stage). Scale and row tiles are a few KiB at most.
constexpr int64_t kMaxPairBytes = 4096;

bool same_kind(const ir::Operation& a, const ir::Operation& b) {
  return a.operands[0]->type == b.operands[0]->type && *a.operands[0]->layout == *b.operands[0]->layout &&
         *a.result()->layout == *b.result()->layout;
}

// The ops of `body` between index `lo` and `hi` (exclusive both) that `v` is computed
// from, added to `chain`; false where one of them is not a pure op without regions (it
// cannot move), or `v` is computed from the op at `lo` (the first conversion itself).
bool chain_between(const ir::Block& body, size_t lo, size_t hi, const ir::Value* v, std::set<size_t>& chain) {
  const ir::Operation* d = v->def;
  if (!d || d->parent != &body) return true;  // an argument, or defined outside the body
  size_t at = 0;
  while (at < body.ops.size() && body.ops[at].get() != d) ++at;
  if (at < lo) return true;
  if (at == lo || at >= hi) return false;
  if (chain.count(at)) return true;
  if (!ir::is_pure(*d) || !d->regions.empty()) return false;
  chain.insert(at);
  for (const ir::Value* x : d->operands)
    if (!chain_between(body, lo, hi, x, chain)) return false;
  return true;
}

// The first pair of the body batched; false where there is none.
bool batch_one(ir::Function& f, ir::Block& body, const PlanTarget& t) {
  for (size_t i = 0; i < body.ops.size(); ++i) {
    ir::Operation* first = body.ops[i].get();
    if (!through_shared(*first)) continue;
    for (size_t j = i + 1; j < body.ops.size(); ++j) {
      ir::Operation* second = body.ops[j].get();
      if (!through_shared(*second) || !same_kind(*first, *second)) continue;
      if (2 * first->operands[0]->type.numel() * std::max(1, byte_width(first->operands[0]->type.dtype)) > kMaxPairBytes)
        continue;
      std::set<size_t> chain;
      if (!chain_between(body, i, j, second->operands[0], chain)) continue;
      // The second operand's ops move up, in their order, to just before the first.
      std::set<const ir::Operation*> moving;
      for (size_t k : chain) moving.insert(body.ops[k].get());
      std::stable_partition(body.ops.begin() + long(i), body.ops.begin() + long(j),
                            [&](const auto& op) { return moving.count(op.get()) != 0; });
      const Layout& from = *first->operands[0]->layout;
      const Layout& to = *first->result()->layout;
      ir::Type pair = first->operands[0]->type;
      pair.shape.push_back(2);
      ir::Builder at(body);
      at.before(*first);
      ir::Value* joined = at.create1(Op::join, {first->operands[0], second->operands[0]}, pair, first->loc);
      joined->layout = join_layout(from);
      ir::Value* conv = at.create1(Op::convert_layout, {joined}, pair, first->loc);
      conv->layout = join_layout(to);
      plan_conversion_path(*conv->def, t);
      ir::Value* halves[2];
      for (int h = 0; h < 2; ++h) {
        halves[h] = at.create1(Op::split, {conv}, first->result()->type, (h ? second : first)->loc);
        halves[h]->def->i0 = h;
        halves[h]->layout = to;
      }
      ir::replace_all_uses(f.body, first->result(), halves[0]);
      ir::replace_all_uses(f.body, second->result(), halves[1]);
      std::erase_if(body.ops, [&](const auto& op) { return op.get() == first || op.get() == second; });
      return true;
    }
  }
  return false;
}

void batch_in(ir::Function& f, ir::Block& b, const PlanTarget& t, int& batched) {
  for (auto& op : b.ops)
    for (auto& r : op->regions) batch_in(f, *r, t, batched);
  if (!b.parent || (b.parent->op != Op::for_ && b.parent->op != Op::while_)) return;
  while (batch_one(f, b, t)) ++batched;
}

}  // namespace

int batch_shared_conversions(ir::Function& f, const PlanTarget& t) {
  int batched = 0;
  batch_in(f, f.body, t, batched);
  return batched;
}

}  // namespace tl::gpu

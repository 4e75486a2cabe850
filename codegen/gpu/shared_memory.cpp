// The shared-memory allocator. It lives in codegen/gpu, run by the GPU lowering rather
// than as a pass in codegen/passes, because everything it decides is about the GPU's
// shared memory: the budget and bank geometry come from the target's capability table,
// the total is only final once the lowering adds the layout conversions' scratch region
// after the buffers, and the CPU has no shared memory to plan (it gives each buffer its
// own stack array). It depends on the IR and the capability table only, no LLVM, so
// tests call it on IR made with ir::Builder.
//
// Live ranges (over nested regions). Ops are numbered in pre-order; a for/if spans its
// own number up to the last number inside its regions. A buffer is live from its
// shared_alloc to its last use, where
//  - a use is a use of the allocation's result or of any value that may be the buffer:
//    a loop's carried argument or result, a branch's result (fed by inits and yields,
//    to a fixed point);
//  - a use inside a loop that does not contain the shared_alloc keeps the buffer live to
//    the end of that loop: the next iteration uses it again;
//  - a buffer carried by a loop (it is one of the loop's body arguments) is live over the
//    whole loop, whether it comes from outside or from an earlier iteration.
// This is a structured version of Triton's Liveness-based buffer intervals; tl's IR has
// no CFG, so regions stand in for it.
//
// Offsets. Buffers are placed largest first (ties in definition order), each at the
// lowest aligned offset that overlaps no already-placed buffer whose live range meets
// its own: first-fit over an interference graph, as Triton's AllocationAnalysis does.
// Two buffers share bytes only when they are never live together.
//
// Alignment: 16 bytes (the widest access, ds_read_b128 / ld.shared.v4), and a whole
// bank row (banks * bank bytes, 128) for buffers at least that large, so that a layout's
// bank mapping, computed from the buffer's start (padding and swizzles), is the same
// wherever the buffer lands. The scratch region after the buffers starts on a bank row
// for the same reason.
#include "codegen/gpu/shared_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "codegen/gpu/layout.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/shared_buffers.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

struct Analysis {
  // op -> [its number, the last number inside it]
  std::unordered_map<const ir::Operation*, std::pair<int64_t, int64_t>> span;
  // value -> the ops using it
  std::unordered_map<const ir::Value*, std::vector<const ir::Operation*>> users;
  std::vector<const ir::Operation*> allocs;
  std::vector<int64_t> scratch_points;  // where an op may use the scratch region
  int64_t next = 0;

  void number(const ir::Block& b) {
    for (auto& op : b.ops) {
      int64_t pos = next++;
      if (op->op == Op::shared_alloc) allocs.push_back(op.get());
      if (uses_scratch(*op)) scratch_points.push_back(pos);
      for (const ir::Value* v : op->operands) users[v].push_back(op.get());
      for (auto& r : op->regions) number(*r);
      span[op.get()] = {pos, next - 1};
    }
  }
};

// The for loop whose body argument `v` is, or null.
const ir::Operation* carrying_loop(const ir::Value* v) {
  if (v->def || !v->owner || !v->owner->parent || v->index == 0) return nullptr;
  return v->owner->parent->op == Op::for_ ? v->owner->parent : nullptr;
}

void live_range(SharedBuffer& buf, int k, const SharedMemoryPlan& plan, const Analysis& a) {
  auto [def, def_end] = a.span.at(buf.alloc);
  buf.first = buf.last = def;
  auto contains = [&](const ir::Operation* loop, int64_t point) {
    auto [s, e] = a.span.at(loop);
    return s <= point && point <= e;
  };
  for (auto& [v, set] : plan.buffers_of) {
    if (std::find(set.begin(), set.end(), k) == set.end()) continue;
    if (const ir::Operation* loop = carrying_loop(v)) {
      auto [s, e] = a.span.at(loop);
      buf.first = std::min(buf.first, s);
      buf.last = std::max(buf.last, e);
    }
    auto it = a.users.find(v);
    if (it == a.users.end()) continue;
    for (const ir::Operation* u : it->second) {
      int64_t point = a.span.at(u).first;
      for (const ir::Operation* p = u->parent ? u->parent->parent : nullptr; p;
           p = p->parent ? p->parent->parent : nullptr)
        if ((p->op == Op::for_ || p->op == Op::while_) && !contains(p, def))
          point = std::max(point, a.span.at(p).second);
      buf.last = std::max(buf.last, point);
    }
  }
}

}  // namespace

bool uses_scratch(const ir::Operation& op) {
  switch (op.op) {
    case Op::convert_layout: return ir::ConvertPath(op.i0) == ir::ConvertPath::shared;
    // (a reduction within warps is shuffles; one across them exchanges partials)
    case Op::reduce: {
      const std::optional<Layout>& l = op.operands[0]->layout;
      return !l || std::any_of(l->warp.begin(), l->warp.end(),
                               [&](uint32_t image) { return along_axis(*l, image, int(op.i0)); });
    }
    case Op::scan: case Op::gather: case Op::sort: case Op::histogram: return true;
    case Op::join: case Op::split: case Op::cat: case Op::flip: return true;
    case Op::atomic_rmw: case Op::atomic_cas: return !op.results.empty();
    default: return false;
  }
}

int SharedMemoryPlan::index_of(const ir::Operation* alloc) const {
  for (size_t k = 0; k < buffers.size(); ++k)
    if (buffers[k].alloc == alloc) return int(k);
  return -1;
}

SharedMemoryPlan plan_shared_memory(const ir::Function& f, const TargetCapabilities& caps, const std::string& target) {
  SharedMemoryPlan plan;
  Analysis a;
  a.number(f.body);
  if (a.allocs.empty()) return plan;

  const int64_t row = int64_t(caps.shared_banks) * caps.shared_bank_bytes;
  for (const ir::Operation* op : a.allocs) {
    const ir::Type& t = op->result()->type;
    SharedBuffer b;
    b.alloc = op;
    b.bytes = t.numel() * t.stages * byte_width(t.dtype);
    b.align = b.bytes >= row ? std::max<int64_t>(16, row) : 16;
    // A buffer read through wgmma's matrix descriptors (an encoding with swizzle rows):
    // the hardware XORs address bits, so each stage starts on a whole swizzle pattern, 8
    // rows (1024 bytes at the 128-byte swizzle).
    if (op->shared && op->shared->row) b.align = std::max<int64_t>(b.align, 8 * int64_t(op->shared->row) * byte_width(t.dtype));
    plan.buffers.push_back(b);
  }
  // Which buffers each shared-typed value may be, by their indices here.
  const passes::SharedBuffers shared(f);
  std::unordered_map<const ir::Operation*, int> index;
  for (size_t k = 0; k < plan.buffers.size(); ++k) index[plan.buffers[k].alloc] = int(k);
  for (auto& [v, allocs] : shared.all())
    for (const ir::Operation* alloc : allocs) plan.buffers_of[v].push_back(index.at(alloc));
  for (size_t k = 0; k < plan.buffers.size(); ++k) live_range(plan.buffers[k], int(k), plan, a);

  std::vector<int> order(plan.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return plan.buffers[x].bytes > plan.buffers[y].bytes; });
  std::vector<int> placed;
  for (int k : order) {
    SharedBuffer& buf = plan.buffers[k];
    // The placed buffers live at the same time as this one, by offset.
    std::vector<const SharedBuffer*> busy;
    for (int j : placed)
      if (plan.buffers[j].live_with(buf)) busy.push_back(&plan.buffers[j]);
    std::sort(busy.begin(), busy.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
    int64_t at = 0;
    for (const SharedBuffer* o : busy) {
      if (at + buf.bytes <= o->offset) break;  // fits in the gap before `o`
      at = std::max(at, align_up(o->offset + o->bytes, buf.align));
    }
    buf.offset = at;
    int64_t limit = caps.shared_bytes_per_program;
    if (at + buf.bytes > limit)
      throw shared_memory_exceeded(fmt::format("shared memory: {} bytes needed with this buffer ({}, {} bytes) live, more "
                                      "than the {} a program may use on {}; use smaller tiles or fewer stages",
                                      at + buf.bytes, buf.alloc->result()->type.str(), buf.bytes, limit, target),
                          buf.alloc->loc.file, buf.alloc->loc.line);
    plan.buffer_bytes = std::max(plan.buffer_bytes, at + buf.bytes);
    placed.push_back(k);
  }
  // The scratch region above every buffer live where it may be used (Triton gives each
  // scratch use its own short-lived buffer; one region reused by every use, above the
  // buffers any of them meets, is the same where the buffers live throughout, and where
  // they do not, such as a hand-staged kernel's tl::shared buffers allocated after its
  // Q block is converted, it lets the scratch share their bytes).
  int64_t above = 0;
  for (int64_t point : a.scratch_points)
    for (const SharedBuffer& buf : plan.buffers)
      if (buf.first <= point && point <= buf.last) above = std::max(above, buf.offset + buf.bytes);
  plan.scratch_offset = align_up(above, std::max<int64_t>(16, row));
  return plan;
}

}  // namespace tl::gpu

// The shared-memory allocator. It lives in codegen/gpu, run by the GPU planning pass
// allocate_shared_memory rather than in codegen/passes, because everything it decides is
// about the GPU's shared memory: the budget and bank geometry come from the target's
// capability table, the scratch sizes from the layouts and encodings the GPU planning
// recorded (scratch_bytes), and the CPU has no shared memory to plan (it gives each buffer
// its own stack array). It depends on the IR and the capability table only, no LLVM, so
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

#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/shared_encoding.hpp"
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
  std::vector<std::pair<int64_t, const ir::Operation*>> scratch_uses;  // (point, op) of each op using scratch
  std::vector<std::pair<const ir::Operation*, std::pair<int64_t, int64_t>>> loops;  // each loop and its span
  int64_t next = 0;

  void number(const ir::Block& b) {
    for (auto& op : b.ops) {
      int64_t pos = next++;
      if (op->op == Op::shared_alloc) allocs.push_back(op.get());
      if (uses_scratch(*op)) scratch_uses.push_back({pos, op.get()});
      for (const ir::Value* v : op->operands) users[v].push_back(op.get());
      for (auto& r : op->regions) number(*r);
      span[op.get()] = {pos, next - 1};
      if (op->op == Op::for_ || op->op == Op::while_) loops.push_back({op.get(), span[op.get()]});
    }
  }
};

// The for loop whose body argument `v` is, or null.
const ir::Operation* carrying_loop(const ir::Value* v) {
  if (v->def || !v->owner || !v->owner->parent || v->index == 0) return nullptr;
  return v->owner->parent->op == Op::for_ ? v->owner->parent : nullptr;
}

// The last op using `v`, through a transposition or cast (the dot reading a load kReadByDot).
int64_t read_by_dot_at(const ir::Value* v, const Analysis& a) {
  int64_t at = 0;
  auto it = a.users.find(v);
  if (it == a.users.end()) return at;
  for (const ir::Operation* w : it->second) {
    at = std::max(at, a.span.at(w).first);
    if (w->op == Op::trans || converts_dot_operand_registers(*w)) at = std::max(at, read_by_dot_at(w->result(), a));
  }
  return at;
}

// The last point at which a scratch use at `point` is read: a conversion read by its dot
// (kConversionReadByDot) at the dot, which may come later in the block or in a region
// of a later op of it (plan_dot_operand_sources); any other exchange within the op.
int64_t scratch_until(const ir::Operation& op, int64_t point, const Analysis& a) {
  if (op.op != Op::convert_layout || !(op.i1 & ir::kConversionReadByDot)) return point;
  auto it = a.users.find(op.result());
  if (it == a.users.end()) return point;
  for (const ir::Operation* u : it->second) point = std::max(point, a.span.at(u).first);
  return point;
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
      // A read by a dot (kReadByDot) reads the buffer at the dot, not at the load: the
      // buffer lives until then (a descriptor load's own buffer, made in the loop body
      // where the load is, is not carried by the loop that would cover the dot otherwise).
      if (u->op == Op::shared_load && u->i1 == ir::kReadByDot) point = std::max(point, read_by_dot_at(u->result(), a));
      for (const ir::Operation* p = u->parent ? u->parent->parent : nullptr; p;
           p = p->parent ? p->parent->parent : nullptr)
        if ((p->op == Op::for_ || p->op == Op::while_) && !contains(p, def))
          point = std::max(point, a.span.at(p).second);
      buf.last = std::max(buf.last, point);
    }
  }
}

}  // namespace

DType gpu_accumulator_dtype(const ir::Operation& op) {
  const DType t = op.operands[0]->type.dtype;
  const bool narrow = t == DType::f16 || t == DType::bf16;
  if (op.op == Op::scan) return narrow ? DType::f32 : t;
  return ReduceKind(op.i1) == ReduceKind::sum && narrow ? DType::f32 : t;
}

namespace {

const Layout& recorded_layout(const ir::Operation& op, const ir::Value* v) {
  if (!v->layout)
    throw compile_error(fmt::format("shared-memory allocation: '{}' reads a {} without a layout (a tl bug)",
                                    op_name(op.op), v->type.str()),
                        op.loc.file, op.loc.line);
  return *v->layout;
}

// The bytes of an exchange of `slots` elements of each of `dtypes` in turn, each part
// aligned to its element (lower_combine.cpp's SharedParts).
int64_t parts_bytes(const std::vector<DType>& dtypes, int64_t slots) {
  int64_t total = 0;
  for (DType d : dtypes) {
    const int64_t eb = byte_width(d);
    total = (total + eb - 1) / eb * eb + slots * eb;
  }
  return total;
}

// The scratch of a scan along `axis` of a tile in layout `l` of `dtypes` (lower_reduce.cpp's
// lower_scan and lower_combine.cpp's lower_combine_scan): none where each thread holds
// whole lines; bit by bit (dim_bit_holders), each block's total once, numel / 2^k slots
// for the lowest axis bit k a warp holds; else two copies of the tile (Hillis-Steele).
int64_t scan_scratch(const Layout& l, int axis, const std::vector<DType>& dtypes) {
  bool in_registers = true;
  for (uint32_t img : l.lane) in_registers &= !along_axis(l, img, axis);
  for (uint32_t img : l.warp) in_registers &= !along_axis(l, img, axis);
  if (in_registers) return 0;
  if (const auto holders = dim_bit_holders(l, axis)) {
    for (size_t k = 0; k < holders->size(); ++k)
      if ((*holders)[k].kind == HardwareBit::warp) return parts_bytes(dtypes, l.numel() >> k);
    return 0;
  }
  return parts_bytes(dtypes, 2 * l.numel());
}

// The scratch of a reduction's cross-warp exchange (lower_reduce.cpp, lower_combine.cpp):
// each warp's partials, W * (reduced elements) slots a part.
int64_t reduce_scratch(const Layout& in, int axis, const std::vector<DType>& dtypes) {
  int warp_bits = 0;
  for (uint32_t image : in.warp) warp_bits += along_axis(in, image, axis);
  if (!warp_bits) return 0;
  const int64_t slots = (int64_t(1) << warp_bits) * std::max<int64_t>(1, reduce_layout(in, axis).numel());
  return parts_bytes(dtypes, slots);
}

}  // namespace

int64_t scratch_bytes(const ir::Operation& op) {
  auto bytes_of = [](const ir::Value* v) { return int64_t(byte_width(v->type.dtype)); };
  switch (op.op) {
    case Op::convert_layout:
      if (ir::ConvertPath(op.i0) != ir::ConvertPath::shared) return 0;
      // (a padded encoding's tile, its padding included)
      return (op.shared ? shared_elements(op.operands[0]->type.numel(), *op.shared) : op.operands[0]->type.numel()) *
             bytes_of(op.operands[0]);
    case Op::reduce: {
      const Layout& in = recorded_layout(op, op.operands[0]);
      const int axis = int(op.i0);
      if (!op.regions.empty()) {
        std::vector<DType> dtypes;
        for (const ir::Value* v : op.operands) dtypes.push_back(v->type.dtype);
        return reduce_scratch(in, axis, dtypes);
      }
      const ReduceKind kind = ReduceKind(op.i1);
      // (the index partials as i32s after the values, aligned to 4 bytes)
      std::vector<DType> dtypes{gpu_accumulator_dtype(op)};
      if (kind == ReduceKind::argmax || kind == ReduceKind::argmin) dtypes.push_back(DType::i32);
      return reduce_scratch(in, axis, dtypes);
    }
    case Op::scan: {
      const Layout& l = recorded_layout(op, op.operands[0]);
      std::vector<DType> dtypes;
      if (op.regions.empty()) dtypes.push_back(gpu_accumulator_dtype(op));
      else
        for (const ir::Value* v : op.operands) dtypes.push_back(v->type.dtype);
      return scan_scratch(l, int(op.i0), dtypes);
    }
    case Op::gather: return op.operands[0]->type.numel() * bytes_of(op.operands[0]);
    case Op::tensor_map_load: return op.i1 == ir::kTensorMapIssue ? 0 : 8;  // its mbarrier (the pipeliner's: the loop's)
    case Op::flip: {
      // Through shared memory only where the flipped coordinate's bits move across warps.
      const Layout& l = recorded_layout(op, op.result());
      const int d = int(op.i0);
      const uint32_t c = uint32_t(l.shape[size_t(d)] - 1) << dim_offset(l.shape, d);
      const std::optional<LayoutInverse> inv = invert(l);
      if (!inv) return 0;  // (the lowering reports it)
      uint32_t hw = 0;
      for (size_t k = 0; k < inv->warp.size(); ++k)
        if (c >> k & 1) hw ^= inv->warp[k];
      return hw ? l.numel() * bytes_of(op.result()) : 0;
    }
    case Op::sort: {
      // Across warps, the keys (and i32 payload after them) once through shared memory,
      // in the layout it works in (a top-k's is on the op); with a payload, at least 8
      // bytes an element (where both fit, one 64-bit key: lower_sort.cpp).
      const Layout& l = op.layout ? *op.layout : recorded_layout(op, op.result());
      const auto holders = dim_bit_holders(l, int(op.i0));
      if (!holders || std::none_of(holders->begin(), holders->end(),
                                   [](const HardwareBit& h) { return h.kind == HardwareBit::warp; }))
        return 0;
      const int64_t keys = (l.numel() * bytes_of(op.operands[0]) + 3) / 4 * 4;
      return op.operands.size() == 2 ? std::max(keys + l.numel() * 4, l.numel() * 8) : keys;
    }
    case Op::histogram: return op.result()->type.shape[0] * 4;
    case Op::atomic_rmw: case Op::atomic_cas: {
      // The old values, from the threads that did the atomic to the copies of them.
      if (op.results.empty()) return 0;
      const ir::Value* r = op.result();
      if (r->type.is_scalar()) return bytes_of(r);
      const Layout& l = op.layout ? *op.layout : recorded_layout(op, r);  // (the layout it works in)
      const bool copies = std::any_of(l.lane.begin(), l.lane.end(), [](uint32_t i) { return i == 0; }) ||
                          std::any_of(l.warp.begin(), l.warp.end(), [](uint32_t i) { return i == 0; });
      return copies ? l.numel() * bytes_of(r) : 0;
    }
    default: return 0;
  }
}

int64_t buffer_bytes(const ir::Operation& alloc) {
  const ir::Type& t = alloc.result()->type;
  return t.numel() * t.stages * byte_width(t.dtype);
}

int64_t buffer_alignment(const ir::Operation& alloc, const TargetCapabilities& caps) {
  const int64_t row = int64_t(caps.shared_banks) * caps.shared_bank_bytes;
  const ir::Type& t = alloc.result()->type;
  int64_t align = buffer_bytes(alloc) >= row ? std::max<int64_t>(16, row) : 16;
  // A buffer read through wgmma's matrix descriptors (an encoding with swizzle rows):
  // the hardware XORs address bits, so each stage starts on a whole swizzle pattern, 8
  // rows (1024 bytes at the 128-byte swizzle).
  if (alloc.shared && alloc.shared->row) align = std::max<int64_t>(align, 8 * int64_t(alloc.shared->row) * byte_width(t.dtype));
  return align;
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

  const int64_t row = int64_t(caps.shared_banks) * caps.shared_bank_bytes;
  for (const ir::Operation* op : a.allocs) {
    SharedBuffer b;
    b.alloc = op;
    b.bytes = buffer_bytes(*op);
    b.align = buffer_alignment(*op, caps);
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
    const int64_t limit = caps.shared_bytes_per_program;
    if (at + buf.bytes > limit) {
      SharedMemoryOverflow o;
      o.needed = at + buf.bytes;
      o.limit = limit;
      o.at = buf.alloc;
      for (const SharedBuffer* b : busy) o.live.push_back(b->alloc);
      o.live.push_back(buf.alloc);
      o.message = fmt::format("shared memory: {} bytes needed with this buffer ({}, {} bytes) live, more than the {} a "
                              "program may use on {}; use smaller tiles or fewer stages",
                              o.needed, buf.alloc->result()->type.str(), buf.bytes, limit, target);
      plan.overflow = std::move(o);
      return plan;
    }
    plan.buffer_bytes = std::max(plan.buffer_bytes, at + buf.bytes);
    placed.push_back(k);
  }
  // The scratch region above every buffer live where it may be used (Triton gives each
  // scratch use its own short-lived buffer; one region reused by every use, above the
  // buffers any of them meets, is the same where the buffers live throughout, and where
  // they do not, such as a hand-staged kernel's tl::shared buffers allocated after its
  // Q block is converted, it lets the scratch share their bytes).
  int64_t above = 0;
  std::set<const ir::Operation*> live;  // (the buffers live at some use)
  for (auto [point, op] : a.scratch_uses) {
    const int64_t until = scratch_until(*op, point, a);
    for (const SharedBuffer& buf : plan.buffers)
      if (buf.first <= until && point <= buf.last) {
        above = std::max(above, buf.offset + buf.bytes);
        live.insert(buf.alloc);
      }
    const int64_t bytes = align_up(scratch_bytes(*op), 16);
    if (bytes > plan.scratch_bytes) plan.scratch_bytes = bytes, plan.largest_scratch_use = op;
  }
  if (!plan.scratch_bytes) return plan;
  plan.scratch_offset = plan.buffers.empty() ? 0 : align_up(above, std::max<int64_t>(16, row));
  int64_t total = std::max(plan.buffer_bytes, plan.scratch_offset + plan.scratch_bytes);
  for (auto [point, op] : a.scratch_uses) plan.scratch_at[op] = plan.scratch_offset;
  // Slots. A conversion read by its dot (kConversionReadByDot) keeps its scratch from its
  // writes to the dot, and other exchanges may come between (the pipeliner's loop
  // unrolled in two converts the second iteration's K^T and V before the if that runs
  // it): uses live at once take slots of their own, `needed` of them. And more: every use
  // at the region's start makes each one's writes wait at a barrier for the previous
  // one's reads, however little else the program keeps in shared memory: gfx942's causal
  // attention (32x32, D = 64) converted K^T and V through 4 KiB of scratch twice an
  // iteration of its unrolled loop, four writes each after a barrier of its own. Uses
  // spread over twice the slots (or one more; each in the next slot round the region that
  // no use live at its writes holds) instead write where a use two or more before read,
  // which a barrier since has already ordered: insert_shared_barriers, which places
  // barriers by the bytes each access touches, then needs none before them. Only where a
  // loop makes two uses an iteration (once-only uses gain a barrier or two at most), where
  // the program still fits and where its shared memory still does not limit occupancy:
  // the most workgroups a compute unit holds by waves still fit in it by bytes; with uses
  // live at once, those of half the waves (such a loop holds a dot's accumulator, its
  // scores and the tiles it converts, more registers than half the waves could have:
  // that attention, 124 VGPRs, 4 waves a SIMD, and Triton's own kernel there takes the
  // same 16 KiB).
  const int64_t slot = align_up(plan.scratch_bytes, std::max<int64_t>(16, row));
  int needed = 1;
  std::vector<std::pair<int64_t, int64_t>> spans;  // each use's [point, last read]
  for (auto [point, op] : a.scratch_uses) spans.push_back({point, scratch_until(*op, point, a)});
  for (size_t k = 0; k < spans.size(); ++k) {
    int at_once = 1;
    for (size_t j = 0; j < spans.size(); ++j)
      at_once += j != k && spans[j].first <= spans[k].first && spans[k].first <= spans[j].second;
    needed = std::max(needed, at_once);
  }
  bool loop_reuses = false;
  for (const auto& [loop, points] : a.loops) {
    int uses = 0;
    for (auto [point, op] : a.scratch_uses) uses += points.first <= point && point <= points.second;
    loop_reuses |= uses >= 2;
  }
  auto region = [&](int slots) { return std::max(plan.buffer_bytes, plan.scratch_offset + (slots - 1) * slot + plan.scratch_bytes); };
  const int64_t waves = needed > 1 ? caps.waves_per_compute_unit / 2 : caps.waves_per_compute_unit;
  const int64_t workgroups = f.num_warps > 0 ? waves / f.num_warps : 0;
  int slots = needed;
  for (int more : {2 * needed, needed + 1})
    if (slots == needed && loop_reuses && workgroups > 0 && region(more) <= caps.shared_bytes_per_program &&
        region(more) * workgroups <= caps.shared_bytes_per_program)
      slots = more;
  if (slots > 1 && region(slots) <= caps.shared_bytes_per_program) {
    // Each use in the next slot round the region that no use live at its writes holds.
    std::vector<int64_t> busy_until(size_t(slots), -1);
    int next = 0;
    for (size_t k = 0; k < spans.size(); ++k) {
      int s = next;
      for (int t = 0; t < slots && busy_until[size_t(s)] >= spans[k].first; ++t) s = (s + 1) % slots;
      busy_until[size_t(s)] = spans[k].second;
      plan.scratch_at[a.scratch_uses[k].second] = plan.scratch_offset + s * slot;
      next = (s + 1) % slots;
    }
    plan.scratch_bytes = (slots - 1) * slot + plan.scratch_bytes;
    return plan;
  }
  if (needed > 1) total = region(needed), plan.scratch_bytes = (needed - 1) * slot + plan.scratch_bytes;
  if (total > caps.shared_bytes_per_program) {
    const ir::Operation& op = *plan.largest_scratch_use;
    SharedMemoryOverflow o;
    o.needed = total;
    o.limit = caps.shared_bytes_per_program;
    o.at = &op;
    for (const SharedBuffer& buf : plan.buffers)  // (in definition order)
      if (live.count(buf.alloc)) o.live.push_back(buf.alloc);
    o.message = fmt::format("{} bytes of shared memory needed ({} for the shared buffers live where layout conversions "
                            "and reductions exchange data, {} for their scratch: '{}' here), more than the {} a program "
                            "may use on {}; use smaller tiles",
                            total, plan.scratch_offset, plan.scratch_bytes, op_name(op.op), o.limit, target);
    plan.overflow = std::move(o);
  }
  return plan;
}

SharedMemoryPlan recorded_shared_memory(const ir::Function& f, const TargetCapabilities& caps) {
  SharedMemoryPlan plan;
  std::unordered_map<const ir::Operation*, int> index;
  bool scratch_seen = false;
  int64_t scratch_end = 0;
  ir::walk(const_cast<ir::Block&>(f.body), [&](ir::Operation& op) {
    if (op.op == Op::shared_alloc) {
      if (!op.smem)
        throw compile_error("shared memory: a buffer the allocator did not place (a tl bug)", op.loc.file, op.loc.line);
      SharedBuffer b;
      b.alloc = &op;
      b.bytes = op.smem->bytes;
      b.offset = op.smem->offset;
      b.align = buffer_alignment(op, caps);
      index[&op] = int(plan.buffers.size());
      plan.buffers.push_back(b);
      plan.buffer_bytes = std::max(plan.buffer_bytes, b.offset + b.bytes);
    } else if (op.smem) {
      // (the region from its lowest use to the end of its highest: one slot or two)
      plan.scratch_at[&op] = op.smem->offset;
      if (!scratch_seen || op.smem->offset < plan.scratch_offset) plan.scratch_offset = op.smem->offset;
      scratch_end = std::max(scratch_end, op.smem->offset + op.smem->bytes);
      scratch_seen = true;
      if (!plan.largest_scratch_use || op.smem->bytes > plan.largest_scratch_use->smem->bytes) plan.largest_scratch_use = &op;
    }
  });
  if (scratch_seen) plan.scratch_bytes = scratch_end - plan.scratch_offset;
  const passes::SharedBuffers shared(f);
  for (auto& [v, allocs] : shared.all())
    for (const ir::Operation* alloc : allocs) plan.buffers_of[v].push_back(index.at(alloc));
  return plan;
}

}  // namespace tl::gpu

// plan_copies (passes.hpp): how every global_load_to_shared copies, recorded on the op
// (`layout=...` and `chunk=16B [through_resource]` in TL_DUMP_IR) so that the wait
// counts (plan_wait_counts) and the lowering read the one decision. Triton decides the
// same in its AMD/NVIDIA async-copy lowering (the shared encoding's vector, the pointers'
// contiguity, the mask's constancy); here it is a pass, after the shared encodings that
// fix each stage's swizzle.
//
// The chunk: the widest direct-to-shared width of the target (AMD global_load_lds_dwordxN,
// NVIDIA cp.async) that the pointers' contiguity and alignment, the mask's constancy along
// the last dim and the stage's swizzle vector allow, with one wave's chunks fitting the
// tile. The layout: what AMD's LDS DMA writes (copy_layout below), used on NVIDIA too, where
// it makes each cp.async's 8-lane phase hit distinct banks. The copy's pointers, mask and
// other are read in that layout: a value that has a layout of its own (not
// rematerialized address math) gets a convert_layout to it, planned as every conversion is.
//
// Through a resource (AMD, the compiler's own copies): where the pointers are
// addptr(splat(base), offsets) with offsets of the form a tile's offsets take (uniform
// scalars, aranges from 0 up, constant non-negative strides: copy_offsets.hpp), the
// uniform part goes into the buffer resource's base, the constants into soffset and one
// small non-negative offset a lane into a VGPR, and a masked-off chunk's offset past the
// bound reads zeros with no branch.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/gpu/copy_offsets.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/direct_copy.hpp"
#include "codegen/passes/shared_buffers.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {

// The layout a direct-to-shared copy must be issued in: what AMD's LDS DMA writes. One
// instruction of a wave writes `per` elements a lane at base + lane * chunk, so the
// stage's offsets (in elements) are, bit by bit: the chunk's elements (registers), then
// the lanes, then the warps (copies where the tile is too small for them), then the
// remaining registers. The element each hardware bit holds is found through the
// inverse of the stage's swizzle (a bijection on the tile's flat indices), which puts
// the swizzle into which global address each lane reads, not into where it writes.
// nullopt when the tile is smaller than one wave's chunks.
std::optional<Layout> copy_layout(const std::vector<int>& shape, const LinearMap& offsets, int per, int ws, int nw) {
  int64_t numel = 1;
  for (int d : shape) numel *= d;
  int bits = log2_exact(numel), low = log2_exact(per), lane_bits = log2_exact(ws), warp_bits = log2_exact(nw);
  if (bits < low + lane_bits) return std::nullopt;
  std::vector<uint32_t> inverse(size_t(bits), 0);
  for (uint32_t x = 0; x < uint32_t(numel); ++x) {
    uint32_t y = offsets.apply(x);
    if (y && (y & (y - 1)) == 0) inverse[size_t(log2_exact(y))] = x;
  }
  Layout l;
  l.shape = shape;
  int next = 0;
  for (; next < low; ++next) l.reg.push_back(inverse[size_t(next)]);
  for (int i = 0; i < lane_bits; ++i) l.lane.push_back(inverse[size_t(next++)]);
  for (int i = 0; i < warp_bits; ++i) l.warp.push_back(next < bits ? inverse[size_t(next++)] : 0);
  for (; next < bits; ++next) l.reg.push_back(inverse[size_t(next)]);
  return l;
}

// The bound of a copy's offsets in the form a tile's offsets take (copy_offsets.hpp's
// fold, which the lowering's emission also walks): hi bounds a lane's part plus its
// constant over the whole tile (the uniform part aside), uniform says whether a uniform
// scalar part is present. An arange's range is AxisAnalysis's (the one answer to "is it
// non-negative"); a lane's part stays under the resource's bound.
class OffsetBound {
 public:
  struct Term {
    int64_t hi = 0;
    bool uniform = false;
  };
  struct Where {};
  explicit OffsetBound(const passes::AxisAnalysis& axis) : axis_(axis) {}

  Where where(const ir::Operation&, const Where& w) const { return w; }
  std::optional<Term> uniform(const ir::Value*, const Where&) const { return Term{0, true}; }
  std::optional<Term> arange(const ir::Value* v, const Where&) const {
    const passes::ValueRange& r = axis_.get(v).range;
    if (r.lo < 0) return std::nullopt;
    return Term{r.hi, false};
  }
  std::optional<Term> add(const Term& x, const Term& y) const {
    if (x.hi + y.hi > kLimit) return std::nullopt;
    return Term{x.hi + y.hi, x.uniform || y.uniform};
  }
  // Of a uniform amount (a lane part of 0: hi 0, as the offsets are never negative).
  std::optional<Term> sub(const Term& x, const Term& y) const {
    if (y.hi != 0) return std::nullopt;
    return Term{x.hi, x.uniform || y.uniform};
  }
  std::optional<Term> scale(const Term& x, int64_t c) const {
    if (c && x.hi > kLimit / c) return std::nullopt;
    return Term{x.hi * c, x.uniform};
  }
  std::optional<Term> mul_uniform(const Term& x, const Term& y) const {
    if (x.hi != 0 || y.hi != 0 || !x.uniform || !y.uniform) return std::nullopt;
    return Term{0, true};
  }

 private:
  static constexpr int64_t kLimit = int64_t(kBufferNumRecords);
  const passes::AxisAnalysis& axis_;
};

// Whether compiler copy `op` with chunks of `bytes` goes through a resource it makes.
bool copies_through_resource(const ir::Operation& op, int bytes, int eb, const passes::AxisAnalysis& axis,
                             const TargetCapabilities& caps) {
  const auto& bw = caps.buffer_copy_widths;
  if (op.i1 != ir::kCompilerCopy || !caps.has_buffer_ops() || !ir::copy_fills_zeros(op) ||
      std::find(bw.begin(), bw.end(), bytes) == bw.end())
    return false;
  const ir::Value* ptr = op.operands[2];
  if (!ptr->def || ptr->def->op != Op::addptr || !ptr->rematerialized || !ptr->def->operands[0]->def ||
      ptr->def->operands[0]->def->op != Op::splat)
    return false;
  OffsetBound bound(axis);
  auto form = fold_copy_offsets(ptr->def->operands[1], bound, OffsetBound::Where{});
  return form && (form->hi + 1) * eb <= int64_t(kBufferNumRecords);
}

// A copy's pointers, mask or other in its copy layout. A value with a layout of its own
// (not rematerialized address math, which is emitted in its user's layout) converts to it;
// but where it is elementwise math over a broadcast of a smaller tile (samples/moe's
// gathered rows: addptr(broadcast([BLOCK_M, 1] row pointers), column offsets)), the math
// is rebuilt in the copy layout and only the smaller tile converted, when that moves fewer
// bytes: a whole pointer tile, 8 bytes an element, takes as much scratch as a stage.
class InCopyLayout {
 public:
  InCopyLayout(ir::Operation& at, const PlanTarget& t) : at_(at), t_(t) {}

  ir::Value* operator()(ir::Value* v, const Layout& l) { return build(v, l); }

 private:
  static bool needs(const ir::Value* v, const Layout& l) { return v->layout && !v->rematerialized && !(*v->layout == l); }
  static bool rebuildable(const ir::Operation* d) {
    return d && d->results.size() == 1 && d->regions.empty() &&
           (d->op == Op::broadcast || d->op == Op::addptr || d->op == Op::add || d->op == Op::sub || d->op == Op::mul ||
            d->op == Op::band || d->op == Op::bor || d->op == Op::cmp || d->op == Op::select);
  }
  static int64_t bytes(const ir::Value* v) {
    return v->type.numel() * (v->type.dtype == DType::ptr ? 8 : std::max(1, byte_width(v->type.dtype)));
  }
  // The bytes the cheaper way exchanges: converting `v` itself, or its operands in the
  // layouts the rebuilt op reads them in.
  int64_t cost(const ir::Value* v, const Layout& l, int depth = 0) const {
    if (!needs(v, l)) return 0;
    const ir::Operation* d = v->def;
    int64_t direct = bytes(v), rebuilt = direct + 1;
    if (depth < 8 && rebuildable(d)) {
      rebuilt = 0;
      for (const ir::Value* o : d->operands) rebuilt += cost(o, operand_in(*d, o, l), depth + 1);
    }
    return std::min(direct, rebuilt);
  }
  static Layout operand_in(const ir::Operation& d, const ir::Value* o, const Layout& l) {
    return d.op == Op::broadcast ? broadcast_source_layout(l, o->type.shape) : l;
  }
  ir::Value* build(ir::Value* v, const Layout& l, int depth = 0) {
    if (!needs(v, l)) return v;
    ir::Operation* d = v->def;
    // (a builder made after the operands are built: each inserts right before the copy)
    auto before_copy = [&] {
      ir::Builder b(*at_.parent);
      b.before(at_);
      return b;
    };
    if (depth < 8 && rebuildable(d)) {
      int64_t rebuilt = 0;
      for (const ir::Value* o : d->operands) rebuilt += cost(o, operand_in(*d, o, l), depth + 1);
      if (rebuilt < bytes(v)) {
        ir::ValueMap map;
        for (ir::Value* o : d->operands) map.map(o, build(o, operand_in(*d, o, l), depth + 1));
        ir::Operation& c = before_copy().insert(ir::clone(*d, map));
        c.result()->layout = l;
        c.result()->rematerialized = false;
        return c.result();
      }
    }
    // On NVIDIA a value from outside the copy's loops (x's row offsets, loaded once before
    // the K loop) converts once, before the outermost of them: inside, the conversion's
    // trip through shared memory and its barrier came back every iteration (samples/moe's
    // sm_90 K loop: 3 -> 2 barriers; 128x128x128 w8 gate/up 144 -> 36 B of spill stores,
    // down 199 -> 183 registers). (On gfx942 the offsets held across the loop cost the
    // MoE kernels 12-24 VGPRs at the same occupancy: not compared with compare_builds yet.)
    ir::Operation* place = &at_;
    const bool nvidia = !t_.caps->matrix_instructions.empty() &&
                        t_.caps->matrix_instructions[0].family != MatrixFamily::amd_mfma;
    for (ir::Operation* loop = at_.parent->parent;
         nvidia && loop && loop->op == Op::for_ && !ir::defined_inside(v, loop);
         loop = loop->parent ? loop->parent->parent : nullptr)
      place = loop;
    ir::Builder hoisted(*place->parent);
    hoisted.before(*place);
    ir::Value* conv = (place == &at_ ? before_copy() : hoisted).create1(Op::convert_layout, {v}, v->type, at_.loc);
    conv->layout = l;
    plan_conversion_path(*conv->def, t_);
    plan_exchange_encoding(*conv->def, t_);
    return conv;
  }
  ir::Operation& at_;
  const PlanTarget& t_;
};

// (What the rebuilt math replaced goes to the dead-code elimination after this pass: a
// conversion left there would still be emitted and take its scratch.)
void in_layout(ir::Operation& op, size_t k, const Layout& l, const PlanTarget& t) {
  InCopyLayout in(op, t);
  op.operands[k] = in(op.operands[k], l);
}

// A compiler copy no chunk width fits (the pipeliner decided before the layouts and the
// stage's swizzle existed: passes::direct_copy_widths with what it knew then) becomes what
// the pipeliner makes of a load it cannot copy: a load into registers and a store of the
// stage, synchronous, at the copy's place. Its wait then waits for nothing of it. The load
// reads in a copy layout of the widest access the pointers, mask and swizzle vector allow.
void load_and_store(ir::Operation& op, const SharedTileLayout& st, const passes::AxisAnalysis& axis,
                    const PlanTarget& t) {
  const ir::Type& bt = op.operands[0]->type;
  ir::Value* mask = op.operands.size() > 3 ? op.operands[3] : nullptr;
  const int last = bt.rank() - 1;
  int64_t per = std::min<int64_t>({axis.vector_width(op.operands[2], last, 16), st.vec,
                                   mask ? axis.mask_constancy(mask, last) : st.vec});
  std::optional<Layout> l;
  for (per = std::max<int64_t>(per, 1); !l && per >= 1; per /= 2)
    if ((per & (per - 1)) == 0) l = copy_layout(bt.shape, st.offsets, int(per), t.wave_size, t.num_warps);
  if (!l)
    throw compile_error(fmt::format("gpu planning: the pipeliner staged a {}-element tile, fewer than a wave's lanes "
                                    "(a tl bug)", bt.numel()),
                        op.loc.file, op.loc.line);
  const ir::Type vt{bt.dtype, bt.dtype, bt.shape};
  ir::Builder b(*op.parent);
  b.before(op);
  std::vector<ir::Value*> operands = {op.operands[2]};
  if (mask) {
    operands.push_back(mask);
    ir::Value* other = op.operands.size() > 4 ? op.operands[4] : nullptr;
    if (!other) {  // masked-off elements are zeros, as the copy's
      ir::Value* zero = is_float(bt.dtype) ? b.constant_f(bt.dtype, 0.0, op.loc) : b.constant(bt.dtype, 0, op.loc);
      other = b.create1(Op::splat, {zero}, vt, op.loc);
      other->layout = *l;
      other->rematerialized = true;
    }
    operands.push_back(other);
  }
  ir::Value* value = b.create1(Op::load, operands, vt, op.loc);
  value->layout = *l;
  b.create(Op::shared_store, {op.operands[0], op.operands[1], value}, {}, op.loc);
  for (size_t k = 0; k < value->def->operands.size(); ++k) in_layout(*value->def, k, *l, t);
  op.layout = *l;
  op.copy = ir::Operation::CopyPlan{0, false};
}

// Plans `op`'s chunk and copy layout (true: its pointers, mask and other are then to be
// read in it); a compiler copy no width fits is loaded and stored instead (false), the
// user's own copy is an error at the user's line.
bool plan_copy(ir::Operation& op, const passes::SharedBuffers& buffers,
               const passes::AxisAnalysis& axis, const PlanTarget& t) {
  const TargetCapabilities& caps = *t.caps;
  const ir::Type& bt = op.operands[0]->type;
  const ir::Value* ptr = op.operands[2];
  const ir::Value* mask = op.operands.size() > 3 ? op.operands[3] : nullptr;
  const DType dt = bt.dtype;
  const int eb = byte_width(dt);
  const SharedTileLayout st =
      stage_tile_layout(bt.shape, buffers.of(op.operands[0]), eb, {caps.shared_banks, caps.shared_bank_bytes});
  passes::DirectCopyQuery q;
  q.ptr = ptr;
  q.mask = mask;
  q.target_widths.assign(caps.direct_to_shared_widths.begin(), caps.direct_to_shared_widths.end());
  q.wave_size = t.wave_size;
  q.vec_elements = st.vec;
  for (int w : passes::direct_copy_widths(axis, q)) {
    if (auto l = copy_layout(bt.shape, st.offsets, w / eb, t.wave_size, t.num_warps)) {
      op.layout = *l;
      op.copy = ir::Operation::CopyPlan{w, copies_through_resource(op, w, eb, axis, caps)};
      return true;
    }
  }
  if (op.i1 == ir::kCompilerCopy) {
    load_and_store(op, st, axis, t);
    return false;
  }
  const int last = bt.rank() - 1;
  const int contiguous = axis.vector_width(ptr, last, 16);  // elements, aligned to the access
  const int64_t constancy = mask ? axis.mask_constancy(mask, last) : int64_t(1) << 30;
  const int64_t tile_bytes = bt.numel() * eb;
  std::vector<std::string> ws_str;
  for (int w : caps.direct_to_shared_widths) ws_str.push_back(std::to_string(w));
  std::string mask_note = mask ? fmt::format(", its mask is constant over {} elements of a row", constancy) : "";
  throw compile_error(
      fmt::format("tl::amd::global_load_to_shared: {} copies {} bytes a lane straight into shared memory (tl uses "
                  "4 and up), the lanes of a wave on consecutive chunks of the stage; this {} tile ({}-byte "
                  "elements, {} bytes) fits none: its pointers give {} contiguous aligned bytes along the last "
                  "dim{}, a chunk stays within one 16-byte swizzle vector ({} elements), and a wave of {} lanes "
                  "needs the tile to hold {} chunks",
                  caps.arch, fmt::join(ws_str, ", "), ir::Type{dt, dt, bt.shape}.str(), eb, tile_bytes,
                  contiguous * eb, mask_note, st.vec, t.wave_size, t.wave_size),
      op.loc.file, op.loc.line);
}

}  // namespace

int plan_copies(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t) {
  const passes::SharedBuffers buffers(f);
  std::vector<ir::Operation*> copies;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::global_load_to_shared) copies.push_back(&op);
  });
  for (ir::Operation* op : copies) {
    if (!plan_copy(*op, buffers, axis, t)) continue;
    // The pointers, mask and other in the copy layout (operand_layout). A buffer copy's
    // pointers are the form that carries its base and offsets (buffer_operands), never
    // read as pointers.
    for (size_t k = 2; k < op->operands.size(); ++k)
      if (!(k == 2 && (op->i1 == ir::kBufferAccess || op->copy->through_resource))) in_layout(*op, k, *op->layout, t);
  }
  return int(copies.size());
}

}  // namespace tl::gpu

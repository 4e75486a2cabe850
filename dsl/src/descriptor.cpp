// Tensor descriptors (tl/descriptor.hpp): Triton's checks at the user's line, and the
// accesses a load or store traces. No op of their own: a block access is the buffer form
// of tl::amd::buffer_load/buffer_store (amd_ops.cpp), whose semantics every target has,
//
//   base'   = base + sum_d offsets[d] * strides[d]             (a scalar pointer, i64 math)
//   offs    = sum_d arange(block[d]) (along dim d) * strides[d]  (i32, within the block)
//   mask    = and_d (0 <= offsets[d] + arange(block[d]) < shape[d])
//   load(addptr(splat(base'), offs), mask, 0 or NaN)  marked kBufferAccess
//
// so that AMD makes it a buffer load through a resource at base' (one scalar base, one
// offset VGPR, masked-off lanes past the resource's end), NVIDIA and the CPU the masked
// load through pointers. The mask is an `and` of one compare pair per dim, broadcast: a
// thread compares each row and each column it holds once, not each element, and the axis
// analysis reads the last dim's compares as constant over aligned runs where the shape and
// offsets allow (a shape divisible by 16 keeps 16-byte accesses).
//
// Where the kernel takes the descriptor's CUtensorMap (NVIDIA sm_90 under
// launch_options::tma: descriptor_parts::tensor_map), a load is instead
//
//   buf = shared_alloc [1, block...] (the encoding TMA writes: tensor_map_swizzle_bytes)
//   tensor_map_load(buf, 0, map, offsets...)   one box copied by TMA, waited for
//   shared_load(buf, 0)                        in whatever layout its users want
//
// the shape's bounds and the padding being the map's (TMA fills what lies outside with
// 0 or NaN), so there is no mask. A store is, likewise,
//
//   buf = shared_alloc [1, block...] (the same encoding)
//   shared_store(buf, 0, value)
//   tensor_map_store(buf, 0, map, offsets...)   one box written by TMA (not past the shape)
#include <fmt/format.h>

#include <bit>
#include <limits>

#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/op_properties.hpp"
#include "dsl/src/trace.hpp"
#include "tl/amd.hpp"
#include "tl/descriptor.hpp"

namespace tl::detail {

using ir::Value;

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// An entry as a scalar of type t: a C++ integer becomes a constant, a tile must be a
// scalar integer (cast to t).
Value* scalar_index(const index_arg& a, DType t, const char* fn, const char* what, size_t i, const Loc& loc) {
  if (!a.v) return constant(t, 0, a.c, loc);
  if (!a.v->type.is_scalar() || a.v->type.is_ptr() || !is_int(a.v->type.dtype) || a.v->type.dtype == DType::i1)
    throw trace_error(fmt::format("{}: {}[{}] must be a scalar integer or a C++ integer, got {}", fn, what, i,
                                  a.v->type.str()), loc);
  return a.v->type.dtype == t ? a.v : cast(a.v, t, false, loc);
}

// The constant value of a C++ integer or a constant scalar tile, if it is one.
std::optional<int64_t> constant_of(const index_arg& a) {
  if (!a.v) return a.c;
  const ir::Operation* d = a.v->def;
  if (d && d->op == Op::constant && is_int(a.v->type.dtype)) return d->i0;
  return std::nullopt;
}

void check_offsets(const Shape& block, const std::vector<index_arg>& offsets, const char* fn, const Loc& loc) {
  if (offsets.size() != block.size())
    throw trace_error(fmt::format("{}: {} offset{} for a descriptor of {} dim{} (block {})", fn, offsets.size(),
                                  offsets.size() == 1 ? "" : "s", block.size(), block.size() == 1 ? "" : "s",
                                  shape_str(block)), loc);
}

// base', offs and mask of the block at `offsets` (see the top of this file).
struct BlockAccess {
  Value* base;
  Value* offsets;
  Value* mask;
};
BlockAccess block_access(const descriptor_parts& d, const Shape& block, const std::vector<index_arg>& offsets,
                         const char* fn, const Loc& loc) {
  check_offsets(block, offsets, fn, loc);
  const size_t rank = block.size();
  Value* move = nullptr;  // sum_d offsets[d] * strides[d], i64
  Value* offs = nullptr;
  Value* mask = nullptr;
  for (size_t i = 0; i < rank; ++i) {
    Value* off = scalar_index(offsets[i], DType::i32, fn, "offsets", i, loc);
    Value* step = binary(Op::mul, cast(off, DType::i64, false, loc), d.strides[i], loc);
    move = move ? binary(Op::add, move, step, loc) : step;
    // arange(block[i]) along dim i of the block
    Shape along(rank, 1);
    along[i] = block[i];
    Value* a = reshape(arange(0, block[i], loc), along, loc);
    // (the last stride is 1; the others fit i32 where a block spans under 2 GiB)
    Value* term = i + 1 == rank ? a : binary(Op::mul, a, cast(d.strides[i], DType::i32, false, loc), loc);
    offs = offs ? binary(Op::add, offs, term, loc) : term;
    Value* idx = binary(Op::add, a, off, loc);
    Value* in = compare(CmpPred::lt, idx, d.shape[i], loc);
    // A C++ offset known non-negative needs no lower bound.
    std::optional<int64_t> c = constant_of(offsets[i]);
    if (!c || *c < 0) in = binary(Op::band, compare(CmpPred::ge, idx, constant(DType::i32, 0, 0, loc), loc), in, loc);
    mask = mask ? binary(Op::band, mask, in, loc) : in;
  }
  return {binary(Op::addptr, d.base, move, loc), broadcast_to(offs, block, loc), broadcast_to(mask, block, loc)};
}

// The shared encoding a TMA box of `block` lands in with `swizzle` bytes (see
// tensor_map_swizzle_bytes): a warpgroup dot operand's (the same swizzle), else row-major.
ir::SharedEncoding tensor_map_encoding(DType e, const Shape& block, int swizzle) {
  const ir::Type buffer = ir::Type::shared_buffer(e, block, 1);
  if (swizzle) return gpu::descriptor_encoding(buffer);
  ir::SharedEncoding enc;
  for (size_t d = block.size(); d-- > 0;) enc.order.push_back(int(d));
  enc.vec = std::max(1, std::min(16 / byte_width(e), block.back()));
  return enc;
}

}  // namespace

int tensor_map_swizzle_bytes(DType e, std::span<const int> block) {
  if (e == DType::ptr || e == DType::i1 || block.empty()) return -1;
  const int64_t eb = byte_width(e);
  int64_t bytes = eb;
  for (int b : block) bytes *= b;
  if (bytes < 128) return -1;
  const int64_t row = int64_t(block.back()) * eb;
  if (block.size() == 2 && block[0] % 8 == 0 && row % 32 == 0) return row <= 128 ? int(row) : -1;
  return 0;
}

descriptor_parts make_tensor_descriptor(Value* base, const std::vector<index_arg>& shape,
                                        const std::vector<index_arg>& strides, const Shape& block,
                                        padding_option padding, const Loc& loc) {
  const char* fn = "tl::make_tensor_descriptor";
  if (!base->type.is_ptr() || !base->type.is_scalar())
    throw trace_error(fmt::format("{}: the base must be a scalar pointer, got {}", fn, base->type.str()), loc);
  const DType e = base->type.pointee;
  if (e == DType::ptr || e == DType::i1)
    throw trace_error(fmt::format("{}: a descriptor of {} elements (numbers only, as Triton's)", fn, name(e)), loc);
  const size_t rank = block.size();
  if (rank < 1 || rank > 5)
    throw trace_error(fmt::format("{}: the block {} has {} dims; descriptors have 1 to 5", fn,
                                  shape_str(block), rank), loc);
  if (shape.size() != rank || strides.size() != rank)
    throw trace_error(fmt::format("{}: {} shape entries and {} strides for a block of {} dims {}", fn, shape.size(),
                                  strides.size(), rank, shape_str(block)), loc);
  int64_t elements = 1;
  for (int b : block) {
    if (b < 1 || !std::has_single_bit(unsigned(b)))
      throw trace_error(fmt::format("{}: block_shape {}: every dim must be a power of two, got {}", fn,
                                    shape_str(block), b), loc);
    elements *= b;
  }
  if (elements > max_tile_elements)
    throw trace_error(fmt::format("{}: block_shape {} has {} elements, more than a tile's {}", fn, shape_str(block),
                                  elements, max_tile_elements), loc);
  const int eb = byte_width(e);
  if (int64_t(block.back()) * eb < 16)
    throw trace_error(fmt::format("{}: the block's last dim must span at least 16 bytes, got {} x {} = {} bytes",
                                  fn, block.back(), eb, block.back() * eb), loc);
  std::optional<int64_t> last = constant_of(strides.back());
  if (!last || *last != 1)
    throw trace_error(last ? fmt::format("{}: the last stride must be 1 (the last dim contiguous), got {}", fn, *last)
                           : fmt::format("{}: the last stride must be a C++ 1 (the last dim contiguous), got a run-time "
                                         "value", fn), loc);
  if (padding == padding_option::nan && !is_float(e))
    throw trace_error(fmt::format("{}: padding_option::nan for {} elements (NaN padding is for floating-point "
                                  "elements only, as Triton's)", fn, name(e)), loc);
  descriptor_parts p;
  p.padding = padding;
  // The promises of a descriptor (Triton's, TMA's): the base and every stride but the
  // last are multiples of 16 bytes. Recorded as hints, they give the block's rows 16-byte
  // accesses.
  p.base = hint(base, HintKind::multiple_of, {16}, loc);
  for (size_t i = 0; i < rank; ++i) {
    p.shape.push_back(scalar_index(shape[i], DType::i32, fn, "shape", i, loc));
    Value* s = scalar_index(strides[i], DType::i64, fn, "strides", i, loc);
    std::optional<int64_t> c = constant_of(strides[i]);
    if (c && *c < 0) throw trace_error(fmt::format("{}: strides[{}] is {}; strides are non-negative", fn, i, *c), loc);
    if (c && i + 1 < rank && (*c * eb) % 16 != 0)
      throw trace_error(fmt::format("{}: strides[{}] = {} is {} bytes, not a multiple of 16", fn, i, *c, *c * eb), loc);
    if (!c && i + 1 < rank && eb < 16) s = hint(s, HintKind::multiple_of, {16 / eb}, loc);
    p.strides.push_back(s);
  }
  return p;
}

void check_host_descriptor(DType e, uint64_t base, const std::vector<int64_t>& shape,
                           const std::vector<int64_t>& strides, const std::vector<int>& block,
                           padding_option padding, const std::source_location& loc) {
  auto fail = [&](const std::string& what) {
    throw launch_error("tl::TensorDescriptor: " + what, loc.file_name(), loc.line());
  };
  const size_t rank = shape.size();
  if (rank < 1 || rank > 5) fail(fmt::format("the shape has {} dims; descriptors have 1 to 5", rank));
  if (strides.size() != rank || block.size() != rank)
    fail(fmt::format("{} shape entries, {} strides and {} block dims: one each per dim", rank, strides.size(),
                     block.size()));
  const int eb = byte_width(e);
  if (base % 16 != 0) fail(fmt::format("the base {:#x} is not 16-byte aligned", base));
  int64_t elements = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (block[i] < 1 || !std::has_single_bit(unsigned(block[i])))
      fail(fmt::format("block_shape {}: every dim must be a power of two, got {}", shape_str(block), block[i]));
    elements *= block[i];
    if (shape[i] < 0 || shape[i] > INT32_MAX)
      fail(fmt::format("shape[{}] = {}: shape entries are in [0, 2^31)", i, shape[i]));
    if (strides[i] < 0) fail(fmt::format("strides[{}] is {}; strides are non-negative", i, strides[i]));
    if (i + 1 < rank && (strides[i] * eb) % 16 != 0)
      fail(fmt::format("strides[{}] = {} is {} bytes, not a multiple of 16", i, strides[i], strides[i] * eb));
  }
  if (elements > max_tile_elements)
    fail(fmt::format("block_shape {} has {} elements, more than a tile's {}", shape_str(block), elements,
                     max_tile_elements));
  if (int64_t(block.back()) * eb < 16)
    fail(fmt::format("the block's last dim must span at least 16 bytes, got {} x {} = {} bytes", block.back(), eb,
                     block.back() * eb));
  if (strides.back() != 1) fail(fmt::format("the last stride must be 1 (the last dim contiguous), got {}", strides.back()));
  if (padding == padding_option::nan && !is_float(e))
    fail(fmt::format("padding_option::nan for {} elements (NaN padding is for floating-point elements only)", name(e)));
}

void host_descriptor_rank_error(int rank, int param_rank, const std::source_location& loc) {
  throw launch_error(fmt::format("tl launch: a tl::TensorDescriptor of {} dim{} for a kernel parameter "
                                 "tl::tensor_descriptor<T, {}>", rank, rank == 1 ? "" : "s", param_rank),
                     loc.file_name(), loc.line());
}

// Whether the scalar integer `v` is, at every launch, a multiple of `m` (a power of two up
// to 16), as far as the trace shows: constants, products with such a value, sums and
// differences of such values, left shifts, integer casts, tl::multiple_of hints, kernel
// arguments the launch specialized as divisible by 16 (Triton's divisibility=16), and a
// tl::range variable whose start and step are such values. Anything else is not known.
bool known_multiple_of(const ir::Function& f, const Value* v, int64_t m, int depth = 0) {
  if (depth > 64) return false;
  const ir::Operation* d = v->def;
  if (!d) {
    const ir::Block* owner = v->owner;
    if (!owner) return false;
    if (!owner->parent)  // a kernel argument
      return size_t(v->index) < f.arg_info.size() && f.arg_info[size_t(v->index)].divisible_by_16 && 16 % m == 0;
    const ir::Operation* loop = owner->parent;
    return loop->op == Op::for_ && v->index == 0 && known_multiple_of(f, loop->operands[0], m, depth + 1) &&
           known_multiple_of(f, loop->operands[2], m, depth + 1);
  }
  auto opnd = [&](size_t i) { return known_multiple_of(f, d->operands[i], m, depth + 1); };
  switch (d->op) {
    case Op::constant: return d->i0 % m == 0;
    case Op::mul: return opnd(0) || opnd(1);
    case Op::add: case Op::sub: return opnd(0) && opnd(1);
    case Op::shl: {
      const ir::Operation* k = d->operands[1]->def;
      return opnd(0) || (k && k->op == Op::constant && k->i0 >= 0 && k->i0 < 63 && (int64_t(1) << k->i0) % m == 0);
    }
    case Op::cast: return is_int(d->operands[0]->type.dtype) && opnd(0);
    case Op::hint:
      return opnd(0) || (HintKind(d->i0) == HintKind::multiple_of && !d->ints.empty() && d->ints[0] % m == 0);
    default: return false;
  }
}

// TMA takes a box whose innermost coordinate is a multiple of 16 bytes (an H200 faults
// with CUDA_ERROR_ILLEGAL_INSTRUCTION otherwise, which ends the context:
// bench/results/h200-2026-11-29-session16/tma_probe; Triton leaves it to the user,
// Gluon's tutorial 04 states the rule). Where the trace cannot show that the offset is
// such a multiple, the access takes the pointer path, right at any offset; a
// tl::multiple_of on the offset states it.
bool tma_inner_offset_aligned(const std::vector<index_arg>& offsets, DType e, const Loc& loc) {
  if (offsets.empty()) return true;  // (check_offsets names the mistake)
  const int64_t m = 16 / byte_width(e);
  const index_arg& inner = offsets.back();
  if (!inner.v) return inner.c % m == 0;
  return known_multiple_of(Trace::current(loc).function(), inner.v, m);
}

// The shared buffer a TMA box lands in, or is written from: one stage in the map's
// swizzle (the launch gave the map only where tensor_map_swizzle_bytes is not -1:
// choose_tensor_maps), and that stage's index.
struct TmaStage {
  Value* buf;
  Value* stage;
};
TmaStage tma_stage(DType e, const Shape& block, const Loc& loc) {
  Value* buf = Trace::current(loc).emit1(Op::shared_alloc, {}, ir::Type::shared_buffer(e, block, 1), loc);
  buf->def->shared = tensor_map_encoding(e, block, tensor_map_swizzle_bytes(e, block));
  return {buf, constant(DType::i32, 0, 0, loc)};
}

Value* descriptor_load(const descriptor_parts& d, const Shape& block, const std::vector<index_arg>& offsets,
                       const access_options& opts, const Loc& loc) {
  if (d.tensor_map && tma_inner_offset_aligned(offsets, d.base->type.pointee, loc)) {
    const char* fn = "tensor_descriptor::load";
    check_offsets(block, offsets, fn, loc);
    auto [buf, stage] = tma_stage(d.base->type.pointee, block, loc);
    std::vector<Value*> operands{buf, stage, d.tensor_map};
    for (size_t i = 0; i < offsets.size(); ++i) operands.push_back(scalar_index(offsets[i], DType::i32, fn, "offsets", i, loc));
    Trace::current(loc).emit(Op::tensor_map_load, std::move(operands), loc);
    return shared_load(buf, stage, loc);
  }
  BlockAccess a = block_access(d, block, offsets, "tensor_descriptor::load", loc);
  // A masked-off element reads 0, as TMA's zero padding (on AMD the buffer's own 0: a
  // zero `other` costs no select there), or NaN (TMA's OOB_FILL_NAN_REQUEST_ZERO_FMA: a
  // select of NaN over the buffer's 0 on AMD).
  const bool nan = d.padding == padding_option::nan;
  Value* other = constant(d.base->type.pointee, nan ? std::numeric_limits<double>::quiet_NaN() : 0.0, 0, loc);
  return buffer_load(a.base, a.offsets, a.mask, other, opts, loc);
}

void descriptor_store(const descriptor_parts& d, const Shape& block, const std::vector<index_arg>& offsets,
                      Value* value, const access_options& opts, const Loc& loc) {
  const char* fn = "tensor_descriptor::store";
  const DType e = d.base->type.pointee;
  if (value->type.is_ptr() || value->type.dtype != e)
    throw trace_error(fmt::format("{}: the value is {}, the descriptor's elements are {} (convert with .to<>())", fn,
                                  value->type.str(), name(e)), loc);
  if (value->type.shape != block)
    throw trace_error(fmt::format("{}: the value's shape {} is not the block's {}", fn, shape_str(value->type.shape),
                                  shape_str(block)), loc);
  if (d.tensor_map && tma_inner_offset_aligned(offsets, e, loc)) {
    check_offsets(block, offsets, fn, loc);
    auto [buf, stage] = tma_stage(e, block, loc);
    std::vector<Value*> operands{buf, stage, d.tensor_map};
    // A TMA store only where the box starts inside the shape; else the masked store below,
    // chosen at run time (the condition is one per program). On the H200 the stores of
    // boxes starting inside ran right (tutorial 09's ragged edges: the part past the shape
    // is not written), and tma_descriptor_test's stores at (-10, 64), (100, 0) and
    // (16, -20) faulted with an illegal instruction: which of the negative start and the
    // wholly outside box TMA refuses was not told apart (bench/results/h200-2026-11-29-session16).
    Value* inside = nullptr;
    for (size_t i = 0; i < offsets.size(); ++i) {
      Value* c = scalar_index(offsets[i], DType::i32, fn, "offsets", i, loc);
      operands.push_back(c);
      Value* in = binary(Op::band, compare(CmpPred::ge, c, constant(DType::i32, 0, 0, loc), loc),
                         compare(CmpPred::lt, c, d.shape[i], loc), loc);
      inside = inside ? binary(Op::band, inside, in, loc) : in;
    }
    begin_if(inside, loc);
    shared_store(buf, stage, value, loc);
    Trace::current(loc).emit(Op::tensor_map_store, std::move(operands), loc);
    begin_else();
    BlockAccess a = block_access(d, block, offsets, fn, loc);
    buffer_store(a.base, a.offsets, value, a.mask, opts, loc);
    end_if();
    return;
  }
  BlockAccess a = block_access(d, block, offsets, fn, loc);
  buffer_store(a.base, a.offsets, value, a.mask, opts, loc);
}

}  // namespace tl::detail

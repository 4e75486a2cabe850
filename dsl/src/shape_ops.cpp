// Triton's shape-manipulating tile operations (tl.join, tl.split, tl.interleave, tl.cat,
// tl.flip) and the reduction forms built on tl's reductions and scans (every axis,
// keep_dims, reverse scans). Every misuse is a trace_error at the user's line.
#include <fmt/format.h>

#include "dsl/src/trace.hpp"

namespace tl::detail {

using ir::Type;
using ir::Value;

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

Trace& T(const Loc& loc) { return Trace::current(loc); }

void check_rank(const Shape& s, const char* fn, const Loc& loc) {
  if (s.size() > 5) throw trace_error(fmt::format("{}: tiles have at most 5 dimensions (Triton's limit), the result would be {}", fn, shape_str(s)), loc);
}

// The element types must agree exactly: these ops move elements, they do not promote.
void same_element(const Value* a, const Value* b, const char* fn, const Loc& loc) {
  if (a->type.scalar() != b->type.scalar())
    throw trace_error(fmt::format("{}: the tiles hold {} and {} (convert one with .to<>())", fn, a->type.scalar().str(),
                                  b->type.scalar().str()), loc);
}

}  // namespace

Value* join(Value* a, Value* b, const Loc& loc) {
  same_element(a, b, "tl::join", loc);
  // The shapes broadcast (Triton's join broadcasts its operands first); two scalars give [2].
  Shape s = a->type.shape;
  if (a->type.shape != b->type.shape) {
    Shape bs = b->type.shape;
    size_t n = std::max(s.size(), bs.size());
    Shape r(n);
    for (size_t i = 0; i < n; ++i) {
      int da = i < n - s.size() ? 1 : s[i - (n - s.size())];
      int db = i < n - bs.size() ? 1 : bs[i - (n - bs.size())];
      if (da != db && da != 1 && db != 1)
        throw trace_error(fmt::format("tl::join: shapes {} and {} do not broadcast", shape_str(s), shape_str(bs)), loc);
      r[i] = std::max(da, db);
    }
    s = r;
  }
  Shape out = s;
  out.push_back(2);
  check_rank(out, "tl::join", loc);
  if (!s.empty()) {
    a = broadcast_to(a, s, loc);
    b = broadcast_to(b, s, loc);
  } else {
    // A scalar joined is a one-element tile first: join's operands are tiles.
    a = reshape(a, {1}, loc);
    b = reshape(b, {1}, loc);
    Value* j = T(loc).emit1(Op::join, {a, b}, a->type.with_shape({1, 2}), loc);
    return reshape(j, {2}, loc);
  }
  return T(loc).emit1(Op::join, {a, b}, a->type.with_shape(out), loc);
}

std::pair<Value*, Value*> split(Value* a, const Loc& loc) {
  const Shape& s = a->type.shape;
  if (s.empty() || s.back() != 2)
    throw trace_error(fmt::format("tl::split: the last dim must be 2, the tile is {}", shape_str(s)), loc);
  Shape half(s.begin(), s.end() - 1);
  if (half.empty()) {  // [2] -> two scalars, through [1, 2]
    auto [lo, hi] = split(reshape(a, {1, 2}, loc), loc);
    return {reshape(lo, {}, loc), reshape(hi, {}, loc)};
  }
  Value* lo = T(loc).emit1(Op::split, {a}, a->type.with_shape(half), loc);
  Value* hi = T(loc).emit1(Op::split, {a}, a->type.with_shape(half), loc);
  hi->def->i0 = 1;
  return {lo, hi};
}

Value* interleave(Value* a, Value* b, const Loc& loc) {
  Value* j = join(a, b, loc);
  Shape s = j->type.shape;
  s.pop_back();
  if (s.empty()) return j;  // two scalars: [2] already
  s.back() *= 2;
  return reshape(j, s, loc);
}

Value* cat(Value* a, Value* b, const Loc& loc) {
  same_element(a, b, "tl::cat", loc);
  if (a->type.is_scalar() || b->type.is_scalar())
    throw trace_error("tl::cat: cannot concatenate scalars (tl::join makes a [2] of two)", loc);
  // Dims are powers of two, so the sum along dim 0 is one only for equal sizes.
  if (a->type.shape != b->type.shape)
    throw trace_error(fmt::format("tl::cat: the shapes must be equal, got {} and {}", shape_str(a->type.shape),
                                  shape_str(b->type.shape)), loc);
  Shape out = a->type.shape;
  out[0] *= 2;
  if (int64_t(a->type.numel()) * 2 > max_tile_elements)
    throw trace_error(fmt::format("tl::cat: the result {} has more than {} elements", shape_str(out), max_tile_elements), loc);
  return T(loc).emit1(Op::cat, {a, b}, a->type.with_shape(out), loc);
}

Value* flip(Value* a, int dim, const Loc& loc) {
  int r = a->type.rank();
  if (r == 0) throw trace_error("tl::flip: cannot flip a scalar", loc);
  int d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r) throw trace_error(fmt::format("tl::flip: dim {} is out of range for a rank-{} tile", dim, r), loc);
  if (a->type.shape[d] == 1) return a;
  Value* v = T(loc).emit1(Op::flip, {a}, a->type, loc);
  v->def->i0 = d;
  return v;
}

Value* gather(Value* src, Value* index, int axis, const Loc& loc) {
  const Shape& s = src->type.shape;
  const Shape& is = index->type.shape;
  int r = src->type.rank();
  if (r == 0) throw trace_error("tl::gather: cannot gather from a scalar", loc);
  int ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r) throw trace_error(fmt::format("tl::gather: axis {} is out of range for a rank-{} tile", axis, r), loc);
  if (!is_int(index->type.dtype) || index->type.is_ptr() || index->type.dtype == DType::i1)
    throw trace_error(fmt::format("tl::gather: the index must be an integer tile, got {}", index->type.scalar().str()), loc);
  bool ok = int(is.size()) == r;
  for (int d = 0; ok && d < r; ++d) ok = d == ax || is[d] == s[d];
  if (!ok)
    throw trace_error(fmt::format("tl::gather: the index's shape {} must be the source's {} but along axis {}",
                                  shape_str(is), shape_str(s), ax), loc);
  Value* v = T(loc).emit1(Op::gather, {src, index}, src->type.with_shape(is), loc);
  v->def->i0 = ax;
  return v;
}

Value* reduce_dims(ReduceKind k, Value* a, int axis, bool all_axes, bool keep_dims, const Loc& loc) {
  if (k == ReduceKind::xor_sum && !is_int(a->type.dtype))
    throw trace_error(fmt::format("tl::xor_sum: needs an integer tile, got {}", name(a->type.dtype)), loc);
  const Shape s = a->type.shape;
  if (!all_axes) {
    Value* r = reduce(k, a, axis, loc);
    return keep_dims ? expand_dims(r, axis < 0 ? axis + int(s.size()) : axis, loc) : r;
  }
  static const char* names[] = {"tl::sum", "tl::max", "tl::min", "tl::argmax", "tl::argmin", "tl::xor_sum", "tl::prod"};
  if (s.empty()) throw trace_error(fmt::format("{}: cannot reduce a scalar", names[int(k)]), loc);
  // Every axis: the tile flattened (Triton's axis=None), one reduction.
  Value* flat = s.size() == 1 ? a : reshape(a, {int(a->type.numel())}, loc);
  Value* r = reduce(k, flat, 0, loc);
  return keep_dims ? reshape(r, Shape(s.size(), 1), loc) : r;
}

Value* scan(ReduceKind k, Value* a, int axis, bool reverse, const Loc& loc) {
  const char* fn = k == ReduceKind::prod ? "tl::cumprod" : "tl::cumsum";
  int r = a->type.rank();
  if (r == 0) throw trace_error(fmt::format("{}: cannot scan a scalar", fn), loc);
  int ax = axis < 0 ? axis + r : axis;
  if (ax < 0 || ax >= r) throw trace_error(fmt::format("{}: axis {} is out of range for a rank-{} tile", fn, axis, r), loc);
  DType d = a->type.dtype;
  if (a->type.is_ptr() || is_fp8(d) || is_mx(d) || d == DType::i1)
    throw trace_error(fmt::format("{}: cannot scan {} elements (cast first)", fn, name(d)), loc);
  // A reverse scan is the forward scan of the flipped tile, flipped back (what Triton's
  // reverse=True computes: out[i] combines a[i], a[i+1], ..., in that order).
  Value* x = reverse ? flip(a, ax, loc) : a;
  Value* out = T(loc).emit1(Op::scan, {x}, x->type, loc);
  out->def->i0 = ax;
  out->def->i1 = int64_t(k);
  return reverse ? flip(out, ax, loc) : out;
}

}  // namespace tl::detail

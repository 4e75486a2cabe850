// tl::sort, tl::topk and tl::histogram (tl/sort.hpp): the checks at the user's line and
// the ops they trace. sort and histogram are ops of their own (Op::sort, Op::histogram),
// lowered per target; topk is a sort of (value, index) pairs whose result keeps the first
// k along the dim (Triton's sort_impl with k: chunks of k sorted, then halved).
#include <fmt/format.h>

#include <bit>

#include "dsl/src/trace.hpp"
#include "tl/sort.hpp"

namespace tl::detail {

using ir::Value;

namespace {

Trace& T(const Loc& loc) { return Trace::current(loc); }

// The dim as an index (negative counts from the end), checked.
int checked_dim(const Value* a, int dim, const char* fn, const Loc& loc) {
  const int r = a->type.rank();
  if (r == 0) throw trace_error(fmt::format("{}: cannot sort a scalar", fn), loc);
  const int d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r) throw trace_error(fmt::format("{}: dim {} is out of range for a rank-{} tile", fn, dim, r), loc);
  const DType t = a->type.dtype;
  if (a->type.is_ptr() || is_fp8(t) || is_mx(t) || t == DType::i1)
    throw trace_error(fmt::format("{}: cannot sort {} elements (integers and f16/bf16/f32/f64 only; cast first)", fn, name(t)),
                      loc);
  const int n = a->type.shape[size_t(d)];
  if (!std::has_single_bit(unsigned(n)))  // (every tile dim is; kept for the rule's sake)
    throw trace_error(fmt::format("{}: the dim's length {} is not a power of two (Triton's bitonic sort needs one)", fn, n),
                      loc);
  return d;
}

// 0, 1, ..., n - 1 along dim d of `shape`, the same in every other position (i32).
Value* positions(const Shape& shape, int d, const Loc& loc) {
  Shape along(shape.size(), 1);
  along[size_t(d)] = shape[size_t(d)];
  return broadcast_to(reshape(arange(0, shape[size_t(d)], loc), along, loc), shape, loc);
}

}  // namespace

namespace {

// Op::sort of `a` along d (checked), with the positions as its payload when asked, its
// results `k` long along d: the first k of the sorted order (k < n: a top-k, which
// always carries the positions, so that the order is total).
std::pair<Value*, Value*> emit_sort(Value* a, int d, int k, bool descending, bool with_indices, const Loc& loc) {
  std::vector<Value*> operands = {a};
  if (with_indices) operands.push_back(positions(a->type.shape, d, loc));
  ir::Operation* op = T(loc).emit(Op::sort, operands, loc);
  op->i0 = d;
  op->i1 = descending ? 1 : 0;
  auto kept = [&](ir::Type t) {
    t.shape[size_t(d)] = k;
    return t;
  };
  Value* v = op->add_result(kept(a->type));
  Value* i = with_indices ? op->add_result(kept(operands[1]->type)) : nullptr;
  return {v, i};
}

}  // namespace

std::pair<Value*, Value*> sort(Value* a, int dim, bool descending, bool with_indices, const Loc& loc) {
  const int d = checked_dim(a, dim, "tl::sort", loc);
  return emit_sort(a, d, a->type.shape[size_t(d)], descending, with_indices, loc);
}

std::pair<Value*, Value*> topk(Value* a, int k, int dim, bool with_indices, const Loc& loc) {
  const int d = checked_dim(a, dim, "tl::topk", loc);
  const int n = a->type.shape[size_t(d)];
  if (k <= 0 || k > n)
    throw trace_error(fmt::format("tl::topk: k = {} must be from 1 to the dim's length {}", k, n), loc);
  if (!std::has_single_bit(unsigned(k)))
    throw trace_error(fmt::format("tl::topk: k = {} is not a power of two (the result's dim is k, and tile dims are "
                                  "powers of two): take tl::topk(x, {}) and mask the store to the first {}",
                                  k, std::bit_ceil(unsigned(k)), k),
                      loc);
  // The indices make the order total, so equal values keep their index order, asked for
  // or not (on GPUs they share one 64-bit key with the value where both fit).
  auto [v, i] = emit_sort(a, d, k, /*descending=*/true, /*with_indices=*/true, loc);
  return {v, with_indices ? i : nullptr};
}

Value* histogram(Value* x, int num_bins, Value* mask, const Loc& loc) {
  const DType t = x->type.dtype;
  if (x->type.is_scalar()) throw trace_error("tl::histogram: needs a tile, got a scalar", loc);
  if (!is_int(t) || x->type.is_ptr())
    throw trace_error(fmt::format("tl::histogram: needs an integer tile, got {} (convert the values to bin numbers first)",
                                  x->type.scalar().str()), loc);
  if (num_bins <= 0 || !std::has_single_bit(unsigned(num_bins)))
    throw trace_error(fmt::format("tl::histogram: num_bins = {} must be a positive power of two (the result is a tile "
                                  "of num_bins)", num_bins), loc);
  std::vector<Value*> operands = {x};
  if (mask) {
    if (mask->type.dtype != DType::i1)
      throw trace_error(fmt::format("tl::histogram: the mask must be an i1 tile, got {}", mask->type.scalar().str()), loc);
    operands.push_back(broadcast_to(mask, x->type.shape, loc));
  }
  return T(loc).emit1(Op::histogram, operands, ir::Type{DType::i32, DType::i32, {num_bins}}, loc);
}

}  // namespace tl::detail

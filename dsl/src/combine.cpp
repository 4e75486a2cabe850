// tl::reduce and tl::associative_scan with the user's combine function (Triton's tl.reduce
// and tl.associative_scan): the lambda is called once on placeholder scalars, the block
// arguments of the op's region, and what it returns is that region's yield. The targets
// inline the region wherever they combine two partial results (docs/ir.md, "reduce and
// scan with a combine region"). Every misuse is a trace_error at the user's line: the
// call's for its operands and what the combine returns, the combine's own for what it does
// (Trace::check_combine).
#include <fmt/format.h>

#include "dsl/src/trace.hpp"

namespace tl::detail {

using ir::Type;
using ir::Value;

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

const char* fn_name(Op op) { return op == Op::reduce ? "tl::reduce" : "tl::associative_scan"; }

}  // namespace

CombineRegion::CombineRegion(Op op, std::vector<Value*> operands, int axis, int flags, const Loc& loc)
    : flags_(flags), loc_(loc) {
  const char* fn = fn_name(op);
  Trace& t = Trace::current(loc);
  if (is_combine_region(t.block()))
    throw trace_error(fmt::format("{} inside a combine function (a combine combines scalars)", fn), loc);
  if (operands.empty()) throw trace_error(fmt::format("{}: no operands (give a tile or a std::tuple of tiles)", fn), loc);
  for (Value* v : operands)
    if (v == unassigned_placeholder()) throw trace_error(unassigned_message(fn), loc);
  shape_ = operands[0]->type.shape;
  rank_ = int(shape_.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const Type& ty = operands[i]->type;
    if (ty.is_scalar())
      throw trace_error(fmt::format("{}: operand {} is a scalar; it takes tiles", fn, i), loc);
    if (ty.is_ptr() || is_fp8(ty.dtype) || is_mx(ty.dtype) || ty.dtype == DType::i1)
      throw trace_error(fmt::format("{}: operand {} holds {} elements, which a combine cannot take (cast first)", fn, i,
                                    name(ty.dtype)),
                        loc);
    if (ty.shape != shape_)
      throw trace_error(fmt::format("{}: the operands must have one shape: operand 0 is {}, operand {} is {}", fn,
                                    shape_str(shape_), i, shape_str(ty.shape)),
                        loc);
  }
  if (flags & kAllAxes) {
    // Triton's axis=None: the tile flattened, one reduction to a scalar.
    if (rank_ > 1)
      for (Value*& v : operands) v = reshape(v, {int(v->type.numel())}, loc);
    axis_ = 0;
  } else {
    axis_ = axis < 0 ? axis + rank_ : axis;
    if (axis_ < 0 || axis_ >= rank_)
      throw trace_error(fmt::format("{}: axis {} is out of range for a rank-{} tile", fn, axis, rank_), loc);
  }
  // A reverse scan is the forward scan of the flipped tiles, flipped back: out[i] combines
  // x[n-1], ..., x[i], the later elements on the left (what tl::cumsum's reverse does).
  if (flags & kReverse)
    for (Value*& v : operands) v = flip(v, axis_, loc);
  std::vector<DType> dtypes;
  for (Value* v : operands) dtypes.push_back(v->type.dtype);
  Shape out_shape = operands[0]->type.shape;
  if (op == Op::reduce) out_shape.erase(out_shape.begin() + axis_);
  op_ = t.emit(op, operands, loc);
  for (DType d : dtypes) op_->add_result(Type{d, d, out_shape});
  op_->i0 = axis_;
  op_->i1 = int64_t(ReduceKind::sum);  // (unused: the region is the combine)
  ir::Block* region = op_->add_region();
  for (int side = 0; side < 2; ++side)
    for (DType d : dtypes) args_.push_back(region->add_arg(Type{d, d, {}}));
  outer_ = t.block();
  t.set_block(region);
}

CombineRegion::~CombineRegion() {
  // The combine threw: tracing stops with this error, from the kernel's insertion point.
  if (done_) return;
  if (Trace* t = Trace::current_or_null(); t && op_ && t->block() == op_->regions[0].get()) t->set_block(outer_);
}

std::vector<Value*> CombineRegion::finish(const std::vector<Value*>& yielded) {
  const char* fn = fn_name(op_->op);
  Trace& t = Trace::current(loc_);
  ir::Block* region = op_->regions[0].get();
  const size_t n = op_->operands.size();
  if (yielded.size() != n)
    throw trace_error(fmt::format("{}: the combine function returns {} value{} where {} {} needed, one per operand{}",
                                  fn, yielded.size(), yielded.size() == 1 ? "" : "s", n, n == 1 ? "is" : "are",
                                  n > 1 ? " (as a std::tuple)" : ""),
                      loc_);
  for (size_t i = 0; i < n; ++i) {
    const Value* v = yielded[i];
    if (v == unassigned_placeholder()) throw trace_error(unassigned_message(fn), loc_);
    const DType want = op_->operands[i]->type.dtype;
    if (!v->type.is_scalar())
      throw trace_error(fmt::format("{}: the combine function returns a tile of shape {} as its value {}; it must "
                                    "return scalars, its arguments combined",
                                    fn, shape_str(v->type.shape), i),
                        loc_);
    if (v->type.dtype != want)
      throw trace_error(fmt::format("{}: the combine function returns {} as its value {}, whose operand holds {} "
                                    "(convert it with .to<>())",
                                    fn, name(v->type.dtype), i, name(want)),
                        loc_);
  }
  // Tiles from outside: a combine sees two elements, not a tile (scalars of the kernel,
  // its arguments and loop counters, are the same for every element and may be read).
  auto inside = [&](const Value* v) { return v->owner == region || (v->def && v->def->parent == region); };
  for (auto& o : region->ops)
    for (const Value* v : o->operands)
      if (!inside(v) && !v->type.is_scalar())
        throw trace_error(fmt::format("{}: a combine function reads a tile of shape {} from outside it; it may read "
                                      "only its scalar arguments, literals and scalars of the kernel",
                                      op_name(o->op), shape_str(v->type.shape)),
                          o->loc.file, o->loc.line);
  t.emit(Op::yield, yielded, loc_);
  t.set_block(outer_);
  done_ = true;
  std::vector<Value*> out;
  for (auto& r : op_->results) {
    Value* v = r.get();
    if (flags_ & kReverse) v = flip(v, axis_, loc_);
    if (flags_ & kKeepDims) v = expand_dims(v, axis_, loc_);
    out.push_back(v);
  }
  return out;
}

}  // namespace tl::detail

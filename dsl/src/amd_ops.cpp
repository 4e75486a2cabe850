// tl::amd buffer loads and stores as the tracer records them: the ordinary load/store
// through `addptr(splat(base), offsets)`, marked as a buffer access (i0 = kBufferAccess,
// docs/ir.md), so every target gets the masked-access semantics for free and only the
// AMD lowering reads the mark. The checks here name the user's line.
#include <fmt/format.h>

#include "codegen/ir/op_properties.hpp"
#include "dsl/src/trace.hpp"
#include "tl/amd.hpp"

namespace tl::detail {
namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

void check_base_and_offsets(ir::Value* base, ir::Value* offsets, const char* fn, const Loc& loc) {
  if (!base->type.is_ptr() || !base->type.is_scalar())
    throw trace_error(fmt::format("{}: the base must be a scalar pointer, got {}", fn, base->type.str()), loc);
  // (the buffer intrinsics move numbers; a pointer's address space would be lost)
  if (base->type.pointee == DType::ptr)
    throw trace_error(fmt::format("{}: {} points to pointers, which buffer accesses do not move; use tl::load and "
                                  "tl::store", fn, base->type.str()), loc);
  if (offsets->type.is_ptr() || offsets->type.dtype != DType::i32)
    throw trace_error(fmt::format("{}: the offsets must be an i32 tile (32-bit element offsets), got {}", fn,
                                  offsets->type.str()), loc);
  if (offsets->type.is_scalar())
    throw trace_error(fmt::format("{}: the offsets must be a tile, got a scalar", fn), loc);
}

// Like tl::load's rule for masks against the pointer: the same rank, dims equal or 1
// (or a scalar); any other shape is an indexing mistake.
void check_fits(ir::Value* v, const Shape& s, const char* what, const char* fn, const Loc& loc) {
  if (!v || v->type.is_scalar()) return;
  bool ok = v->type.rank() == int(s.size());
  for (size_t i = 0; ok && i < s.size(); ++i) ok = v->type.shape[i] == s[i] || v->type.shape[i] == 1;
  if (!ok)
    throw trace_error(fmt::format("{}: {} shape {} does not match offsets shape {}", fn, what,
                                  shape_str(v->type.shape), shape_str(s)), loc);
}

void mark(ir::Operation* op) { op->i0 = ir::kBufferAccess; }

}  // namespace

ir::Value* buffer_load(ir::Value* base, ir::Value* offsets, ir::Value* mask, ir::Value* other,
                       const access_options& opts, const Loc& loc) {
  const char* fn = "tl::amd::buffer_load";
  check_base_and_offsets(base, offsets, fn, loc);
  check_fits(mask, offsets->type.shape, "mask", fn, loc);
  check_fits(other, offsets->type.shape, "other", fn, loc);
  ir::Value* v = load(binary(Op::addptr, base, offsets, loc), mask, other, opts, loc);
  mark(v->def);
  return v;
}

void buffer_load_to_shared(ir::Value* buf, ir::Value* stage, ir::Value* base, ir::Value* offsets, ir::Value* mask,
                           ir::Value* other, const Loc& loc) {
  const char* fn = "tl::amd::buffer_load_to_shared";
  check_base_and_offsets(base, offsets, fn, loc);
  if (offsets->type.shape != buf->type.shape)
    throw trace_error(fmt::format("{}: offsets of shape {} copied into a buffer of {} tiles", fn,
                                  shape_str(offsets->type.shape), shape_str(buf->type.shape)), loc);
  check_fits(mask, offsets->type.shape, "mask", fn, loc);
  check_fits(other, offsets->type.shape, "other", fn, loc);
  global_load_to_shared(buf, stage, binary(Op::addptr, base, offsets, loc), mask, other, loc);
  // global_load_to_shared() appended the copy last in the current block: mark it.
  Trace::current(loc).block()->ops.back()->i1 = ir::kBufferAccess;
}

void buffer_store(ir::Value* base, ir::Value* offsets, ir::Value* value, ir::Value* mask, const access_options& opts,
                  const Loc& loc) {
  const char* fn = "tl::amd::buffer_store";
  check_base_and_offsets(base, offsets, fn, loc);
  check_fits(value, offsets->type.shape, "value", fn, loc);
  check_fits(mask, offsets->type.shape, "mask", fn, loc);
  store(binary(Op::addptr, base, offsets, loc), value, mask, opts, loc);
  // store() appended the op last in the current block: mark it.
  mark(Trace::current(loc).block()->ops.back().get());
}

}  // namespace tl::detail

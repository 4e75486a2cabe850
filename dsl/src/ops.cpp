// The tile operations as the tracer records them: every user mistake is caught here,
// with the user's file and line, before anything reaches the compiler.
#include <cmath>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "codegen/ir/op_properties.hpp"
#include "dsl/src/trace.hpp"
#include "tl/amd.hpp"

namespace tl::detail {

using ir::Type;
using ir::Value;

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }
bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

void check_shape(const Shape& s, const char* what, const Loc& loc) {
  if (s.size() > 5) throw trace_error(fmt::format("{}: tiles have at most 5 dimensions (Triton's limit), got {}", what, shape_str(s)), loc);
  for (int d : s)
    if (!pow2(d))
      throw trace_error(fmt::format("{}: every dimension must be a power of two, got {}", what, shape_str(s)), loc);
}

Trace& T(const Loc& loc) { return Trace::current(loc); }

// numpy broadcasting of two shapes; ranks are aligned on the right.
Shape broadcast_shape(const Shape& a, const Shape& b, const char* what, const Loc& loc) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  size_t n = std::max(a.size(), b.size());
  Shape r(n);
  for (size_t i = 0; i < n; ++i) {
    int da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw trace_error(fmt::format("{}: shapes {} and {} do not broadcast", what, shape_str(a), shape_str(b)), loc);
    r[i] = std::max(da, db);
  }
  return r;
}

}  // namespace

[[noreturn]] void fail(const std::string& what, const Loc& loc) { throw trace_error(what, loc); }

Value* broadcast_to(Value* a, const Shape& shape, const Loc& loc) {
  if (a->type.shape == shape) return a;
  check_shape(shape, "tl::broadcast_to", loc);
  if (a->type.is_scalar()) return T(loc).emit1(Op::splat, {a}, a->type.with_shape(shape), loc);
  const Shape& s = a->type.shape;
  if (s.size() > shape.size())
    throw trace_error(fmt::format("cannot broadcast {} to {}", shape_str(s), shape_str(shape)), loc);
  if (s.size() < shape.size()) {
    Shape padded(shape.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    a = T(loc).emit1(Op::reshape, {a}, a->type.with_shape(padded), loc);
  }
  const Shape& p = a->type.shape;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != shape[i] && p[i] != 1)
      throw trace_error(fmt::format("cannot broadcast {} to {}", shape_str(s), shape_str(shape)), loc);
  return T(loc).emit1(Op::broadcast, {a}, a->type.with_shape(shape), loc);
}

Value* constant(DType t, double f, int64_t i, const Loc& loc) {
  if (t == DType::ptr) throw trace_error("a pointer cannot be made from a number", loc);
  // An integer literal takes the tile's dtype (Triton's weak typing), so it must be one of
  // its values: `i8_tile < 200` would compare with -56 and `u8_tile > -1` with 255. u64
  // takes any 64-bit pattern (its values past INT64_MAX arrive here as negative int64s),
  // i1 any number (true when nonzero).
  if (is_int(t) && t != DType::i1) {
    if (!std::isfinite(f) || std::fabs(f) >= 9.3e18)
      throw trace_error(fmt::format("the number {} is not a value of {}", f, name(t)), loc);
    int w = bit_width(t);
    bool fits = t == DType::u64 || w == 64 ||
                (is_signed(t) ? i >= -(int64_t(1) << (w - 1)) && i < (int64_t(1) << (w - 1))
                              : i >= 0 && i < (int64_t(1) << w));
    if (!fits)
      throw trace_error(fmt::format("the literal {} does not fit {}, the dtype of the tile it is used with; convert the "
                                    "tile first (.to<tl::i32>()) or use a value of {}",
                                    i, name(t), name(t)),
                        loc);
  }
  // An MX storage type has no arithmetic: a number given for one is its code, a byte.
  if (is_mx(t) && !(f == double(i) && i >= 0 && i <= 255))
    throw trace_error(fmt::format("the number {} is not a code of {} (a byte, 0 to 255); make the value in f32 and "
                                  "convert it with .to<tl::{}>()", f, name(t), name(t)), loc);
  Value* v = T(loc).emit1(Op::constant, {}, Type{t, t, {}}, loc);
  v->def->f = is_float(t) ? f : double(i);
  // A float constant's i0 is its truncation where that is an int64 (NaN, infinities and
  // huge values have none: converting them is undefined in C++).
  bool truncates = std::isfinite(f) && std::fabs(f) < 9.2e18;
  v->def->i0 = is_float(t) ? (truncates ? int64_t(f) : 0) : (t == DType::i1 ? (i != 0) : i);
  return v;
}

Value* full(const Shape& shape, DType t, double f, int64_t i, const Loc& loc) {
  check_shape(shape, "tl::full", loc);
  return broadcast_to(constant(t, f, i, loc), shape, loc);
}

Value* cast(Value* a, DType to, bool bitcast, const Loc& loc) {
  if (a->type.dtype == to) return a;
  if (a->type.is_ptr() || to == DType::ptr)
    throw trace_error(fmt::format("a {} is not converted to {} implicitly; convert with .to<>() (pointers to and from "
                                  "i64 or u64 only)", a->type.str(), name(to)), loc);
  if (bitcast && bit_width(a->type.dtype) != bit_width(to))
    throw trace_error(fmt::format("bitcast from {} to {} changes the width", name(a->type.dtype), name(to)), loc);
  if (!bitcast && (is_mx(a->type.dtype) || is_mx(to))) return mx_convert(a, to, loc);
  // bitcast(trans(x)) is trans(bitcast(x)): a bitcast of one width is elementwise, so both
  // are the same tile. The transpose goes outermost, where the passes look for it: the
  // pipeliner stages a load that reaches a dot through [trans]([cast or bitcast](load)),
  // and a dot reads trans(bitcast(stage)) a K step at a time (match_shared_dot_operand);
  // bitcast(trans(load)) went through registers and a layout conversion instead (Triton's
  // tutorial 10 loads its e2m1 weights as u8 bytes and transposes them: gfx950 84 VGPRs
  // where Triton 3.6 takes 76, 50 this way).
  if (bitcast && a->def && a->def->op == Op::trans)
    return trans(cast(a->def->operands[0], to, true, loc), Shape(a->def->ints), loc);
  return T(loc).emit1(bitcast ? Op::bitcast : Op::cast, {a}, a->type.with_dtype(to), loc);
}

Value* pointer_cast(Value* a, DType to, const pointer_desc& p, const Loc& loc) {
  const Type& from = a->type;
  Type result{to, to, from.shape};
  if (to == DType::ptr) {  // the pointee as the C++ element type describes it
    result.pointee = p.pointee;
    if (p.pointee_levels > 0) result.pointee_levels = p.pointee_levels, result.element = p.element;
  }
  if (result == from) return a;
  // An address is 64 bits on every target. Triton converts a pointer only to a 64-bit
  // integer but takes any integer for a pointer (extended or truncated); tl asks for i64
  // or u64 both ways: a narrower integer there is an index taken for an address, and a
  // float has no address meaning.
  auto wide_int = [](DType d) { return d == DType::i64 || d == DType::u64; };
  if (!from.is_ptr() && !wide_int(from.dtype))
    throw trace_error(fmt::format("conversion of {} to {}: a pointer is made only from a 64-bit address (i64 or u64){}",
                                  name(from.dtype), result.scalar().str(),
                                  is_int(from.dtype) ? "; widen with .to<tl::i64>() first" : ""), loc);
  if (!result.is_ptr() && !wide_int(to))
    throw trace_error(fmt::format("conversion of {} to {}: a pointer gives its address only as i64 or u64",
                                  from.scalar().str(), name(to)), loc);
  return T(loc).emit1(Op::cast, {a}, result, loc);
}

// The MX storage types are codes: their values exist only once converted (a promotion
// would convert them implicitly, and f4e2m1's conversion changes the shape).
static void reject_mx(const char* what, DType d, const Loc& loc) {
  if (is_mx(d))
    throw trace_error(fmt::format("{} on {}: {} is a storage type; convert with .to<tl::f32>() first", what, name(d),
                                  name(d)), loc);
}

static void check_binary_dtypes(Op op, DType d, const Loc& loc) {
  const char* n = op_name(op);
  switch (op) {
    case Op::band: case Op::bor: case Op::bxor: case Op::shl: case Op::shr:
      if (!is_int(d)) throw trace_error(fmt::format("'{}' needs integer operands, got {}", n, name(d)), loc);
      break;
    default:
      if (is_fp8(d))
        throw trace_error(fmt::format("'{}' on {}: FP8 is a storage type; convert with .to<tl::f32>() first", n, name(d)), loc);
      if (d == DType::i1 && op != Op::min && op != Op::max)
        throw trace_error(fmt::format("'{}' on i1 tiles: cast to an integer type first", n), loc);
  }
}

Value* binary(Op op, Value* a, Value* b, const Loc& loc) {
  Trace& t = T(loc);
  if (op == Op::addptr) {
    if (!a->type.is_ptr() || !is_int(b->type.dtype) || b->type.is_ptr())
      throw trace_error("pointer arithmetic needs a pointer and an integer offset", loc);
    Shape s = broadcast_shape(a->type.shape, b->type.shape, "pointer + offset", loc);
    return t.emit1(Op::addptr, {broadcast_to(a, s, loc), broadcast_to(b, s, loc)}, a->type.with_shape(s), loc);
  }
  if (a->type.is_ptr() || b->type.is_ptr())
    throw trace_error(fmt::format("'{}' is not defined on pointers", op_name(op)), loc);
  for (Value* v : {a, b}) reject_mx(fmt::format("'{}'", op_name(op)).c_str(), v->type.dtype, loc);
  DType d = promote(a->type.dtype, b->type.dtype);
  check_binary_dtypes(op, d, loc);
  Shape s = broadcast_shape(a->type.shape, b->type.shape, op_name(op), loc);
  a = broadcast_to(cast(a, d, false, loc), s, loc);
  b = broadcast_to(cast(b, d, false, loc), s, loc);
  return t.emit1(op, {a, b}, Type{d, d, s}, loc);
}

Value* unary(Op op, Value* a, const Loc& loc) {
  DType d = a->type.dtype;
  if (a->type.is_ptr()) throw trace_error(fmt::format("'{}' is not defined on pointers", op_name(op)), loc);
  if (is_fp8(d)) throw trace_error(fmt::format("'{}' on {}: convert FP8 with .to<tl::f32>() first", op_name(op), name(d)), loc);
  reject_mx(fmt::format("'{}'", op_name(op)).c_str(), d, loc);
  switch (op) {
    case Op::neg: case Op::abs:
      if (d == DType::i1) throw trace_error(fmt::format("'{}' on i1", op_name(op)), loc);
      break;
    case Op::bnot:
      if (!is_int(d)) throw trace_error(fmt::format("'~' needs an integer tile, got {}", name(d)), loc);
      break;
    default:
      if (!is_float(d))
        throw trace_error(fmt::format("tl::{} needs a floating-point tile, got {} (use .to<tl::f32>())", op_name(op), name(d)), loc);
  }
  return T(loc).emit1(op, {a}, a->type, loc);
}

Value* compare(CmpPred p, Value* a, Value* b, const Loc& loc) {
  Trace& t = T(loc);
  Shape s = broadcast_shape(a->type.shape, b->type.shape, "comparison", loc);
  if (a->type.is_ptr() != b->type.is_ptr()) throw trace_error("a pointer can only be compared with a pointer", loc);
  if (!a->type.is_ptr()) {
    for (Value* v : {a, b}) reject_mx("a comparison", v->type.dtype, loc);
    DType d = promote(a->type.dtype, b->type.dtype);
    if (is_fp8(d)) throw trace_error("comparisons on FP8: convert with .to<tl::f32>() first", loc);
    a = cast(a, d, false, loc);
    b = cast(b, d, false, loc);
  }
  a = broadcast_to(a, s, loc);
  b = broadcast_to(b, s, loc);
  Value* r = t.emit1(Op::cmp, {a, b}, Type{DType::i1, DType::i1, s}, loc);
  r->def->i0 = int64_t(p);
  return r;
}

Value* fma(Value* a, Value* b, Value* c, const Loc& loc) {
  for (Value* v : {a, b, c}) reject_mx("tl::fma", v->type.dtype, loc);
  DType d = promote(promote(a->type.dtype, b->type.dtype), c->type.dtype);
  if (!is_float(d) || is_fp8(d)) throw trace_error("tl::fma needs f16, bf16, f32 or f64 operands", loc);
  Shape s = broadcast_shape(broadcast_shape(a->type.shape, b->type.shape, "tl::fma", loc), c->type.shape, "tl::fma", loc);
  a = broadcast_to(cast(a, d, false, loc), s, loc);
  b = broadcast_to(cast(b, d, false, loc), s, loc);
  c = broadcast_to(cast(c, d, false, loc), s, loc);
  return T(loc).emit1(Op::fma, {a, b, c}, Type{d, d, s}, loc);
}

Value* where(Value* c, Value* a, Value* b, const Loc& loc) {
  if (c->type.dtype != DType::i1) throw trace_error(fmt::format("tl::where: the condition must be i1, got {}", name(c->type.dtype)), loc);
  if (a->type != b->type && (a->type.dtype != b->type.dtype || a->type.is_ptr()))
    throw trace_error(fmt::format("tl::where: branches {} and {} differ", a->type.str(), b->type.str()), loc);
  Shape s = broadcast_shape(broadcast_shape(c->type.shape, a->type.shape, "tl::where", loc), b->type.shape, "tl::where", loc);
  c = broadcast_to(c, s, loc);
  a = broadcast_to(a, s, loc);
  b = broadcast_to(b, s, loc);
  return T(loc).emit1(Op::select, {c, a, b}, a->type, loc);
}

Value* program_id(int axis, const Loc& loc) {
  if (axis < 0 || axis > 2) throw trace_error(fmt::format("tl::program_id: axis must be 0, 1 or 2, got {}", axis), loc);
  Value* v = T(loc).emit1(Op::program_id, {}, Type{DType::i32, DType::i32, {}}, loc);
  v->def->i0 = axis;
  return v;
}

Value* num_programs(int axis, const Loc& loc) {
  if (axis < 0 || axis > 2) throw trace_error(fmt::format("tl::num_programs: axis must be 0, 1 or 2, got {}", axis), loc);
  Value* v = T(loc).emit1(Op::num_programs, {}, Type{DType::i32, DType::i32, {}}, loc);
  v->def->i0 = axis;
  return v;
}

Value* arange(int start, int end, const Loc& loc) {
  if (end <= start) throw trace_error(fmt::format("tl::arange({}, {}): end must be greater than start", start, end), loc);
  if (!pow2(int64_t(end) - start))
    throw trace_error(fmt::format("tl::arange({}, {}): the length {} is not a power of two", start, end, end - start), loc);
  check_shape({end - start}, "tl::arange", loc);
  Value* v = T(loc).emit1(Op::arange, {}, Type{DType::i32, DType::i32, {end - start}}, loc);
  v->def->i0 = start;
  v->def->i1 = end;
  return v;
}

Value* expand_dims(Value* a, int axis, const Loc& loc) {
  int r = a->type.rank();
  if (axis < 0) axis += r + 1;
  if (axis < 0 || axis > r)
    throw trace_error(fmt::format("tl::expand_dims: axis {} is out of range for a rank-{} tile", axis, r), loc);
  Shape s = a->type.shape;
  s.insert(s.begin() + axis, 1);
  check_shape(s, "tl::expand_dims", loc);
  return T(loc).emit1(Op::reshape, {a}, a->type.with_shape(s), loc);
}

Value* reshape(Value* a, const Shape& shape, const Loc& loc) {
  check_shape(shape, "tl::reshape", loc);
  Type to = a->type.with_shape(shape);
  if (to.numel() != a->type.numel())
    throw trace_error(fmt::format("tl::reshape: {} has {} elements, {} has {}", shape_str(a->type.shape),
                                  a->type.numel(), shape_str(shape), to.numel()), loc);
  if (a->type.shape == shape) return a;
  return T(loc).emit1(Op::reshape, {a}, to, loc);
}

Value* trans(Value* a, const Shape& perm_in, const Loc& loc) {
  int r = a->type.rank();
  Shape perm = perm_in;
  if (perm.empty()) {
    perm.resize(r);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  Shape sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = int(perm.size()) == r;
  for (int i = 0; ok && i < r; ++i) ok = sorted[i] == i;
  if (!ok) throw trace_error(fmt::format("tl::trans: {} is not a permutation of the {} axes", shape_str(perm), r), loc);
  Shape s(r);
  for (int i = 0; i < r; ++i) s[i] = a->type.shape[perm[i]];
  Value* v = T(loc).emit1(Op::trans, {a}, a->type.with_shape(s), loc);
  v->def->ints = perm;
  return v;
}

// Masks and other values must match the pointer tile's rank exactly (size-1 dims
// broadcast); a mask of another rank is almost always an indexing mistake.
static Value* fit_to_pointer(Value* v, const Shape& ps, const char* what, const char* fn, const Loc& loc) {
  if (v->type.is_scalar() || v->type.shape == ps) return broadcast_to(v, ps, loc);
  bool ok = v->type.rank() == int(ps.size());
  for (size_t i = 0; ok && i < ps.size(); ++i) ok = v->type.shape[i] == ps[i] || v->type.shape[i] == 1;
  if (!ok)
    throw trace_error(fmt::format("{}: {} shape {} does not match pointer shape {}", fn, what, shape_str(v->type.shape), shape_str(ps)), loc);
  return broadcast_to(v, ps, loc);
}

static void check_pointer(Value* p, const char* fn, const Loc& loc) {
  if (!p->type.is_ptr()) throw trace_error(fmt::format("{}: expected a pointer tile, got {}", fn, p->type.str()), loc);
}

static Value* check_mask(Value* mask, const Shape& ps, const char* fn, const Loc& loc) {
  if (!mask) return nullptr;
  if (mask->type.dtype != DType::i1)
    throw trace_error(fmt::format("{}: the mask must be i1, got {}", fn, name(mask->type.dtype)), loc);
  return fit_to_pointer(mask, ps, "mask", fn, loc);
}

// Whether `v` holds elements of type `elem` (pointers: to the same pointee), so that it
// may be stored through a pointer to `elem` or stand for a masked-off loaded element.
static bool holds(const Value* v, const Type& elem) {
  return v->type.dtype == elem.dtype && (!elem.is_ptr() || v->type.same_pointee(elem));
}

// tl::load / tl::store's access_options as the op's i1 (ir::AccessFlags), checked here so
// that a store's cache modifier on a load, or a hint beside volatile, names the line.
static int64_t access_attr(const access_options& o, bool is_load, const char* fn, const Loc& loc) {
  if (o.conflict)
    throw trace_error(fmt::format("{}: two cache modifiers or two eviction policies combined; give one of each", fn),
                      loc);
  ir::AccessFlags a{o.modifier, o.eviction, o.is_volatile};
  std::string why = ir::access_error(a, is_load);
  if (!why.empty()) throw trace_error(fmt::format("{}: {}", fn, why), loc);
  return ir::encode_access(a);
}

Value* load(Value* p, Value* mask, Value* other, const access_options& opts, const Loc& loc) {
  check_pointer(p, "tl::load", loc);
  const int64_t access = access_attr(opts, true, "tl::load", loc);
  const Shape& ps = p->type.shape;
  const Type elem = p->type.pointee_type();  // a pointer tile where p points to pointers
  std::vector<Value*> ops{p};
  if (mask) ops.push_back(check_mask(mask, ps, "tl::load", loc));
  if (other) {
    if (!mask) throw trace_error("tl::load: 'other' needs a mask", loc);
    if (elem.is_ptr() && !holds(other, elem))
      throw trace_error(fmt::format("tl::load: 'other' is a {}, the loaded elements are {}", other->type.scalar().str(),
                                    elem.str()), loc);
    ops.push_back(fit_to_pointer(cast(other, elem.dtype, false, loc), ps, "other", "tl::load", loc));
  }
  Value* r = T(loc).emit1(Op::load, ops, elem.with_shape(ps), loc);
  r->def->i1 = access;
  return r;
}

void store(Value* p, Value* v, Value* mask, const access_options& opts, const Loc& loc) {
  check_pointer(p, "tl::store", loc);
  const int64_t access = access_attr(opts, false, "tl::store", loc);
  const Shape& ps = p->type.shape;
  const Type elem = p->type.pointee_type();
  if (!holds(v, elem))
    throw trace_error(fmt::format("tl::store: value of type {} stored through a pointer to {}", v->type.scalar().str(),
                                  elem.str()), loc);
  std::vector<Value*> ops{p, fit_to_pointer(v, ps, "value", "tl::store", loc)};
  if (mask) ops.push_back(check_mask(mask, ps, "tl::store", loc));
  T(loc).emit(Op::store, ops, loc)->i1 = access;
}

static void check_atomic_dtype(AtomicKind k, DType d, const Loc& loc) {
  bool ok = true;
  switch (k) {
    case AtomicKind::add: ok = d == DType::f32 || d == DType::f64 || d == DType::f16 || d == DType::bf16 ||
                               (is_int(d) && bit_width(d) >= 32); break;
    case AtomicKind::max: case AtomicKind::min:
      ok = d == DType::f32 || d == DType::f64 || (is_int(d) && bit_width(d) >= 32); break;
    case AtomicKind::xchg: ok = bit_width(d) >= 32 && !is_fp8(d); break;
    default: ok = is_int(d) && bit_width(d) >= 32;
  }
  if (!ok) throw trace_error(fmt::format("atomic operation not supported on {} elements", name(d)), loc);
}

Value* atomic_rmw(AtomicKind k, Value* p, Value* v, Value* mask, sem s, scope sc, const Loc& loc) {
  check_pointer(p, "tl::atomic", loc);
  DType d = p->type.pointee;
  if (d == DType::ptr) throw trace_error("tl::atomic: atomics on pointers to pointers are not supported", loc);
  check_atomic_dtype(k, d, loc);
  const Shape& ps = p->type.shape;
  std::vector<Value*> ops{p, fit_to_pointer(cast(v, d, false, loc), ps, "value", "tl::atomic", loc)};
  if (mask) ops.push_back(check_mask(mask, ps, "tl::atomic", loc));
  Value* r = T(loc).emit1(Op::atomic_rmw, ops, Type{d, d, ps}, loc);
  r->def->i0 = int64_t(k);
  r->def->i1 = int64_t(s) | (int64_t(sc) << 8);
  return r;
}

Value* atomic_cas(Value* p, Value* cmp, Value* v, sem s, scope sc, const Loc& loc) {
  check_pointer(p, "tl::atomic_cas", loc);
  DType d = p->type.pointee;
  if (!(is_int(d) && bit_width(d) >= 32) && d != DType::f32 && d != DType::f64)
    throw trace_error(fmt::format("tl::atomic_cas on {} elements is not supported", name(d)), loc);
  const Shape& ps = p->type.shape;
  cmp = fit_to_pointer(cast(cmp, d, false, loc), ps, "compare value", "tl::atomic_cas", loc);
  v = fit_to_pointer(cast(v, d, false, loc), ps, "value", "tl::atomic_cas", loc);
  Value* r = T(loc).emit1(Op::atomic_cas, {p, cmp, v}, Type{d, d, ps}, loc);
  r->def->i1 = int64_t(s) | (int64_t(sc) << 8);
  return r;
}

static int normalize_axis(int axis, int rank, const char* fn, const Loc& loc) {
  if (rank == 0) throw trace_error(fmt::format("{}: cannot reduce a scalar", fn), loc);
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw trace_error(fmt::format("{}: axis {} is out of range for a rank-{} tile", fn, axis, rank), loc);
  return a;
}

Value* reduce(ReduceKind k, Value* a, int axis, const Loc& loc) {
  static const char* names[] = {"tl::sum", "tl::max", "tl::min", "tl::argmax", "tl::argmin", "tl::xor_sum", "tl::prod"};
  const char* fn = names[int(k)];
  int ax = normalize_axis(axis, a->type.rank(), fn, loc);
  DType d = a->type.dtype;
  if (a->type.is_ptr() || is_fp8(d) || is_mx(d) || d == DType::i1)
    throw trace_error(fmt::format("{}: cannot reduce {} elements (cast first)", fn, name(d)), loc);
  if (k == ReduceKind::xor_sum && !is_int(d))
    throw trace_error(fmt::format("tl::xor_sum: needs an integer tile, got {}", name(d)), loc);
  Shape s = a->type.shape;
  s.erase(s.begin() + ax);
  DType rd = (k == ReduceKind::argmax || k == ReduceKind::argmin) ? DType::i32 : d;
  Value* r = T(loc).emit1(Op::reduce, {a}, Type{rd, rd, s}, loc);
  r->def->i0 = ax;
  r->def->i1 = int64_t(k);
  return r;
}

Value* cumsum(Value* a, int axis, const Loc& loc) {
  int ax = normalize_axis(axis, a->type.rank(), "tl::cumsum", loc);
  DType d = a->type.dtype;
  if (a->type.is_ptr() || is_fp8(d) || is_mx(d) || d == DType::i1)
    throw trace_error(fmt::format("tl::cumsum: cannot scan {} elements (cast first)", name(d)), loc);
  Value* r = T(loc).emit1(Op::scan, {a}, a->type, loc);
  r->def->i0 = ax;
  r->def->i1 = int64_t(ReduceKind::sum);
  return r;
}

namespace {
bool same_fp8_family(DType a, DType b) {
  auto fnuz = [](DType d) { return d == DType::f8e4m3fnuz || d == DType::f8e5m2fnuz; };
  return is_fp8(a) && is_fp8(b) && fnuz(a) == fnuz(b);
}
}  // namespace

Value* dot(Value* a, Value* b, Value* acc, const Loc& loc) {
  auto desc = [](const Value* v) { return v->type.str(); };
  auto both = [&] { return fmt::format("a is {}, b is {}", desc(a), desc(b)); };
  if (a->type.is_ptr() || b->type.is_ptr() || a->type.rank() != 2 || b->type.rank() != 2)
    throw trace_error(fmt::format("tl::dot: the operands must be 2-D tiles of numbers ({})", both()), loc);
  const int M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
  if (b->type.shape[0] != K)
    throw trace_error(fmt::format("tl::dot: a [M, K] and b [K, N] disagree on K ({})", both()), loc);
  const DType da = a->type.dtype, db = b->type.dtype;
  if (is_mx(da) || is_mx(db))
    throw trace_error(fmt::format("tl::dot: {} operands are block-scaled; multiply them with tl::dot_scaled ({})",
                                  name(is_mx(da) ? da : db), both()), loc);
  bool ok = da == db ? (da == DType::bf16 || da == DType::f16 || da == DType::f32 || da == DType::i8 || is_fp8(da))
                     : same_fp8_family(da, db);
  if (!ok)
    throw trace_error(fmt::format("tl::dot: unsupported operand types ({}): both bf16, both f16, both f32, both i8, "
                                  "or FP8 of one family (e4m3fn/e5m2, or e4m3fnuz/e5m2fnuz); convert with .to<>()",
                                  both()), loc);
  // 8-bit operands: every matrix instruction but gfx90a's takes 32 of k at least.
  const int min_k = bit_width(da) == 8 ? 32 : 16;
  if (M < 16 || N < 16 || K < min_k)
    throw trace_error(fmt::format("tl::dot: M and N must be at least 16 and K at least {} for {} ({})", min_k,
                                  name(da), both()), loc);
  Trace& t = T(loc);
  if (is_fp8(da) && t.dot_fp8_known()) {
    const auto& have = t.dot_fp8_formats();
    for (DType d : {da, db})
      if (std::find(have.begin(), have.end(), d) == have.end()) {
        std::string names;
        for (DType h : have) names += fmt::format("{}{}", names.empty() ? "" : ", ", name(h));
        throw trace_error(
            names.empty()
                ? fmt::format("tl::dot: {} has no FP8 matrix instructions ({}); convert to bf16 first",
                              t.dot_fp8_target(), both())
                : fmt::format("tl::dot: {} is not an FP8 format of {}, whose matrix instructions take {} ({})",
                              name(d), t.dot_fp8_target(), names, both()),
            loc);
      }
  }
  const DType dc = da == DType::i8 ? DType::i32 : DType::f32;
  const Type acc_type{dc, dc, {M, N}};
  if (!acc) {
    acc = full({M, N}, dc, 0.0, 0, loc);
  } else if (acc->type != acc_type) {
    throw trace_error(fmt::format("tl::dot: the accumulator must be {} for {} operands, got {} ({})", acc_type.str(),
                                  name(da), acc->type.str(), both()), loc);
  }
  return t.emit1(Op::dot, {a, b, acc}, acc_type, loc);
}

namespace {
// x rounded to TF32 (10 explicit mantissa bits), to nearest with ties away from zero as
// NVIDIA's cvt.rna.tf32.f32 (what Triton's 3xTF32 split uses). The top binade is
// truncated instead, so that no finite value rounds up to infinity, and infinities and
// NaN are kept as they are (a NaN whose payload is all low bits would truncate to inf).
Value* round_to_tf32(Value* x, const Loc& loc) {
  const Shape& s = x->type.shape;
  auto i32 = [&](int64_t v) { return full(s, DType::i32, 0, v, loc); };
  Value* bits = cast(x, DType::i32, true, loc);
  Value* truncated = binary(Op::band, bits, i32(~int64_t(0x1FFF)), loc);
  Value* rounded = binary(Op::band, binary(Op::add, bits, i32(0x1000), loc), i32(~int64_t(0x1FFF)), loc);
  Value* exponent = binary(Op::band, bits, i32(0x7F800000), loc);
  Value* top = compare(CmpPred::eq, exponent, i32(0x7F000000), loc);
  Value* special = compare(CmpPred::eq, exponent, i32(0x7F800000), loc);
  return where(special, x, cast(where(top, truncated, rounded, loc), DType::f32, true, loc), loc);
}
}  // namespace

// Triton's input_precision: only f32 operands have a choice. `ieee` is recorded on the op
// (i0 = 1) for the GPU planner, which then takes no TF32 instruction; `tf32x3` is Triton's
// 3xTF32 decomposition, traced here as three TF32 dots (the small terms first, so the
// large one lands on the most accurate partial sum), which every target lowers as any dot.
Value* dot(Value* a, Value* b, Value* acc, input_precision p, const Loc& loc) {
  const bool f32 = !a->type.is_ptr() && !b->type.is_ptr() && a->type.dtype == DType::f32 &&
                   b->type.dtype == DType::f32;
  if (p == input_precision::tf32x3 && !f32)
    throw trace_error(fmt::format("tl::dot: input_precision tf32x3 splits f32 operands; a is {}, b is {} (Triton "
                                  "refuses it too: use the default, or .to<tl::f32>() both)",
                                  a->type.str(), b->type.str()), loc);
  if (!f32 || p == input_precision::tf32) return dot(a, b, acc, loc);
  if (p == input_precision::ieee) {
    Value* r = dot(a, b, acc, loc);
    r->def->i0 = 1;
    return r;
  }
  Value* a_hi = round_to_tf32(a, loc);
  Value* b_hi = round_to_tf32(b, loc);
  Value* a_lo = binary(Op::sub, a, a_hi, loc);
  Value* b_lo = binary(Op::sub, b, b_hi, loc);
  if (!acc) acc = full({a->type.shape[0], b->type.shape[1]}, DType::f32, 0.0, 0, loc);
  Value* r = dot(a_lo, b_hi, acc, loc);
  r = dot(a_hi, b_lo, r, loc);
  // An infinite operand's low part is inf - inf = NaN: the small terms then give back the
  // accumulator and the large dot the infinity (Triton's F32DotTC does the same). A NaN
  // operand is NaN in its high part too.
  r = where(compare(CmpPred::ne, r, r, loc), acc, r, loc);
  return dot(a_hi, b_hi, r, loc);
}

void device_assert(Value* cond, const std::string& msg, const Loc& loc) {
  if (cond->type.dtype != DType::i1) throw trace_error("tl::device_assert: the condition must be i1", loc);
  ir::Operation* op = T(loc).emit(Op::assert_, {cond}, loc);
  op->str = msg;
}

void device_print(const std::string& prefix, Value* v, const Loc& loc) {
  if (is_fp8(v->type.dtype)) throw trace_error("tl::device_print: convert FP8 to f32 first", loc);
  ir::Operation* op = T(loc).emit(Op::print, {v}, loc);
  op->str = prefix;
}

void barrier(const Loc& loc) { T(loc).emit(Op::barrier, {}, loc); }

// Programmatic dependent launch: an effect the IR keeps where the user wrote it (in a loop
// or a branch too: griddepcontrol may run any number of times, only the first counts).
void gdc(Op op, const Loc& loc) { T(loc).emit(op, {}, loc); }

// Compiler hints (Triton's tl.multiple_of / max_contiguous / max_constancy): the value
// itself, with a fact per dimension that axis analysis takes as given. Triton refuses
// what its AxisInfo cannot use: values that are not positive, a count other than the
// rank (one for a scalar), and (here) tiles that are not integers or pointers.
Value* hint(Value* x, HintKind kind, const std::vector<int64_t>& values, const Loc& loc) {
  static const char* const names[] = {"tl::multiple_of", "tl::max_contiguous", "tl::max_constancy"};
  const char* fn = names[int(kind)];
  const DType d = x->type.dtype;
  if (!x->type.is_ptr() && (!is_int(d) || is_float(d)))
    throw trace_error(fmt::format("{}: the hint applies to integer and pointer tiles, got {}", fn, x->type.str()), loc);
  const size_t want = size_t(std::max(1, x->type.rank()));
  if (values.size() != want)
    throw trace_error(fmt::format("{}: {} value{} for a {} (one per dimension{})", fn, values.size(),
                                  values.size() == 1 ? "" : "s",
                                  x->type.is_scalar() ? std::string("scalar") : "tile of shape " + shape_str(x->type.shape),
                                  x->type.is_scalar() ? ": one" : ""),
                      loc);
  for (int64_t v : values)
    if (v <= 0) throw trace_error(fmt::format("{}: the values must be positive, got {}", fn, v), loc);
  ir::Operation* op = T(loc).emit(Op::hint, {x}, loc);
  op->i0 = int64_t(kind);
  for (int64_t v : values) op->ints.push_back(int(std::min<int64_t>(v, int64_t(1) << 30)));
  return op->add_result(x->type);
}

// tl.assume: a promise (llvm.assume) that axis analysis also reads (`x > 0`, `x % 16 == 0`).
void assume(Value* cond, const Loc& loc) {
  if (cond->type.dtype != DType::i1 || !cond->type.is_scalar())
    throw trace_error(fmt::format("tl::assume: the condition must be a scalar i1, got {}", cond->type.str()), loc);
  T(loc).emit(Op::assume, {cond}, loc);
}

Value* shared_alloc(DType t, const Shape& shape, const Loc& loc) {
  Trace& tr = T(loc);
  if (t == DType::ptr) throw trace_error("tl::shared: a shared buffer cannot hold pointers", loc);
  if (shape.size() < 2 || shape.size() > 4)
    throw trace_error(fmt::format("tl::shared: the shape is {{stages, tile dims...}} with 1 to 3 tile dims, got {}",
                                  shape_str(shape)), loc);
  if (shape[0] <= 0)
    throw trace_error(fmt::format("tl::shared: the stage count must be positive, got {}", shape[0]), loc);
  Shape tile(shape.begin() + 1, shape.end());
  check_shape(tile, "tl::shared", loc);
  // Bytes in memory (i1 as a byte), counted against the target's budget while tracing
  // so that the error names this line. Every tl::shared of the program counts: the
  // allocator may later let buffers that are never live together share bytes, but a
  // program that fits only thanks to that would break on an unrelated edit.
  int64_t bytes = int64_t(shape[0]) * byte_width(t);
  for (int d : tile) bytes *= d;
  tr.shared_bytes += bytes;
  if (tr.shared_limit() && tr.shared_bytes > tr.shared_limit())
    throw trace_error(fmt::format("tl::shared: {} bytes of shared memory asked ({} for this {} buffer), more than the "
                                  "{} a program may use on {}; use smaller tiles or fewer stages",
                                  tr.shared_bytes, bytes, shape_str(shape), tr.shared_limit(), tr.shared_target()),
                      loc);
  return tr.emit1(Op::shared_alloc, {}, Type::shared_buffer(t, tile, shape[0]), loc);
}

Value* shared_stage(Value* buf, int stage, Value* runtime_stage, const Loc& loc) {
  const Type& bt = buf->type;
  if (!runtime_stage) {
    if (stage < 0 || stage >= bt.stages)
      throw trace_error(fmt::format("tl::shared: stage {} is out of range for a buffer of {} stages", stage, bt.stages),
                        loc);
    return constant(DType::i32, double(stage), stage, loc);
  }
  if (runtime_stage->type != Type{DType::i32, DType::i32, {}})
    throw trace_error(fmt::format("tl::shared: a stage index must be a scalar i32, got {}", runtime_stage->type.str()),
                      loc);
  // A run-time index is not checked: like a pointer offset, one past the stages is the
  // user's bug (TL_BOUNDS_CHECK does not cover shared memory yet).
  return runtime_stage;
}

Value* shared_load(Value* buf, Value* stage, const Loc& loc) {
  const Type& bt = buf->type;
  return T(loc).emit1(Op::shared_load, {buf, stage}, Type{bt.dtype, bt.dtype, bt.shape}, loc);
}

void shared_store(Value* buf, Value* stage, Value* v, const Loc& loc) {
  const Type& bt = buf->type;
  if (v->type.dtype != bt.dtype || v->type.is_ptr())
    throw trace_error(fmt::format("tl::shared: a {} tile stored into a buffer of {}", v->type.str(), name(bt.dtype)), loc);
  if (v->type.shape != bt.shape)
    throw trace_error(fmt::format("tl::shared: a tile of shape {} stored into a buffer of {} tiles",
                                  shape_str(v->type.shape), shape_str(bt.shape)), loc);
  T(loc).emit(Op::shared_store, {buf, stage, v}, loc);
}

// Checked here so that the error names the user's line; what the target's hardware can
// copy per lane is checked by the GPU lowering, which knows the layout (also at the
// user's line).
void global_load_to_shared(Value* buf, Value* stage, Value* p, Value* mask, Value* other, const Loc& loc) {
  const char* what = "tl::amd::global_load_to_shared";
  check_pointer(p, what, loc);
  const Type& bt = buf->type;
  if (p->type.pointee != bt.dtype)
    throw trace_error(fmt::format("{}: pointers to {} copied into a buffer of {}", what, name(p->type.pointee),
                                  name(bt.dtype)), loc);
  if (p->type.shape != bt.shape)
    throw trace_error(fmt::format("{}: a pointer tile of shape {} copied into a buffer of {} tiles", what,
                                  shape_str(p->type.shape), shape_str(bt.shape)), loc);
  std::vector<Value*> ops{buf, stage, p};
  if (mask) ops.push_back(check_mask(mask, p->type.shape, what, loc));
  if (other) ops.push_back(fit_to_pointer(cast(other, bt.dtype, false, loc), p->type.shape, "other", what, loc));
  T(loc).emit(Op::global_load_to_shared, ops, loc);
}

void async_wait(int num_outstanding, const Loc& loc) {
  if (num_outstanding < 0)
    throw trace_error(fmt::format("tl::amd::async_wait: the number of loads left outstanding must be >= 0, got {}",
                                  num_outstanding), loc);
  T(loc).emit(Op::async_wait, {}, loc)->i0 = num_outstanding;
}

Value* load_shared_relaxed(Value* buf, Value* stage, const Loc& loc) {
  Value* v = shared_load(buf, stage, loc);
  v->def->i0 = 1;  // relaxed: synchronized by the user's async_wait
  return v;
}

}  // namespace tl::detail

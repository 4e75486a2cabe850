// Tiles and the operations on them: what a kernel body is written in.
//
// A `tile<E>` is a handle to a value of the tile program being traced; its element
// type E is part of its C++ type (so `ptr<bf16> * f32` does not compile) and its shape
// is checked while tracing. Every operation records itself into the current trace and
// carries the caller's std::source_location, so a shape error names the user's line.
//
// Loop-carried values need no declaration: a tile object that lives outside a
// `tl::range` loop and is reassigned inside it is carried from one iteration to the
// next (the tracer sees the assignment on the object), like a C++ reader expects.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tl/dtype.hpp"
#include "tl/error.hpp"
#include "tl/opcode.hpp"

namespace tl {

namespace ir { class Value; class Operation; class Block; }

// The most elements one tile may have (Triton's TRITON_MAX_TENSOR_NUMEL): larger ones are
// a tl::trace_error where they are made. docs/language.md, "Limits".
inline constexpr int64_t max_tile_elements = int64_t(1) << 20;

// Triton's `volatile=True` on a load or store (`volatile` is a C++ keyword): every access
// happens, in program order, and reads memory anew (a flag another program sets).
struct volatile_t {
  explicit constexpr volatile_t() = default;
};
inline constexpr volatile_t volatile_{};

// How a load or store uses the caches: Triton's cache_modifier, eviction_policy and
// volatile keywords, given after the other arguments and combined with `|`:
//   tl::load(p, mask, 0.f, tl::cache_modifier::cg | tl::evict::last);
//   tl::store(p, v, mask, tl::cache_modifier::cs);
//   tl::load(flag, tl::volatile_);
// Hints only (results are the same without them), except volatile. docs/language.md,
// "Cache modifiers", says what each becomes on every target (the CPU ignores them).
struct access_options {
  cache_modifier modifier = cache_modifier::none;
  evict eviction = evict::normal;
  bool is_volatile = false;
  bool conflict = false;  // two cache modifiers or two eviction policies were combined
  constexpr access_options() = default;
  constexpr access_options(cache_modifier c) : modifier(c) {}
  constexpr access_options(evict e) : eviction(e) {}
  constexpr access_options(volatile_t) : is_volatile(true) {}
};
// (At namespace scope, so that `tl::cache_modifier::cg | tl::evict::last`, two enums of
// namespace tl, finds it.)
constexpr access_options operator|(access_options a, access_options b) {
  access_options r;
  r.conflict = a.conflict || b.conflict || (a.modifier != cache_modifier::none && b.modifier != cache_modifier::none) ||
               (a.eviction != evict::normal && b.eviction != evict::normal);
  r.modifier = b.modifier != cache_modifier::none ? b.modifier : a.modifier;
  r.eviction = b.eviction != evict::normal ? b.eviction : a.eviction;
  r.is_volatile = a.is_volatile || b.is_volatile;
  return r;
}
// Between two enums C++ looks only for an operator taking the enums themselves.
constexpr access_options operator|(cache_modifier a, evict b) { return access_options(a) | access_options(b); }
constexpr access_options operator|(evict a, cache_modifier b) { return access_options(a) | access_options(b); }
constexpr access_options operator|(cache_modifier a, cache_modifier b) { return access_options(a) | access_options(b); }
constexpr access_options operator|(evict a, evict b) { return access_options(a) | access_options(b); }

// How tl::dot multiplies f32 operands (Triton's tl.dot input_precision): `tf32` (the
// default, as Triton's) lets the matrix cores round them to TF32 (NVIDIA's mma/wgmma:
// 10-bit mantissas, products to about 2^-11); `ieee` computes every product exactly
// rounded in f32 (NVIDIA: f32 FMAs; AMD's f32 MFMAs and the CPU do so either way);
// `tf32x3` is Triton's 3xTF32: a = a_hi + a_lo with a_hi a rounded to TF32, then
// a_hi b_hi + a_hi b_lo + a_lo b_hi, three TF32 dots close to ieee's accuracy. Other
// operand types ignore it (`tf32x3` on them is a trace error, as in Triton).
enum class input_precision : uint8_t { tf32, ieee, tf32x3 };

namespace detail {
using Loc = std::source_location;
using Shape = std::vector<int>;
struct Frame;

// The trace-time cell behind each tile object. Reads go through `get()`, which lets
// the tracer turn a read of an outer tile inside a loop into the loop's block argument.
class TileBase {
 public:
  // A tile declared without a value belongs to the loop or branch body it is declared in:
  // assigning it there is not carrying it (only one declared outside would be).
  TileBase();
  explicit TileBase(ir::Value* v);
  TileBase(const TileBase& o);
  TileBase& operator=(const TileBase& o);
  ~TileBase();

  ir::Value* get() const;
  bool valid() const { return v_ != nullptr; }
  Shape shape(const Loc& loc = Loc::current()) const;
  DType dtype(const Loc& loc = Loc::current()) const;

 protected:
  void set(ir::Value* v);

 public:
  // Tracer internals (dsl/src/trace.cpp): the current value and the nesting depth at
  // which it is valid.
  mutable ir::Value* v_ = nullptr;
  mutable int level_ = 0;
};

// --- the tracer's entry points (dsl/src/ops.cpp); all check their inputs ---
ir::Value* constant(DType t, double f, int64_t i, const Loc& loc);
// A C++ number as a constant of dtype t: its value as a double, and as an int64 where it
// has one (a floating NaN, infinity or value past int64 has none: converting it would be
// undefined behaviour; constant() then rejects it for an integer dtype). constant()
// rejects an integer literal the dtype cannot hold (`i8_tile < 200`) naming the line.
template <class S> int64_t integer_part(S s) {
  if constexpr (std::is_integral_v<S>) return int64_t(s);
  else return s == s && s > -9.2e18 && s < 9.2e18 ? int64_t(s) : 0;
}
template <class S> ir::Value* literal_constant(DType t, S s, const Loc& loc) {
  return constant(t, double(s), integer_part(s), loc);
}
ir::Value* full(const Shape& shape, DType t, double f, int64_t i, const Loc& loc);
ir::Value* binary(Op op, ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* unary(Op op, ir::Value* a, const Loc& loc);
ir::Value* compare(CmpPred p, ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* fma(ir::Value* a, ir::Value* b, ir::Value* c, const Loc& loc);
ir::Value* where(ir::Value* c, ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* cast(ir::Value* a, DType to, bool bitcast, const Loc& loc);
// What the tracer needs of a pointer element type ty::ptr<P>: P's dtype, and where P is
// itself a pointer how many pointers deep it is and the innermost element (ir::Type's
// pointee, pointee_levels, element).
struct pointer_desc {
  DType pointee = DType::i32;
  int pointee_levels = 0;
  DType element = DType::i32;
};
// The explicit conversions that involve pointers (`.to<>()`): int-to-pointer from i64/u64,
// pointer-to-int to i64/u64, pointer to pointer of another pointee (the address kept).
// `to` is the result dtype; `p` its pointee where that is ptr.
ir::Value* pointer_cast(ir::Value* a, DType to, const pointer_desc& p, const Loc& loc);
ir::Value* program_id(int axis, const Loc& loc);
ir::Value* num_programs(int axis, const Loc& loc);
ir::Value* arange(int start, int end, const Loc& loc);
ir::Value* broadcast_to(ir::Value* a, const Shape& shape, const Loc& loc);
ir::Value* expand_dims(ir::Value* a, int axis, const Loc& loc);
ir::Value* reshape(ir::Value* a, const Shape& shape, const Loc& loc);
ir::Value* trans(ir::Value* a, const Shape& perm, const Loc& loc);
// Triton's join / split / cat / flip (dsl/src/shape_ops.cpp). split gives both halves.
ir::Value* join(ir::Value* a, ir::Value* b, const Loc& loc);
std::pair<ir::Value*, ir::Value*> split(ir::Value* a, const Loc& loc);
ir::Value* interleave(ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* cat(ir::Value* a, ir::Value* b, const Loc& loc);
ir::Value* flip(ir::Value* a, int dim, const Loc& loc);
ir::Value* gather(ir::Value* src, ir::Value* index, int axis, const Loc& loc);
ir::Value* load(ir::Value* ptr, ir::Value* mask, ir::Value* other, const access_options& opts, const Loc& loc);
void store(ir::Value* ptr, ir::Value* value, ir::Value* mask, const access_options& opts, const Loc& loc);
inline ir::Value* load(ir::Value* ptr, ir::Value* mask, ir::Value* other, const Loc& loc) {
  return load(ptr, mask, other, access_options{}, loc);
}
inline void store(ir::Value* ptr, ir::Value* value, ir::Value* mask, const Loc& loc) {
  store(ptr, value, mask, access_options{}, loc);
}
ir::Value* atomic_rmw(AtomicKind k, ir::Value* ptr, ir::Value* v, ir::Value* mask, sem s, scope sc, const Loc& loc);
ir::Value* atomic_cas(ir::Value* ptr, ir::Value* cmp, ir::Value* v, sem s, scope sc, const Loc& loc);
ir::Value* reduce(ReduceKind k, ir::Value* a, int axis, const Loc& loc);
// A reduction over `axis`, or over every axis when `all_axes` (the tile flattened), the
// reduced dims kept as 1 when `keep_dims` (dsl/src/shape_ops.cpp).
ir::Value* reduce_dims(ReduceKind k, ir::Value* a, int axis, bool all_axes, bool keep_dims, const Loc& loc);
ir::Value* cumsum(ir::Value* a, int axis, const Loc& loc);
// cumsum (k = sum) or cumprod (k = prod), from the end when `reverse`.
ir::Value* scan(ReduceKind k, ir::Value* a, int axis, bool reverse, const Loc& loc);
// a [M, K] . b [K, N] + acc [M, N] (acc null: zeros of the accumulator type).
ir::Value* dot(ir::Value* a, ir::Value* b, ir::Value* acc, const Loc& loc);
ir::Value* dot(ir::Value* a, ir::Value* b, ir::Value* acc, input_precision p, const Loc& loc);
// Triton's tl.dot_scaled (dsl/src/dot_scaled.cpp); a null scale is Triton's None.
ir::Value* dot_scaled(ir::Value* a, ir::Value* a_scale, std::string_view a_format, ir::Value* b, ir::Value* b_scale,
                      std::string_view b_format, ir::Value* acc, const Loc& loc);
// tl::exp, log, log2, sin and cos of a float tile, to the bound docs/language.md states
// (dsl/src/math.cpp); f64 and other dtypes go to the IR's op `op` as before.
ir::Value* precise_math(Op op, ir::Value* x, const Loc& loc);
void device_assert(ir::Value* cond, const std::string& msg, const Loc& loc);
void device_print(const std::string& prefix, ir::Value* v, const Loc& loc);
void barrier(const Loc& loc);
void gdc(Op op, const Loc& loc);  // gdc_wait or gdc_launch_dependents
// Compiler hints (dsl/src/ops.cpp): x with a fact recorded, and a promised scalar i1.
ir::Value* hint(ir::Value* x, HintKind kind, const std::vector<int64_t>& values, const Loc& loc);
void assume(ir::Value* cond, const Loc& loc);
// Shared memory (dsl/src/ops.cpp): a buffer of `stages` tiles, one stage's index (an int
// checked against the stage count, or a run-time scalar i32), and its reads and writes.
ir::Value* shared_alloc(DType t, const Shape& shape, const Loc& loc);
ir::Value* shared_stage(ir::Value* buf, int stage, ir::Value* runtime_stage, const Loc& loc);
ir::Value* shared_load(ir::Value* buf, ir::Value* stage, const Loc& loc);
void shared_store(ir::Value* buf, ir::Value* stage, ir::Value* v, const Loc& loc);
[[noreturn]] void fail(const std::string& what, const Loc& loc);

// Loops and branches (dsl/src/trace.cpp).
// num_stages: the loop's own (when `stages_given`), else 0: the launch option's.
ir::Value* begin_for(ir::Value* lb, ir::Value* ub, ir::Value* step, int num_stages, bool stages_given, const Loc& loc);
void end_for();
void loop_left(const Loc& loc);  // a tl::range destroyed with its loop open (trace.cpp)
// A tl::while_: begin_while opens the loop and its condition region, begin_while_body
// takes the condition (a scalar i1 of that region) and opens the body, end_while closes it.
void begin_while(const Loc& loc);
void begin_while_body(ir::Value* cond, const Loc& loc);
void end_while();
void begin_if(ir::Value* cond, const Loc& loc);
void begin_else();
void end_if();
}  // namespace detail

// ---------------------------------------------------------------------------------
// Element types and tiles.

template <class E> class tile;

template <class T> struct elem_of { using type = T; };
template <class E> struct elem_of<tile<E>> { using type = E; };
template <class T> using elem_t = typename elem_of<T>::type;

template <class E> constexpr bool is_ptr_elem = E::dtype == DType::ptr;
template <class T> concept Arith = std::is_arithmetic_v<T>;

namespace detail {
// How many pointers deep an element type is, and the element at the end of the chain.
template <class E> struct pointer_chain {
  static constexpr int levels = 0;
  static constexpr DType innermost = E::dtype;
};
template <class P> struct pointer_chain<ty::ptr<P>> {
  static constexpr int levels = pointer_chain<P>::levels + 1;
  static constexpr DType innermost = pointer_chain<P>::innermost;
};
// The tracer's description of element type E (a pointer's pointee; nothing for others).
template <class E> constexpr pointer_desc describe_pointer() {
  if constexpr (is_ptr_elem<E>) {
    using P = typename E::pointee;
    return {P::dtype, pointer_chain<P>::levels, pointer_chain<P>::innermost};
  } else {
    return {};
  }
}
}  // namespace detail

namespace detail {
// The element type of `tile<E> (op) literal`: Triton's weak typing for Python numbers.
// An integer literal takes the tile's type (i1 becomes i32); a floating literal takes
// the tile's float type, or f32 next to an integer tile.
template <class E, class S> struct literal_result {
  using type = std::conditional_t<std::is_floating_point_v<S>,
                                  std::conditional_t<is_float(E::dtype), E, ty::f32>,
                                  std::conditional_t<E::dtype == DType::i1, ty::i32, E>>;
};
template <class E, class S> using literal_t = typename literal_result<E, S>::type;

template <class E, class S> ir::Value* literal(S s, const Loc& loc) {
  using R = literal_t<E, S>;
  return literal_constant(R::dtype, s, loc);
}

// Captures the caller's location on the implicit conversion of an operator's first
// operand: operator functions cannot take a defaulted std::source_location.
template <class T> struct at {
  const T& v;
  Loc loc;
  at(const T& v, Loc loc = Loc::current()) : v(v), loc(loc) {}
};
template <class T> struct at_mut {
  T& v;
  Loc loc;
  at_mut(T& v, Loc loc = Loc::current()) : v(v), loc(loc) {}
};
}  // namespace detail

template <class E> class tile : public detail::TileBase {
  static_assert(requires { E::dtype; }, "tl::tile<E>: E must be an element type such as tl::ty::f32");

 public:
  using elem = E;
  tile() = default;
  explicit tile(ir::Value* v) : TileBase(v) {}
  tile(const tile&) = default;
  tile& operator=(const tile&) = default;

  // A C++ number where a scalar tile is expected: `tl::f32 x = 1.5f;`.
  template <Arith S> requires(!is_ptr_elem<E>)
  tile(S s, detail::Loc loc = detail::Loc::current()) : TileBase(detail::literal_constant(E::dtype, s, loc)) {}

  // Conversions: round to nearest even for narrowing floats, saturating for FP8.
  // f4e2m1 packs two values a byte along the last dim: its conversions to and from f32,
  // bf16 and f16 double or halve that dim ([M, K / 2] f4e2m1 <-> [M, K] f32), saturating
  // at +-6; e8m0 converts a scale code to 2^(code - 127) and back (docs/language.md,
  // "Block-scaled formats").
  // Pointers (Triton's int_to_ptr / ptr_to_int): `.to<tl::ptr<T>>()` of an i64 or u64
  // tile takes its values as addresses, `.to<tl::i64>()` of a pointer tile gives them.
  template <class T> tile<elem_t<T>> to(detail::Loc loc = detail::Loc::current()) const {
    using R = elem_t<T>;
    if constexpr (is_ptr_elem<E> || is_ptr_elem<R>)
      return tile<R>(detail::pointer_cast(get(), R::dtype, detail::describe_pointer<R>(), loc));
    else
      return tile<R>(detail::cast(get(), R::dtype, false, loc));
  }
  template <class T> tile<elem_t<T>> bitcast(detail::Loc loc = detail::Loc::current()) const {
    using R = elem_t<T>;
    static_assert(bit_width(R::dtype) == bit_width(E::dtype), "bitcast needs equal widths");
    if constexpr (is_ptr_elem<E> || is_ptr_elem<R>)  // an address's bits are the address
      return tile<R>(detail::pointer_cast(get(), R::dtype, detail::describe_pointer<R>(), loc));
    else
      return tile<R>(detail::cast(get(), R::dtype, true, loc));
  }

  // --- arithmetic between tiles: Triton's promotion, shapes broadcast ---
#define TL_BINARY(OP, KIND)                                                                          \
  template <class B> requires(!is_ptr_elem<E> && !is_ptr_elem<B>)                                   \
  friend tile<ty::promote_t<E, B>> operator OP(detail::at<tile> a, const tile<B>& b) {              \
    return tile<ty::promote_t<E, B>>(detail::binary(Op::KIND, a.v.get(), b.get(), a.loc));         \
  }                                                                                                   \
  template <Arith S> requires(!is_ptr_elem<E>)                                                      \
  friend tile<detail::literal_t<E, S>> operator OP(detail::at<tile> a, S s) {                       \
    return tile<detail::literal_t<E, S>>(                                                            \
        detail::binary(Op::KIND, a.v.get(), detail::literal<E>(s, a.loc), a.loc));                   \
  }                                                                                                   \
  template <Arith S> requires(!is_ptr_elem<E>)                                                      \
  friend tile<detail::literal_t<E, S>> operator OP(S s, detail::at<tile> a) {                       \
    return tile<detail::literal_t<E, S>>(                                                            \
        detail::binary(Op::KIND, detail::literal<E>(s, a.loc), a.v.get(), a.loc));                   \
  }
  TL_BINARY(*, mul)
  TL_BINARY(/, div)
  TL_BINARY(%, rem)
  TL_BINARY(&, band)
  TL_BINARY(|, bor)
  TL_BINARY(^, bxor)
  TL_BINARY(<<, shl)
  TL_BINARY(>>, shr)
#undef TL_BINARY

  // + and - also do pointer arithmetic: a pointer plus a tile of offsets is a tile of pointers.
#define TL_ADDSUB(OP, KIND, SIGN)                                                                    \
  template <class B> requires(!is_ptr_elem<B>)                                                      \
  friend auto operator OP(detail::at<tile> a, const tile<B>& b) {                                  \
    if constexpr (is_ptr_elem<E>) {                                                                 \
      static_assert(is_int(B::dtype), "a pointer offset must be an integer tile");                  \
      ir::Value* off = b.get();                                                                     \
      if (SIGN < 0) off = detail::unary(Op::neg, off, a.loc);                                       \
      return tile<E>(detail::binary(Op::addptr, a.v.get(), off, a.loc));                            \
    } else {                                                                                        \
      return tile<ty::promote_t<E, B>>(detail::binary(Op::KIND, a.v.get(), b.get(), a.loc));       \
    }                                                                                               \
  }                                                                                                 \
  template <Arith S>                                                                                \
  friend auto operator OP(detail::at<tile> a, S s) {                                               \
    if constexpr (is_ptr_elem<E>) {                                                                 \
      static_assert(std::is_integral_v<S>, "a pointer offset must be an integer");                  \
      ir::Value* off = detail::constant(DType::i64, 0, int64_t(s) * SIGN, a.loc);                   \
      return tile<E>(detail::binary(Op::addptr, a.v.get(), off, a.loc));                            \
    } else {                                                                                        \
      return tile<detail::literal_t<E, S>>(                                                         \
          detail::binary(Op::KIND, a.v.get(), detail::literal<E>(s, a.loc), a.loc));                \
    }                                                                                               \
  }                                                                                                 \
  template <Arith S> requires(!is_ptr_elem<E>)                                                      \
  friend tile<detail::literal_t<E, S>> operator OP(S s, detail::at<tile> a) {                       \
    return tile<detail::literal_t<E, S>>(                                                            \
        detail::binary(Op::KIND, detail::literal<E>(s, a.loc), a.v.get(), a.loc));                   \
  }
  TL_ADDSUB(+, add, 1)
  TL_ADDSUB(-, sub, -1)
#undef TL_ADDSUB

  // an integer tile plus a pointer (offsets + base)
  template <class P> requires(is_ptr_elem<P> && !is_ptr_elem<E>)
  friend tile<P> operator+(detail::at<tile> a, const tile<P>& p) {
    return tile<P>(detail::binary(Op::addptr, p.get(), a.v.get(), a.loc));
  }

  // --- comparisons give i1 tiles ---
#define TL_COMPARE(OP, PRED)                                                                         \
  template <class B>                                                                                 \
  friend tile<ty::i1> operator OP(detail::at<tile> a, const tile<B>& b) {                           \
    return tile<ty::i1>(detail::compare(CmpPred::PRED, a.v.get(), b.get(), a.loc));                 \
  }                                                                                                   \
  template <Arith S> requires(!is_ptr_elem<E>)                                                      \
  friend tile<ty::i1> operator OP(detail::at<tile> a, S s) {                                        \
    return tile<ty::i1>(detail::compare(CmpPred::PRED, a.v.get(), detail::literal<E>(s, a.loc), a.loc)); \
  }                                                                                                   \
  template <Arith S> requires(!is_ptr_elem<E>)                                                      \
  friend tile<ty::i1> operator OP(S s, detail::at<tile> a) {                                        \
    return tile<ty::i1>(detail::compare(CmpPred::PRED, detail::literal<E>(s, a.loc), a.v.get(), a.loc)); \
  }
  TL_COMPARE(<, lt)
  TL_COMPARE(<=, le)
  TL_COMPARE(>, gt)
  TL_COMPARE(>=, ge)
  TL_COMPARE(==, eq)
  TL_COMPARE(!=, ne)
#undef TL_COMPARE

  friend tile operator-(detail::at<tile> a) { return tile(detail::unary(Op::neg, a.v.get(), a.loc)); }
  friend tile operator~(detail::at<tile> a) { return tile(detail::unary(Op::bnot, a.v.get(), a.loc)); }
  friend tile operator!(detail::at<tile> a) { return tile(detail::unary(Op::bnot, a.v.get(), a.loc)); }

  // Compound assignment reassigns this tile: inside a tl::range body that makes it a
  // loop-carried value. The result keeps this tile's element type (like C++).
#define TL_COMPOUND(OP, KIND)                                                                     \
  template <class B> friend tile& operator OP(detail::at_mut<tile> a, const B& b) {             \
    a.v = tile(compound(Op::KIND, a.v.get(), b, a.loc));                                          \
    return a.v;                                                                                   \
  }
  TL_COMPOUND(+=, add)
  TL_COMPOUND(-=, sub)
  TL_COMPOUND(*=, mul)
  TL_COMPOUND(/=, div)
#undef TL_COMPOUND

 private:
  template <class B> static ir::Value* compound(Op op, ir::Value* self, const B& b, const detail::Loc& loc) {
    ir::Value* rhs;
    if constexpr (std::is_arithmetic_v<B>) {
      if constexpr (is_ptr_elem<E>) rhs = detail::constant(DType::i64, 0, int64_t(b), loc);
      else rhs = detail::literal<E>(b, loc);
    } else {
      rhs = b.get();
    }
    if constexpr (is_ptr_elem<E>) {
      static_assert(!std::is_floating_point_v<B>, "a pointer offset must be an integer");
      if (op != Op::add && op != Op::sub) detail::fail("only += and -= apply to pointers", loc);
      if (op == Op::sub) rhs = detail::unary(Op::neg, rhs, loc);
      return detail::binary(Op::addptr, self, rhs, loc);
    } else {
      return detail::cast(detail::binary(op, self, rhs, loc), E::dtype, false, loc);
    }
  }
};

// Parameter and value aliases, as a Triton user writes them: `tl::ptr<tl::bf16> x, tl::i32 n`.
template <class E> using ptr = tile<ty::ptr<elem_t<E>>>;
using i1 = tile<ty::i1>;
using i8 = tile<ty::i8>;
using i16 = tile<ty::i16>;
using i32 = tile<ty::i32>;
using i64 = tile<ty::i64>;
using u8 = tile<ty::u8>;
using u16 = tile<ty::u16>;
using u32 = tile<ty::u32>;
using u64 = tile<ty::u64>;
using f16 = tile<ty::f16>;
using bf16 = tile<ty::bf16>;
using f32 = tile<ty::f32>;
using f64 = tile<ty::f64>;
using f8e4m3fn = tile<ty::f8e4m3fn>;
using f8e5m2 = tile<ty::f8e5m2>;
using f8e4m3fnuz = tile<ty::f8e4m3fnuz>;
using f8e5m2fnuz = tile<ty::f8e5m2fnuz>;
using f4e2m1 = tile<ty::f4e2m1>;  // [.., n] holds [.., 2n] FP4 values
using e8m0 = tile<ty::e8m0>;

// ---------------------------------------------------------------------------------
// Creation and shape operations.

using shape_t = std::vector<int>;
using detail::Loc;

inline i32 program_id(int axis = 0, Loc loc = Loc::current()) { return i32(detail::program_id(axis, loc)); }
inline i32 num_programs(int axis = 0, Loc loc = Loc::current()) { return i32(detail::num_programs(axis, loc)); }
// [start, end): the length must be a power of two.
inline i32 arange(int start, int end, Loc loc = Loc::current()) { return i32(detail::arange(start, end, loc)); }

template <class E> tile<elem_t<E>> full(shape_t shape, double value, Loc loc = Loc::current()) {
  return tile<elem_t<E>>(detail::full(shape, elem_t<E>::dtype, value, detail::integer_part(value), loc));
}
template <class E> tile<elem_t<E>> zeros(shape_t shape, Loc loc = Loc::current()) { return full<E>(shape, 0.0, loc); }

template <class E> tile<E> broadcast_to(const tile<E>& a, shape_t shape, Loc loc = Loc::current()) {
  return tile<E>(detail::broadcast_to(a.get(), shape, loc));
}
template <class E> tile<E> expand_dims(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::expand_dims(a.get(), axis, loc));
}
template <class E> tile<E> reshape(const tile<E>& a, shape_t shape, Loc loc = Loc::current()) {
  return tile<E>(detail::reshape(a.get(), shape, loc));
}
// Permutes the axes; the default reverses them (a 2-D transpose).
template <class E> tile<E> trans(const tile<E>& a, shape_t perm = {}, Loc loc = Loc::current()) {
  return tile<E>(detail::trans(a.get(), perm, loc));
}

// Triton's tl.join(a, b): a new last dim of 2, a at index 0 and b at 1 ([...] -> [..., 2];
// two scalars give [2]); the shapes broadcast. tl.split(t), its inverse: t's last dim
// must be 2; `auto [lo, hi] = tl::split(t);`. tl.interleave(a, b): join, then the last two
// dims merged ([..., n] -> [..., 2n], a and b alternating). tl.cat(a, b): a then b along
// dim 0 (equal shapes; the order is kept, Triton's can_reorder=False). tl.flip(t, dim):
// the elements along dim (default the last) reversed. On GPUs join and split move no
// data when the 2 lies in one thread's registers, cat never moves any (docs/language.md).
template <class E> tile<E> join(const tile<E>& a, const tile<E>& b, Loc loc = Loc::current()) {
  return tile<E>(detail::join(a.get(), b.get(), loc));
}
template <class E> std::pair<tile<E>, tile<E>> split(const tile<E>& a, Loc loc = Loc::current()) {
  auto [lo, hi] = detail::split(a.get(), loc);
  return {tile<E>(lo), tile<E>(hi)};
}
template <class E> tile<E> interleave(const tile<E>& a, const tile<E>& b, Loc loc = Loc::current()) {
  return tile<E>(detail::interleave(a.get(), b.get(), loc));
}
template <class E> tile<E> cat(const tile<E>& a, const tile<E>& b, Loc loc = Loc::current()) {
  return tile<E>(detail::cat(a.get(), b.get(), loc));
}
template <class E> tile<E> flip(const tile<E>& a, int dim = -1, Loc loc = Loc::current()) {
  return tile<E>(detail::flip(a.get(), dim, loc));
}
// Triton's tl.gather(src, index, axis): out has index's shape, and out[i][j] is
// src[index[i][j]][j] for axis 0, src[i][index[i][j]] for axis 1 (any rank alike). index is
// an integer tile of src's rank whose dims other than `axis` are src's; an index outside
// [0, src.shape[axis]) is undefined behaviour, as in Triton (the CPU reads it modulo the
// dim). On GPUs src goes through shared memory once.
template <class E, class I> tile<E> gather(const tile<E>& src, const tile<I>& index, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::gather(src.get(), index.get(), axis, loc));
}

template <class A, class B>
tile<ty::promote_t<A, B>> where(const tile<ty::i1>& c, const tile<A>& a, const tile<B>& b, Loc loc = Loc::current()) {
  using R = ty::promote_t<A, B>;
  return tile<R>(detail::where(c.get(), detail::cast(a.get(), R::dtype, false, loc), detail::cast(b.get(), R::dtype, false, loc), loc));
}
template <class A, Arith S>
tile<A> where(const tile<ty::i1>& c, const tile<A>& a, S b, Loc loc = Loc::current()) {
  return tile<A>(detail::where(c.get(), a.get(), detail::literal_constant(A::dtype, b, loc), loc));
}
template <class A, Arith S>
tile<A> where(const tile<ty::i1>& c, S a, const tile<A>& b, Loc loc = Loc::current()) {
  return tile<A>(detail::where(c.get(), detail::literal_constant(A::dtype, a, loc), b.get(), loc));
}

template <Arith S>
auto where(const tile<ty::i1>& c, S a, S b, Loc loc = Loc::current()) {
  using R = std::conditional_t<std::is_floating_point_v<S>, ty::f32, ty::i32>;
  return tile<R>(detail::where(c.get(), detail::literal_constant(R::dtype, a, loc),
                               detail::literal_constant(R::dtype, b, loc), loc));
}
// Between pointers of one pointee (Triton's `tl.where(c, a_ptr, b_ptr)`): pointers do
// not promote, so both must have the same type.
template <class P> requires(is_ptr_elem<P>)
tile<P> where(const tile<ty::i1>& c, const tile<P>& a, const tile<P>& b, Loc loc = Loc::current()) {
  return tile<P>(detail::where(c.get(), a.get(), b.get(), loc));
}

// ---------------------------------------------------------------------------------
// Math.

#define TL_UNARY_FN(NAME, KIND)                                                            \
  template <class E> tile<E> NAME(const tile<E>& a, Loc loc = Loc::current()) {          \
    return tile<E>(detail::unary(Op::KIND, a.get(), loc));                                 \
  }
// exp, log, log2, sin and cos are accurate to a few ulp on every target (precise_math;
// docs/language.md, "Math functions"); tl::fast_expf and friends (tl/math.hpp) are the
// targets' approximate instructions. exp2 is the target's own (NVIDIA ex2.approx, 2 ulp,
// as Triton's tl.exp2: attention's softmax stays one instruction) but in f64, where GPUs
// have none and precise_math composes it.
#define TL_PRECISE_FN(NAME)                                                                \
  template <class E> tile<E> NAME(const tile<E>& a, Loc loc = Loc::current()) {          \
    return tile<E>(detail::precise_math(Op::NAME, a.get(), loc));                          \
  }
TL_PRECISE_FN(exp)
TL_PRECISE_FN(exp2)
TL_PRECISE_FN(log)
TL_PRECISE_FN(log2)
TL_UNARY_FN(sqrt, sqrt)
TL_UNARY_FN(rsqrt, rsqrt)
TL_UNARY_FN(abs, abs)
TL_PRECISE_FN(sin)
TL_PRECISE_FN(cos)
TL_PRECISE_FN(erf)  // (f64: precise_math's)
#undef TL_PRECISE_FN
TL_UNARY_FN(floor, floor)
TL_UNARY_FN(ceil, ceil)
#undef TL_UNARY_FN

template <class A, class B> tile<ty::promote_t<A, B>> maximum(const tile<A>& a, const tile<B>& b, Loc loc = Loc::current()) {
  return tile<ty::promote_t<A, B>>(detail::binary(Op::max, a.get(), b.get(), loc));
}
template <class A, Arith S> tile<detail::literal_t<A, S>> maximum(const tile<A>& a, S b, Loc loc = Loc::current()) {
  return tile<detail::literal_t<A, S>>(detail::binary(Op::max, a.get(), detail::literal<A>(b, loc), loc));
}
template <class A, class B> tile<ty::promote_t<A, B>> minimum(const tile<A>& a, const tile<B>& b, Loc loc = Loc::current()) {
  return tile<ty::promote_t<A, B>>(detail::binary(Op::min, a.get(), b.get(), loc));
}
template <class A, Arith S> tile<detail::literal_t<A, S>> minimum(const tile<A>& a, S b, Loc loc = Loc::current()) {
  return tile<detail::literal_t<A, S>>(detail::binary(Op::min, a.get(), detail::literal<A>(b, loc), loc));
}
// a * b + c in one rounding
template <class E> tile<E> fma(const tile<E>& a, const tile<E>& b, const tile<E>& c, Loc loc = Loc::current()) {
  return tile<E>(detail::fma(a.get(), b.get(), c.get(), loc));
}
// Ceiling division, for grid sizes (C++ ints) and for integer tiles.
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
template <class E> tile<E> cdiv(const tile<E>& a, int64_t b, Loc loc = Loc::current()) {
  return tile<E>(detail::binary(Op::div, detail::binary(Op::add, a.get(), detail::literal<E>(b - 1, loc), loc),
                                detail::literal<E>(b, loc), loc));
}

// ---------------------------------------------------------------------------------
// Reductions and scans along an axis.

template <class E> tile<E> sum(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::reduce(ReduceKind::sum, a.get(), axis, loc));
}
template <class E> tile<E> max(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::reduce(ReduceKind::max, a.get(), axis, loc));
}
template <class E> tile<E> min(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::reduce(ReduceKind::min, a.get(), axis, loc));
}
// Index of the first maximum along the axis.
template <class E> i32 argmax(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return i32(detail::reduce(ReduceKind::argmax, a.get(), axis, loc));
}
template <class E> i32 argmin(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return i32(detail::reduce(ReduceKind::argmin, a.get(), axis, loc));
}
// Triton's reverse=True scans from the end (out[i] combines a[i..n-1]).
template <class E> tile<E> cumsum(const tile<E>& a, int axis, bool reverse = false, Loc loc = Loc::current()) {
  return tile<E>(detail::scan(ReduceKind::sum, a.get(), axis, reverse, loc));
}
template <class E> tile<E> cumprod(const tile<E>& a, int axis, bool reverse = false, Loc loc = Loc::current()) {
  return tile<E>(detail::scan(ReduceKind::prod, a.get(), axis, reverse, loc));
}

// Triton's axis=None and keep_dims=True: `tl::sum(t)` reduces every axis to a scalar,
// `tl::sum(t, tl::keep_dims)` to a tile of ones, `tl::sum(t, 1, tl::keep_dims)` keeps the
// reduced axis as 1. The same for max, min and xor_sum (integers: Triton's tl.xor_sum).
struct keep_dims_t {
  explicit constexpr keep_dims_t() = default;
};
inline constexpr keep_dims_t keep_dims{};
#define TL_REDUCE_FORMS(NAME, KIND)                                                                          \
  template <class E> tile<E> NAME(const tile<E>& a, Loc loc = Loc::current()) {                             \
    return tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), 0, true, false, loc));                     \
  }                                                                                                          \
  template <class E> tile<E> NAME(const tile<E>& a, keep_dims_t, Loc loc = Loc::current()) {                \
    return tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), 0, true, true, loc));                      \
  }                                                                                                          \
  template <class E> tile<E> NAME(const tile<E>& a, int axis, keep_dims_t, Loc loc = Loc::current()) {      \
    return tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), axis, false, true, loc));                  \
  }
TL_REDUCE_FORMS(sum, sum)
TL_REDUCE_FORMS(max, max)
TL_REDUCE_FORMS(min, min)
TL_REDUCE_FORMS(xor_sum, xor_sum)
#undef TL_REDUCE_FORMS
template <class E> tile<E> xor_sum(const tile<E>& a, int axis, Loc loc = Loc::current()) {
  return tile<E>(detail::reduce(ReduceKind::xor_sum, a.get(), axis, loc));
}
template <class E> i32 argmax(const tile<E>& a, int axis, keep_dims_t, Loc loc = Loc::current()) {
  return i32(detail::reduce_dims(ReduceKind::argmax, a.get(), axis, false, true, loc));
}
template <class E> i32 argmin(const tile<E>& a, int axis, keep_dims_t, Loc loc = Loc::current()) {
  return i32(detail::reduce_dims(ReduceKind::argmin, a.get(), axis, false, true, loc));
}

// Triton's return_indices=True: `auto [m, i] = tl::max(t, axis, tl::return_indices);` the
// extreme and its index along the axis, the smallest index where several hold it (Triton's
// return_indices_tie_break_left). Without an axis, over the tile flattened (the index is
// then the flat row-major one).
struct return_indices_t {
  explicit constexpr return_indices_t() = default;
};
inline constexpr return_indices_t return_indices{};
#define TL_REDUCE_INDICES(NAME, KIND, ARG)                                                                     \
  template <class E>                                                                                          \
  std::pair<tile<E>, i32> NAME(const tile<E>& a, int axis, return_indices_t, Loc loc = Loc::current()) {      \
    return {tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), axis, false, false, loc)),                  \
            i32(detail::reduce_dims(ReduceKind::ARG, a.get(), axis, false, false, loc))};                      \
  }                                                                                                           \
  template <class E>                                                                                          \
  std::pair<tile<E>, i32> NAME(const tile<E>& a, int axis, return_indices_t, keep_dims_t,                     \
                               Loc loc = Loc::current()) {                                                     \
    return {tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), axis, false, true, loc)),                   \
            i32(detail::reduce_dims(ReduceKind::ARG, a.get(), axis, false, true, loc))};                       \
  }                                                                                                           \
  template <class E> std::pair<tile<E>, i32> NAME(const tile<E>& a, return_indices_t, Loc loc = Loc::current()) { \
    return {tile<E>(detail::reduce_dims(ReduceKind::KIND, a.get(), 0, true, false, loc)),                      \
            i32(detail::reduce_dims(ReduceKind::ARG, a.get(), 0, true, false, loc))};                          \
  }
TL_REDUCE_INDICES(max, max, argmax)
TL_REDUCE_INDICES(min, min, argmin)
#undef TL_REDUCE_INDICES

// ---------------------------------------------------------------------------------
// Reductions and scans with the user's combine function (Triton's tl.reduce and
// tl.associative_scan, combine_fn a C++ lambda):
//
//   auto m = tl::reduce(x, 0, [](tl::f32 a, tl::f32 b) { return tl::maximum(a, b); });
//   auto [v, i] = tl::reduce(std::tuple{x, idx}, 1, [](tl::f32 va, tl::i32 ia, tl::f32 vb, tl::i32 ib) {
//     tl::i1 take_a = (va > vb) | ((va == vb) & (ia < ib));
//     return std::tuple{tl::where(take_a, va, vb), tl::where(take_a, ia, ib)};
//   });
//   auto [A, H] = tl::associative_scan(std::tuple{a, b}, 0, [](tl::f32 a1, tl::f32 b1, tl::f32 a2, tl::f32 b2) {
//     return std::tuple{a1 * a2, a2 * b1 + b2};
//   });
//
// Several tiles of one shape go in as a std::tuple and come out as one; the combine takes
// the 2N scalars (the N of the left group, then the N of the right) and returns N scalars
// of the operands' element types (one tile, or a std::tuple / std::pair of them). It is
// traced once, into the op's region, and may use only pure elementwise operations on its
// arguments, literals and scalars of the kernel: loads, stores, atomics, control flow and
// tiles from outside it are errors at their line (docs/language.md, "Reductions and scans
// with a combine function"). A reduction needs an associative and commutative combine (the
// order it combines in is the target's); a scan only associative (out[i] combines x[0]..x[i]
// left to right; reverse: x[n-1]..x[i], the later elements on the left).
namespace detail {
// The combine region being traced (dsl/src/combine.cpp): opens `op`'s region with 2N
// scalar arguments, the insertion point inside it; finish() checks what the combine
// returned, closes the region and gives the op's results. Destroyed unfinished (the
// combine threw), it puts the insertion point back.
class CombineRegion {
 public:
  enum Flags { kReverse = 1, kKeepDims = 2, kAllAxes = 4 };
  CombineRegion(Op op, std::vector<ir::Value*> operands, int axis, int flags, const Loc& loc);
  ~CombineRegion();
  CombineRegion(const CombineRegion&) = delete;
  CombineRegion& operator=(const CombineRegion&) = delete;
  ir::Value* arg(size_t i) const { return args_.at(i); }
  std::vector<ir::Value*> finish(const std::vector<ir::Value*>& yielded);

 private:
  ir::Operation* op_ = nullptr;
  ir::Block* outer_ = nullptr;
  std::vector<ir::Value*> args_;
  int axis_ = 0, flags_ = 0, rank_ = 0;
  std::vector<int> shape_;  // the operands' shape before any flattening
  Loc loc_;
  bool done_ = false;
};
template <class T> struct is_combine_result_tile : std::false_type {};
template <class E> struct is_combine_result_tile<tile<E>> : std::true_type {};
template <class R> void combine_results(const R& r, std::vector<ir::Value*>& out) {
  if constexpr (is_combine_result_tile<R>::value) {
    out.push_back(r.get());
  } else {
    static_assert(requires { std::tuple_size<R>::value; },
                  "a combine function returns a tile, or a std::tuple / std::pair of tiles (one per operand)");
    std::apply([&](const auto&... t) { (combine_results(t, out), ...); }, r);
  }
}
template <class... E, class F, size_t... I>
std::tuple<tile<E>...> run_combine(Op op, const std::tuple<tile<E>...>& in, int axis, int flags, F& combine,
                                   const Loc& loc, std::index_sequence<I...>) {
  static_assert(std::is_invocable_v<F&, tile<E>..., tile<E>...>,
                "a combine function over N tiles takes 2N scalars: the left group's N, then the right group's");
  CombineRegion region(op, {std::get<I>(in).get()...}, axis, flags, loc);
  std::vector<ir::Value*> yielded;
  combine_results(combine(tile<E>(region.arg(I))..., tile<E>(region.arg(sizeof...(E) + I))...), yielded);
  std::vector<ir::Value*> out = region.finish(yielded);
  return std::tuple<tile<E>...>(tile<E>(out[I])...);
}
template <class... E, class F>
std::tuple<tile<E>...> combine_op(Op op, const std::tuple<tile<E>...>& in, int axis, int flags, F& combine,
                                  const Loc& loc) {
  return run_combine(op, in, axis, flags, combine, loc, std::index_sequence_for<E...>{});
}
}  // namespace detail

// tl.reduce(input, axis, combine_fn[, keep_dims]): one tile, or a tuple of tiles.
template <class E, class F> requires std::is_invocable_v<F&, tile<E>, tile<E>>
tile<E> reduce(const tile<E>& a, int axis, F&& combine, Loc loc = Loc::current()) {
  return std::get<0>(detail::combine_op(Op::reduce, std::tuple<tile<E>>(a), axis, 0, combine, loc));
}
template <class E, class F> requires std::is_invocable_v<F&, tile<E>, tile<E>>
tile<E> reduce(const tile<E>& a, int axis, F&& combine, keep_dims_t, Loc loc = Loc::current()) {
  return std::get<0>(
      detail::combine_op(Op::reduce, std::tuple<tile<E>>(a), axis, detail::CombineRegion::kKeepDims, combine, loc));
}
// axis=None: over every axis (the tile flattened), a scalar.
template <class E, class F> requires std::is_invocable_v<F&, tile<E>, tile<E>>
tile<E> reduce(const tile<E>& a, F&& combine, Loc loc = Loc::current()) {
  return std::get<0>(
      detail::combine_op(Op::reduce, std::tuple<tile<E>>(a), 0, detail::CombineRegion::kAllAxes, combine, loc));
}
template <class... E, class F>
std::tuple<tile<E>...> reduce(const std::tuple<tile<E>...>& in, int axis, F&& combine, Loc loc = Loc::current()) {
  return detail::combine_op(Op::reduce, in, axis, 0, combine, loc);
}
template <class... E, class F>
std::tuple<tile<E>...> reduce(const std::tuple<tile<E>...>& in, int axis, F&& combine, keep_dims_t,
                              Loc loc = Loc::current()) {
  return detail::combine_op(Op::reduce, in, axis, detail::CombineRegion::kKeepDims, combine, loc);
}
template <class... E, class F> requires(!std::is_convertible_v<F, int>)
std::tuple<tile<E>...> reduce(const std::tuple<tile<E>...>& in, F&& combine, Loc loc = Loc::current()) {
  return detail::combine_op(Op::reduce, in, 0, detail::CombineRegion::kAllAxes, combine, loc);
}
// tl.associative_scan(input, axis, combine_fn, reverse): inclusive, the result of the
// input's shape; reverse scans from the end.
template <class E, class F> requires std::is_invocable_v<F&, tile<E>, tile<E>>
tile<E> associative_scan(const tile<E>& a, int axis, F&& combine, bool reverse = false, Loc loc = Loc::current()) {
  return std::get<0>(detail::combine_op(Op::scan, std::tuple<tile<E>>(a), axis,
                                        reverse ? detail::CombineRegion::kReverse : 0, combine, loc));
}
template <class... E, class F>
std::tuple<tile<E>...> associative_scan(const std::tuple<tile<E>...>& in, int axis, F&& combine, bool reverse = false,
                                        Loc loc = Loc::current()) {
  return detail::combine_op(Op::scan, in, axis, reverse ? detail::CombineRegion::kReverse : 0, combine, loc);
}

// Matrix multiply (Triton's tl.dot): a [M, K] by b [K, N], f32 accumulation for bf16,
// f16, FP8 and f32 operands and i32 for i8 (the accumulator type, `dot_acc_t`). M, N and
// K are powers of two, M and N at least 16, K at least 16 (32 for FP8 and i8). On GPUs it runs
// on the matrix cores (docs/language.md, "tl::dot").
template <class A> using dot_acc_t = std::conditional_t<A::dtype == DType::i8, ty::i32, ty::f32>;
template <class A, class B> tile<dot_acc_t<A>> dot(const tile<A>& a, const tile<B>& b, Loc loc = Loc::current()) {
  return tile<dot_acc_t<A>>(detail::dot(a.get(), b.get(), nullptr, loc));
}
// acc + a . b: the accumulator carried through a K loop.
template <class A, class B, class C>
tile<C> dot(const tile<A>& a, const tile<B>& b, const tile<C>& acc, Loc loc = Loc::current()) {
  return tile<C>(detail::dot(a.get(), b.get(), acc.get(), loc));
}
// With Triton's input_precision (above): `tl::dot(a, b, acc, tl::input_precision::ieee)`.
template <class A, class B, class C>
tile<C> dot(const tile<A>& a, const tile<B>& b, const tile<C>& acc, input_precision p, Loc loc = Loc::current()) {
  return tile<C>(detail::dot(a.get(), b.get(), acc.get(), p, loc));
}
template <class A, class B>
tile<dot_acc_t<A>> dot(const tile<A>& a, const tile<B>& b, input_precision p, Loc loc = Loc::current()) {
  return tile<dot_acc_t<A>>(detail::dot(a.get(), b.get(), nullptr, p, loc));
}

// Block-scaled matrix multiply (Triton's tl.dot_scaled, OCP MX formats): acc + (a * 2^(a_scale
// - 127)) . (b * 2^(b_scale - 127)), each scale over 32 consecutive elements along K.
// Formats: "e2m1" (a an f4e2m1 or u8 tile [M, K / 2], b [K / 2, N], both packed along K),
// "e4m3", "e5m2" (f8e4m3fn / f8e5m2, or u8 holding their codes), "bf16", "fp16". Scales:
// e8m0 (or u8) tiles a_scale [M, K / 32] and b_scale [N, K / 32], or nullptr (Triton's None:
// that operand unscaled). Where no scaled matrix instruction exists each operand is
// upcast to bf16 with its scale (exact but for bf16's range) and multiplied by tl::dot.
struct mx_scale {
  ir::Value* v = nullptr;
  mx_scale(std::nullptr_t) {}
  mx_scale(const tile<ty::e8m0>& s) : v(s.get()) {}
  mx_scale(const tile<ty::u8>& s) : v(s.get()) {}
};
template <class A, class B>
tile<ty::f32> dot_scaled(const tile<A>& a, mx_scale a_scale, std::string_view a_format, const tile<B>& b,
                         mx_scale b_scale, std::string_view b_format, const tile<ty::f32>& acc, Loc loc = Loc::current()) {
  return tile<ty::f32>(detail::dot_scaled(a.get(), a_scale.v, a_format, b.get(), b_scale.v, b_format, acc.get(), loc));
}
template <class A, class B>
tile<ty::f32> dot_scaled(const tile<A>& a, mx_scale a_scale, std::string_view a_format, const tile<B>& b,
                         mx_scale b_scale, std::string_view b_format, Loc loc = Loc::current()) {
  return tile<ty::f32>(detail::dot_scaled(a.get(), a_scale.v, a_format, b.get(), b_scale.v, b_format, nullptr, loc));
}

// ---------------------------------------------------------------------------------
// Memory. `mask` lanes that are false are not accessed; masked-off loads give `other`.
// `opts` (last, optional): a cache modifier, eviction policy and tl::volatile_, see
// access_options above.

template <class E> tile<E> load(const tile<ty::ptr<E>>& p, access_options opts = {}, Loc loc = Loc::current()) {
  return tile<E>(detail::load(p.get(), nullptr, nullptr, opts, loc));
}
template <class E>
tile<E> load(const tile<ty::ptr<E>>& p, const tile<ty::i1>& mask, access_options opts = {}, Loc loc = Loc::current()) {
  return tile<E>(detail::load(p.get(), mask.get(), nullptr, opts, loc));
}
template <class E, Arith S>
tile<E> load(const tile<ty::ptr<E>>& p, const tile<ty::i1>& mask, S other, access_options opts = {}, Loc loc = Loc::current()) {
  return tile<E>(detail::load(p.get(), mask.get(), detail::literal_constant(E::dtype, other, loc), opts, loc));
}
template <class E>
tile<E> load(const tile<ty::ptr<E>>& p, const tile<ty::i1>& mask, const tile<E>& other, access_options opts = {},
             Loc loc = Loc::current()) {
  return tile<E>(detail::load(p.get(), mask.get(), other.get(), opts, loc));
}
template <class E, class V>
void store(const tile<ty::ptr<E>>& p, const tile<V>& v, access_options opts = {}, Loc loc = Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::store: the value's element type must be the pointee (use .to<T>())");
  detail::store(p.get(), v.get(), nullptr, opts, loc);
}
template <class E, class V>
void store(const tile<ty::ptr<E>>& p, const tile<V>& v, const tile<ty::i1>& mask, access_options opts = {},
           Loc loc = Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::store: the value's element type must be the pointee (use .to<T>())");
  detail::store(p.get(), v.get(), mask.get(), opts, loc);
}

// Atomics return the old values. Default semantics acq_rel and scope gpu, as Triton;
// `sem::relaxed` is what reductions into memory want (no cache fences on AMD).
#define TL_ATOMIC(NAME, KIND)                                                                                \
  template <class E, class V>                                                                                \
  tile<E> NAME(const tile<ty::ptr<E>>& p, const tile<V>& v, sem s = sem::acq_rel, scope sc = scope::gpu,    \
               Loc loc = Loc::current()) {                                                                   \
    return tile<E>(detail::atomic_rmw(AtomicKind::KIND, p.get(), detail::cast(v.get(), E::dtype, false, loc), \
                                      nullptr, s, sc, loc));                                                 \
  }                                                                                                          \
  template <class E, class V>                                                                                \
  tile<E> NAME(const tile<ty::ptr<E>>& p, const tile<V>& v, const tile<ty::i1>& mask, sem s = sem::acq_rel, \
               scope sc = scope::gpu, Loc loc = Loc::current()) {                                            \
    return tile<E>(detail::atomic_rmw(AtomicKind::KIND, p.get(), detail::cast(v.get(), E::dtype, false, loc), \
                                      mask.get(), s, sc, loc));                                              \
  }                                                                                                          \
  template <class E, Arith S>                                                                                \
  tile<E> NAME(const tile<ty::ptr<E>>& p, S v, sem s = sem::acq_rel, scope sc = scope::gpu,                 \
               Loc loc = Loc::current()) {                                                                   \
    return tile<E>(detail::atomic_rmw(AtomicKind::KIND, p.get(), detail::literal_constant(E::dtype, v, loc), \
                                      nullptr, s, sc, loc));                                                 \
  }
TL_ATOMIC(atomic_add, add)
TL_ATOMIC(atomic_max, max)
TL_ATOMIC(atomic_min, min)
TL_ATOMIC(atomic_xchg, xchg)
TL_ATOMIC(atomic_and, band)
TL_ATOMIC(atomic_or, bor)
TL_ATOMIC(atomic_xor, bxor)
#undef TL_ATOMIC

// Compare-and-swap on scalars or tiles: stores `v` where the old value equals `cmp`.
// `cmp` and `v` are tiles of the pointee type or C++ numbers, which take it
// (`tl::atomic_cas(lock, 0, 1)`, Triton's spin lock).
namespace detail {
template <class E, class V> ir::Value* cas_operand(const V& v, const Loc& loc) {
  if constexpr (std::is_arithmetic_v<V>) return literal_constant(E::dtype, v, loc);
  else return v.get();
}
}  // namespace detail
template <class E, class C, class V>
  requires((std::is_arithmetic_v<C> || std::is_same_v<C, tile<E>>) && (std::is_arithmetic_v<V> || std::is_same_v<V, tile<E>>))
tile<E> atomic_cas(const tile<ty::ptr<E>>& p, const C& cmp, const V& v, sem s = sem::acq_rel, scope sc = scope::gpu,
                   Loc loc = Loc::current()) {
  return tile<E>(detail::atomic_cas(p.get(), detail::cas_operand<E>(cmp, loc), detail::cas_operand<E>(v, loc), s, sc, loc));
}

// ---------------------------------------------------------------------------------
// Control flow.

struct num_stages {
  int n;
  explicit num_stages(int n) : n(n) {}
};

// `for (auto i : tl::range(lo, hi, step))` traces its body once into a loop of the IR.
// The range-for protocol calls begin(), then `!=` (true: trace the body), then `++`
// (close the loop), then `!=` again (false: done).
class range {
 public:
  // Without num_stages a loop takes the launch option's (`.num_stages`, 1 by default).
  range(i32 end, Loc loc = Loc::current()) : range(i32(0), std::move(end), i32(1), loc) {}
  range(i32 start, i32 end, Loc loc = Loc::current()) : range(std::move(start), std::move(end), i32(1), loc) {}
  range(i32 start, i32 end, i32 step, Loc loc = Loc::current())
      : start_(std::move(start)), end_(std::move(end)), step_(std::move(step)), loc_(loc) {}
  // Triton's `tl.range(0, n, num_stages=2)` and `tl.range(n, num_stages=2)`: step 1.
  range(i32 end, num_stages stages, Loc loc = Loc::current()) : range(i32(0), std::move(end), i32(1), stages, loc) {}
  range(i32 start, i32 end, num_stages stages, Loc loc = Loc::current())
      : range(std::move(start), std::move(end), i32(1), stages, loc) {}
  range(i32 start, i32 end, i32 step, num_stages stages, Loc loc = Loc::current())
      : start_(std::move(start)), end_(std::move(end)), step_(std::move(step)), stages_(stages.n),
        stages_given_(true), loc_(loc) {}
  // Begun and never closed: the body was left by break or return (`++` never ran), which
  // a traced body cannot do. Reported here, at the range's line (a trace error).
  ~range() noexcept(false) {
    if (iv_ && !done_) detail::loop_left(loc_);
  }

  class iterator {
   public:
    explicit iterator(range* r) : r_(r) {}
    i32 operator*() const { return i32(r_->iv_); }
    iterator& operator++() {
      detail::end_for();
      r_->done_ = true;
      return *this;
    }
    bool operator!=(const iterator&) const { return !r_->done_; }

   private:
    range* r_;
  };
  iterator begin() {
    iv_ = detail::begin_for(start_.get(), end_.get(), step_.get(), stages_, stages_given_, loc_);
    return iterator(this);
  }
  iterator end() { return iterator(this); }

 private:
  i32 start_, end_, step_;
  int stages_ = 0;
  bool stages_given_ = false;
  Loc loc_;
  ir::Value* iv_ = nullptr;
  bool done_ = false;
};

// Unrolled while tracing: the loop variable is a plain C++ int.
inline std::vector<int> static_range(int end) {
  std::vector<int> r(end > 0 ? end : 0);
  for (int i = 0; i < end; ++i) r[i] = i;
  return r;
}
inline std::vector<int> static_range(int start, int end, int step = 1) {
  std::vector<int> r;
  for (int i = start; step > 0 ? i < end : i > end; i += step) r.push_back(i);
  return r;
}

// A run-time loop, Triton's `while cond: body`:
//   tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [&] { });
// `cond` returns a scalar tl::i1 (or a C++ bool) and runs before every iteration, the
// last one included, so it may have effects (an atomic) and may assign tiles; `body`
// runs while it is true. Tiles assigned in either lambda are carried from one iteration
// to the next exactly as in a tl::range loop, and hold the values they had when the
// condition was false afterwards. Both lambdas are traced once.
template <class Cond, class Body> void while_(Cond&& cond, Body&& body, Loc loc = Loc::current()) {
  detail::begin_while(loc);
  {
    auto c = cond();
    using C = decltype(c);
    static_assert(std::is_same_v<C, tile<ty::i1>> || std::is_same_v<C, bool>,
                  "tl::while_: the condition must return a tl::i1 (a comparison) or a bool");
    if constexpr (std::is_same_v<C, bool>)
      detail::begin_while_body(detail::constant(DType::i1, c ? 1 : 0, c ? 1 : 0, loc), loc);
    else
      detail::begin_while_body(c.get(), loc);
  }
  body();
  detail::end_while();
}

// A run-time branch on a scalar i1: `tl::if_(c, [&] { ... }).else_([&] { ... });`
// Tiles assigned in either branch hold the branch's value afterwards.
class if_ {
 public:
  template <class F> if_(const i1& cond, F&& then_fn, Loc loc = Loc::current()) {
    detail::begin_if(cond.get(), loc);
    then_fn();
  }
  template <class F> void else_(F&& else_fn) {
    detail::begin_else();
    has_else_ = true;
    else_fn();
  }
  ~if_() noexcept(false) {
    if (std::uncaught_exceptions() == 0) {
      if (!has_else_) detail::begin_else();
      detail::end_if();
    }
  }
  if_(const if_&) = delete;
  if_& operator=(const if_&) = delete;

 private:
  bool has_else_ = false;
};

// ---------------------------------------------------------------------------------
// Shared memory (Triton's local_alloc / local_load / local_store).
//
// `auto buf = tl::shared<tl::bf16>({STAGES, ROWS, COLS});` is one buffer per program of
// STAGES tiles of [ROWS, COLS] (1 to 3 power-of-two dims; any positive stage count);
// `buf[s]` is stage s, where s is a C++ int (checked while tracing) or a run-time
// tl::i32; `buf[s].store(t)` writes a tile of that shape and element type and
// `buf[s].load()` reads it back in whatever layout its users want. The compiler puts a
// barrier wherever a thread may read what another wrote, or overwrite what another may
// still read (codegen/passes/insert_barriers.cpp); tl::barrier() is there for
// hand-written synchronisation but not needed for these. A buffer is not a tile: it is
// made once and used as is inside tl::range loops and tl::if_ branches.

namespace detail {
// `buf[s]`: operator[] cannot take a defaulted location, so the index captures it.
struct stage_index {
  int constant = 0;
  ir::Value* value = nullptr;  // a run-time index, else `constant`
  Loc loc;
  stage_index(int s, Loc loc = Loc::current()) : constant(s), loc(loc) {}
  stage_index(const tile<ty::i32>& s, Loc loc = Loc::current()) : value(s.get()), loc(loc) {}
};
}  // namespace detail

template <class E> class shared_stage {
 public:
  shared_stage(ir::Value* buf, ir::Value* stage) : buf_(buf), stage_(stage) {}
  tile<E> load(Loc loc = Loc::current()) const { return tile<E>(detail::shared_load(buf_, stage_, loc)); }
  template <class V> void store(const tile<V>& v, Loc loc = Loc::current()) const {
    static_assert(std::is_same_v<E, V>, "tl::shared: the stored tile's element type must be the buffer's (use .to<T>())");
    detail::shared_store(buf_, stage_, v.get(), loc);
  }

  ir::Value* buffer() const { return buf_; }
  ir::Value* stage() const { return stage_; }

 private:
  ir::Value* buf_;
  ir::Value* stage_;
};

template <class E> class shared_tile {
 public:
  using elem = E;
  explicit shared_tile(ir::Value* buf) : buf_(buf) {}
  shared_stage<E> operator[](detail::stage_index s) const {
    return shared_stage<E>(buf_, detail::shared_stage(buf_, s.constant, s.value, s.loc));
  }
  ir::Value* get() const { return buf_; }

 private:
  ir::Value* buf_;
};

// shape = {stages, tile dims...}
template <class E> shared_tile<elem_t<E>> shared(shape_t shape, Loc loc = Loc::current()) {
  return shared_tile<elem_t<E>>(detail::shared_alloc(elem_t<E>::dtype, shape, loc));
}

// ---------------------------------------------------------------------------------
// Compiler hints (Triton's tl.multiple_of, tl.max_contiguous, tl.max_constancy,
// tl.assume): promises about values the compiler cannot see (sizes and strides loaded
// from memory or passed at run time). They change no result when true; when false the
// program is wrong (undefined behaviour, as in Triton). They feed the axis analysis:
// the width of loads and stores, the AMD buffer loads (non-negative offsets).
//
// `tl::multiple_of(x, 16)` / `tl::multiple_of(x, {16, 16})` (one value per dimension,
// one for a scalar): every element of x, or the first of each contiguous run, is a
// multiple of n. `tl::max_contiguous(x, n)`: runs of n consecutive values (+1 each
// along the dimension, aligned to n). `tl::max_constancy(x, n)`: runs of n equal
// values. Integer and pointer tiles. As in Triton, the fact also stays with x: on a
// tile object (not a temporary) the call rebinds it to the hinted value, so
// `tl::multiple_of(a_ptrs, {16, 16});` alone hints the loads through a_ptrs after it.
// `tl::assume(cond)`: a scalar i1 the program promises true (`stride_am > 0`,
// `n % 16 == 0`); the compiler reads `x > c`, `x >= c`, `x < c`, `x <= c`, `x == c`,
// `x % n == 0` and `&` of those for the scalar x, wherever x is used.

namespace detail {
// One value per dimension, or one for a scalar or 1-D tile: `16` or `{16, 16}`.
struct hint_values {
  std::vector<int64_t> v;
  hint_values(int64_t n) : v{n} {}
  hint_values(std::initializer_list<int64_t> ns) : v(ns) {}
};
}  // namespace detail

#define TL_HINT(NAME)                                                                                    \
  template <class E> tile<E> NAME(tile<E>& x, detail::hint_values n, Loc loc = Loc::current()) {        \
    x = tile<E>(detail::hint(x.get(), HintKind::NAME, n.v, loc));                                        \
    return x;                                                                                            \
  }                                                                                                      \
  template <class E>                                                                                     \
  [[nodiscard]] tile<E> NAME(const tile<E>& x, detail::hint_values n, Loc loc = Loc::current()) {       \
    return tile<E>(detail::hint(x.get(), HintKind::NAME, n.v, loc));                                     \
  }
TL_HINT(multiple_of)
TL_HINT(max_contiguous)
TL_HINT(max_constancy)
#undef TL_HINT

inline void assume(const i1& cond, Loc loc = Loc::current()) { detail::assume(cond.get(), loc); }

// ---------------------------------------------------------------------------------
// Debugging.

// Stops the launch with a tl::kernel_fault naming this line when `cond` is false anywhere.
inline void device_assert(const i1& cond, const std::string& msg = "", Loc loc = Loc::current()) {
  detail::device_assert(cond.get(), msg, loc);
}
// Prints each element with its program id.
template <class E> void device_print(const std::string& prefix, const tile<E>& v, Loc loc = Loc::current()) {
  detail::device_print(prefix, v.get(), loc);
}
// Every thread of the program waits here; shared-memory writes before it are visible to
// every thread after it (Triton's debug_barrier, CUDA's __syncthreads). On the CPU a
// program is one thread, so it orders nothing and costs nothing.
inline void barrier(Loc loc = Loc::current()) { detail::barrier(loc); }

// Programmatic dependent launch (Triton's tl.extra.cuda.gdc_wait and gdc_launch_dependents,
// tutorial 11), for kernels launched with `.with({.launch_pdl = true})`, which may start
// before the previous kernel on the stream has finished:
// gdc_wait() waits until that kernel has completed and its writes are visible: call it
// before the first read of anything the previous kernel writes (and before the first
// write of anything it reads). gdc_launch_dependents() lets the next kernel launched with
// launch_pdl start while this one runs (a hint: once every program has called it or
// exited); what this kernel writes after it is still seen by the next one's gdc_wait().
// PTX griddepcontrol on NVIDIA sm_90 and later; elsewhere (AMD, the CPU, older NVIDIA) no
// launch overlaps the previous one, and both are no-ops.
inline void gdc_wait(Loc loc = Loc::current()) { detail::gdc(Op::gdc_wait, loc); }
inline void gdc_launch_dependents(Loc loc = Loc::current()) { detail::gdc(Op::gdc_launch_dependents, loc); }

}  // namespace tl

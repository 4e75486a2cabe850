// Triton's math functions beyond the IR's own (tl.math / libdevice names): tanh, sigmoid,
// log1p, expm1, sinh, cosh, tan, atan, atan2, asin, acos, cbrt, erfc, pow and clamp.
//
// One implementation for every target, written in tile operations (dsl/src/math.cpp):
// fma, mul, add, select, comparisons, bitcasts and integer arithmetic, whose lowering is
// exact (or IEEE-rounded) on the CPU, AMD and NVIDIA alike. Nothing calls a library (GPUs
// have no libm), and only tanh and sigmoid use the targets' approximate exponential and
// reciprocal instructions, where their error reaches the result damped or refined, so a
// function has one error bound everywhere; docs/language.md lists each one's maximum
// error in ulp, measured by tests/dsl/math_test.cpp.
//
// f32 is computed directly; f16 and bf16 are computed in f32 and rounded once at the end.
// f64 and integer tiles are a tl::trace_error naming the caller's line.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tl/tile.hpp"

namespace tl {

// Triton's tl.PropagateNan for tl::clamp: `none` clamps a NaN to the lower bound (the
// min/max instructions' rule, what Triton's default gives on GPUs), `all` keeps the NaN.
enum class propagate_nan : uint8_t { none, all };

namespace detail {
enum class math_fn : uint8_t { tanh, sigmoid, log1p, expm1, sinh, cosh, tan, atan, asin, acos, cbrt, erfc };
// fn applied to a floating-point tile; the result has x's dtype (dsl/src/math.cpp).
ir::Value* math_unary(math_fn fn, ir::Value* x, const Loc& loc);
ir::Value* math_atan2(ir::Value* y, ir::Value* x, const Loc& loc);
// x ** y for a floating-point x and a floating-point or integer y; the result has x's dtype.
ir::Value* math_pow(ir::Value* x, ir::Value* y, const Loc& loc);
ir::Value* math_clamp(ir::Value* x, ir::Value* lo, ir::Value* hi, propagate_nan p, const Loc& loc);
}  // namespace detail

#define TL_MATH_FN(NAME)                                                                  \
  template <class E> tile<E> NAME(const tile<E>& x, Loc loc = Loc::current()) {          \
    return tile<E>(detail::math_unary(detail::math_fn::NAME, x.get(), loc));             \
  }
TL_MATH_FN(tanh)
TL_MATH_FN(sigmoid)
TL_MATH_FN(log1p)
TL_MATH_FN(expm1)
TL_MATH_FN(sinh)
TL_MATH_FN(cosh)
TL_MATH_FN(tan)
TL_MATH_FN(atan)
TL_MATH_FN(asin)
TL_MATH_FN(acos)
TL_MATH_FN(cbrt)
TL_MATH_FN(erfc)
#undef TL_MATH_FN

// The angle of (x, y) in (-pi, pi], C's atan2 (signed zeros and infinities included).
template <class E> tile<E> atan2(const tile<E>& y, const tile<E>& x, Loc loc = Loc::current()) {
  return tile<E>(detail::math_atan2(y.get(), x.get(), loc));
}

// x ** y with C's special cases (pow(x, 0) = 1, pow(1, y) = 1, a negative x to a
// non-integer power is NaN, ...). y is a floating-point tile or an integer tile (Triton's
// libdevice pow(float, int)); a C++ integer is an integer exponent, a C++ float an f32 one.
template <class E, class Y> tile<E> pow(const tile<E>& x, const tile<Y>& y, Loc loc = Loc::current()) {
  return tile<E>(detail::math_pow(x.get(), y.get(), loc));
}
template <class E, Arith S> tile<E> pow(const tile<E>& x, S y, Loc loc = Loc::current()) {
  constexpr DType d = std::is_integral_v<S> ? DType::i32 : DType::f32;
  return tile<E>(detail::math_pow(x.get(), detail::literal_constant(d, y, loc), loc));
}
template <class Y, Arith S> tile<detail::literal_t<Y, S>> pow(S x, const tile<Y>& y, Loc loc = Loc::current()) {
  using R = detail::literal_t<Y, S>;
  return tile<R>(detail::math_pow(detail::literal_constant(R::dtype, x, loc), y.get(), loc));
}

// x limited to [lo, hi] (Triton's tl.clamp; floating-point tiles only; lo > hi, or a NaN
// bound, gives an unspecified value as in Triton). Bounds are tiles of x's type or numbers.
namespace detail {
template <class E, class B> ir::Value* clamp_bound(const B& b, const Loc& loc) {
  if constexpr (std::is_arithmetic_v<B>) return literal_constant(E::dtype, b, loc);
  else return b.get();
}
}  // namespace detail
template <class E, class L, class H>
  requires((std::is_arithmetic_v<L> || std::is_same_v<L, tile<E>>) && (std::is_arithmetic_v<H> || std::is_same_v<H, tile<E>>))
tile<E> clamp(const tile<E>& x, const L& lo, const H& hi, propagate_nan p = propagate_nan::none,
              Loc loc = Loc::current()) {
  return tile<E>(detail::math_clamp(x.get(), detail::clamp_bound<E>(lo, loc), detail::clamp_bound<E>(hi, loc), p, loc));
}

// The targets' approximate instructions, asked by name as in Triton's libdevice
// (tl.extra.cuda.libdevice.fast_expf, ...): faster than tl::exp/log/sin/cos, with the
// hardware's accuracy (docs/language.md's table): NVIDIA ex2.approx / lg2.approx /
// sin.approx / cos.approx / div.approx, AMD v_exp_f32 / v_log_f32 / v_sin_f32 /
// v_cos_f32 / v_rcp_f32, the CPU's libm (as accurate as the precise forms).
// fast_sinf and fast_cosf are only accurate for small arguments (|x| up to a few pi).
namespace detail {
ir::Value* fast_math(Op op, ir::Value* x, const Loc& loc);
ir::Value* fast_divide(ir::Value* x, ir::Value* y, const Loc& loc);
}  // namespace detail
template <class E> tile<E> fast_expf(const tile<E>& x, Loc loc = Loc::current()) {
  return tile<E>(detail::fast_math(Op::exp, x.get(), loc));
}
template <class E> tile<E> fast_logf(const tile<E>& x, Loc loc = Loc::current()) {
  return tile<E>(detail::fast_math(Op::log, x.get(), loc));
}
template <class E> tile<E> fast_sinf(const tile<E>& x, Loc loc = Loc::current()) {
  return tile<E>(detail::fast_math(Op::sin, x.get(), loc));
}
template <class E> tile<E> fast_cosf(const tile<E>& x, Loc loc = Loc::current()) {
  return tile<E>(detail::fast_math(Op::cos, x.get(), loc));
}
// x / y to about 2 ulp for |y| in [2^-126, 2^126] (CUDA's __fdividef: outside it the
// quotient may be 0 or NaN).
template <class E> tile<E> fast_dividef(const tile<E>& x, const tile<E>& y, Loc loc = Loc::current()) {
  return tile<E>(detail::fast_divide(x.get(), y.get(), loc));
}

// Division and square root rounded to nearest even (Triton's tl.math.div_rn, sqrt_rn and
// tl.fdiv): tl's `/` and tl::sqrt already round so on every target (LLVM's plain fdiv and
// sqrt: the CPU's, AMDGPU's full-precision sequence, NVPTX's div.rn / sqrt.rn); these name
// it. fdiv(x, y) with ieee_rounding = false (the default, as Triton's) is fast_dividef for
// f32, f16 and bf16; with true it is div_rn. f64 has no approximate division in Triton
// either (its fdiv of f64 lowers to div.rn.f64), so f64's fdiv is div_rn whatever the flag.
template <class E> tile<E> div_rn(const tile<E>& x, const tile<E>& y, Loc loc = Loc::current()) {
  static_assert(is_float(E::dtype) && !is_fp8(E::dtype), "tl::div_rn takes floating-point tiles");
  return tile<E>(detail::binary(Op::div, x.get(), y.get(), loc));
}
template <class E> tile<E> sqrt_rn(const tile<E>& x, Loc loc = Loc::current()) {
  static_assert(is_float(E::dtype) && !is_fp8(E::dtype), "tl::sqrt_rn takes a floating-point tile");
  return tile<E>(detail::unary(Op::sqrt, x.get(), loc));
}
template <class E>
tile<E> fdiv(const tile<E>& x, const tile<E>& y, bool ieee_rounding = false, Loc loc = Loc::current()) {
  if constexpr (E::dtype == DType::f64) return div_rn(x, y, loc);
  else return ieee_rounding ? div_rn(x, y, loc) : fast_dividef(x, y, loc);
}

}  // namespace tl

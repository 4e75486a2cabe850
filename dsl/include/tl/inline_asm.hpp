// Inline assembly applied elementwise: Triton's tl.inline_asm_elementwise, the way to
// reach an instruction the language has no operation for (a packed conversion, AMD's
// v_perm_b32, NVIDIA's prmt).
//
//   auto y = tl::inline_asm_elementwise<tl::i32>(
//       "prmt.b32 $0, $1, 0, 0x0123;", "=r,r", {x}, /*is_pure=*/true, /*pack=*/1);
//   auto [lo, hi] = tl::inline_asm_elementwise<tl::f16, tl::f16>(asm, "=r,=r,r", {x}, true, 2);
//
// The arguments (tiles of one shape, or broadcastable to one) give the results' shape;
// one result tile per type given, a std::tuple of them when more than one. One invocation
// of the assembly takes `pack` consecutive elements of each argument and gives `pack` of
// each result. As in Triton, elements narrower than 32 bits travel packed into 32-bit
// registers (<n x T> with n = min(32 / bits, pack)), so that each argument is pack / n
// operands of the asm, each result pack / n outputs. Operands are numbered outputs
// first: $0 .. for the outputs, then the inputs, and `constraints` is LLVM's constraint
// string for them in that order ("=r,=r,r,r"; clobbers "~{...}" after). The assembly is
// the target's: PTX on NVIDIA, AMDGPU assembly on AMD; it is not checked against the
// target until the backend assembles it.
//
// `is_pure`: the results depend only on the arguments, and nothing else happens, so an
// unused call may be dropped; false keeps every call (an asm with effects).
//
// The CPU has no assembly of its own: there, a `fallback` lambda (no parameters, tl
// operations on the same tiles, returning what the asm returns) is traced instead; without
// one the call is a tl::trace_error at its line. GPUs never trace the fallback.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tl/tile.hpp"

namespace tl {
namespace detail {
// An argument of any element type (the list is heterogeneous, as Triton's `args`).
struct asm_arg {
  ir::Value* v;
  template <class E> asm_arg(const tile<E>& t) : v(t.get()) {}
};
// Whether the trace in progress is for the CPU (dsl/src/trace.cpp).
bool tracing_for_cpu(const Loc& loc);
// The op (dsl/src/inline_asm.cpp): checks the arguments, the pack and the constraint count
// against the operands the packing makes; a trace_error at the call's line otherwise.
std::vector<ir::Value*> inline_asm_elementwise(const std::string& asm_text, const std::string& constraints,
                                               const std::vector<ir::Value*>& args, const std::vector<DType>& results,
                                               bool is_pure, int pack, const Loc& loc);

template <class... R> struct asm_result { using type = std::tuple<tile<elem_t<R>>...>; };
template <class R> struct asm_result<R> { using type = tile<elem_t<R>>; };
template <class... R, size_t... I>
typename asm_result<R...>::type asm_results(const std::vector<ir::Value*>& v, std::index_sequence<I...>) {
  if constexpr (sizeof...(R) == 1) return (tile<elem_t<R>>(v[I]), ...);
  else return {tile<elem_t<R>>(v[I])...};
}
}  // namespace detail

template <class... R, class F = std::nullptr_t>
typename detail::asm_result<R...>::type inline_asm_elementwise(const std::string& asm_text,
                                                               const std::string& constraints,
                                                               std::initializer_list<detail::asm_arg> args,
                                                               bool is_pure, int pack, F fallback = nullptr,
                                                               Loc loc = Loc::current()) {
  static_assert(sizeof...(R) >= 1, "tl::inline_asm_elementwise<T...>: give the result element type(s)");
  using Result = typename detail::asm_result<R...>::type;
  if constexpr (!std::is_same_v<F, std::nullptr_t>) {
    static_assert(std::is_invocable_v<F&>, "tl::inline_asm_elementwise: the fallback takes no parameters");
    static_assert(std::is_convertible_v<std::invoke_result_t<F&>, Result>,
                  "tl::inline_asm_elementwise: the fallback must return what the asm returns (a tile of the result "
                  "type, or a std::tuple of them)");
    if (detail::tracing_for_cpu(loc)) return Result(fallback());
  }
  std::vector<ir::Value*> a;
  for (const auto& x : args) a.push_back(x.v);
  std::vector<ir::Value*> r =
      detail::inline_asm_elementwise(asm_text, constraints, a, {elem_t<R>::dtype...}, is_pure, pack, loc);
  return detail::asm_results<R...>(r, std::index_sequence_for<R...>{});
}

}  // namespace tl

// Triton's tl.sort, tl.topk and tl.histogram (docs/language.md, "Sorting, top-k and
// histograms"). Included by tl/tl.hpp.
//
// Order: integers as numbers (signed or unsigned by their type); floats as numbers with
// every NaN above +inf (last ascending, first descending: torch.sort's and torch.topk's
// place) and -0.0 equal to +0.0. tl::sort is Triton's bitonic network on every target: the
// CPU runs the same compare-exchanges, so its results match a GPU's bit for bit. With
// indices the (value, index) pairs are sorted, ties in index order: exactly
// std::stable_sort. Without, keys that compare equal (-0.0 and +0.0, NaNs of other bits)
// come out in the network's order, not necessarily the input's.
#pragma once

#include <utility>

#include "tl/tile.hpp"

namespace tl {

namespace detail {
// The sorted keys and, when `with_indices`, each one's position along `dim` before the
// sort (an i32 tile of its shape). dsl/src/sort.cpp.
std::pair<ir::Value*, ir::Value*> sort(ir::Value* a, int dim, bool descending, bool with_indices, const Loc& loc);
// The k largest along `dim`, largest first (ties: the smaller index first), and their
// indices when asked.
std::pair<ir::Value*, ir::Value*> topk(ir::Value* a, int k, int dim, bool with_indices, const Loc& loc);
ir::Value* histogram(ir::Value* x, int num_bins, ir::Value* mask, const Loc& loc);
}  // namespace detail

// Triton's tl.sort(x, dim=None, descending=False): sorted along `dim` (default the last;
// any dim, where Triton takes only the last). The dim's length is a power of two, as every
// tile dim is. Integer and float tiles (not FP8, i1 or pointers).
template <class E> tile<E> sort(const tile<E>& t, int dim = -1, bool descending = false, Loc loc = Loc::current()) {
  return tile<E>(detail::sort(t.get(), dim, descending, false, loc).first);
}
// With each value's index along `dim` before the sort (torch.sort's indices; stable).
template <class E>
std::pair<tile<E>, i32> sort(const tile<E>& t, int dim, bool descending, return_indices_t, Loc loc = Loc::current()) {
  auto [v, i] = detail::sort(t.get(), dim, descending, true, loc);
  return {tile<E>(v), i32(i)};
}

// Triton's tl.topk(x, k, dim=None): the k largest along `dim` (default the last), largest
// first; k is a power of two from 1 to the dim's length (the result's dim is k). With
// tl::return_indices also their indices along `dim` (equal values: the smaller index
// first, torch.topk's stable order). Triton's bitonic top-k: blocks of k sorted, then the
// dim halved a bit at a time, the k kept merged after each halving.
template <class E> tile<E> topk(const tile<E>& t, int k, int dim = -1, Loc loc = Loc::current()) {
  return tile<E>(detail::topk(t.get(), k, dim, false, loc).first);
}
template <class E> std::pair<tile<E>, i32> topk(const tile<E>& t, int k, int dim, return_indices_t, Loc loc = Loc::current()) {
  auto [v, i] = detail::topk(t.get(), k, dim, true, loc);
  return {tile<E>(v), i32(i)};
}
template <class E> std::pair<tile<E>, i32> topk(const tile<E>& t, int k, return_indices_t, Loc loc = Loc::current()) {
  return topk(t, k, -1, return_indices, loc);
}

// Triton's tl.histogram(x, num_bins, mask=None): an i32 tile [num_bins] counting the
// elements of the integer tile x (any rank) equal to 0, 1, ..., num_bins - 1, elements
// where `mask` is false left out. Values outside [0, num_bins) are not counted (Triton
// leaves them undefined: its lowering reads the low bits of the value). num_bins is a
// power of two (a tile dim). On GPUs: shared-memory atomics; per-program histograms add
// into global memory with tl::atomic_add(..., tl::sem::relaxed).
template <class E> i32 histogram(const tile<E>& x, int num_bins, Loc loc = Loc::current()) {
  return i32(detail::histogram(x.get(), num_bins, nullptr, loc));
}
template <class E> i32 histogram(const tile<E>& x, int num_bins, const tile<ty::i1>& mask, Loc loc = Loc::current()) {
  return i32(detail::histogram(x.get(), num_bins, mask.get(), loc));
}

}  // namespace tl

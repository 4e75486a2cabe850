// AMD-specific operations, as Gluon's `gl.amd.cdna3`: buffer loads and stores.
//
// A buffer access names a scalar base pointer and an i32 tile of *element* offsets from
// it, instead of a tile of 64-bit pointers. On CDNA (gfx90a, gfx942, gfx950) it becomes
// a buffer instruction (buffer_load_dwordx4, ...) through a 128-bit buffer resource made
// of the base: one scalar base in SGPRs and one 32-bit offset per access in a VGPR, and
// masked-off lanes cost no branch (their offset is moved past the resource's end, where
// the hardware returns 0 for a load and drops a store). On NVIDIA and on the CPU the same
// call is the masked tl::load / tl::store through `base + offsets`: results are defined
// the same on every target. Offsets must lie in [0, (2^31 - 2) / sizeof(E)), the range a
// buffer resource covers; outside it AMD reads 0 and drops stores while the other
// targets access the memory there, so such offsets are the caller's error (like any
// out-of-bounds access).
#pragma once

#include "tl/tile.hpp"

namespace tl {
namespace detail {
ir::Value* buffer_load(ir::Value* base, ir::Value* offsets, ir::Value* mask, ir::Value* other, const Loc& loc);
void buffer_store(ir::Value* base, ir::Value* offsets, ir::Value* value, ir::Value* mask, const Loc& loc);
}  // namespace detail

namespace amd {

// base: a scalar tl::ptr<E>; offsets: an i32 tile of element offsets; mask and other
// broadcast to the offsets' shape as tl::load's do to the pointer's.
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), nullptr, nullptr, loc));
}
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask,
                    detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(), nullptr, loc));
}
template <class E, class O, Arith S>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask, S other,
                    detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(),
                                     detail::constant(E::dtype, double(other), int64_t(other), loc), loc));
}
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask,
                    const tile<E>& other, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(), other.get(), loc));
}

template <class E, class O, class V>
void buffer_store(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<V>& value,
                  detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::amd::buffer_store: the value's element type must be the pointee");
  detail::buffer_store(base.get(), offsets.get(), value.get(), nullptr, loc);
}
template <class E, class O, class V>
void buffer_store(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<V>& value,
                  const tile<ty::i1>& mask, detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::amd::buffer_store: the value's element type must be the pointee");
  detail::buffer_store(base.get(), offsets.get(), value.get(), mask.get(), loc);
}

}  // namespace amd
}  // namespace tl

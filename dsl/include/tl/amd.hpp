// AMD-specific operations, as Gluon's `gl.amd.cdna3`/`cdna4`: buffer loads and stores,
// and copies straight into shared memory with their waits (below).
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
ir::Value* buffer_load(ir::Value* base, ir::Value* offsets, ir::Value* mask, ir::Value* other,
                       const access_options& opts, const Loc& loc);
void buffer_store(ir::Value* base, ir::Value* offsets, ir::Value* value, ir::Value* mask, const access_options& opts,
                  const Loc& loc);
// tl::amd's copies straight into shared memory (dsl/src/ops.cpp): `other` is a tile of
// the buffer's element type (or null), `mask` one of i1 (or null).
void buffer_load_to_shared(ir::Value* buf, ir::Value* stage, ir::Value* base, ir::Value* offsets, ir::Value* mask,
                           ir::Value* other, const Loc& loc);
void global_load_to_shared(ir::Value* buf, ir::Value* stage, ir::Value* ptr, ir::Value* mask, ir::Value* other,
                           const Loc& loc);
void async_wait(int num_outstanding, const Loc& loc);
ir::Value* load_shared_relaxed(ir::Value* buf, ir::Value* stage, const Loc& loc);
}  // namespace detail

namespace amd {

// base: a scalar tl::ptr<E>; offsets: an i32 tile of element offsets; mask and other
// broadcast to the offsets' shape as tl::load's do to the pointer's; `opts` as tl::load's
// (Gluon's `cache=` argument; the cache bits go into the buffer instruction).
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, access_options opts = {},
                    detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), nullptr, nullptr, opts, loc));
}
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask,
                    access_options opts = {}, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(), nullptr, opts, loc));
}
template <class E, class O, Arith S>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask, S other,
                    access_options opts = {}, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(),
                                     detail::literal_constant(E::dtype, other, loc), opts, loc));
}
template <class E, class O>
tile<E> buffer_load(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<ty::i1>& mask,
                    const tile<E>& other, access_options opts = {}, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::buffer_load(base.get(), offsets.get(), mask.get(), other.get(), opts, loc));
}

template <class E, class O, class V>
void buffer_store(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<V>& value,
                  access_options opts = {}, detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::amd::buffer_store: the value's element type must be the pointee");
  detail::buffer_store(base.get(), offsets.get(), value.get(), nullptr, opts, loc);
}
template <class E, class O, class V>
void buffer_store(const tile<ty::ptr<E>>& base, const tile<O>& offsets, const tile<V>& value,
                  const tile<ty::i1>& mask, access_options opts = {}, detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<E, V>, "tl::amd::buffer_store: the value's element type must be the pointee");
  detail::buffer_store(base.get(), offsets.get(), value.get(), mask.get(), opts, loc);
}

}  // namespace amd

// AMD's copies straight into shared memory, with Gluon's names and semantics
// (gluon.language.amd.cdna3/cdna4.async_copy):
//
//   tl::amd::global_load_to_shared(buf[s], ptrs, mask, other);  // ptrs: tile<ptr<E>> of the tile's shape
//   tl::amd::async_wait(1);                  // at most 1 load still in flight
//   auto t = tl::amd::load_shared_relaxed(buf[s]);
//
// The copy is issued and lands later (global_load_lds on AMD, cp.async on NVIDIA, a
// plain copy on the CPU); async_wait(n) waits until at most n of this thread's loads
// from global memory are still outstanding. AMD completes them in order and counts
// ordinary loads too, so n counts every load issued after the copy that must be
// complete; on NVIDIA each copy is one commit group and n counts those. The compiler
// still puts the barrier between one thread's copy and another thread's read (after
// the wait). load_shared_relaxed is buf[s].load() for a stage an async_wait has made
// complete: LLVM is told not to add its own conservative wait for all copies before it.
namespace amd {
template <class E, class M>
void global_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& ptrs, const tile<M>& mask,
                           detail::Loc loc = detail::Loc::current()) {
  static_assert(std::is_same_v<M, ty::i1>, "tl::amd::global_load_to_shared: the mask must be a tile<i1>");
  detail::global_load_to_shared(dst.buffer(), dst.stage(), ptrs.get(), mask.get(), nullptr, loc);
}
template <class E>
void global_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& ptrs, detail::Loc loc = detail::Loc::current()) {
  detail::global_load_to_shared(dst.buffer(), dst.stage(), ptrs.get(), nullptr, nullptr, loc);
}
template <class E, class S>
  requires std::is_arithmetic_v<S>
void global_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& ptrs, const tile<ty::i1>& mask,
                           S other, detail::Loc loc = detail::Loc::current()) {
  detail::global_load_to_shared(dst.buffer(), dst.stage(), ptrs.get(), mask.get(),
                                detail::literal_constant(E::dtype, other, loc), loc);
}
template <class E>
void global_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& ptrs, const tile<ty::i1>& mask,
                           const tile<E>& other, detail::Loc loc = detail::Loc::current()) {
  detail::global_load_to_shared(dst.buffer(), dst.stage(), ptrs.get(), mask.get(), other.get(), loc);
}

// Gluon's amd.cdna4.buffer_load_to_shared: the copy of global_load_to_shared with a
// buffer load's addressing, a scalar base and an i32 tile of element offsets of the
// stage's tile shape (mask and other broadcast to it as for tl::load):
//
//   tl::amd::buffer_load_to_shared(buf[s], k_base, k_offsets, k_mask);
//
// gfx950 (CDNA4) only, as Gluon: `buffer_load_dword[x3|x4] ... lds` through a buffer
// resource, a masked-off lane's offset moved past the resource's bound so that the
// hardware writes zeros without a branch. Elsewhere on AMD a tl::compile_error at the
// call's line (use global_load_to_shared); on NVIDIA and the CPU it is
// global_load_to_shared through the pointers base + offsets.
template <class E, class O>
void buffer_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& base, const tile<O>& offsets,
                           detail::Loc loc = detail::Loc::current()) {
  detail::buffer_load_to_shared(dst.buffer(), dst.stage(), base.get(), offsets.get(), nullptr, nullptr, loc);
}
template <class E, class O>
void buffer_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& base, const tile<O>& offsets,
                           const tile<ty::i1>& mask, detail::Loc loc = detail::Loc::current()) {
  detail::buffer_load_to_shared(dst.buffer(), dst.stage(), base.get(), offsets.get(), mask.get(), nullptr, loc);
}
template <class E, class O, class S>
  requires std::is_arithmetic_v<S>
void buffer_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& base, const tile<O>& offsets,
                           const tile<ty::i1>& mask, S other, detail::Loc loc = detail::Loc::current()) {
  detail::buffer_load_to_shared(dst.buffer(), dst.stage(), base.get(), offsets.get(), mask.get(),
                                detail::literal_constant(E::dtype, other, loc), loc);
}
template <class E, class O>
void buffer_load_to_shared(const shared_stage<E>& dst, const tile<ty::ptr<E>>& base, const tile<O>& offsets,
                           const tile<ty::i1>& mask, const tile<E>& other, detail::Loc loc = detail::Loc::current()) {
  detail::buffer_load_to_shared(dst.buffer(), dst.stage(), base.get(), offsets.get(), mask.get(), other.get(), loc);
}

inline void async_wait(int num_outstanding, detail::Loc loc = detail::Loc::current()) { detail::async_wait(num_outstanding, loc); }
template <class E> tile<E> load_shared_relaxed(const shared_stage<E>& src, detail::Loc loc = detail::Loc::current()) {
  return tile<E>(detail::load_shared_relaxed(src.buffer(), src.stage(), loc));
}
}  // namespace amd

}  // namespace tl

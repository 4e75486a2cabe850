// Triton's tensor descriptors (tl.make_tensor_descriptor, desc.load, desc.store):
// docs/language.md, "Tensor descriptors". Included by tl/tl.hpp.
//
//   auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K});
//   auto t = a_desc.load({pid_m * BLOCK_M, k});        // a [BLOCK_M, BLOCK_K] tile
//   c_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, acc.to<tl::bf16>());
//
// A descriptor names a strided tensor in memory (base, shape, strides) and the block it
// moves; a load reads the block whose first element sits at `offsets`, elements outside
// the shape read 0, and a store writes only the elements inside it. Triton's rules, checked
// where the descriptor is made: 1 to 5 dims, a C++ 1 as the last stride (the
// last dim is contiguous), block dims powers of two with at least 16 bytes along the last,
// no i1 elements. Its promises, as for TMA: the base and every stride but the last are
// multiples of 16 bytes (the compiler reads them as such: a false promise is undefined),
// strides are non-negative and one block spans less than 2 GiB of memory.
//
// Lowering: the block's first element becomes a scalar base, the block's elements i32
// offsets from it and the shape a mask; on AMD that is a buffer load/store (the base in a
// buffer resource, masked-off lanes moved past its end: no branch), on NVIDIA and the CPU
// the masked load/store through `base + offsets`. TMA on Hopper is a later step.
#pragma once

#include <cstdint>
#include <vector>

#include "tl/tile.hpp"

namespace tl {

namespace detail {
// A descriptor's shape, stride or offset as written: a C++ integer or a scalar integer tile.
struct index_arg {
  ir::Value* v = nullptr;  // the scalar tile, or null for the integer c
  int64_t c = 0;
  template <class S> requires std::is_integral_v<S>
  index_arg(S s) : c(int64_t(s)) {}
  template <class E> requires(E::dtype != DType::ptr)  // (a float's is a trace error naming the line)
  index_arg(const tile<E>& t) : v(t.get()) {}
};

// What a descriptor holds once checked (dsl/src/descriptor.cpp): shape as i32 scalars,
// strides as i64 scalars, the base hinted to its promised alignment.
struct descriptor_parts {
  ir::Value* base;
  std::vector<ir::Value*> shape;
  std::vector<ir::Value*> strides;
};
descriptor_parts make_tensor_descriptor(ir::Value* base, const std::vector<index_arg>& shape,
                                        const std::vector<index_arg>& strides, const Shape& block_shape,
                                        const Loc& loc);
ir::Value* descriptor_load(const descriptor_parts& d, const Shape& block_shape, const std::vector<index_arg>& offsets,
                           const access_options& opts, const Loc& loc);
void descriptor_store(const descriptor_parts& d, const Shape& block_shape, const std::vector<index_arg>& offsets,
                      ir::Value* value, const access_options& opts, const Loc& loc);
}  // namespace detail

// Triton's tensor_descriptor: what tl::make_tensor_descriptor returns. Holds tiles (read
// again at each load or store, so a descriptor made before a tl::range loop is used
// inside it as any outer tile is).
template <class E> class tensor_descriptor {
 public:
  using elem = E;

  // desc.load([m, k]): the block at `offsets` (one per dim, i32 scalars or C++ integers,
  // any value: the block may lie partly or wholly outside the shape), out-of-bounds
  // elements 0.
  tile<E> load(const std::vector<detail::index_arg>& offsets, access_options opts = {},
               detail::Loc loc = detail::Loc::current()) const {
    return tile<E>(detail::descriptor_load(parts(), block_, offsets, opts, loc));
  }
  // desc.store([m, k], value): value a tile of the block's shape and of E; elements
  // outside the shape are not written.
  template <class V>
  void store(const std::vector<detail::index_arg>& offsets, const tile<V>& value, access_options opts = {},
             detail::Loc loc = detail::Loc::current()) const {
    detail::descriptor_store(parts(), block_, offsets, value.get(), opts, loc);
  }

  const std::vector<i32>& shape() const { return shape_; }
  const std::vector<i64>& strides() const { return strides_; }
  const shape_t& block_shape() const { return block_; }

  // (made by tl::make_tensor_descriptor)
  tensor_descriptor(const detail::descriptor_parts& p, shape_t block) : base_(p.base), block_(std::move(block)) {
    for (ir::Value* s : p.shape) shape_.push_back(i32(s));
    for (ir::Value* s : p.strides) strides_.push_back(i64(s));
  }

 private:
  detail::descriptor_parts parts() const {
    detail::descriptor_parts p{base_.get(), {}, {}};
    for (const i32& s : shape_) p.shape.push_back(s.get());
    for (const i64& s : strides_) p.strides.push_back(s.get());
    return p;
  }
  tile<ty::ptr<E>> base_;
  std::vector<i32> shape_;
  std::vector<i64> strides_;
  shape_t block_;
};

// Triton's tl.make_tensor_descriptor(base, shape, strides, block_shape): base a scalar
// pointer, shape and strides one entry per dim (scalar integer tiles or C++ integers; the
// last stride a C++ 1), block_shape the dims of the tiles moved.
template <class E>
tensor_descriptor<E> make_tensor_descriptor(const tile<ty::ptr<E>>& base, const std::vector<detail::index_arg>& shape,
                                            const std::vector<detail::index_arg>& strides, shape_t block_shape,
                                            Loc loc = Loc::current()) {
  detail::descriptor_parts p = detail::make_tensor_descriptor(base.get(), shape, strides, block_shape, loc);
  return tensor_descriptor<E>(p, std::move(block_shape));
}

// Triton's functional forms, tl.load_tensor_descriptor / tl.store_tensor_descriptor.
template <class E>
tile<E> load_tensor_descriptor(const tensor_descriptor<E>& d, const std::vector<detail::index_arg>& offsets,
                               access_options opts = {}, Loc loc = Loc::current()) {
  return d.load(offsets, opts, loc);
}
template <class E, class V>
void store_tensor_descriptor(const tensor_descriptor<E>& d, const std::vector<detail::index_arg>& offsets,
                             const tile<V>& value, access_options opts = {}, Loc loc = Loc::current()) {
  d.store(offsets, value, opts, loc);
}

}  // namespace tl

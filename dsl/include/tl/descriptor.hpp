// Triton's tensor descriptors (tl.make_tensor_descriptor, desc.load, desc.store, and the
// host's triton.tools.tensor_descriptor.TensorDescriptor): docs/language.md, "Tensor
// descriptors". Included by tl/tl.hpp.
//
//   auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K});
//   auto t = a_desc.load({pid_m * BLOCK_M, k});        // a [BLOCK_M, BLOCK_K] tile
//   c_desc.store({pid_m * BLOCK_M, pid_n * BLOCK_N}, acc.to<tl::bf16>());
//
// or made on the host and passed to the kernel (its parameter `tl::tensor_descriptor<T, 2>`):
//
//   k[grid](tl::TensorDescriptor<tl::f16>(A, {M, K}, {K, 1}, {BLOCK_M, BLOCK_K}), ...);
//
// A descriptor names a strided tensor in memory (base, shape, strides) and the block it
// moves; a load reads the block whose first element sits at `offsets`, elements outside
// the shape read 0 (NaN with tl::padding_option::nan), and a store writes only the
// elements inside it. Triton's rules, checked where the descriptor is made: 1 to 5 dims, a
// 1 as the last stride (the last dim is contiguous), block dims powers of two with at
// least 16 bytes along the last, no i1 elements. Its promises, as for TMA: the base and
// every stride but the last are multiples of 16 bytes (the compiler reads them as such: a
// false promise is undefined; a host TensorDescriptor checks them), strides are
// non-negative and one block spans less than 2 GiB of memory.
//
// Lowering: the block's first element becomes a scalar base, the block's elements i32
// offsets from it and the shape a mask; on AMD that is a buffer load/store (the base in a
// buffer resource, masked-off lanes moved past its end: no branch), on NVIDIA and the CPU
// the masked load/store through `base + offsets`. On NVIDIA sm_90 with the launch option
// tl::launch_options::tma (off by default), a load through a descriptor made on the host
// is a TMA copy instead (the kernel takes the descriptor's CUtensorMap, which the launch
// encodes: runtime/tensor_map.hpp), where TMA takes the descriptor (docs/language.md).
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <vector>

#include "tl/kernel.hpp"
#include "tl/tile.hpp"

namespace tl {

// What a descriptor load reads outside the shape (Triton's padding_option): 0, or NaN
// (floating-point elements only).
enum class padding_option : uint8_t { zero, nan };

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
  padding_option padding = padding_option::zero;
  // A host descriptor's CUtensorMap argument, where the kernel takes one (NVIDIA sm_90,
  // launch_options::tma, a descriptor TMA takes): loads copy through it. Else null.
  ir::Value* tensor_map = nullptr;
};
// The swizzle (bytes: 0, 32, 64 or 128) of the shared buffer a TMA load of this block
// lands in, which is the map's swizzle too, or -1 where tl does not load this block
// through TMA. A 2-D block of 8k rows whose rows are 32, 64 or 128 bytes is swizzled as a
// warpgroup dot reads its operands (the row's bytes; codegen/gpu/warpgroup_dot.cpp's
// descriptor_encoding is the same layout); one whose rows are a longer multiple of 32
// bytes is not taken (that encoding splits a row into column blocks, which one box cannot
// write); any other block lies row-major, unswizzled. A block under 128 bytes is not taken
// (a box's shared address is 128-byte aligned, which the allocator gives buffers of 128
// bytes or more).
int tensor_map_swizzle_bytes(DType e, std::span<const int> block);
descriptor_parts make_tensor_descriptor(ir::Value* base, const std::vector<index_arg>& shape,
                                        const std::vector<index_arg>& strides, const Shape& block_shape,
                                        padding_option padding, const Loc& loc);
// A host TensorDescriptor's checks (Triton's __post_init__): a tl::launch_error naming
// `loc` when one fails.
void check_host_descriptor(DType e, uint64_t base, const std::vector<int64_t>& shape,
                           const std::vector<int64_t>& strides, const std::vector<int>& block,
                           padding_option padding, const std::source_location& loc);
[[noreturn]] void host_descriptor_rank_error(int rank, int param_rank, const std::source_location& loc);
ir::Value* descriptor_load(const descriptor_parts& d, const Shape& block_shape, const std::vector<index_arg>& offsets,
                           const access_options& opts, const Loc& loc);
void descriptor_store(const descriptor_parts& d, const Shape& block_shape, const std::vector<index_arg>& offsets,
                      ir::Value* value, const access_options& opts, const Loc& loc);
}  // namespace detail

// Triton's tensor_descriptor: what tl::make_tensor_descriptor returns. Holds tiles (read
// again at each load or store, so a descriptor made before a tl::range loop is used
// inside it as any outer tile is). As a kernel parameter, `tl::tensor_descriptor<T, Rank>`
// takes a host tl::TensorDescriptor<T> of that rank (Rank 0, the default, is only for
// descriptors made in the kernel).
template <class T, int Rank = 0> class tensor_descriptor {
 public:
  using elem = elem_t<T>;
  using E = elem;
  static constexpr int rank = Rank;

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

  padding_option padding() const { return padding_; }

  // (made by tl::make_tensor_descriptor, or from a host TensorDescriptor at a launch)
  tensor_descriptor(const detail::descriptor_parts& p, shape_t block)
      : base_(p.base), block_(std::move(block)), padding_(p.padding), tensor_map_(p.tensor_map) {
    for (ir::Value* s : p.shape) shape_.push_back(i32(s));
    for (ir::Value* s : p.strides) strides_.push_back(i64(s));
  }

 private:
  detail::descriptor_parts parts() const {
    detail::descriptor_parts p{base_.get(), {}, {}, padding_, tensor_map_};
    for (const i32& s : shape_) p.shape.push_back(s.get());
    for (const i64& s : strides_) p.strides.push_back(s.get());
    return p;
  }
  tile<ty::ptr<E>> base_;
  std::vector<i32> shape_;
  std::vector<i64> strides_;
  shape_t block_;
  padding_option padding_;
  ir::Value* tensor_map_;  // (a kernel argument: valid wherever the descriptor is)
};

// Triton's tl.make_tensor_descriptor(base, shape, strides, block_shape, padding_option):
// base a scalar pointer, shape and strides one entry per dim (scalar integer tiles or C++
// integers; the last stride a C++ 1), block_shape the dims of the tiles moved.
template <class E>
tensor_descriptor<E> make_tensor_descriptor(const tile<ty::ptr<E>>& base, const std::vector<detail::index_arg>& shape,
                                            const std::vector<detail::index_arg>& strides, shape_t block_shape,
                                            padding_option padding, Loc loc = Loc::current()) {
  detail::descriptor_parts p = detail::make_tensor_descriptor(base.get(), shape, strides, block_shape, padding, loc);
  return tensor_descriptor<E>(p, std::move(block_shape));
}
template <class E>
tensor_descriptor<E> make_tensor_descriptor(const tile<ty::ptr<E>>& base, const std::vector<detail::index_arg>& shape,
                                            const std::vector<detail::index_arg>& strides, shape_t block_shape,
                                            Loc loc = Loc::current()) {
  return make_tensor_descriptor(base, shape, strides, std::move(block_shape), padding_option::zero, loc);
}

// Triton's functional forms, tl.load_tensor_descriptor / tl.store_tensor_descriptor.
template <class E, int R>
tile<elem_t<E>> load_tensor_descriptor(const tensor_descriptor<E, R>& d, const std::vector<detail::index_arg>& offsets,
                                       access_options opts = {}, Loc loc = Loc::current()) {
  return d.load(offsets, opts, loc);
}
template <class E, int R, class V>
void store_tensor_descriptor(const tensor_descriptor<E, R>& d, const std::vector<detail::index_arg>& offsets,
                             const tile<V>& value, access_options opts = {}, Loc loc = Loc::current()) {
  d.store(offsets, value, opts, loc);
}

// Triton's triton.tools.tensor_descriptor.TensorDescriptor: a descriptor made on the host
// and passed to a kernel whose parameter is a tl::tensor_descriptor<T, Rank>. Checked
// here, as Triton's __post_init__ does (the constructor's line names a failure): rank 1 to
// 5, as many strides and block dims as shape entries, the base and every stride but the
// last multiples of 16 bytes, the last stride 1, block dims powers of two with at least 16
// bytes along the last, shape entries in [0, 2^31), NaN padding for floats only. At the
// launch the base, shape and strides are run-time arguments (as Triton's launcher passes
// them; the strides' and shape's divisibility by 16 specialize as any integer argument's),
// the block shape and padding trace-time constants (each its own specialization).
namespace detail {
// What a launch reads from a host descriptor to encode its tensor map (ArgValue::tensor_map).
struct host_descriptor_data {
  DType dtype = DType::u8;
  uint64_t base = 0;
  uint64_t range_bytes = 0;  // a tl::buffer's bytes, else 0
  std::vector<int64_t> shape, strides;
  std::vector<int> block;
  padding_option padding = padding_option::zero;
  std::source_location loc;
};

template <class E> class host_tensor_descriptor {
 public:
  using elem = E;
  using host_t = typename elem::host;

  host_tensor_descriptor(const buffer<elem>& base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                         std::vector<int> block_shape, padding_option padding = padding_option::zero,
                         std::source_location loc = std::source_location::current())
      : d_{elem::dtype, reinterpret_cast<uint64_t>(base.data()), base.bytes(), std::move(shape), std::move(strides),
           std::move(block_shape), padding, loc} {
    check();
    // (elements addressed past the buffer's end are a false descriptor, as Triton's)
  }
  host_tensor_descriptor(const host_t* base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                         std::vector<int> block_shape, padding_option padding = padding_option::zero,
                         std::source_location loc = std::source_location::current())
      : d_{elem::dtype, reinterpret_cast<uint64_t>(base), 0, std::move(shape), std::move(strides),
           std::move(block_shape), padding, loc} {
    check();
  }
  // Triton's TensorDescriptor.from_tensor: the buffer holds a contiguous tensor of `shape`
  // (row-major strides).
  static host_tensor_descriptor from_buffer(const buffer<elem>& base, std::vector<int64_t> shape,
                                            std::vector<int> block_shape, padding_option padding = padding_option::zero,
                                            std::source_location loc = std::source_location::current()) {
    std::vector<int64_t> strides(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
    return host_tensor_descriptor(base, std::move(shape), std::move(strides), std::move(block_shape), padding, loc);
  }

  uint64_t base_address() const { return d_.base; }
  uint64_t range_bytes() const { return d_.range_bytes; }  // a tl::buffer's bytes, else 0
  const std::vector<int64_t>& shape() const { return d_.shape; }
  const std::vector<int64_t>& strides() const { return d_.strides; }
  const std::vector<int>& block_shape() const { return d_.block; }
  padding_option padding() const { return d_.padding; }
  const std::source_location& location() const { return d_.loc; }
  const host_descriptor_data& data() const { return d_; }

 private:
  void check() const { check_host_descriptor(elem::dtype, d_.base, d_.shape, d_.strides, d_.block, d_.padding, d_.loc); }
  host_descriptor_data d_;
};
}  // namespace detail

// (an alias, so that tl::TensorDescriptor<tl::f16> and <tl::ty::f16> are one type)
template <class T> using TensorDescriptor = detail::host_tensor_descriptor<elem_t<T>>;

namespace detail {

// A tl::tensor_descriptor<T, Rank> kernel parameter (kernel.hpp's composite_param): 1 +
// 2 Rank run-time arguments (the base; the shape as i32; the strides as i64), the block
// shape and padding as trace-time constants, and the slot of its CUtensorMap: a run-time
// argument only where the launch chooses TMA for it (choose_tensor_maps: NVIDIA sm_90,
// launch_options::tma, a descriptor TMA takes), else absent as a constant's.
template <class T, int Rank> struct composite_param<tensor_descriptor<T, Rank>> {
  static_assert(Rank >= 1 && Rank <= 5, "tl::tensor_descriptor<T, Rank> as a kernel parameter: Rank is 1 to 5");
  using E = elem_t<T>;
  static constexpr bool value = true;
  static constexpr size_t slots = 2 + 2 * size_t(Rank);
  static constexpr size_t constant_bytes = sizeof(int32_t) * size_t(Rank) + 1;

  template <class A> static const host_tensor_descriptor<E>& host(const A& a) {
    static_assert(std::is_same_v<std::decay_t<A>, host_tensor_descriptor<E>>,
                  "tl launch: a tl::tensor_descriptor<T, Rank> parameter takes a tl::TensorDescriptor<T>");
    if (a.shape().size() != size_t(Rank)) host_descriptor_rank_error(int(a.shape().size()), Rank, a.location());
    return a;
  }
  template <class A> static void prepare(ArgValue* v, char* constants, const A& arg) {
    const host_tensor_descriptor<E>& a = host(arg);
    v[0].is_pointer = true;
    v[0].dtype = E::dtype;
    v[0].bits = a.base_address();
    v[0].range_bytes = a.range_bytes();
    for (int d = 0; d < Rank; ++d) {
      v[1 + d].dtype = DType::i32;
      scalar_bits(DType::i32, double(a.shape()[size_t(d)]), a.shape()[size_t(d)], v[1 + d].bits);
      v[1 + Rank + d].dtype = DType::i64;
      scalar_bits(DType::i64, double(a.strides()[size_t(d)]), a.strides()[size_t(d)], v[1 + Rank + d].bits);
    }
    for (int d = 0; d < Rank; ++d) {
      const int32_t b = a.block_shape()[size_t(d)];
      std::memcpy(constants + sizeof(int32_t) * size_t(d), &b, sizeof b);
    }
    constants[sizeof(int32_t) * size_t(Rank)] = char(a.padding());
    v[1 + 2 * Rank].trace_time = true;  // (until the launch chooses TMA for it)
    v[1 + 2 * Rank].tensor_map = &a.data();
  }
  template <class A> static tensor_descriptor<T, Rank> make(int slot, const A& arg) {
    const host_tensor_descriptor<E>& a = host(arg);
    tile<ty::ptr<E>> base(declare_argument(slot, E::dtype, true));
    std::vector<index_arg> shape, strides;
    for (int d = 0; d < Rank; ++d) shape.push_back(i32(declare_argument(slot + 1 + d, DType::i32, false)));
    for (int d = 0; d < Rank; ++d) strides.push_back(i64(declare_argument(slot + 1 + Rank + d, DType::i64, false)));
    shape_t block(a.block_shape().begin(), a.block_shape().end());
    descriptor_parts p = make_tensor_descriptor(base.get(), shape, strides, block, a.padding(), a.location());
    p.tensor_map = declare_tensor_map_argument(slot + 1 + 2 * Rank);
    return tensor_descriptor<T, Rank>(p, std::move(block));
  }
};

}  // namespace detail

}  // namespace tl

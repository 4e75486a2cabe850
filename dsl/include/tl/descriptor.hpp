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
// the masked load/store through `base + offsets`. TMA on Hopper is a later step.
#pragma once

#include <cstdint>
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
};
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
      : base_(p.base), block_(std::move(block)), padding_(p.padding) {
    for (ir::Value* s : p.shape) shape_.push_back(i32(s));
    for (ir::Value* s : p.strides) strides_.push_back(i64(s));
  }

 private:
  detail::descriptor_parts parts() const {
    detail::descriptor_parts p{base_.get(), {}, {}, padding_};
    for (const i32& s : shape_) p.shape.push_back(s.get());
    for (const i64& s : strides_) p.strides.push_back(s.get());
    return p;
  }
  tile<ty::ptr<E>> base_;
  std::vector<i32> shape_;
  std::vector<i64> strides_;
  shape_t block_;
  padding_option padding_;
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
template <class E> class host_tensor_descriptor {
 public:
  using elem = E;
  using host_t = typename elem::host;

  host_tensor_descriptor(const buffer<elem>& base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                         std::vector<int> block_shape, padding_option padding = padding_option::zero,
                         std::source_location loc = std::source_location::current())
      : base_(reinterpret_cast<uint64_t>(base.data())), range_bytes_(base.bytes()), shape_(std::move(shape)),
        strides_(std::move(strides)), block_(std::move(block_shape)), padding_(padding), loc_(loc) {
    check();
    // (elements addressed past the buffer's end are a false descriptor, as Triton's)
  }
  host_tensor_descriptor(const host_t* base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                         std::vector<int> block_shape, padding_option padding = padding_option::zero,
                         std::source_location loc = std::source_location::current())
      : base_(reinterpret_cast<uint64_t>(base)), shape_(std::move(shape)), strides_(std::move(strides)),
        block_(std::move(block_shape)), padding_(padding), loc_(loc) {
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

  uint64_t base_address() const { return base_; }
  uint64_t range_bytes() const { return range_bytes_; }  // a tl::buffer's bytes, else 0
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  const std::vector<int>& block_shape() const { return block_; }
  padding_option padding() const { return padding_; }
  const std::source_location& location() const { return loc_; }

 private:
  void check() const {
    check_host_descriptor(elem::dtype, base_, shape_, strides_, block_, padding_, loc_);
  }
  uint64_t base_;
  uint64_t range_bytes_ = 0;
  std::vector<int64_t> shape_, strides_;
  std::vector<int> block_;
  padding_option padding_;
  std::source_location loc_;
};
}  // namespace detail

// (an alias, so that tl::TensorDescriptor<tl::f16> and <tl::ty::f16> are one type)
template <class T> using TensorDescriptor = detail::host_tensor_descriptor<elem_t<T>>;

namespace detail {

// A tl::tensor_descriptor<T, Rank> kernel parameter (kernel.hpp's composite_param): 1 +
// 2 Rank run-time arguments (the base; the shape as i32; the strides as i64) and the block
// shape and padding as trace-time constants.
template <class T, int Rank> struct composite_param<tensor_descriptor<T, Rank>> {
  static_assert(Rank >= 1 && Rank <= 5, "tl::tensor_descriptor<T, Rank> as a kernel parameter: Rank is 1 to 5");
  using E = elem_t<T>;
  static constexpr bool value = true;
  static constexpr size_t slots = 1 + 2 * size_t(Rank);
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
  }
  template <class A> static tensor_descriptor<T, Rank> make(int slot, const A& arg) {
    const host_tensor_descriptor<E>& a = host(arg);
    tile<ty::ptr<E>> base(declare_argument(slot, E::dtype, true));
    std::vector<index_arg> shape, strides;
    for (int d = 0; d < Rank; ++d) shape.push_back(i32(declare_argument(slot + 1 + d, DType::i32, false)));
    for (int d = 0; d < Rank; ++d) strides.push_back(i64(declare_argument(slot + 1 + Rank + d, DType::i64, false)));
    shape_t block(a.block_shape().begin(), a.block_shape().end());
    descriptor_parts p = make_tensor_descriptor(base.get(), shape, strides, block, a.padding(), a.location());
    return tensor_descriptor<T, Rank>(p, std::move(block));
  }
};

}  // namespace detail

}  // namespace tl

// Kernels, devices, buffers and launches.
//
//   auto add = tl::kernel("add", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, int BLOCK) {...});
//   add[tl::grid(tl::cdiv(n, 1024))].with({.num_warps = 4})(X, Y, n, 1024);
//
// Parameters of tile types are run-time arguments; parameters of plain C++ types are
// trace-time constants (Triton's constexpr), each distinct value its own specialization.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tl/error.hpp"
#include "tl/tile.hpp"

namespace tl {

namespace runtime { class Device; }

// ---------------------------------------------------------------------------------
// Devices and buffers.

enum class device_kind { cpu, hip, cuda };
template <class E> class buffer;

class device {
 public:
  device() = default;
  explicit device(std::shared_ptr<runtime::Device> d) : impl_(std::move(d)) {}

  device_kind kind() const;
  std::string name() const;
  // The ISA kernels are compiled for: "gfx942:sramecc+:xnack-", "sm_90", "cpu-znver3".
  std::string target() const;
  int compute_units() const;  // CUs, SMs or hardware threads; queried once and cached
  void synchronize() const;

  void* alloc_bytes(size_t bytes) const;
  void free_bytes(void* p) const;
  void copy_to_device(void* dst, const void* src, size_t bytes) const;
  void copy_to_host(void* dst, const void* src, size_t bytes) const;

  // Throws tl::device_error (naming the caller's line) when n elements do not fit in
  // memory, or their bytes not in a size_t.
  template <class E> auto alloc(size_t n, std::source_location loc = std::source_location::current()) const;

  runtime::Device* impl() const { return impl_.get(); }
  explicit operator bool() const { return bool(impl_); }

 private:
  std::shared_ptr<runtime::Device> impl_;
};

// Device memory holding n elements of E, freed with the last copy of the handle.
template <class E> class buffer {
 public:
  using elem = elem_t<E>;
  using host_t = typename elem::host;

  buffer() = default;
  buffer(device dev, size_t n, std::source_location loc = std::source_location::current())
      : dev_(dev), n_(n),
        mem_(static_cast<host_t*>(dev.alloc_bytes(checked_bytes(n, loc))), [dev](host_t* p) { dev.free_bytes(p); }) {}

  // The device address of the first element (on a GPU a device pointer, not for the
  // host to read): what an array of pointers holds, `ptrs.upload({a.data(), b.data()})`
  // for a buffer of tl::ptr<E>, or address() into a buffer of tl::u64.
  host_t* data() const { return mem_.get(); }
  uint64_t address() const { return reinterpret_cast<uint64_t>(mem_.get()); }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(host_t); }
  const device& dev() const { return dev_; }

  void upload(std::span<const host_t> src) const {
    if (src.size() != n_) throw error("tl::buffer::upload: size mismatch");
    dev_.copy_to_device(data(), src.data(), bytes());
  }
  std::vector<host_t> download() const {
    std::vector<host_t> out(n_);
    dev_.copy_to_host(out.data(), data(), bytes());
    return out;
  }

 private:
  // n elements' bytes; a count whose bytes do not fit in a size_t is refused (the product
  // would wrap around to a small buffer that size() overstates).
  static size_t checked_bytes(size_t n, const std::source_location& loc) {
    if (n > SIZE_MAX / sizeof(host_t))
      throw device_error("tl::buffer: " + std::to_string(n) + " elements of " + std::to_string(sizeof(host_t)) +
                             " bytes are more bytes than the address space holds",
                         loc.file_name(), loc.line());
    return n * sizeof(host_t);
  }

  device dev_;
  size_t n_ = 0;
  std::shared_ptr<host_t> mem_;
};

template <class E> auto device::alloc(size_t n, std::source_location loc) const {
  return buffer<elem_t<E>>(*this, n, loc);
}

// The device kernels run on when none is named: TL_DEVICE (cpu, hip, cuda) if set,
// else an AMD GPU, else an NVIDIA GPU, else the CPU. set_default_device overrides.
device default_device();
void set_default_device(device d);
device cpu_device();
device hip_device(int ordinal = 0);   // throws tl::device_error when there is none
device cuda_device(int ordinal = 0);  // throws tl::device_error when there is none

// ---------------------------------------------------------------------------------
// Launches.

// The launch grid. It also records where the launch is written, so that a bad launch
// (empty grid, null pointer) is reported at the user's line.
struct grid {
  uint32_t x = 1, y = 1, z = 1;
  grid(int64_t x, int64_t y = 1, int64_t z = 1, std::source_location loc = std::source_location::current())
      : x(clamp(x)), y(clamp(y)), z(clamp(z)), requested{x, y, z}, loc(loc) {}
  std::array<int64_t, 3> requested;
  std::source_location loc;

 private:
  static uint32_t clamp(int64_t v) { return v < 0 ? 0 : v > 0xffffffffLL ? 0xffffffffu : uint32_t(v); }
};

struct launch_options {
  int num_warps = 4;        // warps (wavefronts) per program
  int num_stages = 1;       // software-pipelining depth for tl::range loops
  int waves_per_eu = 0;     // AMD occupancy hint (amdgpu-waves-per-eu); 0: compiler's choice
  bool bounds_check = false;  // CPU: stop at the first out-of-bounds unmasked access (also TL_BOUNDS_CHECK=1)
  // tl::dot on AMD (Triton's knobs of the same names): the MFMA instruction's M and N,
  // 16 or 32 (0: tl chooses, 32 where the warp's tile allows, as Triton does), and the
  // k-packing of the operands (1, or 2 on gfx942: each lane holds two instructions' k
  // elements, read with one 128-bit LDS read). Other targets ignore them.
  int matrix_instr_nonkdim = 0;
  int kpack = 1;
  // tl::dot on NVIDIA (Triton's MMA versions): 0 lets tl choose (on sm_90 Hopper's
  // warpgroup wgmma wherever a dot's tile and operands allow it, else mma.sync), 2 forces
  // mma.sync, 3 forces wgmma (a compile error at a dot it cannot take). Other targets
  // ignore it.
  int mma_version = 0;
  // Triton's enable_fp_fusion: a float a * b + c (add, sub and mul of f16, bf16, f32, f64)
  // may be computed as one fma, rounded once, on every target (LLVM's contract flag:
  // NVIDIA fma.rn, AMD v_fma/v_fmac, the CPU's FMA where it has one). false keeps every
  // product and sum rounded on its own (NVIDIA mul.rn / add.rn). tl's math library rounds
  // its own operations on their own either way.
  bool enable_fp_fusion = true;
  // Programmatic dependent launch (Triton's launch_pdl=True, tutorial 11): this launch may
  // start before the previous kernel on its stream has finished, and overlaps its tail; the
  // kernel calls tl::gdc_wait() before touching what that kernel writes. NVIDIA sm_90 and
  // later (cuLaunchKernelEx with programmatic stream serialization); ignored elsewhere, as
  // Triton ignores it where the GPU lacks it. Not part of the compiled code.
  bool launch_pdl = false;
  // Hopper's TMA for tensor descriptors (issue 41, not measured yet, hence off): on NVIDIA
  // sm_90 a kernel parameter tl::tensor_descriptor<T, Rank> given a host
  // tl::TensorDescriptor whose block TMA takes (tl/descriptor.hpp,
  // tensor_map_swizzle_bytes; runtime/tensor_map.hpp's rules) receives the descriptor's
  // CUtensorMap, encoded at the launch, and its loads are TMA copies into shared memory,
  // one at a time (no pipelining yet). Ignored on other targets and for other descriptors.
  bool tma = false;
};

// A user stream: hipStream_t or CUstream (ignored on the CPU).
struct stream {
  void* handle = nullptr;
};

namespace detail {

struct host_descriptor_data;  // (tl/descriptor.hpp)

// A run-time argument of a launch, with what the specialization key needs from it.
struct ArgValue {
  // A trace-time constant's place among the parameters: no run-time argument (the
  // constant's value is in LaunchRequest::constants). The kernel takes its run-time
  // arguments alone, in order, whatever constants lie between them.
  bool trace_time = false;
  bool is_pointer = false;
  DType dtype = DType::i32;   // scalars: their dtype; pointers: the pointee
  uint64_t bits = 0;
  // Pointers: the bytes addressable from the pointer on, where the launch knows them (a
  // tl::buffer), else 0 (a raw pointer: unknown). Under 2 GiB it is a specialization
  // (Triton's AMD `tt.pointer_range = 32`): 32-bit byte offsets reach every element, so
  // AMD loads through it may become buffer loads (codegen/gpu/convert_to_buffer_ops.cpp).
  uint64_t range_bytes = 0;
  // A host tensor descriptor's map slot (tl/descriptor.hpp): the descriptor the launch
  // encodes the CUtensorMap of. trace_time until choose_tensor_maps makes it an argument.
  const host_descriptor_data* tensor_map = nullptr;
};

struct LaunchRequest {
  const grid* g;
  const launch_options* opts;
  const device* dev;
  void* stream;
  std::span<const ArgValue> args;
  std::string_view constants;  // bytes of the trace-time constants, part of the specialization key
};

// The launch's trace callback, called only when the specialization is not cached yet: a
// reference to the launcher's lambda, so that a cached launch allocates nothing (a
// std::function of the lambda's captures would, at every launch).
struct trace_ref {
  const void* fn;
  void (*call)(const void*);
  void operator()() const { call(fn); }
  template <class L> static trace_ref of(const L& l) {
    return {&l, [](const void* p) { (*static_cast<const L*>(p))(); }};
  }
};

// What every kernel has, whatever its C++ signature: the specialization cache and
// the path from trace to launch (runtime/launch.cpp).
class KernelBase {
 public:
  KernelBase(std::string name, std::source_location loc);
  ~KernelBase();
  KernelBase(const KernelBase&) = delete;
  const std::string& name() const { return name_; }

  // Trace callback: declares the arguments (declare_argument) and runs the user's body.
  // The cached path (runtime/launch.cpp) is one lock-free look-up of the launch's key among
  // the last specializations launched, then the device's launch: no allocation, no lock.
  void launch(const LaunchRequest& r, trace_ref trace);
  // Traces and compiles without running (for --report and ahead-of-time use); returns
  // the cache entry's metadata as JSON text.
  std::string compile_only(const std::string& target, const launch_options& opts, std::span<const ArgValue> args,
                           const std::string& constants, const std::function<void()>& trace);
  // The same for a device's exact target (its features included), so that a launch on it
  // then finds the code in the cache: what the autotuner compiles to read the reports.
  std::string compile_only(const device& dev, const launch_options& opts, std::span<const ArgValue> args,
                           const std::string& constants, const std::function<void()>& trace);

 private:
  struct Impl;
  struct Hot;  // a launch key and its ready specialization (runtime/launch.cpp)
  const Hot* specialize(const LaunchRequest& r, trace_ref trace, const std::string& launch_key);
  std::string name_;
  std::source_location loc_;
  std::unique_ptr<Impl> impl_;
};

// Declares kernel argument i while tracing; returns its value. Pointers: dtype is the
// pointee, and `pointee` describes it where it is itself a pointer (ptr<ptr<f16>>).
ir::Value* declare_argument(int index, DType dtype, bool is_pointer, const pointer_desc& pointee = {});

// Declares the CUtensorMap argument of a descriptor parameter (slot `index`) while
// tracing, where the launch chose TMA for it (its ArgValue not trace_time); else null.
ir::Value* declare_tensor_map_argument(int index);
// Makes each tensor map slot among `args` a run-time argument where TMA takes its
// descriptor on `target` ("sm_90") with these options, else leaves it absent.
void choose_tensor_maps(std::span<ArgValue> args, const launch_options& o, const std::string& target);
void choose_tensor_maps(std::span<ArgValue> args, const launch_options& o, const device& dev);

// The slot bits of a scalar argument (narrow floats rounded to nearest even).
void scalar_bits(DType d, double f, int64_t i, uint64_t& bits);

// Converting a launch argument for a parameter of tile type P.
template <class P, class A> ArgValue to_arg(const A& a) {
  using E = typename P::elem;
  ArgValue v;
  if constexpr (is_ptr_elem<E>) {
    using Pointee = typename E::pointee;
    using H = typename Pointee::host;
    v.is_pointer = true;
    v.dtype = Pointee::dtype;
    if constexpr (std::is_same_v<std::decay_t<A>, buffer<Pointee>>) {
      v.bits = reinterpret_cast<uint64_t>(a.data());
      v.range_bytes = a.bytes();
    } else if constexpr (is_ptr_elem<Pointee> && (std::is_same_v<std::decay_t<A>, buffer<ty::u64>> ||
                                                  std::is_same_v<std::decay_t<A>, buffer<ty::i64>>)) {
      // An array of pointers filled with addresses (buffer::address()), as a Triton user
      // passes an int64 tensor of data_ptr()s.
      v.bits = reinterpret_cast<uint64_t>(a.data());
    } else if constexpr (std::is_same_v<std::decay_t<A>, std::nullptr_t>) {
      v.bits = 0;
    } else {
      static_assert(std::is_convertible_v<A, const H*>,
                    "tl launch: a pointer parameter takes a tl::buffer of the same element type or a raw pointer to it");
      v.bits = reinterpret_cast<uint64_t>(static_cast<const H*>(a));
    }
  } else {
    static_assert(std::is_arithmetic_v<A>, "tl launch: a scalar parameter takes a C++ number");
    v.dtype = E::dtype;
    scalar_bits(E::dtype, double(a), int64_t(a), v.bits);
  }
  return v;
}

template <class T> struct is_tile : std::false_type {};
template <class E> struct is_tile<tile<E>> : std::true_type {};

// A kernel parameter that is neither a tile (one run-time argument) nor a trace-time
// constant: `slots` run-time arguments and `constant_bytes` of the specialization key,
// filled by `prepare` from the launch's argument and turned into the parameter by `make`
// while tracing (tl::tensor_descriptor<T, Rank>, tl/descriptor.hpp, from a host
// tl::TensorDescriptor: Triton's descriptor arguments).
template <class P> struct composite_param { static constexpr bool value = false; };

template <class F> struct signature : signature<decltype(&F::operator())> {};
template <class C, class R, class... P> struct signature<R (C::*)(P...) const> { using params = std::tuple<std::decay_t<P>...>; };
template <class C, class R, class... P> struct signature<R (C::*)(P...)> { using params = std::tuple<std::decay_t<P>...>; };

template <class T> void append_constant(char* at, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>, "tl: trace-time constants must be plain values (int, bool, enums, floats)");
  std::memcpy(at, &v, sizeof(T));
}

}  // namespace detail

template <class F> class kernel_t;

// A launch being prepared: `k[grid].with(options).on(device)(args...)`.
template <class F> class launcher {
 public:
  launcher(kernel_t<F>* k, grid g) : k_(k), g_(g) {}
  launcher& with(const launch_options& o) { opts_ = o; return *this; }
  launcher& on(device d) { dev_ = std::move(d); return *this; }
  launcher& on(stream s) { stream_ = s.handle; return *this; }
  template <class... A> void operator()(A&&... args) { k_->run(g_, opts_, dev_, stream_, std::forward<A>(args)...); }

 private:
  kernel_t<F>* k_;
  grid g_;
  launch_options opts_;
  device dev_;
  void* stream_ = nullptr;
};

template <class F> class kernel_t : public detail::KernelBase {
  using params = typename detail::signature<F>::params;
  static constexpr size_t arity = std::tuple_size_v<params>;

 public:
  kernel_t(std::string name, F fn, std::source_location loc) : KernelBase(std::move(name), loc), fn_(std::move(fn)) {}

  launcher<F> operator[](grid g) { return launcher<F>(this, g); }

  template <class... A> void run(const grid& g, const launch_options& o, const device& d, void* s, A&&... args) {
    static_assert(sizeof...(A) == arity, "tl launch: wrong number of arguments for this kernel");
    auto prep = prepare(std::make_index_sequence<arity>{}, args...);
    device fallback;
    if (!d) fallback = default_device();
    if constexpr (kHasDescriptors) detail::choose_tensor_maps(prep.values, o, d ? d : fallback);
    detail::LaunchRequest r{&g, &o, d ? &d : &fallback, s, prep.values, prep.constant_bytes()};
    auto traced = [&] { trace(std::make_index_sequence<arity>{}, args...); };
    launch(r, detail::trace_ref::of(traced));
  }

  // Compiles for `target` ("gfx942", "sm_90", "cpu") without launching; returns the
  // metadata (resource report included) as JSON text.
  template <class... A> std::string compile(const std::string& target, const launch_options& o, A&&... args) {
    static_assert(sizeof...(A) == arity, "tl compile: wrong number of arguments for this kernel");
    auto prep = prepare(std::make_index_sequence<arity>{}, args...);
    if constexpr (kHasDescriptors) detail::choose_tensor_maps(prep.values, o, target);
    return compile_only(target, o, prep.values, std::string(prep.constant_bytes()),
                        [&] { trace(std::make_index_sequence<arity>{}, args...); });
  }
  // Compiles for the device `dev` runs kernels on, without launching.
  template <class... A> std::string compile(const device& dev, const launch_options& o, A&&... args) {
    static_assert(sizeof...(A) == arity, "tl compile: wrong number of arguments for this kernel");
    auto prep = prepare(std::make_index_sequence<arity>{}, args...);
    if constexpr (kHasDescriptors) detail::choose_tensor_maps(prep.values, o, dev);
    return compile_only(dev, o, prep.values, std::string(prep.constant_bytes()),
                        [&] { trace(std::make_index_sequence<arity>{}, args...); });
  }

 private:
  // The trace-time constants' bytes, known at compile time: they are packed into an array
  // on the stack (no allocation at a launch).
  template <class P> static constexpr size_t constant_size() {
    if constexpr (detail::is_tile<P>::value) return 0;
    else if constexpr (detail::composite_param<P>::value) return detail::composite_param<P>::constant_bytes;
    else return sizeof(P);
  }
  template <size_t... I> static constexpr size_t all_constant_sizes(std::index_sequence<I...>) {
    return (size_t(0) + ... + constant_size<std::tuple_element_t<I, params>>());
  }
  static constexpr size_t kConstantBytes = all_constant_sizes(std::make_index_sequence<arity>{});
  // Argument slots: one a parameter, a composite parameter's own count. declare_argument's
  // index is the slot.
  template <class P> static constexpr size_t slot_count() {
    if constexpr (detail::composite_param<P>::value) return detail::composite_param<P>::slots;
    else return 1;
  }
  template <size_t I> static constexpr size_t slot_of() {
    return []<size_t... J>(std::index_sequence<J...>) {
      return (size_t(0) + ... + slot_count<std::tuple_element_t<J, params>>());
    }(std::make_index_sequence<I>{});
  }
  static constexpr size_t kSlots = slot_of<arity>();
  // Whether a parameter is composite (a tensor descriptor, which may take a tensor map).
  static constexpr bool kHasDescriptors = []<size_t... J>(std::index_sequence<J...>) {
    return (false || ... || detail::composite_param<std::tuple_element_t<J, params>>::value);
  }(std::make_index_sequence<arity>{});

  struct Prepared {
    std::array<detail::ArgValue, kSlots> values{};
    std::array<char, kConstantBytes> constants;
    size_t constants_size = 0;
    std::string_view constant_bytes() const { return {constants.data(), constants_size}; }
  };

  template <size_t... I, class... A> Prepared prepare(std::index_sequence<I...>, const A&... args) {
    Prepared p;
    (prepare_one<I, std::tuple_element_t<I, params>>(p, args), ...);
    return p;
  }
  template <size_t I, class P, class A> void prepare_one(Prepared& p, const A& a) {
    if constexpr (detail::is_tile<P>::value) {
      p.values[slot_of<I>()] = detail::to_arg<P>(a);
    } else if constexpr (detail::composite_param<P>::value) {
      detail::composite_param<P>::prepare(p.values.data() + slot_of<I>(), p.constants.data() + p.constants_size, a);
      p.constants_size += detail::composite_param<P>::constant_bytes;
    } else {
      static_assert(std::is_convertible_v<const A&, P>, "tl launch: argument does not convert to the constant parameter's type");
      p.values[slot_of<I>()].trace_time = true;
      detail::append_constant(p.constants.data() + p.constants_size, P(a));
      p.constants_size += sizeof(P);
    }
  }

  template <size_t... I, class... A> void trace(std::index_sequence<I...>, const A&... args) {
    // Braces: list-initialization evaluates left to right, so arguments are declared in order.
    auto ps = std::tuple<std::tuple_element_t<I, params>...>{make_param<I, std::tuple_element_t<I, params>>(args)...};
    std::apply(fn_, ps);
  }
  template <size_t I, class P, class A> static P make_param(const A& a) {
    constexpr int slot = int(slot_of<I>());
    if constexpr (detail::is_tile<P>::value) {
      using E = typename P::elem;
      if constexpr (is_ptr_elem<E>)
        return P(detail::declare_argument(slot, E::pointee::dtype, true, detail::describe_pointer<E>()));
      else return P(detail::declare_argument(slot, E::dtype, false));
    } else if constexpr (detail::composite_param<P>::value) {
      return detail::composite_param<P>::make(slot, a);
    } else {
      return P(a);
    }
  }

  F fn_;
};

// Counters of this process's JIT activity, for tests and tools.
struct jit_stats {
  uint64_t traces = 0;      // specializations traced
  uint64_t compiles = 0;    // code objects compiled (cache misses)
  uint64_t disk_hits = 0;   // code objects found in the on-disk cache
  uint64_t launches = 0;
};
jit_stats stats();

// Defines a kernel from a C++ callable. The name appears in caches, reports and errors.
template <class F> kernel_t<F> kernel(std::string name, F fn, std::source_location loc = std::source_location::current()) {
  return kernel_t<F>(std::move(name), std::move(fn), loc);
}

}  // namespace tl

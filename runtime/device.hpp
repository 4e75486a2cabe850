// The runtime's device interface: one implementation per kind of device (cpu_device,
// hip_device, cuda_device), each with the same three parts (allocator, loader,
// launcher), like tinygrad's runtimes. The public tl::device wraps one of these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <span>
#include <vector>

#include "codegen/target.hpp"

namespace tl::runtime {

enum class DeviceKind { cpu, hip, cuda };

// A loaded kernel: the device's handle for one code object.
class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
  // What the device reports about the loaded code, for the resource report where the
  // code object itself does not say (NVIDIA: the driver's function attributes and ptxas's
  // log: regs, local_bytes, spill_store_bytes, ...). Empty where the code object says it all.
  std::map<std::string, int64_t> resources;
};

// A tensor map kernel parameter (LaunchDims::tensor_maps).
struct TensorMapArg {
  size_t slot = 0;
  const void* map = nullptr;
};

struct LaunchDims {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block_threads = 1;
  uint32_t shared_bytes = 0;
  // launch_options::launch_pdl: the launch may overlap the previous one on its stream
  // (programmatic dependent launch). Devices without it launch plainly.
  bool programmatic_dependent = false;
  // The kernel parameters that are tensor maps (launch_options::tma): the 128 bytes at
  // `map` are passed by value where argument `slot` is (its slot in ArgSlots is unused).
  // CUDA only; the other devices never take a kernel with one.
  std::span<const TensorMapArg> tensor_maps;
};

// One 8-byte slot per kernel argument, in signature order. Pointers are device
// addresses; scalars sit in the low bytes (i32 as int32, f32 as float, bf16/f16 as
// their 16 bits, ...). This is also the CPU kernels' argument-array ABI.
using ArgSlots = std::vector<uint64_t>;

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;            // "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X", "host CPU"
  virtual codegen::TargetDesc target() const = 0;  // what kernels for this device are compiled for
  virtual int compute_units() const = 0;           // CUs / SMs / hardware threads; queried once
  virtual void* alloc(size_t bytes) = 0;
  virtual void free(void* p) = 0;
  // Whether p points into memory this device allocated and has freed since, as far as the
  // device can still tell (the CPU's quarantine): a launch with such a pointer is refused.
  virtual bool freed(const void* p) const { (void)p; return false; }
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() = 0;
  virtual std::unique_ptr<LoadedKernel> load(const codegen::CodeObject& code) = 0;
  // `stream` is the user's hipStream_t / CUstream, or null for the default stream.
  virtual void launch(LoadedKernel& k, const LaunchDims& dims, const ArgSlots& args, void* stream) = 0;
};

std::shared_ptr<Device> make_cpu_device();
std::shared_ptr<Device> make_hip_device(int ordinal);   // throws tl::device_error when absent
std::shared_ptr<Device> make_cuda_device(int ordinal);  // throws tl::device_error when absent

}  // namespace tl::runtime

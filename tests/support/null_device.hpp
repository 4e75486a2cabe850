// A device whose launches do nothing: the CPU device for everything else (allocation,
// compiling and loading, through the real launch path), so that timing a launch on it
// measures tl's own host work alone, and a test can count what a cached launch does.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include "runtime/device.hpp"
#include "tl/kernel.hpp"

namespace tltest {

class NullLaunchDevice : public tl::runtime::Device {
 public:
  // gpu_like: what a launch on a GPU device asks of it, for timing (bench/launch_bench.cpp):
  // it says it is a CUDA device (so TL_BOUNDS_CHECK, a CPU setting, is not read) and knows
  // of no freed buffers (the CPU's quarantine look-up per pointer is the CPU's cost).
  explicit NullLaunchDevice(std::shared_ptr<tl::runtime::Device> cpu, bool gpu_like = false)
      : cpu_(std::move(cpu)), gpu_like_(gpu_like) {}
  // One on the CPU device of this process, as a tl::device.
  static tl::device make(bool gpu_like = false) {
    return tl::device(std::make_shared<NullLaunchDevice>(tl::runtime::make_cpu_device(), gpu_like));
  }

  tl::runtime::DeviceKind kind() const override {
    return gpu_like_ ? tl::runtime::DeviceKind::cuda : cpu_->kind();
  }
  std::string name() const override { return "null launches on " + cpu_->name(); }
  tl::codegen::TargetDesc target() const override { return cpu_->target(); }
  int compute_units() const override { return cpu_->compute_units(); }
  void* alloc(size_t bytes) override { return cpu_->alloc(bytes); }
  void free(void* p) override { cpu_->free(p); }
  bool freed(const void* p) const override { return !gpu_like_ && cpu_->freed(p); }
  void copy_to_device(void* dst, const void* src, size_t bytes) override { cpu_->copy_to_device(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { cpu_->copy_to_host(dst, src, bytes); }
  void copy_device_to_device(void* dst, const void* src, size_t bytes) override {
    cpu_->copy_device_to_device(dst, src, bytes);
  }
  void synchronize() override { cpu_->synchronize(); }
  std::unique_ptr<tl::runtime::LoadedKernel> load(const tl::codegen::CodeObject& code) override { return cpu_->load(code); }
  void launch(tl::runtime::LoadedKernel&, const tl::runtime::LaunchDims& dims, const tl::runtime::ArgSlots& args,
              void*) override {
    launches.fetch_add(1, std::memory_order_relaxed);
    last_slots.store(args.size(), std::memory_order_relaxed);
    last_threads.store(dims.block_threads, std::memory_order_relaxed);
    last_pdl.store(dims.programmatic_dependent, std::memory_order_relaxed);
  }

  std::atomic<uint64_t> launches{0};
  std::atomic<size_t> last_slots{0};
  std::atomic<uint32_t> last_threads{0};
  std::atomic<bool> last_pdl{false};

 private:
  std::shared_ptr<tl::runtime::Device> cpu_;
  bool gpu_like_ = false;
};

}  // namespace tltest

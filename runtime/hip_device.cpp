// The AMD device: the HIP runtime, loaded at run time (runtime/hip_api.hpp). Kernels
// are compiled for the device's full target name (gcnArchName, features included).
//
// No AMD GPU exists where tl is developed: this file is exercised through the code
// objects it would load (tests/codegen) and compiles everywhere; its launch path is
// the same shape as the CUDA one, which runs on the H100 machine.
#include <fmt/format.h>

#include "codegen/target.hpp"
#include "runtime/device.hpp"
#include "runtime/hip_api.hpp"
#include "tl/error.hpp"

namespace tl::runtime {
namespace {

class HipKernel : public LoadedKernel {
 public:
  HipKernel(const hip::Api& api, hip::hipModule_t m, hip::hipFunction_t f) : api_(api), module_(m), fn_(f) {}
  ~HipKernel() override { api_.hipModuleUnload(module_); }
  hip::hipFunction_t fn() const { return fn_; }

 private:
  const hip::Api& api_;
  hip::hipModule_t module_;
  hip::hipFunction_t fn_;
};

class HipDevice : public Device {
 public:
  HipDevice(const hip::Api& api, int ordinal) : api_(api), ordinal_(ordinal), info_(api.device_info(ordinal)) {
    target_ = codegen::parse_target(info_.arch);
    if (info_.warp_size) target_.wave_size = info_.warp_size;
  }
  DeviceKind kind() const override { return DeviceKind::hip; }
  std::string name() const override { return info_.name; }
  codegen::TargetDesc target() const override { return target_; }
  int compute_units() const override { return info_.multiprocessors; }

  void* alloc(size_t bytes) override {
    bind();
    void* p = nullptr;
    api_.check(api_.hipMalloc(&p, bytes ? bytes : 1), "hipMalloc");
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    bind();
    api_.hipFree(p);
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    bind();
    api_.check(api_.hipMemcpy(dst, src, bytes, hip::hipMemcpyHostToDevice), "hipMemcpy");
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    bind();
    api_.check(api_.hipMemcpy(dst, src, bytes, hip::hipMemcpyDeviceToHost), "hipMemcpy");
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes) override {
    bind();
    api_.check(api_.hipMemcpy(dst, src, bytes, hip::hipMemcpyDeviceToDevice), "hipMemcpy");
  }
  void synchronize() override {
    bind();
    api_.check(api_.hipDeviceSynchronize(), "hipDeviceSynchronize");
  }

  std::unique_ptr<LoadedKernel> load(const codegen::CodeObject& code) override {
    if (code.format != "hsaco") throw device_error(fmt::format("HIP device cannot load a '{}' code object", code.format));
    bind();
    hip::hipModule_t m = api_.load_module(code.binary.data());
    hip::hipFunction_t f = nullptr;
    int r = api_.hipModuleGetFunction(&f, m, code.kernel_symbol.c_str());
    if (r != hip::hipSuccess) {
      api_.hipModuleUnload(m);
      api_.check(r, "hipModuleGetFunction");
    }
    return std::make_unique<HipKernel>(api_, m, f);
  }

  void launch(LoadedKernel& k, const LaunchDims& d, const ArgSlots& args, void* stream) override {
    bind();
    std::vector<void*> params(args.size());
    for (size_t i = 0; i < args.size(); ++i) params[i] = const_cast<uint64_t*>(&args[i]);
    auto& hk = static_cast<HipKernel&>(k);
    api_.check(api_.hipModuleLaunchKernel(hk.fn(), d.grid[0], d.grid[1], d.grid[2], d.block_threads, 1, 1,
                                          d.shared_bytes, static_cast<hip::hipStream_t>(stream), params.data(), nullptr),
               "hipModuleLaunchKernel");
  }

 private:
  void bind() const { api_.check(api_.hipSetDevice(ordinal_), "hipSetDevice"); }

  const hip::Api& api_;
  int ordinal_;
  hip::DeviceInfo info_;
  codegen::TargetDesc target_;
};

}  // namespace

std::shared_ptr<Device> make_hip_device(int ordinal) {
  const hip::Api* api = hip::Api::get();
  if (!api) throw device_error("no AMD GPU: the HIP runtime (libamdhip64) is not loadable or reports no device");
  if (ordinal >= api->device_count())
    throw device_error(fmt::format("no AMD GPU with ordinal {} ({} present)", ordinal, api->device_count()));
  return std::make_shared<HipDevice>(*api, ordinal);
}

}  // namespace tl::runtime

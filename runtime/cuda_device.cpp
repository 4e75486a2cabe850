// The NVIDIA device: the CUDA driver API, loaded at run time (runtime/cuda_api.hpp).
#include <fmt/format.h>

#include "runtime/cuda_api.hpp"
#include "runtime/device.hpp"
#include "runtime/env.hpp"
#include "tl/error.hpp"

namespace tl::runtime {
namespace {

class CudaKernel : public LoadedKernel {
 public:
  CudaKernel(const cuda::Api& api, cuda::CUmodule m, cuda::CUfunction f) : api_(api), module_(m), fn_(f) {}
  ~CudaKernel() override { api_.cuModuleUnload(module_); }
  cuda::CUfunction fn() const { return fn_; }

 private:
  const cuda::Api& api_;
  cuda::CUmodule module_;
  cuda::CUfunction fn_;
};

class CudaDevice : public Device {
 public:
  CudaDevice(const cuda::Api& api, int ordinal) : api_(api), ordinal_(ordinal), info_(api.device_info(ordinal)) {
    api_.bind(ordinal_);
    target_.kind = codegen::TargetDesc::nvptx;
    target_.arch = info_.arch();
    target_.wave_size = info_.warp_size;
    // Programmatic dependent launch: compute capability 9.0 and later, with a driver that
    // has cuLaunchKernelEx (CUDA 12.0+). Elsewhere launch_pdl launches plainly, as Triton
    // ignores it where it is unsupported.
    // TL_NO_PDL=1 launches every kernel plainly (to measure what PDL gains, or rule it out).
    programmatic_launch_ = info_.cc_major >= 9 && api_.cuLaunchKernelEx != nullptr && !env::flag("TL_NO_PDL");
  }
  DeviceKind kind() const override { return DeviceKind::cuda; }
  std::string name() const override { return info_.name; }
  codegen::TargetDesc target() const override { return target_; }
  int compute_units() const override { return info_.multiprocessors; }

  void* alloc(size_t bytes) override {
    api_.bind(ordinal_);
    cuda::CUdeviceptr p = 0;
    api_.check(api_.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    return reinterpret_cast<void*>(p);
  }
  void free(void* p) override {
    if (!p) return;
    api_.bind(ordinal_);
    api_.cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(p));  // never throws from destructors
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    api_.bind(ordinal_);
    api_.check(api_.cuMemcpyHtoD(reinterpret_cast<cuda::CUdeviceptr>(dst), src, bytes), "cuMemcpyHtoD");
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    api_.bind(ordinal_);
    api_.check(api_.cuMemcpyDtoH(dst, reinterpret_cast<cuda::CUdeviceptr>(src), bytes), "cuMemcpyDtoH");
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes) override {
    api_.bind(ordinal_);
    api_.check(api_.cuMemcpyDtoD(reinterpret_cast<cuda::CUdeviceptr>(dst), reinterpret_cast<cuda::CUdeviceptr>(src), bytes),
               "cuMemcpyDtoD");
  }
  void synchronize() override {
    api_.bind(ordinal_);
    api_.check(api_.cuCtxSynchronize(), "cuCtxSynchronize");
  }

  std::unique_ptr<LoadedKernel> load(const codegen::CodeObject& code) override {
    if (code.format != "ptx") throw device_error(fmt::format("CUDA device cannot load a '{}' code object", code.format));
    api_.bind(ordinal_);
    // A kernel whose shared buffer is dynamic (the lowering's choice past the 48 KiB
    // static limit) launches with report["dynamic_shared_bytes"] (runtime/launch.cpp).
    auto dyn = code.report.find("dynamic_shared_bytes");
    int64_t dynamic = dyn == code.report.end() ? 0 : dyn->second;
    if (info_.max_shared_optin > 0 && dynamic > info_.max_shared_optin)
      throw device_error(fmt::format("kernel '{}' needs {} bytes of shared memory; {} ({}) allows {} per block",
                                     code.kernel_symbol, dynamic, info_.name, info_.arch(), info_.max_shared_optin));
    std::string ptx(code.binary.begin(), code.binary.end());  // NUL-terminated for the driver
    std::string jit_log;
    cuda::CUmodule m = api_.load_module(ptx.c_str(), &jit_log);
    cuda::CUfunction f = nullptr;
    cuda::CUresult r = api_.cuModuleGetFunction(&f, m, code.kernel_symbol.c_str());
    const char* what = "cuModuleGetFunction";
    if (r == cuda::CUDA_SUCCESS && dynamic > 48 * 1024) {
      // Above 48 KiB the driver refuses a launch's dynamic shared memory unless the
      // function opted in first.
      r = api_.cuFuncSetAttribute(f, cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(dynamic));
      what = "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)";
    }
    if (r != cuda::CUDA_SUCCESS) {
      api_.cuModuleUnload(m);
      api_.check(r, what);
    }
    auto kernel = std::make_unique<CudaKernel>(api_, m, f);
    kernel->resources = resources(f, jit_log, code.kernel_symbol);
    kernel->resources["dynamic_shared_bytes"] = dynamic;  // what each launch asks for
    return kernel;
  }

  // The resource report of a loaded function, like the AMD report that the code object's
  // metadata gives: registers per thread, local memory (spills and stack), static shared
  // memory and the most threads a block may have with these registers, from the driver
  // (what Triton reports as n_regs, and n_spills = local_bytes / 4); spill stores and loads
  // from ptxas's verbose log. A figure the driver does not give is left out.
  std::map<std::string, int64_t> resources(cuda::CUfunction f, const std::string& jit_log, const std::string& symbol) {
    std::map<std::string, int64_t> r;
    auto attr = [&](int a, const char* name) {
      int v = 0;
      if (api_.cuFuncGetAttribute(&v, a, f) == cuda::CUDA_SUCCESS) r[name] = v;
    };
    attr(cuda::CU_FUNC_ATTRIBUTE_NUM_REGS, "regs");
    attr(cuda::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local_bytes");
    attr(cuda::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static_shared_bytes");
    attr(cuda::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "const_bytes");
    attr(cuda::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max_threads_per_block");
    const cuda::PtxasInfo p = cuda::parse_ptxas_info(jit_log, symbol);
    if (p.spill_store_bytes >= 0) r["spill_store_bytes"] = p.spill_store_bytes;
    if (p.spill_load_bytes >= 0) r["spill_load_bytes"] = p.spill_load_bytes;
    if (p.stack_bytes >= 0) r["stack_bytes"] = p.stack_bytes;
    return r;
  }

  void launch(LoadedKernel& k, const LaunchDims& d, const ArgSlots& args, void* stream) override {
    api_.bind(ordinal_);
    // Each slot holds its argument in its low bytes, which is what the driver reads
    // for a parameter of any size up to 8 bytes (little-endian). The pointers to them sit
    // on the stack for the usual argument counts (no allocation at a launch).
    constexpr size_t kInline = 32;
    void* inline_params[kInline];
    std::vector<void*> more;
    void** params = inline_params;
    if (args.size() > kInline) more.resize(args.size()), params = more.data();
    for (size_t i = 0; i < args.size(); ++i) params[i] = const_cast<uint64_t*>(&args[i]);
    // (a tensor map, a 128-byte grid-constant parameter: the driver copies it from here)
    for (const TensorMapArg& m : d.tensor_maps) params[m.slot] = const_cast<void*>(m.map);
    auto& ck = static_cast<CudaKernel&>(k);
    const auto s = static_cast<cuda::CUstream>(stream);
    if (d.programmatic_dependent && programmatic_launch_) {
      // Programmatic stream serialization: the kernel may start once every program of the
      // previous one has run griddepcontrol.launch_dependents (or exited); its
      // griddepcontrol.wait then waits for that kernel's completion and memory.
      cuda::CUlaunchAttribute attr;
      attr.id = cuda::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attr.value.programmatic_stream_serialization_allowed = 1;
      cuda::CUlaunchConfig config;
      config.grid_x = d.grid[0], config.grid_y = d.grid[1], config.grid_z = d.grid[2];
      config.block_x = d.block_threads;
      config.shared_bytes = d.shared_bytes;
      config.stream = s;
      config.attrs = &attr;
      config.num_attrs = 1;
      api_.check(api_.cuLaunchKernelEx(&config, ck.fn(), params, nullptr), "cuLaunchKernelEx");
      return;
    }
    api_.check(api_.cuLaunchKernel(ck.fn(), d.grid[0], d.grid[1], d.grid[2], d.block_threads, 1, 1, d.shared_bytes, s,
                                   params, nullptr),
               "cuLaunchKernel");
  }

 private:
  const cuda::Api& api_;
  int ordinal_;
  cuda::DeviceInfo info_;
  codegen::TargetDesc target_;
  bool programmatic_launch_ = false;
};

}  // namespace

std::shared_ptr<Device> make_cuda_device(int ordinal) {
  const cuda::Api* api = cuda::Api::get();
  if (!api) throw device_error("no NVIDIA GPU: the CUDA driver (libcuda.so.1) is not loadable or reports no device");
  if (ordinal >= api->device_count())
    throw device_error(fmt::format("no NVIDIA GPU with ordinal {} ({} present)", ordinal, api->device_count()));
  return std::make_shared<CudaDevice>(*api, ordinal);
}

}  // namespace tl::runtime

// A run-time loader for the CUDA driver API (libcuda.so.1). tl never links against CUDA
// and never includes its headers: a machine without the NVIDIA driver must still build tl
// and run it on other targets. The few types, constants and signatures used are declared
// here by hand, with opaque handles as pointers and every enum passed as int.
//
//   const tl::cuda::Api* cu = tl::cuda::Api::get();   // nullptr: no driver, or no GPU
//   cu->bind(0);                                      // once per thread, see bind()
//   CUdeviceptr p;  cu->check(cu->cuMemAlloc(&p, 1024), "cuMemAlloc");
//
// Entry points are resolved by their versioned names (cuMemAlloc_v2, ...), which is what
// cuda.h's macros compile the plain names to; the members carry the plain names.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace tl::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

constexpr CUresult CUDA_SUCCESS = 0;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
// CUfunction_attribute: what the loaded function uses (read after loading, for the
// resource report), and the one to raise to launch with more than 48 KiB of dynamic
// shared memory.
constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr int CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;  // static shared memory
constexpr int CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2;
constexpr int CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;   // local memory per thread: spills, stack
constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// CUjit_option
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_JIT_LOG_VERBOSE = 12;
// CUmoduleLoadingMode
constexpr int CU_MODULE_EAGER_LOADING = 1;
constexpr int CU_MODULE_LAZY_LOADING = 2;

// cuLaunchKernelEx's configuration (cuda.h's CUlaunchConfig, CUlaunchAttribute), with the
// one attribute tl sets: programmatic stream serialization (programmatic dependent
// launch, tl's launch_pdl). The attribute's value is a 64-byte union in cuda.h.
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  int id = 0;
  char pad_[4] = {};
  union Value {
    char pad[64];
    int programmatic_stream_serialization_allowed;
  } value{};
};
static_assert(sizeof(CUlaunchAttribute) == 72, "cuda.h's CUlaunchAttribute is 72 bytes");
struct CUlaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CUstream stream = nullptr;
  CUlaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};

// What ptxas says about one kernel in the JIT's info log (CU_JIT_LOG_VERBOSE), the
// figures no function attribute gives: "<n> bytes stack frame, <s> bytes spill stores,
// <l> bytes spill loads" under "Function properties for <kernel>". Fields the log lacks
// are -1. Pure text parsing: tested without a GPU.
struct PtxasInfo {
  int64_t stack_bytes = -1, spill_store_bytes = -1, spill_load_bytes = -1, registers = -1;
};
PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel);

// What tl needs to know about a device.
struct DeviceInfo {
  std::string name;          // e.g. "NVIDIA H100 80GB HBM3"
  int multiprocessors = 0;
  int warp_size = 0;
  int cc_major = 0, cc_minor = 0;
  int max_shared_optin = 0;  // dynamic shared memory per block, after opting in
  // The PTX/SASS target: "sm_90". (Arch-specific "sm_90a" features are the compiler's call.)
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

class Api {
 public:
  // The process-wide CUDA driver: libcuda.so.1 loaded, cuInit(0) succeeded and at least
  // one device present. nullptr otherwise. Thread-safe (the first call loads, under
  // std::call_once); the object lives until the process exits and the driver is never
  // unloaded.
  static const Api* get();

  // Loads the library at `path` (a dlopen name or path) and resolves its entry points,
  // without calling cuInit. nullptr when it cannot be opened or lacks a required entry
  // point; never throws. For tests and diagnostics: a successfully loaded library is never
  // dlclose'd (the driver keeps threads and at-exit work that must not outlive its code).
  static std::unique_ptr<Api> load(const char* path);

  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Throws tl::device_error "<what>: <CUDA_ERROR_NAME>: <description> (CUresult <err>)"
  // unless err == CUDA_SUCCESS.
  void check(CUresult err, const char* what) const;

  // The number of devices; 0 where the query fails.
  int device_count() const;
  // Name, compute capability and sizes of a device. Needs no context. Throws device_error.
  DeviceInfo device_info(int ordinal) const;

  // The device's primary context (the one the CUDA runtime, PyTorch and others share),
  // retained on first use and held until the process exits. Thread-safe. Throws.
  CUcontext context(int ordinal) const;
  // Makes device `ordinal`'s primary context current on the calling thread. The current
  // context is per thread: call this on every thread before driver calls that need one
  // (allocation, copies, modules, launches, streams, events). Cheap after the first call.
  void bind(int ordinal = 0) const;

  // Loads a module (PTX or cubin) into the current context. On failure throws
  // device_error whose message holds the JIT's error log, i.e. ptxas's own diagnostics.
  CUmodule load_module(const void* image) const;
  // Like load_module, with the JIT's info log (ptxas's verbose report: registers, stack,
  // spills) in *info_log.
  CUmodule load_module(const void* image, std::string* info_log) const;
  // cuModuleLoadDataEx with the JIT's error (and info) log captured into `log`; returns
  // the driver's result. load_module is this plus check(). `info_log`, when given, gets the
  // info log alone.
  CUresult load_module_logged(CUmodule* module, const void* image, std::string* log,
                              std::string* info_log = nullptr) const;

  // ---- entry points (resolved as the *_v2 symbol where the driver has one) ----
  CUresult (*cuInit)(unsigned flags) = nullptr;
  CUresult (*cuDriverGetVersion)(int* version) = nullptr;
  CUresult (*cuDeviceGetCount)(int* count) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int* value, int attrib, CUdevice device) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext ctx) = nullptr;
  CUresult (*cuCtxSynchronize)() = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes) = nullptr;     // _v2
  CUresult (*cuMemFree)(CUdeviceptr ptr) = nullptr;                     // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes) = nullptr;        // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes) = nullptr;  // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) = nullptr;  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream s) = nullptr;        // _v2
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count) = nullptr;              // _v2
  CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned value, size_t count) = nullptr;                  // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream s) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule* module, const void* image, unsigned num_options,
                                 int* options, void** option_values) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule module) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name) = nullptr;
  CUresult (*cuModuleGetLoadingMode)(int* mode) = nullptr;  // optional (CUDA 11.7+)
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CUstream stream, void** params, void** extra) = nullptr;
  // Optional (CUDA 12.0+): launches with attributes; null on older drivers, where a
  // programmatic dependent launch is launched plainly.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction f, int attrib, int value) = nullptr;
  CUresult (*cuFuncGetAttribute)(int* value, int attrib, CUfunction f) = nullptr;
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream stream) = nullptr;  // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream) = nullptr;
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags) = nullptr;
  CUresult (*cuEventRecord)(CUevent event, CUstream stream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent event) = nullptr;
  // cuEventElapsedTime_v2 (CUDA 12.8+, the only name in CUDA 13's header), else the
  // original cuEventElapsedTime, which older drivers and some Jetson drivers alone export.
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent stop) = nullptr;
  CUresult (*cuEventDestroy)(CUevent event) = nullptr;  // _v2
  // Optional (CUDA 12.0+): a tensor map for TMA (runtime/tensor_map.hpp); the map is 128
  // bytes at a 64-byte aligned address, every enum an int.
  CUresult (*cuTensorMapEncodeTiled)(void* tensor_map, int data_type, uint32_t rank, void* global_address,
                                     const uint64_t* global_dim, const uint64_t* global_strides,
                                     const uint32_t* box_dim, const uint32_t* element_strides, int interleave,
                                     int swizzle, int l2_promotion, int oob_fill) = nullptr;
  CUresult (*cuGetErrorString)(CUresult err, const char** str) = nullptr;
  CUresult (*cuGetErrorName)(CUresult err, const char** str) = nullptr;

 private:
  Api() = default;
  void* lib_ = nullptr;
  // Retained primary contexts. bind() runs before every driver call of the runtime, so
  // the first 64 ordinals are read lock-free; the mutex only guards retaining.
  static constexpr int kFastContexts = 64;
  mutable std::array<std::atomic<CUcontext>, kFastContexts> fast_contexts_{};
  mutable std::mutex contexts_mutex_;
  mutable std::map<int, CUcontext> contexts_;
};

// Api::get()->check(err, what), usable where no Api is at hand; without a driver the
// message carries the number alone.
void check(CUresult err, const char* what);

}  // namespace tl::cuda

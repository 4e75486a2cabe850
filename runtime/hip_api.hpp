// A run-time loader for the HIP runtime (libamdhip64). tl never links against HIP and
// never includes its headers: a machine without ROCm must still build tl and run it on
// other targets. The few types, constants and signatures used are declared here by hand,
// with opaque handles as pointers and every enum passed as int (HIP's enums are int-sized).
//
//   const tl::hip::Api* hip = tl::hip::Api::get();   // nullptr: no HIP, or no AMD GPU
//   void* p;  hip->check(hip->hipMalloc(&p, 1024), "hipMalloc");
//
// HIP's current device is per thread (like CUDA's runtime API): a thread that is not
// using device 0 calls hipSetDevice first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace tl::hip {

using hipError_t = int;
using hipDevice_t = int;
using hipStream_t = struct ihipStream_t*;
using hipModule_t = struct ihipModule_t*;
using hipFunction_t = struct ihipModuleSymbol_t*;
using hipEvent_t = struct ihipEvent_t*;

constexpr hipError_t hipSuccess = 0;

// hipMemcpyKind
constexpr int hipMemcpyHostToHost = 0;
constexpr int hipMemcpyHostToDevice = 1;
constexpr int hipMemcpyDeviceToHost = 2;
constexpr int hipMemcpyDeviceToDevice = 3;
constexpr int hipMemcpyDefault = 4;

// hipDeviceAttribute_t (the CUDA-compatible numbering of ROCm 5 and later).
constexpr int hipDeviceAttributeMaxSharedMemoryPerBlock = 74;
constexpr int hipDeviceAttributeMultiprocessorCount = 63;
constexpr int hipDeviceAttributeWarpSize = 87;

// What tl needs to know about a device.
struct DeviceInfo {
  std::string name;          // marketing name, e.g. "AMD Instinct MI300X"
  std::string arch;          // gcnArchName with target features, e.g. "gfx942:sramecc+:xnack-"
  int multiprocessors = 0;   // compute units
  int warp_size = 0;         // wavefront size, 32 or 64
  int max_shared_bytes = 0;  // LDS per workgroup
  // The processor alone, without target features: "gfx942".
  std::string processor() const { return arch.substr(0, arch.find(':')); }
};

class Api {
 public:
  // The process-wide HIP runtime: libamdhip64 loaded and at least one device present.
  // nullptr when the library cannot be loaded, lacks a required entry point, or reports
  // no device. Thread-safe (the first call loads, under std::call_once); the object lives
  // until the process exits and the library is never unloaded.
  static const Api* get();

  // Loads the library at `path` (a dlopen name or path) and resolves its entry points,
  // without initialising HIP or asking for devices. nullptr when it cannot be opened or
  // lacks a required entry point; never throws. For tests and diagnostics: a successfully
  // loaded library is never dlclose'd (HIP registers at-exit work and threads that must
  // not outlive its code), so each such call holds one more reference to it.
  static std::unique_ptr<Api> load(const char* path);

  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;

  // Throws tl::device_error "<what>: <HIP's error string> (hipError_t <err>)" unless
  // err == hipSuccess.
  void check(hipError_t err, const char* what) const;

  // The number of devices; 0 where the query fails.
  int device_count() const;
  // Name, architecture and sizes of a device. Throws tl::device_error.
  DeviceInfo device_info(int device) const;
  // Loads a code object (an HSACO ELF) onto the current device. Throws tl::device_error.
  hipModule_t load_module(const void* image) const;

  // ---- entry points, exactly as libamdhip64 exports them ----
  hipError_t (*hipInit)(unsigned flags) = nullptr;  // optional: called by get() when present
  hipError_t (*hipGetDeviceCount)(int* count) = nullptr;
  hipError_t (*hipDeviceGet)(hipDevice_t* device, int ordinal) = nullptr;
  hipError_t (*hipDeviceGetAttribute)(int* value, int attr, int device) = nullptr;
  hipError_t (*hipDeviceGetName)(char* name, int len, hipDevice_t device) = nullptr;
  // hipGetDevicePropertiesR0600 (HIP 6) or else hipGetDeviceProperties. Its struct layout
  // changes between releases, so it is only used, into an oversized buffer, to find
  // gcnArchName (see device_info); take everything else from hipDeviceGetAttribute.
  hipError_t (*hipGetDeviceProperties)(void* props, int device) = nullptr;
  hipError_t (*hipSetDevice)(int device) = nullptr;
  hipError_t (*hipMalloc)(void** ptr, size_t bytes) = nullptr;
  hipError_t (*hipFree)(void* ptr) = nullptr;
  hipError_t (*hipMemcpy)(void* dst, const void* src, size_t bytes, int kind) = nullptr;
  hipError_t (*hipMemcpyAsync)(void* dst, const void* src, size_t bytes, int kind, hipStream_t stream) = nullptr;
  hipError_t (*hipMemset)(void* dst, int value, size_t bytes) = nullptr;
  hipError_t (*hipMemsetAsync)(void* dst, int value, size_t bytes, hipStream_t stream) = nullptr;
  hipError_t (*hipStreamCreate)(hipStream_t* stream) = nullptr;
  hipError_t (*hipStreamDestroy)(hipStream_t stream) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t stream) = nullptr;
  hipError_t (*hipDeviceSynchronize)() = nullptr;
  hipError_t (*hipModuleLoadData)(hipModule_t* module, const void* image) = nullptr;
  hipError_t (*hipModuleUnload)(hipModule_t module) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t* function, hipModule_t module, const char* name) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                      unsigned block_x, unsigned block_y, unsigned block_z,
                                      unsigned shared_bytes, hipStream_t stream, void** params,
                                      void** extra) = nullptr;
  hipError_t (*hipEventCreate)(hipEvent_t* event) = nullptr;
  hipError_t (*hipEventRecord)(hipEvent_t event, hipStream_t stream) = nullptr;
  hipError_t (*hipEventSynchronize)(hipEvent_t event) = nullptr;
  hipError_t (*hipEventElapsedTime)(float* ms, hipEvent_t start, hipEvent_t stop) = nullptr;
  hipError_t (*hipEventDestroy)(hipEvent_t event) = nullptr;
  const char* (*hipGetErrorString)(hipError_t err) = nullptr;
  const char* (*hipGetErrorName)(hipError_t err) = nullptr;  // optional
  hipError_t (*hipGetLastError)() = nullptr;

 private:
  Api() = default;
  void* lib_ = nullptr;
};

// Api::get()->check(err, what), usable where no Api is at hand; without HIP the message
// carries the number alone.
void check(hipError_t err, const char* what);

namespace detail {
// The longest NUL-terminated string in `props` that starts a field (follows a NUL or
// the buffer's start), begins with "gfx" and holds only [A-Za-z0-9:+_-]; "" if none.
// This is how device_info finds gcnArchName without knowing hipDeviceProp_t's layout.
std::string find_arch_name(const void* props, size_t size);
}  // namespace detail

}  // namespace tl::hip

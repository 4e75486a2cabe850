#include "runtime/cuda_api.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "tl/error.hpp"

namespace tl::cuda {
namespace {

// The driver's soname. (Plain "libcuda.so" is the toolkit's link-time stub, whose cuInit
// always fails, or a development symlink: never the library to run with.)
constexpr const char* kLibraryName = "libcuda.so.1";

template <class F> bool resolve(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace

std::unique_ptr<Api> Api::load(const char* path) {
  // dlopen("") would hand back the main program, which is not the driver.
  if (path == nullptr || *path == '\0') return nullptr;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  std::unique_ptr<Api> api(new Api());
  api->lib_ = lib;
  bool ok = true;
#define TL_CU_REQUIRE(fn) ok = resolve(lib, api->fn, #fn) && ok
#define TL_CU_REQUIRE_V2(fn) ok = resolve(lib, api->fn, #fn "_v2") && ok
  TL_CU_REQUIRE(cuInit);
  TL_CU_REQUIRE(cuDriverGetVersion);
  TL_CU_REQUIRE(cuDeviceGetCount);
  TL_CU_REQUIRE(cuDeviceGet);
  TL_CU_REQUIRE(cuDeviceGetName);
  TL_CU_REQUIRE(cuDeviceGetAttribute);
  TL_CU_REQUIRE(cuDevicePrimaryCtxRetain);
  TL_CU_REQUIRE(cuCtxSetCurrent);
  TL_CU_REQUIRE(cuCtxSynchronize);
  TL_CU_REQUIRE_V2(cuMemAlloc);
  TL_CU_REQUIRE_V2(cuMemFree);
  TL_CU_REQUIRE_V2(cuMemcpyHtoD);
  TL_CU_REQUIRE_V2(cuMemcpyDtoH);
  TL_CU_REQUIRE_V2(cuMemcpyDtoD);
  TL_CU_REQUIRE_V2(cuMemcpyHtoDAsync);
  TL_CU_REQUIRE_V2(cuMemcpyDtoHAsync);
  TL_CU_REQUIRE_V2(cuMemsetD8);
  TL_CU_REQUIRE_V2(cuMemsetD32);
  TL_CU_REQUIRE(cuMemsetD8Async);
  TL_CU_REQUIRE(cuModuleLoadData);
  TL_CU_REQUIRE(cuModuleLoadDataEx);
  TL_CU_REQUIRE(cuModuleUnload);
  TL_CU_REQUIRE(cuModuleGetFunction);
  TL_CU_REQUIRE(cuLaunchKernel);
  TL_CU_REQUIRE(cuFuncSetAttribute);
  TL_CU_REQUIRE(cuFuncGetAttribute);
  TL_CU_REQUIRE(cuStreamCreate);
  TL_CU_REQUIRE_V2(cuStreamDestroy);
  TL_CU_REQUIRE(cuStreamSynchronize);
  TL_CU_REQUIRE(cuEventCreate);
  TL_CU_REQUIRE(cuEventRecord);
  TL_CU_REQUIRE(cuEventSynchronize);
  TL_CU_REQUIRE_V2(cuEventDestroy);
  TL_CU_REQUIRE(cuGetErrorString);
  TL_CU_REQUIRE(cuGetErrorName);
#undef TL_CU_REQUIRE
#undef TL_CU_REQUIRE_V2
  // Try the new name first, then the old one: each exists on drivers the other doesn't.
  if (!resolve(lib, api->cuEventElapsedTime, "cuEventElapsedTime_v2") &&
      !resolve(lib, api->cuEventElapsedTime, "cuEventElapsedTime"))
    ok = false;
  if (!ok) {
    // Not the driver (or one too old to use): nothing of it has run beyond its
    // constructors, so it is safe to unload again.
    dlclose(lib);
    return nullptr;
  }
  resolve(lib, api->cuModuleGetLoadingMode, "cuModuleGetLoadingMode");
  resolve(lib, api->cuLaunchKernelEx, "cuLaunchKernelEx");
  resolve(lib, api->cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");
  return api;
}

const Api* Api::get() {
  static std::once_flag once;
  static const Api* instance = nullptr;  // deliberately leaked: usable from static destructors
  std::call_once(once, [] {
    // TL_CUDA_LIBRARY names a driver library to use instead of the one the loader finds.
    const char* env = std::getenv("TL_CUDA_LIBRARY");
    std::unique_ptr<Api> api = load(env && *env ? env : kLibraryName);
    if (!api) return;
    // cuInit fails where the kernel module is missing or no device is visible (and
    // always in the toolkit's stub library).
    if (api->cuInit(0) != CUDA_SUCCESS) return;
    int count = 0;
    if (api->cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) return;
    instance = api.release();
  });
  return instance;
}

void Api::check(CUresult err, const char* what) const {
  if (err == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* desc = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(err, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(err, &desc) != CUDA_SUCCESS) desc = nullptr;
  std::string msg = std::string(what) + ": ";
  if (name) msg += std::string(name) + ": ";
  msg += desc ? desc : "unknown error";
  msg += " (CUresult " + std::to_string(err) + ")";
  throw device_error(msg);
}

void check(CUresult err, const char* what) {
  if (err == CUDA_SUCCESS) return;
  if (const Api* api = Api::get()) api->check(err, what);
  throw device_error(std::string(what) + ": CUDA error " + std::to_string(err) + " (CUDA driver not loaded)");
}

int Api::device_count() const {
  int count = 0;
  return cuDeviceGetCount(&count) == CUDA_SUCCESS ? count : 0;
}

DeviceInfo Api::device_info(int ordinal) const {
  DeviceInfo info;
  CUdevice dev = 0;
  check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  info.name = name;
  auto attr = [&](int a, int* out, const char* what) { check(cuDeviceGetAttribute(out, a, dev), what); };
  attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessors, "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, &info.warp_size, "cuDeviceGetAttribute(WARP_SIZE)");
  attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.cc_major, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.cc_minor, "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &info.max_shared_optin,
       "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  return info;
}

CUcontext Api::context(int ordinal) const {
  const bool fast = ordinal >= 0 && ordinal < kFastContexts;
  if (fast) {
    if (CUcontext ctx = fast_contexts_[ordinal].load(std::memory_order_acquire)) return ctx;
  }
  std::lock_guard<std::mutex> lock(contexts_mutex_);
  if (auto it = contexts_.find(ordinal); it != contexts_.end()) return it->second;
  CUdevice dev = 0;
  check(cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  CUcontext ctx = nullptr;
  // The primary context, not cuCtxCreate's private one: it is the context that the CUDA
  // runtime (and so PyTorch and friends) uses, so pointers and streams pass between them.
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  contexts_.emplace(ordinal, ctx);
  if (fast) fast_contexts_[ordinal].store(ctx, std::memory_order_release);
  return ctx;
}

void Api::bind(int ordinal) const { check(cuCtxSetCurrent(context(ordinal)), "cuCtxSetCurrent"); }

CUresult Api::load_module_logged(CUmodule* module, const void* image, std::string* log, std::string* info) const {
  // Both logs: the error log holds ptxas's errors, the info log its warnings and notes,
  // which help to explain an error (e.g. "used 300 registers"). Verbose: the info log
  // then also has ptxas's resource lines (stack frame, spill stores and loads), which
  // the resource report reads (parse_ptxas_info).
  std::vector<char> error_log(16384, '\0'), info_log(16384, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                   CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  void* values[] = {error_log.data(), reinterpret_cast<void*>(uintptr_t(error_log.size() - 1)),
                    info_log.data(), reinterpret_cast<void*>(uintptr_t(info_log.size() - 1)),
                    reinterpret_cast<void*>(uintptr_t(1))};
  const CUresult err = cuModuleLoadDataEx(module, image, 5, options, values);
  const std::string info_text(info_log.data());
  if (info) *info = info_text;
  if (log) {
    log->assign(error_log.data());
    if (!info_text.empty()) *log += (log->empty() ? "" : "\n") + info_text;
  }
  return err;
}

CUmodule Api::load_module(const void* image) const { return load_module(image, nullptr); }

CUmodule Api::load_module(const void* image, std::string* info_log) const {
  CUmodule module = nullptr;
  std::string log;
  // One JIT with the logs attached, rather than cuModuleLoadData and then a second JIT to
  // find out why it failed: the logs cost nothing when it succeeds.
  const CUresult err = load_module_logged(&module, image, &log, info_log);
  if (err != CUDA_SUCCESS) {
    try {
      check(err, "cuModuleLoadData");
    } catch (const device_error& e) {
      throw device_error(log.empty() ? std::string(e.what()) : std::string(e.what()) + "\n" + log);
    }
  }
  return module;
}

PtxasInfo parse_ptxas_info(const std::string& log, const std::string& kernel) {
  PtxasInfo info;
  // "<number> <words>" anywhere in `line`: the number just before `words`, or -1.
  auto number_before = [](const std::string& line, const std::string& words) -> int64_t {
    size_t at = line.find(words);
    if (at == std::string::npos || at < 2) return -1;
    size_t end = at - 1, begin = end;  // a space separates the number from the words
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
    if (begin == end) return -1;
    return std::strtoll(line.c_str() + begin, nullptr, 10);
  };
  // ptxas reports each function under "Function properties for <name>" (the stack and
  // spill line follows) and then "Used <n> registers" for entry functions; a module may
  // hold other functions, so only the lines after our kernel's header count.
  bool ours = false;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t nl = log.find('\n', pos);
    std::string line = log.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? log.size() : nl + 1;
    if (line.find("Function properties for ") != std::string::npos) {
      std::string name = line.substr(line.find("Function properties for ") + 24);
      while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
      ours = name == kernel;
      continue;
    }
    if (line.find("Compiling entry function") != std::string::npos) {
      ours = line.find("'" + kernel + "'") != std::string::npos;
      continue;
    }
    if (!ours) continue;
    if (int64_t v = number_before(line, "bytes stack frame"); v >= 0) info.stack_bytes = v;
    if (int64_t v = number_before(line, "bytes spill stores"); v >= 0) info.spill_store_bytes = v;
    if (int64_t v = number_before(line, "bytes spill loads"); v >= 0) info.spill_load_bytes = v;
    if (size_t u = line.find("Used "); u != std::string::npos && line.find(" registers", u) != std::string::npos)
      info.registers = std::strtoll(line.c_str() + u + 5, nullptr, 10);
  }
  return info;
}

}  // namespace tl::cuda

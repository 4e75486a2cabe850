#include "runtime/hip_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "tl/error.hpp"

namespace tl::hip {
namespace {

// The names libamdhip64 is found under: the unversioned development link (present when
// ROCm's -dev package is), the sonames of ROCm 6 and 5, and ROCm's default prefix for
// installs that are not on the loader's path.
constexpr const char* kLibraryNames[] = {
    "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so"};

template <class F> bool resolve(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace

std::unique_ptr<Api> Api::load(const char* path) {
  // dlopen("") would hand back the main program, which is not HIP.
  if (path == nullptr || *path == '\0') return nullptr;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;
  std::unique_ptr<Api> api(new Api());
  api->lib_ = lib;
  bool ok = true;
#define TL_HIP_REQUIRE(fn) ok = resolve(lib, api->fn, #fn) && ok
  TL_HIP_REQUIRE(hipGetDeviceCount);
  TL_HIP_REQUIRE(hipDeviceGet);
  TL_HIP_REQUIRE(hipDeviceGetAttribute);
  TL_HIP_REQUIRE(hipDeviceGetName);
  TL_HIP_REQUIRE(hipSetDevice);
  TL_HIP_REQUIRE(hipMalloc);
  TL_HIP_REQUIRE(hipFree);
  TL_HIP_REQUIRE(hipMemcpy);
  TL_HIP_REQUIRE(hipMemcpyAsync);
  TL_HIP_REQUIRE(hipMemset);
  TL_HIP_REQUIRE(hipMemsetAsync);
  TL_HIP_REQUIRE(hipStreamCreate);
  TL_HIP_REQUIRE(hipStreamDestroy);
  TL_HIP_REQUIRE(hipStreamSynchronize);
  TL_HIP_REQUIRE(hipDeviceSynchronize);
  TL_HIP_REQUIRE(hipModuleLoadData);
  TL_HIP_REQUIRE(hipModuleUnload);
  TL_HIP_REQUIRE(hipModuleGetFunction);
  TL_HIP_REQUIRE(hipModuleLaunchKernel);
  TL_HIP_REQUIRE(hipEventCreate);
  TL_HIP_REQUIRE(hipEventRecord);
  TL_HIP_REQUIRE(hipEventSynchronize);
  TL_HIP_REQUIRE(hipEventElapsedTime);
  TL_HIP_REQUIRE(hipEventDestroy);
  TL_HIP_REQUIRE(hipGetErrorString);
  TL_HIP_REQUIRE(hipGetLastError);
#undef TL_HIP_REQUIRE
  if (!ok) {
    // Not HIP (or a HIP too old to use): nothing of it has run beyond its constructors,
    // so it is safe to unload again.
    dlclose(lib);
    return nullptr;
  }
  resolve(lib, api->hipInit, "hipInit");
  resolve(lib, api->hipGetErrorName, "hipGetErrorName");
  // HIP 6 exports the new layout under the R0600 name and keeps the old one under the
  // plain name; either holds gcnArchName somewhere, which is all that is read from it.
  if (!resolve(lib, api->hipGetDeviceProperties, "hipGetDevicePropertiesR0600"))
    resolve(lib, api->hipGetDeviceProperties, "hipGetDeviceProperties");
  return api;
}

const Api* Api::get() {
  static std::once_flag once;
  static const Api* instance = nullptr;  // deliberately leaked: usable from static destructors
  std::call_once(once, [] {
    std::vector<const char*> names;
    // TL_HIP_LIBRARY names a runtime to use instead of the one the loader would find.
    if (const char* env = std::getenv("TL_HIP_LIBRARY"); env && *env) names.push_back(env);
    names.insert(names.end(), std::begin(kLibraryNames), std::end(kLibraryNames));
    for (const char* name : names) {
      std::unique_ptr<Api> api = load(name);
      if (!api) continue;
      // The first runtime that loads decides: the other names are the same library.
      if (api->hipInit && api->hipInit(0) != hipSuccess) return;
      int count = 0;
      if (api->hipGetDeviceCount(&count) != hipSuccess || count <= 0) return;
      instance = api.release();
      return;
    }
  });
  return instance;
}

void Api::check(hipError_t err, const char* what) const {
  if (err == hipSuccess) return;
  std::string msg = std::string(what) + ": ";
  if (hipGetErrorName) {
    if (const char* n = hipGetErrorName(err)) msg += std::string(n) + ": ";
  }
  const char* s = hipGetErrorString ? hipGetErrorString(err) : nullptr;
  msg += s ? s : "unknown error";
  msg += " (hipError_t " + std::to_string(err) + ")";
  throw device_error(msg);
}

void check(hipError_t err, const char* what) {
  if (err == hipSuccess) return;
  if (const Api* api = Api::get()) api->check(err, what);
  throw device_error(std::string(what) + ": HIP error " + std::to_string(err) + " (HIP runtime not loaded)");
}

int Api::device_count() const {
  int count = 0;
  return hipGetDeviceCount(&count) == hipSuccess ? count : 0;
}

namespace detail {
std::string find_arch_name(const void* props, size_t size) {
  const auto* p = static_cast<const unsigned char*>(props);
  auto allowed = [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ':' ||
           c == '+' || c == '-' || c == '_';
  };
  std::string best;
  for (size_t i = 0; i + 3 < size; ++i) {
    if ((i > 0 && p[i - 1] != 0) || std::memcmp(p + i, "gfx", 3) != 0) continue;
    size_t j = i;
    while (j < size && j - i < 256 && p[j] != 0 && allowed(p[j])) ++j;
    // Must end in a NUL inside the buffer; a disallowed character disqualifies it.
    if (j < size && p[j] == 0 && j - i > 3 && j - i > best.size())
      best.assign(reinterpret_cast<const char*>(p + i), j - i);
  }
  return best;
}
}  // namespace detail

DeviceInfo Api::device_info(int ordinal) const {
  DeviceInfo info;
  hipDevice_t dev = 0;
  check(hipDeviceGet(&dev, ordinal), "hipDeviceGet");
  char name[256] = {};
  check(hipDeviceGetName(name, sizeof name - 1, dev), "hipDeviceGetName");
  info.name = name;
  check(hipDeviceGetAttribute(&info.multiprocessors, hipDeviceAttributeMultiprocessorCount, ordinal),
        "hipDeviceGetAttribute(MultiprocessorCount)");
  check(hipDeviceGetAttribute(&info.warp_size, hipDeviceAttributeWarpSize, ordinal),
        "hipDeviceGetAttribute(WarpSize)");
  check(hipDeviceGetAttribute(&info.max_shared_bytes, hipDeviceAttributeMaxSharedMemoryPerBlock, ordinal),
        "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)");
  // There is no attribute for the architecture name, and hipDeviceProp_t's layout (hence
  // gcnArchName's offset) differs between ROCm releases. So the properties are read into
  // a zeroed buffer far larger than any layout (about 1.5 KiB in ROCm 6) and scanned for
  // the field that holds a "gfx..." string: fragile only if a future layout put another
  // "gfx"-led string beside it, and the longest is taken so that a marketing name of
  // "gfx942" cannot shadow "gfx942:sramecc+:xnack-".
  if (hipGetDeviceProperties) {
    std::vector<uint64_t> buf(16384 / sizeof(uint64_t), 0);
    if (hipGetDeviceProperties(buf.data(), ordinal) == hipSuccess)
      info.arch = detail::find_arch_name(buf.data(), buf.size() * sizeof(uint64_t));
  }
  return info;
}

hipModule_t Api::load_module(const void* image) const {
  hipModule_t module = nullptr;
  check(hipModuleLoadData(&module, image), "hipModuleLoadData");
  return module;
}

}  // namespace tl::hip

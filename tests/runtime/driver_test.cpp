// Tests for the run-time driver loaders (runtime/hip_api, runtime/cuda_api). The loading
// tests always run; the device tests skip, saying why, where no GPU of the kind exists.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/cuda_api.hpp"
#include "runtime/hip_api.hpp"
#include "tl/error.hpp"

namespace {

namespace hip = tl::hip;
namespace cuda = tl::cuda;

// ---------------------------------------------------------------- loading, no GPU needed

TEST(DriverLoad, MissingLibraryGivesNull) {
  EXPECT_EQ(hip::Api::load("/nonexistent/libamdhip64.so"), nullptr);
  EXPECT_EQ(cuda::Api::load("/nonexistent/libcuda.so.1"), nullptr);
  EXPECT_EQ(hip::Api::load("libtl_no_such_library.so"), nullptr);
  EXPECT_EQ(cuda::Api::load("libtl_no_such_library.so"), nullptr);
  EXPECT_EQ(hip::Api::load(nullptr), nullptr);
  EXPECT_EQ(cuda::Api::load(""), nullptr);  // dlopen("") would be the program itself
}

TEST(DriverLoad, LibraryWithoutTheEntryPointsGivesNull) {
  // A library that loads but is not the driver.
  EXPECT_EQ(hip::Api::load("libc.so.6"), nullptr);
  EXPECT_EQ(cuda::Api::load("libc.so.6"), nullptr);
  EXPECT_EQ(cuda::Api::load("libm.so.6"), nullptr);
}

TEST(DriverLoad, GetIsThreadSafeAndStable) {
  // Many threads racing on the first get() all see the one answer (nullptr on a machine
  // without the driver), and nothing crashes.
  std::vector<const hip::Api*> hips(16);
  std::vector<const cuda::Api*> cudas(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      hips[i] = hip::Api::get();
      cudas[i] = cuda::Api::get();
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(hips[i], hip::Api::get());
    EXPECT_EQ(cudas[i], cuda::Api::get());
  }
  std::printf("HIP runtime: %s; CUDA driver: %s\n", hip::Api::get() ? "present" : "absent",
              cuda::Api::get() ? "present" : "absent");
}

TEST(DriverLoad, FreeCheckThrowsWithoutADriver) {
  EXPECT_NO_THROW(hip::check(hip::hipSuccess, "nothing"));
  EXPECT_NO_THROW(cuda::check(cuda::CUDA_SUCCESS, "nothing"));
  try {
    cuda::check(1, "cuSomething");
    FAIL() << "no throw";
  } catch (const tl::device_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuSomething"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hip::check(1, "hipSomething"), tl::device_error);
}

// The CUDA toolkit's link-time stub exports every entry point but cannot initialise: the
// loader accepts it, and it is exactly the case where get() must give nullptr.
// ptxas's verbose info log, as cuModuleLoadDataEx returns it with CU_JIT_LOG_VERBOSE: the
// resource report's spill and stack figures come from the lines of our kernel only.
TEST(PtxasInfo, ReadsTheKernelsLinesOnly) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Function properties for other\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'rmsnorm_fwd' for 'sm_90'\n"
      "ptxas info    : Function properties for rmsnorm_fwd\n"
      "    296 bytes stack frame, 1024 bytes spill stores, 2060 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 296 bytes cumulative stack size, 392 bytes cmem[0]\n";
  cuda::PtxasInfo p = cuda::parse_ptxas_info(log, "rmsnorm_fwd");
  EXPECT_EQ(p.stack_bytes, 296);
  EXPECT_EQ(p.spill_store_bytes, 1024);
  EXPECT_EQ(p.spill_load_bytes, 2060);
  EXPECT_EQ(p.registers, 255);
  cuda::PtxasInfo o = cuda::parse_ptxas_info(log, "other");
  EXPECT_EQ(o.spill_store_bytes, 4);
  EXPECT_EQ(o.registers, 12);
  // Absent kernel, empty or non-verbose log: nothing known.
  for (const std::string& l : {std::string(), std::string("ptxas info    : 0 bytes gmem\n"), log}) {
    cuda::PtxasInfo n = cuda::parse_ptxas_info(l, "missing");
    EXPECT_EQ(n.stack_bytes, -1);
    EXPECT_EQ(n.spill_store_bytes, -1);
    EXPECT_EQ(n.registers, -1);
  }
}

TEST(DriverLoad, CudaToolkitStubLoadsButCannotInit) {
  std::string stub;
  for (const char* p : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so",
                        "/usr/local/cuda-13.0/lib/stubs/libcuda.so", "/usr/local/cuda-13.0/lib64/stubs/libcuda.so",
                        "/usr/local/cuda-12/lib64/stubs/libcuda.so"})
    if (std::filesystem::exists(p)) stub = p;
  if (stub.empty()) GTEST_SKIP() << "no CUDA toolkit stub libcuda.so here";
  auto api = cuda::Api::load(stub.c_str());
  ASSERT_NE(api, nullptr) << stub << " lacks an entry point the loader requires";
  const cuda::CUresult err = api->cuInit(0);
  EXPECT_NE(err, cuda::CUDA_SUCCESS);
  EXPECT_THROW(api->check(err, "cuInit"), tl::device_error);
}

TEST(HipArchName, FoundWithoutKnowingTheLayout) {
  std::vector<char> props(4096, 0);
  auto put = [&](size_t at, const char* s) { std::memcpy(props.data() + at, s, std::strlen(s) + 1); };
  put(0, "AMD Instinct MI300X");
  put(300, "xgfx_not_a_field_start");
  put(700, "gfx");  // too short to be a name
  put(1160, "gfx942:sramecc+:xnack-");
  put(2000, "gfx 942");  // a space: not an arch name
  EXPECT_EQ(hip::detail::find_arch_name(props.data(), props.size()), "gfx942:sramecc+:xnack-");
  // A marketing name that is just the processor does not shadow the full arch name.
  put(0, "gfx1100");
  put(1160, "gfx1100:xnack-");
  EXPECT_EQ(hip::detail::find_arch_name(props.data(), props.size()), "gfx1100:xnack-");
  // Not NUL-terminated inside the buffer: rejected, no read past the end.
  std::vector<char> tail(8, 0);
  std::memcpy(tail.data() + 2, "gfx90a", 6);
  EXPECT_EQ(hip::detail::find_arch_name(tail.data(), tail.size()), "");
  std::vector<char> zeros(64, 0);
  EXPECT_EQ(hip::detail::find_arch_name(zeros.data(), zeros.size()), "");
  hip::DeviceInfo info;
  info.arch = "gfx942:sramecc+:xnack-";
  EXPECT_EQ(info.processor(), "gfx942");
}

// ---------------------------------------------------------------- HIP, where an AMD GPU is

#define TL_REQUIRE_HIP(api)                                                              \
  const hip::Api* api = hip::Api::get();                                                 \
  if (api == nullptr) GTEST_SKIP() << "no AMD GPU (libamdhip64 not found, or no device)"; \
  api->check(api->hipSetDevice(0), "hipSetDevice")

TEST(HipDriver, DeviceInfo) {
  TL_REQUIRE_HIP(hip);
  ASSERT_GT(hip->device_count(), 0);
  const hip::DeviceInfo info = hip->device_info(0);
  std::printf("%s, %s, %d CUs, wave%d, %d bytes LDS\n", info.name.c_str(), info.arch.c_str(),
              info.multiprocessors, info.warp_size, info.max_shared_bytes);
  EXPECT_EQ(info.arch.rfind("gfx", 0), 0u) << info.arch;
  EXPECT_TRUE(info.warp_size == 32 || info.warp_size == 64) << info.warp_size;
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.max_shared_bytes, 0);
}

TEST(HipDriver, MemoryRoundTrip) {
  TL_REQUIRE_HIP(hip);
  const size_t n = 1 << 20;
  void* a = nullptr;
  void* b = nullptr;
  hip->check(hip->hipMalloc(&a, n), "hipMalloc");
  hip->check(hip->hipMalloc(&b, n), "hipMalloc");
  hip->check(hip->hipMemset(a, 0xab, n), "hipMemset");
  std::vector<uint8_t> host(n, 0);
  hip->check(hip->hipMemcpy(host.data(), a, n, hip::hipMemcpyDeviceToHost), "hipMemcpy D2H");
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 0xab) << i;
  for (size_t i = 0; i < n; ++i) host[i] = uint8_t(i * 7);
  hip::hipStream_t stream = nullptr;
  hip->check(hip->hipStreamCreate(&stream), "hipStreamCreate");
  hip->check(hip->hipMemcpyAsync(a, host.data(), n, hip::hipMemcpyHostToDevice, stream), "hipMemcpyAsync H2D");
  hip->check(hip->hipMemcpyAsync(b, a, n, hip::hipMemcpyDeviceToDevice, stream), "hipMemcpyAsync D2D");
  std::vector<uint8_t> back(n, 0);
  hip->check(hip->hipMemcpyAsync(back.data(), b, n, hip::hipMemcpyDeviceToHost, stream), "hipMemcpyAsync D2H");
  hip->check(hip->hipStreamSynchronize(stream), "hipStreamSynchronize");
  EXPECT_EQ(back, host);
  hip->check(hip->hipStreamDestroy(stream), "hipStreamDestroy");
  hip->check(hip->hipFree(a), "hipFree");
  hip->check(hip->hipFree(b), "hipFree");
  hip->check(hip->hipGetLastError(), "hipGetLastError");
}

TEST(HipDriver, EventsTimeWork) {
  TL_REQUIRE_HIP(hip);
  const size_t n = size_t(256) << 20;
  void* a = nullptr;
  hip->check(hip->hipMalloc(&a, n), "hipMalloc");
  hip::hipEvent_t start = nullptr, stop = nullptr;
  hip->check(hip->hipEventCreate(&start), "hipEventCreate");
  hip->check(hip->hipEventCreate(&stop), "hipEventCreate");
  hip->check(hip->hipEventRecord(start, nullptr), "hipEventRecord");
  for (int i = 0; i < 4; ++i) hip->check(hip->hipMemsetAsync(a, i, n, nullptr), "hipMemsetAsync");
  hip->check(hip->hipEventRecord(stop, nullptr), "hipEventRecord");
  hip->check(hip->hipEventSynchronize(stop), "hipEventSynchronize");
  float ms = 0;
  hip->check(hip->hipEventElapsedTime(&ms, start, stop), "hipEventElapsedTime");
  EXPECT_GT(ms, 0.0f);
  hip->check(hip->hipEventDestroy(start), "hipEventDestroy");
  hip->check(hip->hipEventDestroy(stop), "hipEventDestroy");
  hip->check(hip->hipFree(a), "hipFree");
}

TEST(HipDriver, BadCodeObjectThrows) {
  TL_REQUIRE_HIP(hip);
  // No kernel is hand-written here (a code object needs the compiler; the codegen tests
  // load real ones); but garbage must be refused with a device_error, not a crash.
  std::vector<char> garbage(4096, 0x5a);
  EXPECT_THROW(hip->load_module(garbage.data()), tl::device_error);
  try {
    hip->check(1, "hipSomething");
  } catch (const tl::device_error& e) {
    EXPECT_NE(std::string(e.what()).find("hipSomething: "), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- CUDA, where an NVIDIA GPU is

#define TL_REQUIRE_CUDA(api)                                                                 \
  const cuda::Api* api = cuda::Api::get();                                                   \
  if (api == nullptr) GTEST_SKIP() << "no NVIDIA GPU (libcuda.so.1 not found, or no device)"; \
  api->bind(0)

// out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x
constexpr const char* kStoreTidPtx = R"(
.version 7.8
.target sm_80
.address_size 64

.visible .entry store_tid(
    .param .u64 out
)
{
    .reg .b32 %r<5>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r4, %r2, %r3, %r1;
    mul.wide.s32 %rd3, %r4, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r1;
    ret;
}
)";

// One block: smem[i] = i for i < n (n words of dynamic shared memory), then
// out[i] = smem[n - 1 - i].
constexpr const char* kSmemReversePtx = R"(
.version 7.8
.target sm_80
.address_size 64

.extern .shared .align 16 .b8 dsmem[];

.visible .entry smem_reverse(
    .param .u64 out,
    .param .u32 n
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, dsmem;
    mov.u32 %r5, %r2;
FILL:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra FILLED;
    shl.b32 %r6, %r5, 2;
    add.u32 %r7, %r4, %r6;
    st.shared.u32 [%r7], %r5;
    add.u32 %r5, %r5, %r3;
    bra FILL;
FILLED:
    bar.sync 0;
    mov.u32 %r5, %r2;
COPY:
    setp.ge.u32 %p2, %r5, %r1;
    @%p2 bra DONE;
    sub.u32 %r6, %r1, %r5;
    sub.u32 %r6, %r6, 1;
    shl.b32 %r6, %r6, 2;
    add.u32 %r7, %r4, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r8;
    add.u32 %r5, %r5, %r3;
    bra COPY;
DONE:
    ret;
}
)";

// Like store_tid, with an undefined register and an unknown instruction in it.
constexpr const char* kBrokenPtx = R"(
.version 7.8
.target sm_80
.address_size 64

.visible .entry broken(
    .param .u64 out
)
{
    .reg .b32 %r<2>;
    mov.u32 %r1, %tid.x;
    frobnicate.u32 %r1, %r9;
    ret;
}
)";

bool has_sm80(const cuda::Api* cu) { return cu->device_info(0).cc_major >= 8; }

TEST(CudaDriver, DeviceInfo) {
  TL_REQUIRE_CUDA(cu);
  ASSERT_GT(cu->device_count(), 0);
  int version = 0;
  cu->check(cu->cuDriverGetVersion(&version), "cuDriverGetVersion");
  const cuda::DeviceInfo info = cu->device_info(0);
  int mode = 0;
  if (cu->cuModuleGetLoadingMode) cu->check(cu->cuModuleGetLoadingMode(&mode), "cuModuleGetLoadingMode");
  std::printf("%s, %s, %d SMs, warp %d, %d bytes shared (opt-in), driver %d, module loading %s\n",
              info.name.c_str(), info.arch().c_str(), info.multiprocessors, info.warp_size,
              info.max_shared_optin, version, mode == cuda::CU_MODULE_LAZY_LOADING ? "lazy" : "eager");
  EXPECT_FALSE(info.name.empty());
  EXPECT_GT(version, 0);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_EQ(info.warp_size, 32);
  EXPECT_GE(info.cc_major, 3);
  EXPECT_EQ(info.arch().rfind("sm_", 0), 0u);
  EXPECT_GE(info.max_shared_optin, 48 * 1024);
  EXPECT_EQ(cu->context(0), cu->context(0));  // retained once
}

TEST(CudaDriver, MemoryRoundTrip) {
  TL_REQUIRE_CUDA(cu);
  const size_t n = 1 << 20;
  cuda::CUdeviceptr a = 0, b = 0;
  cu->check(cu->cuMemAlloc(&a, n), "cuMemAlloc");
  cu->check(cu->cuMemAlloc(&b, n), "cuMemAlloc");
  cu->check(cu->cuMemsetD8(a, 0xab, n), "cuMemsetD8");
  std::vector<uint8_t> host(n, 0);
  cu->check(cu->cuMemcpyDtoH(host.data(), a, n), "cuMemcpyDtoH");
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(host[i], 0xab) << i;
  cu->check(cu->cuMemsetD32(a, 0x01020304u, n / 4), "cuMemsetD32");
  cu->check(cu->cuMemcpyDtoH(host.data(), a, 8), "cuMemcpyDtoH");
  EXPECT_EQ(host[0], 0x04);
  EXPECT_EQ(host[7], 0x01);
  for (size_t i = 0; i < n; ++i) host[i] = uint8_t(i * 7);
  cu->check(cu->cuMemcpyHtoD(a, host.data(), n), "cuMemcpyHtoD");
  cu->check(cu->cuMemcpyDtoD(b, a, n), "cuMemcpyDtoD");
  std::vector<uint8_t> back(n, 0);
  cu->check(cu->cuMemcpyDtoH(back.data(), b, n), "cuMemcpyDtoH");
  EXPECT_EQ(back, host);
  // The same through a stream.
  cuda::CUstream stream = nullptr;
  cu->check(cu->cuStreamCreate(&stream, 0), "cuStreamCreate");
  cu->check(cu->cuMemsetD8Async(b, 0, n, stream), "cuMemsetD8Async");
  cu->check(cu->cuMemcpyHtoDAsync(b + 16, host.data(), 64, stream), "cuMemcpyHtoDAsync");
  std::vector<uint8_t> part(128, 0xff);
  cu->check(cu->cuMemcpyDtoHAsync(part.data(), b, part.size(), stream), "cuMemcpyDtoHAsync");
  cu->check(cu->cuStreamSynchronize(stream), "cuStreamSynchronize");
  for (size_t i = 0; i < part.size(); ++i)
    ASSERT_EQ(part[i], i >= 16 && i < 80 ? host[i - 16] : 0) << i;
  cu->check(cu->cuStreamDestroy(stream), "cuStreamDestroy");
  cu->check(cu->cuMemFree(a), "cuMemFree");
  cu->check(cu->cuMemFree(b), "cuMemFree");
}

TEST(CudaDriver, PtxKernelRuns) {
  TL_REQUIRE_CUDA(cu);
  if (!has_sm80(cu)) GTEST_SKIP() << "the test PTX targets sm_80";
  cuda::CUmodule module = cu->load_module(kStoreTidPtx);
  cuda::CUfunction fn = nullptr;
  cu->check(cu->cuModuleGetFunction(&fn, module, "store_tid"), "cuModuleGetFunction");
  const unsigned blocks = 4, threads = 128, n = blocks * threads;
  cuda::CUdeviceptr out = 0;
  cu->check(cu->cuMemAlloc(&out, n * sizeof(int32_t)), "cuMemAlloc");
  cu->check(cu->cuMemsetD32(out, 0xffffffffu, n), "cuMemsetD32");
  void* params[] = {&out};
  cu->check(cu->cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  cu->check(cu->cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<int32_t> host(n, -1);
  cu->check(cu->cuMemcpyDtoH(host.data(), out, n * sizeof(int32_t)), "cuMemcpyDtoH");
  for (unsigned i = 0; i < n; ++i) ASSERT_EQ(host[i], int32_t(i % threads)) << i;
  cu->check(cu->cuMemFree(out), "cuMemFree");
  cu->check(cu->cuModuleUnload(module), "cuModuleUnload");
}

// With CU_JIT_LOG_VERBOSE the JIT's info log carries ptxas's resource lines, and they
// agree with the driver's own function attributes.
TEST(CudaDriver, JitInfoLogHasPtxasResources) {
  TL_REQUIRE_CUDA(cu);
  if (!has_sm80(cu)) GTEST_SKIP() << "the test PTX targets sm_80";
  std::string info;
  // The driver's JIT cache skips ptxas (and its log) for PTX it has compiled before, in
  // this process (the other tests load store_tid too) or an earlier one: a PTX text of its
  // own (a comment naming the process and time) makes this load run ptxas.
  std::string ptx = std::string(kStoreTidPtx) + fmt::format("\n// jit-info-log test {} {}\n", ::getpid(),
                                                               std::chrono::steady_clock::now().time_since_epoch().count());
  cuda::CUmodule module = cu->load_module(ptx.c_str(), &info);
  cuda::CUfunction fn = nullptr;
  cu->check(cu->cuModuleGetFunction(&fn, module, "store_tid"), "cuModuleGetFunction");
  int regs = 0, local = -1;
  cu->check(cu->cuFuncGetAttribute(&regs, cuda::CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute(NUM_REGS)");
  cu->check(cu->cuFuncGetAttribute(&local, cuda::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn), "cuFuncGetAttribute");
  cuda::PtxasInfo p = cuda::parse_ptxas_info(info, "store_tid");
  std::printf("[measured] store_tid: %d registers, %d local bytes; ptxas log:\n%s\n", regs, local, info.c_str());
  EXPECT_GT(regs, 0);
  EXPECT_EQ(p.registers, regs) << info;
  EXPECT_EQ(p.spill_store_bytes, 0) << info;
  EXPECT_EQ(p.spill_load_bytes, 0) << info;
  EXPECT_EQ(p.stack_bytes, local) << info;
  cu->check(cu->cuModuleUnload(module), "cuModuleUnload");
}

TEST(CudaDriver, LargeDynamicSharedMemory) {
  TL_REQUIRE_CUDA(cu);
  if (!has_sm80(cu)) GTEST_SKIP() << "the test PTX targets sm_80";
  const unsigned words = 16384, bytes = words * 4;  // 64 KiB: past the 48 KiB default
  if (cu->device_info(0).max_shared_optin < int(bytes)) GTEST_SKIP() << "less than 64 KiB shared memory";
  cuda::CUmodule module = cu->load_module(kSmemReversePtx);
  cuda::CUfunction fn = nullptr;
  cu->check(cu->cuModuleGetFunction(&fn, module, "smem_reverse"), "cuModuleGetFunction");
  cuda::CUdeviceptr out = 0;
  cu->check(cu->cuMemAlloc(&out, bytes), "cuMemAlloc");
  unsigned n = words;
  void* params[] = {&out, &n};
  // Without opting in, 64 KiB is refused at launch.
  EXPECT_NE(cu->cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, bytes, nullptr, params, nullptr), cuda::CUDA_SUCCESS);
  cu->check(cu->cuFuncSetAttribute(fn, cuda::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)),
            "cuFuncSetAttribute");
  cu->check(cu->cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, bytes, nullptr, params, nullptr), "cuLaunchKernel");
  cu->check(cu->cuCtxSynchronize(), "cuCtxSynchronize");
  std::vector<uint32_t> host(words, 0);
  cu->check(cu->cuMemcpyDtoH(host.data(), out, bytes), "cuMemcpyDtoH");
  for (unsigned i = 0; i < words; ++i) ASSERT_EQ(host[i], words - 1 - i) << i;
  cu->check(cu->cuMemFree(out), "cuMemFree");
  cu->check(cu->cuModuleUnload(module), "cuModuleUnload");
}

TEST(CudaDriver, EventsTimeWork) {
  TL_REQUIRE_CUDA(cu);
  const size_t n = size_t(256) << 20;
  cuda::CUdeviceptr a = 0;
  cu->check(cu->cuMemAlloc(&a, n), "cuMemAlloc");
  cuda::CUstream stream = nullptr;
  cu->check(cu->cuStreamCreate(&stream, 0), "cuStreamCreate");
  cuda::CUevent start = nullptr, stop = nullptr;
  cu->check(cu->cuEventCreate(&start, 0), "cuEventCreate");
  cu->check(cu->cuEventCreate(&stop, 0), "cuEventCreate");
  cu->check(cu->cuEventRecord(start, stream), "cuEventRecord");
  for (int i = 0; i < 4; ++i) cu->check(cu->cuMemsetD8Async(a, uint8_t(i), n, stream), "cuMemsetD8Async");
  cu->check(cu->cuEventRecord(stop, stream), "cuEventRecord");
  cu->check(cu->cuEventSynchronize(stop), "cuEventSynchronize");
  float ms = 0;
  cu->check(cu->cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  std::printf("4 x 256 MiB memset: %.3f ms\n", ms);
  EXPECT_GT(ms, 0.0f);
  cu->check(cu->cuEventDestroy(start), "cuEventDestroy");
  cu->check(cu->cuEventDestroy(stop), "cuEventDestroy");
  cu->check(cu->cuStreamDestroy(stream), "cuStreamDestroy");
  cu->check(cu->cuMemFree(a), "cuMemFree");
}

TEST(CudaDriver, BrokenPtxReportsTheJitLog) {
  TL_REQUIRE_CUDA(cu);
  try {
    cu->load_module(kBrokenPtx);
    FAIL() << "broken PTX loaded";
  } catch (const tl::device_error& e) {
    const std::string msg = e.what();
    std::printf("%s\n", msg.c_str());
    EXPECT_NE(msg.find("cuModuleLoadData"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CUDA_ERROR_INVALID_PTX"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ptxas"), std::string::npos) << "no JIT log in: " << msg;
    EXPECT_NE(msg.find("frobnicate"), std::string::npos) << "no JIT log in: " << msg;
  }
  std::string log;
  cuda::CUmodule module = nullptr;
  EXPECT_NE(cu->load_module_logged(&module, kBrokenPtx, &log), cuda::CUDA_SUCCESS);
  EXPECT_FALSE(log.empty());
}

TEST(CudaDriver, CheckNamesTheError) {
  TL_REQUIRE_CUDA(cu);
  try {
    cu->check(1, "cuSomething");
    FAIL() << "no throw";
  } catch (const tl::device_error& e) {
    EXPECT_NE(std::string(e.what()).find("cuSomething: CUDA_ERROR_INVALID_VALUE"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, EveryThreadBindsItsOwnContext) {
  TL_REQUIRE_CUDA(cu);
  std::vector<int> ok(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      cu->bind(0);  // a new thread has no current context until it binds
      cuda::CUdeviceptr p = 0;
      if (cu->cuMemAlloc(&p, 4096) != cuda::CUDA_SUCCESS) return;
      uint32_t v = 0;
      const bool good = cu->cuMemsetD32(p, 0x1000u + t, 1024) == cuda::CUDA_SUCCESS &&
                        cu->cuMemcpyDtoH(&v, p + 4, 4) == cuda::CUDA_SUCCESS && v == 0x1000u + t;
      ok[t] = good && cu->cuMemFree(p) == cuda::CUDA_SUCCESS;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_TRUE(ok[t]) << "thread " << t;
}

}  // namespace

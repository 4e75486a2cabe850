// How the CPU device runs a launch: on the launching thread when the kernel's frame fits
// its stack (small grids then cost no thread hand-off), on the pool's big-stack workers
// otherwise, and always in the IEEE default floating-point environment.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pthread.h>

#include <cfenv>
#include <cmath>
#include <cstring>
#include <functional>

#include "support/reference.hpp"

using namespace tltest;

namespace {

// Runs fn on a new thread with a stack of `bytes`, and joins it.
void on_thread_with_stack(size_t bytes, std::function<void()> fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t t;
  auto entry = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&t, &attr, entry, &fn), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
}

// x * sum(x) over a tile of BLOCK elements: x must stay live across the reduction, so
// the CPU lowering keeps the whole tile in its frame.
auto scale_by_sum_kernel() {
  return tl::kernel("scale_by_sum", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto row = tl::program_id(0).to<tl::i64>() * BLOCK;
    auto v = tl::load(x + row + c);
    tl::store(y + row + c, v * tl::sum(v, 0));
  });
}

void check_scale_by_sum(int rows, int block) {
  auto dev = tl::cpu_device();
  std::vector<float> hx = random_floats(size_t(rows) * block, -1.0f, 1.0f);
  auto x = dev.alloc<tl::f32>(hx.size());
  x.upload(hx);
  auto y = dev.alloc<tl::f32>(hx.size());
  poison(y);
  auto k = scale_by_sum_kernel();
  k[tl::grid(rows)].on(dev)(x, y, block);
  std::vector<float> got = y.download();
  for (int r = 0; r < rows; ++r) {
    double s = 0, magnitude = 0;
    for (int i = 0; i < block; ++i) {
      s += hx[size_t(r) * block + i];
      magnitude += std::abs(hx[size_t(r) * block + i]);
    }
    for (int i = 0; i < block; ++i) {
      size_t at = size_t(r) * block + i;
      // An f32 sum of `block` terms is off by a small multiple of eps * sum |x|.
      double tol = std::abs(hx[at]) * 1e-7 * magnitude + 1e-6 * std::abs(hx[at] * s) + 1e-6;
      ASSERT_NEAR(got[at], hx[at] * s, tol) << "row " << r << " element " << i;
    }
  }
}

TEST(CpuLaunch, TheReportGivesTheKernelsFrame) {
  auto k = scale_by_sum_kernel();
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto meta = nlohmann::json::parse(k.compile("cpu", {}, p, p, 1 << 18));
  // 2^18 f32 kept across the reduction: at least 1 MiB of frame.
  EXPECT_GE(meta["report"]["stack_bytes"].get<int64_t>(), int64_t(1) << 20) << meta["report"].dump();
  auto small = nlohmann::json::parse(k.compile("cpu", {}, p, p, 16));
  EXPECT_LT(small["report"]["stack_bytes"].get<int64_t>(), 4096) << small["report"].dump();
}

TEST(CpuLaunch, BigFrameFromASmallStackRunsOnTheWorkers) {
  // A 1 MiB tile launched from a thread with 256 KiB of stack: running it there would
  // overflow; the device must hand it to the pool (64 MiB stacks) and get it right.
  on_thread_with_stack(256 << 10, [] {
    check_scale_by_sum(1, 1 << 18);
    check_scale_by_sum(3, 1 << 18);
  });
}

TEST(CpuLaunch, SmallGridsRunOnTheLaunchingThreadAndLargeOnesOnAll) {
  check_scale_by_sum(1, 64);
  check_scale_by_sum(2, 64);
  check_scale_by_sum(257, 64);
  on_thread_with_stack(256 << 10, [] { check_scale_by_sum(1, 64); });
}

TEST(CpuLaunch, KernelsRunInTheDefaultFloatingPointEnvironment) {
  // The launching thread rounds upward; the kernel (run on this thread or a worker)
  // must still round to nearest, and the thread gets its own mode back.
  auto dev = tl::cpu_device();
  auto k = tl::kernel("divide", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> out) {
    auto c = tl::arange(0, 256);
    tl::store(out + c, tl::load(a + c) / tl::load(b + c));
  });
  std::vector<float> ha = random_floats(256, 0.5f, 2.0f), hb = random_floats(256, 0.5f, 2.0f);
  auto a = dev.alloc<tl::f32>(256), b = dev.alloc<tl::f32>(256), out = dev.alloc<tl::f32>(256);
  a.upload(ha);
  b.upload(hb);
  for (int grid : {1, 8}) {
    poison(out);
    int saved = std::fegetround();
    ASSERT_EQ(std::fesetround(FE_UPWARD), 0);
    k[tl::grid(grid)].on(dev)(a, b, out);
    int after = std::fegetround();
    std::fesetround(saved);
    EXPECT_EQ(after, FE_UPWARD);
    std::vector<float> got = out.download();
    // The double quotient rounded once to f32 is the correctly rounded f32 quotient.
    for (int i = 0; i < 256; ++i)
      EXPECT_EQ(got[i], float(double(ha[i]) / double(hb[i]))) << "grid " << grid << " element " << i;
  }
}

}  // namespace

// Trace-time constants between run-time arguments (Triton's constexprs anywhere in the
// signature): the kernel receives its run-time arguments alone, in order. The launch once
// passed a slot for every parameter, so a constant before a run-time argument shifted it
// (the run-time argument after it read as 0).
TEST(CpuLaunch, ConstantsBetweenRunTimeArgumentsKeepTheirPlaces) {
  auto k = tl::kernel("interleaved", [](tl::ptr<tl::f32> x, int scale, tl::i32 add, int add2, tl::ptr<tl::f32> y,
                                        tl::i32 n) {
    auto i = tl::arange(0, 16);
    tl::store(y + i, tl::load(x + i, i < n, 0.0f) * float(scale) + (add + add2).to<tl::f32>(), i < n);
  });
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = float(i);
  auto X = upload<tl::ty::f32>(x);
  auto Y = test_device().alloc<tl::ty::f32>(16);
  poison(Y);
  k[tl::grid(1)](X, 3, 100, 1000, Y, 12);
  auto y = Y.download();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[size_t(i)], 3.0f * float(i) + 1100.0f) << i;
  uint32_t past;
  std::memcpy(&past, &y[12], 4);
  EXPECT_EQ(past, 0xABABABABu) << "past n: still the poison, not written";
}

// A program's tiles live on its stack (64 MiB a worker): a chain of nine cumsums of a
// 2^20-element f64 tile, all kept to the end, needs 72 MiB of them, and ran into the
// stack's guard page (SIGSEGV: the host process gone). The compiler refuses such a kernel,
// naming it, the lines of its largest buffers and the limit (codegen/cpu/limits.hpp).
TEST(CpuLaunch, FrameOverTheStackIsACompileError) {
  const unsigned line = __LINE__ + 4;
  auto k = tl::kernel("nine_cumsums", [](tl::ptr<tl::f64> x) {
    auto c = tl::arange(0, 1 << 20);
    std::vector<tl::tile<tl::ty::f64>> sums{tl::load(x + c)};
    for (int i = 0; i < 9; ++i) sums.push_back(tl::cumsum(sums.back(), 0));
    auto total = sums[1];
    for (int i = 2; i <= 9; ++i) total = total + sums[i];
    tl::store(x + c, total);
  });
  auto X = tl::cpu_device().alloc<tl::f64>(1 << 20);
  try {
    k[tl::grid(1)].on(tl::cpu_device())(X);
    ADD_FAILURE() << "no error";
  } catch (const tl::compile_error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(e.file().ends_with("cpu_launch_test.cpp")) << what;
    EXPECT_EQ(e.line(), line) << what;
    EXPECT_NE(what.find("kernel 'nine_cumsums'"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("75497472 bytes at line {} (9 tiles)", line)), std::string::npos) << what;
    EXPECT_NE(what.find("more than the 66060288 (63 MiB) a program may use on the CPU"), std::string::npos) << what;
  }
}

// A tl::shared buffer is a stack array on the CPU: one over the program's stack is a
// trace error at its line (it was a SIGSEGV).
TEST(CpuLaunch, SharedBufferOverTheStackIsATraceError) {
  const unsigned line = __LINE__ + 2;
  auto k = tl::kernel("huge_shared", [](tl::ptr<tl::f32> x) {
    auto s = tl::shared<tl::f32>({32, 1024, 1024});
    auto o = tl::expand_dims(tl::arange(0, 1024), 1) * 1024 + tl::expand_dims(tl::arange(0, 1024), 0);
    s[0].store(tl::load(x + o));
    tl::store(x + o, s[0].load() * 2.0f);
  });
  auto X = tl::cpu_device().alloc<tl::f32>(1 << 20);
  try {
    k[tl::grid(1)].on(tl::cpu_device())(X);
    ADD_FAILURE() << "no error";
  } catch (const tl::trace_error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("134217728 bytes of shared memory asked"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the CPU (shared buffers live on the program's stack)"), std::string::npos)
        << e.what();
  }
}

// Within the limit, a big frame still runs: one 2^20-element f64 cumsum (two 8 MiB tiles).
TEST(CpuLaunch, BigFrameWithinTheLimitRuns) {
  auto k = tl::kernel("one_cumsum", [](tl::ptr<tl::f64> x) {
    auto c = tl::arange(0, 1 << 20);
    tl::store(x + c, tl::cumsum(tl::load(x + c), 0));
  });
  auto X = tl::cpu_device().alloc<tl::f64>(1 << 20);
  X.upload(std::vector<double>(1 << 20, 1.0));
  k[tl::grid(1)].on(tl::cpu_device())(X);
  auto got = X.download();
  EXPECT_EQ(got[0], 1.0);
  EXPECT_EQ(got[(1 << 20) - 1], double(1 << 20));
}

// alloc<f32>(2^62): the bytes (2^64) wrapped to 0, and the buffer said size() 2^62. A typed
// error at the caller's line now, on every device; and so is a size no memory holds.
TEST(CpuLaunch, AllocationsTooLargeAreTypedErrors) {
  for (const tl::device& d : {tl::cpu_device(), test_device()}) {
    SCOPED_TRACE(d.name());
    const unsigned line = __LINE__ + 2;
    try {
      auto b = d.alloc<tl::f32>(size_t(1) << 62);
      ADD_FAILURE() << "a buffer of " << b.size() << " elements and " << b.bytes() << " bytes";
    } catch (const tl::device_error& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(std::string(e.what()).find("more bytes than the address space holds"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)d.alloc<tl::f32>(size_t(1) << 60), tl::device_error);
    EXPECT_THROW((void)d.alloc<tl::f64>(SIZE_MAX / 8), tl::device_error);
  }
}

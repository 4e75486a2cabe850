// The cached launch path (runtime/launch.cpp): a launch of a specialization already built
// is one look-up of its launch key, without a lock or an allocation, and the key tells
// every specialization apart (constants, launch options, what the arguments specialize
// to, the device). Run on a device whose launches do nothing (tests/support/null_device.hpp)
// where the launch path alone is measured, and on the CPU device where results are checked.
// In the concurrency label: tools/sanitize.sh runs it under ThreadSanitizer.
#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "support/null_device.hpp"
#include "support/reference.hpp"

namespace {

// Every allocation of this process, counted while `g_counting` (a test's window).
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocations{0};

}  // namespace

// Under AddressSanitizer the global operator new belongs to its runtime: libLLVM (not
// instrumented) ends up freeing with ASan's bookkeeping what one replaced here allocated
// (alloc-dealloc-mismatch). The count, and the test that reads it, are then left out.
#if defined(__SANITIZE_ADDRESS__)
#define TL_COUNTS_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_COUNTS_ALLOCATIONS 0
#endif
#endif
#ifndef TL_COUNTS_ALLOCATIONS
#define TL_COUNTS_ALLOCATIONS 1
#endif

#if TL_COUNTS_ALLOCATIONS
void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
#endif

using namespace tltest;

namespace {

// y = x * SCALE + n over BLOCK elements of a program.
auto affine = tl::kernel("cached_affine", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, int BLOCK, int SCALE) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
  auto m = offs < n;
  tl::store(y + offs, tl::load(x + offs, m) * float(SCALE) + n.to<tl::f32>(), m);
});

// The argument count of a kernel with many parameters, all run-time but one.
auto many = tl::kernel("cached_many", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> c, tl::ptr<tl::f32> d,
                                         tl::i32 i, tl::i32 j, tl::f32 f, tl::i64 k, int BLOCK) {
  auto offs = tl::arange(0, BLOCK);
  tl::store(d + offs, tl::load(a + offs) + tl::load(b + offs) * tl::load(c + offs) + (i + j).to<tl::f32>() * f +
                          k.to<tl::f32>());
});

}  // namespace

// After the first launch of each specialization, launches allocate nothing: the arguments
// and the key are packed into reused storage, the trace callback is a reference, the
// default device a thread's copy.
TEST(CachedLaunch, AllocatesNothing) {
  if (!TL_COUNTS_ALLOCATIONS)
    GTEST_SKIP() << "allocations are not counted under AddressSanitizer (its runtime owns operator new)";
  tl::device dev = NullLaunchDevice::make();
  auto& null = static_cast<NullLaunchDevice&>(*dev.impl());
  auto x = dev.alloc<tl::f32>(4096), y = dev.alloc<tl::f32>(4096);
  // Every form once (the first launches trace and build).
  affine[tl::grid(4)].on(dev)(x, y, 4000, 1024, 3);
  affine[tl::grid(4)].with({.num_warps = 2}).on(dev)(x, y, 4000, 1024, 3);
  many[tl::grid(1)].on(dev)(x, x, y, y, 3, 4, 0.5f, int64_t(7), 256);
  const tl::device saved = tl::default_device();
  tl::set_default_device(dev);
  affine[tl::grid(4)](x, y, 4000, 1024, 5);
  const uint64_t before = null.launches.load();

  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 1000; ++i) {
    affine[tl::grid(4)].on(dev)(x, y, 4000, 1024, 3);
    affine[tl::grid(4)].with({.num_warps = 2}).on(dev)(x, y, 4000, 1024, 3);
    many[tl::grid(1)].on(dev)(x, x, y, y, 3, 4, 0.5f, int64_t(7), 256);
    affine[tl::grid(4)](x, y, 4000, 1024, 5);  // the default device
  }
  g_counting = false;
  tl::set_default_device(saved);
  EXPECT_EQ(g_allocations.load(), 0u) << "allocations in 4000 cached launches";
  EXPECT_EQ(null.launches.load() - before, 4000u);
  EXPECT_EQ(null.last_slots.load(), 3u);  // (affine: the constants take no slot)
  // (The count sees what allocates: a specialization's first launch.)
  g_counting = true;
  affine[tl::grid(4)].on(dev)(x, y, 4000, 1024, 9);
  g_counting = false;
  EXPECT_GT(g_allocations.load(), 100u);
}

// More specializations of one kernel than the lock-free look-up keeps, launched in turns,
// each checked: the key tells apart constants, options, an integer argument equal to 1
// (a specialization), pointer alignment, and devices.
TEST(CachedLaunch, KeysTellSpecializationsApart) {
  const tl::device dev = test_device();
  const int n = 3000;
  std::vector<float> hx;  // small integers: every result exact, whatever the order of operations
  for (int v : random_ints(size_t(n) + 1, -100, 100)) hx.push_back(float(v));
  auto x = dev.alloc<tl::f32>(size_t(n) + 1), y = dev.alloc<tl::f32>(size_t(n) + 1);
  x.upload(hx);
  struct Variant {
    int block, scale, warps, n;
    bool offset;  // x and y one element in: not 16-byte aligned
  };
  const std::vector<Variant> variants{{1024, 3, 4, n, false}, {512, 3, 4, n, false},  {1024, 2, 4, n, false},
                                      {1024, 3, 1, n, false}, {1024, 3, 4, 1, false},  {1024, 3, 4, n, true},
                                      {256, -1, 2, 17, true}};
  for (int round = 0; round < 3; ++round)
    for (const Variant& v : variants) {
      poison(y);
      const float* xp = x.data() + (v.offset ? 1 : 0);
      float* yp = y.data() + (v.offset ? 1 : 0);
      affine[tl::grid(tl::cdiv(v.n, v.block))].with({.num_warps = v.warps}).on(dev)(xp, yp, v.n, v.block, v.scale);
      auto got = y.download();
      for (int i = 0; i < v.n; ++i) {
        const size_t at = size_t(i) + (v.offset ? 1 : 0);
        ASSERT_EQ(got[at], hx[at] * float(v.scale) + float(v.n))
            << "round " << round << " block " << v.block << " scale " << v.scale << " warps " << v.warps << " n "
            << v.n << " offset " << v.offset << " element " << i;
      }
    }
  // One kernel on two devices: each its own code, each launch on its own device.
  tl::device null = NullLaunchDevice::make();
  auto& nd = static_cast<NullLaunchDevice&>(*null.impl());
  auto nx = null.alloc<tl::f32>(1024), ny = null.alloc<tl::f32>(1024);
  affine[tl::grid(1)].on(null)(nx, ny, 1000, 1024, 3);
  affine[tl::grid(1)].on(dev)(x, y, n, 1024, 3);
  affine[tl::grid(1)].on(null)(nx, ny, 1000, 1024, 3);
  EXPECT_EQ(nd.launches.load(), 2u);
}

// launch_pdl is not part of the code: the same specialization, the flag passed to the
// device at each launch (which the CPU and AMD ignore).
TEST(CachedLaunch, LaunchPdlReachesTheDeviceWithoutAnotherSpecialization) {
  tl::device dev = NullLaunchDevice::make();
  auto& null = static_cast<NullLaunchDevice&>(*dev.impl());
  auto x = dev.alloc<tl::f32>(1024), y = dev.alloc<tl::f32>(1024);
  affine[tl::grid(1)].on(dev)(x, y, 1000, 1024, 7);
  const uint64_t traces = tl::stats().traces;
  affine[tl::grid(1)].with({.launch_pdl = true}).on(dev)(x, y, 1000, 1024, 7);
  EXPECT_TRUE(null.last_pdl.load());
  affine[tl::grid(1)].on(dev)(x, y, 1000, 1024, 7);
  EXPECT_FALSE(null.last_pdl.load());
  EXPECT_EQ(tl::stats().traces, traces);
}

// Threads launching the same kernel at once, cached and not: every launch lands, and the
// CPU's results are right (ThreadSanitizer checks the look-up's publication).
TEST(CachedLaunch, ThreadsLaunchAtOnce) {
  tl::device dev = NullLaunchDevice::make();
  auto& null = static_cast<NullLaunchDevice&>(*dev.impl());
  auto x = dev.alloc<tl::f32>(4096), y = dev.alloc<tl::f32>(4096);
  const tl::device cpu = test_device();
  const int n = 2048;
  std::vector<float> hx;
  for (int v : random_ints(size_t(n), -100, 100)) hx.push_back(float(v));
  std::vector<tl::buffer<tl::ty::f32>> outs;
  auto cx = cpu.alloc<tl::f32>(size_t(n));
  cx.upload(hx);
  const int threads = 4, per_thread = 2000;
  for (int t = 0; t < threads; ++t) outs.push_back(cpu.alloc<tl::f32>(size_t(n)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i)  // six keys between four threads: some cached, some not yet
        affine[tl::grid(4)].with({.num_warps = 1 << (i % 3)}).on(dev)(x, y, 4000, 1024, 1 + (i + t) % 2);
      affine[tl::grid(tl::cdiv(n, 256))].on(cpu)(cx, outs[size_t(t)], n, 256, t + 1);
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(null.launches.load(), uint64_t(threads) * per_thread);
  for (int t = 0; t < threads; ++t) {
    auto got = outs[size_t(t)].download();
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], hx[size_t(i)] * float(t + 1) + float(n)) << t << " " << i;
  }
}

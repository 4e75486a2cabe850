// Several GPUs in one process (issue 44): one kernel launched on every GPU of the machine
// at once, from one thread per device, computes the right values everywhere; it is
// compiled once and the other devices take it from the shared cache. Skipped, with a
// message, where there are fewer than two GPUs of one kind. And, on any machine, the
// cache's side of it: two kernel objects of one program (as two devices' specializations
// are) launched at once compile it once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "runtime/cache.hpp"
#include "support/reference.hpp"

namespace fs = std::filesystem;

namespace {

const bool g_env = [] {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-multi-gpu-{}-{}", getpid(), std::rand());
  fs::create_directories(d);
  setenv("TL_CACHE_DIR", d.c_str(), 1);
  unsetenv("TL_ALWAYS_COMPILE");
  return true;
}();

// Every GPU of the test device's kind (TL_DEVICE, else the detected default).
std::vector<tl::device> all_gpus() {
  std::vector<tl::device> out;
  const tl::device_kind kind = tltest::test_device().kind();
  if (kind == tl::device_kind::cpu) return out;
  for (int i = 0;; ++i) {
    try {
      out.push_back(kind == tl::device_kind::cuda ? tl::cuda_device(i) : tl::hip_device(i));
    } catch (const tl::device_error&) {
      break;
    }
  }
  return out;
}

// y = softmax(x) over rows of 256, a row a program: a reduction and math, not only copies.
template <class K> void launch_softmax(K& k, tl::device dev, int rows, int salt, std::string& failure) {
  const int cols = 256;
  std::mt19937_64 rng(uint64_t(salt) * 7919);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> hx(size_t(rows) * cols);
  for (float& v : hx) v = u(rng);
  auto X = dev.alloc<tl::f32>(hx.size()), Y = dev.alloc<tl::f32>(hx.size());
  X.upload(hx);
  tltest::poison(Y);
  k[tl::grid(rows)].on(dev)(X, Y, cols);
  dev.synchronize();
  auto got = Y.download();
  std::vector<double> want(hx.size());
  for (int r = 0; r < rows; ++r) {
    double mx = -1e300, sum = 0;
    for (int c = 0; c < cols; ++c) mx = std::max(mx, double(hx[size_t(r) * cols + c]));
    for (int c = 0; c < cols; ++c) sum += std::exp(double(hx[size_t(r) * cols + c]) - mx);
    for (int c = 0; c < cols; ++c) want[size_t(r) * cols + c] = std::exp(double(hx[size_t(r) * cols + c]) - mx) / sum;
  }
  auto ok = tltest::near(got, want, 1e-5, 1e-7);
  if (!ok) failure = fmt::format("{}: {}", dev.name(), ok.message());
}

auto make_softmax(const char* name) {
  return tl::kernel(name, [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 cols) {
    auto c = tl::arange(0, 256);
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * cols + c);
    auto e = tl::exp(v - tl::max(v, 0));
    tl::store(y + row * cols + c, e / tl::sum(e, 0));
  });
}

size_t entries_named(const std::string& kernel) {
  size_t n = 0;
  for (const auto& e : tl::cache::DiskCache::global().list())
    if (e.meta.value("kernel", "") == kernel) ++n;
  return n;
}

}  // namespace

TEST(MultiGpu, OneKernelOnEveryDeviceFromAThreadEachCompiledOnce) {
  const std::vector<tl::device> gpus = all_gpus();
  if (gpus.size() < 2)
    GTEST_SKIP() << "needs two or more GPUs of one kind; this machine has " << gpus.size()
                 << " (run it on a multi-GPU host: TL_DEVICE=cuda or hip)";
  auto k = make_softmax("multi_gpu_softmax");
  std::set<std::string> targets;
  for (const auto& d : gpus) targets.insert(d.target());
  const tl::jit_stats before = tl::stats();
  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> failures(gpus.size());
    std::vector<std::thread> threads;
    std::atomic<int> go{0};
    for (size_t i = 0; i < gpus.size(); ++i)
      threads.emplace_back([&, i] {
        ++go;
        while (go.load() < int(gpus.size())) std::this_thread::yield();  // all first launches at once
        try {
          launch_softmax(k, gpus[i], 1024 + 64 * int(i), int(i) + 10 * round, failures[i]);
        } catch (const std::exception& e) {
          failures[i] = fmt::format("{}: {}", gpus[i].name(), e.what());
        }
      });
    for (auto& t : threads) t.join();
    for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
  }
  const tl::jit_stats after = tl::stats();
  // One compile per distinct target; every other device took it from the cache.
  EXPECT_EQ(after.compiles - before.compiles, targets.size());
  EXPECT_EQ(after.disk_hits - before.disk_hits, gpus.size() - targets.size());
  EXPECT_EQ(after.launches - before.launches, 2 * gpus.size());
  EXPECT_EQ(entries_named("multi_gpu_softmax"), targets.size());
}

TEST(MultiGpu, TwoKernelObjectsOfOneProgramLaunchedAtOnceCompileItOnce) {
  // Two kernel objects have separate specializations, as two devices do: their first
  // launches at the same moment build one cache key.
  auto a = make_softmax("shared_softmax"), b = make_softmax("shared_softmax");
  const tl::jit_stats before = tl::stats();
  std::string fa, fb;
  std::atomic<int> go{0};
  auto run = [&](auto& k, std::string& failure, int salt) {
    ++go;
    while (go.load() < 2) std::this_thread::yield();
    try {
      launch_softmax(k, tltest::test_device(), 64, salt, failure);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  };
  std::thread ta([&] { run(a, fa, 1); }), tb([&] { run(b, fb, 2); });
  ta.join();
  tb.join();
  EXPECT_TRUE(fa.empty()) << fa;
  EXPECT_TRUE(fb.empty()) << fb;
  const tl::jit_stats after = tl::stats();
  EXPECT_EQ(after.traces - before.traces, 2u);
  EXPECT_EQ(after.compiles - before.compiles, 1u);
  EXPECT_EQ(after.disk_hits - before.disk_hits, 1u);
  EXPECT_EQ(entries_named("shared_softmax"), 1u);
}

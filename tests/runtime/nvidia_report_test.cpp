// The NVIDIA resource report (runtime/cuda_device.cpp, runtime/launch.cpp): after a
// kernel is loaded on an NVIDIA GPU, its report has the driver's figures (registers per
// thread, local memory, static and dynamic shared memory, the most threads a block may
// have) and ptxas's spill stores and loads, in kernel.compile's metadata (what the
// samples' --report prints), in the cache entry a launch stores, and in tl-cache list.
// Skips where there is no NVIDIA GPU; bench/nvidia_report.sh compares the figures with
// Triton's on the H100.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"
#include "support/reference.hpp"

namespace {

using nlohmann::json;

bool have_cuda() {
  try {
    (void)tl::cuda_device(0);
    return true;
  } catch (const tl::device_error&) {
    return false;
  }
}

auto& row_sum() {
  // A cross-warp reduction: shared memory, and a register count that depends on BLOCK.
  static auto k = tl::kernel("report_row_sum", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 cols, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto v = tl::load(x + tl::program_id(0) * cols + c, c < cols, 0.0f);
    tl::store(y + tl::program_id(0), tl::sum(v * v, 0));
  });
  return k;
}

TEST(NvidiaReport, CompileOnTheGpuReportsTheDriversFigures) {
  if (!have_cuda()) GTEST_SKIP() << "no NVIDIA GPU";
  tl::device dev = tl::cuda_device(0);
  auto x = dev.alloc<tl::f32>(4096), y = dev.alloc<tl::f32>(4);
  json m = json::parse(row_sum().compile(dev.target(), {.num_warps = 4}, x.data(), y.data(), 4096, 4096));
  const json& r = m["report"];
  std::printf("[measured] %s\n", r.dump().c_str());
  for (const char* k : {"regs", "local_bytes", "static_shared_bytes", "dynamic_shared_bytes", "max_threads_per_block",
                        "spill_store_bytes", "spill_load_bytes", "stack_bytes"})
    EXPECT_TRUE(r.contains(k)) << k << " missing from " << r.dump();
  EXPECT_GT(r.value("regs", 0), 0);
  EXPECT_LE(r.value("regs", 999), 255);
  EXPECT_GE(r.value("max_threads_per_block", 0), 128);
  // The cross-warp sum goes through shared memory, static or dynamic.
  EXPECT_GT(r.value("static_shared_bytes", 0) + r.value("dynamic_shared_bytes", 0), 0);
  EXPECT_EQ(r.value("spill_store_bytes", -1), 0);  // 32 floats a thread: no spills
}

TEST(NvidiaReport, LaunchStoresTheReportInTheCacheEntry) {
  if (!have_cuda()) GTEST_SKIP() << "no NVIDIA GPU";
  tl::device dev = tl::cuda_device(0);
  auto x = dev.alloc<tl::f32>(8 * 2048), y = dev.alloc<tl::f32>(8);
  row_sum()[tl::grid(8)].on(dev).with({.num_warps = 2})(x, y, 2048, 2048);
  dev.synchronize();
  bool found = false;
  for (const auto& e : tl::cache::DiskCache::global().list()) {
    if (e.meta.value("kernel", "") != "report_row_sum" || e.meta["options"].value("num_warps", 0) != 2) continue;
    found = true;
    EXPECT_GT(e.meta["report"].value("regs", 0), 0) << e.meta.dump();
    EXPECT_TRUE(e.meta["report"].contains("local_bytes")) << e.meta.dump();
  }
  EXPECT_TRUE(found);
}

}  // namespace

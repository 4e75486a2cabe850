// `tl-cache isa` on real entries made by the JIT: the disassembly of an AMD code
// object (made on demand from the stored HSACO) and the PTX of an NVIDIA one.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/reference.hpp"

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

auto make_kernel() {
  return tl::kernel("isa_probe", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(y + i, tl::load(x + i) * 2.0f);
  });
}

}  // namespace

TEST(TlCacheIsa, DisassemblesAmdAndShowsPtxOnDemand) {
  // The process-wide cache is $TL_CACHE_DIR (the test scripts give each run its own).
  const char* dir = std::getenv("TL_CACHE_DIR");
  if (!dir) GTEST_SKIP() << "TL_CACHE_DIR is not set; this test needs a private cache directory";
  const std::string tool = std::string(TL_TEST_BINARY_DIR) + "/tools/tl-cache --dir " + dir;
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto k = make_kernel();
  auto amd = nlohmann::json::parse(k.compile("gfx942", {.num_warps = 4}, p, p, 1024));
  auto nv = nlohmann::json::parse(k.compile("sm_90", {.num_warps = 4}, p, p, 1024));
  std::string isa = run(tool + " isa " + amd["key"].get<std::string>());
  EXPECT_NE(isa.find("global_load_dwordx4"), std::string::npos) << isa.substr(0, 2000);
  EXPECT_NE(isa.find("s_endpgm"), std::string::npos);
  std::string ptx = run(tool + " isa " + nv["key"].get<std::string>());
  EXPECT_NE(ptx.find(".entry"), std::string::npos) << ptx.substr(0, 2000);
  EXPECT_NE(ptx.find("ld.global.v4"), std::string::npos);
  std::string listing = run(tool + " list --kernel isa_probe");
  EXPECT_NE(listing.find("gfx942"), std::string::npos) << listing;
  EXPECT_NE(listing.find("sm_90"), std::string::npos) << listing;
}

// Triton's AMD `tt.pointer_range = 32`, end to end: the same matmul launched with
// tl::buffers (under 2 GiB, so the launch knows every offset fits 31 bits) and with raw
// pointers (sizes unknown) is two specializations; for gfx942 the first's K loop loads B
// with buffer loads, the second's with global loads (convert_to_buffer_ops.cpp).
TEST(TlCacheIsa, SmallBuffersSpecializeToBufferLoadsOnAmd) {
  const char* dir = std::getenv("TL_CACHE_DIR");
  if (!dir) GTEST_SKIP() << "TL_CACHE_DIR is not set; this test needs a private cache directory";
  const std::string tool = std::string(TL_TEST_BINARY_DIR) + "/tools/tl-cache --dir " + dir;
  // Tutorial 03's loop (its grouping left out): strides assumed positive, as Triton's does.
  auto k = tl::kernel("range_probe", [](tl::ptr<tl::f16> a, tl::ptr<tl::f16> b, tl::ptr<tl::f32> c, tl::i32 K,
                                        tl::i32 stride_am, tl::i32 stride_bk) {
    tl::assume(stride_am > 0);
    tl::assume(stride_bk > 0);
    auto offs_m = tl::program_id(0) * 64 + tl::arange(0, 64);
    auto offs_n = tl::program_id(1) * 64 + tl::arange(0, 64);
    auto offs_k = tl::arange(0, 32);
    auto a_ptrs = a + (tl::expand_dims(offs_m, 1) * stride_am + tl::expand_dims(offs_k, 0));
    auto b_ptrs = b + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_n, 0));
    auto acc = tl::zeros<tl::f32>({64, 64});
    for (auto kk : tl::range(0, tl::cdiv(K, 32))) {
      acc = tl::dot(tl::load(a_ptrs, tl::expand_dims(offs_k, 0) < K - kk * 32, 0.0f),
                    tl::load(b_ptrs, tl::expand_dims(offs_k, 1) < K - kk * 32, 0.0f), acc);
      a_ptrs += 32;
      b_ptrs += 32 * stride_bk;
    }
    tl::store(c + tl::expand_dims(offs_m, 1) * 64 + tl::expand_dims(offs_n, 0), acc);
  });
  tl::device cpu = tl::cpu_device();
  tl::buffer<tl::ty::f16> a(cpu, 64 * 256), b(cpu, 256 * 64);
  tl::buffer<tl::ty::f32> c(cpu, 64 * 64);
  const tl::launch_options o{.num_warps = 4, .num_stages = 2};
  auto small = nlohmann::json::parse(k.compile("gfx942", o, a, b, c, 256, 256, 64));
  auto* p16 = reinterpret_cast<tl::ty::f16::host*>(uintptr_t(1) << 20);
  auto* p32 = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto raw = nlohmann::json::parse(k.compile("gfx942", o, p16, p16, p32, 256, 256, 64));
  EXPECT_EQ(small["signature"][0].get<std::string>(), "ptr<f16> div16 range32") << small["signature"].dump();
  EXPECT_EQ(raw["signature"][0].get<std::string>(), "ptr<f16> div16") << raw["signature"].dump();
  ASSERT_NE(small["key"], raw["key"]);
  std::string small_isa = run(tool + " isa " + small["key"].get<std::string>());
  std::string raw_isa = run(tool + " isa " + raw["key"].get<std::string>());
  EXPECT_NE(small_isa.find("buffer_load_dwordx4"), std::string::npos) << small_isa.substr(0, 4000);
  EXPECT_EQ(raw_isa.find("buffer_load_dwordx4"), std::string::npos) << raw_isa.substr(0, 4000);
  EXPECT_NE(raw_isa.find("global_load_dwordx4"), std::string::npos) << raw_isa.substr(0, 4000);
}

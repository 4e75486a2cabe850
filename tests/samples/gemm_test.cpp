// The GEMM sample's kernels (samples/gemm/gemm.hpp) on the test device (the CPU in CI, a
// GPU with TL_DEVICE), against the double-precision reference (samples/gemm/reference.hpp):
// bf16, and FP8 (the device's format) with row and column scales; ragged M, N and K
// (down to 1), several tile configurations and pipeline depths, C poisoned first. The
// grid has exactly one program per tile of C, so "every element written and right"
// also says the grouped program order visits every tile once (the shapes include
// several groups and a short last one). Then the configuration choice, and the GPU
// code compiled without a GPU: each target's chosen configuration pipelined into
// shared memory (both operands), no spills on AMD.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/gemm/gemm.hpp"
#include "samples/gemm/reference.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

struct Shape {
  int64_t M, N, K;
};

std::string describe(const Shape& s, const gemm::Config& c) {
  return fmt::format("{}x{}x{} blocks {}x{}x{} group {} stages {} warps {}", s.M, s.N, s.K, c.block_m, c.block_n,
                     c.block_k, c.group_m, c.num_stages, c.num_warps);
}

// Ragged in each dimension, smaller than a tile (1x1x1 included), exact multiples, and
// enough row blocks for two groups of 8 with a short last one (300 / 32: 10 blocks).
const Shape kShapes[] = {{1, 1, 1}, {33, 17, 45}, {64, 64, 64}, {200, 136, 300}, {300, 70, 128}, {37, 300, 96}};

// Tiles of 16 to 64 (tl::dot's smallest M and N is 16; FP8's K at least 32), 1 to 3
// stages (the pipeliner through shared memory on every target), groups of 1, 2 and 8.
std::vector<gemm::Config> configs(bool fp8) {
  std::vector<gemm::Config> c = {
      {32, 32, 32, 8, 1, 4}, {64, 32, 32, 8, 2, 4}, {32, 64, 64, 2, 3, 4}, {16, 16, 32, 1, 2, 1}, {64, 64, 64, 8, 3, 4}};
  if (fp8)
    for (auto& x : c) x.block_k = std::max(x.block_k, 64);
  return c;
}

double sum_unit(bool fp8) { return gemm::sum_unit(fp8, test_device().kind() == tl::device_kind::cuda); }

void expect_ok(const gemm::Errors& e, const Shape& s, const gemm::Config& c) {
  EXPECT_TRUE(e.ok()) << describe(s, c) << ": " << e.bad << " of " << e.checked << " wrong, the first at m="
                      << e.first_m << " n=" << e.first_n << ", worst " << e.worst << " of the bound";
}

void check_bf16(const Shape& s, const gemm::Config& c) {
  auto o = gemm::random_operands<tl::bfloat16>(s.M, s.N, s.K, false, 1.0, uint64_t(s.M * 1000003 + s.N * 101 + s.K),
                                               [](double x) { return tl::to_bf16(x); });
  auto A = upload<tl::ty::bf16>(o.a), B = upload<tl::ty::bf16>(o.b);
  auto C = test_device().alloc<tl::bf16>(size_t(s.M * s.N));
  poison(C);
  gemm::gemm_bf16(c, A, B, C, s.M, s.N, s.K);
  auto e = gemm::check(o.fa, o.fb, false, {}, {}, C.download(), s.M, s.N, s.K, gemm::rows_to_check(s.M, s.N, s.K),
                       sum_unit(false));
  expect_ok(e, s, c);
}

template <class F8> void check_fp8(const Shape& s, const gemm::Config& c) {
  constexpr tl::DType D = tl::elem_t<F8>::dtype;
  auto o = gemm::random_operands<tl::float8<D>>(s.M, s.N, s.K, true, 4.0, uint64_t(s.M * 1000003 + s.N * 101 + s.K),
                                                [](double x) { return tl::fp8<D>(x); });
  auto A = upload<tl::elem_t<F8>>(o.a), BT = upload<tl::elem_t<F8>>(o.b);
  auto RS = upload<tl::ty::f32>(o.row_scale), CS = upload<tl::ty::f32>(o.col_scale);
  auto C = test_device().alloc<tl::bf16>(size_t(s.M * s.N));
  poison(C);
  gemm::gemm_fp8<F8>(c, A, BT, RS, CS, C, s.M, s.N, s.K);
  auto e = gemm::check(o.fa, o.fb, true, o.row_scale, o.col_scale, C.download(), s.M, s.N, s.K,
                       gemm::rows_to_check(s.M, s.N, s.K), sum_unit(true));
  expect_ok(e, s, c);
}

// The FP8 format of the test device's matrix instructions ("" for none).
std::string device_fp8() { return gemm::fp8_format_for(test_device().target()); }

}  // namespace

TEST(GemmSample, Bf16RaggedShapes) {
  for (const gemm::Config& c : configs(false))
    for (const Shape& s : kShapes) check_bf16(s, c);
}

TEST(GemmSample, Fp8WithScalesRaggedShapes) {
  std::string f8 = device_fp8();
  if (f8.empty()) GTEST_SKIP() << test_device().target() << " has no FP8 matrix instructions";
  for (const gemm::Config& c : configs(true))
    for (const Shape& s : kShapes) f8 == "e4m3fnuz" ? check_fp8<tl::f8e4m3fnuz>(s, c) : check_fp8<tl::f8e4m3fn>(s, c);
}

// The configuration gemm::choose picks for the device, on a shape of several tiles.
TEST(GemmSample, ChosenConfigurationOnTheDevice) {
  auto dev = test_device();
  for (const Shape& s : {Shape{512, 384, 320}, Shape{250, 1000, 129}}) {
    check_bf16(s, gemm::choose(s.M, s.N, s.K, dev.target(), dev.compute_units(), false));
    gemm::Config c = gemm::choose(s.M, s.N, s.K, dev.target(), dev.compute_units(), true);
    if (device_fp8() == "e4m3fn") check_fp8<tl::f8e4m3fn>(s, c);
    if (device_fp8() == "e4m3fnuz") check_fp8<tl::f8e4m3fnuz>(s, c);
  }
}

TEST(GemmSample, ChooseFollowsTheDocumentedTable) {
  auto same = [](const gemm::Config& a, const gemm::Config& b) {
    return a.block_m == b.block_m && a.block_n == b.block_n && a.block_k == b.block_k && a.group_m == b.group_m &&
           a.num_stages == b.num_stages && a.num_warps == b.num_warps;
  };
  EXPECT_TRUE(same(gemm::choose(4096, 4096, 4096, "sm_90", 132, false), {128, 256, 64, 8, 3, 8}));
  EXPECT_TRUE(same(gemm::choose(4096, 4096, 4096, "sm_90", 132, true), {128, 256, 128, 8, 3, 8}));
  EXPECT_TRUE(same(gemm::choose(4096, 4096, 4096, "sm_89", 128, true), {128, 128, 128, 8, 3, 8}));
  EXPECT_TRUE(same(gemm::choose(8192, 8192, 8192, "gfx942:sramecc+:xnack-", 304, false), {128, 128, 64, 8, 2, 4}));
  EXPECT_TRUE(same(gemm::choose(8192, 8192, 8192, "gfx942", 304, true), {128, 128, 64, 8, 2, 4}));
  EXPECT_TRUE(same(gemm::choose(8192, 8192, 8192, "gfx950", 256, false), {256, 128, 64, 8, 2, 8}));
  EXPECT_TRUE(same(gemm::choose(8192, 8192, 8192, "gfx950", 256, true), {128, 128, 64, 8, 2, 4}));
  EXPECT_TRUE(same(gemm::choose(8192, 8192, 8192, "gfx90a", 104, false), {128, 128, 64, 8, 2, 4}));
  // Too few programs for the compute units: halve the tiles (4 warps) until a side is 32.
  EXPECT_TRUE(same(gemm::choose(1024, 1024, 1024, "sm_90", 132, false), {32, 64, 64, 8, 3, 4}));
  EXPECT_TRUE(same(gemm::choose(1024, 1024, 1024, "gfx950", 256, false), {64, 32, 64, 8, 2, 4}));
  EXPECT_TRUE(same(gemm::choose(64, 64, 4096, "sm_90", 132, true), {32, 64, 128, 8, 3, 4}));
  // The CPU: one configuration whatever the shape.
  EXPECT_TRUE(same(gemm::choose(4096, 4096, 4096, "cpu-skylake", 2, false), {64, 128, 32, 8, 1, 4}));
  EXPECT_TRUE(same(gemm::choose(256, 256, 256, "cpu", 64, true), {64, 128, 32, 8, 1, 4}));
  EXPECT_EQ(gemm::fp8_format_for("gfx942:sramecc+:xnack-"), "e4m3fnuz");
  EXPECT_EQ(gemm::fp8_format_for("gfx950"), "e4m3fn");
  EXPECT_EQ(gemm::fp8_format_for("sm_90"), "e4m3fn");
  EXPECT_EQ(gemm::fp8_format_for("sm_89"), "e4m3fn");
  EXPECT_EQ(gemm::fp8_format_for("sm_80"), "");
  EXPECT_EQ(gemm::fp8_format_for("gfx90a"), "");
  EXPECT_EQ(gemm::fp8_format_for("cpu-znver4"), "e4m3fn");
}

TEST(GemmSample, RefusesShapesPast32BitOffsets) {
  auto dev = test_device();
  auto P = dev.alloc<tl::bf16>(16);
  gemm::Config c;
  EXPECT_THROW(gemm::gemm_bf16(c, P, P, P, 65536, 16, 32768), std::invalid_argument);
  EXPECT_THROW(gemm::gemm_bf16(c, P, P, P, 0, 16, 16), std::invalid_argument);
}

// Compiled without a GPU: every GPU target's chosen configuration for a large GEMM has
// its K loop pipelined with both operand tiles copied straight into shared memory
// (cp.async / global_load_lds), and AMD's code does not spill.
TEST(GemmSample, ChosenGpuConfigurationsPipelineIntoSharedMemory) {
  struct Case {
    const char* target;
    int cus;
    bool fp8;
  };
  for (Case k : {Case{"sm_90", 132, false}, Case{"sm_90", 132, true}, Case{"gfx942", 304, false},
                 Case{"gfx942", 304, true}, Case{"gfx950", 256, false}, Case{"gfx950", 256, true},
                 Case{"gfx90a", 104, false}}) {
    SCOPED_TRACE(fmt::format("{} {}", k.target, k.fp8 ? "fp8" : "bf16"));
    gemm::Config c = gemm::choose(4096, 4096, 4096, k.target, k.cus, k.fp8);
    std::string meta = !k.fp8                                         ? gemm::compile_bf16(c, k.target, 4096, 4096, 4096)
                       : gemm::fp8_format_for(k.target) == "e4m3fnuz" ? gemm::compile_fp8<tl::f8e4m3fnuz>(c, k.target, 4096, 4096, 4096)
                                                                      : gemm::compile_fp8<tl::f8e4m3fn>(c, k.target, 4096, 4096, 4096);
    auto j = nlohmann::json::parse(meta);
    std::string remarks;
    for (auto& r : j.value("remarks", nlohmann::json::array())) remarks += r.get<std::string>() + "\n";
    EXPECT_NE(remarks.find(fmt::format("num_stages={}: yes (0 loads into registers, 2 into shared memory", c.num_stages)), std::string::npos)
        << remarks;
    if (j["report"].contains("spill_vgpr")) {
      EXPECT_EQ(j["report"]["spill_vgpr"].get<int64_t>(), 0);
      EXPECT_EQ(j["report"]["spill_sgpr"].get<int64_t>(), 0);
    }
  }
}

// A K that is not a multiple of 8 masks A's tile element by element along K: no direct
// copy width tl uses (4 bytes and up: sm_90's cp.async, gfx950's global_load_lds) fits, so
// the pipeliner keeps A's loads in registers and copies B's (masked along N only) into the
// stages; before, the copy failed to compile for the GPU.
TEST(GemmSample, RaggedKPipelinesWhatTheTargetCanCopy) {
  gemm::Config c{128, 128, 64, 8, 3, 4};
  for (auto [target, want] : {std::pair{"sm_90", "(1 load into registers, 1 into shared memory)"},
                              std::pair{"gfx950", "(1 load into registers, 1 into shared memory)"}}) {
    auto j = nlohmann::json::parse(gemm::compile_bf16(c, target, 4096, 4096, 4095));
    std::string remarks;
    for (auto& r : j.value("remarks", nlohmann::json::array())) remarks += r.get<std::string>() + "\n";
    EXPECT_NE(remarks.find(want), std::string::npos) << target << ": " << remarks;
  }
}

// Hopper's TMA for host tensor descriptors under launch_options::tma (issue 41), compiled
// without a GPU: tutorial 09's descriptor kernel (matmul_kernel_tma_persistent) for sm_90
// takes each descriptor's CUtensorMap as a 128-byte grid-constant parameter and loads A
// and B with cp.async.bulk.tensor waited for on an mbarrier, in the form Triton 3.6 emits
// (32-bit shared::cta addresses, elect.sync, no fence.mbarrier_init:
// bench/results/sm90-2026-11-28-tma-ptx); ptxas takes it without spills where it is here
// (TL_PTXAS: Triton's wheel's). Without the option, on other targets and for blocks TMA
// does not take, the code is what it was. tests/dsl/tma_descriptor_test.cpp runs it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "bench/persistent_matmul_tutorial.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "tl/descriptor.hpp"
#include "tl/tl.hpp"

using namespace tl;
using tltest::count;
using tltest::isa_of_compiled;

namespace {

using tl::detail::tensor_map_swizzle_bytes;
using H16 = TensorDescriptor<f16>::host_t;

// A device address no buffer has here, 1 MiB aligned (the launch never dereferences it).
template <class H> const H* fake(size_t i) { return reinterpret_cast<const H*>(uintptr_t(i + 1) << 24); }

// Tutorial 09's TMA kernel as its benchmark runs it on the H200 (f16, 128x256x64 blocks,
// 8 warps, 3 stages), the descriptors made on the host; the compile's metadata.
std::string compile_tutorial(const std::string& target, bool tma, int M = 4096, int N = 4096, int K = 4096) {
  using D = TensorDescriptor<f16>;
  const int BM = 128, BN = 256, BK = 64;
  D a(fake<H16>(0), {M, K}, {K, 1}, {BM, BK});
  D b(fake<H16>(1), {N, K}, {K, 1}, {BN, BK});
  D c(fake<H16>(2), {M, N}, {N, 1}, {BM, BN / 2});
  launch_options o{.num_warps = 8, .num_stages = 3};
  o.tma = tma;
  return persistent_matmul::matmul_kernel_tma_persistent<f16>().compile(target, o, a, b, c, M, N, K, BM, BN, BK, 8,
                                                                          true, 132);
}

std::string key_of(const std::string& meta) { return nlohmann::json::parse(meta).at("key").get<std::string>(); }

int spill_bytes(const std::string& ptxas_v) {
  int most = 0;
  std::regex spill(R"((\d+) bytes spill (stores|loads))");
  for (auto it = std::sregex_iterator(ptxas_v.begin(), ptxas_v.end(), spill); it != std::sregex_iterator(); ++it)
    most = std::max(most, std::stoi((*it)[1].str()));
  return most;
}

}  // namespace

// Which blocks TMA loads, and with what swizzle: a warpgroup operand's rows (32, 64, 128
// bytes, 8k of them) swizzled by their bytes, longer swizzlable rows not at all, the rest
// row-major; under 128 bytes not at all (the box's 128-byte alignment).
TEST(TmaCodegen, TheBlocksTmaLoadsAndTheirSwizzle) {
  auto swz = [](DType e, std::vector<int> block) { return tensor_map_swizzle_bytes(e, block); };
  EXPECT_EQ(swz(DType::f16, {128, 64}), 128);  // tutorial 09's A and B
  EXPECT_EQ(swz(DType::f16, {256, 64}), 128);
  EXPECT_EQ(swz(DType::f32, {16, 32}), 128);
  EXPECT_EQ(swz(DType::f16, {64, 32}), 64);
  EXPECT_EQ(swz(DType::f32, {8, 8}), 32);
  EXPECT_EQ(swz(DType::f16, {64, 128}), -1);   // 256-byte rows: column blocks, not one box
  EXPECT_EQ(swz(DType::f16, {4, 64}), 0);      // 4 rows: not a swizzle pattern's 8
  EXPECT_EQ(swz(DType::f16, {16, 8}), 0);      // 16-byte rows
  EXPECT_EQ(swz(DType::bf16, {2, 8, 16}), 0);  // 3-D: row-major
  EXPECT_EQ(swz(DType::f32, {64}), 0);
  EXPECT_EQ(swz(DType::f32, {16}), -1);        // 64 bytes
  EXPECT_EQ(swz(DType::i1, {128, 64}), -1);
}

// The loads of A and B are TMA copies: one cp.async.bulk.tensor each, the maps 128-byte
// .param arrays, the mbarrier's init / expect_tx / try_wait / inval, elect.sync choosing
// the issuing thread, and no cp.async (the masked copies they replace); Triton's form:
// 32-bit shared addresses for the box and the mbarrier, no fence.mbarrier_init.
TEST(TmaCodegen, Tutorial09LoadsAreTmaCopiesOnSm90) {
  const std::string meta = compile_tutorial("sm_90", true);
  // (the metadata's signature names the map parameters: A's and B's)
  const nlohmann::json signature = nlohmann::json::parse(meta).at("signature");
  int maps = 0;
  for (const auto& s : signature) maps += s.get<std::string>().ends_with(" tensor_map");
  EXPECT_EQ(maps, 2) << signature.dump();
  const std::string ptx = isa_of_compiled(meta);
  std::regex copy(R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes \[%r\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\], \[%r\d+\];)");
  EXPECT_EQ(std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), copy), std::sregex_iterator()), 2) << ptx;
  // A's and B's maps; C's block [128, 128] has 256-byte rows, which TMA does not load here.
  EXPECT_EQ(count(ptx, ".param .align 64 .b8 "), 2) << ptx.substr(0, 3000);
  EXPECT_EQ(count(ptx, "mbarrier.init.shared::cta.b64"), 2);
  EXPECT_EQ(count(ptx, "mbarrier.arrive.expect_tx.shared.b64 _, [%r"), 2);
  // A [128, 64] f16 is 16384 bytes, B [256, 64] 32768.
  EXPECT_EQ(count(ptx, "], 16384;"), 1);
  EXPECT_EQ(count(ptx, "], 32768;"), 1);
  EXPECT_EQ(count(ptx, "mbarrier.try_wait.parity.shared.b64"), 2);
  EXPECT_EQ(count(ptx, "mbarrier.inval.shared::cta.b64"), 2);
  EXPECT_EQ(count(ptx, "elect.sync"), 2);
  EXPECT_EQ(count(ptx, "fence.mbarrier_init"), 0);
  EXPECT_EQ(count(ptx, "cvta.to.shared::cluster"), 0);
  EXPECT_EQ(count(ptx, "cp.async.cg.shared.global"), 0);
  EXPECT_GE(count(ptx, "cvta.param.u64"), 2);  // the maps' generic addresses
  EXPECT_GE(count(ptx, "wgmma.mma_async"), 1);  // A and B still read by warpgroup dots
  auto run = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
  if (!run.ran) GTEST_SKIP() << "no ptxas here (TL_PTXAS)";
  ASSERT_TRUE(run.ok) << run.output;
  EXPECT_EQ(spill_bytes(run.output), 0) << run.output;
  std::printf("%s", run.output.c_str());
}

// Off by default: the PTX takes no map and copies with cp.async, as before.
TEST(TmaCodegen, WithoutTheOptionNothingChanges) {
  const std::string ptx = isa_of_compiled(compile_tutorial("sm_90", false));
  EXPECT_EQ(count(ptx, "cp.async.bulk.tensor"), 0);
  EXPECT_EQ(count(ptx, "mbarrier"), 0);
  EXPECT_EQ(count(ptx, ".param .align 64 .b8 "), 0) << ptx.substr(0, 2000);
  EXPECT_GE(count(ptx, "cp.async.cg.shared.global"), 1);
}

// AMD and the CPU ignore the option: the very same compile (its cache key: the program,
// the target and the options).
TEST(TmaCodegen, OtherTargetsAreUnchanged) {
  for (const char* target : {"gfx942", "gfx950", "cpu"})
    EXPECT_EQ(key_of(compile_tutorial(target, true, 256, 256, 256)), key_of(compile_tutorial(target, false, 256, 256, 256)))
        << target;
}

// A descriptor TMA does not take stays a masked load on sm_90 with the option: a block of
// 256-byte rows, and a tensor whose dim is 0 (TMA's dims start at 1).
TEST(TmaCodegen, DescriptorsTmaDoesNotTakeAreLoadedAsBefore) {
  static auto k = tl::kernel("tma_copy_probe", [](tensor_descriptor<f16, 2> in, ptr<f16> out) {
    auto t = in.load({program_id(0) * in.block_shape()[0], 0});
    auto r = arange(0, in.block_shape()[0]);
    auto c = arange(0, in.block_shape()[1]);
    tl::store(out + (tl::expand_dims(r, 1) * in.block_shape()[1] + tl::expand_dims(c, 0)), t);
  });
  auto compile = [&](std::vector<int64_t> shape, std::vector<int> block, bool tma) {
    TensorDescriptor<f16> d(fake<H16>(0), shape, {shape[1], 1}, block);
    launch_options o{.num_warps = 4};
    o.tma = tma;
    return isa_of_compiled(k.compile("sm_90", o, d, fake<H16>(3)));
  };
  EXPECT_EQ(count(compile({512, 512}, {64, 64}, true), "cp.async.bulk.tensor.2d"), 1);
  EXPECT_EQ(count(compile({512, 512}, {32, 128}, true), "cp.async.bulk.tensor"), 0);
  EXPECT_EQ(count(compile({0, 512}, {64, 64}, true), "cp.async.bulk.tensor"), 0);
}

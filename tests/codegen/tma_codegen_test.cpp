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

// The K loop's PTX around its TMA copies: from the label of the block that waits on the
// stage's mbarrier (the block before the try_wait spin loop's own) to the last copy.
std::string k_loop(const std::string& ptx) {
  const size_t wait = ptx.find("mbarrier.try_wait.parity");
  const size_t last = ptx.rfind("cp.async.bulk.tensor");
  if (wait == std::string::npos || last == std::string::npos || last < wait) return "";
  const size_t spin = ptx.rfind("$L__BB", wait);
  const size_t head = spin == std::string::npos ? std::string::npos : ptx.rfind("\n$L__BB", spin - 2);
  return head == std::string::npos ? "" : ptx.substr(head, last - head);
}

// The loads of A and B are TMA copies pipelined by the K loop's stages, in Triton's form
// for them: each copy a cp.async.bulk.tensor armed on the mbarrier of its stage (one a
// stage: 3 stages and one more for the asynchronous wgmma), 2 iterations ahead (the
// prologue's 2 x 2 copies, the loop's 2), each iteration waiting for its stage's phase (a
// register parity) before the wgmmas read it in place, one bar.sync an iteration (Triton
// 3.6's loop has four: before the wait, the arm and each copy), the maps 128-byte .param
// arrays, elect.sync choosing the issuing thread, no cp.async (the masked copies they
// replace); 32-bit shared addresses for the box and the mbarrier, no fence.mbarrier_init.
TEST(TmaCodegen, Tutorial09LoadsAreTmaCopiesOnSm90) {
  const std::string meta = compile_tutorial("sm_90", true);
  // (the metadata's signature names the map parameters: A's and B's)
  const nlohmann::json signature = nlohmann::json::parse(meta).at("signature");
  int maps = 0;
  for (const auto& s : signature) maps += s.get<std::string>().ends_with(" tensor_map");
  EXPECT_EQ(maps, 2) << signature.dump();
  const std::string ptx = isa_of_compiled(meta);
  std::regex copy(R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes \[%r\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\], \[%r\d+\];)");
  EXPECT_EQ(std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), copy), std::sregex_iterator()), 6) << ptx;
  // A's and B's maps; C's block [128, 128] has 256-byte rows, which TMA does not load here.
  EXPECT_EQ(count(ptx, ".param .align 64 .b8 "), 2) << ptx.substr(0, 3000);
  EXPECT_EQ(count(ptx, "mbarrier.init.shared::cta.b64"), 4);  // a stage's, 2 arrivals each
  EXPECT_EQ(count(ptx, "], 2;"), 4);
  EXPECT_EQ(count(ptx, "mbarrier.arrive.expect_tx.shared.b64 _, [%r"), 6);
  // A [128, 64] f16 is 16384 bytes, B [256, 64] 32768.
  EXPECT_EQ(count(ptx, "], 16384;"), 3);
  EXPECT_EQ(count(ptx, "], 32768;"), 3);
  std::regex wait(R"(mbarrier\.try_wait\.parity\.shared\.b64 c, \[%r\d+\], %r\d+;)");
  EXPECT_EQ(std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), wait), std::sregex_iterator()), 1) << ptx;
  EXPECT_EQ(count(ptx, "mbarrier.inval.shared::cta.b64"), 4);
  EXPECT_EQ(count(ptx, "elect.sync"), 6);
  EXPECT_EQ(count(ptx, "fence.mbarrier_init"), 0);
  EXPECT_EQ(count(ptx, "cvta.to.shared::cluster"), 0);
  EXPECT_EQ(count(ptx, "cp.async.cg.shared.global"), 0);
  EXPECT_EQ(count(ptx, "cp.async.wait_group"), 0);
  EXPECT_GE(count(ptx, "cvta.param.u64"), 2);  // the maps' generic addresses
  EXPECT_GE(count(ptx, "wgmma.mma_async"), 1);  // A and B still read by warpgroup dots
  const std::string loop = k_loop(ptx);
  ASSERT_FALSE(loop.empty()) << ptx;
  EXPECT_EQ(count(loop, "bar.sync"), 1) << loop;
  EXPECT_EQ(count(loop, "cp.async.bulk.tensor"), 1) << loop;  // (to the second, excluded)
  EXPECT_EQ(count(loop, "wgmma.wait_group.sync.aligned 1;"), 1) << loop;  // the wgmma left in flight
  auto run = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
  if (!run.ran) GTEST_SKIP() << "no ptxas here (TL_PTXAS)";
  ASSERT_TRUE(run.ok) << run.output;
  EXPECT_EQ(spill_bytes(run.output), 0) << run.output;
  std::printf("%s", run.output.c_str());
}

// A load of its own (outside any pipelined loop): one copy waited for at once, between
// two bar.syncs (after the mbarrier's init, before its inval); the arm and the copy are one
// thread's, with no barrier between them nor between the copy and the wait.
TEST(TmaCodegen, ALoadOfItsOwnWaitsBetweenTwoBarriers) {
  static auto k = tl::kernel("tma_one_box", [](tensor_descriptor<f16, 2> in, ptr<f16> out) {
    auto t = in.load({program_id(0) * in.block_shape()[0], 0});
    auto r = arange(0, in.block_shape()[0]);
    auto c = arange(0, in.block_shape()[1]);
    tl::store(out + (tl::expand_dims(r, 1) * in.block_shape()[1] + tl::expand_dims(c, 0)), t);
  });
  TensorDescriptor<f16> d(fake<H16>(0), {512, 512}, {512, 1}, {64, 64});
  launch_options o{.num_warps = 4};
  o.tma = true;
  const std::string ptx = isa_of_compiled(k.compile("sm_90", o, d, fake<H16>(3)));
  const size_t init = ptx.find("mbarrier.init"), arm = ptx.find("mbarrier.arrive.expect_tx"),
               copy = ptx.find("cp.async.bulk.tensor"), wait = ptx.find("mbarrier.try_wait"),
               inval = ptx.find("mbarrier.inval");
  ASSERT_TRUE(init < arm && arm < copy && copy < wait && wait < inval && inval != std::string::npos) << ptx;
  EXPECT_EQ(count(ptx, "mbarrier.init.shared::cta.b64 [%r"), 1);
  EXPECT_EQ(count(ptx.substr(init, arm - init), "bar.sync"), 1) << ptx;
  EXPECT_EQ(count(ptx.substr(arm, wait - arm), "bar.sync"), 0) << ptx;
  EXPECT_EQ(count(ptx.substr(wait, inval - wait), "bar.sync"), 1) << ptx;
  EXPECT_EQ(count(ptx, "mbarrier.try_wait.parity.shared.b64 c, [%r"), 1);
  auto run = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
  if (!run.ran) GTEST_SKIP() << "no ptxas here (TL_PTXAS)";
  EXPECT_TRUE(run.ok) << run.output;
}

// A loop with its own tl::num_stages pipelines its TMA loads whatever reads them (here a
// sum in registers): with 2 stages the copy of the next iteration is issued right after
// the wait, with 4 at the end of the body, 3 iterations ahead; no stage more (no dot).
TEST(TmaCodegen, ALoopsOwnStagesPipelineTmaLoadsIntoRegisters) {
  static auto k = tl::kernel("tma_row_sums", [](tensor_descriptor<f32, 2> in, ptr<f32> out, i32 n, int stages) {
    const int BM = in.block_shape()[0], BN = in.block_shape()[1];
    auto row = program_id(0) * BM;
    auto acc = tl::zeros<tl::ty::f32>({BM, BN});
    for (auto c : tl::range(0, n, BN, tl::num_stages(stages))) acc = acc + in.load({row, c});
    auto r = arange(0, BM);
    auto c = arange(0, BN);
    tl::store(out + (program_id(0) * BM * BN + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0)), acc);
  });
  using HF = TensorDescriptor<f32>::host_t;
  for (int stages : {2, 4}) {
    TensorDescriptor<f32> d(fake<HF>(0), {512, 512}, {512, 1}, {16, 32});
    launch_options o{.num_warps = 4};
    o.tma = true;
    const std::string ptx = isa_of_compiled(k.compile("sm_90", o, d, fake<HF>(3), 512, stages));
    EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d"), stages) << stages;  // stages - 1 ahead, 1 in the loop
    EXPECT_EQ(count(ptx, "mbarrier.init.shared::cta.b64"), stages) << stages;
    EXPECT_EQ(count(ptx, "], 1;"), stages) << stages;  // one arrival a phase: one copy a stage
    EXPECT_EQ(count(ptx, "mbarrier.try_wait.parity"), 1) << stages;
    EXPECT_EQ(count(ptx, "mbarrier.inval.shared::cta.b64"), stages) << stages;
    EXPECT_EQ(count(ptx, "cp.async.cg"), 0) << stages;
    const std::string loop = k_loop(ptx);
    ASSERT_FALSE(loop.empty()) << ptx;
    EXPECT_LE(count(loop, "bar.sync"), 1) << loop;
    auto run = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
    if (!run.ran) continue;
    ASSERT_TRUE(run.ok) << run.output;
    EXPECT_EQ(spill_bytes(run.output), 0) << run.output;
  }
}

// A descriptor store TMA takes is Triton's TMA store: the tile written into a shared
// buffer (the map's swizzle), every thread's fence.proxy.async, a bar.sync, and one thread
// of warp 0 chosen by elect.sync issuing cp.async.bulk.tensor global.shared::cta in a bulk
// group, committing it and waiting until it has read the buffer (wait_group.read 0), one
// bar.sync between the tile's writes and the copy. Only where the box starts inside the
// shape (one condition a program): elsewhere the masked stores, the same as without the
// option (a TMA store of a box starting at a negative coordinate or wholly outside faulted
// on the H200). Tutorial 09 at 128x128x64 stores its two C subtiles ([128, 64]) so.
TEST(TmaCodegen, StoresAreBulkCopiesFromSharedMemory) {
  static auto k = tl::kernel("tma_store_probe", [](ptr<f16> in, tensor_descriptor<f16, 2> out) {
    const int BM = out.block_shape()[0], BN = out.block_shape()[1];
    auto r = arange(0, BM);
    auto c = arange(0, BN);
    auto t = tl::load(in + (program_id(0) * BM * BN + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0)));
    out.store({program_id(0) * BM, 0}, t);
  });
  TensorDescriptor<f16> d(fake<H16>(0), {512, 512}, {512, 1}, {64, 64});
  launch_options o{.num_warps = 4};
  o.tma = true;
  const std::string ptx = isa_of_compiled(k.compile("sm_90", o, fake<H16>(3), d));
  std::regex copy(R"(cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[%rd\d+, \{%r\d+, %r\d+\}\], \[%r\d+\];)");
  EXPECT_EQ(std::distance(std::sregex_iterator(ptx.begin(), ptx.end(), copy), std::sregex_iterator()), 1) << ptx;
  EXPECT_EQ(count(ptx, "cp.async.bulk.commit_group;"), 1);
  EXPECT_EQ(count(ptx, "cp.async.bulk.wait_group.read 0;"), 1);
  EXPECT_EQ(count(ptx, "elect.sync"), 1);
  EXPECT_EQ(count(ptx, ".param .align 64 .b8 "), 1);
  const size_t at = ptx.find("cp.async.bulk.tensor"), bar = ptx.rfind("bar.sync", at), fence = ptx.rfind("fence.proxy.async", at);
  ASSERT_TRUE(bar != std::string::npos && fence != std::string::npos && fence < bar) << ptx;
  EXPECT_GE(count(ptx.substr(0, fence), "st.shared"), 1) << ptx;  // (the tile written before the fence)
  const size_t written = ptx.rfind("st.shared", at);
  EXPECT_EQ(count(ptx.substr(written, at - written), "bar.sync"), 1) << ptx;  // the store's own, no other
  auto run = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
  if (run.ran) EXPECT_TRUE(run.ok) << run.output;
  o.tma = false;
  const std::string masked = isa_of_compiled(k.compile("sm_90", o, fake<H16>(3), d));
  EXPECT_EQ(count(masked, "cp.async.bulk"), 0);
  EXPECT_GE(count(masked, "st.global"), 1);
  // (the fallback for a box starting outside the shape: the masked stores, no more)
  EXPECT_EQ(count(ptx, "st.global"), count(masked, "st.global")) << ptx;

  const int M = 4096, N = 4096, K = 4096, BM = 128, BN = 128, BK = 64;
  TensorDescriptor<f16> a(fake<H16>(0), {M, K}, {K, 1}, {BM, BK}), b(fake<H16>(1), {N, K}, {K, 1}, {BN, BK}),
      c(fake<H16>(2), {M, N}, {N, 1}, {BM, BN / 2});
  launch_options t{.num_warps = 8, .num_stages = 3};
  t.tma = true;
  const std::string tut = isa_of_compiled(
      persistent_matmul::matmul_kernel_tma_persistent<f16>().compile("sm_90", t, a, b, c, M, N, K, BM, BN, BK, 8, true, 132));
  EXPECT_EQ(count(tut, "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"), 2);
  EXPECT_EQ(count(tut, "cp.async.bulk.tensor.2d.shared::cluster.global"), 6);
  t.tma = false;
  const std::string tut_masked = isa_of_compiled(
      persistent_matmul::matmul_kernel_tma_persistent<f16>().compile("sm_90", t, a, b, c, M, N, K, BM, BN, BK, 8, true, 132));
  EXPECT_EQ(count(tut, "st.global"), count(tut_masked, "st.global"));  // (the fallback's only)
  t.tma = true;
  auto tr = tltest::run_ptxas(tut, "-arch=sm_90a -v");
  if (!tr.ran) GTEST_SKIP() << "no ptxas here (TL_PTXAS)";
  ASSERT_TRUE(tr.ok) << tr.output;
  EXPECT_EQ(spill_bytes(tr.output), 0) << tr.output;
  std::printf("%s", tr.output.c_str());
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

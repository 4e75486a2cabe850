// tl::dot through Hopper's warpgroup MMA (wgmma.mma_async, sm_90a), as Triton users write
// the K loop: tutorial-03's plain loads feeding tl::dot in a pipelined tl::range (the
// compiler stages them), and samples/gemm's one-stage tl::shared buffers.
//
// On the test device (the CPU in CI, the H100 with TL_DEVICE=cuda, where the launch asks
// for mma_version=3 so that a kernel wgmma cannot take fails instead of running mma.sync):
// every operand dtype wgmma has (bf16, f16, f32 as TF32, i8, e4m3, e5m2, e4m3 x e5m2)
// against a double reference on random inputs, ragged M, N and K, B stored [K, N]
// (MN-major, 16-bit only) and [N, K] (K-major), tiles giving each swizzle width (128-,
// 64- and 32-byte rows), one and two warpgroups split along M or N, 1 to 4 stages
// (synchronous and asynchronous dots). C poisoned before each launch.
//
// Without a GPU (every run): the PTX for sm_90 of those kernels: `.target sm_90a`, the
// m64nNk instruction of the dtype and tile, its matrix descriptors' fixed bits (swizzle
// mode, stride and leading offsets) for each swizzle width, `wgmma.wait_group.sync.aligned 1`
// inside a pipelined K loop and 0 after it, the async proxy fence; mma_version=2 gives
// mma.sync and plain sm_90.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/host_types.hpp"
#include "support/reference.hpp"

using namespace tltest;
using tl::f32;
using tl::i32;
namespace codegen = tl::codegen;

namespace {

template <class A> using Acc = std::conditional_t<std::is_same_v<A, tl::tile<tl::ty::i8>>, i32, f32>;

// C[M, N] = A[M, K] . B with B stored [K, N], or [N, K] (B_T, transposed for the dot).
// SHARED: operands staged through one-stage tl::shared buffers (samples/gemm); else plain
// loads into the dot (tutorial 03), which the pipeliner stages when STAGES > 1.
template <class EA, class EB> auto& wgmma_kernel() {
  using C = Acc<EA>;
  static auto k = tl::kernel("wgmma_matmul", [](tl::ptr<EA> a, tl::ptr<EB> b, tl::ptr<C> c, i32 M, i32 N, i32 K,
                                                int BM, int BN, int BK, int B_T, int SHARED, int STAGES) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto acc = tl::zeros<C>({BM, BN});
    auto sa = tl::shared<typename EA::elem>({1, BM, BK});
    auto sb = tl::shared<typename EB::elem>(B_T ? tl::shape_t{1, BN, BK} : tl::shape_t{1, BK, BN});
    for (auto k0 : tl::range(0, K, BK, tl::num_stages(STAGES))) {
      auto kk = k0 + rk;
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(kk, 0),
                        tl::expand_dims(rm < M, 1) & tl::expand_dims(kk < K, 0), 0);
      auto y = B_T ? tl::load(b + tl::expand_dims(rn, 1) * K + tl::expand_dims(kk, 0),
                              tl::expand_dims(rn < N, 1) & tl::expand_dims(kk < K, 0), 0)
                   : tl::load(b + tl::expand_dims(kk, 1) * N + tl::expand_dims(rn, 0),
                              tl::expand_dims(kk < K, 1) & tl::expand_dims(rn < N, 0), 0);
      if (SHARED) {
        sa[0].store(x);
        sb[0].store(y);
        acc = tl::dot(sa[0].load(), B_T ? tl::trans(sb[0].load()) : sb[0].load(), acc);
      } else {
        acc = tl::dot(x, B_T ? tl::trans(y) : y, acc);
      }
    }
    tl::store(c + tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0), acc,
              tl::expand_dims(rm < M, 1) & tl::expand_dims(rn < N, 0));
  });
  return k;
}

struct Tile {
  int BM, BN, BK, warps, stages;
  bool shared, b_t;
};
struct Shape {
  int M, N, K;
};

std::string str(const Tile& t, const Shape& s) {
  return fmt::format("M{} N{} K{} tile {}x{}x{} {} warps {} stages {}{}", s.M, s.N, s.K, t.BM, t.BN, t.BK, t.warps,
                     t.stages, t.shared ? "tl::shared" : "plain loads", t.b_t ? " B^T" : "");
}

tl::launch_options options(const Tile& t, int mma_version) {
  tl::launch_options o;
  o.num_warps = t.warps;
  o.num_stages = t.stages;
  o.mma_version = mma_version;
  return o;
}

// The tiles a dtype of `bytes` bytes is run with: A's rows (BK * bytes) of 128, 64 and 32
// bytes; one warpgroup, two along M, two along N; synchronous (1 stage) and pipelined.
// 8-bit and 32-bit types take only K-major operands (B^T).
std::vector<Tile> tiles(int bytes) {
  const int k128 = 128 / bytes, k64 = 64 / bytes, k32 = 32 / bytes;
  const bool mn = bytes == 2;  // B stored [K, N] too
  std::vector<Tile> t = {{64, 64, k128, 4, 3, false, !mn}, {64, 64, k64, 4, 2, true, !mn},
                         {64, 32, k32, 4, 1, true, !mn},   {128, 128, k128, 8, 3, false, true},
                         {64, 256, k128, 8, 4, true, !mn}, {128, 256, k128, 8, 3, true, true}};
  if (bytes == 1) t[2].BK = 32;  // k32 instructions: FP8 and i8 rows are 32 bytes at least
  if (bytes == 4) t[2].BK = 16;  // tl::dot's smallest f32 K: TF32 rows are 64 bytes at least
  // f32 at 128x256: 3 stages of 48 KiB and the epilogue's 128 KiB conversion exceed 227 KiB
  if (bytes == 4) t[5].BN = 128;
  return t;
}

const Shape kShapes[] = {{64, 64, 64}, {200, 136, 300}, {1, 1, 1}};

template <class EA, class EB> void check(const Tile& t, const Shape& s, double range) {
  using C = Acc<EA>;
  const auto problem = random_dot_problem<EA, EB>(s.M, s.N, s.K, t.b_t, range);
  const auto& [want, scale] = problem.want;
  auto d = on_device<C>(problem, s.M, s.N);
  auto& k = wgmma_kernel<EA, EB>();
  // wgmma forced on the GPU where the operands are sure to be in shared memory: a
  // tl::shared buffer, or plain loads the pipeliner can copy there (every row of a tile
  // 16-byte aligned and masked in whole 16-byte chunks). Elsewhere tl chooses (a ragged
  // K masked element by element keeps its loads in registers, and the dot on mma.sync).
  const bool staged = t.shared || (t.stages > 1 && s.M % 16 == 0 && s.N % 16 == 0 && s.K % 16 == 0);
  k[tl::grid((s.M + t.BM - 1) / t.BM, (s.N + t.BN - 1) / t.BN)].on(test_device()).with(options(t, on_gpu() && staged ? 3 : 0))(
      d.a, d.b, d.c, s.M, s.N, s.K, t.BM, t.BN, t.BK, int(t.b_t), int(t.shared), t.stages);
  auto got = d.c.download();
  if constexpr (std::is_same_v<C, i32>) {
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(double(got[i]), want[i]) << "element " << i;
  } else {
    // Exact products summed in f32 in any order; f32 operands as TF32 on the GPU (each
    // product within 2^-9 of the exact one); FP8 on NVIDIA's tensor cores added with about
    // 13 fraction bits (samples/gemm/reference.hpp's sum_unit: 2^-18 a k instead of
    // 2^-23; wgmma's FP8 accumulation as Triton's default max_num_imprecise_acc leaves it).
    const bool tf32 = std::is_same_v<EA, f32> && on_gpu();
    const double unit = tl::is_fp8(EA::elem::dtype) && on_gpu() ? 0x1p-18 : 0x1p-23;
    EXPECT_TRUE(near(got, want, 0.0, 1e-30 + scale * (tf32 ? 0x1p-9 : 0.0) + scale * s.K * unit));
  }
}

template <class EA, class EB = EA> void check_all(double range) {
  for (const Tile& t : tiles(tl::bit_width(EA::elem::dtype) / 8))
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(str(t, s));
      check<EA, EB>(t, s, range);
      if (::testing::Test::HasFailure()) return;
    }
}

// On the GPU only where its matrix instructions take the format (the CPU takes all).
bool runs(tl::DType d) {
  if (!on_gpu()) return true;
  auto caps = tl::codegen::capabilities_for(tl::codegen::parse_target(test_device().target()));
  for (const auto& mi : caps.matrix_instructions)
    if (mi.family == tl::gpu::MatrixFamily::nvidia_wgmma && mi.a == d) return true;
  return false;
}

}  // namespace

#define WGMMA_TEST(name, EA, EB, range)                                                    \
  TEST(WarpgroupDot, name) {                                                               \
    if (!runs(EA::elem::dtype)) GTEST_SKIP() << test_device().target() << " has no wgmma"; \
    check_all<EA, EB>(range);                                                              \
  }
WGMMA_TEST(Bf16, tl::bf16, tl::bf16, 2.0)
WGMMA_TEST(F16, tl::f16, tl::f16, 2.0)
WGMMA_TEST(F32AsTf32, f32, f32, 2.0)
WGMMA_TEST(I8IsExact, tl::tile<tl::ty::i8>, tl::tile<tl::ty::i8>, 100.0)
WGMMA_TEST(Fp8E4m3, tl::f8e4m3fn, tl::f8e4m3fn, 4.0)
WGMMA_TEST(Fp8E5m2, tl::f8e5m2, tl::f8e5m2, 4.0)
WGMMA_TEST(Fp8E4m3TimesE5m2, tl::f8e4m3fn, tl::f8e5m2, 4.0)

namespace {

// The PTX of wgmma_kernel<E, E> compiled for sm_90 (no GPU needed).
template <class E> std::string ptx_of(const Tile& t, int mma_version = 0) {
  using H = typename Host<E>::T;
  auto* p = reinterpret_cast<H*>(uintptr_t(1) << 20);
  auto* c = reinterpret_cast<typename Acc<E>::elem::host*>(uintptr_t(1) << 21);
  std::string meta = wgmma_kernel<E, E>().compile("sm_90", options(t, mma_version), p, p, c, 4096, 4096, 4096, t.BM,
                                                  t.BN, t.BK, int(t.b_t), int(t.shared), t.stages);
  return isa_of_compiled(meta);
}

// The descriptor bits other than the address (warpgroup lowering, PTX ISA "Matrix
// Descriptor Format"), as the decimal literal PTX spells them: swizzle mode, stride offset
// 8 rows of `swz` bytes, leading offset `rows` x `swz` (one column block).
std::string descriptor_bits(int swz, int rows) {
  const uint64_t mode = swz == 128 ? 1 : swz == 64 ? 2 : 3;
  const uint64_t lbo = uint64_t(rows) * swz, sbo = 8 * uint64_t(swz);
  return std::to_string(int64_t((lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62));  // PTX prints it signed
}

}  // namespace

namespace {

// Where this machine has ptxas (TL_PTXAS, else the CUDA toolkit's), the PTX must assemble
// for sm_90a: the inline wgmma's operands are numbered by hand. Without one the check is
// the H100's (its driver assembles every kernel the GPU tests run).
void expect_assembles(const std::string& ptx) {
  std::string ptxas = std::getenv("TL_PTXAS") ? std::getenv("TL_PTXAS") : "/usr/local/cuda/bin/ptxas";
  if (access(ptxas.c_str(), X_OK) != 0) return;
  char path[] = "/tmp/tl-wgmma-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, ptx.data(), ptx.size()), ssize_t(ptx.size()));
  close(fd);
  const std::string cmd = ptxas + " -arch=sm_90a -o /dev/null " + path + " 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(pclose(p), 0) << out;
  }
  unlink(path);
}

}  // namespace

// Each swizzle width's descriptors, the instruction of the tile, sm_90a.
TEST(WarpgroupDotPtx, InstructionAndDescriptorsPerSwizzleWidth) {
  struct Case {
    Tile t;
    const char* instr;
    int swz_a, rows_a, swz_b, rows_b;
  };
  // bf16: A [BM, BK] rows of BK * 2 bytes; B [BK, BN] (MN-major) rows of BN * 2 bytes,
  // swizzled at 128 with column blocks of BK rows.
  for (const Case& c : {Case{{64, 64, 64, 4, 3, false, false}, "m64n64k16.f32.bf16.bf16", 128, 64, 128, 64},
                        Case{{64, 64, 32, 4, 2, true, false}, "m64n64k16.f32.bf16.bf16", 64, 64, 128, 32},
                        Case{{64, 32, 16, 4, 1, true, false}, "m64n32k16.f32.bf16.bf16", 32, 64, 64, 16},
                        Case{{128, 256, 64, 8, 3, true, false}, "m64n256k16.f32.bf16.bf16", 128, 128, 128, 64}}) {
    SCOPED_TRACE(fmt::format("{}x{}x{}", c.t.BM, c.t.BN, c.t.BK));
    std::string ptx = ptx_of<tl::bf16>(c.t);
    EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos);
    expect_assembles(ptx);
    EXPECT_GT(count(ptx, std::string("wgmma.mma_async.sync.aligned.") + c.instr), 0) << ptx.substr(0, 3000);
    EXPECT_EQ(count(ptx, "mma.sync"), 0);
    EXPECT_GT(count(ptx, descriptor_bits(c.swz_a, c.rows_a)), 0) << "A: " << descriptor_bits(c.swz_a, c.rows_a);
    EXPECT_GT(count(ptx, descriptor_bits(c.swz_b, c.rows_b)), 0) << "B: " << descriptor_bits(c.swz_b, c.rows_b);
    // B [K, N] is MN-major: imm-trans-b 1.
    EXPECT_GT(count(ptx, ", p, 1, 1, 0, 1;"), 0);
  }
  // FP8 (K-major only): B^T [BN, BK], no transpose immediates.
  std::string ptx = ptx_of<tl::f8e4m3fn>({128, 128, 128, 8, 3, true, true});
  expect_assembles(ptx);
  EXPECT_GT(count(ptx, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"), 0);
  EXPECT_GT(count(ptx, descriptor_bits(128, 128)), 0);
  EXPECT_GT(count(ptx, ", p, 1, 1;"), 0);
}

// The pipelined K loop keeps one group in flight: wait_group 1 in the loop after the
// commit, wait_group 0 after it (and on the path that skips it); the async proxy fence before the loop's barrier; the
// buffers one stage more than num_stages (4 x (128x64 + 64x256) bf16 = 192 KiB).
TEST(WarpgroupDotPtx, PipelinedLoopWaitsForAllButOneGroup) {
  const Tile t{128, 256, 64, 8, 3, false, false};
  std::string ptx = ptx_of<tl::bf16>(t);
  std::string loop = ptx_loop(ptx);
  ASSERT_FALSE(loop.empty());
  EXPECT_EQ(count(loop, "wgmma.fence.sync.aligned"), 1);
  EXPECT_EQ(count(loop, "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16"), 4);  // BK 64 / k 16
  EXPECT_EQ(count(loop, "wgmma.commit_group.sync.aligned"), 1);
  EXPECT_EQ(count(loop, "wgmma.wait_group.sync.aligned 1;"), 1);
  EXPECT_EQ(count(loop, "wgmma.wait_group.sync.aligned 0;"), 0);
  EXPECT_EQ(count(loop, "fence.proxy.async.shared::cta"), 1);
  EXPECT_LT(loop.find("fence.proxy.async.shared::cta"), loop.find("bar.sync"));
  EXPECT_EQ(count(loop, "bar.sync"), 1);
  // After the loop, and opening the path that skips it (lower_for: so that ptxas never
  // finds that path's copies into the accumulator between the loop's wgmma and its wait).
  EXPECT_EQ(count(ptx, "wgmma.wait_group.sync.aligned 0;"), 2);
  EXPECT_EQ(count(loop, "ldmatrix"), 0);
  auto meta = nlohmann::json::parse(
      wgmma_kernel<tl::bf16, tl::bf16>().compile("sm_90", options(t, 0), (tl::bfloat16*)(1 << 20), (tl::bfloat16*)(1 << 20),
                                                 (float*)(1 << 21), 4096, 4096, 4096, t.BM, t.BN, t.BK, 0, 0, t.stages));
  EXPECT_EQ(meta["report"]["dynamic_shared_bytes"].get<int64_t>(), 4 * (128 * 64 + 64 * 256) * 2);
  std::string remarks = meta["remarks"].dump();
  EXPECT_NE(remarks.find("4 buffers a tile for the asynchronous dot"), std::string::npos) << remarks;
}

// A dot outside a pipelined loop (one stage) waits for its group right away.
TEST(WarpgroupDotPtx, UnpipelinedDotWaitsAtOnce) {
  std::string ptx = ptx_of<tl::bf16>({64, 32, 16, 4, 1, true, false});
  std::string loop = ptx_loop(ptx);
  EXPECT_EQ(count(loop, "wgmma.wait_group.sync.aligned 0;"), 1);
  EXPECT_EQ(count(loop, "wgmma.wait_group.sync.aligned 1;"), 0);
}

// mma_version=2 keeps mma.sync (and plain sm_90); 3 on a tile wgmma cannot take (M 32 <
// 64 a warpgroup) is an error at the dot's line; tl's choice there is mma.sync.
TEST(WarpgroupDotPtx, MmaVersionChoosesTheInstruction) {
  std::string ptx = ptx_of<tl::bf16>({64, 64, 64, 4, 3, false, false}, 2);
  EXPECT_EQ(count(ptx, "wgmma."), 0);
  EXPECT_GT(count(ptx, "mma.sync.aligned.m16n8k16"), 0);
  EXPECT_NE(ptx.find(".target sm_90\n"), std::string::npos);
  // The option is in the cache key: the two compiles are two entries.
  codegen::CompileOptions a, b;
  b.mma_version = 2;
  EXPECT_NE(a.key(), b.key());
  const Tile small{32, 64, 64, 4, 3, false, false};
  EXPECT_GT(count(ptx_of<tl::bf16>(small), "mma.sync.aligned.m16n8k16"), 0);
  try {
    ptx_of<tl::bf16>(small, 3);
    ADD_FAILURE() << "mma_version=3 compiled a 32-row tile";
  } catch (const tl::compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("mma_version=3 (wgmma) cannot take this dot"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("warpgroup_dot_test.cpp"), std::string::npos) << e.what();
  }
}

// The pipeliner's stage more for an asynchronous dot is a guess that shared memory has
// room: f32 at 64x256x32 with 4 stages takes 5 x 40 KiB of stages plus its epilogue's
// 64 KiB conversion, over sm_90's 227 KiB if both were live at once. They are not: the
// epilogue's scratch goes into the stages' bytes, dead after the loop (the allocator's
// scratch placement, with a remark), so the stage more stays and the dot runs
// asynchronously. (Where a program truly lacks room the compile plans again with fewer
// stages: pipeline_policy_test.)
TEST(WarpgroupDotPtx, ExtraStageKeptWhereTheEpilogueScratchReusesTheStages) {
  const Tile t{64, 256, 32, 8, 4, true, true};
  auto meta = nlohmann::json::parse(wgmma_kernel<f32, f32>().compile(
      "sm_90", options(t, 0), (float*)(1 << 20), (float*)(1 << 20), (float*)(1 << 21), 300, 136, 200, t.BM, t.BN, t.BK,
      int(t.b_t), int(t.shared), t.stages));
  std::string remarks = meta["remarks"].dump();
  EXPECT_NE(remarks.find("num_stages=4: yes"), std::string::npos) << remarks;
  EXPECT_NE(remarks.find("5 buffers a tile for the asynchronous dot"), std::string::npos) << remarks;
  EXPECT_NE(remarks.find("share bytes with tl::shared buffers not live where they are used"), std::string::npos)
      << remarks;
  EXPECT_LE(meta["report"]["shared_bytes"].get<int64_t>(), 5 * 40 * 1024);
  std::string ptx = isa_of_compiled(meta.dump());
  EXPECT_GT(count(ptx, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32"), 0);
  EXPECT_EQ(count(ptx_loop(ptx), "wgmma.wait_group.sync.aligned 1;"), 1);
}

// Which loops the launch's num_stages pipelines (codegen/passes/pipeline_loops.cpp,
// loop_num_stages): Triton's rule. An innermost loop whose loads feed a tl::dot is
// pipelined at the launch's num_stages, those loads only; an outer loop, or a loop without
// a dot, is not, and the compile report says why; a loop's own tl::num_stages still wins.
//
// The case that asked for it: Triton's tutorial 09 persistent matmul (an outer loop over
// output tiles, the K loop inside), launched with num_stages=3 as the tutorial does. When
// the launch option pipelined every loop, its outer loop was pipelined too and the gfx942
// compile of the 128x256x64, 8-warp kernel (without the tutorial's hints, which tl did not
// have yet) spilled 523 VGPRs, against 20 with the outer loop given num_stages(1) by hand.
// Now: 256 VGPRs and 11 spilled either way (20 without the hints), when measured.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
using tl::f32;
using tl::i32;

namespace {

// _compute_pid of the tutorial: grouped program order over the output tiles.
struct Pid {
  i32 m, n;
};
Pid compute_pid(const i32& tile_id, const i32& num_pid_in_group, const i32& num_pid_m, int GROUP_SIZE_M) {
  auto group_id = tile_id / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + (tile_id % group_size_m);
  auto pid_n = (tile_id % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

// matmul_kernel_persistent of Triton's tutorial 09, statement for statement (f16 in and
// out, f32 accumulation). OUTER_STAGES 0: the tile loop as the tutorial writes it
// (`tl.range(start_pid, num_tiles, NUM_SMS)`), taking the launch's num_stages by its rules;
// else `tl::num_stages(OUTER_STAGES)` on it by hand.
auto& persistent_matmul() {
  static auto k = tl::kernel(
      "matmul_kernel_persistent",
      [](tl::ptr<tl::f16> a_ptr, tl::ptr<tl::f16> b_ptr, tl::ptr<tl::f16> c_ptr, i32 M, i32 N, i32 K, i32 stride_am,
         i32 stride_ak, i32 stride_bk, i32 stride_bn, i32 stride_cm, i32 stride_cn, int BLOCK_SIZE_M,
         int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int NUM_SMS, int OUTER_STAGES) {
        auto start_pid = tl::program_id(0);
        auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
        auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
        auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
        auto num_tiles = num_pid_m * num_pid_n;
        auto tile_id_c = start_pid - NUM_SMS;
        auto offs_k_for_mask = tl::arange(0, BLOCK_SIZE_K);
        auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
        auto tile = [&](const i32& tile_id) {
          auto [pid_m, pid_n] = compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
          auto start_m = pid_m * BLOCK_SIZE_M;
          auto start_n = pid_n * BLOCK_SIZE_N;
          auto offs_am = start_m + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = start_n + tl::arange(0, BLOCK_SIZE_N);
          offs_am = tl::where(offs_am < M, offs_am, 0);
          offs_bn = tl::where(offs_bn < N, offs_bn, 0);
          offs_am = tl::max_contiguous(tl::multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
          offs_bn = tl::max_contiguous(tl::multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);
          auto accumulator = tl::zeros<f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
          for (auto ki : tl::range(k_tiles)) {
            auto offs_k = ki * BLOCK_SIZE_K + tl::arange(0, BLOCK_SIZE_K);
            auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * stride_am + tl::expand_dims(offs_k, 0) * stride_ak);
            auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_bn, 0) * stride_bn);
            auto a = tl::load(a_ptrs, tl::expand_dims(offs_k_for_mask, 0) < K - ki * BLOCK_SIZE_K, 0.0f);
            auto b = tl::load(b_ptrs, tl::expand_dims(offs_k_for_mask, 1) < K - ki * BLOCK_SIZE_K, 0.0f);
            accumulator = tl::dot(a, b, accumulator);
          }
          tile_id_c += NUM_SMS;
          auto [cm, cn] = compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M);
          auto offs_cm = cm * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = cn * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + stride_cm * tl::expand_dims(offs_cm, 1) + stride_cn * tl::expand_dims(offs_cn, 0);
          auto c_mask = tl::expand_dims(offs_cm < M, 1) & tl::expand_dims(offs_cn < N, 0);
          tl::store(c_ptrs, accumulator.to<tl::f16>(), c_mask);
        };
        if (OUTER_STAGES > 0)
          for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS, tl::num_stages(OUTER_STAGES))) tile(tile_id);
        else
          for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS)) tile(tile_id);
      });
  return k;
}

std::vector<std::string> remarks_of(const std::string& meta) {
  return nlohmann::json::parse(meta).at("remarks").get<std::vector<std::string>>();
}
std::vector<std::string> pipelined(const std::vector<std::string>& remarks) {
  std::vector<std::string> out;
  for (auto& r : remarks)
    if (r.rfind("pipelined:", 0) == 0) out.push_back(r);
  return out;
}
std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, "\n")); }

// The compile arguments of an [M, K] x [K, N] problem (pointers only shape the
// specialization: 16-byte aligned, as device buffers).
template <class... Extra> std::string compile_persistent(const std::string& target, const tl::launch_options& o,
                                                         int M, int N, int K, Extra... extra) {
  auto* p = reinterpret_cast<tl::half*>(uintptr_t(1) << 20);
  return persistent_matmul().compile(target, o, p, p, p, M, N, K, K, 1, N, 1, N, 1, extra...);
}

// The K loop (inner, feeding the dot) is pipelined at the launch's 3 stages; the tile
// loop around it is not, and says why.
TEST(PipelinePolicy, PersistentMatmulPipelinesItsKLoopOnly) {
  auto r = pipelined(remarks_of(compile_persistent("cpu", {.num_warps = 4, .num_stages = 3}, 256, 256, 256, 32, 32,
                                                   16, 8, 4, /*OUTER_STAGES=*/0)));
  ASSERT_EQ(r.size(), 2u) << joined(r);
  // inner loops first
  EXPECT_NE(r[0].find("num_stages=3: yes (2 loads into registers"), std::string::npos) << joined(r);
  EXPECT_NE(r[1].find("num_stages=3: no (the launch's num_stages pipelines innermost loops whose loads feed a "
                      "tl::dot, as Triton's does; this loop contains a loop: give it tl::num_stages(3) to pipeline it)"),
            std::string::npos)
      << joined(r);
  // Given by hand, the outer loop's own num_stages wins: pipelined (its loads are inside
  // the K loop, which the remark names) and the K loop keeps the launch's.
  auto own = pipelined(remarks_of(compile_persistent("cpu", {.num_warps = 4, .num_stages = 3}, 256, 256, 256, 32, 32,
                                                     16, 8, 4, /*OUTER_STAGES=*/2)));
  ASSERT_EQ(own.size(), 2u) << joined(own);
  EXPECT_NE(own[0].find("num_stages=3: yes"), std::string::npos) << joined(own);
  EXPECT_NE(own[1].find("num_stages=2:"), std::string::npos) << joined(own);
  EXPECT_EQ(own[1].find("this loop contains a loop"), std::string::npos) << joined(own);
}

// Run on the test device against a double reference, ragged M, N and K, more tiles than
// programs: the launch's num_stages=3 gives the result num_stages=1 gives, bit for bit.
TEST(PipelinePolicy, PersistentMatmulIsExactAtEveryStageCount) {
  const int M = 100, N = 72, K = 88, BM = 32, BN = 32, BK = 16, GROUP = 2, SMS = 3;
  auto a = random_floats(size_t(M) * K), b = random_floats(size_t(K) * N);
  std::vector<tl::half> ah, bh;
  for (float v : a) ah.push_back(tl::to_f16(v));
  for (float v : b) bh.push_back(tl::to_f16(v));
  auto A = upload<tl::ty::f16>(ah), B = upload<tl::ty::f16>(bh);
  auto C = test_device().alloc<tl::ty::f16>(size_t(M) * N);
  std::vector<tl::half> first;
  for (int stages : {1, 3}) {
    poison(C);
    persistent_matmul()[tl::grid(SMS)].with({.num_warps = 4, .num_stages = stages})(A, B, C, M, N, K, K, 1, N, 1, N, 1,
                                                                                   BM, BN, BK, GROUP, SMS, 0);
    auto c = C.download();
    if (stages == 1) {
      first = c;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double want = 0;
          for (int k = 0; k < K; ++k) want += to_double(ah[size_t(i) * K + k]) * to_double(bh[size_t(k) * N + j]);
          double got = to_double(c[size_t(i) * N + j]);
          ASSERT_NEAR(got, want, 2e-2 + 2e-3 * std::fabs(want)) << i << ", " << j;
        }
    } else {
      for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(to_double(c[i]), to_double(first[i])) << "num_stages " << stages;
    }
  }
}

// The tutorial's configuration on gfx942: 128x256x64 tiles, 8 warps, launch num_stages=3.
// It spills no more than the same kernel with its outer loop at num_stages(1) by hand.
TEST(PipelinePolicy, PersistentMatmulOnGfx942SpillsNoMoreThanWithItsOuterLoopAtOneStage) {
  const tl::launch_options o{.num_warps = 8, .num_stages = 3};
  auto as_written = nlohmann::json::parse(compile_persistent("gfx942", o, 4096, 4096, 4096, 128, 256, 64, 8, 304, 0));
  auto by_hand = nlohmann::json::parse(compile_persistent("gfx942", o, 4096, 4096, 4096, 128, 256, 64, 8, 304, 1));
  const auto& w = as_written["report"];
  const auto& h = by_hand["report"];
  std::cout << "gfx942 persistent matmul 128x256x64 w8 s3: as written " << w["vgpr"] << " VGPRs, "
            << w["spill_vgpr"] << " spilled, " << w["agpr"] << " AGPRs; outer loop num_stages(1) " << h["vgpr"] << " VGPRs, " << h["spill_vgpr"]
            << " spilled\n";
  EXPECT_LE(w["spill_vgpr"].get<int>(), h["spill_vgpr"].get<int>());
  EXPECT_LE(w["vgpr"].get<int>(), h["vgpr"].get<int>());
  // The schedule remark's figure for the schedule it chose is the report's VGPRs (the
  // code object's unified count, AGPRs included: it once added the AGPRs again).
  for (const auto* meta : {&as_written, &by_hand}) {
    std::string sched;
    for (const auto& line : (*meta)["remarks"]) {
      std::string s = line.get<std::string>();
      if (s.rfind("schedule: ", 0) == 0) sched = s;
    }
    ASSERT_FALSE(sched.empty());
    const std::string strategy = sched.substr(10, sched.find(" (") - 10);
    const int vgpr = (*meta)["report"]["vgpr"].get<int>();
    EXPECT_NE(sched.find(fmt::format("{} {}", strategy, vgpr)), std::string::npos)
        << sched << " (report: " << vgpr << " VGPRs, " << (*meta)["report"]["agpr"] << " of them AGPRs)";
  }
  auto r = pipelined(as_written["remarks"].get<std::vector<std::string>>());
  ASSERT_EQ(r.size(), 2u) << joined(r);
  EXPECT_NE(r[0].find("num_stages=3: yes"), std::string::npos) << joined(r);
  EXPECT_NE(r[1].find("num_stages=3: no"), std::string::npos) << joined(r);
}

// A loop of elementwise loads (no tl::dot) is left as written by the launch's num_stages;
// with its own tl::num_stages it is pipelined.
auto& sum_rows() {
  static auto k = tl::kernel("policy_sum_rows", [](tl::ptr<f32> x, tl::ptr<f32> y, i32 n, int OWN) {
    auto c = tl::arange(0, 64);
    auto acc = tl::zeros<f32>({64});
    if (OWN)
      for (auto i : tl::range(0, n, 1, tl::num_stages(OWN))) acc = acc + tl::load(x + i * 64 + c);
    else
      for (auto i : tl::range(0, n)) acc = acc + tl::load(x + i * 64 + c);
    tl::store(y + c, acc);
  });
  return k;
}

TEST(PipelinePolicy, LoopWithoutADotTakesOnlyItsOwnNumStages) {
  auto X = test_device().alloc<tl::ty::f32>(64 * 9), Y = test_device().alloc<tl::ty::f32>(64);
  auto launch = pipelined(remarks_of(sum_rows().compile("cpu", {.num_stages = 3}, X, Y, 9, 0)));
  ASSERT_EQ(launch.size(), 1u) << joined(launch);
  EXPECT_NE(launch[0].find("num_stages=3: no (the launch's num_stages pipelines innermost loops whose loads feed a "
                           "tl::dot, as Triton's does; this loop has no tl::dot in its body: give it "
                           "tl::num_stages(3) to pipeline it)"),
            std::string::npos)
      << launch[0];
  auto own = pipelined(remarks_of(sum_rows().compile("cpu", {.num_stages = 3}, X, Y, 9, 2)));
  ASSERT_EQ(own.size(), 1u) << joined(own);
  EXPECT_NE(own[0].find("num_stages=2: yes (1 load into registers"), std::string::npos) << own[0];
}

// In a loop the launch pipelines, only the loads that feed the dot are issued ahead; a
// load of a per-iteration scale that only multiplies the accumulator is not, and the
// remark says so. With the loop's own num_stages both are.
auto& scaled_dot() {
  static auto k = tl::kernel("policy_scaled_dot", [](tl::ptr<f32> a, tl::ptr<f32> b, tl::ptr<f32> s,
                                                      tl::ptr<f32> y, i32 n, int OWN) {
    auto r = tl::arange(0, 16);
    auto off = tl::expand_dims(r, 1) * 16 + tl::expand_dims(r, 0);
    auto acc = tl::zeros<f32>({16, 16});
    auto body = [&](const i32& i) {
      acc = tl::dot(tl::load(a + i * 256 + off), tl::load(b + i * 256 + off), acc) * tl::load(s + i);
    };
    if (OWN)
      for (auto i : tl::range(0, n, 1, tl::num_stages(OWN))) body(i);
    else
      for (auto i : tl::range(0, n)) body(i);
    tl::store(y + off, acc);
  });
  return k;
}

TEST(PipelinePolicy, LaunchStagesPipelineOnlyTheLoadsThatFeedADot) {
  const int n = 5;
  auto av = random_floats(256 * n), bv = random_floats(256 * n), sv = random_floats(n, 0.5f, 1.5f);
  auto A = upload<tl::ty::f32>(av), B = upload<tl::ty::f32>(bv), S = upload<tl::ty::f32>(sv);
  auto Y = test_device().alloc<tl::ty::f32>(256);
  auto launch = pipelined(remarks_of(scaled_dot().compile("cpu", {.num_stages = 2}, A, B, S, Y, n, 0)));
  ASSERT_EQ(launch.size(), 1u) << joined(launch);
  EXPECT_NE(launch[0].find("num_stages=2: yes (2 loads into registers, 0 into shared memory); not pipelined: load at "
                           "pipeline_policy_test.cpp:"),
            std::string::npos)
      << launch[0];
  EXPECT_NE(launch[0].find("does not feed a tl::dot"), std::string::npos) << launch[0];
  auto own = pipelined(remarks_of(scaled_dot().compile("cpu", {.num_stages = 2}, A, B, S, Y, n, 2)));
  ASSERT_EQ(own.size(), 1u) << joined(own);
  EXPECT_NE(own[0].find("num_stages=2: yes (3 loads into registers"), std::string::npos) << own[0];
  // And every form computes the same, against a double reference.
  std::vector<double> want(256, 0.0);
  for (int i = 0; i < n; ++i) {
    std::vector<double> next(256, 0.0);
    for (int p = 0; p < 16; ++p)
      for (int q = 0; q < 16; ++q) {
        double d = want[size_t(p * 16 + q)];
        for (int k = 0; k < 16; ++k) d += double(av[size_t(i * 256 + p * 16 + k)]) * bv[size_t(i * 256 + k * 16 + q)];
        next[size_t(p * 16 + q)] = d * sv[size_t(i)];
      }
    want = next;
  }
  for (auto [stages, own_stages] : {std::pair{1, 0}, {2, 0}, {1, 2}}) {
    poison(Y);
    scaled_dot()[tl::grid(1)].with({.num_stages = stages})(A, B, S, Y, n, own_stages);
    EXPECT_TRUE(near(Y.download(), want, 1e-4, 1e-4)) << "launch " << stages << " own " << own_stages;
  }
}

// Two kernels of one program (the same name, body and arguments) written at different
// lines share a cache entry: the cache key leaves locations out. The second compile is a
// hit, and its remarks name its own lines, not those of the trace that made the entry.
TEST(PipelinePolicy, RemarksOnACacheHitNameThisTracesLines) {
  const unsigned first = __LINE__ + 5;
  auto k1 = tl::kernel("policy_same_program", [](tl::ptr<f32> a, tl::ptr<f32> s, tl::ptr<f32> y, i32 n) {
    auto r = tl::arange(0, 16);
    auto off = tl::expand_dims(r, 1) * 16 + tl::expand_dims(r, 0);
    auto acc = tl::zeros<f32>({16, 16});
    for (auto i : tl::range(0, n)) {
      acc = tl::dot(tl::load(a + i * 256 + off), tl::load(a + i * 256 + off), acc) * tl::load(s + i);
    }
    tl::store(y + off, acc);
  });

  // (the same program, a few lines further down)

  const unsigned second = __LINE__ + 5;
  auto k2 = tl::kernel("policy_same_program", [](tl::ptr<f32> a, tl::ptr<f32> s, tl::ptr<f32> y, i32 n) {
    auto r = tl::arange(0, 16);
    auto off = tl::expand_dims(r, 1) * 16 + tl::expand_dims(r, 0);
    auto acc = tl::zeros<f32>({16, 16});
    for (auto i : tl::range(0, n)) {
      acc = tl::dot(tl::load(a + i * 256 + off), tl::load(a + i * 256 + off), acc) * tl::load(s + i);
    }
    tl::store(y + off, acc);
  });
  auto A = test_device().alloc<tl::ty::f32>(256 * 4), S = test_device().alloc<tl::ty::f32>(4),
       Y = test_device().alloc<tl::ty::f32>(256);
  auto expect_lines = [](const std::string& meta, unsigned loop) {
    auto r = pipelined(remarks_of(meta));
    ASSERT_EQ(r.size(), 1u) << joined(r);
    EXPECT_NE(r[0].find(fmt::format("pipelined: loop at pipeline_policy_test.cpp:{} num_stages=2: yes (1 load into "
                                    "registers, 0 into shared memory); not pipelined: load at "
                                    "pipeline_policy_test.cpp:{} does not feed a tl::dot",
                                    loop, loop + 1)),
              std::string::npos)
        << r[0];
  };
  expect_lines(k1.compile("cpu", {.num_stages = 2}, A, S, Y, 4), first);
  const uint64_t hits = tl::stats().disk_hits;
  expect_lines(k2.compile("cpu", {.num_stages = 2}, A, S, Y, 4), second);
  if (!std::getenv("TL_ALWAYS_COMPILE"))  // (which turns the disk cache's reads off)
    EXPECT_EQ(tl::stats().disk_hits, hits + 1) << "the second compile was not a cache hit";
}

}  // namespace

namespace {

// A matmul with both operands K-contiguous (B given transposed, as B^T [N, K]), both of
// which the pipeliner stages through shared memory on a GPU, and a row maximum of the
// result: a reduction across warps through the scratch region. With IN_LOOP, also a
// running column maximum of the accumulator inside the K loop (another reduction across
// warps), whose scratch is used while the stages are live.
auto& abt_matmul_rowmax() {
  static auto k = tl::kernel("policy_abt_matmul", [](tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> bt, tl::ptr<tl::bf16> c,
                                                      tl::ptr<f32> rowmax, i32 K, int BM, int BN, int BK, int STAGES,
                                                      int IN_LOOP) {
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto acc = tl::zeros<f32>({BM, BN});
    auto colmax = tl::zeros<f32>({BN});
    for (auto k : tl::range(0, K, BK, tl::num_stages(STAGES))) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0));
      auto y = tl::load(bt + tl::expand_dims(rn, 1) * K + tl::expand_dims(k + rk, 0));
      acc = tl::dot(x, tl::trans(y), acc);
      if (IN_LOOP) colmax = tl::maximum(colmax, tl::max(acc, 0));
    }
    auto n = tl::num_programs(1) * BN;
    tl::store(c + tl::expand_dims(rm, 1) * n + tl::expand_dims(rn, 0), acc.to<tl::bf16>());
    tl::store(rowmax + rm, tl::max(acc, 1));
    if (IN_LOOP) tl::store(rowmax + BM + rn, colmax);
  });
  return k;
}

// 128x128x64 bf16 at 2 stages: A and B staged fill gfx942's 64 KiB exactly. The row
// maximum after the loop takes its scratch from the stages' bytes, dead by then (the
// allocator places the scratch above only the buffers live where it is used): 2 stages
// fit, with a remark. The column maximum inside the loop needs scratch while the stages
// are live, which the pipeliner does not see (the allocation does, and says so as data):
// instead of a compile error the loop is pipelined again with a stage fewer, and the
// report says so.
TEST(PipelineStages, StagesThatDoNotFitWithTheScratchArePlannedFewer) {
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 21);
  for (int in_loop : {0, 1}) {
    SCOPED_TRACE(in_loop ? "a reduction inside the loop" : "a reduction after the loop");
    auto meta = nlohmann::json::parse(abt_matmul_rowmax().compile("gfx942", {.num_warps = 4}, p, p, p, f, 4096, 128,
                                                                  128, 64, 2, in_loop));
    auto remarks = meta["remarks"].get<std::vector<std::string>>();
    EXPECT_LE(meta["report"]["lds_bytes"].get<int>(), 65536);
    auto said = [&](const char* a, const char* b = "") {
      return std::any_of(remarks.begin(), remarks.end(), [&](const std::string& r) {
        return r.find(a) != std::string::npos && r.find(b) != std::string::npos;
      });
    };
    if (!in_loop) {
      EXPECT_TRUE(said("num_stages=2: yes")) << joined(remarks);
      EXPECT_TRUE(said("share bytes with tl::shared buffers not live where they are used")) << joined(remarks);
      continue;
    }
    EXPECT_TRUE(said(": 2 stages did not fit the target's shared memory (", "planned again with 1")) << joined(remarks);
    EXPECT_TRUE(said("num_stages=2: no (its stages did not fit the target's shared memory)")) << joined(remarks);
  }
}

// Two K loops in one program, each staging A and B (64x64x64 bf16: 32 KiB at 2 stages,
// both within the pipeliner's estimate of gfx942's 64 KiB), the second also transposing a
// [64, 256] f32 tile through 64 KiB of scratch while its stages are live, which only the
// allocation sees: only the loop whose buffers are live where the program overflows gives
// a stage up (planned again a loop at a time, not every loop at once); the first keeps
// its 2 stages.
TEST(PipelineStages, OnlyTheLoopWhoseBuffersOverflowGivesAStageUp) {
  static unsigned first = 0, second = 0;
  auto k = tl::kernel("policy_two_k_loops", [](tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> bt, tl::ptr<f32> c,
                                               tl::ptr<f32> x, tl::ptr<f32> y, i32 K) {
    const int B = 64;
    auto rm = tl::program_id(0) * B + tl::arange(0, B);
    auto rn = tl::program_id(1) * B + tl::arange(0, B);
    auto rk = tl::arange(0, B);
    auto r = tl::arange(0, 64), w = tl::arange(0, 256);
    auto acc = tl::zeros<f32>({B, B});
    first = __LINE__ + 1;
    for (auto k : tl::range(0, K, B, tl::num_stages(2))) {
      auto u = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0));
      auto v = tl::load(bt + tl::expand_dims(rn, 1) * K + tl::expand_dims(k + rk, 0));
      acc = tl::dot(u, tl::trans(v), acc);
    }
    auto acc2 = tl::zeros<f32>({B, B});
    second = __LINE__ + 1;
    for (auto k : tl::range(0, K, B, tl::num_stages(2))) {
      auto u = tl::load(bt + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0));
      auto v = tl::load(a + tl::expand_dims(rn, 1) * K + tl::expand_dims(k + rk, 0));
      acc2 = tl::dot(u, tl::trans(v), acc2);
      auto t = tl::load(x + k * 256 + tl::expand_dims(r, 1) * 256 + tl::expand_dims(w, 0));
      tl::store(y + k * 256 + tl::expand_dims(w, 1) * 64 + tl::expand_dims(r, 0), tl::trans(t));
    }
    auto n = tl::num_programs(1) * B;
    tl::store(c + tl::expand_dims(rm, 1) * n + tl::expand_dims(rn, 0), acc + acc2);
  });
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  auto* f = reinterpret_cast<float*>(uintptr_t(1) << 21);
  auto meta = nlohmann::json::parse(k.compile("gfx942", {.num_warps = 4}, p, p, f, f, f, 4096));
  auto remarks = meta["remarks"].get<std::vector<std::string>>();
  EXPECT_LE(meta["report"]["lds_bytes"].get<int>(), 65536);
  auto said = [&](const std::string& a, const std::string& b = "") {
    return std::any_of(remarks.begin(), remarks.end(), [&](const std::string& r) {
      return r.find(a) != std::string::npos && r.find(b) != std::string::npos;
    });
  };
  const std::string l1 = fmt::format("loop at pipeline_policy_test.cpp:{}", first);
  const std::string l2 = fmt::format("loop at pipeline_policy_test.cpp:{}", second);
  EXPECT_TRUE(said(l1 + " num_stages=2: yes (0 loads into registers, 2 into shared memory")) << joined(remarks);
  EXPECT_TRUE(said(l2 + ": 2 stages did not fit the target's shared memory (", "planned again with 1"))
      << joined(remarks);
  EXPECT_TRUE(said(l2 + " num_stages=2: no (its stages did not fit the target's shared memory)")) << joined(remarks);
  EXPECT_FALSE(said(l1 + ": 2 stages did not fit")) << joined(remarks);
}

// What fits at no stage count is a compile error at the user's line: a tl::shared buffer
// that takes gfx942's whole 64 KiB, live across a loop whose tile is transposed through
// the scratch region. The error names the conversion's line, the buffer live there and
// its line, and the loop.
TEST(PipelineStages, WhatFitsAtNoStageCountIsAnErrorAtTheUsersLine) {
  static unsigned buffer = 0, loop = 0, line = 0;
  auto k = tl::kernel("policy_nothing_fits", [](tl::ptr<f32> x, tl::ptr<f32> y, i32 n) {
    auto r = tl::arange(0, 64);
    auto off = tl::expand_dims(r, 1) * 64 + tl::expand_dims(r, 0);
    buffer = __LINE__ + 1;
    auto keep = tl::shared<f32>({4, 64, 64});
    keep[0].store(tl::load(x + off));
    loop = __LINE__ + 1;
    for (auto i : tl::range(0, n)) {
      auto v = tl::load(x + i * 4096 + off);
      line = __LINE__ + 1;
      tl::store(y + i * 4096 + off, tl::trans(v));
    }
    tl::store(y + off, keep[0].load());
  });
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  try {
    k.compile("gfx942", {.num_warps = 4}, p, p, 8);
    ADD_FAILURE() << "64 KiB of tl::shared and a conversion's scratch compiled for gfx942";
  } catch (const tl::compile_error& e) {
    const std::string what = e.what();
    EXPECT_NE(e.file().find("pipeline_policy_test.cpp"), std::string::npos) << what;
    EXPECT_EQ(e.line(), line) << what;
    EXPECT_NE(what.find("bytes of shared memory needed"), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("smem<4 x tile<64x64xf32>> at pipeline_policy_test.cpp:{}", buffer)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(fmt::format("in the loop at pipeline_policy_test.cpp:{}", loop)), std::string::npos) << what;
  }
}

// A conversion whose scratch does not fit is a compile error at the user's line, found by
// allocate_shared_memory before anything is lowered: a [128, 256] f32 transpose exchanges
// 128 KiB through shared memory, over gfx942's 64 KiB (gfx950 has 160).
TEST(PipelineStages, ScratchOverflowOfAConversionNamesTheLine) {
  static unsigned line = 0;
  auto k = tl::kernel("policy_big_transpose", [](tl::ptr<f32> x, tl::ptr<f32> y) {
    auto r = tl::arange(0, 128), c = tl::arange(0, 256);
    auto v = tl::load(x + tl::expand_dims(r, 1) * 256 + tl::expand_dims(c, 0));
    line = __LINE__ + 1;
    tl::store(y + tl::expand_dims(c, 1) * 128 + tl::expand_dims(r, 0), tl::trans(v));
  });
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  EXPECT_NO_THROW(k.compile("gfx950", {.num_warps = 8}, p, p));
  try {
    k.compile("gfx942", {.num_warps = 8}, p, p);
    ADD_FAILURE() << "128 KiB of shared memory compiled for gfx942";
  } catch (const tl::compile_error& e) {
    EXPECT_NE(e.file().find("pipeline_policy_test.cpp"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes of shared memory needed"), std::string::npos) << e.what();
  }
}

}  // namespace

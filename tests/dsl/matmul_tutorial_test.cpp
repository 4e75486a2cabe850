// Triton's tutorial-03 matmul as its users write it (bench/matmul_tutorial.hpp: pointers
// carried through the K loop and advanced by `+= BLOCK_K * stride`, plain masked loads
// feeding tl::dot, `acc += tl::dot(...)`, no tl::shared), run on the test device (the
// CPU in CI, a GPU with TL_DEVICE): against a double-precision reference on random bf16
// operands, ragged K included, and for num_stages 2..4 bit for bit what the unpipelined
// loop (num_stages 1) gives, for K loops of 0, 1, 2 and many iterations. M and N are
// multiples of the blocks: the tutorial (as the anchor writes it) masks its loads along K
// only and reads past the last row of A or column of B otherwise.
// Outputs poisoned before every launch.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench/matmul_tutorial.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

std::vector<tl::bfloat16> random_bf16s(size_t n, float range) {
  auto f = random_floats(n, -range, range);
  std::vector<tl::bfloat16> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = tl::to_bf16(f[i]);
  return h;
}

// C = A.B in double, then the error bound of a bf16 result with f32 accumulation: the
// rounding to bf16 (2^-8 relative) plus K f32 roundings of partial sums of |a||b|.
void check(const std::vector<tl::bfloat16>& a, const std::vector<tl::bfloat16>& b, const std::vector<tl::bfloat16>& c,
           int M, int N, int K, const std::string& what) {
  int bad = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double want = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double p = double(tl::to_float(a[size_t(i) * K + k])) * double(tl::to_float(b[size_t(k) * N + j]));
        want += p, mag += std::abs(p);
      }
      double got = tl::to_float(c[size_t(i) * N + j]);
      double bound = std::abs(want) * 0x1p-8 + mag * K * 0x1p-23 + 1e-30;
      if (!(std::abs(got - want) <= bound) && bad++ < 5)
        ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got << ", want " << want << " +- " << bound;
    }
  EXPECT_EQ(bad, 0) << what;
}

TEST(MatmulTutorial, MatchesTheReferenceAndEveryStageCountTheUnpipelinedLoop) {
  // Small tiles so that the CPU runs many programs and K iterations quickly: M 96 and N
  // 64 over 32x32 blocks, K 0, 16 (one partial block), 40 (two), 200 (seven, the last
  // partial).
  for (int K : {0, 16, 40, 200}) {
    const int M = 96, N = 64;
    auto a = random_bf16s(size_t(M) * std::max(K, 1), 1.0f), b = random_bf16s(size_t(std::max(K, 1)) * N, 1.0f);
    auto A = upload<tl::ty::bf16>(a), B = upload<tl::ty::bf16>(b);
    std::vector<tl::bfloat16> unpipelined;
    for (int stages = 1; stages <= 4; ++stages) {
      const std::string what = fmt::format("K {} num_stages {}", K, stages);
      matmul_tutorial::Config c{32, 32, 32, 2, stages, 4};
      auto C = test_device().alloc<tl::ty::bf16>(size_t(M) * N);
      poison(C);
      matmul_tutorial::matmul<tl::bf16>(test_device(), c, A, B, C, M, N, K);
      auto got = C.download();
      if (stages == 1) {
        check(a, b, got, M, N, K, what);
        unpipelined = got;
      } else {
        EXPECT_EQ(std::memcmp(got.data(), unpipelined.data(), got.size() * sizeof(got[0])), 0) << what;
      }
    }
  }
}

// Two K loops Triton users write beside the tutorial's, each with carried pointers:
//  - split-K (Triton's split-K matmul): program (m, n, s) sums K blocks s, s + SPLIT, ...
//    (the loop's start and step from program_id and a constant), pointers advanced by
//    BLOCK_K * SPLIT, the partial products added into C with atomic_add;
//  - grouped (a mixture of experts): each row block of A belongs to an expert read at
//    run time (`expert = load(expert_of + pid_m)`), whose weights B + expert * K * N are
//    the K loop's base pointer.
// Both must be pipelined the way the tutorial's loop is (the remark), and give on the test
// device what a double reference gives, bit for bit the same for every stage count.
constexpr int kSplit = 2;

auto& split_k_kernel() {
  static auto k = tl::kernel("matmul_split_k", [](tl::ptr<tl::bf16> A, tl::ptr<tl::bf16> B, tl::ptr<tl::f32> C,
                                                  tl::i32 M, tl::i32 N, tl::i32 K, int STAGES) {
    constexpr int BM = 32, BN = 32, BK = 32;
    auto pm = tl::program_id(0), pn = tl::program_id(1), ps = tl::program_id(2);
    auto rm = pm * BM + tl::arange(0, BM), rn = pn * BN + tl::arange(0, BN), rk = tl::arange(0, BK);
    auto a = A + (tl::expand_dims(rm, 1) * K + tl::expand_dims(ps * BK + rk, 0));
    auto b = B + (tl::expand_dims(ps * BK + rk, 1) * N + tl::expand_dims(rn, 0));
    auto acc = tl::zeros<tl::f32>({BM, BN});
    for (auto k : tl::range(ps, tl::cdiv(K, BK), kSplit, tl::num_stages(STAGES))) {
      auto ka = tl::expand_dims(rk, 0) < K - k * BK, kb = tl::expand_dims(rk, 1) < K - k * BK;
      acc += tl::dot(tl::load(a, tl::expand_dims(rm < M, 1) & ka, 0.0f), tl::load(b, kb & tl::expand_dims(rn < N, 0), 0.0f));
      a += BK * kSplit;
      b += BK * kSplit * N;
    }
    tl::atomic_add(C + (tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0)), acc,
                   tl::expand_dims(rm < M, 1) & tl::expand_dims(rn < N, 0));
  });
  return k;
}

auto& grouped_kernel() {
  static auto k = tl::kernel("matmul_grouped", [](tl::ptr<tl::bf16> A, tl::ptr<tl::bf16> B, tl::ptr<tl::i32> expert_of,
                                                  tl::ptr<tl::bf16> C, tl::i32 N, tl::i32 K, int STAGES) {
    constexpr int BM = 32, BN = 32, BK = 32;
    auto pm = tl::program_id(0), pn = tl::program_id(1);
    auto expert = tl::load(expert_of + pm);
    auto rm = pm * BM + tl::arange(0, BM), rn = pn * BN + tl::arange(0, BN), rk = tl::arange(0, BK);
    auto a = A + (tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
    auto b = (B + expert * K * N) + (tl::expand_dims(rk, 1) * N + tl::expand_dims(rn, 0));
    auto acc = tl::zeros<tl::f32>({BM, BN});
    for (auto k : tl::range(0, tl::cdiv(K, BK), 1, tl::num_stages(STAGES))) {
      acc += tl::dot(tl::load(a, tl::expand_dims(rk, 0) < K - k * BK, 0.0f),
                     tl::load(b, tl::expand_dims(rk, 1) < K - k * BK, 0.0f));
      a += BK;
      b += BK * N;
    }
    tl::store(C + (tl::expand_dims(rm, 1) * N + tl::expand_dims(rn, 0)), acc.to<tl::bf16>());
  });
  return k;
}

std::string remark_of(const std::string& meta) {
  auto r = nlohmann::json::parse(meta).at("remarks");
  return r.empty() ? "" : r[0].get<std::string>();
}

TEST(MatmulTutorial, SplitKLoopIsPipelined) {
  const int M = 64, N = 64, K = 200;  // 7 K blocks: 4 for split 0, 3 for split 1, the last partial
  auto a = random_bf16s(size_t(M) * K, 1.0f), b = random_bf16s(size_t(K) * N, 1.0f);
  auto A = upload<tl::ty::bf16>(a), B = upload<tl::ty::bf16>(b);
  std::vector<float> first;
  for (int stages = 1; stages <= 3; ++stages) {
    auto C = upload<tl::ty::f32>(std::vector<float>(size_t(M) * N, 0.0f));
    split_k_kernel()[tl::grid(M / 32, N / 32, kSplit)](A, B, C, M, N, K, stages);
    auto got = C.download();
    if (stages == 1) {
      std::vector<tl::bfloat16> rounded(got.size());
      for (size_t i = 0; i < got.size(); ++i) rounded[i] = tl::to_bf16(got[i]);
      check(a, b, rounded, M, N, K, "split-K");
      first = got;
    } else {
      // Two partial sums added into 0 in either order round the same.
      EXPECT_EQ(got, first) << "num_stages " << stages;
    }
  }
  // The remarks at a K divisible by 16 (as the launch specializes it), where the GPUs can
  // copy the masked K blocks 16 bytes at a time: the CPU keeps both loads in registers;
  // sm_90 and gfx950 stage both for the dot (B, N-contiguous, read across its stage's rows
  // by ldmatrix.trans / ds_read_b64_tr_b16); gfx942 stages A only (no transposing read).
  auto C = test_device().alloc<tl::ty::f32>(size_t(M) * N);
  const std::pair<const char*, const char*> want[] = {
      {"cpu", "yes (2 loads into registers, 0 into shared memory)"},
      {"sm_90", "yes (0 loads into registers, 2 into shared memory, 2 of them staged there for tl::dot by the compiler)"},
      {"gfx950", "yes (0 loads into registers, 2 into shared memory, 2 of them staged there for tl::dot by the compiler)"},
      {"gfx942", "yes (1 load into registers, 1 into shared memory, 1 of them staged there for tl::dot by the compiler)"}};
  for (auto [target, what] : want) {
    std::string r = remark_of(split_k_kernel().compile(target, {.num_warps = 4}, A, B, C, M, N, 256, 3));
    EXPECT_NE(r.find(fmt::format("num_stages=3: {}", what)), std::string::npos) << target << ": " << r;
  }
}

TEST(MatmulTutorial, GroupedLoopWithABaseLoadedAtRunTimeIsPipelined) {
  const int experts = 3, tiles = 4, M = tiles * 32, N = 32, K = 72;
  auto a = random_bf16s(size_t(M) * K, 1.0f), b = random_bf16s(size_t(experts) * K * N, 1.0f);
  const std::vector<int32_t> expert_of = {2, 0, 2, 1};
  auto A = upload<tl::ty::bf16>(a), B = upload<tl::ty::bf16>(b);
  auto E = upload<tl::ty::i32>(expert_of);
  std::vector<tl::bfloat16> first;
  for (int stages = 1; stages <= 3; ++stages) {
    auto C = test_device().alloc<tl::ty::bf16>(size_t(M) * N);
    poison(C);
    grouped_kernel()[tl::grid(tiles, 1)](A, B, E, C, N, K, stages);
    auto got = C.download();
    if (stages == 1) {
      for (int t = 0; t < tiles; ++t) {
        std::vector<tl::bfloat16> at(a.begin() + t * 32 * K, a.begin() + (t + 1) * 32 * K);
        std::vector<tl::bfloat16> bt(b.begin() + size_t(expert_of[size_t(t)]) * K * N,
                                     b.begin() + size_t(expert_of[size_t(t)] + 1) * K * N);
        std::vector<tl::bfloat16> ct(got.begin() + t * 32 * N, got.begin() + (t + 1) * 32 * N);
        check(at, bt, ct, 32, N, K, fmt::format("row block {}", t));
      }
      first = got;
    } else {
      EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(got[0])), 0) << "num_stages " << stages;
    }
  }
  // The remarks at a K divisible by 16 (copyable 16 bytes at a time on the GPU).
  auto C = test_device().alloc<tl::ty::bf16>(size_t(M) * N);
  std::string cpu = remark_of(grouped_kernel().compile("cpu", {.num_warps = 4}, A, B, E, C, N, 256, 3));
  EXPECT_NE(cpu.find("num_stages=3: yes (2 loads into registers, 0 into shared memory)"), std::string::npos) << cpu;
  std::string nv = remark_of(grouped_kernel().compile("sm_90", {.num_warps = 4}, A, B, E, C, N, 256, 3));
  EXPECT_NE(nv.find("num_stages=3: yes (0 loads into registers, 2 into shared memory, 2 of them staged there for "
                    "tl::dot by the compiler)"),
            std::string::npos)
      << nv;
}

}  // namespace

// Triton tutorial 08 (python/tutorials/08-grouped-gemm.py): `grouped_matmul_kernel`, a
// fixed grid of NUM_SM programs walking the tiles of a group of GEMMs of different sizes:
// the matrices' addresses are device arrays of int64 loaded and cast to pointers
// (`tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))`), the sizes and leading
// dimensions device arrays of int32, and each program takes its tiles of problem g with a
// while loop (`while tile_idx >= last_problem_end and tile_idx < last_problem_end +
// num_tiles`), advancing by NUM_SM. The tutorial assumes whole tiles (no masks).
#include <algorithm>

#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto grouped_matmul_kernel = tl::kernel(
    "grouped_matmul_kernel",
    [](
        // device tensor of matrices pointers
        tl::ptr<tl::i64> group_a_ptrs, tl::ptr<tl::i64> group_b_ptrs, tl::ptr<tl::i64> group_c_ptrs,
        // device tensor of gemm sizes. its shape is [group_size, 3]
        // dim 0 is group_size, dim 1 is the values of <M, N, K> of each gemm
        tl::ptr<tl::i32> group_gemm_sizes,
        // device tensor of leading dimension sizes. its shape is [group_size, 3]
        // dim 0 is group_size, dim 1 is the values of <lda, ldb, ldc> of each gemm
        tl::ptr<tl::i32> g_lds,
        // number of gemms
        tl::i32 group_size,
        // number of virtual SM
        int NUM_SM,
        // tile sizes
        int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K) {
      auto tile_idx = tl::program_id(0);
      tl::i32 last_problem_end = 0;
      for (auto g : tl::range(group_size)) {
        // get the gemm size of the current problem
        auto gm = tl::load(group_gemm_sizes + g * 3);
        auto gn = tl::load(group_gemm_sizes + g * 3 + 1);
        auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
        auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
        auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
        auto num_tiles = num_m_tiles * num_n_tiles;
        // iterate through the tiles in the current gemm problem
        tl::while_([&] { return (tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles); }, [&] {
          // pick up a tile from the current gemm problem
          auto k = gk;
          auto lda = tl::load(g_lds + g * 3);
          auto ldb = tl::load(g_lds + g * 3 + 1);
          auto ldc = tl::load(g_lds + g * 3 + 2);
          auto a_ptr = tl::load(group_a_ptrs + g).to<tl::ptr<tl::f16>>();
          auto b_ptr = tl::load(group_b_ptrs + g).to<tl::ptr<tl::f16>>();
          auto c_ptr = tl::load(group_c_ptrs + g).to<tl::ptr<tl::f16>>();
          // figure out tile coordinates
          auto tile_idx_in_gemm = tile_idx - last_problem_end;
          auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
          auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;

          // do regular gemm here
          auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto offs_k = tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + tl::expand_dims(offs_am, 1) * lda + tl::expand_dims(offs_k, 0);
          auto b_ptrs = b_ptr + tl::expand_dims(offs_k, 1) * ldb + tl::expand_dims(offs_bn, 0);
          auto accumulator = tl::zeros<tl::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
          for (auto kk : tl::range(0, tl::cdiv(k, BLOCK_SIZE_K))) {
            (void)kk;
            // hint to Triton compiler to do proper loop pipelining
            tl::multiple_of(a_ptrs, {16, 16});
            tl::multiple_of(b_ptrs, {16, 16});
            // assume full tile for now
            auto a = tl::load(a_ptrs);
            auto b = tl::load(b_ptrs);
            accumulator += tl::dot(a, b);
            a_ptrs += BLOCK_SIZE_K;
            b_ptrs += BLOCK_SIZE_K * ldb;
          }
          auto c = accumulator.to<tl::f16>();

          auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + ldc * tl::expand_dims(offs_cm, 1) + tl::expand_dims(offs_cn, 0);

          // assumes full tile for now
          tl::store(c_ptrs, c);

          // go to the next tile by advancing NUM_SM
          tile_idx += NUM_SM;
        });
        // get ready to go to the next gemm problem
        last_problem_end = last_problem_end + num_tiles;
      }
    });

TEST(Tutorial08, GroupedGemm) {
  // Groups of different sizes (whole 32 x 32 x 32 tiles, as the tutorial assumes), one with
  // a single tile, over NUM_SM = 5 programs: each program takes tiles of several problems.
  struct Problem { int M, N, K; };
  const std::vector<Problem> group = {{128, 64, 96}, {32, 32, 32}, {64, 128, 64}, {96, 32, 160}};
  const int BM = 32, BN = 32, BK = 32, NUM_SM = 5;
  std::vector<std::vector<tl::half>> ha, hb;
  std::vector<tl::buffer<tl::ty::f16>> A, B, C;
  std::vector<int64_t> a_addrs, b_addrs, c_addrs;
  std::vector<int32_t> g_sizes, g_lds;
  for (const Problem& p : group) {
    ha.push_back(random_values<tl::f16>(size_t(p.M) * p.K, -1, 1));
    hb.push_back(random_values<tl::f16>(size_t(p.K) * p.N, -1, 1));
    A.push_back(upload<tl::f16>(ha.back()));
    B.push_back(upload<tl::f16>(hb.back()));
    C.push_back(output<tl::f16>(size_t(p.M) * p.N));
    a_addrs.push_back(reinterpret_cast<int64_t>(A.back().data()));
    b_addrs.push_back(reinterpret_cast<int64_t>(B.back().data()));
    c_addrs.push_back(reinterpret_cast<int64_t>(C.back().data()));
    g_sizes.insert(g_sizes.end(), {p.M, p.N, p.K});
    g_lds.insert(g_lds.end(), {p.K, p.N, p.N});
  }
  // note these are device tensors
  auto d_a_ptrs = upload<tl::i64>(a_addrs), d_b_ptrs = upload<tl::i64>(b_addrs), d_c_ptrs = upload<tl::i64>(c_addrs);
  auto d_g_sizes = upload<tl::i32>(g_sizes), d_g_lds = upload<tl::i32>(g_lds);
  grouped_matmul_kernel[tl::grid(NUM_SM)](d_a_ptrs, d_b_ptrs, d_c_ptrs, d_g_sizes, d_g_lds, int(group.size()), NUM_SM,
                                          BM, BN, BK);
  for (size_t g = 0; g < group.size(); ++g) {
    const Problem& p = group[g];
    std::vector<double> want(size_t(p.M) * p.N);
    double atol = 0;
    for (int i = 0; i < p.M; ++i)
      for (int j = 0; j < p.N; ++j) {
        double acc = 0, mag = 0;
        for (int k = 0; k < p.K; ++k) {
          double x = to_double(ha[g][size_t(i) * p.K + k]) * to_double(hb[g][size_t(k) * p.N + j]);
          acc += x, mag += std::fabs(x);
        }
        want[size_t(i) * p.N + j] = acc;
        atol = std::max(atol, mag * p.K * 0x1p-23 + 0x1p-24);
      }
    EXPECT_TRUE(close(C[g].download(), want, 0x1p-11, atol, "C")) << "problem " << g;
  }
}

}  // namespace

// Triton tutorial 03 (python/tutorials/03-matrix-multiplication.py): `matmul_kernel`,
// grouped program order (GROUP_SIZE_M), the tutorial's `tl.assume`s on the program ids
// and strides, row and column offsets wrapped `% M` / `% N`, pointers advanced through the
// K loop, `accumulator = tl.dot(a, b, accumulator)`, an optional fused `leaky_relu`, the
// f16 result stored masked; f16 operands, and the tutorial's FP8 (e5m2) variant with B
// transposed in memory (stride_bk = 1).
#include "conformance/common.hpp"

namespace {
using namespace conformance;

enum class Activation { none, leaky_relu };

// @triton.jit def leaky_relu(x): return tl.where(x >= 0, x, 0.01 * x)
tl::f32 leaky_relu(const tl::f32& x) { return tl::where(x >= 0.0f, x, 0.01f * x); }

template <class T>
void matmul_kernel(const tl::ptr<T>& a_ptr, const tl::ptr<T>& b_ptr, const tl::ptr<tl::f16>& c_ptr,
                   // Matrix dimensions
                   const tl::i32& M, const tl::i32& N, const tl::i32& K,
                   // The stride variables represent how much to increase the ptr by when moving by 1
                   // element in a particular dimension.
                   const tl::i32& stride_am, const tl::i32& stride_ak, const tl::i32& stride_bk,
                   const tl::i32& stride_bn, const tl::i32& stride_cm, const tl::i32& stride_cn,
                   // Meta-parameters
                   int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, Activation ACTIVATION) {
  // Map program ids `pid` to the block of C it should compute.
  // This is done in a grouped ordering to promote L2 data reuse.
  auto pid = tl::program_id(0);
  auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
  auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
  auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  tl::assume(pid_m >= 0);
  tl::assume(pid_n >= 0);
  tl::assume(stride_am > 0);
  tl::assume(stride_ak > 0);
  tl::assume(stride_bn > 0);
  tl::assume(stride_bk > 0);
  tl::assume(stride_cm > 0);
  tl::assume(stride_cn > 0);

  // Create pointers for the first blocks of A and B.
  auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
  auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
  auto offs_k = tl::arange(0, BLOCK_SIZE_K);
  auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * stride_am + tl::expand_dims(offs_k, 0) * stride_ak);
  auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_bn, 0) * stride_bn);

  // Iterate to compute a block of the C matrix.
  auto accumulator = tl::zeros<tl::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
  for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
    // Load the next block of A and B, generate a mask by checking the K dimension.
    auto a = tl::load(a_ptrs, tl::expand_dims(offs_k, 0) < K - k * BLOCK_SIZE_K, 0.0f);
    auto b = tl::load(b_ptrs, tl::expand_dims(offs_k, 1) < K - k * BLOCK_SIZE_K, 0.0f);
    // We accumulate along the K dimension.
    accumulator = tl::dot(a, b, accumulator);
    // Advance the ptrs to the next K block.
    a_ptrs += BLOCK_SIZE_K * stride_ak;
    b_ptrs += BLOCK_SIZE_K * stride_bk;
  }
  // You can fuse arbitrary activation functions here
  if (ACTIVATION == Activation::leaky_relu) accumulator = leaky_relu(accumulator);
  auto c = accumulator.to<tl::f16>();

  // Write back the block of the output matrix C with masks.
  auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
  auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
  auto c_ptrs = c_ptr + stride_cm * tl::expand_dims(offs_cm, 1) + stride_cn * tl::expand_dims(offs_cn, 0);
  auto c_mask = (tl::expand_dims(offs_cm, 1) < M) & (tl::expand_dims(offs_cn, 0) < N);
  tl::store(c_ptrs, c, c_mask);
}

template <class T> auto& kernel() {
  static auto k = tl::kernel("matmul_kernel", [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<tl::f16> c_ptr, tl::i32 M,
                                                 tl::i32 N, tl::i32 K, tl::i32 stride_am, tl::i32 stride_ak,
                                                 tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm,
                                                 tl::i32 stride_cn, int BLOCK_SIZE_M, int BLOCK_SIZE_N,
                                                 int BLOCK_SIZE_K, int GROUP_SIZE_M, Activation ACTIVATION) {
    matmul_kernel<T>(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, ACTIVATION);
  });
  return k;
}

// A [M, K] row-major; B [K, N] row-major, or (b_transposed) stored as B^T [N, K] row-major,
// as the tutorial's FP8 path passes `b.T`.
template <class T> void run(int M, int N, int K, bool b_transposed, Activation act, int BM, int BN, int BK, int GROUP) {
  auto ha = random_values<T>(size_t(M) * K, -2, 2), hb = random_values<T>(size_t(K) * N, -2, 2);
  auto a = upload<T>(ha), b = upload<T>(hb);
  auto c = tl::buffer<tl::ty::f16>(test_device(), size_t(M) * N);
  poison(c);
  int stride_bk = b_transposed ? 1 : N, stride_bn = b_transposed ? K : 1;
  kernel<T>()[tl::grid(tl::cdiv(M, BM) * tl::cdiv(N, BN))].with({.num_warps = 4, .num_stages = 3})(
      a, b, c, M, N, K, K, 1, stride_bk, stride_bn, N, 1, BM, BN, BK, GROUP, act);
  std::vector<double> want(size_t(M) * N);
  double rtol = 0x1p-11, atol = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double p = to_double(ha[size_t(i) * K + k]) *
                   to_double(hb[b_transposed ? size_t(j) * K + k : size_t(k) * N + j]);
        acc += p, mag += std::fabs(p);
      }
      if (act == Activation::leaky_relu && acc < 0) acc *= 0.01;
      want[size_t(i) * N + j] = acc;
      // f32 summation (FP8 on NVIDIA's tensor cores: about 13 fraction bits), f16's smallest subnormal
      double sum_bits = tl::is_fp8(tl::elem_t<T>::dtype) && tltest::on_gpu() ? 0x1p-11 : K * 0x1p-22;
      atol = std::max(atol, mag * sum_bits + 0x1p-24);
    }
  EXPECT_TRUE(close(c.download(), want, rtol, atol, "c"))
      << M << "x" << N << "x" << K << (b_transposed ? " B^T" : "") << (act == Activation::leaky_relu ? " leaky_relu" : "");
}

TEST(Tutorial03, MatmulF16) {
  conformance::note_partial("x[:, None]");
  // Ragged in every dimension (the `% M` wrap and the store mask), several K blocks, the
  // last partial; 4 x 3 = 12 programs in groups of GROUP_SIZE_M = 2 rows of blocks.
  run<tl::f16>(100, 72, 88, false, Activation::none, 32, 32, 32, 2);
  run<tl::f16>(64, 64, 64, false, Activation::leaky_relu, 32, 32, 32, 8);
}

TEST(Tutorial03, MatmulFp8E5m2WithBTransposed) {
  run<tl::f8e5m2>(64, 96, 96, true, Activation::none, 32, 32, 32, 2);
}

}  // namespace

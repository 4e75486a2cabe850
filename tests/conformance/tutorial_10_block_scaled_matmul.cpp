// Triton tutorial 10 (python/tutorials/10-block-scaled-matmul.py): `block_scaled_matmul_kernel`,
// C = A . B^T of MX-format operands, each 32 consecutive K elements of a row of A (or of
// B) sharing one e8m0 scale 2^(s - 127): `tl.dot_scaled(a, scale_a, "e4m3", b.T, scale_b,
// "e4m3", accumulator)` in a K loop, A, B, C and the scales read through tensor
// descriptors, the scales in the 5-D layout the tensor cores read
// (`reshape(rep_m, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4)`).
//
// tl has no tl.dot_scaled, no e8m0 or e2m1 (fp4) types, no tensor descriptors and no tiles
// of more than 3 dims (gaps "tl.dot_scaled", "tensor descriptors", "tiles of more than 3
// dims"). What is transcribed: the mxfp8 case ("e4m3" x "e4m3") with the kernel's grid,
// program mapping and K loop, scales in a plain [rows, K / 32] layout, and the scaled dot
// written as Triton itself lowers tl.dot_scaled where the hardware has no scaled MMA:
// each operand upcast to bf16 with its scales (exact: an e4m3 value times a power of two
// is a bf16 value), then tl.dot.
#include "conformance/common.hpp"

namespace {
using namespace conformance;

// 2^(s - 127) for an e8m0 scale s (1..254), as f32.
tl::f32 e8m0_to_f32(const tl::u8& s) { return (s.to<tl::i32>() << 23).bitcast<tl::f32>(); }

// x [rows, BLOCK_K] * scale [rows, BLOCK_K / VEC_SIZE], each scale over VEC_SIZE consecutive
// elements along K, rounded to bf16 (exact).
tl::bf16 upcast(const tl::f8e4m3fn& x, const tl::u8& scale, int rows, int BLOCK_K, int VEC_SIZE) {
  auto v = tl::reshape(x.to<tl::f32>(), {rows, BLOCK_K / VEC_SIZE, VEC_SIZE});
  auto s = tl::expand_dims(e8m0_to_f32(scale), 2);
  return tl::reshape(v * s, {rows, BLOCK_K}).to<tl::bf16>();
}

auto block_scaled_matmul_kernel = tl::kernel(
    "block_scaled_matmul_kernel",
    [](tl::ptr<tl::f8e4m3fn> a_desc, tl::ptr<tl::u8> a_scale_desc, tl::ptr<tl::f8e4m3fn> b_desc,
       tl::ptr<tl::u8> b_scale_desc, tl::ptr<tl::f32> c_desc,  //
       int M, int N, int K, int VEC_SIZE, int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_STAGES) {
      auto pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_M);
      auto pid_m = pid % num_pid_m;
      auto pid_n = pid / num_pid_m;
      auto offs_am = pid_m * BLOCK_M;
      auto offs_bn = pid_n * BLOCK_N;
      tl::i32 offs_k_a = 0;
      tl::i32 offs_k_b = 0;
      tl::i32 offs_scale_k = 0;
      auto rm = tl::expand_dims(offs_am + tl::arange(0, BLOCK_M), 1);
      auto rn = tl::expand_dims(offs_bn + tl::arange(0, BLOCK_N), 1);

      auto accumulator = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
      for (auto k : tl::range(0, tl::cdiv(K, BLOCK_K), tl::num_stages(NUM_STAGES))) {
        (void)k;
        // a = a_desc.load([offs_am, offs_k_a]); b = b_desc.load([offs_bn, offs_k_b])
        auto a = tl::load(a_desc + rm * K + tl::expand_dims(offs_k_a + tl::arange(0, BLOCK_K), 0));
        auto b = tl::load(b_desc + rn * K + tl::expand_dims(offs_k_b + tl::arange(0, BLOCK_K), 0));
        // the scales of this K block, [BLOCK_M, BLOCK_K // VEC_SIZE] and [BLOCK_N, ...]
        auto sk = tl::expand_dims(offs_scale_k + tl::arange(0, BLOCK_K / VEC_SIZE), 0);
        auto scale_a = tl::load(a_scale_desc + rm * (K / VEC_SIZE) + sk);
        auto scale_b = tl::load(b_scale_desc + rn * (K / VEC_SIZE) + sk);
        // accumulator = tl.dot_scaled(a, scale_a, "e4m3", b.T, scale_b, "e4m3", accumulator)
        accumulator = tl::dot(upcast(a, scale_a, BLOCK_M, BLOCK_K, VEC_SIZE),
                              tl::trans(upcast(b, scale_b, BLOCK_N, BLOCK_K, VEC_SIZE)), accumulator);
        offs_k_a += BLOCK_K;  // BLOCK_K // ELEM_PER_BYTE_A
        offs_k_b += BLOCK_K;
        offs_scale_k += BLOCK_K / VEC_SIZE;  // rep_k
      }
      // c_desc.store([offs_am, offs_bn], accumulator.to(output_dtype)), output_type 0: f32
      tl::store(c_desc + rm * N + tl::expand_dims(offs_bn + tl::arange(0, BLOCK_N), 0), accumulator);
    });

TEST(Tutorial10, BlockScaledMatmulMxfp8) {
  conformance::note_partial("tl.dot_scaled");
  const int M = 64, N = 64, K = 256, VEC_SIZE = 32, BM = 32, BN = 32, BK = 128;
  using E = tl::f8e4m3fn;
  auto ha = random_values<E>(size_t(M) * K, -4, 4), hb = random_values<E>(size_t(N) * K, -4, 4);
  // e8m0 scales 2^-4 .. 2^4
  std::vector<uint8_t> hsa(size_t(M) * K / VEC_SIZE), hsb(size_t(N) * K / VEC_SIZE);
  std::uniform_int_distribution<int> e(127 - 4, 127 + 4);
  for (auto& s : hsa) s = uint8_t(e(rng()));
  for (auto& s : hsb) s = uint8_t(e(rng()));
  auto a = upload<E>(ha), b = upload<E>(hb);
  auto sa = upload<tl::u8>(hsa), sb = upload<tl::u8>(hsb);
  auto c = output<tl::f32>(size_t(M) * N);
  block_scaled_matmul_kernel[tl::grid(tl::cdiv(M, BM) * tl::cdiv(N, BN))].with({.num_warps = 4})(
      a, sa, b, sb, c, M, N, K, VEC_SIZE, BM, BN, BK, 3);
  std::vector<double> want(size_t(M) * N);
  double atol = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = to_double(ha[size_t(i) * K + k]) * std::ldexp(1.0, hsa[size_t(i) * K / VEC_SIZE + k / VEC_SIZE] - 127);
        double y = to_double(hb[size_t(j) * K + k]) * std::ldexp(1.0, hsb[size_t(j) * K / VEC_SIZE + k / VEC_SIZE] - 127);
        acc += x * y, mag += std::fabs(x * y);
      }
      want[size_t(i) * N + j] = acc;
      atol = std::max(atol, mag * K * 0x1p-23);
    }
  EXPECT_TRUE(close(c.download(), want, 0, atol, "c"));
}

TEST(Tutorial10, BlockScaledMatmulFp4) { CONFORMANCE_GAP("tl.dot_scaled"); }

}  // namespace

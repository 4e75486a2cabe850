// Triton tutorial 10 (python/tutorials/10-block-scaled-matmul.py): `block_scaled_matmul_kernel`,
// C = A . B^T of MX-format operands, each 32 consecutive K elements of a row of A (or of
// B) sharing one e8m0 scale 2^(s - 127): `tl.dot_scaled(a, scale_a, dtype_a, b.T, scale_b,
// dtype_b, accumulator)` in a K loop, A, B, C and the scales read through tensor
// descriptors, the scales in the 5-D layout the tensor cores read
// (`reshape(rep_m, rep_k, 32, 4, 4).trans(0, 3, 2, 1, 4)`).
//
// Transcribed with tl::dot_scaled as the tutorial calls it, for its three MX cases:
// "mxfp8" (e4m3 x e4m3), "mxfp4" (e2m1 x e2m1, two values a byte along K) and "mixed"
// (e4m3 x e2m1), ELEM_PER_BYTE_A/B choosing the format as the kernel does. A, B and the
// scales are read through pointer tiles at the descriptors' offsets (gap "tensor
// descriptors"), the scales in a plain [rows, K / 32] layout: the 5-D one is how the
// descriptor feeds Blackwell's tensor memory, the values it reorders are the same. The
// tutorial's nvfp4 case (e4m3 scales over 16 elements, Blackwell's) is a gap ("tl.dot_scaled").
#include "conformance/common.hpp"
#include "tl/numeric.hpp"

namespace {
using namespace conformance;

auto block_scaled_matmul_kernel = tl::kernel(
    "block_scaled_matmul_kernel",
    [](tl::ptr<tl::u8> a_desc, tl::ptr<tl::u8> a_scale_desc, tl::ptr<tl::u8> b_desc, tl::ptr<tl::u8> b_scale_desc,
       tl::ptr<tl::f32> c_desc,  //
       int M, int N, int K, int ELEM_PER_BYTE_A, int ELEM_PER_BYTE_B, int VEC_SIZE, int BLOCK_M, int BLOCK_N,
       int BLOCK_K, int NUM_STAGES) {
      const char* dtype_a = ELEM_PER_BYTE_A == 1 ? "e4m3" : "e2m1";
      const char* dtype_b = ELEM_PER_BYTE_B == 1 ? "e4m3" : "e2m1";
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
        auto a = tl::load(a_desc + rm * (K / ELEM_PER_BYTE_A) +
                          tl::expand_dims(offs_k_a + tl::arange(0, BLOCK_K / ELEM_PER_BYTE_A), 0));
        auto b = tl::load(b_desc + rn * (K / ELEM_PER_BYTE_B) +
                          tl::expand_dims(offs_k_b + tl::arange(0, BLOCK_K / ELEM_PER_BYTE_B), 0));
        // the scales of this K block, [BLOCK_M, BLOCK_K // VEC_SIZE] and [BLOCK_N, ...]
        auto sk = tl::expand_dims(offs_scale_k + tl::arange(0, BLOCK_K / VEC_SIZE), 0);
        auto scale_a = tl::load(a_scale_desc + rm * (K / VEC_SIZE) + sk);
        auto scale_b = tl::load(b_scale_desc + rn * (K / VEC_SIZE) + sk);
        accumulator = tl::dot_scaled(a, scale_a, dtype_a, tl::trans(b), scale_b, dtype_b, accumulator);
        offs_k_a += BLOCK_K / ELEM_PER_BYTE_A;
        offs_k_b += BLOCK_K / ELEM_PER_BYTE_B;
        offs_scale_k += BLOCK_K / VEC_SIZE;  // rep_k
      }
      // c_desc.store([offs_am, offs_bn], accumulator.to(output_dtype)), output_type 0: f32
      tl::store(c_desc + rm * N + tl::expand_dims(offs_bn + tl::arange(0, BLOCK_N), 0), accumulator);
    });

// One operand [rows, K] of the tutorial's random data: e4m3 codes (ELEM_PER_BYTE 1) or
// e2m1 codes two a byte (2), and the values they hold.
struct Operand {
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};
Operand make_operand(int rows, int K, int elem_per_byte) {
  Operand o;
  std::uniform_real_distribution<double> u(-4, 4);
  std::uniform_int_distribution<int> nib(0, 15);
  for (int i = 0; i < rows * K; ++i) {
    if (elem_per_byte == 1) {
      uint8_t c = tl::to_fp8(tl::DType::f8e4m3fn, u(rng()));
      o.bytes.push_back(c);
      o.values.push_back(tl::to_double(tl::DType::f8e4m3fn, c));
    } else {
      uint8_t c = uint8_t(nib(rng()));
      if (i % 2 == 0) o.bytes.push_back(c);
      else o.bytes.back() |= uint8_t(c << 4);
      o.values.push_back(tl::e2m1_to_double(c));
    }
  }
  return o;
}

void run_case(int elem_per_byte_a, int elem_per_byte_b) {
  conformance::note_partial("tensor descriptors");
  const int M = 64, N = 64, K = 256, VEC_SIZE = 32, BM = 32, BN = 32, BK = 128;
  Operand ha = make_operand(M, K, elem_per_byte_a), hb = make_operand(N, K, elem_per_byte_b);
  // e8m0 scales 2^-4 .. 2^4
  std::vector<uint8_t> hsa(size_t(M) * K / VEC_SIZE), hsb(size_t(N) * K / VEC_SIZE);
  std::uniform_int_distribution<int> e(127 - 4, 127 + 4);
  for (auto& s : hsa) s = uint8_t(e(rng()));
  for (auto& s : hsb) s = uint8_t(e(rng()));
  auto a = upload<tl::u8>(ha.bytes), b = upload<tl::u8>(hb.bytes);
  auto sa = upload<tl::u8>(hsa), sb = upload<tl::u8>(hsb);
  auto c = output<tl::f32>(size_t(M) * N);
  block_scaled_matmul_kernel[tl::grid(tl::cdiv(M, BM) * tl::cdiv(N, BN))].with({.num_warps = 4})(
      a, sa, b, sb, c, M, N, K, elem_per_byte_a, elem_per_byte_b, VEC_SIZE, BM, BN, BK, 3);
  std::vector<double> want(size_t(M) * N);
  double atol = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = ha.values[size_t(i) * K + k] * std::ldexp(1.0, hsa[size_t(i) * K / VEC_SIZE + k / VEC_SIZE] - 127);
        double y = hb.values[size_t(j) * K + k] * std::ldexp(1.0, hsb[size_t(j) * K / VEC_SIZE + k / VEC_SIZE] - 127);
        acc += x * y, mag += std::fabs(x * y);
      }
      want[size_t(i) * N + j] = acc;
      atol = std::max(atol, mag * K * 0x1p-23);
    }
  EXPECT_TRUE(close(c.download(), want, 0, atol, "c"));
}

TEST(Tutorial10, BlockScaledMatmulMxfp8) { run_case(1, 1); }
TEST(Tutorial10, BlockScaledMatmulMxfp4) { run_case(2, 2); }
TEST(Tutorial10, BlockScaledMatmulMixed) { run_case(1, 2); }
TEST(Tutorial10, BlockScaledMatmulNvfp4) { CONFORMANCE_GAP("tl.dot_scaled"); }

}  // namespace

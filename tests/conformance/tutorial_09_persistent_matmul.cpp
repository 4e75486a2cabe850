// Triton tutorial 09 (python/tutorials/09-persistent-matmul.py): `matmul_kernel_persistent`,
// NUM_SMS programs striding over the output tiles (`tl.range(start_pid, num_tiles,
// NUM_SMS, flatten=True)`), `_compute_pid`'s grouped order computed twice (once for the
// loads, once for the epilogue through `tile_id_c`, the tutorial's work-around), offsets
// clamped with `tl.where(offs_am < M, offs_am, 0)` and hinted with
// `tl.max_contiguous(tl.multiple_of(...))`, K-tail masks, f16 operands and output.
// `matmul_kernel_descriptor_persistent`: the same loop over tiles with A, B (given as
// [N, K], `b.T` in the dot) and C through device-side tensor descriptors, the epilogue
// with and without EPILOGUE_SUBTILE (the accumulator reshaped to [BM, 2, BN / 2],
// permuted, tl::split into two halves, each stored through a [BM, BN / 2] descriptor).
// `matmul_kernel_tma_persistent`: the same with the three descriptors made on the host
// (tl::TensorDescriptor, Triton's TensorDescriptor). The kernels are
// bench/persistent_matmul_tutorial.hpp's (the benchmark beside Triton runs the same ones).
// TMA itself is the gap "tensor descriptors" (the loads are pipelined copies, not
// cp.async.bulk.tensor); `flatten=True` is the gap "tl.range flatten".
#include <algorithm>
#include <utility>

#include "bench/persistent_matmul_tutorial.hpp"
#include "conformance/common.hpp"

namespace {
using namespace conformance;
using persistent_matmul::matmul_kernel_descriptor_persistent;
using persistent_matmul::matmul_kernel_persistent;
using persistent_matmul::matmul_kernel_tma_persistent;

// def matmul_persistent(a, b): NUM_SMS programs (fewer when there are fewer tiles). The
// tutorial's FP8 run passes `b.T` (stride_bk = 1) and stores C in e4m3.
template <class T> void matmul_persistent(int M, int N, int K, bool b_transposed, int NUM_SMS) {
  const int BM = 32, BN = 32, BK = 32, GROUP = 2;
  auto ha = random_values<T>(size_t(M) * K, -1, 1), hb = random_values<T>(size_t(K) * N, -1, 1);
  auto a = upload<T>(ha), b = upload<T>(hb);
  auto c = output<T>(size_t(M) * N);
  int stride_bk = b_transposed ? 1 : N, stride_bn = b_transposed ? K : 1;
  int grid = std::min(NUM_SMS, int(tl::cdiv(M, BM) * tl::cdiv(N, BN)));
  matmul_kernel_persistent<T>()[tl::grid(grid)].with({.num_warps = 4, .num_stages = 3})(
      a, b, c, M, N, K, K, 1, stride_bk, stride_bn, N, 1, BM, BN, BK, GROUP, NUM_SMS);
  std::vector<double> want(size_t(M) * N);
  double atol = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = to_double(ha[size_t(i) * K + k]) *
                   to_double(hb[b_transposed ? size_t(j) * K + k : size_t(k) * N + j]);
        acc += x, mag += std::fabs(x);
      }
      want[size_t(i) * N + j] = acc;
      // f32 summation (FP8 on NVIDIA's tensor cores: about 13 fraction bits)
      atol = std::max(atol, mag * (tl::is_fp8(tl::elem_t<T>::dtype) && tltest::on_gpu() ? 0x1p-11 : K * 0x1p-23) + 0x1p-24);
    }
  // C rounded to T: half an ulp relative, and near zero a step of T's subnormals (2^-9 for e4m3)
  if (tl::is_fp8(tl::elem_t<T>::dtype)) atol += 0x1p-9;
  EXPECT_TRUE(close(c.download(), want, 2 * epsilon_of(tl::elem_t<T>::dtype), atol, "c"))
      << M << "x" << N << "x" << K << " " << tl::name(tl::elem_t<T>::dtype);
}

// def matmul_descriptor_persistent(a, b, warp_specialize): b given as [N, K]; with
// `host`, def matmul_tma_persistent(a, b, warp_specialize): the same with the descriptors
// made on the host.
template <class T> void matmul_descriptor_persistent(int M, int N, int K, int NUM_SMS, bool subtile, bool host = false) {
  const int BM = 32, BN = 64, BK = 32, GROUP = 2;
  auto ha = random_values<T>(size_t(M) * K, -1, 1), hb = random_values<T>(size_t(N) * K, -1, 1);
  auto a = upload<T>(ha), b = upload<T>(hb);
  auto c = output<T>(size_t(M) * N);
  int grid = std::min(NUM_SMS, int(tl::cdiv(M, BM) * tl::cdiv(N, BN)));
  if (host) {
    auto d = persistent_matmul::make_tma_descriptors<T>(a, b, c, M, N, K, BM, BN, BK, subtile);
    matmul_kernel_tma_persistent<T>()[tl::grid(grid)].with({.num_warps = 4, .num_stages = 3})(
        d.a, d.b, d.c, M, N, K, BM, BN, BK, GROUP, subtile, NUM_SMS);
  } else {
    matmul_kernel_descriptor_persistent<T>()[tl::grid(grid)].with({.num_warps = 4, .num_stages = 3})(
        a, b, c, M, N, K, BM, BN, BK, GROUP, subtile, NUM_SMS);
  }
  std::vector<double> want(size_t(M) * N);
  double atol = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        double x = to_double(ha[size_t(i) * K + k]) * to_double(hb[size_t(j) * K + k]);
        acc += x, mag += std::fabs(x);
      }
      want[size_t(i) * N + j] = acc;
      atol = std::max(atol, mag * K * 0x1p-23 + 0x1p-24);
    }
  EXPECT_TRUE(close(c.download(), want, 2 * epsilon_of(tl::elem_t<T>::dtype), atol, "c"))
      << M << "x" << N << "x" << K << (subtile ? " EPILOGUE_SUBTILE" : "") << (host ? " host descriptors" : "");
}

TEST(Tutorial09, DescriptorPersistentMatmul) {
  conformance::note_partial("tl.range flatten");
  conformance::note_partial("tensor descriptors");
  // 3 x 2 = 6 tiles, ragged in M, N and K (the descriptors' bounds mask the edges; K's
  // last block reads zeros), over NUM_SMS = 4 programs; with and without the subtiled
  // epilogue.
  for (bool subtile : {false, true}) matmul_descriptor_persistent<tl::f16>(90, 120, 72, 4, subtile);
  matmul_descriptor_persistent<tl::bf16>(64, 128, 64, 3, true);
}

TEST(Tutorial09, TmaPersistentMatmul) {
  conformance::note_partial("tl.range flatten");
  conformance::note_partial("tensor descriptors");
  conformance::note_partial("warp_specialize");
  // matmul_kernel_tma_persistent with tl::TensorDescriptor arguments: the shapes of
  // DescriptorPersistentMatmul (ragged in M, N and K), both epilogues.
  for (bool subtile : {false, true}) matmul_descriptor_persistent<tl::f16>(90, 120, 72, 4, subtile, true);
  matmul_descriptor_persistent<tl::bf16>(64, 128, 64, 3, true, true);
}

TEST(Tutorial09, PersistentMatmul) {
  conformance::note_partial("tl.range flatten");
  conformance::note_partial("tensor descriptors");
  // 3 x 4 = 12 tiles, ragged in M, N and K, over NUM_SMS = 5 programs (2 or 3 tiles each).
  matmul_persistent<tl::f16>(90, 120, 72, false, 5);
  // FP8 (e4m3 in, e4m3 out), B transposed in memory; more programs than tiles.
  matmul_persistent<tl::f8e4m3fn>(64, 64, 96, true, 8);
}

}  // namespace

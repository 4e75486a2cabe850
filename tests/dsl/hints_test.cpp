// Compiler hints (tl::multiple_of, tl::max_contiguous, tl::max_constancy, tl::assume):
// promises that, when true, change no result. Each kernel runs with and without its
// hints on random inputs (outputs poisoned) on the test device: with them it must match
// a double-precision reference and give bit for bit what it gives without them. Also:
// the facts reach the axis analysis (what the hints are for), `tl::multiple_of(p, n);`
// alone hints the tile object it is called on (Triton's in-place form), and misuse is a
// trace error naming the line (the misuse catalogue has the rest).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "codegen/passes/axis_analysis.hpp"
#include "support/compile.hpp"
#include "support/reference.hpp"
#include "support/traced_kernels.hpp"

using namespace tltest;
using tltest::count;
using tl::f32;
using tl::i32;

namespace {

// Triton's tutorial 03 matmul as Triton writes it, its tl.assume lines included
// (python/tutorials/03-matrix-multiplication.py): offsets wrapped `% M` / `% N`, the K
// tail masked. HINTS = 0 leaves the assumes out.
auto& matmul_kernel() {
  static auto k = tl::kernel(
      "hints_matmul", [](tl::ptr<f32> a_ptr, tl::ptr<f32> b_ptr, tl::ptr<f32> c_ptr, i32 M, i32 N, i32 K,
                         i32 stride_am, i32 stride_ak, i32 stride_bk, i32 stride_bn, i32 stride_cm, i32 stride_cn,
                         int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int HINTS) {
        auto pid = tl::program_id(0);
        auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
        auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
        auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
        auto group_id = pid / num_pid_in_group;
        auto first_pid_m = group_id * GROUP_SIZE_M;
        auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
        auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
        auto pid_n = (pid % num_pid_in_group) / group_size_m;
        if (HINTS) {
          tl::assume(pid_m >= 0);
          tl::assume(pid_n >= 0);
          tl::assume(stride_am > 0);
          tl::assume(stride_ak > 0);
          tl::assume(stride_bn > 0);
          tl::assume(stride_bk > 0);
          tl::assume(stride_cm > 0);
          tl::assume(stride_cn > 0);
        }
        auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
        auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
        auto offs_k = tl::arange(0, BLOCK_SIZE_K);
        auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * stride_am + tl::expand_dims(offs_k, 0) * stride_ak);
        auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_bn, 0) * stride_bn);
        auto accumulator = tl::zeros<f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
        for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
          auto a = tl::load(a_ptrs, tl::expand_dims(offs_k, 0) < K - k * BLOCK_SIZE_K, 0.0f);
          auto b = tl::load(b_ptrs, tl::expand_dims(offs_k, 1) < K - k * BLOCK_SIZE_K, 0.0f);
          accumulator = tl::dot(a, b, accumulator);
          a_ptrs += BLOCK_SIZE_K * stride_ak;
          b_ptrs += BLOCK_SIZE_K * stride_bk;
        }
        auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
        auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
        auto c_ptrs = c_ptr + stride_cm * tl::expand_dims(offs_cm, 1) + stride_cn * tl::expand_dims(offs_cn, 0);
        auto c_mask = tl::expand_dims(offs_cm < M, 1) & tl::expand_dims(offs_cn < N, 0);
        tl::store(c_ptrs, accumulator, c_mask);
      });
  return k;
}

TEST(Hints, TutorialMatmulAssumesChangeNoResult) {
  for (auto [M, N, K] : {std::tuple{48, 80, 72}, std::tuple{16, 16, 16}, std::tuple{33, 17, 5}}) {
    auto a = random_floats(size_t(M) * K), b = random_floats(size_t(K) * N);
    auto A = upload<tl::ty::f32>(a), B = upload<tl::ty::f32>(b);
    std::vector<double> want(size_t(M) * N, 0.0);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        for (int k = 0; k < K; ++k) want[size_t(i) * N + j] += double(a[size_t(i) * K + k]) * b[size_t(k) * N + j];
    std::vector<float> without;
    for (int hints : {0, 1}) {
      auto C = test_device().alloc<tl::ty::f32>(size_t(M) * N);
      poison(C);
      const int bm = 32, bn = 32, bk = 16;
      matmul_kernel()[tl::grid(tl::cdiv(M, bm) * tl::cdiv(N, bn))](A, B, C, M, N, K, K, 1, N, 1, N, 1, bm, bn, bk, 2,
                                                                   hints);
      auto c = C.download();
      // (NVIDIA multiplies f32 in TF32 by default, as Triton: 2^-11 a product)
      const double tol = on_gpu() ? 2e-2 : 1e-4;
      EXPECT_TRUE(near(c, want, tol, tol)) << M << "x" << N << "x" << K << " hints " << hints;
      if (hints) EXPECT_EQ(c, without) << M << "x" << N << "x" << K;
      else without = c;
    }
  }
}

// A strided 2-D copy with a scale, sizes and strides loaded from memory (what the compiler
// cannot see), given back as Triton users hint them: the loaded sizes multiples of 16,
// the offsets `max_contiguous(multiple_of(offs, BLOCK), BLOCK)`, the stride assumed
// positive and a multiple of 16, the mask hinted constant over whole blocks.
auto& strided_kernel() {
  static auto k = tl::kernel("hints_strided", [](tl::ptr<f32> x, tl::ptr<f32> y, tl::ptr<i32> sizes, int HINTS) {
    auto rows = tl::load(sizes);
    auto cols = tl::load(sizes + 1);
    auto stride = tl::load(sizes + 2);
    auto scale = tl::load(x + stride * rows);  // one element past the rows
    if (HINTS) {
      rows = tl::multiple_of(rows, 16);
      tl::multiple_of(cols, 16);  // Triton's in-place form: cols is hinted from here on
      tl::assume(stride > 0);
      tl::assume(stride % 16 == 0);
    }
    auto r = tl::program_id(0) * 16 + tl::arange(0, 16);
    auto c = tl::arange(0, 64);
    if (HINTS) {
      r = tl::max_contiguous(tl::multiple_of(r, 16), 16);
      c = tl::max_contiguous(tl::multiple_of(c, 64), 64);
    }
    for (auto c0 : tl::range(0, cols, 64)) {
      auto cc = c0 + c;
      if (HINTS) cc = tl::max_contiguous(tl::multiple_of(cc, 64), 64);
      auto m = tl::expand_dims(r < rows, 1) & tl::expand_dims(cc < cols, 0);
      // (rows a multiple of 16 and cols of 64 here: the mask is constant over [16, 64])
      if (HINTS) m = tl::max_constancy(m, {16, 64});
      auto in = x + tl::expand_dims(r * stride, 1) + tl::expand_dims(cc, 0);
      if (HINTS) in = tl::multiple_of(in, {16, 16});
      auto v = tl::load(in, m, 0.0f);
      tl::store(y + tl::expand_dims(r * cols, 1) + tl::expand_dims(cc, 0), v * scale + 1.0f, m);
    }
  });
  return k;
}

TEST(Hints, StridedCopyHintsChangeNoResult) {
  // (the hints' promises hold: rows a multiple of 16, cols of 64, the stride of 16)
  for (auto [rows, cols, stride] : {std::tuple{32, 128, 144}, std::tuple{48, 64, 64}, std::tuple{16, 192, 208}}) {
    auto x = random_floats(size_t(rows) * stride + 1);
    auto X = upload<tl::ty::f32>(x);
    auto S = upload<tl::ty::i32>({rows, cols, stride});
    std::vector<double> want(size_t(rows) * cols);
    const double scale = x[size_t(stride) * rows];
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) want[size_t(i) * cols + j] = double(x[size_t(i) * stride + j]) * scale + 1.0;
    std::vector<float> without;
    for (int hints : {0, 1}) {
      auto Y = test_device().alloc<tl::ty::f32>(size_t(rows) * cols);
      poison(Y);
      strided_kernel()[tl::grid(rows / 16)](X, Y, S, hints);
      auto y = Y.download();
      EXPECT_TRUE(near(y, want, 1e-6, 1e-6)) << rows << "x" << cols << " hints " << hints;
      if (hints) EXPECT_EQ(y, without);
      else without = y;
    }
  }
}

// The GPU paths accept the hints (layouts, CSE, pipelining, lowering): both kernels
// compile for AMD and NVIDIA with their hints, and the hinted strided copy's loads are
// 16 bytes a lane on gfx942 where the unhinted ones are 4 (one f32).
TEST(Hints, CompileForEveryGpuTarget) {
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto* q = reinterpret_cast<int32_t*>(uintptr_t(1) << 20);
  for (const char* target : {"gfx942", "gfx950", "sm_90"}) {
    SCOPED_TRACE(target);
    for (int hints : {0, 1}) {
      EXPECT_NO_THROW((void)matmul_kernel().compile(target, {.num_warps = 4, .num_stages = 2}, p, p, p, 256, 256, 256,
                                                    256, 1, 256, 1, 256, 1, 64, 64, 32, 8, hints));
      std::string meta = strided_kernel().compile(target, {.num_warps = 4}, p, p, q, hints);
      if (std::string(target) != "gfx942") continue;
      std::string isa = isa_of_compiled(meta);
      EXPECT_EQ(count(isa, "global_load_dwordx4") > 0, hints == 1) << isa;
    }
  }
}

// The facts reach the axis analysis: a pointer tile over a run-time stride loads one
// element at a time; with the stride assumed a multiple of 16 and positive, and the
// offsets hinted, 4 (16 bytes) and a non-negative i32 offset (an AMD buffer offset).
TEST(Hints, FactsReachTheAxisAnalysis) {
  for (bool hints : {false, true}) {
    const tl::ir::Value *ptrs = nullptr, *offs = nullptr, *n = nullptr;
    auto f = trace("facts", [&](tl::detail::Trace& t) {
      auto x = ptr_arg<tl::ty::f32>(t, "x", true);
      auto sizes = ptr_arg<tl::ty::i32>(t, "sizes", true);
      auto stride = scalar_arg<tl::ty::i32>(t, "stride", false);
      auto len = tl::load(sizes);
      if (hints) {
        tl::assume(stride > 0);
        tl::assume(stride % 16 == 0);
        len = tl::multiple_of(len, 8);
      }
      auto o = tl::expand_dims(tl::arange(0, 16) * stride, 1) + tl::expand_dims(tl::arange(0, 64), 0);
      auto p = x + o;
      tl::store(p, tl::load(p) + len.to<tl::ty::f32>());
      ptrs = p.get(), offs = o.get(), n = len.get();
    });
    tl::passes::AxisAnalysis a(*f);
    SCOPED_TRACE(fmt::format("hints {}: {}", hints, a.get(ptrs).str()));
    EXPECT_EQ(a.vector_width(ptrs, 1), hints ? 4 : 1);
    EXPECT_EQ(a.fits_nonnegative_i32(offs), hints);
    EXPECT_EQ(a.get(n).divisibility[0], hints ? 8 : 1);
  }
}

}  // namespace

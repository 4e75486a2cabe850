// Tensor descriptors (Triton's tl.make_tensor_descriptor, desc.load / desc.store), run on
// the test device (the CPU in CI; TL_DEVICE=cuda on a GPU) against plain C++ references:
// ragged shapes whose last blocks hang over every edge, blocks at negative offsets and
// wholly outside, 1-D to 3-D, row strides wider than the rows (padding the kernel must not
// touch), every element width, a K loop of tl::dot through descriptors (tutorial 09's
// descriptor matmul in small). Outputs are poisoned first: what a store must not write
// stays poison, what a load reads outside the shape is 0. Each kernel is also compiled for
// gfx942, gfx950 and sm_90 (no GPU here; TL_DEVICE runs them).
#include <cstdint>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

template <class K, class... A> void compiles_for_gpus(K& k, const A&... args) {
  for (const char* arch : {"gfx942", "gfx950", "sm_90"}) EXPECT_NO_THROW((void)k.compile(arch, {.num_warps = 4}, args...)) << arch;
}

template <class E> using host_t = typename tl::buffer<E>::host_t;

template <class T> std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Random bits for integers, random finite values for floats (bit-exact round trips).
template <class E> std::vector<host_t<E>> random_values(size_t n) {
  std::vector<host_t<E>> h(n);
  if constexpr (std::is_same_v<E, ty::f32> || std::is_same_v<E, ty::f64>) {
    auto f = random_floats(n, -100.0f, 100.0f);
    for (size_t i = 0; i < n; ++i) h[i] = host_t<E>(f[i]);
  } else if constexpr (std::is_same_v<E, ty::bf16>) {
    auto f = random_floats(n, -100.0f, 100.0f);
    for (size_t i = 0; i < n; ++i) h[i] = tl::to_bf16(f[i]);
  } else if constexpr (std::is_same_v<E, ty::f16>) {
    auto f = random_floats(n, -100.0f, 100.0f);
    for (size_t i = 0; i < n; ++i) h[i] = tl::to_f16(f[i]);
  } else {
    for (auto& e : h) {
      uint64_t r = rng()();
      std::memcpy(static_cast<void*>(&e), &r, sizeof(e));
    }
  }
  return h;
}

template <class E> host_t<E> poison_value() {
  host_t<E> p;
  std::memset(static_cast<void*>(&p), 0xAB, sizeof(p));  // (poison()'s byte)
  return p;
}

// Blockwise copy of an M x N matrix (row stride lds) into one of row stride ldd, both
// through descriptors, the grid covering the matrix in BM x BN blocks whose last ones hang
// over both edges: every element copied bit for bit, the padding columns past N and the
// rows past M of the destination untouched.
template <class E> void copy_2d(const char* name, int M, int N, int lds, int ldd, int BM, int BN) {
  SCOPED_TRACE(name);
  auto k = tl::kernel(std::string("desc_copy2d_") + name,
                      [](tl::ptr<E> src, tl::ptr<E> dst, tl::i32 M, tl::i32 N, tl::i32 lds, tl::i32 ldd, int BM, int BN) {
    auto in = tl::make_tensor_descriptor(src, {M, N}, {lds, 1}, {BM, BN});
    auto out = tl::make_tensor_descriptor(dst, {M, N}, {ldd, 1}, {BM, BN});
    tl::i32 m = tl::program_id(0) * BM, n = tl::program_id(1) * BN;
    out.store({m, n}, in.load({m, n}));
  });
  const int rows_alloc = M + 5;
  auto hs = random_values<E>(size_t(rows_alloc) * lds);
  auto S = upload<E>(hs);
  auto D = test_device().alloc<E>(size_t(rows_alloc) * ldd);
  poison(D);
  auto grid = tl::grid(tl::cdiv(M, BM), tl::cdiv(N, BN));
  k[grid](S, D, M, N, lds, ldd, BM, BN);
  std::vector<host_t<E>> want(size_t(rows_alloc) * ldd, poison_value<E>());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) want[size_t(i) * ldd + j] = hs[size_t(i) * lds + j];
  EXPECT_EQ(bytes(D.download()), bytes(want));
  compiles_for_gpus(k, S, D, M, N, lds, ldd, BM, BN);
}

TEST(TensorDescriptor, BlockwiseCopyOverRaggedEdgesEveryElementWidth) {
  copy_2d<ty::f32>("f32", 37, 45, 48, 52, 16, 32);
  copy_2d<ty::f64>("f64", 21, 13, 14, 16, 8, 8);
  copy_2d<ty::bf16>("bf16", 19, 70, 72, 80, 8, 32);
  copy_2d<ty::f16>("f16", 33, 8, 8, 24, 32, 8);
  copy_2d<ty::i8>("i8", 5, 100, 112, 128, 4, 64);
  copy_2d<ty::i32>("i32", 64, 64, 64, 64, 16, 16);  // (no edge: every block whole)
  copy_2d<ty::i64>("i64", 9, 3, 4, 6, 4, 2);
}

// One block read at (om, on), anywhere: partly or wholly outside the M x N matrix, before
// its start too. Stored densely with tl::store: elements outside read 0.
TEST(TensorDescriptor, LoadsOutsideTheShapeReadZero) {
  constexpr int BM = 8, BN = 16;
  auto k = tl::kernel("desc_load_anywhere", [](tl::ptr<ty::f32> src, tl::ptr<ty::f32> out, tl::i32 M, tl::i32 N,
                                               tl::i32 ld, tl::i32 om, tl::i32 on) {
    auto d = tl::make_tensor_descriptor(src, {M, N}, {ld, 1}, {BM, BN});
    auto t = d.load({om, on});
    auto r = tl::arange(0, BM), c = tl::arange(0, BN);
    tl::store(out + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0), t * 2.0f + 1.0f);
  });
  const int M = 13, N = 21, ld = 24;
  auto f = random_floats(size_t(M) * ld + 64, -4.0f, 4.0f);
  auto S = upload<ty::f32>(f);
  auto O = test_device().alloc<ty::f32>(BM * BN);
  for (auto [om, on] : std::vector<std::pair<int, int>>{{0, 0}, {8, 16}, {-3, -5}, {10, 10}, {-8, 0}, {13, 0}, {5, -16}, {-20, 40}}) {
    SCOPED_TRACE(testing::Message() << "at (" << om << ", " << on << ")");
    poison(O);
    k[tl::grid(1)](S, O, M, N, ld, om, on);
    std::vector<float> want(BM * BN);
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) {
        int r = om + i, c = on + j;
        double x = r >= 0 && r < M && c >= 0 && c < N ? double(f[size_t(r) * ld + c]) : 0.0;
        want[size_t(i) * BN + j] = float(x * 2.0 + 1.0);
      }
    EXPECT_EQ(O.download(), want);
  }
  compiles_for_gpus(k, S, O, M, N, ld, 0, 0);
}

// Stores of a block anywhere: only the elements inside the shape are written, the rest of
// the (larger) allocation keeps its poison, at negative offsets too.
TEST(TensorDescriptor, StoresOutsideTheShapeWriteNothing) {
  constexpr int BM = 16, BN = 8;
  auto k = tl::kernel("desc_store_anywhere", [](tl::ptr<ty::f32> dst, tl::ptr<ty::f32> src, tl::i32 M, tl::i32 N,
                                                tl::i32 ld, tl::i32 om, tl::i32 on, int first) {
    auto d = tl::make_tensor_descriptor(dst + first * ld, {M, N}, {ld, 1}, {BM, BN});
    auto r = tl::arange(0, BM), c = tl::arange(0, BN);
    d.store({om, on}, tl::load(src + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0)) - 0.5f);
  });
  // The descriptor's matrix sits 2 rows into the allocation, so that writes before it
  // (a negative offset not masked) would land in poison the test reads.
  const int M = 11, N = 5, ld = 8, rows = 40, first = 2;
  auto f = random_floats(BM * BN, -4.0f, 4.0f);
  auto S = upload<ty::f32>(f);
  auto D = test_device().alloc<ty::f32>(size_t(rows) * ld);
  const float p = [] { float x; std::memset(&x, 0xAB, sizeof x); return x; }();
  for (auto [om, on] : std::vector<std::pair<int, int>>{{0, 0}, {-3, -2}, {7, 1}, {-16, 0}, {11, 0}, {2, 4}}) {
    SCOPED_TRACE(testing::Message() << "at (" << om << ", " << on << ")");
    poison(D);
    k[tl::grid(1)](D, S, M, N, ld, om, on, first);
    std::vector<float> want(size_t(rows) * ld, p);
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) {
        int r = om + i, c = on + j;
        if (r >= 0 && r < M && c >= 0 && c < N) want[size_t(first + r) * ld + c] = float(double(f[size_t(i) * BN + j]) - 0.5);
      }
    EXPECT_EQ(bytes(D.download()), bytes(want));
  }
}

// Triton's test_tensor_descriptor_load3d / store3d: a [10, 50, 119] tensor inside a
// [10, 64, 128] allocation, copied in [2, 8, 32] blocks through a 3-D descriptor each way;
// and a 1-D descriptor scaling a ragged vector.
TEST(TensorDescriptor, ThreeDimensionalAndOneDimensional) {
  auto k3 = tl::kernel("desc_copy3d", [](tl::ptr<ty::f32> src, tl::ptr<ty::f32> dst, tl::i32 A, tl::i32 B, tl::i32 C,
                                         tl::i32 s0, tl::i32 s1) {
    auto in = tl::make_tensor_descriptor(src, {A, B, C}, {s0, s1, 1}, {2, 8, 32});
    auto out = tl::make_tensor_descriptor(dst, {A, B, C}, {s0, s1, 1}, {2, 8, 32});
    std::vector<tl::detail::index_arg> at{tl::program_id(0) * 2, tl::program_id(1) * 8, tl::program_id(2) * 32};
    out.store(at, in.load(at) * 3.0f);
  });
  const int A = 10, B = 50, C = 119, AB = 64, AC = 128;
  auto f = random_floats(size_t(A) * AB * AC, -2.0f, 2.0f);
  auto S = upload<ty::f32>(f);
  auto D = test_device().alloc<ty::f32>(f.size());
  poison(D);
  k3[tl::grid(tl::cdiv(A, 2), tl::cdiv(B, 8), tl::cdiv(C, 32))](S, D, A, B, C, AB * AC, AC);
  const float p = [] { float x; std::memset(&x, 0xAB, sizeof x); return x; }();
  std::vector<float> want(f.size(), p);
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c) {
        size_t i = (size_t(a) * AB + b) * AC + c;
        want[i] = float(double(f[i]) * 3.0);
      }
  EXPECT_EQ(bytes(D.download()), bytes(want));
  compiles_for_gpus(k3, S, D, A, B, C, AB * AC, AC);

  auto k1 = tl::kernel("desc_scale1d", [](tl::ptr<ty::bf16> x, tl::ptr<ty::f32> y, tl::i32 n) {
    auto in = tl::make_tensor_descriptor(x, {n}, {1}, {256});
    auto out = tl::make_tensor_descriptor(y, {n}, {1}, {256});
    tl::i32 at = tl::program_id(0) * 256;
    out.store({at}, in.load({at}).to<ty::f32>() * 0.5f);
  });
  const int n = 1000;
  auto fx = random_floats(1024, -8.0f, 8.0f);
  std::vector<tl::bfloat16> hx(1024);
  for (int i = 0; i < 1024; ++i) hx[i] = tl::to_bf16(fx[i]);
  auto X = upload<ty::bf16>(hx);
  auto Y = test_device().alloc<ty::f32>(1024);
  poison(Y);
  k1[tl::grid(tl::cdiv(n, 256))](X, Y, n);
  std::vector<float> wy(1024, p);
  for (int i = 0; i < n; ++i) wy[i] = float(tl::to_float(hx[i]) * 0.5);
  EXPECT_EQ(bytes(Y.download()), bytes(wy));
  compiles_for_gpus(k1, X, Y, n);
}

// Tutorial 09's descriptor matmul in small: C = A B with A, B and C through descriptors,
// the K loop a tl::range whose loads read the descriptors made before it, every edge ragged
// (M, N, K not multiples of the blocks: the blocks past K read zeros that add nothing).
// f32 with input_precision ieee: products exact on every target, sums compared with a
// double reference within float rounding.
TEST(TensorDescriptor, MatmulThroughDescriptorsWithRaggedEdges) {
  constexpr int BM = 32, BN = 32, BK = 16;
  auto k = tl::kernel("desc_matmul", [](tl::ptr<ty::f32> a, tl::ptr<ty::f32> b, tl::ptr<ty::f32> c, tl::i32 M,
                                        tl::i32 N, tl::i32 K, tl::i32 lda, tl::i32 ldb, tl::i32 ldc) {
    auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {lda, 1}, {BM, BK});
    auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {ldb, 1}, {BK, BN});
    auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {ldc, 1}, {BM, BN});
    tl::i32 m = tl::program_id(0) * BM, n = tl::program_id(1) * BN;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto kk : tl::range(0, tl::cdiv(K, BK))) {
      tl::i32 k0 = kk * BK;
      acc = tl::dot(a_desc.load({m, k0}), b_desc.load({k0, n}), acc, tl::input_precision::ieee);
    }
    c_desc.store({m, n}, acc);
  });
  const int M = 70, N = 50, K = 90, lda = 92, ldb = 52, ldc = 56;
  auto ha = random_floats(size_t(M) * lda, -1.0f, 1.0f), hb = random_floats(size_t(K) * ldb, -1.0f, 1.0f);
  auto A = upload<ty::f32>(ha);
  auto Bm = upload<ty::f32>(hb);
  auto Cm = test_device().alloc<ty::f32>(size_t(M) * ldc);
  poison(Cm);
  k[tl::grid(tl::cdiv(M, BM), tl::cdiv(N, BN))](A, Bm, Cm, M, N, K, lda, ldb, ldc);
  auto got = Cm.download();
  const float p = [] { float x; std::memset(&x, 0xAB, sizeof x); return x; }();
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < ldc; ++j) {
      float g = got[size_t(i) * ldc + j];
      if (j >= N) {
        EXPECT_EQ(std::memcmp(&g, &p, sizeof g), 0) << "padding (" << i << ", " << j << ") written";
        continue;
      }
      double want = 0, mag = 0;
      for (int q = 0; q < K; ++q) {
        want += double(ha[size_t(i) * lda + q]) * double(hb[size_t(q) * ldb + j]);
        mag += std::abs(double(ha[size_t(i) * lda + q]) * double(hb[size_t(q) * ldb + j]));
      }
      EXPECT_NEAR(g, want, 1e-6 * mag + 1e-6) << "(" << i << ", " << j << ")";
    }
  }
  compiles_for_gpus(k, A, Bm, Cm, M, N, K, lda, ldb, ldc);
}

// The descriptor's shape and strides read back as Triton's desc.shape / desc.strides /
// desc.block_shape, and the functional forms tl::load_tensor_descriptor /
// tl::store_tensor_descriptor with a cache modifier.
TEST(TensorDescriptor, AccessorsAndFunctionalForms) {
  auto k = tl::kernel("desc_functional", [](tl::ptr<ty::i32> x, tl::ptr<ty::i32> info, tl::i32 M, tl::i32 N) {
    auto d = tl::make_tensor_descriptor(x, {M, N}, {N * 2, 1}, {4, 8});
    auto t = tl::load_tensor_descriptor(d, {0, 0}, tl::cache_modifier::cg);
    // (rows 4..7, of which 4 and 5 inside: no row both read and written, which would race
    // between threads on a GPU)
    tl::store_tensor_descriptor(d, {4, 0}, t + 100, tl::evict::first);
    auto i = tl::arange(0, 4);
    auto v = tl::where(i == 0, tl::broadcast_to(d.shape()[0], {4}),
                       tl::where(i == 1, tl::broadcast_to(d.shape()[1], {4}),
                                 tl::where(i == 2, tl::broadcast_to(d.strides()[0].to<ty::i32>(), {4}),
                                           tl::full<ty::i32>({4}, double(d.block_shape()[1])))));
    tl::store(info + i, v);
  });
  const int M = 6, N = 8;
  std::vector<int32_t> hx(size_t(M + 2) * 2 * N);
  for (size_t i = 0; i < hx.size(); ++i) hx[i] = int32_t(i);
  auto X = upload<ty::i32>(hx);
  auto I = test_device().alloc<ty::i32>(4);
  poison(I);
  k[tl::grid(1)](X, I, M, N);
  std::vector<int32_t> want = hx;
  // rows 0..3 loaded, stored at rows 4..7 (4 and 5 inside; 6 and 7 past M untouched)
  for (int r = 4; r < M; ++r)
    for (int c = 0; c < N; ++c) want[size_t(r) * 2 * N + c] = hx[size_t(r - 4) * 2 * N + c] + 100;
  EXPECT_EQ(X.download(), want);
  EXPECT_EQ(I.download(), (std::vector<int32_t>{M, N, 2 * N, 8}));
}

template <class H> double as_double(H v) {
  if constexpr (std::is_same_v<H, float>) return v;
  else return tl::to_float(v);
}

// padding_option::nan (Triton's padding_option="nan"): a load reads NaN outside the shape,
// the elements inside bit for bit; f32, f16 and bf16, blocks over every edge and wholly
// outside. Elements are compared by bits inside and by isnan outside.
template <class E> void nan_padding(const char* name) {
  SCOPED_TRACE(name);
  constexpr int BM = 8, BN = 16;
  auto k = tl::kernel(std::string("desc_nan_") + name, [](tl::ptr<E> src, tl::ptr<E> out, tl::i32 M, tl::i32 N, tl::i32 ld,
                                                          tl::i32 om, tl::i32 on) {
    auto d = tl::make_tensor_descriptor(src, {M, N}, {ld, 1}, {BM, BN}, tl::padding_option::nan);
    auto r = tl::arange(0, BM), c = tl::arange(0, BN);
    tl::store(out + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0), d.load({om, on}));
  });
  const int M = 13, N = 21, ld = 32;
  auto hs = random_values<E>(size_t(M) * ld + 64);
  auto S = upload<E>(hs);
  auto O = test_device().alloc<E>(BM * BN);
  for (auto [om, on] : std::vector<std::pair<int, int>>{{0, 0}, {8, 16}, {-3, -5}, {5, 10}, {13, 0}, {-20, 40}}) {
    SCOPED_TRACE(testing::Message() << "at (" << om << ", " << on << ")");
    poison(O);
    k[tl::grid(1)](S, O, M, N, ld, om, on);
    auto got = O.download();
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) {
        int r = om + i, c = on + j;
        const auto& g = got[size_t(i) * BN + j];
        if (r >= 0 && r < M && c >= 0 && c < N) {
          EXPECT_EQ(std::memcmp(&g, &hs[size_t(r) * ld + c], sizeof g), 0) << "(" << i << ", " << j << ")";
        } else {
          EXPECT_TRUE(std::isnan(as_double(g))) << "(" << i << ", " << j << ") outside reads " << as_double(g);
        }
      }
  }
  compiles_for_gpus(k, S, O, M, N, ld, 0, 0);
}

TEST(TensorDescriptor, NanPaddingReadsNanOutsideTheShape) {
  nan_padding<ty::f32>("f32");
  nan_padding<ty::f16>("f16");
  nan_padding<ty::bf16>("bf16");
}

// Triton's host-side TensorDescriptor (triton.tools.tensor_descriptor) as a kernel argument:
// a parameter tl::tensor_descriptor<T, 2> takes tl::TensorDescriptor<T>, its base, shape
// and strides run-time arguments, its block shape and padding trace-time constants. The
// parameters around it (a scalar before, a constant between, a raw pointer after) keep
// their places; a second block shape is a second specialization, each correct.
TEST(TensorDescriptor, HostTensorDescriptorArguments) {
  auto k = tl::kernel("desc_host_copy", [](tl::i32 scale, tl::tensor_descriptor<ty::f32, 2> in, int bias,
                                           tl::tensor_descriptor<ty::f32, 2> out, tl::ptr<ty::i32> info) {
    const auto& b = in.block_shape();
    tl::i32 m = tl::program_id(0) * b[0], n = tl::program_id(1) * b[1];
    // (x * 2 * 4: exact, whatever the target fuses)
    out.store({m, n}, in.load({m, n}) * scale.to<ty::f32>() * float(bias));
    auto i = tl::arange(0, 4);
    auto v = tl::where(i == 0, tl::broadcast_to(in.shape()[0], {4}),
                       tl::where(i == 1, tl::broadcast_to(in.shape()[1], {4}),
                                 tl::broadcast_to(out.strides()[0].to<ty::i32>(), {4})));
    tl::store(info + i, v, (tl::program_id(0) == 0) & (tl::program_id(1) == 0));
  });
  const int M = 37, N = 45, lds = 48, ldd = 52, rows = M + 3;
  auto f = random_floats(size_t(rows) * lds, -4.0f, 4.0f);
  auto S = upload<ty::f32>(f);
  auto D = test_device().alloc<ty::f32>(size_t(rows) * ldd);
  auto I = test_device().alloc<ty::i32>(4);
  const float p = [] { float x; std::memset(&x, 0xAB, sizeof x); return x; }();
  for (auto [bm, bn] : std::vector<std::pair<int, int>>{{16, 32}, {8, 8}}) {
    SCOPED_TRACE(testing::Message() << "block " << bm << " x " << bn);
    poison(D);
    poison(I);
    tl::TensorDescriptor<ty::f32> in(S, {M, N}, {lds, 1}, {bm, bn});
    tl::TensorDescriptor<ty::f32> out(D, {M, N}, {ldd, 1}, {bm, bn});
    k[tl::grid(tl::cdiv(M, bm), tl::cdiv(N, bn))](2, in, 4, out, I.data());
    std::vector<float> want(size_t(rows) * ldd, p);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) want[size_t(i) * ldd + j] = float(double(f[size_t(i) * lds + j]) * 8.0);
    EXPECT_EQ(bytes(D.download()), bytes(want));
    EXPECT_EQ(I.download(), (std::vector<int32_t>{M, N, ldd, ldd}));
    compiles_for_gpus(k, 2, in, 4, out, I.data());
  }
}

// A K loop of tl::dot through host descriptors (tutorial 09's TMA kernel in small: A [M,
// K], B given as [N, K] and used transposed, C), f16 in, f32 accumulated, every edge ragged;
// TensorDescriptor::from_buffer for the contiguous ones.
TEST(TensorDescriptor, HostDescriptorMatmulWithRaggedEdges) {
  constexpr int BM = 32, BN = 32, BK = 16;
  auto k = tl::kernel("desc_host_matmul", [](tl::tensor_descriptor<ty::f16, 2> a_desc, tl::tensor_descriptor<ty::f16, 2> b_desc,
                                             tl::tensor_descriptor<ty::f32, 2> c_desc, tl::i32 K) {
    tl::i32 m = tl::program_id(0) * BM, n = tl::program_id(1) * BN;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto kk : tl::range(0, tl::cdiv(K, BK))) {
      tl::i32 k0 = kk * BK;
      acc = tl::dot(a_desc.load({m, k0}), tl::trans(b_desc.load({n, k0})), acc);
    }
    c_desc.store({m, n}, acc);
  });
  const int M = 70, N = 50, K = 88, ldc = 56;
  auto fa = random_floats(size_t(M) * K, -1.0f, 1.0f), fb = random_floats(size_t(N) * K, -1.0f, 1.0f);
  std::vector<tl::half> ha(fa.size()), hb(fb.size());
  for (size_t i = 0; i < fa.size(); ++i) ha[i] = tl::to_f16(fa[i]);
  for (size_t i = 0; i < fb.size(); ++i) hb[i] = tl::to_f16(fb[i]);
  auto A = upload<ty::f16>(ha);
  auto B = upload<ty::f16>(hb);
  auto C = test_device().alloc<ty::f32>(size_t(M) * ldc);
  poison(C);
  auto a_desc = tl::TensorDescriptor<ty::f16>::from_buffer(A, {M, K}, {BM, BK});
  auto b_desc = tl::TensorDescriptor<ty::f16>::from_buffer(B, {N, K}, {BN, BK});
  tl::TensorDescriptor<ty::f32> c_desc(C, {M, N}, {ldc, 1}, {BM, BN});
  k[tl::grid(tl::cdiv(M, BM), tl::cdiv(N, BN))](a_desc, b_desc, c_desc, K);
  auto got = C.download();
  const float p = [] { float x; std::memset(&x, 0xAB, sizeof x); return x; }();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < ldc; ++j) {
      float g = got[size_t(i) * ldc + j];
      if (j >= N) {
        EXPECT_EQ(std::memcmp(&g, &p, sizeof g), 0) << "padding (" << i << ", " << j << ") written";
        continue;
      }
      double want = 0, mag = 0;
      for (int q = 0; q < K; ++q) {
        double x = tl::to_float(ha[size_t(i) * K + q]) * double(tl::to_float(hb[size_t(j) * K + q]));
        want += x, mag += std::abs(x);
      }
      EXPECT_NEAR(g, want, 1e-5 * mag + 1e-6) << "(" << i << ", " << j << ")";
    }
  compiles_for_gpus(k, a_desc, b_desc, c_desc, K);
}

// The host descriptor's checks (Triton's TensorDescriptor.__post_init__), each a
// tl::launch_error naming the line that made it; a descriptor of another rank than the
// kernel's parameter names the descriptor's line at the launch.
TEST(TensorDescriptor, HostDescriptorChecksNameTheLine) {
  auto b = test_device().alloc<ty::f32>(4096);
  auto bi = test_device().alloc<ty::i32>(4096);
  auto fails = [](const std::function<void()>& f, unsigned line, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "no error, expected: " << what;
    } catch (const tl::launch_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_EQ(e.line(), line) << e.what();
    }
  };
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, {64, 64}, {65, 1}, {16, 16}); }, __LINE__,
        "strides[0] = 65 is 260 bytes, not a multiple of 16");
  fails([&] { tl::TensorDescriptor<ty::f32> d(b.data() + 1, {64, 63}, {64, 1}, {16, 16}); }, __LINE__,
        "is not 16-byte aligned");
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, {64, 64}, {64, 1}, {12, 16}); }, __LINE__,
        "block_shape [12, 16]: every dim must be a power of two, got 12");
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, {64, 64}, {64, 1}, {16, 2}); }, __LINE__,
        "the block's last dim must span at least 16 bytes, got 2 x 4 = 8 bytes");
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, {64, 64}, {64, 2}, {16, 16}); }, __LINE__,
        "the last stride must be 1");
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, {64, 64}, {64}, {16, 16}); }, __LINE__,
        "2 shape entries, 1 strides and 2 block dims");
  std::vector<int64_t> six(6, 4);
  fails([&] { tl::TensorDescriptor<ty::f32> d(b, six, six, {1, 1, 1, 1, 1, 4}); }, __LINE__,
        "the shape has 6 dims; descriptors have 1 to 5");
  fails([&] { tl::TensorDescriptor<ty::i32> d(bi, {64, 64}, {64, 1}, {16, 16}, tl::padding_option::nan); }, __LINE__,
        "padding_option::nan for i32 elements");
  auto k = tl::kernel("desc_host_rank", [](tl::tensor_descriptor<ty::f32, 2> d, tl::ptr<ty::f32> o) {
    tl::store(o, tl::sum(d.load({0, 0})));
  });
  const unsigned made_at = __LINE__ + 1;
  tl::TensorDescriptor<ty::f32> one_dim(b, {4096}, {1}, {16});
  fails([&] { k[tl::grid(1)](one_dim, b); }, made_at,
        "a tl::TensorDescriptor of 1 dim for a kernel parameter tl::tensor_descriptor<T, 2>");
}

}  // namespace

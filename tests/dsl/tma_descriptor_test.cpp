// Descriptor loads through Hopper's TMA (launch_options::tma, issue 41) on an sm_90 GPU
// (TL_DEVICE=cuda on the H200; skipped elsewhere: CI has no GPU): boxes at ragged,
// negative and wholly outside corners of tensors whose rows are padded, every swizzle tl
// uses (128, 64 and 32 bytes, and none: 3-D, 1-D and 4-row blocks), 1-, 2- and 4-byte
// elements, zero and NaN fill, each checked element by element against a plain C++ read
// of the tensor (the box written out row-major, the output poisoned first); each kernel's
// PTX is checked to hold the TMA copy, so that a fallback to masked loads cannot pass for
// it (without the GPU, only that: each kernel compiled for sm_90, its copy, ptxas). Then
// the pipeliner's TMA stages (one mbarrier a stage): tutorial 09's TMA kernel with the
// option, ragged in M, N and K, 2 to 4 stages, against a double-precision product, and
// boxes summed across a row by a loop with its own stages.
// tests/codegen/tma_codegen_test.cpp checks the PTX without a GPU.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "bench/persistent_matmul_tutorial.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/reference.hpp"
#include "tl/descriptor.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

template <class E> using host_t = typename tl::buffer<E>::host_t;

bool on_sm90() {
  const tl::device d = test_device();
  return d.kind() == tl::device_kind::cuda && d.target().rfind("sm_90", 0) == 0;
}

tl::launch_options with_tma(int num_warps = 4) {
  tl::launch_options o{.num_warps = num_warps};
  o.tma = true;
  return o;
}

// TMA takes a box whose innermost coordinate is a multiple of 16 bytes (an H200 faults
// otherwise: bench/results/h200-2026-11-29-session16/tma_probe). tl copies by TMA only
// where the trace shows it; `Hinted` states it with tl::multiple_of on the innermost
// offset (the corners given to that kernel are such multiples), and without it the
// offsets loaded from memory are unknown, so the same load takes the pointer path, right
// at any corner.
template <class E> constexpr int kTmaInnerMultiple = 16 / int(sizeof(typename tl::buffer<E>::host_t));
template <class E> bool tma_aligned(const std::vector<int>& corner) { return corner.back() % kTmaInnerMultiple<E> == 0; }

// Program p loads the block at offs[p * R .. p * R + R) and writes it row-major at
// out[p * block elements].
template <class E, int R, bool Hinted> auto& box_kernel() {
  static auto k = tl::kernel("tma_box", [](tl::tensor_descriptor<E, R> in, tl::ptr<E> out, tl::ptr<ty::i32> offs) {
    auto p = tl::program_id(0);
    std::vector<tl::detail::index_arg> at;
    for (int d = 0; d < R; ++d) {
      auto o = tl::load(offs + (p * R + d));
      if (Hinted && d == R - 1) o = tl::multiple_of(o, kTmaInnerMultiple<E>);
      at.push_back(o);
    }
    auto t = in.load(at);
    const tl::shape_t& B = in.block_shape();
    int elements = 1, stride = 1;
    for (int b : B) elements *= b;
    tl::tile<ty::i32> idx = tl::zeros<ty::i32>(B);
    for (int d = R - 1; d >= 0; --d) {
      tl::shape_t along(static_cast<size_t>(R), 1);
      along[size_t(d)] = B[size_t(d)];
      idx = idx + tl::broadcast_to(tl::reshape(tl::arange(0, B[size_t(d)]) * stride, along), B);
      stride *= B[size_t(d)];
    }
    tl::store(out + p * elements + idx, t);
  });
  return k;
}

template <class E> bool same(host_t<E> a, host_t<E> b, bool nan) {
  if constexpr (std::is_same_v<E, ty::f32>)
    if (nan && std::isnan(a)) return std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// The boxes of `block` at `corners` of a tensor of `shape` whose rows are `pitch` elements
// apart (row-major otherwise), through TMA, against the tensor read in C++.
template <class E, int R, bool Hinted>
void check_boxes_of(std::vector<int64_t> shape, int64_t pitch, std::vector<int> block,
                    std::vector<std::vector<int>> corners, tl::padding_option padding) {
  if (corners.empty()) return;
  SCOPED_TRACE(Hinted ? "corners whose innermost offset is a multiple of 16 bytes, hinted: TMA"
                      : "the other corners, not hinted: the pointer path");
  std::vector<int64_t> strides(R, 1);
  strides[R - 1] = 1;
  if (R >= 2) strides[R - 2] = pitch;
  for (int d = R - 3; d >= 0; --d) strides[size_t(d)] = strides[size_t(d) + 1] * shape[size_t(d) + 1];
  auto& k = box_kernel<E, R, Hinted>();
  const int copies = Hinted ? 1 : 0;
  if (!on_sm90()) {
    // No sm_90 GPU here: the same kernel compiled for sm_90 only (its one TMA copy, and
    // ptxas's verdict where ptxas is here).
    auto* fake = reinterpret_cast<const host_t<E>*>(uintptr_t(1) << 24);
    tl::TensorDescriptor<E> desc(fake, shape, strides, block, padding);
    const std::string ptx =
        isa_of_compiled(k.compile("sm_90", with_tma(), desc, fake, reinterpret_cast<const int32_t*>(fake)));
    EXPECT_EQ(count(ptx, fmt::format("cp.async.bulk.tensor.{}d.", R)), copies) << ptx;
    auto run = run_ptxas(ptx);
    if (run.ran) EXPECT_TRUE(run.ok) << run.output;
    return;
  }
  const size_t n = size_t(strides[0] * shape[0] + pitch);
  std::vector<host_t<E>> h(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t r = rng()();
    if constexpr (std::is_same_v<E, ty::f32>) h[i] = float(int64_t(r % 2001) - 1000) / 8;
    else if constexpr (std::is_same_v<E, ty::f16>) h[i] = tl::to_f16(float(int64_t(r % 2001) - 1000) / 8);
    else std::memcpy(static_cast<void*>(&h[i]), &r, sizeof(h[i]));
  }
  tl::device dev = test_device();
  auto in = dev.alloc<E>(n);
  in.upload(h);
  size_t elements = 1;
  for (int b : block) elements *= size_t(b);
  const int programs = int(corners.size());
  auto out = dev.alloc<E>(elements * size_t(programs));
  host_t<E> poison;
  std::memset(static_cast<void*>(&poison), 0xAB, sizeof poison);
  out.upload(std::vector<host_t<E>>(out.size(), poison));
  std::vector<int32_t> offs;
  for (auto& c : corners) offs.insert(offs.end(), c.begin(), c.end());
  auto o = dev.alloc<ty::i32>(offs.size());
  o.upload(offs);
  tl::TensorDescriptor<E> desc(in, shape, strides, block, padding);
  const std::string ptx = isa_of_compiled(k.compile(dev, with_tma(), desc, out, o));
  EXPECT_EQ(count(ptx, "cp.async.bulk.tensor"), copies) << (Hinted ? "the load is not a TMA copy" : "an unknown offset took TMA");
  k[tl::grid(programs)].with(with_tma())(desc, out, o);
  const std::vector<host_t<E>> got = out.download();
  const bool nan = padding == tl::padding_option::nan;
  host_t<E> fill{};
  if constexpr (std::is_same_v<E, ty::f32>)
    if (nan) fill = std::nanf("");
  int bad = 0;
  for (int p = 0; p < programs; ++p)
    for (size_t e = 0; e < elements; ++e) {
      // element e of the box: its index along each dim, row-major
      size_t rest = e;
      int64_t at = 0;
      bool inside = true;
      for (int d = R - 1; d >= 0; --d) {
        const int64_t i = corners[size_t(p)][size_t(d)] + int64_t(rest % size_t(block[size_t(d)]));
        rest /= size_t(block[size_t(d)]);
        inside &= i >= 0 && i < shape[size_t(d)];
        at += i * strides[size_t(d)];
      }
      const host_t<E> want = inside ? h[size_t(at)] : fill;
      if (!same<E>(want, got[size_t(p) * elements + e], nan) && ++bad <= 5)
        ADD_FAILURE() << "box " << p << " element " << e << (inside ? " (inside)" : " (outside)");
    }
  EXPECT_EQ(bad, 0) << tl::name(E::dtype) << " block of " << elements << " elements";
}

template <class E, int R>
void check_boxes(std::vector<int64_t> shape, int64_t pitch, std::vector<int> block, std::vector<std::vector<int>> corners,
                 tl::padding_option padding = tl::padding_option::zero) {
  std::vector<std::vector<int>> aligned, other;
  for (auto& c : corners) (tma_aligned<E>(c) ? aligned : other).push_back(c);
  check_boxes_of<E, R, true>(shape, pitch, block, aligned, padding);
  check_boxes_of<E, R, false>(shape, pitch, block, other, padding);
}

}  // namespace

// Rows padded past the shape (the padding is never read: it is outside the map's dims).
TEST(TmaDescriptor, BoxesAtRaggedNegativeAndOutsideCorners) {
  const std::vector<std::vector<int>> corners = {{0, 0}, {48, 64}, {-5, -7}, {100, 0}, {3, 40}, {-16, -32}, {33, 1}};
  check_boxes<ty::f32, 2>({50, 70}, 72, {16, 32}, corners);   // 128-byte rows: 128-byte swizzle
  check_boxes<ty::f16, 2>({100, 90}, 96, {64, 64}, corners);  // tutorial 09's A block
  check_boxes<ty::f16, 2>({45, 37}, 40, {64, 32}, corners);   // 64-byte rows
  check_boxes<ty::f32, 2>({13, 11}, 12, {8, 8}, corners);     // 32-byte rows
  check_boxes<ty::i8, 2>({70, 77}, 80, {16, 64}, corners);    // bytes (an unsigned map)
  check_boxes<ty::f16, 2>({21, 70}, 72, {4, 64}, corners);    // 4 rows: row-major
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

TEST(TmaDescriptor, NanFill) {
  check_boxes<ty::f32, 2>({50, 70}, 72, {16, 32}, {{48, 64}, {-5, -7}, {100, 0}}, tl::padding_option::nan);
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

TEST(TmaDescriptor, OneAndThreeDims) {
  check_boxes<ty::f32, 1>({1000}, 1, {64}, {{0}, {960}, {-30}, {2000}});
  check_boxes<ty::f16, 3>({5, 19, 30}, 32, {2, 8, 16}, {{0, 0, 0}, {4, 16, 24}, {-1, -3, -5}, {6, 0, 0}});
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

// Tutorial 09's TMA kernel with the option: ragged in M, N and K (TMA's zero fill pads K),
// and at the benchmark's blocks (128x256x64, 8 warps). Its K loop's copies are pipelined
// on one mbarrier a stage (passes/pipeline_loops.cpp): K of one block (fewer iterations
// than stages: the prologue's copies past the end are not issued), of many (each stage's
// phase flips several times), 2 to 4 stages, and more tiles than programs (each program's
// K loop runs again on mbarriers initialised afresh). C's subtiles are TMA stores where
// their rows are at most 128 bytes (all but the 128x256 blocks).
TEST(TmaDescriptor, Tutorial09PersistentMatmul) {
  struct Case { int M, N, K, BM, BN, BK, warps, stages; };
  for (Case c : {Case{90, 120, 72, 32, 64, 32, 4, 3}, Case{300, 520, 200, 128, 256, 64, 8, 3},
                 Case{70, 136, 16, 32, 64, 32, 4, 3}, Case{64, 64, 1000, 64, 64, 32, 4, 2},
                 Case{200, 72, 1000, 64, 64, 32, 4, 3}, Case{130, 200, 520, 128, 128, 64, 8, 4}}) {
    SCOPED_TRACE(fmt::format("{}x{}x{} at {}x{}x{} w{} s{}", c.M, c.N, c.K, c.BM, c.BN, c.BK, c.warps, c.stages));
    using T = ty::f16;
    tl::launch_options o = with_tma(c.warps);
    o.num_stages = c.stages;
    auto& k = persistent_matmul::matmul_kernel_tma_persistent<T>();
    const int sms = 8;
    // (the copies: stages - 1 iterations ahead before the loop, one each in it; A's and B's;
    // C's two subtiles are TMA stores where their rows are at most 128 bytes)
    const int copies = 2 * c.stages, stores = c.BN / 2 * 2 <= 128 ? 2 : 0;
    if (!on_sm90()) {
      auto* fake = reinterpret_cast<const host_t<T>*>(uintptr_t(1) << 24);
      tl::TensorDescriptor<T> a(fake, {c.M, c.K}, {c.K, 1}, {c.BM, c.BK}), b(fake, {c.N, c.K}, {c.K, 1}, {c.BN, c.BK}),
          cd(fake, {c.M, c.N}, {c.N, 1}, {c.BM, c.BN / 2});
      const std::string ptx = isa_of_compiled(k.compile("sm_90", o, a, b, cd, c.M, c.N, c.K, c.BM, c.BN, c.BK, 2, true, sms));
      EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global"), copies);
      EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta"), stores);
      EXPECT_EQ(count(ptx, "mbarrier.try_wait.parity"), 1);
      auto run = run_ptxas(ptx);
      if (run.ran) EXPECT_TRUE(run.ok) << run.output;
      continue;
    }
    std::vector<host_t<T>> ha(size_t(c.M) * c.K), hb(size_t(c.N) * c.K);
    for (auto& v : ha) v = tl::to_f16(float(int64_t(rng()() % 17) - 8) / 8);
    for (auto& v : hb) v = tl::to_f16(float(int64_t(rng()() % 17) - 8) / 8);
    tl::device dev = test_device();
    auto a = dev.alloc<T>(ha.size()), b = dev.alloc<T>(hb.size());
    a.upload(ha), b.upload(hb);
    auto cbuf = dev.alloc<T>(size_t(c.M) * c.N);
    cbuf.upload(std::vector<host_t<T>>(cbuf.size(), tl::to_f16(std::nanf(""))));
    auto d = persistent_matmul::make_tma_descriptors<T>(a, b, cbuf, c.M, c.N, c.K, c.BM, c.BN, c.BK, true);
    int grid = std::min(sms, int(tl::cdiv(c.M, c.BM) * tl::cdiv(c.N, c.BN)));
    const std::string ptx = isa_of_compiled(k.compile(dev, o, d.a, d.b, d.c, c.M, c.N, c.K, c.BM, c.BN, c.BK, 2, true, sms));
    EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.shared::cluster.global"), copies);
    EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta"), stores);
    EXPECT_EQ(count(ptx, "mbarrier.try_wait.parity"), 1);
    k[tl::grid(grid)].with(o)(d.a, d.b, d.c, c.M, c.N, c.K, c.BM, c.BN, c.BK, 2, true, sms);
    const auto got = cbuf.download();
    int bad = 0;
    for (int i = 0; i < c.M; ++i)
      for (int j = 0; j < c.N; ++j) {
        double want = 0;
        for (int kk = 0; kk < c.K; ++kk)
          want += double(tl::to_float(ha[size_t(i) * c.K + kk])) * double(tl::to_float(hb[size_t(j) * c.K + kk]));
        // (products of eighths summed in f32 are exact; C rounded to f16)
        const double g = double(tl::to_float(got[size_t(i) * c.N + j]));
        if (!(std::fabs(g - want) <= std::fabs(want) * 0x1p-11 + 1e-6) && ++bad <= 5)
          ADD_FAILURE() << c.M << "x" << c.N << "x" << c.K << " C[" << i << "][" << j << "] = " << g << ", want " << want;
      }
    EXPECT_EQ(bad, 0);
  }
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

// TMA stores: program p writes a block (read row-major from `in`) at corner p of a tensor
// whose rows are padded; what lies outside the shape (the padding included) keeps its
// poison, what lies inside is the block's element, checked one by one. The corners'
// boxes do not overlap.
template <class E, bool Hinted>
void check_stores_of(std::vector<int64_t> shape, int64_t pitch, std::vector<int> block,
                     std::vector<std::vector<int>> corners) {
  static auto k = tl::kernel("tma_store_box", [](tl::ptr<E> in, tl::tensor_descriptor<E, 2> out, tl::ptr<ty::i32> offs) {
    const int BM = out.block_shape()[0], BN = out.block_shape()[1];
    auto p = tl::program_id(0);
    auto r = tl::arange(0, BM);
    auto c = tl::arange(0, BN);
    auto t = tl::load(in + (p * BM * BN + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0)));
    auto col = tl::load(offs + (2 * p + 1));
    if (Hinted) col = tl::multiple_of(col, kTmaInnerMultiple<E>);
    out.store({tl::load(offs + 2 * p), col}, t);
  });
  if (corners.empty()) return;
  SCOPED_TRACE(Hinted ? "corners whose innermost offset is a multiple of 16 bytes, hinted: TMA"
                      : "the other corners, not hinted: the pointer path");
  const int copies = Hinted ? 1 : 0;
  const size_t elements = size_t(block[0]) * size_t(block[1]);
  const int programs = int(corners.size());
  if (!on_sm90()) {
    auto* fake = reinterpret_cast<const host_t<E>*>(uintptr_t(1) << 24);
    tl::TensorDescriptor<E> desc(fake, shape, {pitch, 1}, block);
    const std::string ptx = isa_of_compiled(k.compile("sm_90", with_tma(), fake, desc, reinterpret_cast<const int32_t*>(fake)));
    EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta"), copies) << ptx;
    auto run = run_ptxas(ptx);
    if (run.ran) EXPECT_TRUE(run.ok) << run.output;
    return;
  }
  std::vector<host_t<E>> h(elements * size_t(programs));
  for (auto& v : h) {
    if constexpr (std::is_same_v<E, ty::f32>) v = float(int64_t(rng()() % 2001) - 1000) / 8;
    else v = tl::to_f16(float(int64_t(rng()() % 2001) - 1000) / 8);
  }
  tl::device dev = test_device();
  auto in = dev.alloc<E>(h.size());
  in.upload(h);
  const size_t n = size_t(shape[0] * pitch);
  host_t<E> poison;
  std::memset(static_cast<void*>(&poison), 0xAB, sizeof poison);
  auto out = dev.alloc<E>(n);
  out.upload(std::vector<host_t<E>>(n, poison));
  std::vector<int32_t> offs;
  for (auto& c : corners) offs.insert(offs.end(), c.begin(), c.end());
  auto o = dev.alloc<ty::i32>(offs.size());
  o.upload(offs);
  tl::TensorDescriptor<E> desc(out, shape, {pitch, 1}, block);
  const std::string ptx = isa_of_compiled(k.compile(dev, with_tma(), in, desc, o));
  EXPECT_EQ(count(ptx, "cp.async.bulk.tensor.2d.global.shared::cta"), copies)
      << (Hinted ? "the store is not a TMA copy" : "an unknown offset took TMA");
  k[tl::grid(programs)].with(with_tma())(in, desc, o);
  std::vector<host_t<E>> want(n, poison);
  for (int p = 0; p < programs; ++p)
    for (int i = 0; i < block[0]; ++i)
      for (int j = 0; j < block[1]; ++j) {
        const int64_t r = corners[size_t(p)][0] + i, c = corners[size_t(p)][1] + j;
        if (r >= 0 && r < shape[0] && c >= 0 && c < shape[1])
          want[size_t(r * pitch + c)] = h[size_t(p) * elements + size_t(i) * size_t(block[1]) + size_t(j)];
      }
  const std::vector<host_t<E>> got = out.download();
  int bad = 0;
  for (size_t e = 0; e < n; ++e)
    if (std::memcmp(&want[e], &got[e], sizeof(host_t<E>)) != 0 && ++bad <= 5)
      ADD_FAILURE() << "element (" << e / size_t(pitch) << ", " << e % size_t(pitch) << ")";
  EXPECT_EQ(bad, 0) << tl::name(E::dtype) << " block " << block[0] << "x" << block[1];
}

template <class E>
void check_stores(std::vector<int64_t> shape, int64_t pitch, std::vector<int> block, std::vector<std::vector<int>> corners) {
  std::vector<std::vector<int>> aligned, other;
  for (auto& c : corners) (tma_aligned<E>(c) ? aligned : other).push_back(c);
  check_stores_of<E, true>(shape, pitch, block, aligned);
  check_stores_of<E, false>(shape, pitch, block, other);
}

TEST(TmaDescriptor, StoresAtRaggedNegativeAndOutsideCorners) {
  const std::vector<std::vector<int>> corners = {{0, 0}, {48, 64}, {-10, 64}, {100, 0}, {16, -20}, {32, 70}};
  check_stores<ty::f32>({50, 70}, 72, {16, 32}, corners);   // 128-byte rows: 128-byte swizzle
  check_stores<ty::f16>({50, 90}, 96, {16, 32}, corners);   // 64-byte rows
  check_stores<ty::f16>({50, 90}, 96, {16, 64}, corners);   // tutorial 09's C subtile rows
  check_stores<ty::f32>({50, 70}, 72, {4, 32}, corners);    // 4 rows: row-major
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

// A loop's own tl::num_stages pipelines TMA loads read into registers (no dot): each
// program sums the [16, 32] boxes of its rows across a ragged row, 2 and 4 stages, the
// row shorter than the stages ahead too; against the sums in C++ (zero fill past the
// shape), the output poisoned first.
TEST(TmaDescriptor, PipelinedBoxesSummedAcrossARow) {
  static auto k = tl::kernel("tma_row_sums", [](tl::tensor_descriptor<ty::f32, 2> in, tl::ptr<ty::f32> out,
                                                tl::i32 n, int stages) {
    const int BM = in.block_shape()[0], BN = in.block_shape()[1];
    auto row = tl::program_id(0) * BM;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto c : tl::range(0, n, BN, tl::num_stages(stages))) acc = acc + in.load({row, c});
    auto r = tl::arange(0, BM);
    auto c = tl::arange(0, BN);
    tl::store(out + (tl::program_id(0) * BM * BN + tl::expand_dims(r, 1) * BN + tl::expand_dims(c, 0)), acc);
  });
  const int BM = 16, BN = 32;
  for (int stages : {2, 4})
    for (int64_t cols : {int64_t(1000), int64_t(40)}) {
      SCOPED_TRACE(fmt::format("{} columns, {} stages", cols, stages));
      const int64_t rows = 50, pitch = (cols + 3) / 4 * 4;
      const int programs = int((rows + BM - 1) / BM);
      if (!on_sm90()) {
        auto* fake = reinterpret_cast<const float*>(uintptr_t(1) << 24);
        tl::TensorDescriptor<ty::f32> desc(fake, {rows, cols}, {pitch, 1}, {BM, BN});
        const std::string ptx = isa_of_compiled(k.compile("sm_90", with_tma(), desc, fake, int(cols), stages));
        EXPECT_EQ(count(ptx, "cp.async.bulk.tensor"), stages);
        auto run = run_ptxas(ptx);
        if (run.ran) EXPECT_TRUE(run.ok) << run.output;
        continue;
      }
      std::vector<float> h(size_t(rows * pitch));
      for (auto& v : h) v = float(int64_t(rng()() % 2001) - 1000) / 8;
      tl::device dev = test_device();
      auto in = dev.alloc<ty::f32>(h.size());
      in.upload(h);
      auto out = dev.alloc<ty::f32>(size_t(programs) * BM * BN);
      out.upload(std::vector<float>(out.size(), std::nanf("")));
      tl::TensorDescriptor<ty::f32> desc(in, {rows, cols}, {pitch, 1}, {BM, BN});
      const std::string ptx = isa_of_compiled(k.compile(dev, with_tma(), desc, out, int(cols), stages));
      EXPECT_EQ(count(ptx, "cp.async.bulk.tensor"), stages) << "the loads are not pipelined TMA copies";
      k[tl::grid(programs)].with(with_tma())(desc, out, int(cols), stages);
      const std::vector<float> got = out.download();
      int bad = 0;
      for (int p = 0; p < programs; ++p)
        for (int i = 0; i < BM; ++i)
          for (int j = 0; j < BN; ++j) {
            double want = 0;  // (eighths below 2^10: every partial sum exact in f32)
            const int64_t r = int64_t(p) * BM + i;
            for (int64_t c = j; c < cols; c += BN)
              if (r < rows) want += double(h[size_t(r * pitch + c)]);
            const float g = got[(size_t(p) * BM + size_t(i)) * BN + size_t(j)];
            if (!(double(g) == want) && ++bad <= 5) ADD_FAILURE() << "row " << r << " column " << j << ": " << g << ", want " << want;
          }
      EXPECT_EQ(bad, 0);
    }
  if (!on_sm90()) GTEST_SKIP() << "compiled for sm_90 only: running needs an sm_90 GPU (TL_DEVICE=cuda)";
}

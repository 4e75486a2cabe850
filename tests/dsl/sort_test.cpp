// tl::sort, tl::topk and tl::histogram (Triton's tl.sort / tl.topk / tl.histogram), run on
// the test device (the CPU in CI; TL_DEVICE=cuda or hip on a GPU) against std::stable_sort
// and plain C++ counting on random inputs with many duplicates, negative values and (f32)
// NaNs and signed zeros; outputs poisoned first. Each kernel is also compiled for gfx942,
// gfx950 and sm_90 at 1, 4 and 8 warps (no GPU here: TL_DEVICE runs them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

// (A few kernels a test: each compile takes a good part of a second, a 1x1024 sort with
// indices at one warp, 32 of each a lane on NVIDIA through 55 steps, four; the 1x1024 sort
// at 4 warps and topk's shapes are tests/codegen/sort_codegen_test.cpp's.)
template <class K, class... A> void compiles_for_gpus(std::initializer_list<int> warps, K& k, const A&... args) {
  for (const char* arch : {"gfx942", "gfx950", "sm_90"})
    for (int w : warps) EXPECT_NO_THROW((void)k.compile(arch, {.num_warps = w}, args...)) << arch << " " << w;
}

// Host values of each element type, and the key the reference sorts by.
template <class E> using host_t = typename tl::buffer<tl::elem_t<E>>::host_t;
template <class E> double key_of(host_t<E> v) { return to_double(v); }
template <class E> host_t<E> from_double(double d) {
  if constexpr (std::is_same_v<E, tl::f16>) return tl::to_f16(d);
  else if constexpr (std::is_same_v<E, tl::bf16>) return tl::to_bf16(d);
  else return host_t<E>(d);
}
template <class E> uint64_t bits_of(host_t<E> v) {
  if constexpr (std::is_same_v<E, tl::f16> || std::is_same_v<E, tl::bf16>) return v.bits;
  else if constexpr (std::is_same_v<E, tl::f32>) return std::bit_cast<uint32_t>(v);
  else if constexpr (std::is_same_v<E, tl::f64>) return std::bit_cast<uint64_t>(v);
  else return uint64_t(v);
}

// Few distinct values (duplicates everywhere), negative ones (unsigned types: small ones),
// and for floats NaNs (f32 and f64 also a negative one with a payload: it must come back
// bit for bit), +-0.0 and infinities.
template <class E> std::vector<host_t<E>> random_keys(size_t n) {
  auto r = random_ints(n, -12, 12);
  constexpr tl::DType dt = tl::elem_t<E>::dtype;
  std::vector<host_t<E>> out;
  for (size_t i = 0; i < n; ++i) {
    if constexpr (tl::is_int(dt)) {
      out.push_back(host_t<E>(tl::is_signed(dt) ? r[i] : r[i] + 12));
    } else {
      double d = r[i] * 0.25;
      if (r[i] == 11) d = NAN;
      if (r[i] == 10) d = -0.0;
      if (r[i] == -12) d = -INFINITY;
      if constexpr (std::is_same_v<E, tl::f32>)
        if (r[i] == 9) { out.push_back(std::bit_cast<float>(0xffc01234u)); continue; }
      if constexpr (std::is_same_v<E, tl::f64>)
        if (r[i] == 9) { out.push_back(std::bit_cast<double>(0xfff8000000001234ull)); continue; }
      out.push_back(from_double<E>(d));
    }
  }
  return out;
}

// std::stable_sort's order of positions [first, first + n*stride) stepping `stride`, by
// number with NaN above everything (last ascending, first descending).
template <class E> std::vector<int> stable_order(const std::vector<host_t<E>>& h, size_t first, int n, size_t stride, bool desc) {
  std::vector<int> ord(static_cast<size_t>(n));
  std::iota(ord.begin(), ord.end(), 0);
  auto less = [](double a, double b) { return std::isnan(a) ? false : std::isnan(b) ? true : a < b; };
  std::stable_sort(ord.begin(), ord.end(), [&](int a, int b) {
    double x = key_of<E>(h[first + size_t(a) * stride]), y = key_of<E>(h[first + size_t(b) * stride]);
    return desc ? less(y, x) : less(x, y);
  });
  return ord;
}

// Equal as numbers (NaN equal to NaN, -0.0 to +0.0): the sort without indices.
template <class E> bool same_number(host_t<E> a, host_t<E> b) {
  double x = key_of<E>(a), y = key_of<E>(b);
  return (std::isnan(x) && std::isnan(y)) || x == y;
}

// A [R, C] tile with `rows` rows loaded (the rest masked off, not stored), sorted along
// `dim`, values and (when `with_idx`) indices stored.
template <class E> void check_sort(int R, int C, int rows, int dim, bool desc, bool with_idx, bool gpus) {
  auto k = tl::kernel("sort2d", [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<tl::i32> idx, tl::i32 rows, int R, int C, int dim,
                                   bool desc, bool with_idx) {
    auto offs = tl::expand_dims(tl::arange(0, R), 1) * C + tl::expand_dims(tl::arange(0, C), 0);
    auto m = offs < rows * C;
    auto t = tl::load(x + offs, m);
    if (with_idx) {
      auto [v, i] = tl::sort(t, dim, desc, tl::return_indices);
      tl::store(y + offs, v, m);
      tl::store(idx + offs, i, m);
    } else {
      tl::store(y + offs, tl::sort(t, dim, desc), m);
    }
  });
  auto hx = random_keys<E>(size_t(R * C));
  auto X = upload<tl::elem_t<E>>(hx);
  auto Y = test_device().alloc<E>(size_t(R * C));
  auto I = test_device().alloc<tl::i32>(size_t(R * C));
  poison(Y), poison(I);
  k[tl::grid(1)](X, Y, I, rows, R, C, dim, desc, with_idx);
  if (gpus && R * C > 512) compiles_for_gpus({8}, k, X, Y, I, rows, R, C, dim, desc, with_idx);
  else if (gpus) compiles_for_gpus({1, 4, 8}, k, X, Y, I, rows, R, C, dim, desc, with_idx);
  auto y = Y.download();
  auto idx = I.download();
  const int lines = dim == 1 ? rows : C, n = dim == 1 ? C : R;
  for (int line = 0; line < lines; ++line) {
    size_t first = dim == 1 ? size_t(line) * C : size_t(line), stride = dim == 1 ? 1 : size_t(C);
    auto ord = stable_order<E>(hx, first, n, stride, desc);
    for (int p = 0; p < n; ++p) {
      size_t at = first + size_t(p) * stride;
      host_t<E> want = hx[first + size_t(ord[size_t(p)]) * stride];
      if (with_idx) {
        ASSERT_EQ(idx[at], ord[size_t(p)]) << "line " << line << " position " << p << " R=" << R << " C=" << C << " dim=" << dim << " desc=" << desc;
        ASSERT_EQ(bits_of<E>(y[at]), bits_of<E>(want)) << "line " << line << " position " << p;
      } else {
        ASSERT_TRUE(same_number<E>(y[at], want)) << "line " << line << " position " << p << ": " << key_of<E>(y[at])
                                                 << " != " << key_of<E>(want) << " R=" << R << " C=" << C << " dim=" << dim;
      }
    }
  }
}

}  // namespace

// Sorted lines equal std::stable_sort's (with indices: the same positions, bit for bit;
// without: the same numbers), both directions, both dims, 1 to 1024 along the dim, f32 /
// i32 / f16, ragged row counts (masked loads of a power-of-two tile).
TEST(Sort, MatchesStableSort) {
  for (bool desc : {false, true})
    for (bool with_idx : {false, true}) {
      check_sort<tl::f32>(1, 1024, 1, 1, desc, with_idx, !desc && with_idx);
      check_sort<tl::f32>(8, 64, 5, 1, desc, with_idx, false);
      check_sort<tl::f32>(64, 8, 64, 0, desc, with_idx, desc && !with_idx);
      check_sort<tl::i32>(4, 256, 3, 1, desc, with_idx, false);
      check_sort<tl::i32>(128, 2, 128, 0, desc, with_idx, false);
      check_sort<tl::f16>(16, 32, 16, 1, desc, with_idx, false);
      check_sort<tl::f16>(2, 2, 2, 0, desc, with_idx, false);
      check_sort<tl::bf16>(4, 64, 4, 1, desc, with_idx, false);
      check_sort<tl::u8>(32, 4, 32, 0, desc, with_idx, false);
      check_sort<tl::f64>(4, 32, 3, 1, desc, with_idx, false);
    }
  check_sort<tl::f32>(4, 1, 4, 1, false, true, false);  // a dim of 1: nothing moves
}

// A 1-D tile, sorted the default way (the last dim, ascending).
TEST(Sort, OneDimensionalDefaults) {
  auto k = tl::kernel("sort1d", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> y) {
    auto o = tl::arange(0, 512);
    tl::store(y + o, tl::sort(tl::load(x + o)));
  });
  auto hx = random_ints(512, -1000000, 1000000);
  auto X = upload<ty::i32>(hx);
  auto Y = test_device().alloc<tl::i32>(512);
  poison(Y);
  k[tl::grid(1)](X, Y);
  auto want = hx;
  std::stable_sort(want.begin(), want.end());
  EXPECT_EQ(Y.download(), want);
}

namespace {

// topk along the last dim of [R, n] rows (`rows` of them loaded, the rest masked off)
// for every power-of-two k: the first k of std::stable_sort descending.
template <class E> void check_topk(int R, int n, int rows, bool gpus = false) {
  auto k = tl::kernel("topk", [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<tl::i32> idx, tl::ptr<E> y2, tl::i32 rows, int R,
                                 int n, int K) {
    auto r = tl::expand_dims(tl::arange(0, R), 1);
    auto offs = r * n + tl::expand_dims(tl::arange(0, n), 0);
    auto t = tl::load(x + offs, offs < rows * n);
    auto out = r * K + tl::expand_dims(tl::arange(0, K), 0);
    auto [v, i] = tl::topk(t, K, tl::return_indices);
    tl::store(y + out, v, out < rows * K);
    tl::store(idx + out, i, out < rows * K);
    tl::store(y2 + out, tl::topk(t, K), out < rows * K);
  });
  auto hx = random_keys<E>(size_t(R * n));
  auto X = upload<tl::elem_t<E>>(hx);
  for (int K = 1; K <= n; K *= 2) {
    auto Y = test_device().alloc<E>(size_t(R * K)), Y2 = test_device().alloc<E>(size_t(R * K));
    auto I = test_device().alloc<tl::i32>(size_t(R * K));
    poison(Y), poison(Y2), poison(I);
    k[tl::grid(1)](X, Y, I, Y2, rows, R, n, K);
    if (gpus && K == std::min(n, 8)) compiles_for_gpus({4}, k, X, Y, I, Y2, rows, R, n, K);
    auto y = Y.download(), y2 = Y2.download();
    auto idx = I.download();
    for (int row = 0; row < rows; ++row) {
      auto ord = stable_order<E>(hx, size_t(row) * n, n, 1, true);
      for (int p = 0; p < K; ++p) {
        size_t at = size_t(row) * K + p;
        host_t<E> want = hx[size_t(row) * n + size_t(ord[size_t(p)])];
        ASSERT_EQ(idx[at], ord[size_t(p)]) << "row " << row << " k=" << K << " n=" << n << " position " << p;
        ASSERT_EQ(bits_of<E>(y[at]), bits_of<E>(want)) << "row " << row << " k=" << K;
        ASSERT_TRUE(same_number<E>(y2[at], want)) << "row " << row << " k=" << K;
      }
    }
  }
}

}  // namespace

// The k largest, largest first, equal values in index order (torch.topk's stable order),
// NaN above everything; k = 1, 2, 4, ..., n.
TEST(Topk, MatchesStableSortDescending) {
  check_topk<tl::f32>(8, 64, 5);
  check_topk<tl::i32>(4, 128, 4);
  check_topk<tl::f16>(16, 16, 13);
  check_topk<tl::f32>(1, 8, 1);
}

// Every key type of the GPUs' two paths: value and index packed in one 64-bit key (8- to
// 32-bit keys; f32 up to 256 along the dim) and as a pair (64-bit keys, f32 over 256), a
// row across warps (1024 at 4 warps: the halvings over warp bits go through shared memory).
TEST(Topk, EveryKeyTypePackedOrNot) {
  check_topk<tl::bf16>(8, 32, 8, true);
  check_topk<tl::i16>(4, 64, 3);
  check_topk<tl::u8>(4, 32, 4, true);
  check_topk<tl::i8>(2, 16, 2);
  check_topk<tl::u32>(2, 64, 2);
  check_topk<tl::f64>(4, 64, 4, true);
  check_topk<tl::i64>(2, 32, 2);
  check_topk<tl::f32>(2, 512, 2);
  check_topk<tl::f32>(1, 1024, 1, true);
}

// A topk along dim 0 of a [64, 4] tile.
TEST(Topk, AlongDimZero) {
  auto k = tl::kernel("topk_dim0", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::i32> idx) {
    auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 4 + tl::expand_dims(tl::arange(0, 4), 0);
    auto [v, i] = tl::topk(tl::load(x + offs), 8, 0, tl::return_indices);
    auto out = tl::expand_dims(tl::arange(0, 8), 1) * 4 + tl::expand_dims(tl::arange(0, 4), 0);
    tl::store(y + out, v);
    tl::store(idx + out, i);
  });
  auto hx = random_keys<tl::f32>(256);
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<tl::f32>(32);
  auto I = test_device().alloc<tl::i32>(32);
  poison(Y), poison(I);
  k[tl::grid(1)](X, Y, I);
  auto y = Y.download();
  auto idx = I.download();
  for (int c = 0; c < 4; ++c) {
    auto ord = stable_order<tl::f32>(hx, size_t(c), 64, 4, true);
    for (int p = 0; p < 8; ++p) {
      ASSERT_EQ(idx[size_t(p * 4 + c)], ord[size_t(p)]) << c << " " << p;
      ASSERT_EQ(std::bit_cast<uint32_t>(y[size_t(p * 4 + c)]), std::bit_cast<uint32_t>(hx[size_t(ord[size_t(p)] * 4 + c)]));
    }
  }
}

namespace {

// Histograms of `per` values a program over `programs` programs, added into one global
// histogram with relaxed atomics (Triton's histogram tutorial pattern); values from
// below 0 to past num_bins (those outside are not counted), a random mask.
template <class E> void check_histogram(int per, int bins, int programs, bool gpus) {
  auto k = tl::kernel("histogram", [](tl::ptr<E> x, tl::ptr<tl::i8> keep, tl::ptr<tl::i32> out, tl::ptr<tl::i32> first,
                                      tl::i32 n, int PER, int BINS) {
    auto offs = tl::program_id(0) * PER + tl::arange(0, PER);
    auto in = offs < n;
    auto h = tl::histogram(tl::load(x + offs, in), BINS, in & (tl::load(keep + offs, in, 0) != 0));
    auto b = tl::arange(0, BINS);
    tl::atomic_add(out + b, h, tl::sem::relaxed);
    // program 0's own histogram, unmasked (every value of its block)
    tl::store(first + b, tl::histogram(tl::load(x + tl::arange(0, PER)), BINS), tl::program_id(0) == 0);
  });
  const int n = per * programs - per / 3;  // the last program ragged
  auto raw = random_ints(size_t(per * programs), -3, bins + 3);
  std::vector<host_t<E>> hx(raw.begin(), raw.end());
  auto hk = random_ints(size_t(per * programs), 0, 3);
  std::vector<int8_t> hkeep(hk.begin(), hk.end());
  auto X = upload<tl::elem_t<E>>(hx);
  auto KEEP = upload<ty::i8>(hkeep);
  auto OUT = upload<ty::i32>(std::vector<int32_t>(size_t(bins), 0));
  auto FIRST = test_device().alloc<tl::i32>(size_t(bins));
  poison(FIRST);
  k[tl::grid(programs)](X, KEEP, OUT, FIRST, n, per, bins);
  if (gpus) compiles_for_gpus({1, 4, 8}, k, X, KEEP, OUT, FIRST, n, per, bins);
  std::vector<int32_t> want(size_t(bins), 0), want_first(size_t(bins), 0);
  for (int i = 0; i < n; ++i)
    if (hkeep[size_t(i)] != 0 && raw[size_t(i)] >= 0 && raw[size_t(i)] < bins) ++want[size_t(raw[size_t(i)])];
  for (int i = 0; i < per; ++i)
    if (raw[size_t(i)] >= 0 && raw[size_t(i)] < bins) ++want_first[size_t(raw[size_t(i)])];
  EXPECT_EQ(OUT.download(), want) << "per=" << per << " bins=" << bins;
  EXPECT_EQ(FIRST.download(), want_first) << "per=" << per << " bins=" << bins;
}

}  // namespace

TEST(Histogram, MaskedCountsAddedWithRelaxedAtomics) {
  check_histogram<tl::i32>(1024, 64, 5, true);
  check_histogram<tl::i32>(256, 1024, 3, false);  // more bins than elements, than threads
  check_histogram<tl::i64>(64, 8, 4, false);      // fewer elements than threads: copies count once
  check_histogram<tl::u8>(512, 16, 2, false);
}

// Any rank: the bins of a 2-D tile's values, a mask of another shape broadcast.
TEST(Histogram, TwoDimensionalWithBroadcastMask) {
  auto k = tl::kernel("histogram2d", [](tl::ptr<tl::i16> x, tl::ptr<tl::i32> out, tl::i32 cols) {
    auto offs = tl::expand_dims(tl::arange(0, 16), 1) * 32 + tl::expand_dims(tl::arange(0, 32), 0);
    auto m = tl::expand_dims(tl::arange(0, 32), 0) < cols;  // [1, 32]
    tl::store(out + tl::arange(0, 32), tl::histogram(tl::load(x + offs), 32, m));
  });
  auto raw = random_ints(512, -5, 40);
  std::vector<int16_t> hx(raw.begin(), raw.end());
  auto X = upload<ty::i16>(hx);
  auto OUT = test_device().alloc<tl::i32>(32);
  poison(OUT);
  k[tl::grid(1)](X, OUT, 20);
  std::vector<int32_t> want(32, 0);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 20; ++c)
      if (int v = raw[size_t(r * 32 + c)]; v >= 0 && v < 32) ++want[size_t(v)];
  EXPECT_EQ(OUT.download(), want);
}

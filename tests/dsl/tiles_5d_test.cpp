// Tiles of 4 and 5 dimensions (Triton's limit is 5; tutorial 10 reshapes its scales to 5-D)
// run on the test device (the CPU in CI; TL_DEVICE=cuda on a GPU) against plain C++
// references, outputs poisoned first: loads and stores through 5-D pointer tiles,
// broadcasting between 5-D shapes, reshape and trans with every kind of permutation,
// reductions and a scan along each axis, keep_dims, 4-D and 5-D tensor descriptors over a
// ragged tensor (Triton's test_tensor_descriptor_load_nd / store_nd). Each kernel is also
// compiled for gfx942, gfx950 and sm_90.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

template <class K, class... A> void compiles_for_gpus(K& k, const A&... args) {
  for (const char* arch : {"gfx942", "gfx950", "sm_90"}) EXPECT_NO_THROW((void)k.compile(arch, {.num_warps = 4}, args...)) << arch;
}

using Shape = std::vector<int>;

// A shape passed to a kernel as a trace-time constant (which must be a plain value).
struct Dims {
  int rank = 0;
  int v[5] = {};
  Dims() = default;
  Dims(const Shape& s) : rank(int(s.size())) { std::copy(s.begin(), s.end(), v); }
  operator Shape() const { return Shape(v, v + rank); }
};

// sum_d arange(shape[d]) (along dim d) * strides[d]: the offsets of a strided tile.
tl::i32 offsets_nd(const Shape& shape, const Shape& strides) {
  const size_t r = shape.size();
  tl::i32 sum;
  for (size_t d = 0; d < r; ++d) {
    Shape along(r, 1);
    along[d] = shape[d];
    tl::i32 t = tl::reshape(tl::arange(0, shape[d]), along) * strides[d];
    sum = d == 0 ? t : sum + t;
  }
  return sum;
}

Shape dense_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) s[size_t(d)] = s[size_t(d) + 1] * shape[size_t(d) + 1];
  return s;
}

int64_t numel(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }

// The multi-index of flat index i in `shape` (row-major).
std::vector<int> unflatten(int64_t i, const Shape& shape) {
  std::vector<int> idx(shape.size());
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = int(i % shape[size_t(d)]);
    i /= shape[size_t(d)];
  }
  return idx;
}

float poison_float() {
  float x;
  std::memset(&x, 0xAB, sizeof x);
  return x;
}

}  // namespace

// y = trans(x, perm) * 2 + b, x loaded through a 5-D pointer tile, b a broadcast of a
// [S0, 1, S2, 1, S4] and a [1, S1, 1, S3, 1] tile, the result stored densely in the
// permuted shape; for several permutations (identity, a reversal, a rotation, swaps of
// inner and outer dims) and a 4-D case.
TEST(Tiles5d, LoadStoreBroadcastAndTrans) {
  struct Case {
    Shape shape, perm;
  };
  for (const Case& c : std::vector<Case>{{{2, 2, 4, 8, 16}, {0, 1, 2, 3, 4}},
                                         {{2, 2, 4, 8, 16}, {4, 3, 2, 1, 0}},
                                         {{2, 4, 2, 8, 4}, {1, 2, 3, 4, 0}},
                                         {{4, 2, 2, 2, 8}, {0, 4, 2, 3, 1}},
                                         {{4, 8, 2, 16}, {2, 0, 3, 1}}}) {
    const size_t r = c.shape.size();
    SCOPED_TRACE(testing::Message() << "rank " << r << " perm " << ::testing::PrintToString(c.perm));
    Shape tshape(r);
    for (size_t d = 0; d < r; ++d) tshape[d] = c.shape[size_t(c.perm[d])];
    Shape rows(r, 1), cols(r, 1);  // the two broadcast operands' shapes
    for (size_t d = 0; d < r; ++d) (d % 2 == 0 ? rows : cols)[d] = c.shape[d];
    auto k = tl::kernel("tiles5d_trans", [](tl::ptr<ty::f32> x, tl::ptr<ty::f32> a, tl::ptr<ty::f32> b,
                                            tl::ptr<ty::f32> y, Dims shape_, Dims perm_, Dims rows_, Dims cols_,
                                            Dims tshape_) {
      const Shape shape = shape_, perm = perm_, rows = rows_, cols = cols_, tshape = tshape_;
      auto v = tl::load(x + offsets_nd(shape, dense_strides(shape)));
      auto bias = tl::load(a + offsets_nd(rows, dense_strides(rows))) + tl::load(b + offsets_nd(cols, dense_strides(cols)));
      tl::store(y + offsets_nd(tshape, dense_strides(tshape)), tl::trans(v * 2.0f + bias, perm));
    });
    const int64_t n = numel(c.shape);
    auto hx = random_floats(size_t(n), -4, 4), ha = random_floats(size_t(numel(rows)), -1, 1),
         hb = random_floats(size_t(numel(cols)), -1, 1);
    auto X = upload<ty::f32>(hx), A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
    auto Y = test_device().alloc<ty::f32>(size_t(n));
    poison(Y);
    k[tl::grid(1)](X, A, B, Y, Dims(c.shape), Dims(c.perm), Dims(rows), Dims(cols), Dims(tshape));
    std::vector<float> want(static_cast<size_t>(n));
    const Shape xs = dense_strides(c.shape), rs = dense_strides(rows), cs = dense_strides(cols), ts = dense_strides(tshape);
    for (int64_t i = 0; i < n; ++i) {
      auto idx = unflatten(i, c.shape);
      int64_t ri = 0, ci = 0, ti = 0;
      for (size_t d = 0; d < r; ++d) (d % 2 == 0 ? ri : ci) += int64_t(idx[d]) * (d % 2 == 0 ? rs : cs)[d];
      for (size_t d = 0; d < r; ++d) ti += int64_t(idx[size_t(c.perm[d])]) * ts[d];
      want[size_t(ti)] = float(double(hx[size_t(i)]) * 2.0 + double(float(double(ha[size_t(ri)]) + double(hb[size_t(ci)]))));
    }
    EXPECT_EQ(Y.download(), want);
    compiles_for_gpus(k, X, A, B, Y, Dims(c.shape), Dims(c.perm), Dims(rows), Dims(cols), Dims(tshape));
  }
}

// Reshape to 5-D and back (tutorial 10's scale layout: [rows, K / 32] as
// [rows / 128, 4, 32, K / 128, 4], permuted (0, 3, 2, 1, 4), flattened), then every axis's
// sum (keep_dims), max and cumsum of a 5-D tile, and the sum over every axis.
TEST(Tiles5d, ReshapeReductionsAndScansAlongEachAxis) {
  const Shape shape{2, 4, 2, 8, 4};
  const int64_t n = numel(shape);
  auto k = tl::kernel("tiles5d_reduce", [](tl::ptr<ty::f32> x, tl::ptr<ty::f32> sums, tl::ptr<ty::f32> maxes,
                                           tl::ptr<ty::f32> scans, tl::ptr<ty::f32> total, tl::ptr<ty::f32> perm_out,
                                           Dims shape_) {
    const Shape shape = shape_;
    const int64_t n = numel(shape);
    auto flat = tl::load(x + tl::arange(0, int(n)));
    auto v = tl::reshape(flat, shape);
    // tutorial 10's shuffle: reshape, permute, flatten
    tl::store(perm_out + tl::arange(0, int(n)), tl::reshape(tl::trans(v, {0, 3, 2, 1, 4}), {int(n)}));
    for (int d = 0; d < 5; ++d) {
      Shape kept = shape;
      kept[size_t(d)] = 1;
      const int64_t m = numel(kept);
      tl::store(sums + d * m + tl::arange(0, int(m)), tl::reshape(tl::sum(v, d, tl::keep_dims), {int(m)}));
      tl::store(maxes + d * m + tl::arange(0, int(m)), tl::reshape(tl::max(v, d, tl::keep_dims), {int(m)}));
      tl::store(scans + d * n + tl::arange(0, int(n)), tl::reshape(tl::cumsum(v, d), {int(n)}));
    }
    tl::store(total, tl::sum(v));
  });
  // Small integers: every sum exact, so the result is the reference whatever the order.
  auto ints = random_ints(size_t(n), -8, 8);
  std::vector<float> hx(ints.begin(), ints.end());
  auto X = upload<ty::f32>(hx);
  const int64_t m_max = n / 2;  // the largest reduced count (a dim of 2)
  auto S = test_device().alloc<ty::f32>(size_t(5 * m_max)), M = test_device().alloc<ty::f32>(size_t(5 * m_max));
  auto C = test_device().alloc<ty::f32>(size_t(5 * n)), T = test_device().alloc<ty::f32>(1), P = test_device().alloc<ty::f32>(size_t(n));
  for (auto* b : {&S, &M, &C, &T, &P}) poison(*b);
  k[tl::grid(1)](X, S, M, C, T, P, Dims(shape));
  const float p = poison_float();
  std::vector<float> ws(static_cast<size_t>(5 * m_max), p), wm(static_cast<size_t>(5 * m_max), p),
      wc(static_cast<size_t>(5 * n)), wp(static_cast<size_t>(n));
  double total = 0;
  const Shape xs = dense_strides(shape);
  for (int d = 0; d < 5; ++d) {
    Shape kept = shape;
    kept[size_t(d)] = 1;
    const int64_t m = numel(kept);
    const Shape ks = dense_strides(kept);
    for (int64_t o = 0; o < m; ++o) {
      auto idx = unflatten(o, kept);
      double s = 0, mx = -1e30, run = 0;
      for (int j = 0; j < shape[size_t(d)]; ++j) {
        idx[size_t(d)] = j;
        int64_t at = 0;
        for (size_t e = 0; e < 5; ++e) at += int64_t(idx[e]) * xs[e];
        s += hx[size_t(at)], mx = std::max(mx, double(hx[size_t(at)]));
        run += hx[size_t(at)];
        wc[size_t(d * n + at)] = float(run);
      }
      ws[size_t(d * m + o)] = float(s);
      wm[size_t(d * m + o)] = float(mx);
    }
    (void)ks;
  }
  for (float v : hx) total += v;
  // perm (0, 3, 2, 1, 4) of shape: element idx goes to [i0, i3, i2, i1, i4] of the permuted shape
  const Shape pshape{shape[0], shape[3], shape[2], shape[1], shape[4]}, ps = dense_strides(pshape);
  for (int64_t i = 0; i < n; ++i) {
    auto idx = unflatten(i, shape);
    const int pi[5] = {idx[0], idx[3], idx[2], idx[1], idx[4]};
    int64_t at = 0;
    for (size_t e = 0; e < 5; ++e) at += int64_t(pi[e]) * ps[e];
    wp[size_t(at)] = hx[size_t(i)];
  }
  // (the sums of each axis fill d * m .. d * m + m; the rest of the m_max slots keep poison)
  EXPECT_EQ(std::memcmp(S.download().data(), ws.data(), ws.size() * 4), 0);
  EXPECT_EQ(std::memcmp(M.download().data(), wm.data(), wm.size() * 4), 0);
  EXPECT_EQ(C.download(), wc);
  EXPECT_EQ(T.download(), std::vector<float>{float(total)});
  EXPECT_EQ(P.download(), wp);
  compiles_for_gpus(k, X, S, M, C, T, P, Dims(shape));
}

// Triton's test_tensor_descriptor_load_nd / store_nd: a (1, 1, 3, 7, 32) tensor whose last
// dim is cut to 29 (stride 32 kept), read through an ndim-D descriptor with block
// (2, 2, 4, 8, 32)[-ndim:] at offset 0 (elements outside read 0) and written back through
// one of the block's own shape over a poisoned output (elements outside stay poison).
TEST(Tiles5d, DescriptorsOfFourAndFiveDims) {
  for (int ndim : {4, 5}) {
    SCOPED_TRACE(testing::Message() << ndim << "-D");
    const Shape full_alloc{1, 1, 3, 7, 32}, full_block{2, 2, 4, 8, 32};
    Shape alloc(full_alloc.end() - ndim, full_alloc.end()), block(full_block.end() - ndim, full_block.end());
    Shape shape = alloc;
    shape.back() = 29;
    const Shape as = dense_strides(alloc), bs = dense_strides(block);
    auto k = tl::kernel("tiles5d_desc", [](tl::ptr<ty::f32> in, tl::ptr<ty::f32> out, tl::ptr<ty::f32> back,
                                           Dims shape_, Dims strides_, Dims block_) {
      const Shape shape = shape_, strides = strides_, block = block_;
      std::vector<tl::detail::index_arg> sh(shape.begin(), shape.end()), st(strides.begin(), strides.end()),
          zero(shape.size(), 0);
      auto d = tl::make_tensor_descriptor(in, sh, st, block);
      auto t = d.load(zero);
      tl::store(out + offsets_nd(block, dense_strides(block)), t);
      // the block written back through a descriptor over `back` of the input's shape
      auto w = tl::make_tensor_descriptor(back, sh, st, block);
      w.store(zero, t + 1.0f);
    });
    auto hin = random_floats(size_t(numel(alloc)), -2, 2);
    auto In = upload<ty::f32>(hin);
    auto Out = test_device().alloc<ty::f32>(size_t(numel(block)));
    auto Back = test_device().alloc<ty::f32>(size_t(numel(alloc)));
    poison(Out);
    poison(Back);
    k[tl::grid(1)](In, Out, Back, Dims(shape), Dims(as), Dims(block));
    std::vector<float> want(static_cast<size_t>(numel(block))), wback(static_cast<size_t>(numel(alloc)), poison_float());
    for (int64_t i = 0; i < numel(block); ++i) {
      auto idx = unflatten(i, block);
      bool inside = true;
      int64_t at = 0;
      for (size_t e = 0; e < idx.size(); ++e) inside = inside && idx[e] < shape[e], at += int64_t(idx[e]) * as[e];
      want[size_t(i)] = inside ? hin[size_t(at)] : 0.0f;
      if (inside) wback[size_t(at)] = float(double(hin[size_t(at)]) + 1.0);
    }
    EXPECT_EQ(Out.download(), want);
    auto got_back = Back.download();
    EXPECT_EQ(std::memcmp(got_back.data(), wback.data(), wback.size() * 4), 0);
    compiles_for_gpus(k, In, Out, Back, Dims(shape), Dims(as), Dims(block));
  }
}

// The shape operations of issue 41 at 4 and 5 dims: join of two 4-D tiles into a 5-D one
// and tl::split back (a round trip), flip along an inner dim, tl::sort along dim 2 and
// argmax along dim 3 of a 4-D tile.
TEST(Tiles5d, JoinSplitFlipSortArgmax) {
  const Shape shape{2, 2, 8, 16};
  const int64_t n = numel(shape);
  auto k = tl::kernel("tiles5d_shape_ops", [](tl::ptr<ty::f32> x, tl::ptr<ty::f32> y, tl::ptr<ty::f32> rt,
                                              tl::ptr<ty::f32> flipped, tl::ptr<ty::f32> sorted, tl::ptr<ty::i32> am,
                                              Dims shape_) {
    const Shape shape = shape_;
    const Shape st = dense_strides(shape);
    auto a = tl::load(x + offsets_nd(shape, st));
    auto b = tl::load(y + offsets_nd(shape, st));
    auto [a2, b2] = tl::split(tl::join(a, b));  // [2, 2, 8, 16, 2] and back
    tl::store(rt + offsets_nd(shape, st), a2 * 2.0f + b2);
    tl::store(flipped + offsets_nd(shape, st), tl::flip(a, 2));
    tl::store(sorted + offsets_nd(shape, st), tl::sort(a, 2));
    Shape kept = shape;
    kept[3] = 1;
    tl::store(am + offsets_nd(kept, dense_strides(kept)), tl::argmax(a, 3, tl::keep_dims));
  });
  auto hx = random_floats(size_t(n), -4, 4), hy = random_floats(size_t(n), -4, 4);
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy);
  auto RT = test_device().alloc<ty::f32>(size_t(n)), F = test_device().alloc<ty::f32>(size_t(n)),
       S = test_device().alloc<ty::f32>(size_t(n));
  auto AM = test_device().alloc<ty::i32>(size_t(n / shape[3]));
  poison(RT), poison(F), poison(S), poison(AM);
  k[tl::grid(1)](X, Y, RT, F, S, AM, Dims(shape));
  std::vector<float> wrt(static_cast<size_t>(n)), wf(static_cast<size_t>(n)), ws = hx;
  std::vector<int32_t> wam(static_cast<size_t>(n / shape[3]));
  const Shape st = dense_strides(shape);
  for (int64_t i = 0; i < n; ++i) {
    wrt[size_t(i)] = float(double(hx[size_t(i)]) * 2.0 + double(hy[size_t(i)]));
    auto idx = unflatten(i, shape);
    idx[2] = shape[2] - 1 - idx[2];
    int64_t at = 0;
    for (size_t e = 0; e < 4; ++e) at += int64_t(idx[e]) * st[e];
    wf[size_t(i)] = hx[size_t(at)];
  }
  for (int a = 0; a < shape[0]; ++a)
    for (int b = 0; b < shape[1]; ++b)
      for (int d = 0; d < shape[3]; ++d) {  // sort along dim 2: stride st[2]
        std::vector<float> line;
        for (int c = 0; c < shape[2]; ++c) line.push_back(hx[size_t(a * st[0] + b * st[1] + c * st[2] + d)]);
        std::sort(line.begin(), line.end());
        for (int c = 0; c < shape[2]; ++c) ws[size_t(a * st[0] + b * st[1] + c * st[2] + d)] = line[size_t(c)];
      }
  for (int64_t r = 0; r < n / shape[3]; ++r) {  // argmax along the last dim (first of equals)
    int best = 0;
    for (int d = 1; d < shape[3]; ++d)
      if (hx[size_t(r * shape[3] + d)] > hx[size_t(r * shape[3] + best)]) best = d;
    wam[size_t(r)] = best;
  }
  EXPECT_EQ(RT.download(), wrt);
  EXPECT_EQ(F.download(), wf);
  EXPECT_EQ(S.download(), ws);
  EXPECT_EQ(AM.download(), wam);
  compiles_for_gpus(k, X, Y, RT, F, S, AM, Dims(shape));
}

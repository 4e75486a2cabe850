// Shared-memory tiles (tl::shared), run on the test device (the CPU in CI; TL_DEVICE=cuda
// runs the same tests on an NVIDIA GPU): what goes into a stage comes back bit for bit
// in any layout its reader wants, and stages indexed at run time inside loops hold what
// each iteration put there. No test writes a tl::barrier(): the compiler places them.
#include <cstring>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

// A [64, 64] tile goes through stage 1 of a 2-stage buffer and comes back out twice: as
// it was (y) and transposed (yt, a reader in another layout). Random bit patterns, so
// every bit of every element must survive (NaN payloads included).
template <class E> void round_trip(const char* name) {
  using H = typename E::host;
  auto k = tl::kernel(name, [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<E> yt) {
    auto r = tl::arange(0, 64), c = tl::arange(0, 64);
    auto offs = tl::expand_dims(r, 1) * 64 + tl::expand_dims(c, 0);
    auto buf = tl::shared<E>({2, 64, 64});
    buf[1].store(tl::load(x + offs));
    auto u = buf[1].load();
    tl::store(y + offs, u);
    tl::store(yt + offs, tl::trans(u));
  });
  const int n = 64 * 64;
  std::vector<H> h(n);
  for (auto& v : h) {
    uint64_t bits = rng()();
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(H));
  }
  auto X = upload<E>(h);
  auto Y = test_device().alloc<E>(n), YT = test_device().alloc<E>(n);
  poison(Y);
  poison(YT);
  k[tl::grid(1)](X, Y, YT);
  auto y = Y.download(), yt = YT.download();
  int bad = 0, bad_t = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      bad += std::memcmp(&y[i * 64 + j], &h[i * 64 + j], sizeof(H)) != 0;
      bad_t += std::memcmp(&yt[i * 64 + j], &h[j * 64 + i], sizeof(H)) != 0;
    }
  EXPECT_EQ(bad, 0) << name << ": elements that did not come back";
  EXPECT_EQ(bad_t, 0) << name << ": transposed elements that did not come back";
}

}  // namespace

TEST(SharedTiles, EveryDtypeRoundTripsBitExactInAnyLayout) {
  round_trip<ty::i8>("smem_i8");
  round_trip<ty::i16>("smem_i16");
  round_trip<ty::i32>("smem_i32");
  round_trip<ty::i64>("smem_i64");
  round_trip<ty::u8>("smem_u8");
  round_trip<ty::u16>("smem_u16");
  round_trip<ty::u32>("smem_u32");
  round_trip<ty::u64>("smem_u64");
  round_trip<ty::f16>("smem_f16");
  round_trip<ty::bf16>("smem_bf16");
  round_trip<ty::f32>("smem_f32");
  round_trip<ty::f64>("smem_f64");
  round_trip<ty::f8e4m3fn>("smem_f8e4m3fn");
  round_trip<ty::f8e5m2>("smem_f8e5m2");
  round_trip<ty::f8e4m3fnuz>("smem_f8e4m3fnuz");
  round_trip<ty::f8e5m2fnuz>("smem_f8e5m2fnuz");
}

// i1 tiles (a byte each in memory): a mask made from data, kept in shared memory and
// read back by a reduction-shaped use (a count per column).
TEST(SharedTiles, MasksRoundTripAndFeedAReduction) {
  auto k = tl::kernel("smem_i1", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> y, tl::ptr<tl::i32> cnt) {
    auto r = tl::arange(0, 32), c = tl::arange(0, 16);
    auto offs = tl::expand_dims(r, 1) * 16 + tl::expand_dims(c, 0);
    auto buf = tl::shared<tl::i1>({1, 32, 16});
    buf[0].store(tl::load(x + offs) > 0);
    auto m = buf[0].load();
    tl::store(y + offs, tl::where(m, 1, 0));
    tl::store(cnt + c, tl::sum(m.to<tl::i32>(), 0));
  });
  auto h = random_ints(32 * 16, -5, 5);
  auto X = upload<ty::i32>(h);
  auto Y = test_device().alloc<tl::i32>(32 * 16), C = test_device().alloc<tl::i32>(16);
  poison(Y);
  poison(C);
  k[tl::grid(1)](X, Y, C);
  std::vector<double> want(32 * 16), want_c(16, 0.0);
  for (int i = 0; i < 32 * 16; ++i) {
    want[i] = h[i] > 0;
    want_c[i % 16] += h[i] > 0;
  }
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(near(C.download(), want_c, 0, 0));
}

// 1-D and 3-D tiles, a constant stage other than 0, a reduction of what was stored.
TEST(SharedTiles, OneAndThreeDimensionalTilesAndReductions) {
  auto k = tl::kernel("smem_ranks", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y1, tl::ptr<tl::f32> s3) {
    auto i = tl::arange(0, 128);
    auto a = tl::shared<tl::f32>({3, 128});
    a[2].store(tl::load(x + i) * 2.0f);
    tl::store(y1 + i, a[2].load());
    auto d0 = tl::arange(0, 2), d1 = tl::arange(0, 8), d2 = tl::arange(0, 8);
    auto offs = tl::expand_dims(tl::expand_dims(d0, 1), 2) * 64 + tl::expand_dims(tl::expand_dims(d1, 0), 2) * 8 +
                tl::expand_dims(tl::expand_dims(d2, 0), 0);
    auto b = tl::shared<tl::f32>({1, 2, 8, 8});
    b[0].store(tl::load(x + offs));
    auto t = b[0].load();
    tl::store(s3 + tl::expand_dims(d0, 1) * 8 + tl::expand_dims(d2, 0), tl::sum(t, 1));
  });
  auto h = random_floats(128);
  auto X = upload<ty::f32>(h);
  auto Y = test_device().alloc<tl::f32>(128), S = test_device().alloc<tl::f32>(16);
  poison(Y);
  poison(S);
  k[tl::grid(1)](X, Y, S);
  std::vector<double> want(128), want_s(16, 0.0);
  for (int i = 0; i < 128; ++i) want[i] = 2.0 * h[i];
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 8; ++b)
      for (int c = 0; c < 8; ++c) want_s[a * 8 + c] += h[a * 64 + b * 8 + c];
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(near(S.download(), want_s, 1e-5, 1e-5));
}

// A double-buffered loop: the buffer is made before the loop, stage 0 is filled before
// it, and each iteration k fills stage (k+1)%2 with the next block while it reads stage
// k%2 (a run-time index), writes that block transposed and sums its columns.
TEST(SharedTiles, DoubleBufferedLoopWithRuntimeStage) {
  auto k = tl::kernel("smem_pipe", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> yt, tl::ptr<tl::f32> colsum, tl::i32 nblocks) {
    auto r = tl::arange(0, 32), c = tl::arange(0, 32);
    auto offs = tl::expand_dims(r, 1) * 32 + tl::expand_dims(c, 0);
    auto buf = tl::shared<tl::f32>({2, 32, 32});
    buf[0].store(tl::load(x + offs));
    auto acc = tl::zeros<tl::f32>({32});
    for (auto kk : tl::range(0, nblocks)) {
      tl::i32 next = kk + 1;
      tl::if_(next < nblocks, [&] { buf[next % 2].store(tl::load(x + next * 1024 + offs)); });
      auto cur = buf[kk % 2].load();
      tl::store(yt + kk * 1024 + offs, tl::trans(cur));
      acc = acc + tl::sum(cur, 0);
    }
    tl::store(colsum + c, acc);
  });
  const int nb = 5;
  auto h = random_floats(nb * 1024);
  auto X = upload<ty::f32>(h);
  auto YT = test_device().alloc<tl::f32>(nb * 1024), CS = test_device().alloc<tl::f32>(32);
  poison(YT);
  poison(CS);
  k[tl::grid(1)](X, YT, CS, nb);
  std::vector<double> want(nb * 1024), want_c(32, 0.0);
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) {
        want[b * 1024 + i * 32 + j] = h[b * 1024 + j * 32 + i];
        want_c[j] += h[b * 1024 + i * 32 + j];
      }
  EXPECT_TRUE(near(YT.download(), want, 0, 0));
  EXPECT_TRUE(near(CS.download(), want_c, 1e-5, 1e-4));
}

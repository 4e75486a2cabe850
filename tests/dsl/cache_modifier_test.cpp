// tl::load / tl::store with a cache modifier, an eviction policy or volatile, run on the
// test device (the CPU in CI, where they are hints with nothing to do; TL_DEVICE=cuda on
// an NVIDIA GPU, where they become ld.global.cg and friends) against plain C++: the
// results are those of the plain accesses, masked and unmasked, for every modifier and
// element width. And a flag handed from program to program through volatile loads and
// stores (GPUs only: CPU programs are not all running at once), its spin bounded so that
// a wrong lowering fails instead of hanging.
#include <cstdint>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr int BLOCK = 128;

// y = 3 x + 1 over n elements (masked), x read with the load options and y written with
// the store options, in E.
template <class E, tl::cache_modifier LM, tl::evict LE, bool LV, tl::cache_modifier SM, tl::evict SE, bool SV>
void check_affine(int n) {
  auto k = tl::kernel("cache_affine", [](tl::ptr<E> x, tl::ptr<E> y, tl::i32 n) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = offs < n;
    tl::access_options lo = tl::access_options(LM) | LE, so = tl::access_options(SM) | SE;
    if constexpr (LV) lo = lo | tl::volatile_;
    if constexpr (SV) so = so | tl::volatile_;
    auto v = tl::load(x + offs, m, 0, lo);
    tl::store(y + offs, (v * 3 + 1).template to<E>(), m, so);
  });
  std::vector<typename tl::buffer<E>::host_t> hx(static_cast<size_t>(n));
  auto r = random_ints(size_t(n), -20, 20);
  using H = typename tl::buffer<E>::host_t;
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<H, tl::half>) hx[size_t(i)] = tl::to_f16(r[size_t(i)]);
    else hx[size_t(i)] = H(r[size_t(i)]);
  }
  auto X = upload<E>(hx);
  auto Y = test_device().alloc<E>(size_t(n));
  poison(Y);
  k[tl::grid((n + BLOCK - 1) / BLOCK)](X, Y, n);
  auto got = Y.download();
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(to_double(got[size_t(i)]), 3.0 * r[size_t(i)] + 1.0) << "element " << i << " of " << n;
}

}  // namespace

TEST(CacheModifiers, LoadsGiveWhatPlainLoadsGive) {
  using C = tl::cache_modifier;
  using V = tl::evict;
  for (int n : {BLOCK * 3, 1000}) {  // whole blocks, and a ragged edge
    check_affine<ty::f32, C::ca, V::normal, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::cg, V::normal, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::cs, V::last, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::lu, V::first, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::cv, V::normal, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::none, V::last, false, C::none, V::normal, false>(n);
    check_affine<ty::f32, C::none, V::normal, true, C::none, V::normal, false>(n);
  }
}

TEST(CacheModifiers, StoresWriteWhatPlainStoresWrite) {
  using C = tl::cache_modifier;
  using V = tl::evict;
  for (int n : {BLOCK * 3, 1000}) {
    check_affine<ty::f32, C::none, V::normal, false, C::wb, V::normal, false>(n);
    check_affine<ty::f32, C::none, V::normal, false, C::cg, V::first, false>(n);
    check_affine<ty::f32, C::none, V::normal, false, C::cs, V::normal, false>(n);
    check_affine<ty::f32, C::none, V::normal, false, C::wt, V::last, false>(n);
    check_affine<ty::f32, C::none, V::normal, false, C::none, V::normal, true>(n);
  }
}

// The widths the GPU lowerings split differently: bytes, halves, 64-bit words.
TEST(CacheModifiers, EveryElementWidth) {
  using C = tl::cache_modifier;
  using V = tl::evict;
  check_affine<ty::i8, C::cs, V::normal, false, C::cs, V::normal, false>(1000);
  check_affine<ty::i16, C::cg, V::last, false, C::wt, V::normal, false>(1000);
  check_affine<ty::f16, C::lu, V::normal, false, C::cg, V::first, false>(1000);
  check_affine<ty::i64, C::cv, V::normal, false, C::cs, V::last, false>(1000);
  check_affine<ty::f64, C::none, V::normal, true, C::none, V::normal, true>(1000);
}

// tl::amd's buffer accesses take the same options (the bits go into the buffer
// instruction on AMD; elsewhere they are masked loads and stores).
TEST(CacheModifiers, BufferAccesses) {
  auto k = tl::kernel("cache_buffer", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = offs < n;
    auto v = tl::amd::buffer_load(x, offs, m, 0.0f, tl::cache_modifier::cg);
    tl::amd::buffer_store(y, offs, v * 2.0f, m, tl::cache_modifier::cs | tl::evict::first);
  });
  const int n = 1000;
  auto hx = random_floats(n);
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<ty::f32>(n);
  poison(Y);
  k[tl::grid((n + BLOCK - 1) / BLOCK)](X, Y, n);
  std::vector<double> want(hx.begin(), hx.end());
  for (double& w : want) w *= 2.0;
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
}

// Program p waits until the flag says p (volatile loads, read anew each spin), then
// hands it to p + 1 (a volatile store). Each program records whether it saw its turn
// before its spin ran out: every one must have, and the flag ends at P. A load hoisted out
// of the spin (what a plain load may become) sees its turn never and fails; the bound
// keeps that from hanging. Programs are dispatched in order and all fit on the GPU at
// once, so each one's predecessor is running.
TEST(CacheModifiers, FlagHandedFromProgramToProgramThroughVolatileAccesses) {
  if (!on_gpu()) GTEST_SKIP() << "the CPU runs a grid's programs a few at a time: a program may wait for one not started";
  constexpr int kBound = 1 << 20;  // a broken hand-off fails within about a second
  auto k = tl::kernel("volatile_baton", [](tl::ptr<tl::i32> flag, tl::ptr<tl::i32> saw) {
    auto pid = tl::program_id(0);
    tl::i32 spins = 0;
    tl::while_([&] { return (tl::load(flag, tl::volatile_) != pid) & (spins < kBound); }, [&] { spins += 1; });
    tl::store(saw + pid, (spins < kBound).to<tl::i32>());
    tl::store(flag, pid + 1, tl::volatile_);
  });
  const int P = 16;
  auto Flag = upload<ty::i32>({0});
  auto Saw = test_device().alloc<ty::i32>(P);
  poison(Saw);
  k[tl::grid(P)](Flag, Saw);
  EXPECT_EQ(Saw.download(), std::vector<int32_t>(P, 1));
  EXPECT_EQ(Flag.download()[0], P);
}

// tl::inline_asm_elementwise run on the test device against plain C++: on the CPU the
// fallback lambda is what runs (traced instead of the asm), on an NVIDIA GPU
// (TL_DEVICE=cuda) the PTX does, so the same test checks the fallback here and the
// assembly's values, its packing and its operand order on the H100. AMD has no device
// here: its assembly is checked by compiling (tests/codegen/inline_asm_codegen_test.cpp).
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr int BLOCK = 256;

// The asm's own target: PTX runs on NVIDIA GPUs and nowhere else.
bool runs_ptx_or_fallback() { return test_device().kind() != tl::device_kind::hip; }

}  // namespace

// prmt reverses each i32's bytes (pack 1); the fallback does it with shifts and masks.
TEST(InlineAsm, ByteReverseMatchesCpp) {
  if (!runs_ptx_or_fallback()) GTEST_SKIP() << "PTX assembly: NVIDIA GPUs and the CPU's fallback only";
  auto k = tl::kernel("asm_bswap", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> y) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs);
    auto r = tl::inline_asm_elementwise<tl::i32>("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", {v}, true, 1, [&] {
      auto u = v.bitcast<tl::u32>();
      auto s = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
      return s.bitcast<tl::i32>();
    });
    tl::store(y + offs, r);
  });
  const int n = 4 * BLOCK;
  auto hx = random_ints(n, INT32_MIN, INT32_MAX);
  auto X = upload<ty::i32>(hx);
  auto Y = test_device().alloc<ty::i32>(n);
  poison(Y);
  k[tl::grid(n / BLOCK)](X, Y);
  std::vector<int32_t> want(n);
  for (int i = 0; i < n; ++i) {
    uint32_t u = uint32_t(hx[size_t(i)]);
    want[size_t(i)] = int32_t((u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24));
  }
  EXPECT_EQ(Y.download(), want);
}

// Two f32 to a packed pair of f16 in one cvt (pack 2: element 0 in the low half), and two
// results from one asm (an i32 split into its halves, as a tuple).
TEST(InlineAsm, PackedConversionAndTwoResults) {
  if (!runs_ptx_or_fallback()) GTEST_SKIP() << "PTX assembly: NVIDIA GPUs and the CPU's fallback only";
  auto k = tl::kernel("asm_pack", [](tl::ptr<tl::f32> x, tl::ptr<tl::f16> h, tl::ptr<tl::i32> w, tl::ptr<tl::i32> lo,
                                      tl::ptr<tl::i32> hi) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs);
    tl::store(h + offs, tl::inline_asm_elementwise<tl::f16>("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,r,r", {v}, true, 2,
                                                            [&] { return v.to<tl::f16>(); }));
    auto word = tl::load(w + offs);
    auto [l, u] = tl::inline_asm_elementwise<tl::i16, tl::i16>(
        "mov.b32 {$0, $1}, $2;", "=h,=h,r", {word}, true, 1,
        [&] { return std::tuple{word.to<tl::i16>(), (word >> 16).to<tl::i16>()}; });
    tl::store(lo + offs, l.to<tl::i32>());
    tl::store(hi + offs, u.to<tl::i32>());
  });
  const int n = 2 * BLOCK;
  auto hx = random_floats(n, -100.0f, 100.0f);
  auto hw = random_ints(n, INT32_MIN, INT32_MAX);
  auto X = upload<ty::f32>(hx);
  auto W = upload<ty::i32>(hw);
  auto H = test_device().alloc<ty::f16>(n);
  auto L = test_device().alloc<ty::i32>(n), U = test_device().alloc<ty::i32>(n);
  poison(H), poison(L), poison(U);
  k[tl::grid(n / BLOCK)](X, H, W, L, U);
  auto h = H.download();
  auto l = L.download(), u = U.download();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(tl::to_float(h[size_t(i)]), tl::to_float(tl::to_f16(hx[size_t(i)]))) << i;
    ASSERT_EQ(l[size_t(i)], int32_t(int16_t(uint16_t(uint32_t(hw[size_t(i)]) & 0xffffu)))) << i;
    ASSERT_EQ(u[size_t(i)], int32_t(int16_t(uint16_t(uint32_t(hw[size_t(i)]) >> 16)))) << i;
  }
}

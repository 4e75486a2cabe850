// tl::amd::buffer_load / buffer_store run on the test device (the CPU in CI;
// TL_DEVICE=cuda on an NVIDIA GPU), where they are the masked load/store through
// `base + offsets`: the same results as the AMD buffer instructions give. Every element
// type a load supports, bit-exact against the input, with masked tails (whose offsets
// are negative: never accessed), `other` in the masked-off lanes, and poisoned outputs
// that masked-off stores must leave alone.
#include <cstring>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

template <class E> using host_t = typename tl::buffer<E>::host_t;

template <class E> host_t<E> host_value(double x) {
  if constexpr (std::is_same_v<E, ty::bf16>) return tl::to_bf16(x);
  else if constexpr (std::is_same_v<E, ty::f16>) return tl::to_f16(x);
  else if constexpr (tl::is_fp8(E::dtype)) return tl::fp8<E::dtype>(x);
  else return host_t<E>(x);
}

template <class T> std::vector<uint8_t> bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// y[i] = x[n-1-i] (a reversed gather) and z[i] = x[i] or 3 past n, through tl::amd, for a
// ragged n over BLOCK-wide programs.
template <class E> void reversed_copy(const char* name) {
  SCOPED_TRACE(name);
  auto k = tl::kernel(std::string("bufcopy_") + name, [](tl::ptr<E> x, tl::ptr<E> y, tl::ptr<E> z, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    auto v = tl::amd::buffer_load(x, (n - 1) - i, m);  // negative offsets only where masked off
    tl::amd::buffer_store(y, i, v, m);
    tl::amd::buffer_store(z, i, tl::amd::buffer_load(x, i, m, 3));
  });
  const int n = 1000, block = 256, padded = 1024;
  std::vector<host_t<E>> hx(padded);
  auto& g = rng();
  for (auto& e : hx) {
    uint64_t r = g();
    std::memcpy(static_cast<void*>(&e), &r, sizeof(e));
  }
  // Floats: finite random values (NaN payloads need not survive a round trip through
  // registers on every target); integers and FP8: any bits.
  if constexpr (tl::is_float(E::dtype) && !tl::is_fp8(E::dtype)) {
    auto f = random_floats(padded, -100.0f, 100.0f);
    for (int i = 0; i < padded; ++i) hx[i] = host_value<E>(f[i]);
  }
  auto X = upload<E>(hx);
  auto Y = test_device().alloc<E>(padded);
  auto Z = test_device().alloc<E>(padded);
  poison(Y);
  poison(Z);
  k[tl::grid(tl::cdiv(n, block))](X, Y, Z, n, block);
  std::vector<host_t<E>> want_y(padded), want_z(padded);
  std::memset(static_cast<void*>(want_y.data()), 0xAB, padded * sizeof(host_t<E>));
  for (int i = 0; i < n; ++i) want_y[i] = hx[n - 1 - i];
  for (int i = 0; i < padded; ++i) want_z[i] = i < n ? hx[i] : host_value<E>(3.0);
  EXPECT_EQ(bytes(Y.download()), bytes(want_y));
  EXPECT_EQ(bytes(Z.download()), bytes(want_z));
}

}  // namespace

TEST(BufferOps, EveryElementTypeRoundTripsWithMaskedTails) {
  reversed_copy<ty::f32>("f32");
  reversed_copy<ty::f64>("f64");
  reversed_copy<ty::f16>("f16");
  reversed_copy<ty::bf16>("bf16");
  reversed_copy<ty::i8>("i8");
  reversed_copy<ty::i16>("i16");
  reversed_copy<ty::i32>("i32");
  reversed_copy<ty::i64>("i64");
  reversed_copy<ty::u8>("u8");
  reversed_copy<ty::u16>("u16");
  reversed_copy<ty::u32>("u32");
  reversed_copy<ty::f8e4m3fn>("f8e4m3fn");
  reversed_copy<ty::f8e5m2fnuz>("f8e5m2fnuz");
}

// Arithmetic on buffer-loaded rows against a double reference: a 2-D tile with a
// per-row base (the uniform part) and an `other` tile.
TEST(BufferOps, TwoDimensionalTileAgainstDoubleReference) {
  auto k = tl::kernel("bufrows", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> w, tl::ptr<tl::f32> y, tl::i32 rows,
                                     tl::i32 cols) {
    auto r = tl::program_id(0) * 4 + tl::arange(0, 4);
    auto c = tl::arange(0, 64);
    auto offs = tl::expand_dims(r * cols, 1) + tl::expand_dims(c, 0);
    auto m = tl::expand_dims(r < rows, 1) & tl::expand_dims(c < cols, 0);
    auto other = tl::zeros<tl::f32>({4, 64}) - 1.0f;
    auto v = tl::amd::buffer_load(x, offs, m, other);
    auto g = tl::amd::buffer_load(w, c, c < cols, 0.0f);
    tl::amd::buffer_store(y, offs, v * tl::expand_dims(g, 0) + 0.5f, m);
  });
  const int rows = 10, cols = 50;
  auto hx = random_floats(rows * cols), hw = random_floats(cols);
  auto X = upload<ty::f32>(hx), W = upload<ty::f32>(hw);
  auto Y = test_device().alloc<tl::f32>(rows * cols);
  poison(Y);
  k[tl::grid(tl::cdiv(rows, 4))](X, W, Y, rows, cols);
  std::vector<double> want(rows * cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) want[i * cols + j] = double(hx[i * cols + j]) * hw[j] + 0.5;
  EXPECT_TRUE(near(Y.download(), want, 1e-6, 1e-6));
}

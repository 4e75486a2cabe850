// Triton tutorial 07 (python/tutorials/07-extern-functions.py): `asin_kernel`, 01's vector
// kernel applying `libdevice.asin` (from `triton.language.extra.libdevice`). tl's asin is
// its own (tl/math.hpp: one implementation in tile operations for every target), called
// as the tutorial calls libdevice's; the tutorial's second run, `extern_libs` naming a
// libdevice file by path, has no counterpart (gap "extern_libs").
#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto asin_kernel = tl::kernel("asin_kernel", [](tl::ptr<tl::f32> x_ptr, tl::ptr<tl::f32> y_ptr, tl::i32 n_elements,
                                                int BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  x = tl::asin(x);  // libdevice.asin(x)
  tl::store(y_ptr + offsets, x, mask);
});

TEST(Tutorial07, ExternFunctionAsin) {
  // x = torch.rand(size): uniform in [0, 1), the tutorial's 98432 elements
  const int size = 98432;
  auto hx = random_values<tl::f32>(size, 0, 1);
  auto x = upload<tl::f32>(hx);
  auto output = conformance::output<tl::f32>(size);
  asin_kernel[tl::grid(tl::cdiv(size, 1024))](x, output, size, 1024);
  std::vector<double> want(size);
  for (int i = 0; i < size; ++i) want[size_t(i)] = std::asin(double(hx[size_t(i)]));
  // a few ulp of f32 (docs/language.md lists each function's measured error)
  EXPECT_TRUE(close(output.download(), want, 1e-6, 1e-7, "asin"));
}

TEST(Tutorial07, ExternLibsPath) { CONFORMANCE_GAP("extern_libs"); }

}  // namespace

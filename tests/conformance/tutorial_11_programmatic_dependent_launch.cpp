// Triton tutorial 11 (python/tutorials/11-programmatic-dependent-launch.py): 01's
// `add_kernel` with a USE_GDC constexpr: with USE_GDC the kernel waits for the previous
// kernel's writes (`tl.extra.cuda.gdc_wait()`) and lets the next kernel start early
// (`gdc_launch_dependents()`), launched with `launch_pdl=True`. tl has neither (gap
// "PDL"): the USE_GDC=False kernel is transcribed and run, two launches back to back on
// one stream, the second reading what the first wrote, as the tutorial's test does.
#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto add_kernel = tl::kernel("add_kernel_pdl", [](tl::ptr<tl::f32> x_ptr,  //
                                                  tl::ptr<tl::f32> y_ptr,  //
                                                  tl::ptr<tl::f32> output_ptr,  //
                                                  tl::i32 n_elements,  //
                                                  int BLOCK_SIZE,  //
                                                  bool USE_GDC) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  if (USE_GDC) {
    // GDC wait waits for ALL programs in the prior kernel to complete before continuing.
    // (tl.extra.cuda.gdc_wait(): not in tl; the test for USE_GDC skips.)
  }
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  if (USE_GDC) {
    // GDC launch dependents hints the runtime system to launch dependent kernels.
    // (tl.extra.cuda.gdc_launch_dependents(): not in tl.)
  }
  auto output = x + y;
  tl::store(output_ptr + offsets, output, mask);
});

TEST(Tutorial11, AddWithoutGdc) {
  conformance::note_partial("PDL");
  const int size = 98432;
  auto hx = random_values<tl::f32>(size, -10, 10), hy = random_values<tl::f32>(size, -10, 10);
  auto x = upload<tl::f32>(hx), y = upload<tl::f32>(hy);
  auto first = output<tl::f32>(size), second = output<tl::f32>(size);
  auto grid = tl::grid(tl::cdiv(size, 1024));
  add_kernel[grid](x, y, first, size, 1024, false);       // first = x + y
  add_kernel[grid](first, y, second, size, 1024, false);  // second = first + y, after the first kernel's writes
  std::vector<double> want(size);
  for (int i = 0; i < size; ++i) want[i] = float(float(hx[i] + hy[i]) + hy[i]);
  EXPECT_TRUE(close(second.download(), want, 0, 0, "second"));
}

TEST(Tutorial11, AddWithGdc) { CONFORMANCE_GAP("PDL"); }

}  // namespace

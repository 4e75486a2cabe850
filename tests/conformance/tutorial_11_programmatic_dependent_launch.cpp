// Triton tutorial 11 (python/tutorials/11-programmatic-dependent-launch.py): 01's
// `add_kernel` with a USE_GDC constexpr: with USE_GDC the kernel waits for the previous
// kernel's writes (`tl.extra.cuda.gdc_wait()`, tl::gdc_wait) and lets the next kernel start
// early (`gdc_launch_dependents()`, tl::gdc_launch_dependents), launched with
// `launch_pdl=True` (`.with({.launch_pdl = true})`). Two launches back to back on one stream,
// the second reading what the first wrote, as the tutorial's test does. On sm_90 the launches
// overlap; elsewhere (the CPU here, AMD) the ops are no-ops and launch_pdl is ignored.
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
    // This ensures any memory operations happen before the wait in program order,
    // e.g. if the prior kernel writes to x or y the new values will be visible.
    tl::gdc_wait();
  }
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  if (USE_GDC) {
    // GDC launch dependents hints the runtime system to launch dependent kernels.
    // These dependent kernels must also be launched with PDL enabled.
    // Once GDC launch has been issued by ALL programs or
    // programs have finished, the dependent grid can begin if there are enough resources.
    // Note: this by itself provides no additional memory-ordering guarantees, unlike `gdc_wait`.
    tl::gdc_launch_dependents();
  }
  auto output = x + y;
  tl::store(output_ptr + offsets, output, mask);
});

// The tutorial's add(x, y, launch_pdl): BLOCK_SIZE 1024, USE_GDC = launch_pdl.
void add(const tl::buffer<tl::ty::f32>& x, const tl::buffer<tl::ty::f32>& y, const tl::buffer<tl::ty::f32>& out,
         bool launch_pdl) {
  const int n = int(out.size());
  add_kernel[tl::grid(tl::cdiv(n, 1024))].with({.launch_pdl = launch_pdl})(x, y, out, n, 1024, launch_pdl);
}

void check(bool launch_pdl) {
  const int size = 98432;
  auto hx = random_values<tl::f32>(size, -10, 10), hy = random_values<tl::f32>(size, -10, 10);
  auto x = upload<tl::f32>(hx), y = upload<tl::f32>(hy);
  auto first = output<tl::f32>(size), second = output<tl::f32>(size);
  add(x, y, first, launch_pdl);       // first = x + y
  add(first, y, second, launch_pdl);  // second = first + y, after the first kernel's writes
  std::vector<double> want(size);
  for (int i = 0; i < size; ++i) want[i] = float(float(hx[i] + hy[i]) + hy[i]);
  EXPECT_TRUE(close(second.download(), want, 0, 0, "second"));
}

TEST(Tutorial11, AddWithoutGdc) { check(false); }
TEST(Tutorial11, AddWithGdc) { check(true); }

}  // namespace

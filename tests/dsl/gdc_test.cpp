// Programmatic dependent launch (Triton's tutorial 11): tl::gdc_wait(),
// tl::gdc_launch_dependents() and `.with({.launch_pdl = true})`.
// - On the test device (the CPU in CI) both ops are no-ops and launch_pdl is ignored: a
//   chain of dependent launches computes what plain launches compute.
// - For sm_90 they are PTX griddepcontrol.wait / .launch_dependents, where the user wrote
//   them (the wait before the first load, the launch after the loads); for sm_80 and AMD
//   nothing, the code that of the same kernel without them.
// - On an NVIDIA GPU (skipped elsewhere) tutorial 11's add_kernel with USE_GDC, launched
//   with launch_pdl one after the other, each reading what the previous one wrote.
#include <string>
#include <vector>

#include "runtime/cuda_api.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

// Tutorial 11's add_kernel: with USE_GDC, wait for the previous kernel's writes before the
// loads, and let the next kernel start once this one has read its inputs.
auto add_kernel = tl::kernel("gdc_add_kernel", [](tl::ptr<tl::f32> x_ptr, tl::ptr<tl::f32> y_ptr,
                                                  tl::ptr<tl::f32> output_ptr, tl::i32 n_elements, int BLOCK_SIZE,
                                                  bool USE_GDC) {
  auto pid = tl::program_id(0);
  auto offsets = pid * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  if (USE_GDC) tl::gdc_wait();
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  if (USE_GDC) tl::gdc_launch_dependents();
  tl::store(output_ptr + offsets, x + y, mask);
});

// x + steps * y, each launch adding y to what the previous one wrote: out[k] = out[k-1] + y,
// launched with launch_pdl (ping-pong between two buffers). Small integers in floats, so
// every partial sum is exact and the double reference is equal, not close.
void check_chain(const tl::device& dev, int n, int steps, bool pdl) {
  std::vector<float> hx(static_cast<size_t>(n)), hy(static_cast<size_t>(n));
  auto rx = random_ints(size_t(n), -1000, 1000), ry = random_ints(size_t(n), -50, 50);
  for (int i = 0; i < n; ++i) hx[size_t(i)] = float(rx[size_t(i)]), hy[size_t(i)] = float(ry[size_t(i)]);
  auto x = dev.alloc<tl::f32>(size_t(n)), y = dev.alloc<tl::f32>(size_t(n));
  auto a = dev.alloc<tl::f32>(size_t(n)), b = dev.alloc<tl::f32>(size_t(n));
  x.upload(hx);
  y.upload(hy);
  poison(a);
  poison(b);
  const int block = 1024;
  auto grid = tl::grid(tl::cdiv(n, block));
  const tl::launch_options o{.launch_pdl = pdl};
  add_kernel[grid].with(o).on(dev)(x, y, a, n, block, true);  // a = x + y
  for (int s = 1; s < steps; ++s) {
    auto& from = s % 2 ? a : b;
    auto& to = s % 2 ? b : a;
    add_kernel[grid].with(o).on(dev)(from, y, to, n, block, true);
  }
  auto got = (steps % 2 ? a : b).download();
  for (int i = 0; i < n; ++i) {
    const double want = double(hx[size_t(i)]) + double(steps) * double(hy[size_t(i)]);
    ASSERT_EQ(double(got[size_t(i)]), want) << "element " << i << " after " << steps << " launches";
  }
}

// The code compile() made for `target`, USE_GDC or not.
std::string isa(const std::string& target, bool use_gdc) {
  auto x = test_device().alloc<tl::f32>(16);
  return isa_of_compiled(add_kernel.compile(target, {.num_warps = 4}, x, x, x, 98432, 1024, use_gdc));
}

}  // namespace

TEST(Gdc, ChainOfDependentLaunchesOnTheTestDevice) {
  check_chain(test_device(), 98432, 2, true);  // the tutorial's size: a ragged last block
  check_chain(test_device(), 5000, 7, true);
  check_chain(test_device(), 5000, 3, false);  // the ops without launch_pdl: no-ops everywhere
}

TEST(Gdc, Sm90GivesGriddepcontrolWhereTheKernelSaysIt) {
  const std::string ptx = isa("sm_90", true);
  EXPECT_EQ(count(ptx, "griddepcontrol.wait;"), 1) << ptx;
  EXPECT_EQ(count(ptx, "griddepcontrol.launch_dependents;"), 1) << ptx;
  // The wait before any load (what it protects), the launch after the loads and before
  // the store, as the kernel orders them.
  const size_t wait = ptx.find("griddepcontrol.wait;"), launch = ptx.find("griddepcontrol.launch_dependents;");
  const size_t first_load = ptx.find("ld.global"), last_load = ptx.rfind("ld.global"), store = ptx.find("st.global");
  ASSERT_NE(first_load, std::string::npos);
  ASSERT_NE(store, std::string::npos);
  EXPECT_LT(wait, first_load);
  EXPECT_GT(launch, last_load);
  EXPECT_LT(launch, store);
  const PtxasRun as = run_ptxas(ptx, "-arch=sm_90");
  if (as.ran) EXPECT_TRUE(as.ok) << as.output;

  const std::string plain = isa("sm_90", false);
  EXPECT_EQ(count(plain, "griddepcontrol"), 0);
}

// Where no launch overlaps the previous one there is nothing to wait for: no instruction,
// and the same code as without the ops.
TEST(Gdc, NoOpsOnSm80AndAmd) {
  const std::string sm80 = isa("sm_80", true);
  EXPECT_EQ(count(sm80, "griddepcontrol"), 0) << sm80;
  EXPECT_EQ(sm80, isa("sm_80", false));
  for (const char* amd : {"gfx942", "gfx950"}) {
    SCOPED_TRACE(amd);
    EXPECT_EQ(isa(amd, true), isa(amd, false));
  }
}

// Tutorial 11 on an NVIDIA GPU: dependent launches with launch_pdl (cuLaunchKernelEx with
// programmatic stream serialization on sm_90+, plain launches before it), each waiting for
// the previous one's writes. A missing wait would read poison or stale partial sums.
TEST(Gdc, Tutorial11OnNvidiaWithLaunchPdl) {
  if (!tl::cuda::Api::get()) GTEST_SKIP() << "no NVIDIA GPU here";
  const tl::device dev = tl::cuda_device(0);
  check_chain(dev, 98432, 2, true);
  check_chain(dev, 1 << 22, 50, true);  // long enough that launches overlap if they may
  check_chain(dev, 777, 9, true);
}

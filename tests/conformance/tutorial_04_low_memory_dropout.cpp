// Triton tutorial 04 (python/tutorials/04-low-memory-dropout.py): the baseline `_dropout`
// (the keep mask an int32 tensor read from memory) is transcribed and run; the tutorial's
// point, `_seeded_dropout` with `tl.rand(seed, offsets)`, is an expected gap (tl.rand).
#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto _dropout = tl::kernel("_dropout", [](tl::ptr<tl::f32> x_ptr,       // pointer to the input
                                          tl::ptr<tl::i32> x_keep_ptr,  // pointer to a mask of 0s and 1s
                                          tl::ptr<tl::f32> output_ptr,  // pointer to the output
                                          tl::i32 n_elements,           // number of elements in the `x` tensor
                                          tl::f32 p,  // probability that an element of `x` is changed to zero
                                          int BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  // Load data
  auto x = tl::load(x_ptr + offsets, mask);
  auto x_keep = tl::load(x_keep_ptr + offsets, mask);
  // The line below is the crucial part, described in the paragraph above!
  // (Triton's tl.where takes the int32 mask as its condition; tl's wants an i1.)
  auto output = tl::where(x_keep != 0, x / (1 - p), 0.0);
  // Write-back output
  tl::store(output_ptr + offsets, output, mask);
});

TEST(Tutorial04, Dropout) {
  conformance::note_partial("tl.where of an integer condition");
  for (int n : {10, 3000}) {
    const float p = 0.5f;
    std::vector<float> hx(n);
    std::normal_distribution<float> randn;
    for (auto& v : hx) v = randn(rng());
    std::vector<int32_t> keep(n);
    std::uniform_real_distribution<float> rand;
    for (auto& k : keep) k = rand(rng()) > p;
    auto x = upload<tl::f32>(hx);
    auto x_keep = upload<tl::i32>(keep);
    auto output = tl::buffer<tl::ty::f32>(test_device(), n);
    poison(output);
    _dropout[tl::grid(tl::cdiv(n, 1024))](x, x_keep, output, n, p, 1024);
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[i] = keep[i] ? double(hx[i] / (1 - p)) : 0.0;
    EXPECT_TRUE(close(output.download(), want, 0, 0, "output")) << n;
  }
}

TEST(Tutorial04, SeededDropout) { CONFORMANCE_GAP("tl.rand"); }

}  // namespace

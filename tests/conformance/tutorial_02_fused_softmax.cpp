// Triton tutorial 02 (python/tutorials/02-fused-softmax.py): `softmax_kernel`, a
// persistent kernel whose programs stride over the rows (`tl.range(row_start, n_rows,
// row_step, num_stages=num_stages)`, a run-time step), each row one BLOCK_SIZE block
// (the next power of two of n_cols), masked loads with other=-inf.
#include <algorithm>
#include <limits>

#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto softmax_kernel = tl::kernel("softmax_kernel", [](tl::ptr<tl::f32> output_ptr, tl::ptr<tl::f32> input_ptr,
                                                      tl::i32 input_row_stride, tl::i32 output_row_stride,
                                                      tl::i32 n_rows, tl::i32 n_cols, int BLOCK_SIZE,
                                                      int num_stages) {
  // starting row of the program
  auto row_start = tl::program_id(0);
  auto row_step = tl::num_programs(0);
  for (auto row_idx : tl::range(row_start, n_rows, row_step, tl::num_stages(num_stages))) {
    // The stride represents how much we need to increase the pointer to advance 1 row
    auto row_start_ptr = input_ptr + row_idx * input_row_stride;
    // The block size is the next power of two greater than n_cols, so we can fit each
    // row in a single block
    auto col_offsets = tl::arange(0, BLOCK_SIZE);
    auto input_ptrs = row_start_ptr + col_offsets;
    // Load the row into SRAM, using a mask since BLOCK_SIZE may be > than n_cols
    auto mask = col_offsets < n_cols;
    auto row = tl::load(input_ptrs, mask, -std::numeric_limits<float>::infinity());
    // Subtract maximum for numerical stability
    auto row_minus_max = row - tl::max(row, 0);
    // Note that exponentiation in Triton is fast but approximate (i.e., think __expf in CUDA)
    auto numerator = tl::exp(row_minus_max);
    auto denominator = tl::sum(numerator, 0);
    auto softmax_output = numerator / denominator;
    // Write back output to DRAM
    auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
    auto output_ptrs = output_row_start_ptr + col_offsets;
    tl::store(output_ptrs, softmax_output, mask);
  }
});

int next_power_of_2(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// def softmax(x): a persistent grid of num_programs = min(programs that fit, n_rows).
void softmax(const tl::buffer<tl::ty::f32>& x, const tl::buffer<tl::ty::f32>& y, int n_rows, int n_cols,
             int num_programs, int num_stages) {
  int BLOCK_SIZE = next_power_of_2(n_cols);
  int num_warps = 8;
  softmax_kernel[tl::grid(std::min(num_programs, n_rows))].with({.num_warps = num_warps})(
      y, x, n_cols, n_cols, n_rows, n_cols, BLOCK_SIZE, num_stages);
}

TEST(Tutorial02, FusedSoftmax) {
  // The tutorial's 1823 x 781 shape, fewer rows (the CPU runs it in CI); more rows than
  // programs so that each program strides over several; a tiny one.
  struct Case { int rows, cols, programs, stages; };
  for (Case c : {Case{183, 781, 8, 2}, Case{7, 3, 3, 1}, Case{64, 1024, 5, 4}}) {
    std::vector<float> hx(size_t(c.rows) * c.cols);
    std::normal_distribution<float> randn;
    for (auto& v : hx) v = randn(rng());
    auto x = upload<tl::f32>(hx);
    auto y = tl::buffer<tl::ty::f32>(test_device(), hx.size());
    poison(y);
    softmax(x, y, c.rows, c.cols, c.programs, c.stages);
    std::vector<double> want(hx.size());
    for (int r = 0; r < c.rows; ++r) {
      const float* row = &hx[size_t(r) * c.cols];
      double mx = *std::max_element(row, row + c.cols), sum = 0;
      for (int j = 0; j < c.cols; ++j) sum += std::exp(double(row[j]) - mx);
      for (int j = 0; j < c.cols; ++j) want[size_t(r) * c.cols + j] = std::exp(double(row[j]) - mx) / sum;
    }
    EXPECT_TRUE(close(y.download(), want, 2e-5, 1e-7, "y")) << c.rows << " x " << c.cols;
  }
}

}  // namespace

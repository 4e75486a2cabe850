// Triton tutorial 01 (python/tutorials/01-vector-add.py): `add_kernel`, one BLOCK_SIZE
// block of x + y per program, the ragged end masked. Transcribed line for line.
#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto add_kernel = tl::kernel("add_kernel", [](tl::ptr<tl::f32> x_ptr,  // *Pointer* to first input vector.
                                              tl::ptr<tl::f32> y_ptr,  // *Pointer* to second input vector.
                                              tl::ptr<tl::f32> output_ptr,  // *Pointer* to output vector.
                                              tl::i32 n_elements,           // Size of the vector.
                                              int BLOCK_SIZE) {  // Number of elements each program should process.
  auto pid = tl::program_id(0);  // We use a 1D launch grid so axis is 0.
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  auto x = tl::load(x_ptr + offsets, mask);
  auto y = tl::load(y_ptr + offsets, mask);
  auto output = x + y;
  tl::store(output_ptr + offsets, output, mask);
});

// def add(x, y): grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
void add(const tl::buffer<tl::ty::f32>& x, const tl::buffer<tl::ty::f32>& y, const tl::buffer<tl::ty::f32>& output,
         int n_elements) {
  add_kernel[tl::grid(tl::cdiv(n_elements, 1024))](x, y, output, n_elements, 1024);
}

TEST(Tutorial01, VectorAdd) {
  // The tutorial's size (98432: 96 full blocks and one of 128) and a few ragged ones.
  for (int size : {98432, 1, 1023, 1025}) {
    auto hx = random_values<tl::f32>(size, -10, 10), hy = random_values<tl::f32>(size, -10, 10);
    auto x = upload<tl::f32>(hx), y = upload<tl::f32>(hy);
    auto output = tl::buffer<tl::ty::f32>(test_device(), size);
    poison(output);
    add(x, y, output, size);
    std::vector<double> want(size);
    for (int i = 0; i < size; ++i) want[i] = float(double(hx[i]) + double(hy[i]));  // one f32 rounding
    EXPECT_TRUE(close(output.download(), want, 0, 0, "output")) << "size " << size;
  }
}

}  // namespace

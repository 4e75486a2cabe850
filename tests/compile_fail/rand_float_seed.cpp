// expect: the seed must be an integer
// A random-number seed must be an integer (Triton asserts seed.dtype.is_int()).
#include "tl/tl.hpp"
void f() {
  auto k = tl::kernel("k", [](tl::ptr<tl::f32> y, tl::f32 seed) { tl::store(y + tl::arange(0, 16), tl::rand(seed, tl::arange(0, 16))); });
  (void)k;
}

// expect: a pointer parameter takes a tl::buffer of the same element type
// A bf16 buffer passed for an f32 pointer does not compile.
#include "tl/tl.hpp"
void f(tl::buffer<tl::ty::bf16> x) {
  auto k = tl::kernel("k", [](tl::ptr<tl::f32> p) { tl::store(p, tl::f32(1.0f)); });
  k[tl::grid(1)](x);
}

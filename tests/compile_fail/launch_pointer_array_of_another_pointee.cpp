// expect: a pointer parameter takes a tl::buffer of the same element type or a raw pointer to it
// An array of pointers to i32 passed for a parameter that is an array of pointers to f32
// does not compile.
#include "tl/tl.hpp"
void f(tl::buffer<tl::ty::ptr<tl::ty::i32>> ptrs) {
  auto k = tl::kernel("k", [](tl::ptr<tl::ptr<tl::f32>> pp) { tl::store(tl::load(pp), tl::f32(1.0f)); });
  k[tl::grid(1)](ptrs);
}

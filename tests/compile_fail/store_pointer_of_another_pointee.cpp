// expect: the value's element type must be the pointee
// Storing pointers to i32 into an array of pointers to f32 does not compile: the pointee
// is part of a pointer tile's C++ type (convert explicitly with .to<tl::ptr<tl::f32>>()).
#include "tl/tl.hpp"
void f() {
  auto k = tl::kernel("k", [](tl::ptr<tl::ptr<tl::f32>> pp, tl::ptr<tl::i32> x) {
    tl::store(pp + tl::arange(0, 8), x + tl::arange(0, 8));
  });
  (void)k;
}

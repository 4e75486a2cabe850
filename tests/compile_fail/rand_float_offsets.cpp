// expect: the offsets must be an integer tile
// Random numbers are drawn for integer offsets.
#include "tl/tl.hpp"
void f() {
  auto k = tl::kernel("k", [](tl::ptr<tl::f32> y) { tl::store(y + tl::arange(0, 16), tl::rand(7, tl::zeros<tl::f32>({16}))); });
  (void)k;
}

// expect: wrong number of arguments for this kernel
// A launch with too few arguments does not compile.
#include "tl/tl.hpp"
void f(tl::buffer<tl::ty::f32> x) {
  auto k = tl::kernel("k", [](tl::ptr<tl::f32> p, tl::i32 n) { tl::store(p, n.to<tl::f32>()); });
  k[tl::grid(1)](x);
}

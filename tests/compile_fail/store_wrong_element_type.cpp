// expect: the value's element type must be the pointee
// Storing f32 values through a bf16 pointer without .to<tl::bf16>() does not compile.
#include "tl/tl.hpp"
void f() {
  auto k = tl::kernel("k", [](tl::ptr<tl::bf16> p) { tl::store(p, tl::f32(1.0f)); });
  (void)k;
}

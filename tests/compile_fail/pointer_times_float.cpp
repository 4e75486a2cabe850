// expect: no match for .+operator\*
// Multiplying a pointer does not compile.
#include "tl/tl.hpp"
void f() {
  auto k = tl::kernel("k", [](tl::ptr<tl::f32> p) { auto q = p * 2.0f; (void)q; });
  (void)k;
}

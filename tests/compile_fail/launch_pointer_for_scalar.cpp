// expect: a scalar parameter takes a C\+\+ number
// A pointer passed for a scalar parameter does not compile.
#include "tl/tl.hpp"
void f(float* x) {
  auto k = tl::kernel("k", [](tl::i32 n) { (void)n; });
  k[tl::grid(1)](x);
}

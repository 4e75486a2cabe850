// The smallest tl program: z = x + y on the detected device.
#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "tl/tl.hpp"

int main() try {
  auto add = tl::kernel("vector_add", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::f32> z, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    tl::store(z + i, tl::load(x + i, m) + tl::load(y + i, m), m);
  });
  const int n = 1 << 20;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[i] = std::sin(float(i)), hy[i] = std::cos(float(i));
  auto dev = tl::default_device();
  auto X = dev.alloc<tl::f32>(n), Y = dev.alloc<tl::f32>(n), Z = dev.alloc<tl::f32>(n);
  X.upload(hx);
  Y.upload(hy);
  add[tl::grid(tl::cdiv(n, 1024))](X, Y, Z, n, 1024);
  auto hz = Z.download();
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += hz[i] != hx[i] + hy[i];
  fmt::print("vector_add on {} ({}): {} elements, {} wrong\n", dev.name(), dev.target(), n, bad);
  return bad ? 1 : 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "tl-sample-vector_add: {}\n", e.what());
  return 2;
}

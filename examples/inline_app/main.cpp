// An application with a tl kernel written inline: a softmax over the rows of a matrix,
// run on the detected device (an AMD GPU, else an NVIDIA GPU, else the CPU; TL_DEVICE
// picks one) and checked against the same computation on the host.
//
// It is built against an installed tl (CMakeLists.txt: find_package(tl)); the test
// command builds and runs it against a fresh install prefix (tests/install/).
#include <tl/tl.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() try {
  auto softmax = tl::kernel("softmax", [](tl::ptr<tl::f32> x, tl::ptr<tl::bf16> y, tl::i32 cols, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0) * cols;
    auto v = tl::load(x + row + c, m, -INFINITY);
    auto e = tl::exp(v - tl::max(v, 0));
    tl::store(y + row + c, (e / tl::sum(e, 0)).to<tl::bf16>(), m);
  });

  const int rows = 64, cols = 1000;
  std::vector<float> hx(rows * cols);
  for (int i = 0; i < rows * cols; ++i) hx[i] = std::sin(0.01f * float(i)) * 4.0f;

  tl::device dev = tl::default_device();
  auto X = dev.alloc<tl::f32>(hx.size());
  auto Y = dev.alloc<tl::bf16>(hx.size());
  X.upload(hx);
  softmax[tl::grid(rows)].with({.num_warps = 4})(X, Y, cols, 1024);
  std::vector<tl::bfloat16> hy = Y.download();

  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0;
    for (int c = 0; c < cols; ++c) mx = std::fmax(mx, hx[r * cols + c]);
    for (int c = 0; c < cols; ++c) sum += std::exp(hx[r * cols + c] - mx);
    for (int c = 0; c < cols; ++c) {
      double want = std::exp(hx[r * cols + c] - mx) / sum;
      worst = std::fmax(worst, std::fabs(tl::to_float(hy[r * cols + c]) - want) / want);
    }
  }
  // bf16 keeps 8 bits of mantissa: a relative error of at most 2^-8 after rounding.
  const bool ok = worst <= 1.0 / 256;
  std::printf("inline_app: softmax of %dx%d on %s (%s): max relative error %.2e, %s\n", rows, cols,
              dev.name().c_str(), dev.target().c_str(), worst, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
} catch (const tl::error& e) {
  std::fprintf(stderr, "inline_app: %s\n", e.what());
  return 2;
}

// The smallest tl program: z = x + y on the detected device.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>
#include <vector>

#include "tl/tl.hpp"

int main(int argc, char** argv) try {
  auto add = tl::kernel("vector_add", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::f32> z, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    tl::store(z + i, tl::load(x + i, m) + tl::load(y + i, m), m);
  });
  const int n = 1 << 20;
  // --target NAME --report: compile for NAME (gfx90a, gfx942, gfx950, sm_90, cpu) and
  // print the resource report without running.
  std::string target;
  bool report = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) target = argv[++i];
    else if (a == "--report") report = true;
    else throw std::runtime_error("unknown argument " + a + " (expected --target NAME --report)");
  }
  if (report) {
    auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);  // shapes the specialization only
    auto meta = nlohmann::json::parse(add.compile(target, {.num_warps = 4}, p, p, p, n, 1024));
    fmt::print("kernel: vector_add\ntarget: {}\n", meta.value("target_full", ""));
    for (auto& [k, v] : meta["report"].items()) fmt::print("{}: {}\n", k, v.dump());
    fmt::print("compile_ms: {:.1f}\n", meta.value("compile_ms", 0.0));
    return 0;
  }
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

// Triton's enable_fp_fusion (launch_options::enable_fp_fusion, on by default): a user's
// float a * b + c is one fma, rounded once, on every target; off, the product and the sum
// round on their own. Shown where it matters, catastrophic cancellation: a = b = 1 + 2^-12
// and c = -(1 + 2^-11) give a * b = 1 + 2^-11 + 2^-24, which f32 rounds to 1 + 2^-11 (a
// tie, to even), so mul + add is 0 and the fma 2^-24 (f64 the same with 2^-27). On random
// inputs the fused result is std::fma's bit for bit and the unfused one the two roundings'.
// The instructions: NVIDIA fma.rn against mul.rn + add.rn, AMD v_fma/v_fmac against
// v_mul + v_add. tl's math library rounds its own operations on their own either way
// (the IR's `rn`), which its error bounds and compensated sums need.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/reference.hpp"
#include "tl/tl.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr int kBlock = 256;

template <class E> auto& fma_kernel() {
  static auto k = tl::kernel("fp_fusion_axpc", [](tl::ptr<E> a, tl::ptr<E> b, tl::ptr<E> c, tl::ptr<E> out, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    tl::store(out + i, tl::load(a + i, m) * tl::load(b + i, m) + tl::load(c + i, m), m);
  });
  return k;
}

template <class T, class E>
std::vector<T> run(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c, bool fusion) {
  const int n = int(a.size());
  auto A = upload<E>(a), B = upload<E>(b), C = upload<E>(c);
  auto O = test_device().alloc<E>(size_t(n));
  poison(O);
  fma_kernel<E>()[tl::grid(tl::cdiv(n, kBlock))].with({.enable_fp_fusion = fusion})(A, B, C, O, n);
  return O.download();
}

// The CPU fuses where it has an FMA instruction (LLVM's x86 backend does not call a libm
// fma for a contracted product); GPUs always have one.
bool target_fuses() {
#if defined(__x86_64__) || defined(__i386__)
  if (test_device().kind() == tl::device_kind::cpu) return __builtin_cpu_supports("fma");
#endif
  return true;
}

template <class T, class E> void check_cancellation_and_random() {
  const int frac = std::is_same_v<T, float> ? 12 : 27;
  const T a0 = T(1) + std::ldexp(T(1), -frac), c0 = -(T(1) + std::ldexp(T(1), 1 - frac));
  std::vector<T> a(1000, a0), b(1000, a0), c(1000, c0);
  // random operands from 1000 on, each product and sum of every size
  std::uniform_real_distribution<T> d(-4, 4);
  for (auto* v : {&a, &b, &c})
    for (auto& x : *v) x = &x - v->data() < 8 ? x : d(rng());
  auto fused = run<T, E>(a, b, c, true), apart = run<T, E>(a, b, c, false);
  EXPECT_EQ(apart[0], T(0));
  if (target_fuses()) EXPECT_EQ(fused[0], std::ldexp(T(1), -2 * frac)) << "a * b + c was not fused";
  for (size_t i = 0; i < a.size(); ++i) {
    volatile T p = a[i] * b[i];  // rounded here, not contracted by the host compiler
    T want_apart = p + c[i];
    EXPECT_EQ(apart[i], want_apart) << i;
    if (target_fuses()) EXPECT_EQ(fused[i], std::fma(a[i], b[i], c[i])) << i;
  }
}

std::string tile_ir_of_compiled(const std::string& meta) {
  auto entry = tl::cache::DiskCache::global().load(nlohmann::json::parse(meta).at("key").get<std::string>());
  if (!entry) throw std::runtime_error("no cache entry for " + meta);
  const auto& ir = entry->artifacts.at("tile_ir");
  return std::string(ir.begin(), ir.end());
}

int matches(const std::string& text, const std::string& re) {
  std::regex r(re);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}

std::string isa(const std::string& arch, bool fusion) {
  auto p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  return isa_of_compiled(fma_kernel<ty::f32>().compile(arch, {.num_warps = 4, .enable_fp_fusion = fusion}, p, p, p, p,
                                                          int32_t(1 << 20)));
}

}  // namespace

TEST(FpFusion, AxpyIsOneRoundingByDefaultAndTwoWhenOff) {
  check_cancellation_and_random<float, ty::f32>();
  check_cancellation_and_random<double, ty::f64>();
}

TEST(FpFusion, FmaInstructionOnEveryGpuTarget) {
  std::string on = isa("sm_90", true), off = isa("sm_90", false);
  EXPECT_GT(count(on, "fma.rn.f32"), 0) << on;
  EXPECT_EQ(count(on, "mul.rn.f32") + count(on, "add.rn.f32"), 0) << on;
  EXPECT_EQ(count(off, "fma.rn.f32"), 0) << off;
  EXPECT_GT(count(off, "mul.rn.f32"), 0) << off;
  EXPECT_GT(count(off, "add.rn.f32"), 0) << off;
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    std::string on_amd = isa(arch, true), off_amd = isa(arch, false);
    // (an _e32 / _e64 encoding suffix may follow)
    const std::string fma = R"(\bv_(pk_)?fma(c|k|mk|ak)?_f32(_e32|_e64)?\b)",
                      mul = R"(\bv_(pk_)?mul_f32(_e32|_e64)?\b)", add = R"(\bv_(pk_)?add_f32(_e32|_e64)?\b)";
    EXPECT_GT(matches(on_amd, fma), 0) << on_amd;
    EXPECT_EQ(matches(on_amd, mul), 0) << on_amd;
    EXPECT_EQ(matches(off_amd, fma), 0) << off_amd;
    EXPECT_GT(matches(off_amd, mul), 0) << off_amd;
    EXPECT_GT(matches(off_amd, add), 0) << off_amd;
  }
}

// The math library's operations keep their own roundings with fusion on: the IR marks them
// `rn`, and tanh's result is the same bits either way.
TEST(FpFusion, MathLibraryRoundsOnItsOwn) {
  static auto k = tl::kernel("fp_fusion_tanh", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n) {
    auto i = tl::program_id(0) * kBlock + tl::arange(0, kBlock);
    auto m = i < n;
    tl::store(y + i, tl::tanh(tl::load(x + i, m)) + tl::pow(tl::load(x + i, m), 2.5f), m);
  });
  std::vector<float> xs(4096);
  std::uniform_real_distribution<float> d(0, 3);
  for (auto& x : xs) x = d(rng());
  auto X = upload<ty::f32>(xs);
  auto run_with = [&](bool fusion) {
    auto Y = test_device().alloc<ty::f32>(xs.size());
    poison(Y);
    k[tl::grid(tl::cdiv(int(xs.size()), kBlock))].with({.enable_fp_fusion = fusion})(X, Y, int(xs.size()));
    return Y.download();
  };
  auto on = run_with(true), off = run_with(false);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(on[i], off[i]) << xs[i];
  auto p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  std::string ir = tile_ir_of_compiled(k.compile("sm_90", {.num_warps = 4}, p, p, int32_t(1 << 20)));
  EXPECT_GT(matches(ir, R"(\bmul rn\b)"), 5) << ir;
}

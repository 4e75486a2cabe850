// The MLP activations of bench/activation_bench.cpp, as a Triton user writes them (Liger
// Kernel's geglu / swiglu math over a flattened tensor, tutorial 01's BLOCK_SIZE programs):
// GELU with tanh and SiLU-gated (SwiGLU), bf16 in and out, computed in f32. One definition
// for the bench and for the code tests that check what it compiles to
// (tests/codegen/math_codegen_test.cpp).
#pragma once

#include "tl/tl.hpp"

namespace tlbench {

inline constexpr float kSqrt2OverPi = 0.7978845608028654f;

inline auto& gelu_tanh_kernel() {
  static auto k = tl::kernel("gelu_tanh", [](tl::ptr<tl::bf16> x, tl::ptr<tl::bf16> y, tl::i32 n, int BLOCK_SIZE) {
    auto offs = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
    auto mask = offs < n;
    auto a = tl::load(x + offs, mask, 0.0f).to<tl::f32>();
    auto inner = kSqrt2OverPi * (a + 0.044715f * a * a * a);
    auto g = 0.5f * a * (1.0f + tl::tanh(inner));
    tl::store(y + offs, g.to<tl::bf16>(), mask);
  });
  return k;
}

inline auto& swiglu_kernel() {
  static auto k = tl::kernel("swiglu", [](tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> b, tl::ptr<tl::bf16> c, tl::i32 n,
                                          int BLOCK_SIZE) {
    auto offs = tl::program_id(0) * BLOCK_SIZE + tl::arange(0, BLOCK_SIZE);
    auto mask = offs < n;
    auto x = tl::load(a + offs, mask, 0.0f).to<tl::f32>();
    auto up = tl::load(b + offs, mask, 0.0f).to<tl::f32>();
    tl::store(c + offs, (x * tl::sigmoid(x) * up).to<tl::bf16>(), mask);
  });
  return k;
}

}  // namespace tlbench

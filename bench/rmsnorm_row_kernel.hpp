// The RMSNorm-size kernel of the compile-time issues (15, 44): one bf16 row of BLOCK
// columns per program (the issues: 4096 at 4 warps), shared by tl-bench-compile and
// bench/results/compile-time-2026-11-28b/cpu_interleaved.cpp.
#pragma once

#include "tl/tl.hpp"

namespace tlbench {

// A new kernel object each call: nothing of a previous compile is cached in memory.
inline auto rmsnorm_row_kernel() {
  return tl::kernel("rmsnorm_bench", [](tl::ptr<tl::bf16> x, tl::ptr<tl::bf16> y, tl::ptr<tl::bf16> w,
                                        tl::i32 cols, tl::f32 eps, int BLOCK) {
    auto c = tl::arange(0, BLOCK);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * cols + c, m, 0.0f).to<tl::f32>();
    auto inv = tl::rsqrt(tl::sum(v * v, 0) / cols.to<tl::f32>() + eps);
    auto g = tl::load(w + c, m, 0.0f).to<tl::f32>();
    tl::store(y + row * cols + c, (v * inv * g).to<tl::bf16>(), m);
  });
}

}  // namespace tlbench

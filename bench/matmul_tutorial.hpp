// Triton's tutorial 03 matmul transcribed into tl statement for statement as a Triton
// user writes it (the reference kernel is `matmul` in ../shared/anchors/gemm_anchor.py,
// the kernel behind the anchor's Triton figures). No tl-specific idiom: the operand
// tiles' pointers are carried through the K loop and advanced by `+= BLOCK_K * stride`,
// the loads are plain masked `tl::load`s feeding `tl::dot`, no `tl::shared`; only the
// tutorial's own `tl::range(..., num_stages)`. Compare samples/gemm, which stages both
// tiles by hand and indexes from the induction variable.
//
//   A [M, K], B [K, N], C [M, N], any element type tl::dot takes (C of A's type, f32
//   accumulation; int8 is not this kernel's), all six strides run-time arguments: a
//   launch specializes an integer argument equal to 1 into the constant 1, as Triton's
//   does, so the unit strides along K (A) and N (B, C) are known at compile time.
//
// Program order: grouped (GROUP_SIZE_M), as the tutorial.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codegen/ir/ir.hpp"
#include "dsl/src/trace.hpp"
#include "tl/tl.hpp"

namespace matmul_tutorial {

struct Config {
  int block_m = 128, block_n = 128, block_k = 64;
  int group_m = 8;
  int num_stages = 3;
  int num_warps = 4;
  int mma_version = 0;  // tl::launch_options::mma_version (NVIDIA)
};

// The tutorial's matmul body.
template <class E>
void body(const tl::ptr<E>& A, const tl::ptr<E>& B, const tl::ptr<E>& C, const tl::i32& M, const tl::i32& N,
          const tl::i32& K, const tl::i32& sam, const tl::i32& sak, const tl::i32& sbk, const tl::i32& sbn,
          const tl::i32& scm, const tl::i32& scn, int BM, int BN, int BK, int GROUP, int STAGES) {
  auto pid = tl::program_id(0);
  auto npm = tl::cdiv(M, BM), npn = tl::cdiv(N, BN);
  auto gid = pid / (GROUP * npn);
  auto first = gid * GROUP;
  auto gs = tl::minimum(npm - first, GROUP);
  auto pm = first + (pid % (GROUP * npn)) % gs;
  auto pn = (pid % (GROUP * npn)) / gs;
  auto rm = pm * BM + tl::arange(0, BM);
  auto rn = pn * BN + tl::arange(0, BN);
  auto rk = tl::arange(0, BK);
  // a = A + rm[:, None] * sam + rk[None, :] * sak;  b = B + rk[:, None] * sbk + rn[None, :] * sbn
  auto a = A + (tl::expand_dims(rm, 1) * sam + tl::expand_dims(rk, 0) * sak);
  auto b = B + (tl::expand_dims(rk, 1) * sbk + tl::expand_dims(rn, 0) * sbn);
  auto acc = tl::zeros<tl::f32>({BM, BN});
  for (auto k : tl::range(0, tl::cdiv(K, BK), 1, tl::num_stages(STAGES))) {
    // acc += dot(load(a, mask=rk[None, :] < K - k * BK, other=0), load(b, mask=rk[:, None] < K - k * BK, other=0))
    acc = acc + tl::dot(tl::load(a, tl::expand_dims(rk, 0) < K - k * BK, 0.0f),
                        tl::load(b, tl::expand_dims(rk, 1) < K - k * BK, 0.0f));
    a += BK * sak;
    b += BK * sbk;
  }
  auto c = C + (tl::expand_dims(rm, 1) * scm + tl::expand_dims(rn, 0) * scn);
  tl::store(c, acc.template to<E>(), tl::expand_dims(rm < M, 1) & tl::expand_dims(rn < N, 0));
}

template <class E> auto& kernel() {
  static auto k = tl::kernel("matmul_tutorial", [](tl::ptr<E> A, tl::ptr<E> B, tl::ptr<E> C, tl::i32 M, tl::i32 N,
                                                   tl::i32 K, tl::i32 sam, tl::i32 sak, tl::i32 sbk, tl::i32 sbn,
                                                   tl::i32 scm, tl::i32 scn, int BM, int BN, int BK, int GROUP,
                                                   int STAGES) {
    body<E>(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM, BN, BK, GROUP, STAGES);
  });
  return k;
}

inline tl::grid grid_of(const Config& c, int64_t M, int64_t N) {
  return tl::grid(tl::cdiv(M, c.block_m) * tl::cdiv(N, c.block_n));
}
inline tl::launch_options options_of(const Config& c) {
  return {.num_warps = c.num_warps, .num_stages = c.num_stages, .mma_version = c.mma_version};
}

// C = A.B, row-major A [M, K], B [K, N], C [M, N] (tl::buffer<E> or raw device pointers).
template <class E, class PA, class PB, class PC>
void matmul(tl::device dev, const Config& c, const PA& a, const PB& b, const PC& out, int64_t M, int64_t N, int64_t K) {
  kernel<E>()[grid_of(c, M, N)].on(dev).with(options_of(c))(a, b, out, int(M), int(N), int(K), int(K), 1, int(N), 1,
                                                            int(N), 1, c.block_m, c.block_n, c.block_k, c.group_m,
                                                            c.num_stages);
}

// Compiles without running (JSON metadata: report, remarks, key) for `target` (a name
// or a tl::device). The pointers only shape the specialization (16-byte aligned).
template <class E, class Target>
std::string compile(const Target& target, const Config& c, int64_t M, int64_t N, int64_t K) {
  auto* p = reinterpret_cast<typename tl::elem_t<E>::host*>(uintptr_t(1) << 20);
  return kernel<E>().compile(target, options_of(c), p, p, p, int(M), int(N), int(K), int(K), 1, int(N), 1, int(N), 1,
                             c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages);
}

// The body traced into tile IR without a device (pointers 16-byte aligned, M, N, K and
// the row strides divisible by 16, the unit strides the constant 1 a launch makes of
// them), for compile-only codegen tests.
template <class E> std::unique_ptr<tl::ir::Function> trace_ir(const Config& c) {
  tl::detail::Trace t("matmul_tutorial", tl::ir::SrcLoc{__FILE__, unsigned(__LINE__)});
  auto ptr = [&](const char* name) {
    return tl::ptr<E>(t.add_argument(tl::ir::Type{tl::DType::ptr, tl::elem_t<E>::dtype, {}}, name, true));
  };
  auto i32 = [&](const char* name) {
    return tl::i32(t.add_argument(tl::ir::Type{tl::DType::i32, tl::DType::i32, {}}, name, true));
  };
  auto A = ptr("A"), B = ptr("B"), C = ptr("C");
  auto M = i32("M"), N = i32("N"), K = i32("K"), sam = i32("sam"), sbk = i32("sbk"), scm = i32("scm");
  const tl::i32 one = 1;
  body<E>(A, B, C, M, N, K, sam, one, sbk, one, scm, one, c.block_m, c.block_n, c.block_k, c.group_m, c.num_stages);
  return t.finish();
}

}  // namespace matmul_tutorial

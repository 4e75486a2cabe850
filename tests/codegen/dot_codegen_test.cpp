// tl::dot in the generated code (no GPU needed): for gfx90a, gfx942 and gfx950 every
// operand dtype and matrix_instr_nonkdim gives the expected v_mfma instruction, as many
// per K step as the tile needs, operands read from LDS 128 bits at a time where a lane
// holds 16 bytes, and no spills; sm_80/sm_90 give mma.sync of the right shape and type.
// A [BM, BK] x [BK, BN] tile product per program, its K loop carrying the accumulator.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::count;
using tltest::ptx_loop;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

// C[BM, BN] = sum over K steps of A[BM, BK] . B[BK, BN]; A row-major [BM, K], B row-major
// [K, BN]; `k_steps` iterations (a constant, so that the loop's body is what is counted).
template <class EA, class EB = EA>
std::unique_ptr<ir::Function> gemm_tile(int BM, int BN, int BK, int k_steps) {
  return trace("dot_tile", [&](Trace& t) {
    using C = std::conditional_t<EA::dtype == DType::i8, ty::i32, ty::f32>;
    auto a = ptr_arg<EA>(t, "a", true);
    auto b = ptr_arg<EB>(t, "b", true);
    auto c = ptr_arg<C>(t, "c", true);
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
    auto acc = tl::zeros<C>({BM, BN});
    for (auto k : tl::range(0, k_steps * BK, BK)) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * (k_steps * BK) + tl::expand_dims(k + rk, 0));
      auto y = tl::load(b + tl::expand_dims(k + rk, 1) * BN + tl::expand_dims(rn, 0));
      acc = tl::dot(x, y, acc);
    }
    tl::store(c + tl::expand_dims(rm, 1) * BN + tl::expand_dims(rn, 0), acc);
  });
}

// The same through one-stage shared buffers (what the GEMM sample writes): A [BM, BK]
// and B [BK, BN] (or B^T [BN, BK], K-contiguous, transposed for the dot), the K loop at
// `stages` (the pipeliner makes the loads asynchronous copies into `stages` buffers).
// `dequantize`: the operands are cast to bf16 after their shared loads (an FP8 tile in a
// bf16 dot, as samples/fp8_decode's K and V).
template <class E>
std::unique_ptr<ir::Function> gemm_tile_shared(int BM, int BN, int BK, int k_steps, int stages, bool b_transposed,
                                               bool dequantize = false) {
  return trace("dot_tile_shared", [&](Trace& t) {
    auto a = ptr_arg<E>(t, "a", true);
    auto b = ptr_arg<E>(t, "b", true);
    auto c = ptr_arg<ty::f32>(t, "c", true);
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
    const int K = k_steps * BK;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    auto sa = tl::shared<E>({1, BM, BK});
    auto sb = b_transposed ? tl::shared<E>({1, BN, BK}) : tl::shared<E>({1, BK, BN});
    for (auto k : tl::range(0, K, BK, tl::num_stages(stages))) {
      sa[0].store(tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0)));
      if (dequantize) {
        sb[0].store(tl::load(b + (b_transposed ? tl::expand_dims(rn, 1) * K + tl::expand_dims(k + rk, 0)
                                               : tl::expand_dims(k + rk, 1) * BN + tl::expand_dims(rn, 0))));
        auto x = sa[0].load().template to<ty::bf16>(), y = sb[0].load().template to<ty::bf16>();
        acc = tl::dot(x, b_transposed ? tl::trans(y) : y, acc);
      } else if (b_transposed) {
        sb[0].store(tl::load(b + tl::expand_dims(rn, 1) * K + tl::expand_dims(k + rk, 0)));
        acc = tl::dot(sa[0].load(), tl::trans(sb[0].load()), acc);
      } else {
        sb[0].store(tl::load(b + tl::expand_dims(k + rk, 1) * BN + tl::expand_dims(rn, 0)));
        acc = tl::dot(sa[0].load(), sb[0].load(), acc);
      }
    }
    tl::store(c + tl::expand_dims(rm, 1) * BN + tl::expand_dims(rn, 0), acc);
  });
}

// A 64x64x64 tile product (4 K steps) of operands of type `t`; null for a type tl::dot
// does not take.
std::unique_ptr<ir::Function> gemm_tile_of(DType t) {
  switch (t) {
    case DType::bf16: return gemm_tile<ty::bf16>(64, 64, 64, 4);
    case DType::f16: return gemm_tile<ty::f16>(64, 64, 64, 4);
    case DType::i8: return gemm_tile<ty::i8>(64, 64, 64, 4);
    case DType::f32: return gemm_tile<ty::f32>(64, 64, 64, 4);
    case DType::f8e4m3fnuz: return gemm_tile<ty::f8e4m3fnuz>(64, 64, 64, 4);
    case DType::f8e5m2fnuz: return gemm_tile<ty::f8e5m2fnuz>(64, 64, 64, 4);
    case DType::f8e4m3fn: return gemm_tile<ty::f8e4m3fn>(64, 64, 64, 4);
    case DType::f8e5m2: return gemm_tile<ty::f8e5m2>(64, 64, 64, 4);
    default: return nullptr;
  }
}

// NVIDIA: mma.sync (mma_version 2), what sm_80 and sm_89 take and sm_90 takes where a tile
// is not a warpgroup's; sm_90's wgmma is tests/dsl/warpgroup_dot_test.cpp's.
codegen::CodeObject compile(const std::string& arch, ir::Function& f, int warps, int nonkdim = 0, int kpack = 1) {
  codegen::CompileOptions o;
  o.num_warps = warps;
  o.mma_version = codegen::parse_target(arch).kind == codegen::TargetDesc::nvptx ? 2 : 0;
  o.matrix_instr_nonkdim = nonkdim;
  o.kpack = kpack;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

struct Case {
  const char* arch;
  DType a;
  int nonkdim;
  const char* mnemonic;
  int per_k_step;  // instructions per BK=64 step of a 64x64 tile at 4 warps
};

}  // namespace

// Every dtype on every AMD chip: the instruction tl's table says, per K step
// (BM = BN = 64, BK = 64, 4 warps: each warp 32x32 of the tile).
TEST(DotCodegen, AmdInstructionPerDtypeAndNonKDim) {
  const Case cases[] = {
      {"gfx90a", DType::bf16, 32, "v_mfma_f32_32x32x8bf16_1k", 8},   {"gfx90a", DType::bf16, 16, "v_mfma_f32_16x16x16bf16_1k", 16},
      {"gfx90a", DType::f16, 32, "v_mfma_f32_32x32x8f16", 8},        {"gfx90a", DType::f16, 16, "v_mfma_f32_16x16x16f16", 16},
      {"gfx90a", DType::i8, 32, "v_mfma_i32_32x32x8i8", 8},          {"gfx90a", DType::i8, 16, "v_mfma_i32_16x16x16i8", 16},
      {"gfx90a", DType::f32, 32, "v_mfma_f32_32x32x2f32", 32},       {"gfx90a", DType::f32, 16, "v_mfma_f32_16x16x4f32", 64},
      {"gfx942", DType::bf16, 32, "v_mfma_f32_32x32x8_bf16", 8},     {"gfx942", DType::bf16, 16, "v_mfma_f32_16x16x16_bf16", 16},
      {"gfx942", DType::f16, 32, "v_mfma_f32_32x32x8_f16", 8},       {"gfx942", DType::f16, 16, "v_mfma_f32_16x16x16_f16", 16},
      {"gfx942", DType::i8, 32, "v_mfma_i32_32x32x16_i8", 4},        {"gfx942", DType::i8, 16, "v_mfma_i32_16x16x32_i8", 8},
      {"gfx942", DType::f32, 32, "v_mfma_f32_32x32x2_f32", 32},      {"gfx942", DType::f32, 16, "v_mfma_f32_16x16x4_f32", 64},
      {"gfx942", DType::f8e4m3fnuz, 32, "v_mfma_f32_32x32x16_fp8_fp8", 4},
      {"gfx942", DType::f8e4m3fnuz, 16, "v_mfma_f32_16x16x32_fp8_fp8", 8},
      {"gfx942", DType::f8e5m2fnuz, 16, "v_mfma_f32_16x16x32_bf8_bf8", 8},
      {"gfx950", DType::bf16, 32, "v_mfma_f32_32x32x16_bf16", 4},    {"gfx950", DType::bf16, 16, "v_mfma_f32_16x16x32_bf16", 8},
      {"gfx950", DType::f16, 32, "v_mfma_f32_32x32x16_f16", 4},      {"gfx950", DType::f16, 16, "v_mfma_f32_16x16x32_f16", 8},
      {"gfx950", DType::i8, 32, "v_mfma_i32_32x32x32_i8", 2},        {"gfx950", DType::i8, 16, "v_mfma_i32_16x16x64_i8", 4},
      {"gfx950", DType::f32, 16, "v_mfma_f32_16x16x4_f32", 64},
      {"gfx950", DType::f8e4m3fn, 32, "v_mfma_f32_32x32x64_f8f6f4", 1}, {"gfx950", DType::f8e5m2, 16, "v_mfma_f32_16x16x32_bf8_bf8", 8},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {} nonkdim {}", c.arch, name(c.a), c.nonkdim));
    std::unique_ptr<ir::Function> f = gemm_tile_of(c.a);
    ASSERT_TRUE(f);
    auto co = compile(c.arch, *f, 4, c.nonkdim);
    std::string dis = amd::disassemble(co.binary);
    // The loop runs 4 K steps; LLVM may unroll it: count over the kernel, per K step.
    int n = count(dis, std::string(c.mnemonic) + " ");
    EXPECT_EQ(n % c.per_k_step, 0) << n << " " << c.mnemonic;
    EXPECT_GE(n, c.per_k_step) << c.mnemonic;
    EXPECT_LE(n, 4 * c.per_k_step) << c.mnemonic;
    EXPECT_EQ(count(dis, "v_mfma"), n) << "another MFMA than " << c.mnemonic;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0);
    EXPECT_EQ(co.report.at("spill_sgpr"), 0);
  }
}

// The anchor's configurations (../shared/anchors/gemm_anchor.py static: Triton 3.6 on
// the tutorial matmul, bf16, BK = 64): VGPR + AGPR no more than Triton's and no spills
// (Triton: gfx942 128x128 4 warps 216 + 64, 256x256 8 warps 256 + 0 with 6 spills;
// gfx950 204 + 64 and 256 + 0 with 40 spills). Operands come from LDS 128 bits a lane
// where a lane holds 16 bytes of k (gfx950's 8-element bf16 MFMAs; gfx942 with kpack 2),
// and the accumulator is stored without a trip through LDS (the LDS is the operands').
TEST(DotCodegen, AmdGemmTilesWithinTritonsRegisters) {
  struct Cfg {
    const char* arch;
    int bm, bn, warps, kpack, triton_regs;
  };
  for (const Cfg& c : {Cfg{"gfx942", 128, 128, 4, 1, 216 + 64}, Cfg{"gfx942", 128, 128, 4, 2, 216 + 64},
                       Cfg{"gfx942", 256, 256, 8, 1, 256}, Cfg{"gfx950", 128, 128, 4, 1, 204 + 64},
                       Cfg{"gfx950", 256, 256, 8, 1, 256}}) {
    SCOPED_TRACE(fmt::format("{} {}x{}x64 {} warps kpack {}", c.arch, c.bm, c.bn, c.warps, c.kpack));
    auto f = gemm_tile<ty::bf16>(c.bm, c.bn, 64, 4);
    auto co = compile(c.arch, *f, c.warps, 0, c.kpack);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(co.report.at("spill_vgpr"), 0);
    EXPECT_EQ(co.report.at("scratch_bytes"), 0);
    EXPECT_LE(co.report.at("vgpr") + co.report.at("agpr"), c.triton_regs);
    // Each warp's share of the tile: (bm * bn / warps) / (32 * 32) MFMAs per 8 (gfx942) or
    // 16 (gfx950) of k.
    int per_step = c.bm * c.bn / c.warps / 1024 * 64 / (std::string(c.arch) == "gfx950" ? 16 : 8);
    EXPECT_EQ(count(dis, "v_mfma"), per_step);
    if (std::string(c.arch) == "gfx950" || c.kpack == 2) {
      EXPECT_GT(count(dis, "ds_read_b128"), 0);
      EXPECT_EQ(count(dis, "ds_read_b64 ") + count(dis, "ds_read2_b64"), 0);
    }
    // B (N-contiguous, as the tutorial loads it) is transposed on its way to the MFMA
    // operand: gfx950 reads it with ds_read_b64_tr_b16, elsewhere it is written
    // transposed; never read two bytes at a time.
    EXPECT_EQ(count(dis, "ds_read_b64_tr_b16") > 0, std::string(c.arch) == "gfx950") << dis;
    EXPECT_EQ(count(dis, "ds_read_u16") + count(dis, "ds_read_i16"), 0) << dis;
    // The operands' conversion (A or B, 16 KiB or 32 KiB of bf16), not the 64 or 256 KiB
    // accumulator.
    EXPECT_LE(co.report.at("lds_bytes"), int64_t(std::max(c.bm, c.bn)) * 64 * 2);
  }
}

// NVIDIA: mma.sync of the operand types' shape, 64x64 tile at 4 warps (each warp 32x32:
// 2 x 4 instructions of 16x8 per K step), FP8 on sm_89+ only (PTX 8.4).
TEST(DotCodegen, NvidiaMmaSyncPerDtype) {
  struct NvCase {
    const char* arch;
    DType a;
    const char* ptx;
    int per_k_step;  // per BK = 64
  };
  for (const NvCase& c : {NvCase{"sm_90", DType::bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 32},
                          NvCase{"sm_80", DType::f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 32},
                          NvCase{"sm_90", DType::i8, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", 16},
                          NvCase{"sm_80", DType::f32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 64},
                          NvCase{"sm_90", DType::f8e4m3fn, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 16},
                          NvCase{"sm_89", DType::f8e5m2, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", 16}}) {
    SCOPED_TRACE(fmt::format("{} {}", c.arch, name(c.a)));
    std::unique_ptr<ir::Function> f = gemm_tile_of(c.a);
    ASSERT_TRUE(f);
    auto co = compile(c.arch, *f, 4);
    std::string ptx(co.binary.begin(), co.binary.end());
    int n = count(ptx, c.ptx);
    EXPECT_GE(n, c.per_k_step);
    EXPECT_EQ(n % c.per_k_step, 0) << n;
    EXPECT_EQ(count(ptx, "mma.sync"), n);
  }
}

// Operands staged in shared memory reach mma.sync through ldmatrix: A (K-contiguous)
// with ldmatrix.x4, B (N-contiguous) with ldmatrix.x4.trans, B^T (K-contiguous) with
// ldmatrix.x4 again; no scalar 16-bit shared loads. 128x128x32 at 4 warps: each warp
// 64x64 = 4 A tiles and 8 B tiles of 16 k per K step of 16, two steps per BK.
TEST(DotCodegen, NvidiaOperandsThroughLdmatrix) {
  for (bool bt : {false, true}) {
    SCOPED_TRACE(bt ? "B^T" : "B");
    auto f = gemm_tile_shared<ty::bf16>(128, 128, 32, 4, 3, bt);
    auto co = compile("sm_90", *f, 4);
    std::string ptx(co.binary.begin(), co.binary.end());
    int plain = count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    int trans = count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
    // A: 4 M tiles x 2 K steps; B: 8 N tiles x 2 K steps / 2 per x4.
    EXPECT_EQ(plain, bt ? 8 + 8 : 8);
    EXPECT_EQ(trans, bt ? 0 : 8);
    EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16"), 0);
    EXPECT_EQ(count(ptx, "mma.sync.aligned.m16n8k16"), 4 * 8 * 2);
    EXPECT_GT(count(ptx, "cp.async"), 0);
    // One barrier an iteration: after the wait for its stage. The copies at its end write
    // the stage the previous iteration read, which that barrier already ordered.
    std::string loop = ptx_loop(ptx);
    EXPECT_EQ(count(loop, "bar.sync"), 1) << loop.substr(0, 2000);
    EXPECT_EQ(count(loop, "cp.async.wait_group"), 1);
  }
}

// Triton's tutorial-03 matmul as users write it (plain loads in the loop, B row-major):
// the middle end stages both operands, 16 bytes a thread, and the dot reads them with
// ldmatrix (B with .trans), never two bytes at a time. 128x128x64 at 4 warps (2 x 2,
// each 64x64) per K step of 16: A 4 m16 tiles (one x4 each), B 8 n8 tiles (two an x4);
// 4 K steps a BK.
TEST(DotCodegen, NvidiaTutorialMatmulReadsOperandsWithLdmatrix) {
  auto f = gemm_tile<ty::bf16>(128, 128, 64, 4);
  auto co = compile("sm_90", *f, 4);
  std::string ptx(co.binary.begin(), co.binary.end());
  EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 4 * 4) << ptx;
  EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 8 / 2 * 4) << ptx;
  EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16") + count(ptx, "st.shared.b16") +
                count(ptx, "st.shared.u16"),
            0)
      << ptx;
  EXPECT_GT(count(ptx, "st.shared.v4.b32"), 0) << ptx;
  EXPECT_EQ(count(ptx, "mma.sync.aligned.m16n8k16"), 4 * 8 * 4);
}

// The same transcription in FP8 on gfx950 (OCP e4m3): B, N-contiguous, is read by
// ds_read_b64_tr_b8 (8 bytes a lane, transposed by the read) after 16-byte writes; no
// LDS access of a byte.
TEST(DotCodegen, Gfx950Fp8TutorialMatmulReadsBTransposed) {
  auto f = gemm_tile<ty::f8e4m3fn>(128, 128, 64, 4);
  auto co = compile("gfx950", *f, 4);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_GT(count(dis, "ds_read_b64_tr_b8"), 0) << dis;
  EXPECT_EQ(count(dis, "ds_write_b8") + count(dis, "ds_read_u8") + count(dis, "ds_read_i8"), 0) << dis;
  EXPECT_EQ(co.report.at("spill_vgpr"), 0);
}

// FP8 (sm_90): A and B^T, both K-contiguous, through ldmatrix.x4 as pairs of bytes
// (no .trans for 8-bit: an N-contiguous FP8 B converts instead). 128x128x64 at 4 warps:
// A 4 M tiles x 2 K steps of 32, B^T 8 N tiles x 2 K steps / 2 per x4.
TEST(DotCodegen, NvidiaFp8OperandsThroughLdmatrix) {
  auto f = gemm_tile_shared<ty::f8e4m3fn>(128, 128, 64, 4, 3, true);
  auto co = compile("sm_90", *f, 4);
  std::string ptx(co.binary.begin(), co.binary.end());
  EXPECT_EQ(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 8 + 8);
  EXPECT_EQ(count(ptx, "ld.shared.u8") + count(ptx, "ld.shared.b8"), 0);
  EXPECT_EQ(count(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"), 4 * 8 * 2);
}

// FP8 tiles from shared memory cast to bf16 for a bf16 dot (an FP8 KV cache's K^T and V,
// samples/fp8_decode): the dot reads and converts each K step's registers where it uses
// them, as it reads unconverted operands, so no converted tile goes through a layout
// conversion's LDS (the LDS is the two tiles' stages exactly) and the MFMAs per K step
// are those of a bf16 dot; the conversions are the hardware's.
TEST(DotCodegen, DequantizedSharedOperandsAreReadPerKStep) {
  for (const char* arch : {"gfx942", "gfx950"})
    for (bool bt : {true, false}) {
      SCOPED_TRACE(fmt::format("{} B{}", arch, bt ? "^T" : ""));
      auto f = std::string(arch) == "gfx942" ? gemm_tile_shared<ty::f8e4m3fnuz>(64, 64, 64, 4, 2, bt, true)
                                             : gemm_tile_shared<ty::f8e4m3fn>(64, 64, 64, 4, 2, bt, true);
      auto co = compile(arch, *f, 4);
      EXPECT_EQ(co.report.at("lds_bytes"), 2 * (64 * 64 + 64 * 64));
      EXPECT_EQ(co.report.at("spill_vgpr"), 0);
      std::string isa = amd::disassemble(co.binary);
      // Two elements a convert (v_cvt_pk_f32_fp8), none left one at a time.
      EXPECT_EQ(count(isa, "v_cvt_f32_fp8"), 0);
      // A lane's 32 rows (columns) of A (B) by 64 of K over 64 lanes: 32 + 32 elements a
      // K step, 4 steps.
      EXPECT_EQ(count(isa, "v_cvt_pk_f32_fp8"), 4 * (32 + 32) / 2);
      const char* mfma = std::string(arch) == "gfx942" ? "v_mfma_f32_32x32x8_bf16" : "v_mfma_f32_32x32x16_bf16";
      // 64x64 at 4 warps: a 32x32 tile a warp; per K step of 64: 8 (gfx942) or 4 MFMAs,
      // 4 steps (the loop of 4 constant iterations is unrolled).
      EXPECT_EQ(count(isa, mfma), (std::string(arch) == "gfx942" ? 8 : 4) * 4) << isa.substr(0, 3000);
    }
  auto f = gemm_tile_shared<ty::f8e4m3fn>(64, 64, 64, 4, 2, true, true);
  auto co = compile("sm_90", *f, 4);
  std::string ptx(co.binary.begin(), co.binary.end());
  const std::string loop = ptx_loop(ptx);
  // Two elements a convert: a warp's 32x64 of A and 64x32 of B over 32 lanes.
  EXPECT_EQ(count(loop, "cvt.rn.f16x2.e4m3x2"), (64 + 64) / 2);
  EXPECT_EQ(count(loop, "st.shared"), 0);  // nothing converted goes back to shared memory
  // A warp's 32x32 of the tile: 2 M tiles x 4 N tiles x 4 K steps of 16 an iteration.
  EXPECT_EQ(count(loop, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 2 * 4 * 4) << loop.substr(0, 2000);
}

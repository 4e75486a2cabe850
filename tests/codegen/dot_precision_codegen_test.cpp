// tl::dot's input_precision in the generated code (no GPU needed), f32 operands:
//  - sm_90: the default (tf32, Triton's) multiplies on the tensor cores in TF32 (wgmma
//    where the operands come from shared memory, mma.sync otherwise); ieee has no TF32
//    instruction at all, only f32 FMAs (Triton's FMA dot), as many as the tile needs;
//    tf32x3 three times the default's TF32 mma.sync instructions; mma_version=3 with ieee is
//    refused at the dot's line;
//  - gfx942 / gfx950: every precision is the plain f32 MFMA (v_mfma_f32_*_f32, f32
//    products), not gfx942's xf32 (which tl does not use), the same code for tf32 and ieee;
//  - the plan: an FMA dot's operand registers are those its accumulator's elements need
//    (every lane holds a[m, k] and b[k, n] for each of its c[m, n], for every k).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/dot_layout.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/traced_kernels.hpp"
#include "tl/error.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

// C[BM, BN] = A[BM, K] . B[K, BN] over k_steps steps of BK, at `p` (-1: the default
// overload). `shared`: the operands staged through one-stage shared buffers (what a
// pipelined GEMM reads: wgmma takes them there on sm_90).
std::unique_ptr<ir::Function> f32_gemm(int BM, int BN, int BK, int k_steps, int p, bool shared = false) {
  return trace("f32_gemm", [&](Trace& t) {
    auto a = ptr_arg<ty::f32>(t, "a", true);
    auto b = ptr_arg<ty::f32>(t, "b", true);
    auto c = ptr_arg<ty::f32>(t, "c", true);
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
    const int K = k_steps * BK;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    auto sa = tl::shared<ty::f32>({1, BM, BK});
    auto sb = tl::shared<ty::f32>({1, BN, BK});  // B^T: wgmma reads 32-bit B K-major only
    for (auto k : tl::range(0, K, BK)) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0));
      auto y = tl::load(b + tl::expand_dims(k + rk, 1) * BN + tl::expand_dims(rn, 0));
      if (shared) {
        sa[0].store(x), sb[0].store(tl::trans(y));
        x = sa[0].load(), y = tl::trans(sb[0].load());
      }
      acc = p < 0 ? tl::dot(x, y, acc) : tl::dot(x, y, acc, tl::input_precision(p));
    }
    tl::store(c + tl::expand_dims(rm, 1) * BN + tl::expand_dims(rn, 0), acc);
  });
}

codegen::CodeObject compile(const std::string& arch, ir::Function& f, int mma_version = 0) {
  codegen::CompileOptions o;
  o.num_warps = 4;
  o.mma_version = mma_version;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

std::string ptx_of(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

// ptxas -v's report of `ptx` for sm_90a, "" where this machine has no ptxas.
std::string ptxas_report(const std::string& ptx) {
  tltest::PtxasRun r = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
  EXPECT_TRUE(r.ok) << r.output;
  return r.ran ? r.output : "";
}

constexpr int kTf32 = int(input_precision::tf32), kIeee = int(input_precision::ieee),
              kTf32x3 = int(input_precision::tf32x3);

}  // namespace

// sm_90, 64x64x32 in 2 K steps: the default's TF32 mma.sync (registers) or wgmma (shared
// operands); ieee's f32 FMAs, 64 * 64 * 32 / 128 threads = 1024 a thread per K step;
// tf32x3's three TF32 dots.
TEST(DotPrecisionCodegen, NvidiaIeeeHasNoTf32) {
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "operands from shared memory" : "operands in registers");
    const std::string tf32_instr = shared ? "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"
                                          : "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
    std::string def = ptx_of(compile("sm_90", *f32_gemm(64, 64, 32, 2, -1, shared)));
    std::string tf32 = ptx_of(compile("sm_90", *f32_gemm(64, 64, 32, 2, kTf32, shared)));
    std::string ieee = ptx_of(compile("sm_90", *f32_gemm(64, 64, 32, 2, kIeee, shared)));
    std::string x3 = ptx_of(compile("sm_90", *f32_gemm(64, 64, 32, 2, kTf32x3, shared)));
    const int per_dot = count(def, tf32_instr);
    EXPECT_GT(per_dot, 0) << "the default is TF32 on the tensor cores\n" << def;
    EXPECT_EQ(count(tf32, tf32_instr), per_dot);
    EXPECT_EQ(count(ieee, "tf32"), 0) << "ieee takes no TF32 instruction";
    EXPECT_EQ(count(ieee, "mma"), 0);
    // The FMA dot holds a lane's 32 accumulators and its rows' and columns' operands for
    // one K step: ptxas fits it without spilling.
    std::string report = ptxas_report(ieee);
    if (!report.empty()) {
      EXPECT_NE(report.find("0 bytes spill stores"), std::string::npos) << report;
      std::printf("ptxas, ieee 64x64x32 at 4 warps: %s", report.substr(report.find("Used")).c_str());
    }
    // One f32 FMA per product a lane; LLVM may unroll the 2-step loop.
    const int fmas = count(ieee, "fma.rn.f32");
    EXPECT_GE(fmas, 1024);
    EXPECT_EQ(fmas % 1024, 0) << fmas;
    // tf32x3: three TF32 dots. Its split operands are computed, not read from shared
    // memory, so wgmma does not take them: mma.sync, as for operands in registers.
    const int x3_dots = count(x3, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    EXPECT_EQ(count(x3, "fma.rn.f32"), 0);
    if (!shared) EXPECT_EQ(x3_dots, 3 * per_dot) << "tf32x3: three TF32 dots";
    else EXPECT_GT(x3_dots, 0);
  }
}

// A pipelined K loop (tl::num_stages(3): the operands copied into shared stages with
// cp.async and read by the dot a step at a time) compiles with ieee too: FMAs, no TF32, and
// ptxas fits it.
TEST(DotPrecisionCodegen, NvidiaIeeeInAPipelinedLoop) {
  auto f = trace("f32_gemm_pipelined", [&](Trace& t) {
    auto a = ptr_arg<ty::f32>(t, "a", true);
    auto b = ptr_arg<ty::f32>(t, "b", true);
    auto c = ptr_arg<ty::f32>(t, "c", true);
    auto rm = tl::arange(0, 64), rn = tl::arange(0, 64), rk = tl::arange(0, 16);
    auto acc = tl::zeros<ty::f32>({64, 64});
    for (auto k : tl::range(0, 256, 16, tl::num_stages(3))) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * 256 + tl::expand_dims(k + rk, 0));
      auto y = tl::load(b + tl::expand_dims(k + rk, 1) * 64 + tl::expand_dims(rn, 0));
      acc = tl::dot(x, y, acc, tl::input_precision::ieee);
    }
    tl::store(c + tl::expand_dims(rm, 1) * 64 + tl::expand_dims(rn, 0), acc);
  });
  std::string ptx = ptx_of(compile("sm_90", *f));
  EXPECT_EQ(count(ptx, "tf32"), 0);
  EXPECT_GT(count(ptx, "fma.rn.f32"), 0);
  EXPECT_GT(count(ptx, "cp.async"), 0) << "the loop is pipelined";
  std::string report = ptxas_report(ptx);
  if (!report.empty()) EXPECT_NE(report.find("0 bytes spill stores"), std::string::npos) << report;
}

// wgmma has no f32 form but TF32: ieee with mma_version=3 is refused, at the dot's line.
TEST(DotPrecisionCodegen, NvidiaWgmmaRefusesIeee) {
  auto f = f32_gemm(64, 64, 32, 2, kIeee, true);
  try {
    compile("sm_90", *f, 3);
    FAIL() << "compiled";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("input_precision ieee"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dot_precision_codegen_test.cpp"), std::string::npos) << e.what();
  }
}

// AMD: f32 MFMAs multiply f32 exactly, so ieee and the default are one code object with
// the plain f32 MFMA of the chip; tf32x3 three times as many.
TEST(DotPrecisionCodegen, AmdF32MfmaForEveryPrecision) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    std::string def = amd::disassemble(compile(arch, *f32_gemm(64, 64, 32, 1, -1)).binary);
    std::string ieee = amd::disassemble(compile(arch, *f32_gemm(64, 64, 32, 1, kIeee)).binary);
    std::string x3 = amd::disassemble(compile(arch, *f32_gemm(64, 64, 32, 1, kTf32x3)).binary);
    const int n = count(def, "v_mfma_f32_32x32x2_f32") + count(def, "v_mfma_f32_16x16x4_f32");
    EXPECT_GT(n, 0) << def;
    EXPECT_EQ(count(def, "v_mfma"), n) << "only the f32 MFMA";
    EXPECT_EQ(count(def, "xf32"), 0);
    EXPECT_EQ(ieee, def);
    EXPECT_EQ(count(x3, "v_mfma"), 3 * n);
  }
}

// The FMA plan: for every lane and warp, each accumulator register's element (m, n) meets,
// in the registers the lowering reads at each K step, a[m, k] and b[k, n] with the step's k.
TEST(DotPrecisionCodegen, FmaPlanPairsEachAccumulatorWithItsRowAndColumn) {
  auto caps = codegen::capabilities_for(codegen::parse_target("sm_90"));
  struct Tile {
    int M, N, K, warps;
  };
  for (Tile t : {Tile{64, 64, 32, 4}, Tile{16, 64, 16, 4}, Tile{128, 32, 16, 8}, Tile{32, 32, 16, 1}}) {
    SCOPED_TRACE(fmt::format("{}x{}x{} at {} warps", t.M, t.N, t.K, t.warps));
    gpu::DotRequest req;
    req.ieee = true;
    std::string why;
    auto p = gpu::plan_dot(caps, DType::f32, DType::f32, t.M, t.N, t.K, t.warps, 32, req, why);
    ASSERT_TRUE(p) << why;
    EXPECT_EQ(p->instr.family, gpu::MatrixFamily::fma);
    auto at = [](const gpu::Layout& l, int reg, int lane, int warp) {
      uint32_t x = 0;
      for (size_t i = 0; i < l.reg.size(); ++i)
        if (reg >> i & 1) x ^= l.reg[i];
      for (size_t i = 0; i < l.lane.size(); ++i)
        if (lane >> i & 1) x ^= l.lane[i];
      for (size_t i = 0; i < l.warp.size(); ++i)
        if (warp >> i & 1) x ^= l.warp[i];
      return x;
    };
    int covered = 0;
    for (int w = 0; w < t.warps; ++w)
      for (int l = 0; l < 32; ++l)
        for (int ks = 0; ks < p->k_steps; ++ks)
          for (int mi = 0; mi < p->reps_m; ++mi)
            for (int ni = 0; ni < p->reps_n; ++ni) {
              uint32_t c = at(p->acc, p->acc_reg(mi, ni), l, w), a = at(p->a, p->a_reg(mi, ks), l, w),
                       b = at(p->b, p->b_reg(ni, ks), l, w);
              const uint32_t m = c / uint32_t(t.N), n = c % uint32_t(t.N);
              ASSERT_EQ(a / uint32_t(t.K), m) << "A's row";
              ASSERT_EQ(b % uint32_t(t.N), n) << "B's column";
              ASSERT_EQ(a % uint32_t(t.K), uint32_t(ks)) << "A's k is the step's";
              ASSERT_EQ(b / uint32_t(t.N), uint32_t(ks)) << "B's k is the step's";
              ++covered;
            }
    // Every product once per copy of the program's warps (none here: the tiles fill them).
    EXPECT_EQ(covered, t.M * t.N * t.K);
  }
}

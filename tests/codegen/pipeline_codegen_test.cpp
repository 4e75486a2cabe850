// Software pipelining in the generated code (no GPU needed): AMD disassembly for gfx942
// and gfx950, PTX for sm_90.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <string>

#include "bench/attention_tutorial.hpp"
#include "bench/matmul_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::count;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

// acc[c] += sum of rows k..k+7 of x[n, 256] (bf16), rows past n masked off; `shared`
// stages each block through a one-stage shared buffer first.
std::unique_ptr<ir::Function> stream_kernel(int stages, bool shared) {
  return trace("pipe_stream", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto r = tl::arange(0, 8), c = tl::arange(0, 256);
    auto acc = tl::zeros<ty::f32>({256});
    auto buf = tl::shared<ty::bf16>({1, 8, 256});
    for (auto k : tl::range(0, n, 8, tl::num_stages(stages))) {
      auto rows = k + r;
      auto m = tl::broadcast_to(tl::expand_dims(rows < n, 1), {8, 256});
      auto v = tl::load(x + tl::expand_dims(rows, 1) * 256 + tl::expand_dims(c, 0), m, 0.0);
      if (shared) {
        buf[0].store(v);
        v = buf[0].load();
      }
      acc = acc + tl::sum(v.to<ty::f32>(), 0);
    }
    tl::store(y + c, acc);
  });
}

// The pipeliner's remarks (AMD compiles also remark on their machine schedule).
std::vector<std::string> pipelined_remarks(const codegen::CodeObject& co) {
  std::vector<std::string> out;
  for (const auto& r : co.remarks)
    if (r.rfind("pipelined:", 0) == 0) out.push_back(r);
  return out;
}

// An NVIDIA loop whose two dot operands the compiler staged into shared memory (one
// pipelined loop, both loads copied there, none into registers): the loop's PTX, after
// checking that it holds 8 + 8 16-byte cp.async (two [64, 128] or [128, 64] bf16 tiles over
// 128 threads) and no global load. Empty (with the failure recorded) otherwise.
std::string staged_nvidia_loop(const codegen::CodeObject& co) {
  auto remarks = pipelined_remarks(co);
  EXPECT_EQ(remarks.size(), 1u);
  if (remarks.size() != 1) return {};
  EXPECT_NE(remarks[0].find("yes (0 loads into registers, 2 into shared memory, 2 of them staged there for tl::dot "
                            "by the compiler)"),
            std::string::npos)
      << remarks[0];
  std::string ptx(co.binary.begin(), co.binary.end());
  std::string loop = tltest::ptx_loop(ptx);
  EXPECT_FALSE(loop.empty()) << ptx;
  EXPECT_EQ(count(loop, "cp.async.cg.shared.global"), 8 + 8) << loop;
  EXPECT_EQ(count(loop, "ld.global"), 0) << loop;
  return loop;
}

codegen::CodeObject compile(const std::string& arch, ir::Function& f) {
  codegen::CompileOptions o;
  o.num_warps = 4;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

using Split = tltest::AmdLoopSplit;
Split split_at_loop(const std::string& dis) { return tltest::amd_split_at_loop(dis); }

int spills(const codegen::CodeObject& co) {
  int n = 0;
  for (const char* k : {"spill_vgpr", "spill_sgpr"})
    if (auto it = co.report.find(k); it != co.report.end()) n += int(it->second);
  return n;
}

struct AmdCopy {
  const char* arch;
  const char* copy;  // the direct-to-LDS load of one chunk
  const char* zero;  // the zero copy of a masked-off chunk
  int chunks;        // per lane per [8, 256] bf16 tile (16 bytes a lane)
};
const AmdCopy kAmd[] = {{"gfx942", "global_load_lds_dword ", "buffer_load_dword off, s", 4},
                        {"gfx950", "global_load_lds_dwordx4", "buffer_load_dwordx4 off, s", 1}};

// Through shared memory: the prologue issues the copies of N-1 stages, the loop the
// copies of one (each chunk also has its zero copy for when it is masked off), and the
// loop waits for the oldest stage only: vmcnt((N-2) * chunks), never vmcnt(0).
TEST(PipelineCodegen, AmdSharedStagesWaitForTheOldestOnly) {
  for (const AmdCopy& a : kAmd)
    for (int n : {2, 3, 4}) {
      auto f = stream_kernel(n, /*shared=*/true);
      auto co = compile(a.arch, *f);
      std::string dis = amd::disassemble(co.binary);
      Split s = split_at_loop(dis);
      SCOPED_TRACE(fmt::format("{} num_stages={}\n{}", a.arch, n, dis));
      ASSERT_FALSE(s.loop.empty());
      EXPECT_EQ(count(s.before, a.copy), (n - 1) * a.chunks);
      EXPECT_EQ(count(s.before, a.zero), (n - 1) * a.chunks);
      EXPECT_EQ(count(s.loop, a.copy), a.chunks);
      EXPECT_EQ(count(s.loop, a.zero), a.chunks);
      EXPECT_EQ(count(s.loop, fmt::format("vmcnt({})", (n - 2) * a.chunks)), 1);
      if (n > 2) EXPECT_EQ(count(s.loop, "vmcnt(0)"), 0);
      EXPECT_EQ(count(s.loop, "global_load_dword"), 0);  // nothing through registers
      EXPECT_EQ(spills(co), 0);
      auto remarks = pipelined_remarks(co);
      ASSERT_EQ(remarks.size(), 1u);
      EXPECT_NE(remarks[0].find("yes (0 loads into registers, 1 into shared memory)"), std::string::npos);
    }
}

// Into registers: N-1 loads in the prologue, and the loop unrolled N-1 times (one
// iteration per tile in flight, so no tile is copied from one register to another
// between iterations), one load each; no spills.
TEST(PipelineCodegen, AmdRegisterStagesLoadAhead) {
  for (const char* arch : {"gfx942", "gfx950"})
    for (int n : {1, 2, 3, 4}) {
      auto f = stream_kernel(n, /*shared=*/false);
      auto co = compile(arch, *f);
      std::string dis = amd::disassemble(co.binary);
      Split s = split_at_loop(dis);
      SCOPED_TRACE(fmt::format("{} num_stages={}\n{}", arch, n, dis));
      EXPECT_EQ(count(s.before, "global_load_dwordx4"), n - 1);
      EXPECT_EQ(count(s.loop, "global_load_dwordx4"), std::max(n - 1, 1));
      EXPECT_EQ(spills(co), 0);
    }
}

// PTX: cp.async for N-1 stages before the loop, one in it, cp.async.wait_group N-2.
TEST(PipelineCodegen, PtxSharedStagesWaitGroupNMinus2) {
  for (int n : {2, 3, 4}) {
    auto f = stream_kernel(n, /*shared=*/true);
    auto co = compile("sm_90", *f);
    std::string ptx(co.binary.begin(), co.binary.end());
    SCOPED_TRACE(fmt::format("num_stages={}\n{}", n, ptx));
    // 128 threads, 32 bytes of the tile each: two 16-byte copies per stage
    EXPECT_EQ(count(ptx, "cp.async.cg.shared.global"), 2 * n);
    EXPECT_EQ(count(ptx, "cp.async.commit_group"), n);
    // in the loop, and wait_group 0 once after it
    if (n > 2) EXPECT_EQ(count(ptx, fmt::format("cp.async.wait_group \t{};", n - 2)), 1);
    EXPECT_EQ(count(ptx, "cp.async.wait_group \t0;"), n == 2 ? 2 : 1);
    EXPECT_EQ(count(ptx, "ld.global"), 0);
  }
}

// A staged tile whose N stages would not fit the target's shared memory stays in
// registers: [32, 256] f32 is 32 KiB a stage, 96 KiB at num_stages 3: over gfx942's 64 KiB
// of LDS, within gfx950's 160 KiB.
TEST(PipelineCodegen, SharedStagesOverTheTargetsBudgetStayInRegisters) {
  auto kernel = [] {
    return trace("pipe_big", [&](Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", true);
      auto r = tl::arange(0, 32), c = tl::arange(0, 256);
      auto acc = tl::zeros<ty::f32>({256});
      auto buf = tl::shared<ty::f32>({1, 32, 256});
      for (auto k : tl::range(0, n, 32, tl::num_stages(3))) {
        auto rows = k + r;
        auto m = tl::broadcast_to(tl::expand_dims(rows < n, 1), {32, 256});
        buf[0].store(tl::load(x + tl::expand_dims(rows, 1) * 256 + tl::expand_dims(c, 0), m, 0.0));
        acc = acc + tl::sum(buf[0].load(), 0);
      }
      tl::store(y + c, acc);
    });
  };
  auto f = kernel();
  auto small = pipelined_remarks(compile("gfx942", *f));
  ASSERT_EQ(small.size(), 1u);
  EXPECT_NE(small[0].find("yes (1 load into registers, 0 into shared memory)"), std::string::npos) << small[0];
  auto g = kernel();
  auto big = pipelined_remarks(compile("gfx950", *g));
  ASSERT_EQ(big.size(), 1u);
  EXPECT_NE(big[0].find("yes (0 loads into registers, 1 into shared memory)"), std::string::npos) << big[0];
}

// The loop without num_stages compiles to the same code as with num_stages(1).
TEST(PipelineCodegen, OneStageIsTheUnpipelinedLoop) {
  auto f = stream_kernel(1, false);
  auto co = compile("gfx942", *f);
  EXPECT_TRUE(pipelined_remarks(co).empty());
  EXPECT_EQ(count(co.tile_ir, "global_load_to_shared"), 0);
}

}  // namespace

namespace {

codegen::CodeObject compile_tutorial(const std::string& arch, const matmul_tutorial::Config& c) {
  auto f = matmul_tutorial::trace_ir<tl::bf16>(c);
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  o.mma_version = c.mma_version;
  return codegen::compile(*f, codegen::parse_target(arch), o);
}

// Triton's tutorial matmul as its users write it (carried pointers advanced by
// `+= BLOCK_K * stride`, plain loads into tl::dot, no tl::shared): the compiler reads the
// pointers from the induction variable, stages both operands into 3 shared stages
// (cp.async, 16 bytes a copy) and the dot reads them with ldmatrix (B transposed). In the
// loop: the wait for iteration i's stage and the one barrier after it, the reads, and at
// the end of the body (3 stages: codegen/passes/pipeline_loops.cpp says why) the copies
// of iteration i+2; one wait, for all but the 2 copy groups (one an operand) of
// iteration i+1; no register loads of the operands, no
// 2-byte shared access. 128x128x64 at 4 warps: per BK, A [128, 64] and B [64, 128] are
// 16 KiB each, 8 copies a thread each; 4 K steps of 16: A 4 x4 ldmatrix each, B 4.
TEST(PipelineCodegen, NvidiaTutorialMatmulIsStagedThroughSharedMemory) {
  auto co = compile_tutorial("sm_90", {128, 128, 64, 8, 3, 4, /*mma_version=*/2});
  std::string loop = staged_nvidia_loop(co);
  ASSERT_FALSE(loop.empty());
  EXPECT_NE(pipelined_remarks(co)[0].find("num_stages=3: yes"), std::string::npos);
  std::string ptx(co.binary.begin(), co.binary.end());
  EXPECT_EQ(count(loop, "cp.async.wait_group \t2;"), 1) << loop;
  EXPECT_EQ(count(loop, "bar.sync"), 1) << loop;
  // the wait, the barrier, the reads; the copies after the last read
  EXPECT_LT(loop.find("cp.async.wait_group"), loop.find("bar.sync"));
  EXPECT_LT(loop.find("bar.sync"), loop.find("ldmatrix"));
  EXPECT_LT(loop.rfind("ldmatrix"), loop.find("cp.async.cg.shared.global"));
  EXPECT_EQ(count(loop, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 4 * 4) << loop;
  EXPECT_EQ(count(loop, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 4 * 4) << loop;
  EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16") + count(ptx, "st.shared.b16") +
                count(ptx, "st.shared.u16"),
            0);
  EXPECT_EQ(count(loop, "mma.sync.aligned.m16n8k16"), 4 * 8 * 4);
}

// Attention's K^T as the tutorial loads it (`K + kn[None, :] * D + d[:, None]`: contiguous
// along dim 0, D): on NVIDIA the pipeliner copies its transpose ([BLOCK_N, D] rows, 16 bytes a
// lane) into stages and the first dot reads tl::trans of the stage (K along its rows), V as
// it is: no operand of either dot is loaded into registers in the loop. sm_90's wgmma reads
// both through descriptors (no ldmatrix); with mma.sync (`ldmatrix` for K^T,
// `ldmatrix.trans` for V) see attention_codegen_test. On AMD K^T stays a register load
// (PipelineOptions::copy_transposed).
TEST(PipelineCodegen, NvidiaAttentionCopiesKTransposedIntoStages) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    auto f = attn::trace_ir(attn::Config{128, 64, 4, 2}, 128, causal);
    auto co = tltest::compile_for("sm_90", *f, 4);
    // K^T and V: [64, 128] bf16 each, 16 KB, 16 bytes a copy over 128 threads: 8 + 8.
    std::string loop = staged_nvidia_loop(co);
    ASSERT_FALSE(loop.empty());
    std::string ptx(co.binary.begin(), co.binary.end());
    EXPECT_GT(count(loop, "wgmma.mma_async.sync.aligned.m64n64k16"), 0) << loop;
    EXPECT_GT(count(loop, "wgmma.mma_async.sync.aligned.m64n128k16"), 0) << loop;
    EXPECT_EQ(count(loop, "ldmatrix"), 0) << loop;
    EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16"), 0);
  }
  auto g = attn::trace_ir(attn::Config{128, 64, 4, 2}, 128, false);
  auto amd = pipelined_remarks(tltest::compile_for("gfx942", *g, 4));
  ASSERT_EQ(amd.size(), 1u);
  EXPECT_NE(amd[0].find("yes (2 loads into registers, 0 into shared memory)"), std::string::npos) << amd[0];
}

// AMD at Triton 3.6's configuration for the same kernel (128x128x64, 2 stages, 4 waves):
// operands the dot reads wide from a staged buffer are staged by the compiler and copied
// straight into LDS in the loop (global_load_lds: 4 bytes a lane on gfx942, 16 on
// gfx950), issued, with 2 stages, before the iteration reads its own stage, so that they
// land while it computes. A (K-contiguous) on both; B (N-contiguous) on gfx950 too, read
// from its stage with ds_read_b64_tr_b16, while gfx942, without a transposing read, keeps
// B a load into registers converted through LDS (transposed on its way in). No 1- or
// 2-byte LDS read, no spills, and VGPRs (AGPRs included) within Triton's: 304 on gfx942,
// 382 on gfx950.
TEST(PipelineCodegen, AmdTutorialMatmulCopiesOperandsIntoLds) {
  struct Arch {
    const char* arch;
    const char* copy;
    int copies;  // per lane: each staged [128, 64] / [64, 128] bf16 tile is 16 KiB over 256 lanes
    const char* remark;
    int triton_vgprs;
  };
  for (const Arch& a :
       {Arch{"gfx942", "global_load_lds_dword ", 16,
             "yes (1 load into registers, 1 into shared memory, 1 of them staged there for tl::dot by the compiler)", 304},
        Arch{"gfx950", "global_load_lds_dwordx4", 4 + 4,
             "yes (0 loads into registers, 2 into shared memory, 2 of them staged there for tl::dot by the compiler)",
             382}}) {
    auto co = compile_tutorial(a.arch, {128, 128, 64, 8, 2, 4});
    std::string dis = amd::disassemble(co.binary);
    Split s = split_at_loop(dis);
    SCOPED_TRACE(a.arch);
    auto remarks = pipelined_remarks(co);
    ASSERT_EQ(remarks.size(), 1u);
    EXPECT_NE(remarks[0].find(std::string("num_stages=2: ") + a.remark), std::string::npos) << remarks[0];
    EXPECT_EQ(count(s.loop, a.copy), a.copies) << s.loop;
    // (In the IR: a masked copy is a branch on AMD, whose block LLVM may lay out after
    // the MFMAs, so the disassembly's order says nothing.)
    const std::string& ir = co.tile_ir;
    EXPECT_LT(ir.find("global_load_to_shared into_last_read_stage"), ir.find("shared_load")) << ir;
    EXPECT_EQ(count(dis, "ds_read_u16") + count(dis, "ds_read_i16") + count(dis, "ds_read_u8"), 0);
    EXPECT_EQ(count(dis, "ds_read_b64_tr_b16") > 0, std::string(a.arch) == "gfx950") << dis;
    EXPECT_EQ(spills(co), 0);
    EXPECT_LE(co.report.at("vgpr"), a.triton_vgprs);
  }
}

// The anchor's large tile (256x256x64, 2 stages, 8 waves): on gfx942 two stages of A
// (64 KiB) would leave no LDS for B's conversion through shared memory, so the pipeliner
// stages nothing there and the kernel compiles within the 64 KiB (it failed to, "98304
// bytes of shared memory needed", when staging ignored the conversions); gfx950's 160 KiB
// take both operands' stages, with no spills (Triton 3.6: 40 spilled VGPRs).
TEST(PipelineCodegen, AmdTutorialMatmulLeavesLdsForConversions) {
  auto co = compile_tutorial("gfx942", {256, 256, 64, 8, 2, 8});
  auto remarks = pipelined_remarks(co);
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find("num_stages=2: yes (2 loads into registers, 0 into shared memory)"), std::string::npos)
      << remarks[0];
  EXPECT_LE(co.report.at("lds_bytes"), 64 * 1024);
  auto c950 = compile_tutorial("gfx950", {256, 256, 64, 8, 2, 8});
  remarks = pipelined_remarks(c950);
  ASSERT_EQ(remarks.size(), 1u);
  EXPECT_NE(remarks[0].find("num_stages=2: yes (0 loads into registers, 2 into shared memory, 2 of them staged"),
            std::string::npos)
      << remarks[0];
  EXPECT_EQ(spills(c950), 0);
}

// The loads of an iteration ahead run under the user's own mask alone where it is
// `rows < n` with rows = k + something non-negative (the pipeliner's
// mask_bounds_iteration: then it is false wherever iteration k does not exist); else
// they are also masked by "iteration k exists", a band with it. "Non-negative" is
// AxisAnalysis's range, the one answer buffer offsets ask too (issue 39), so a stride-2
// row walk `k + 2 * arange` qualifies as `k + arange` does (the pipeliner's own
// structural test took aranges and constants only), and `k + (arange - 1)` does not.
TEST(PipelineCodegen, LoadsAheadKeepTheUsersBoundCheckAloneWhereItBoundsTheIteration) {
  auto kernel = [](int variant) {
    return trace("pipe_rows", [&](Trace& t) {
      auto x = ptr_arg<ty::bf16>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", true);
      auto r = tl::arange(0, 8), c = tl::arange(0, 256);
      auto acc = tl::zeros<ty::f32>({256});
      for (auto k : tl::range(0, n, 16, tl::num_stages(2))) {
        auto rows = variant == 0 ? k + r : variant == 1 ? k + r * 2 : k + (r - 1);
        auto m = tl::broadcast_to(tl::expand_dims(rows < n, 1), {8, 256});
        auto v = tl::load(x + tl::expand_dims(rows, 1) * 256 + tl::expand_dims(c, 0), m, 0.0);
        acc = acc + tl::sum(v.to<ty::f32>(), 0);
      }
      tl::store(y + c, acc);
    });
  };
  codegen::CompileOptions o;
  o.num_warps = 4;
  for (const char* arch : {"sm_90", "gfx942"})
    for (int variant : {0, 1, 2}) {
      SCOPED_TRACE(fmt::format("{} rows variant {}", arch, variant));
      auto f = kernel(variant);
      auto g = codegen::planned_program(*f, codegen::parse_target(arch), o);
      int bands = 0, loads = 0;
      ir::walk(g->body, [&](ir::Operation& op) {
        bands += op.op == Op::band;
        loads += op.op == Op::load;
      });
      const std::string ir = g->str();
      EXPECT_GE(loads, 2) << ir;  // (the prologue's and the loop's: it was pipelined)
      if (variant == 2) EXPECT_GT(bands, 0) << ir;
      else EXPECT_EQ(bands, 0) << ir;
    }
}

}  // namespace

// A load whose offsets pass through a pure inline asm (Triton's is_pure: results from the
// arguments alone) is computed ahead like one through any pure op; an asm with effects
// keeps the load where the user wrote it, and the remark says why.
TEST(PipelineCodegen, LoadsThroughAPureInlineAsmArePipelinedAnImpureOneIsNot) {
  for (bool pure : {true, false}) {
    auto f = trace("pipe_asm", [&](Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", true);
      auto c = tl::arange(0, 256);
      auto acc = tl::zeros<ty::f32>({256});
      for (auto k : tl::range(0, n, 1, tl::num_stages(3))) {
        // (a copy through the asm: the row's offsets as the user's asm computes them)
        auto offs = tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,r", {k * 256 + c}, pure, 1);
        acc = acc + tl::load(x + offs);
      }
      tl::store(y + c, acc);
    });
    auto co = compile("sm_90", *f);
    auto remarks = pipelined_remarks(co);
    ASSERT_EQ(remarks.size(), 1u);
    SCOPED_TRACE(remarks[0]);
    if (pure)
      EXPECT_NE(remarks[0].find("yes (1 load into registers"), std::string::npos);
    else
      EXPECT_NE(remarks[0].find("depends on the inline_asm_elementwise"), std::string::npos);
  }
}

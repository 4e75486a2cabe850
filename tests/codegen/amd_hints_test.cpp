// What the compiler hints buy on AMD (compile-only, no GPU): Triton's kernels as Triton
// writes them, with their tl.assume / tl.multiple_of lines, compiled for gfx942 and
// gfx950 and inspected in the disassembly and the code object's metadata.
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
using tltest::ptr_arg;
using tltest::scalar_arg;

struct Config {
  int bm, bn, bk, group, stages, warps;
};

// Triton's tutorial 03 with its tl.assume lines when `assumes` (traced_kernels.hpp).
std::unique_ptr<ir::Function> tutorial03(const Config& c, bool assumes, bool small = true) {
  return tltest::tutorial03_matmul_kernel(c.bm, c.bn, c.bk, c.group, assumes, small);
}

// Triton's tutorial 08 (python/tutorials/08-grouped-gemm.py, `grouped_matmul_kernel`),
// f16, 128x128x32 tiles, its sizes and leading dimensions loaded from memory. Written
// with element offsets into one buffer per operand (`a_offs[g]`) where the tutorial loads
// a pointer per problem: pointer arrays (`tl::ptr<tl::ptr<T>>`) are being added to the
// language separately; the sizes' arithmetic, which is what the hints are about, is the
// tutorial's. With `hints`, the loaded sizes, leading dimensions and offsets are
// `tl::multiple_of(.., 16)`, as a Triton user who knows them to be would write.
// `pointer_hints`: also the tutorial's own `tl::multiple_of(a_ptrs, [16, 16])` on the
// carried pointers at the top of the K loop, in Triton's in-place form.
std::unique_ptr<ir::Function> tutorial08(bool hints, int num_sm, bool pointer_hints = false) {
  return tltest::trace("grouped_matmul_kernel", [&](Trace& t) {
    auto A = ptr_arg<ty::f16>(t, "A", true), B = ptr_arg<ty::f16>(t, "B", true), C = ptr_arg<ty::f16>(t, "C", true);
    auto group_offs = ptr_arg<ty::i32>(t, "group_offs", true);  // [group_size, 3]: a, b, c element offsets
    auto group_gemm_sizes = ptr_arg<ty::i32>(t, "group_gemm_sizes", true);
    auto g_lds = ptr_arg<ty::i32>(t, "g_lds", true);
    auto group_size = scalar_arg<ty::i32>(t, "group_size", false);
    const int NUM_SM = num_sm, BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32;
    auto hint16 = [&](i32 v) { return hints ? tl::multiple_of(v, 16) : v; };
    auto tile_idx = tl::program_id(0);
    i32 last_problem_end = 0;
    for (auto g : tl::range(group_size)) {
      auto gm = hint16(tl::load(group_gemm_sizes + g * 3));
      auto gn = hint16(tl::load(group_gemm_sizes + g * 3 + 1));
      auto gk = hint16(tl::load(group_gemm_sizes + g * 3 + 2));
      auto num_m_tiles = tl::cdiv(gm, BLOCK_SIZE_M);
      auto num_n_tiles = tl::cdiv(gn, BLOCK_SIZE_N);
      auto num_tiles = num_m_tiles * num_n_tiles;
      // iterate through the tiles in the current gemm problem
      tl::while_([&] { return (tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles); }, [&] {
          auto k = gk;
          auto lda = hint16(tl::load(g_lds + g * 3));
          auto ldb = hint16(tl::load(g_lds + g * 3 + 1));
          auto ldc = hint16(tl::load(g_lds + g * 3 + 2));
          auto a_ptr = A + hint16(tl::load(group_offs + g * 3));
          auto b_ptr = B + hint16(tl::load(group_offs + g * 3 + 1));
          auto c_ptr = C + hint16(tl::load(group_offs + g * 3 + 2));
          auto tile_idx_in_gemm = tile_idx - last_problem_end;
          auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
          auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;
          auto offs_am = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_bn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto offs_k = tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + tl::expand_dims(offs_am, 1) * lda + tl::expand_dims(offs_k, 0);
          auto b_ptrs = b_ptr + tl::expand_dims(offs_k, 1) * ldb + tl::expand_dims(offs_bn, 0);
          auto accumulator = tl::zeros<ty::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
          for (auto kk : tl::range(0, tl::cdiv(k, BLOCK_SIZE_K))) {
            (void)kk;
            if (pointer_hints) {
              // hint to Triton compiler to do proper loop pipelining
              tl::multiple_of(a_ptrs, {16, 16});
              tl::multiple_of(b_ptrs, {16, 16});
            }
            auto a = tl::load(a_ptrs);
            auto b = tl::load(b_ptrs);
            accumulator = accumulator + tl::dot(a, b);
            a_ptrs += BLOCK_SIZE_K;
            b_ptrs += BLOCK_SIZE_K * ldb;
          }
          auto c = accumulator.to<ty::f16>();
          auto offs_cm = tile_m_idx * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
          auto offs_cn = tile_n_idx * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
          auto c_ptrs = c_ptr + ldc * tl::expand_dims(offs_cm, 1) + tl::expand_dims(offs_cn, 0);
          tl::store(c_ptrs, c);
          // go to the next tile by advancing NUM_SM
          tile_idx += NUM_SM;
      });
      last_problem_end = last_problem_end + num_tiles;
    }
  });
}

codegen::CodeObject compile(const std::string& arch, ir::Function& f, int warps, int stages) {
  codegen::CompileOptions o;
  o.num_warps = warps;
  o.num_stages = stages;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

int report(const codegen::CodeObject& co, const char* key) {
  auto it = co.report.find(key);
  return it == co.report.end() ? 0 : int(it->second);
}

std::string loop_of(const std::string& dis) { return tltest::amd_loop(dis); }
using tltest::largest_vmcnt;

// Tutorial 08's loaded sizes, leading dimensions and offsets hinted `tl::multiple_of(..,
// 16)`: its 128x128x32 f16 tiles load 16 bytes a lane, and gfx942 compiles it to at most
// 136 VGPRs (132 when the sizes are rounded by arithmetic, x / 16 * 16), no spills,
// occupancy 3; unhinted, every load is 2 bytes: 304 VGPRs, 131 SGPRs spilled, occupancy 1.
TEST(AmdHints, GroupedGemmSizesHintedMultiplesOf16DoNotSpill) {
  auto hinted = tutorial08(true, 304);
  auto co = compile("gfx942", *hinted, 4, 1);
  EXPECT_LE(report(co, "vgpr"), 136);
  EXPECT_EQ(report(co, "spill_vgpr") + report(co, "spill_sgpr"), 0);
  EXPECT_GE(report(co, "occupancy"), 3);
  EXPECT_NE(co.tile_ir.find("hint multiple_of=[16]"), std::string::npos) << co.tile_ir;
  auto plain = tutorial08(false, 304);
  auto without = compile("gfx942", *plain, 4, 1);
  EXPECT_GT(report(without, "vgpr") + report(without, "spill_sgpr") + report(without, "spill_vgpr"),
            report(co, "vgpr"));
}

// The tutorial's in-place `tl::multiple_of(a_ptrs, {16, 16})` on pointers the K loop
// carries and advances: the pipeliner still reads them from the induction variable
// (carried_inductions.cpp looks through the hint), so the loop is pipelined and carries
// no pointer tile.
TEST(AmdHints, InPlacePointerHintsKeepTheKLoopPipelined) {
  auto f = tutorial08(true, 304, /*pointer_hints=*/true);
  auto co = compile("gfx942", *f, 4, 2);
  bool pipelined = false;
  for (auto& r : co.remarks) pipelined |= r.find("pipelined:") == 0 && r.find(": yes") != std::string::npos;
  EXPECT_TRUE(pipelined) << fmt::format("{}", fmt::join(co.remarks, "\n"));
  // (the loop's two, and the prologue's copies for the first iteration's loads)
  EXPECT_EQ(count(co.tile_ir, "hint multiple_of=[16,16]"), 4) << co.tile_ir;
  EXPECT_EQ(report(co, "spill_vgpr") + report(co, "spill_sgpr"), 0);
  // no loop carries a pointer tile: `for ... ^(..., %x: tile<128x32xptr<f16>> ...`
  std::regex loop_args(R"(= for [^\n]*\^\(([^)]*)\))");
  int loops = 0;
  for (auto it = std::sregex_iterator(co.tile_ir.begin(), co.tile_ir.end(), loop_args); it != std::sregex_iterator(); ++it) {
    ++loops;
    EXPECT_EQ((*it)[1].str().find("ptr"), std::string::npos) << (*it)[0].str();
  }
  EXPECT_GE(loops, 2) << co.tile_ir;
}

// Triton's tutorial 03 with its tl.assume lines, at the configuration Triton 3.6 picks on
// AMD (128x128x64, 2 stages, 4 waves): `tl::assume(pid_n >= 0)` makes `(pid_n * BLOCK_N +
// arange) % N` non-negative, so it stays contiguous over runs of N's divisibility (16, the
// launch's specialization), and the loads of B are 16 bytes a lane where without the
// assumes they are 2 (a branch and a global_load_ushort each). With the strides assumed
// positive every offset is a non-negative i32, and with the matrices passed as tl::buffers
// under 2 GiB (Triton's `tt.pointer_range = 32`) the loop's dot-operand loads become
// buffer loads (convert_to_buffer_ops.cpp):
// - gfx942 stages A by direct copies and loads B into registers: B's loads are
//   buffer_load_dwordx4 (masked by offset: no exec branch, no `other` written first),
//   issued before the wait for the iteration's copies, which then leaves them in flight:
//   `s_waitcnt vmcnt(4)` where it waited vmcnt(0). 252 VGPRs without the assumes, 193
//   with them and global loads, 190 now.
// - gfx950 stages both operands by direct copies, now buffer loads into LDS (no branch per
//   masked chunk): 256 VGPRs without the assumes, 126 with global copies, 114 now (Triton
//   3.6: 176 VGPRs and 64 AGPRs, loading both into registers). With 2 stages every copy in
//   flight at the loop's wait belongs to the stage about to be read, so it waits vmcnt(0);
//   with 3 (below) one iteration's copies stay in flight.
// The assumes are not passed to LLVM on AMD (lower_kernel.cpp: that cost 55 VGPRs at
// 128x256x32).
TEST(AmdHints, TutorialMatmulAssumesMakeItsLoadsBufferLoads) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    Config c{128, 128, 64, 8, 2, 4};
    SCOPED_TRACE(arch);
    const bool gfx942 = std::string(arch) == "gfx942";
    auto with = tutorial03(c, true), plain = tutorial03(c, false), raw = tutorial03(c, true, /*small=*/false);
    auto a = compile(arch, *with, c.warps, c.stages), b = compile(arch, *plain, c.warps, c.stages);
    auto r = compile(arch, *raw, c.warps, c.stages);
    EXPECT_EQ(count(a.tile_ir, "assume"), 8) << a.tile_ir;
    EXPECT_LE(report(a, "vgpr"), gfx942 ? 190 : 114);
    EXPECT_LT(report(a, "vgpr"), report(b, "vgpr"));
    EXPECT_EQ(report(a, "spill_vgpr") + report(a, "spill_sgpr"), 0);
    std::string with_dis = amd::disassemble(a.binary), plain_dis = amd::disassemble(b.binary);
    std::string loop = loop_of(with_dis), raw_loop = loop_of(amd::disassemble(r.binary));
    EXPECT_EQ(count(with_dis, "global_load_ushort"), 0);
    EXPECT_GT(count(plain_dis, "global_load_ushort"), 0);
    if (gfx942) {
      // (A's copies into LDS stay global_load_lds_dword: gfx942 has no 16-byte copy
      // into LDS, and its dword buffer copies go through the lowering's own rule)
      EXPECT_EQ(count(loop, "global_load_dwordx4"), 0) << loop;
      EXPECT_EQ(count(a.tile_ir, "= load buffer"), 1) << a.tile_ir;  // B's, in the loop
      EXPECT_EQ(count(loop, "buffer_load_dwordx4"), 4) << loop;
      EXPECT_GT(largest_vmcnt(loop), 0) << loop;
      // Passed as raw pointers, whose allocations' sizes are unknown: global loads.
      EXPECT_GT(count(raw_loop, "global_load_dwordx4"), 0) << raw_loop;
      EXPECT_EQ(largest_vmcnt(raw_loop), 0) << raw_loop;
    } else {
      EXPECT_EQ(count(a.tile_ir, "global_load_to_shared into_last_read_stage buffer"), 2) << a.tile_ir;
      EXPECT_EQ(count(loop, "buffer_load_dwordx4"), 8) << loop;  // (4 chunks of A, 4 of B, into LDS)
      EXPECT_EQ(count(loop, " lds "), 8) << loop;
      EXPECT_EQ(count(loop, "global_load"), 0) << loop;
      EXPECT_GT(count(raw_loop, "global_load_lds_dwordx4"), 0) << raw_loop;
      auto again = tutorial03(c, true);
      auto three = compile(arch, *again, c.warps, 3);
      EXPECT_GT(largest_vmcnt(loop_of(amd::disassemble(three.binary))), 0);
    }
    if (getenv("AMD_HINTS_PRINT"))
      fmt::print("{}: vgpr {} (without assumes {}, raw pointers {}) loop: buffer_load {} global_load {} vmcnt max {}\n",
                 arch, report(a, "vgpr"), report(b, "vgpr"), report(r, "vgpr"), count(loop, "buffer_load"),
                 count(loop, "global_load"), largest_vmcnt(loop));
  }
}

}  // namespace

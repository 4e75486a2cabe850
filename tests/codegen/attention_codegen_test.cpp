// Chained dots as Triton users write them: the tutorial-06 attention forward
// (bench/attention_tutorial.hpp) planned and compiled for sm_90, gfx942 and gfx950 (no GPU
// needed). What the GPU middle end must decide (codegen/gpu/plan_dots.cpp): both dots put
// every warp along M, the first dot's accumulator layout is the second's A-operand layout
// (P goes from the first dot to the second in registers: no convert_layout, no shared
// memory on its way), and the row max and row sum reduce within a warp (lane butterflies,
// no shared memory, no barrier). Checked on the planned IR and on the PTX / disassembly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <string>
#include <unordered_set>

#include "bench/attention_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"

namespace {

using namespace tl;
using tltest::count;

struct Case {
  const char* arch;
  attn::Config config;
  int D;
  bool causal;
};

std::string name(const Case& c) {
  return fmt::format("{} {}x{} w{} s{} D={}{}", c.arch, c.config.block_m, c.config.block_n, c.config.num_warps,
                     c.config.num_stages, c.D, c.causal ? " causal" : "");
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* arch : {"sm_90", "gfx942", "gfx950"})
    for (int D : {64, 128})
      for (bool causal : {false, true}) out.push_back({arch, attn::Config{128, 64, 4, 2}, D, causal});
  // Triton's other tutorial configurations: 8 warps, and a 64-row block.
  out.push_back({"sm_90", attn::Config{128, 128, 8, 2}, 128, false});
  out.push_back({"gfx942", attn::Config{128, 64, 8, 2}, 128, false});
  out.push_back({"gfx950", attn::Config{128, 64, 8, 2}, 128, false});
  out.push_back({"sm_90", attn::Config{64, 64, 4, 2}, 64, false});
  out.push_back({"gfx942", attn::Config{64, 64, 4, 2}, 64, true});
  return out;
}

codegen::CompileOptions options(const attn::Config& c, int mma_version = 0) {
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  o.mma_version = mma_version;
  return o;
}

std::vector<ir::Operation*> ops_of(ir::Block& b, Op kind) {
  std::vector<ir::Operation*> out;
  ir::walk(b, [&](ir::Operation& op) {
    if (op.op == kind) out.push_back(&op);
  });
  return out;
}

// The ops on the paths from `from`'s result (the dot that starts the chain) to `v`, through
// operands of v's shape; true when `v` is computed from it.
bool chain_ops(const ir::Value* v, const ir::Operation* from, std::unordered_set<const ir::Operation*>& out) {
  const ir::Operation* d = v->def;
  if (!d) return false;
  if (d == from || out.count(d)) return true;
  bool reaches = false;
  for (const ir::Value* x : d->operands)
    if (x->type.shape == v->type.shape) reaches |= chain_ops(x, from, out);
  if (reaches) out.insert(d);
  return reaches;
}

TEST(AttentionCodegen, ChainedDotsKeepPInRegistersWithEveryWarpAlongM) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name(c));
    auto f = attn::trace_ir(c.config, c.D, c.causal);
    auto g = codegen::planned_program(*f, codegen::parse_target(c.arch), options(c.config));
    auto loops = ops_of(g->body, Op::for_);
    ASSERT_EQ(loops.size(), 1u) << g->str();
    ir::Block& body = *loops[0]->regions[0];
    auto dots = ops_of(body, Op::dot);
    ASSERT_EQ(dots.size(), 2u) << g->str();
    ir::Operation *qk = dots[0], *pv = dots[1];
    // Both dots: every warp along M (ints: kpack, warps_m, warps_n).
    for (ir::Operation* d : dots) {
      ASSERT_GE(d->ints.size(), 3u);
      EXPECT_EQ(d->ints[1], c.config.num_warps) << d->str;
      EXPECT_EQ(d->ints[2], 1) << d->str;
    }
    // P: from the first dot's result to the second's A operand, elementwise ops only (the
    // scale, the mask, exp2, the cast to bf16), no conversion and no shared memory, and
    // the second dot reads it in the first's accumulator layout.
    std::unordered_set<const ir::Operation*> p_ops;
    ASSERT_TRUE(chain_ops(pv->operands[0], qk, p_ops));
    ASSERT_GE(p_ops.size(), 3u) << "scale, mask, exp2, cast";
    for (const ir::Operation* op : p_ops) {
      EXPECT_NE(op->op, Op::convert_layout) << g->str();
      EXPECT_TRUE(ir::has_trait(op->op, ir::kPure) && ir::has_trait(op->op, ir::kElementwise))
          << op_name(op->op) << "\n" << g->str();
    }
    EXPECT_EQ(*pv->operands[0]->layout, *qk->result()->layout) << g->str();
    // Between the two dots: no shared-memory store and no barrier, and every conversion
    // of the softmax's values stays in registers. The one shared-memory access allowed
    // there is the second dot's own B operand: V read a K step at a time (staged where
    // its conversion would crowd the registers, NVIDIA), or V's conversion (AMD), whose
    // writes wait at a barrier for the first dot's reads of K^T's (the scratch is one).
    const ir::Value* v_operand = pv->operands[1];
    const ir::Value* v_read = v_operand->def && v_operand->def->op == Op::trans ? v_operand->def->operands[0] : v_operand;
    bool between = false;
    for (size_t i = 0; i < body.ops.size(); ++i) {
      const auto& op = body.ops[i];
      if (op.get() == qk) between = true;
      if (op.get() == pv) break;
      if (!between) continue;
      // (V's conversion read by the dot only writes: the barrier for its writes is right
      // before the dot)
      const bool v_read_by_dot = v_operand->def && v_operand->def->op == Op::convert_layout &&
                                 (v_operand->def->i1 & ir::kConversionReadByDot);
      const bool before_v_conversion = i + 1 < body.ops.size() &&
                                       ((body.ops[i + 1]->op == Op::convert_layout &&
                                         body.ops[i + 1]->result() == v_operand) ||
                                        (v_read_by_dot && body.ops[i + 1].get() == pv));
      EXPECT_TRUE(op->op != Op::shared_store && op->op != Op::global_load_to_shared &&
                  (op->op != Op::barrier || before_v_conversion))
          << op_name(op->op) << "\n" << g->str();
      if (op->op == Op::shared_load)
        EXPECT_TRUE(op->result() == v_read && op->i1 == ir::kReadByDot) << g->str();
      if (op->op == Op::convert_layout && op->result() != v_operand)
        EXPECT_EQ(ir::ConvertPath(op->i0), ir::ConvertPath::registers) << g->str();
    }
    // The row reductions (max and sum over the keys) cross no warp: no warp-id bit of the
    // scores' layout moves along the key axis (flat-index bits below log2 BLOCK_N).
    auto reduces = ops_of(body, Op::reduce);
    ASSERT_EQ(reduces.size(), 2u);
    for (ir::Operation* r : reduces) {
      EXPECT_EQ(r->i0, 1);
      for (uint32_t w : r->operands[0]->layout->warp) EXPECT_EQ(w & uint32_t(c.config.block_n - 1), 0u) << g->str();
    }
  }
}

// The same in the code: the row reductions are lane butterflies (NVIDIA: shfl.sync.bfly,
// no indexed shuffle; AMD: one cross-lane step per reduction across the wave's halves),
// and the loop holds only the barriers of the operands' trips through shared memory,
// none for P or the softmax.
TEST(AttentionCodegen, SoftmaxStaysInsideTheWarp) {
  for (const Case& c : cases()) {
    if (c.config.num_stages != 2 || c.config.block_m != 128 || c.config.num_warps != 4) continue;
    SCOPED_TRACE(name(c));
    auto f = attn::trace_ir(c.config, c.D, c.causal);
    // sm_90 here on mma.sync (mma_version 2, what Ampere and Ada run); its wgmma code is
    // WarpgroupDotsKeepPInRegisters' below.
    auto co = codegen::compile(*f, codegen::parse_target(c.arch), options(c.config, 2));
    if (std::string(c.arch) == "sm_90") {
      std::string ptx(co.binary.begin(), co.binary.end());
      EXPECT_EQ(count(ptx, "shfl.sync.idx"), 0) << ptx;
      // Each thread holds 2 x 2 rows (two M repetitions of m16, two halves of a
      // fragment); each row's max and sum take 2 butterfly steps over the 4 lanes of a
      // row group.
      EXPECT_EQ(count(ptx, "shfl.sync.bfly"), 2 * 2 * 2 * 2) << ptx;
      // The operands that would crowd the registers (Q at D = 128, K^T and V) are staged
      // in shared memory and read by their dots with ldmatrix (V transposed), none two
      // bytes at a time: a barrier for Q before the loop, then one after the previous
      // iteration's reads and one after this iteration's stores.
      EXPECT_EQ(co.report["conversions_shared"] + count(co.tile_ir, " read_by_dot"), 3) << co.tile_ir;
      EXPECT_GT(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 0) << ptx;
      EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16"), 0) << ptx;
      EXPECT_LE(count(ptx, "bar.sync"), 3) << ptx;
      EXPECT_GT(count(ptx, "mma.sync.aligned.m16n8k16"), 0);
    } else {
      // Conversions left: Q once (before the loop), K^T and V each iteration, through
      // shared memory (nothing crowds AMD's 512 registers); the rest (a row statistic
      // made a column) in registers. On gfx950 V is no conversion: the pipeliner stages
      // it (copied into LDS, read with ds_read_b64_tr_b16).
      const bool v_staged = std::string(c.arch) == "gfx950";
      EXPECT_EQ(co.report["spill_vgpr"], 0);
      EXPECT_EQ(co.report["conversions_shared"], v_staged ? 2 : 3) << co.tile_ir;
      if (v_staged) EXPECT_NE(co.remarks[0].find("1 of them staged there for tl::dot by the compiler"), std::string::npos);
      EXPECT_EQ(co.report["conversions_warp_shuffle"], 0) << co.tile_ir;
      std::string dis = amd::disassemble(co.binary);
      // v_mfma 32x32: the transposed accumulator's row is lane % 32 and its columns are
      // split over the two halves of the wave: one cross-lane step a reduction
      // (ds_bpermute on gfx942, v_permlane32_swap on gfx950).
      EXPECT_EQ(count(dis, "ds_bpermute_b32") + count(dis, "v_permlane32_swap"), 2) << dis;
      EXPECT_LE(count(dis, "s_barrier"), 5) << dis;
      EXPECT_GT(count(dis, "v_mfma_f32_32x32"), 0) << dis;
    }
  }
}

// sm_90 by default: both dots on wgmma (codegen/gpu/warpgroup_dot.hpp), Q and P from
// registers (the register-A form: `{...}, {a0, a1, a2, a3}, descB`), K^T and V through
// descriptors from their stages (no ldmatrix, no 2-byte shared reads); P never converts
// (the first dot's accumulator is the second's A layout), the row statistics are lane
// butterflies as on mma.sync (each thread 2 x 2 rows), and each dot
// waits for its group (A from registers is not left in flight).
TEST(AttentionCodegen, WarpgroupDotsKeepPInRegisters) {
  for (int D : {64, 128})
    for (bool causal : {false, true}) {
      attn::Config c{128, 64, 4, 2};
      SCOPED_TRACE(fmt::format("D={}{}", D, causal ? " causal" : ""));
      auto f = attn::trace_ir(c, D, causal);
      auto co = codegen::compile(*f, codegen::parse_target("sm_90"), options(c));
      std::string ptx(co.binary.begin(), co.binary.end());
      EXPECT_NE(ptx.find(".target sm_90a"), std::string::npos);
      EXPECT_EQ(count(ptx, "mma.sync"), 0) << ptx;
      // both loops (the unmasked and the masked key blocks): Q K^T at m64n64, P V at m64nD
      const std::string qk = "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16";
      const std::string pv = fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", D);
      EXPECT_GT(count(ptx, qk), 0);
      EXPECT_GT(count(ptx, pv), 0);
      EXPECT_GT(count(ptx, "}, {"), 0) << "no wgmma with A from registers";
      EXPECT_EQ(count(ptx, "ldmatrix"), 0);
      EXPECT_EQ(count(ptx, "ld.shared.b16") + count(ptx, "ld.shared.u16"), 0);
      EXPECT_EQ(count(ptx, "shfl.sync.idx"), 0);
      EXPECT_EQ(count(ptx, "shfl.sync.bfly"), 2 * 2 * 2 * 2);  // as on mma.sync
      EXPECT_EQ(count(ptx, "wgmma.wait_group.sync.aligned 1;"), 0);
      // Q converted once, before the loops (D = 64), or staged in a buffer of its own and
      // read through a descriptor too (D = 128, where it would crowd the registers);
      // nothing converts in the loops but row statistics made columns (registers)
      EXPECT_EQ(co.report["conversions_shared"], D == 64 ? 1 : 0) << co.tile_ir;
      bool chain = false;
      for (const auto& r : co.remarks) chain |= r.find("chained dots") != std::string::npos && r.find("wgmma") != std::string::npos &&
                                                r.find("P stays in registers") != std::string::npos;
      EXPECT_TRUE(chain) << fmt::format("{}", fmt::join(co.remarks, "\n"));
    }
}

// AMD reads the dots' operands wide (codegen/gpu/plan_shared_encodings.cpp): no LDS read
// of one or two bytes anywhere; on gfx950, V (N-contiguous, the second dot's B) by
// ds_read_b64_tr_b16, one a lane for every 4 of its elements; on gfx942, which has no
// transposing read, V is transposed on its way in (2-byte writes, at most one per element
// a thread holds of the loaded tile) and read 8 bytes at a time. Registers within Triton
// 3.6's for the anchor's configurations (VGPRs, AGPRs included: gfx942 312 at 4 waves;
// gfx950 348 at 4 waves, 202 at 8).
TEST(AttentionCodegen, AmdOperandsAreReadWide) {
  for (const Case& c : cases()) {
    if (std::string(c.arch) == "sm_90") continue;
    SCOPED_TRACE(name(c));
    auto f = attn::trace_ir(c.config, c.D, c.causal);
    auto co = codegen::compile(*f, codegen::parse_target(c.arch), options(c.config));
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(count(dis, "ds_read_u8") + count(dis, "ds_read_i8") + count(dis, "ds_read_u16") +
                  count(dis, "ds_read_i16"),
              0)
        << dis;
    EXPECT_EQ(co.report["spill_vgpr"], 0);
    const int threads = 64 * c.config.num_warps;
    const int v_per_lane = c.config.block_n * c.D / 64;  // every warp reads all of V
    if (std::string(c.arch) == "gfx950") {
      EXPECT_EQ(count(dis, "ds_read_b64_tr_b16"), v_per_lane / 4) << dis;
      EXPECT_EQ(count(dis, "ds_write_b16") + count(dis, "ds_write_b8"), 0) << dis;
    } else {
      EXPECT_EQ(count(dis, "ds_read_b64_tr_b16"), 0) << dis;
      EXPECT_LE(count(dis, "ds_write_b16"), c.config.block_n * c.D / threads) << dis;
    }
    const bool anchor = c.config.block_m == 128 && c.config.block_n == 64 && c.D == 128 && !c.causal;
    if (anchor && c.config.num_warps == 4)
      EXPECT_LE(co.report["vgpr"], std::string(c.arch) == "gfx950" ? 348 : 312);
    if (anchor && c.config.num_warps == 8 && std::string(c.arch) == "gfx950") EXPECT_LE(co.report["vgpr"], 202);
  }
}

// The chain is a remark in the compile report, and TL_DUMP_IR's text shows the plan:
// the dots' instruction and warps, the conversions and their paths.
TEST(AttentionCodegen, ReportAndIrShowThePlan) {
  attn::Config c{128, 64, 4, 2};
  for (const char* arch : {"sm_90", "gfx942", "gfx950"}) {
    auto f = attn::trace_ir(c, 128, false);
    auto co = codegen::compile(*f, codegen::parse_target(arch), options(c));
    bool chain = false;
    for (const auto& r : co.remarks)
      chain |= r.find("chained dots") != std::string::npos && r.find("P stays in registers") != std::string::npos;
    EXPECT_TRUE(chain) << arch << ": " << fmt::format("{}", fmt::join(co.remarks, "\n"));
    EXPECT_NE(co.tile_ir.find("warps=4x1"), std::string::npos) << co.tile_ir;
    // AMD converts K^T and V through shared memory; NVIDIA, where they would crowd the
    // registers, stages them and its dots read them from there.
    EXPECT_NE(co.tile_ir.find(std::string(arch) == "sm_90" ? " read_by_dot" : "convert_layout path=shared"),
              std::string::npos)
        << co.tile_ir;
    EXPECT_NE(co.tile_ir.find("convert_layout path=registers"), std::string::npos) << co.tile_ir;
    EXPECT_NE(co.tile_ir.find("#l0 = shape="), std::string::npos) << co.tile_ir;
  }
  // gfx950's k = 16 instruction holds 8 consecutive k a lane: the second dot's K is
  // renumbered to the accumulator's columns (recorded after warps_n in the dot's ints).
  auto f = attn::trace_ir(c, 128, false);
  auto g = codegen::planned_program(*f, codegen::parse_target("gfx950"), options(c));
  auto dots = ops_of(g->body, Op::dot);
  ASSERT_EQ(dots.size(), 2u);
  EXPECT_EQ(dots[0]->ints.size(), 3u);
  EXPECT_EQ(dots[1]->ints.size(), 3u + 6u) << "one image per bit of K = 64";
}

}  // namespace

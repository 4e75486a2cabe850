// insert_layout_conversions.cpp's loop-invariant conversions on Triton's tutorial attention as
// transcribed (bench/attention_tutorial.hpp): Q is loaded before the K/V loop and converted
// to the A-operand layout of Q @ K^T; that conversion runs once, in front of each loop (the
// causal forward has two), never inside one, on sm_90, gfx942 and gfx950. On gfx942, where
// the conversion goes through shared memory, the loop loses its exchange and the two
// barriers around it: the code's s_barrier count is the IR's plus one a remaining exchange.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "bench/attention_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;

// The conversions inside `loop` of a tile computed before it, but those a dot reads from
// their scratch (which must stay where the dot is).
int invariant_conversions_inside(ir::Operation& loop) {
  int n = 0;
  for (auto& r : loop.regions)
    ir::walk(*r, [&](ir::Operation& op) {
      if (op.op == Op::convert_layout && !ir::defined_inside(op.operands[0], &loop) &&
          !(op.i1 & ir::kConversionReadByDot))
        ++n;
    });
  return n;
}

struct Counts {
  int loops = 0, invariant_inside = 0, barriers = 0, exchanges = 0;
};

void count_in(ir::Block& b, Counts& c) {
  for (auto& op : b.ops) {
    if (op->op == Op::for_) ++c.loops, c.invariant_inside += invariant_conversions_inside(*op);
    if (op->op == Op::barrier) ++c.barriers;
    // (a conversion read by its dot only writes: its barrier is one of the IR's)
    else if (op->smem && op->op != Op::shared_alloc && !(op->op == Op::convert_layout && (op->i1 & ir::kConversionReadByDot)))
      ++c.exchanges;
    for (auto& r : op->regions) count_in(*r, c);
  }
}

TEST(LoopInvariantConversions, TutorialAttentionConvertsQBeforeItsLoops) {
  for (const char* target : {"sm_90", "gfx942", "gfx950"})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("{} causal={}", target, causal));
      const attn::Config cfg{32, 32, 4, 3};  // (bench/amd_quality's causal case: 32x32, D=64, 3 stages)
      const auto t = codegen::parse_target(target);
      const auto o = tltest::launch_options(cfg.num_warps, cfg.num_stages);
      auto f = attn::trace_ir(cfg, 64, causal);
      auto g = codegen::planned_program(*f, t, o);
      Counts c;
      count_in(g->body, c);
      EXPECT_GE(c.loops, 1) << g->str();
      EXPECT_EQ(c.invariant_inside, 0) << g->str();
      if (std::string(target) != "gfx942") continue;
      auto again = attn::trace_ir(cfg, 64, causal);
      const std::string isa = amd::disassemble(codegen::compile(*again, t, o).binary);
      EXPECT_EQ(tltest::count(isa, "s_barrier"), c.barriers + c.exchanges) << g->str();
      // (12 with Q converted in the loop: 6 exchanges and 6 barriers in the IR)
      EXPECT_LE(tltest::count(isa, "s_barrier"), 9) << g->str();
    }
}

}  // namespace

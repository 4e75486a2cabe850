// The layout-assignment pass (codegen/gpu/assign_layouts.cpp): values get layouts of
// their own, not their shape's, and loop-carried values take the layout their update
// yields; checked on the plan the pass records in the IR and on what the AMD and NVIDIA
// code then does.
#include <gtest/gtest.h>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "codegen/passes/passes.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using tltest::compile_for;
using tltest::count;

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx950"};

std::vector<const ir::Operation*> ops_of(ir::Function& f, Op kind) {
  std::vector<const ir::Operation*> out;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == kind) out.push_back(&op);
  });
  return out;
}

// Runs layout assignment as the GPU pipeline does; the layouts are then the values' own.
void plan_for(ir::Function& f, int wave, int warps) {
  passes::eliminate_common_subexpressions(f);
  passes::eliminate_dead_code(f);
  static const gpu::TargetCapabilities caps = codegen::capabilities_for(codegen::parse_target("gfx942"));
  gpu::assign_layouts(f, passes::AxisAnalysis(f), gpu::PlanTarget{&caps, wave, warps});
}

const gpu::Layout& layout_of(const ir::Value* v) {
  EXPECT_TRUE(v->layout.has_value());
  return *v->layout;
}

TEST(LayoutPlan, SameShapeLoadsCoalescedAlongDifferentDimsKeepTheirOwnLayouts) {
  for (int wave : {32, 64}) {
    auto f = tltest::row_plus_column_major_kernel();
    plan_for(*f, wave, 4);
    auto loads = ops_of(*f, Op::load);
    ASSERT_EQ(loads.size(), 2u);
    const gpu::Layout& a = layout_of(loads[0]->result());
    const gpu::Layout& b = layout_of(loads[1]->result());
    EXPECT_EQ(a.shape, b.shape);
    EXPECT_NE(a, b) << "one [64, 64] shape, two layouts";
    // Each is 4 consecutive elements a thread along its own contiguous dim.
    EXPECT_EQ(a.reg[0], 1u) << a.str();          // dim 1: flat-index bit 0
    EXPECT_EQ(b.reg[0], 1u << 6) << b.str();     // dim 0: flat-index bit 6
    EXPECT_EQ(gpu::contiguous_run(a, 1), 4);
    EXPECT_EQ(gpu::contiguous_run(b, 1u << 6), 4);
  }
}

// Both loads 128-bit wide; the sum is made in a's layout, and b is converted to it.
TEST(LayoutPlan, ColumnMajorLoadIsVectorizedOnAmdAndNvidia) {
  for (const char* arch : kArchs) {
    auto f = tltest::row_plus_column_major_kernel();
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    // 2 tiles x 4096 f32 over 256 threads = 16 elements = 4 dwordx4 each
    EXPECT_EQ(count(dis, "global_load_dwordx4"), 8) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load_dword "), 0) << arch;
    EXPECT_EQ(count(dis, "global_store_dwordx4"), 4) << arch;
  }
  auto f = tltest::row_plus_column_major_kernel();
  std::string p = [&] {
    auto co = compile_for("sm_90", *f, 4);
    return std::string(co.binary.begin(), co.binary.end());
  }();
  // 2 tiles x 4096 f32 over 128 threads = 32 elements = 8 v4 loads each
  EXPECT_EQ(count(p, "ld.global.v4"), 16) << p;
  EXPECT_EQ(count(p, "st.global.v4"), 8) << p;
}

TEST(LayoutPlan, LoopCarriedAccumulatorTakesTheLayoutItsUpdateYields) {
  for (int wave : {32, 64}) {
    auto f = tltest::reduction_accumulator_kernel();
    plan_for(*f, wave, 4);
    auto loops = ops_of(*f, Op::for_);
    auto reduces = ops_of(*f, Op::reduce);
    ASSERT_EQ(loops.size(), 1u);
    ASSERT_EQ(reduces.size(), 1u);
    const gpu::Layout& slice = layout_of(reduces[0]->result());
    const ir::Value* acc_arg = loops[0]->regions[0]->args[1].get();
    EXPECT_EQ(layout_of(acc_arg), slice) << "carried: " << layout_of(acc_arg).str() << "\nreduce: " << slice.str();
    EXPECT_EQ(layout_of(loops[0]->result()), slice);
    // The zeros it starts from are rematerialized in the carried layout, not converted.
    const ir::Value* init = loops[0]->operands[3];
    EXPECT_TRUE(init->rematerialized) << f->str();
    EXPECT_NE(layout_of(init), slice) << "the zeros' own (default) layout would have been another";
  }
}

// With the accumulator in the slice layout nothing converts: no shared memory, no
// barrier, in the loop or after it.
TEST(LayoutPlan, ReductionAccumulatorNeedsNoSharedMemory) {
  for (const char* arch : kArchs) {
    auto f = tltest::reduction_accumulator_kernel();
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(count(dis, "s_barrier"), 0) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "ds_write"), 0) << arch;
    EXPECT_EQ(co.shared_bytes, 0) << arch;
  }
  auto f = tltest::reduction_accumulator_kernel();
  auto co = compile_for("sm_90", *f, 4);
  std::string p(co.binary.begin(), co.binary.end());
  EXPECT_EQ(count(p, "bar.sync"), 0) << p;
  EXPECT_EQ(co.shared_bytes, 0);
}

// The IR prints every value's layout as an alias (`tile<32xf32> #l1`) and the aliases
// once after the function; rematerialized values say so.
TEST(LayoutPlan, IrPrintsEveryAssignedLayout) {
  auto f = tltest::reduction_accumulator_kernel();
  plan_for(*f, 64, 4);
  std::string s = f->str();
  auto reduces = ops_of(*f, Op::reduce);
  ASSERT_EQ(reduces.size(), 1u);
  EXPECT_NE(s.find("= shape=[32] reg="), std::string::npos) << s;
  EXPECT_NE(s.find("= shape=[32,64] reg="), std::string::npos) << s;
  EXPECT_NE(s.find("reduce sum axis=1"), std::string::npos) << s;
  EXPECT_NE(s.find("tile<32xf32> #l"), std::string::npos) << s;
  EXPECT_NE(s.find("#remat"), std::string::npos) << s;
}

// Every change of layout is an explicit convert_layout in the planned IR, with the path
// a pass chose, and the compile report counts them: the sum of a row-major and a
// column-major [64, 64] load works in the first's layout, and the second converts once,
// through shared memory (its transpose crosses warps).
TEST(LayoutPlan, ConversionsAreOpsWithAPlannedPath) {
  for (const char* arch : {"gfx942", "sm_90"}) {
    auto f = tltest::row_plus_column_major_kernel();
    codegen::CompileOptions o;
    o.num_warps = 4;
    auto g = codegen::planned_program(*f, codegen::parse_target(arch), o);
    auto converts = ops_of(*g, Op::convert_layout);
    ASSERT_EQ(converts.size(), 1u) << g->str();
    const ir::Operation* c = converts[0];
    EXPECT_EQ(ir::ConvertPath(c->i0), ir::ConvertPath::shared) << g->str();
    auto loads = ops_of(*g, Op::load);
    ASSERT_EQ(loads.size(), 2u);
    EXPECT_EQ(c->operands[0], loads[1]->result()) << "the column-major tile converts";
    EXPECT_EQ(*c->result()->layout, *loads[0]->result()->layout) << "to the row-major tile's layout";
    EXPECT_NE(g->str().find("convert_layout path=shared"), std::string::npos) << g->str();
    auto f2 = tltest::row_plus_column_major_kernel();
    auto co = compile_for(arch, *f2, 4);
    EXPECT_EQ(co.report["conversions_shared"], 1) << arch;
    EXPECT_EQ(co.report["conversions_registers"], 0) << arch;
    EXPECT_EQ(co.report["conversions_warp_shuffle"], 0) << arch;
  }
}

// The traced function is not changed by a GPU compile (the middle end plans on a copy), so
// it compiles for another target afterwards with that target's plan.
TEST(LayoutPlan, TracedFunctionStaysTargetIndependent) {
  auto f = tltest::row_plus_column_major_kernel();
  compile_for("gfx942", *f, 4);
  ir::walk(f->body, [&](ir::Operation& op) {
    EXPECT_NE(op.op, Op::convert_layout);
    for (auto& r : op.results) EXPECT_FALSE(r->layout.has_value());
  });
  auto co = compile_for("sm_90", *f, 4);
  EXPECT_EQ(co.report["conversions_shared"], 1);
}

}  // namespace

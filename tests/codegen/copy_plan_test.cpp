// The copy and wait-count planning passes (codegen/gpu/plan_copies.cpp,
// plan_wait_counts.cpp) as the IR records them, read from codegen::planned_program on
// sm_90, gfx942 and gfx950 for Triton's tutorial matmul and attention as their
// transcriptions write them: every global_load_to_shared the pipeliner made carries its
// copy layout and chunk, AMD's waits carry the loads they leave in flight, and the
// numbers the code object's instructions use are the ones recorded.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "bench/attention_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/capabilities.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/passes/axis_analysis.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;

std::vector<ir::Operation*> ops_of(ir::Block& b, Op kind) {
  std::vector<ir::Operation*> out;
  ir::walk(b, [&](ir::Operation& op) {
    if (op.op == kind) out.push_back(&op);
  });
  return out;
}

// What every planned copy must satisfy: a layout over the buffer's tile whose registers
// hold whole chunks (the chunk's elements are its first register bits), every lane and
// warp of the program, and a chunk the target copies in one instruction.
void expect_planned_copy(const ir::Operation& copy, const codegen::TargetDesc& target, int warps, const std::string& ir) {
  ASSERT_TRUE(copy.copy.has_value()) << ir;
  ASSERT_TRUE(copy.layout.has_value()) << ir;
  const ir::Type& bt = copy.operands[0]->type;
  const ir::Layout& l = *copy.layout;
  EXPECT_EQ(l.shape, bt.shape) << ir;
  EXPECT_EQ(int(l.lane.size()), __builtin_ctz(unsigned(target.wave_size))) << ir;
  EXPECT_EQ(int(l.warp.size()), __builtin_ctz(unsigned(warps))) << ir;
  const int per = copy.copy->chunk_bytes / byte_width(bt.dtype);
  ASSERT_GE(per, 1);
  // The chunk's elements: consecutive offsets along the last dim, in the low registers.
  for (int i = 0; (1 << i) < per; ++i) EXPECT_EQ(l.reg[size_t(i)], 1u << i) << ir;
  EXPECT_EQ(int64_t(l.num_regs()) * target.wave_size * warps, bt.numel()) << ir;
  // Its operands are read in it: rematerialized address math, or converted to it.
  for (size_t k = 2; k < copy.operands.size(); ++k) {
    const ir::Value* v = copy.operands[k];
    EXPECT_TRUE(v->rematerialized || (v->layout && *v->layout == l)) << ir;
  }
}

TEST(CopyPlan, TutorialMatmulRecordsEveryCopyAndEveryWait) {
  struct Case {
    const char* arch;
    int chunk_bytes;  // f16 A and B: cp.async.cg 16, gfx942's global_load_lds_dword 4, gfx950's dwordx4 16
  };
  for (const Case& c : {Case{"sm_90", 16}, Case{"gfx942", 4}, Case{"gfx950", 16}})
    for (int stages : {2, 3}) {
      SCOPED_TRACE(fmt::format("{} num_stages={}", c.arch, stages));
      auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, /*assumes=*/true);
      const auto target = codegen::parse_target(c.arch);
      auto g = codegen::planned_program(*f, target, tltest::launch_options(4, stages));
      const std::string ir = g->str();
      auto copies = ops_of(g->body, Op::global_load_to_shared);
      ASSERT_GE(copies.size(), 2u) << ir;  // A and B before the loop, again inside it
      for (const ir::Operation* copy : copies) {
        expect_planned_copy(*copy, target, 4, ir);
        EXPECT_EQ(copy->copy->chunk_bytes, c.chunk_bytes) << ir;
      }
      auto waits = ops_of(g->body, Op::async_wait);
      ASSERT_FALSE(waits.empty()) << ir;
      for (const ir::Operation* w : waits) {
        // (the drain after the loop: nothing left in flight, 0 on every counter)
        if (w->i1 == 0) {
          EXPECT_EQ(w->i0, 0) << ir;
          continue;
        }
        if (target.kind == codegen::TargetDesc::nvptx) {
          // cp.async.wait_group counts the copy groups themselves.
          EXPECT_EQ(w->i1, ir::kWaitCountsCopies) << ir;
          EXPECT_LE(w->i0, stages - 1) << ir;
        } else {
          EXPECT_EQ(w->i1, ir::kWaitCountsLoads) << ir;
          EXPECT_NE(ir.find(fmt::format("num_outstanding={} loads", w->i0)), std::string::npos) << ir;
        }
      }
      EXPECT_NE(ir.find(fmt::format("chunk={}B", c.chunk_bytes)), std::string::npos) << ir;
    }
}

// The loads a wait leaves in flight, recorded by plan_wait_counts, are what the loop's
// s_waitcnt says: the copy that must have landed is exactly covered. gfx942 at 3 stages
// (one copy group of A and B stays in flight: their 4-byte copies, 16 a lane at 128x64
// f16 over 4 waves, and B's register loads through buffer loads issued after them).
TEST(CopyPlan, AmdWaitCountIsTheVmcntTheLoopWaitsWith) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, /*assumes=*/true);
    auto planned = codegen::planned_program(*f, codegen::parse_target(arch), tltest::launch_options(4, 3));
    int recorded = -1;
    for (ir::Operation* loop : ops_of(planned->body, Op::for_))
      for (ir::Operation* w : ops_of(*loop->regions[0], Op::async_wait)) recorded = std::max<int>(recorded, int(w->i0));
    ASSERT_GT(recorded, 0) << planned->str();
    auto again = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, true);
    codegen::CompileOptions o = tltest::launch_options(4, 3);
    auto co = codegen::compile(*again, codegen::parse_target(arch), o);
    const std::string loop = tltest::amd_loop(amd::disassemble(co.binary));
    const int largest = tltest::largest_vmcnt(loop);
    EXPECT_EQ(largest, recorded) << loop;
  }
}

// The tutorial attention's K and V copies (NVIDIA, where the pipeliner stages them) carry
// their plans; the dump shows them.
TEST(CopyPlan, TutorialAttentionCopiesArePlannedOnSm90) {
  const attn::Config cfg;  // (the tutorial's 128x64, 4 warps, 2 stages)
  auto f = attn::trace_ir(cfg, 128, false);
  const auto target = codegen::parse_target("sm_90");
  auto g = codegen::planned_program(*f, target, tltest::launch_options(cfg.num_warps, cfg.num_stages));
  const std::string ir = g->str();
  auto copies = ops_of(g->body, Op::global_load_to_shared);
  ASSERT_FALSE(copies.empty()) << ir;
  for (const ir::Operation* copy : copies) {
    expect_planned_copy(*copy, target, cfg.num_warps, ir);
    EXPECT_EQ(copy->copy->chunk_bytes, 16) << ir;
  }
}

// A planned copy's record is verified: a chunk that is not a power of two of 4 bytes or
// more, or one without its layout, is a verifier error (a pass bug caught where it is made).
TEST(CopyPlan, VerifierRejectsAMalformedPlan) {
  auto f = tltest::tutorial03_matmul_kernel(64, 64, 32, 8, true);
  auto g = codegen::planned_program(*f, codegen::parse_target("gfx950"), tltest::launch_options(4, 2));
  auto copies = ops_of(g->body, Op::global_load_to_shared);
  ASSERT_FALSE(copies.empty());
  copies[0]->copy->chunk_bytes = 12;
  EXPECT_THROW(ir::verify(*g), compile_error);
  copies[0]->copy->chunk_bytes = 16;
  ir::verify(*g);
  copies[0]->layout.reset();
  EXPECT_THROW(ir::verify(*g), compile_error);
}

// A compiler copy no chunk width fits once the stage's swizzle is known (the pipeliner
// decides before it exists) is a load into registers and a store of the stage right
// before it, the copy kept for its commit group (`loaded_and_stored`), never a compile
// error: here the planned tutorial matmul's first copy is planned again with its
// buffer's swizzle vector cut to one f16 element (2 bytes, under every chunk width).
TEST(CopyPlan, ACopyNoWidthFitsIsLoadedAndStored) {
  for (const char* arch : {"sm_90", "gfx942"}) {
    SCOPED_TRACE(arch);
    auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, true);
    const auto target = codegen::parse_target(arch);
    auto g = codegen::planned_program(*f, target, tltest::launch_options(4, 2));
    auto copies = ops_of(g->body, Op::global_load_to_shared);
    ASSERT_FALSE(copies.empty());
    ir::Operation& copy = *copies[0];
    ASSERT_EQ(copy.i1, ir::kCompilerCopy);
    ir::Operation* alloc = copy.operands[0]->def;
    ASSERT_TRUE(alloc && alloc->op == Op::shared_alloc);
    ir::SharedEncoding one;  // (gfx942's stages have none: the default is 16 bytes a vector)
    one.order = {1, 0};
    one.vec = 1;
    alloc->shared = one;
    copy.copy.reset();
    copy.layout.reset();
    for (ir::Operation* c : copies) c->copy.reset();  // (planned again, as the pass does)
    const auto caps = codegen::capabilities_for(target);
    const gpu::PlanTarget t{&caps, target.wave_size, 4};
    gpu::plan_copies(*g, passes::AxisAnalysis(*g), t);
    const std::string ir = g->str();
    EXPECT_NE(ir.find("loaded_and_stored"), std::string::npos) << ir;
    for (ir::Operation* c : copies) {
      ASSERT_TRUE(c->copy.has_value()) << ir;
      if (c->operands[0] != copy.operands[0]) {  // another buffer: copied as before
        EXPECT_GT(c->copy->chunk_bytes, 0) << ir;
        continue;
      }
      EXPECT_EQ(c->copy->chunk_bytes, 0) << ir;
      // The load and the store right before it: the copy's pointers, its buffer and stage.
      const ir::Block& b = *c->parent;
      size_t at = 0;
      while (b.ops[at].get() != c) ++at;
      ASSERT_GE(at, 2u) << ir;
      const ir::Operation& store = *b.ops[at - 1];
      ASSERT_EQ(store.op, Op::shared_store) << ir;
      EXPECT_EQ(store.operands[0], c->operands[0]) << ir;
      EXPECT_EQ(store.operands[1], c->operands[1]) << ir;
      const ir::Operation* load = store.operands[2]->def;
      ASSERT_TRUE(load && load->op == Op::load) << ir;
      ASSERT_TRUE(store.operands[2]->layout.has_value()) << ir;
      for (const ir::Value* v : load->operands)
        EXPECT_TRUE(v->rematerialized || (v->layout && *v->layout == *store.operands[2]->layout)) << ir;
    }
    ir::verify(*g);
    gpu::plan_wait_counts(*g, passes::AxisAnalysis(*g), t);
  }
}

// A compiler copy goes through a buffer resource only where the uniform part of its
// offsets is a scalar LLVM keeps in SGPRs (ir::is_uniform_scalar, the answer
// convert_to_buffer_ops and the lowering's buffer accesses ask too): a row block whose
// start is loaded from memory (gathered rows) is divergent to LLVM, and a resource made
// of it would need a loop of readfirstlanes; the copies go through their addresses. B's
// copies, from arguments and the loop's index, are buffer copies. gfx950.
TEST(CopyPlan, AResourceBaseIsAUniformScalar) {
  using namespace tl;
  auto f = tltest::trace("gathered_rows", [&](tl::detail::Trace& t) {
    auto a = tltest::ptr_arg<ty::f16>(t, "a", true, true), bt = tltest::ptr_arg<ty::f16>(t, "bt", true, true);
    auto c = tltest::ptr_arg<ty::f32>(t, "c", true, true);
    auto starts = tltest::ptr_arg<ty::i32>(t, "starts", true, true);
    auto K = tltest::scalar_arg<ty::i32>(t, "K", true);
    const int S = 1024;  // (the rows' stride, a constant: offsets of the form a resource takes)
    auto start = tl::load(starts + tl::program_id(0));
    auto rm = start + tl::arange(0, 64), rn = tl::arange(0, 64), rk = tl::arange(0, 64);
    auto acc = tl::zeros<ty::f32>({64, 64});
    for (auto k : tl::range(0, K, 64)) {
      auto x = tl::load(a + (tl::expand_dims(rm, 1) * S + tl::expand_dims(k + rk, 0)));
      auto y = tl::load(bt + (tl::expand_dims(rn, 1) * S + tl::expand_dims(k + rk, 0)));
      acc = tl::dot(x, tl::trans(y), acc);
    }
    tl::store(c + tl::expand_dims(rn, 1) * 64 + tl::expand_dims(rn, 0), acc);
  });
  auto g = codegen::planned_program(*f, codegen::parse_target("gfx950"), tltest::launch_options(4, 2));
  const ir::Value* a_arg = g->body.args[0].get();
  const std::string ir = g->str();
  auto copies = ops_of(g->body, Op::global_load_to_shared);
  ASSERT_FALSE(copies.empty()) << ir;
  int of_a = 0;
  for (const ir::Operation* copy : copies) {
    ASSERT_TRUE(copy->copy.has_value()) << ir;
    // The copy's base argument: the pointers are addptr(splat(arg), offsets) here.
    const ir::Value* p = copy->operands[2];
    while (p->def && (p->def->op == Op::addptr || p->def->op == Op::splat || p->def->op == Op::broadcast))
      p = p->def->operands[0];
    if (p == a_arg) {
      ++of_a;
      EXPECT_FALSE(copy->copy->through_resource) << ir;
      EXPECT_NE(copy->i1, ir::kBufferAccess) << ir;
    } else {
      EXPECT_TRUE(copy->i1 == ir::kBufferAccess || copy->copy->through_resource) << ir;
    }
  }
  EXPECT_GT(of_a, 0) << ir;
}

// The pipeliner records the stage more it gives a loop's buffers for a warpgroup dot it
// may leave in flight (`for ... async_dot_stage`, num_stages + 1 stages a buffer), which
// plan_async_dots reads instead of inferring it from the buffers' stages (the PTX of an
// asynchronous dot: warpgroup_dot_test). No mark where no dot can run asynchronously
// (AMD's MFMA), nor where the launch turns it off.
TEST(CopyPlan, AsyncDotStageIsARecordedFactOfTheLoop) {
  for (const char* arch : {"sm_90", "gfx942"})
    for (bool allowed : {true, false}) {
      SCOPED_TRACE(fmt::format("{} async_dot_stages={}", arch, allowed));
      auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, true);
      codegen::CompileOptions o = tltest::launch_options(4, 3);
      o.async_dot_stages = allowed;
      auto g = codegen::planned_program(*f, codegen::parse_target(arch), o);
      const std::string ir = g->str();
      auto loops = ops_of(g->body, Op::for_);
      ASSERT_EQ(loops.size(), 1u) << ir;
      const bool marked = allowed && std::string(arch) == "sm_90";
      EXPECT_EQ(loops[0]->i1 == ir::kAsyncDotStage, marked) << ir;
      EXPECT_EQ(ir.find("async_dot_stage") != std::string::npos, marked) << ir;
      for (ir::Operation* alloc : ops_of(g->body, Op::shared_alloc))
        EXPECT_EQ(alloc->result()->type.stages, marked ? 4 : 3) << ir;
      if (!marked)
        for (ir::Operation* d : ops_of(g->body, Op::dot)) EXPECT_NE(d->i1, ir::kAsyncDot) << ir;
    }
}

}  // namespace

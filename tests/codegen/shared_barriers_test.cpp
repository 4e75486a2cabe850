// The barriers between shared-memory accesses are the IR's (codegen/passes/insert_barriers.cpp
// on the tile IR, codegen/gpu/insert_shared_barriers.cpp after the allocation): the planned
// program (codegen::planned_program) shows every one, and the code has exactly those plus the
// one inside each exchange through scratch (an op's write, barrier, read), on sm_90, gfx942
// and gfx950. An exchange that reuses scratch bytes another's reads may still hold gets a
// barrier in the IR before it; one a barrier already separates gets none.
#include <gtest/gtest.h>

#include <string>

#include "bench/attention_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"

namespace {

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

const char* const kTargets[] = {"sm_90", "gfx942", "gfx950"};

// What the planned program says about its barriers, by op, in program order (a loop's
// body once).
struct Barriers {
  int in_ir = 0;        // Op::barrier
  int exchanges = 0;    // ops with a scratch slice: one barrier each inside their lowering
  std::string order;    // 'B' a barrier, 'X' an exchange, 'L' a loop's start, 'E' its end
};

void collect(const ir::Block& b, Barriers& out) {
  for (const auto& op : b.ops) {
    if (op->op == Op::barrier) ++out.in_ir, out.order += 'B';
    // (a conversion read by its dot only writes: its barrier is one of the IR's, W)
    else if (op->op == Op::convert_layout && (op->i1 & ir::kConversionReadByDot)) out.order += 'W';
    else if (op->smem && op->op != Op::shared_alloc) ++out.exchanges, out.order += 'X';
    if (op->op == Op::for_) out.order += 'L';
    for (const auto& r : op->regions) collect(*r, out);
    if (op->op == Op::for_) out.order += 'E';
  }
}

Barriers barriers_of(const ir::Function& g) {
  Barriers out;
  collect(g.body, out);
  return out;
}

std::string isa(const std::string& target, const codegen::CodeObject& co) {
  if (target.rfind("gfx", 0) == 0) return amd::disassemble(co.binary);
  return std::string(co.binary.begin(), co.binary.end());
}

int barriers_in_code(const std::string& target, const std::string& text) {
  return target.rfind("gfx", 0) == 0 ? count(text, "s_barrier") : count(text, "bar.sync") + count(text, "barrier.sync");
}

// Cross-warp reductions of a [64, 64] tile over its rows (8 warps along them): each
// exchanges through the scratch. The second's writes wait for the first's reads (a
// barrier in the IR between them); a third, after the user's tl::barrier(), needs none.
// In a loop, a reduction writes the bytes the previous iteration's last one read: a
// barrier before each in the body. Except on AMD, where the allocator gives two
// reductions an iteration a scratch slot each (the 4 workgroups of 8 waves a CU holds
// still fit its LDS): each writes the bytes the one before the previous read, which
// the previous one's own barrier has ordered, and needs none.
std::unique_ptr<ir::Function> reductions_kernel(int in_loop) {
  return trace("reductions", [in_loop](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = tltest::scalar_arg<ty::i32>(t, "n", true);
    auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
    auto cols = tl::arange(0, 64);
    if (in_loop == 0) {
      auto v = tl::load(x + offs);
      tl::store(y + cols, tl::sum(v, 0));
      tl::store(y + 64 + cols, tl::max(v, 0));
      tl::barrier();
      tl::store(y + 128 + cols, tl::min(v, 0));
      return;
    }
    auto acc = tl::zeros<ty::f32>({64});
    for (auto k : tl::range(0, n, 1)) {
      auto v = tl::load(x + k * 4096 + offs);
      acc += tl::sum(v, 0);
      if (in_loop == 2) acc += tl::max(v, 0);
    }
    tl::store(y + cols, acc);
  });
}

TEST(SharedMemoryBarriers, ExchangesReusingTheScratchWaitForThePreviousReads) {
  for (const char* target : kTargets) {
    for (int in_loop : {0, 1, 2}) {
      SCOPED_TRACE(testing::Message() << target << ", " << in_loop << " reductions in a loop");
      auto f = reductions_kernel(in_loop);
      auto g = codegen::planned_program(*f, codegen::parse_target(target), tltest::launch_options(8, 1));
      const Barriers b = barriers_of(*g);
      const bool amd = std::string(target).rfind("gfx", 0) == 0;
      const char* want = in_loop == 0 ? "XBXBX" : in_loop == 1 ? "LBXE" : amd ? "LXXE" : "LBXBXE";
      EXPECT_EQ(b.order, want) << g->str();
      auto again = reductions_kernel(in_loop);
      const auto co = codegen::compile(*again, codegen::parse_target(target), tltest::launch_options(8, 1));
      const std::string text = isa(target, co);
      EXPECT_EQ(barriers_in_code(target, text), b.in_ir + b.exchanges) << text;
    }
  }
}

// The tutorials' matmul and attention: every barrier of the code is in the planned IR or
// inside an exchange; none is placed by the lowering on its own.
TEST(SharedMemoryBarriers, TutorialKernelsHaveNoBarrierTheIrDoesNotShow) {
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    const auto t = codegen::parse_target(target);
    {
      SCOPED_TRACE("tutorial 03 matmul 128x128x64, 3 stages");
      const auto o = tltest::launch_options(4, 3);
      auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, /*assumes=*/true);
      const Barriers b = barriers_of(*codegen::planned_program(*f, t, o));
      auto again = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, true);
      const std::string text = isa(target, codegen::compile(*again, t, o));
      EXPECT_GT(b.in_ir, 0);
      EXPECT_EQ(barriers_in_code(target, text), b.in_ir + b.exchanges) << b.order;
    }
    {
      SCOPED_TRACE("tutorial 06 attention 128x64 D=64, 2 stages");
      const attn::Config cfg;
      const auto o = tltest::launch_options(cfg.num_warps, cfg.num_stages);
      auto f = attn::trace_ir(cfg, 64, false);
      const Barriers b = barriers_of(*codegen::planned_program(*f, t, o));
      auto again = attn::trace_ir(cfg, 64, false);
      const std::string text = isa(target, codegen::compile(*again, t, o));
      EXPECT_GT(b.in_ir, 0);
      EXPECT_EQ(barriers_in_code(target, text), b.in_ir + b.exchanges) << b.order;
    }
  }
}

}  // namespace

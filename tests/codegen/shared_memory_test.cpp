// The shared-memory allocator (codegen/gpu/shared_memory.{hpp,cpp}) on tile IR made
// with ir::Builder: buffers live together never share bytes, buffers that are never live
// together do, a use inside a loop keeps a buffer live for the whole loop (and so do
// uses through loop-carried values and branch results), offsets are aligned, and a plan
// over the target's budget says which allocation and which buffers live with it.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <algorithm>
#include <vector>

#include "bench/attention_tutorial.hpp"
#include "codegen/gpu/capabilities.hpp"
#include "codegen/gpu/shared_memory.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"
#include "tl/error.hpp"

namespace {

using namespace tl;

gpu::TargetCapabilities caps(const char* name) { return codegen::capabilities_for(codegen::parse_target(name)); }

ir::SrcLoc at(unsigned line) { return {"user.cpp", line}; }

// A function under construction; `b` inserts at the end of whatever block it points at.
struct Program {
  ir::Function f;
  ir::Builder b{f.body};
  Program() { f.name = "k"; }

  ir::Value* alloc(DType t, std::vector<int> shape, int stages, unsigned line) {
    return b.create1(Op::shared_alloc, {}, ir::Type::shared_buffer(t, std::move(shape), stages), at(line));
  }
  // Uses `bufs` here: a one-trip loop carrying them (the only ops that take a buffer
  // today); its body passes them on unchanged.
  ir::Operation& use(const std::vector<ir::Value*>& bufs) {
    ir::Value* c0 = b.constant(DType::i32, 0, at(1));
    ir::Value* c1 = b.constant(DType::i32, 1, at(1));
    ir::Operation& loop = b.create_for(c0, c1, c1, bufs, at(1));
    ir::Builder in(*loop.regions[0]);
    std::vector<ir::Value*> args;
    for (size_t i = 0; i < bufs.size(); ++i) args.push_back(loop.regions[0]->args[1 + i].get());
    in.create(Op::yield, args, {}, at(1));
    return loop;
  }
  // Opens a loop with no carried values: `b` now inserts into its body. close() ends it.
  ir::Operation& open_loop(unsigned line) {
    ir::Value* c0 = b.constant(DType::i32, 0, at(line));
    ir::Value* c8 = b.constant(DType::i32, 8, at(line));
    ir::Value* c1 = b.constant(DType::i32, 1, at(line));
    ir::Operation& loop = b.create_for(c0, c8, c1, {}, at(line));
    b.at_end(*loop.regions[0]);
    return loop;
  }
  void close(ir::Operation& loop) {
    b.create(Op::yield, {}, {}, at(1));
    b.after(loop);
  }

  gpu::SharedMemoryPlan plan(const char* target = "gfx942") {
    ir::verify(f);
    return gpu::plan_shared_memory(f, caps(target), target);
  }
};

const gpu::SharedBuffer& of(const gpu::SharedMemoryPlan& p, const ir::Value* v) {
  return p.buffers.at(size_t(p.index_of(v->def)));
}

TEST(SharedMemoryAllocator, BuffersLiveTogetherDoNotOverlap) {
  Program p;
  ir::Value* a = p.alloc(DType::f32, {16, 16}, 1, 10);  // 1 KiB
  ir::Value* b = p.alloc(DType::bf16, {16, 16}, 2, 11);  // 1 KiB
  p.use({a, b});
  auto plan = p.plan();
  ASSERT_EQ(plan.buffers.size(), 2u);
  EXPECT_EQ(of(plan, a).bytes, 1024);
  EXPECT_EQ(of(plan, b).bytes, 1024);
  EXPECT_TRUE(of(plan, a).live_with(of(plan, b)));
  EXPECT_FALSE(of(plan, a).shares_bytes_with(of(plan, b)));
  EXPECT_EQ(plan.buffer_bytes, 2048);
  EXPECT_EQ(plan.scratch_offset, 0);  // no op here uses the scratch region: it may share any bytes
}

// An f32 tile converted through shared memory where `p` inserts: `rows` x 16 elements
// (64 bytes a row) of scratch.
const ir::Operation* convert_through_shared(Program& p, int rows) {
  ir::Value* c = p.b.constant(DType::f32, 1.0, at(5));
  ir::Value* t = p.b.create1(Op::splat, {c}, ir::Type{DType::f32, DType::f32, {rows, 16}}, at(5));
  ir::Value* conv = p.b.create1(Op::convert_layout, {t}, t->type, at(5));
  ir::Layout a, b;  // (every element in one thread's registers, in two orders)
  a.shape = b.shape = {rows, 16};
  const int bits = __builtin_ctz(unsigned(rows)) + 4;
  for (int bit = 0; bit < bits; ++bit) a.reg.push_back(1u << bit), b.reg.push_back(1u << (bits - 1 - bit));
  t->layout = a;
  conv->layout = b;
  conv->def->i0 = int64_t(ir::ConvertPath::shared);
  EXPECT_TRUE(gpu::uses_scratch(*conv->def));
  return conv->def;
}

// Two exchanges an iteration of a loop take the scratch region's two slots, the first at
// its start and the second a slot above, where the target says how many workgroups a
// compute unit holds (gfx942: 32 waves) and the doubled region still lets that many fit
// its shared memory; else (NVIDIA: not said; or tiles too large; or one exchange a loop)
// every use starts at the region's start, as before.
TEST(SharedMemoryAllocator, ScratchTakesTwoSlotsWhereALoopExchangesTwiceAndOccupancyAllows) {
  struct Case {
    const char* target;
    int rows, in_loop, warps;
    bool two_slots;
  };
  const Case cases[] = {{"gfx942", 16, 2, 4, true},   // 2 x 1 KiB, 8 workgroups: 16 KiB of 64
                        {"gfx950", 64, 2, 4, true},   // 2 x 4 KiB
                        {"gfx942", 64, 2, 4, true},   // 2 x 4 KiB: 8 workgroups, all 64 KiB
                        {"gfx942", 128, 2, 4, false},  // 2 x 8 KiB: 8 workgroups would need 128 KiB
                        {"gfx942", 128, 2, 8, true},   // 4 workgroups of 8 waves: 64 KiB
                        {"gfx942", 16, 1, 4, false},  // one exchange a loop: no barrier to save
                        {"sm_90", 16, 2, 4, false},   // (NVIDIA: unmeasured, one slot)
                        {"gfx942", 16, 2, 0, false}};  // (num_warps not recorded)
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {}x16 f32, {} in the loop, {} warps", c.target, c.rows, c.in_loop, c.warps));
    Program p;
    p.f.num_warps = c.warps;
    const ir::Operation* before = convert_through_shared(p, c.rows);
    ir::Operation& loop = p.open_loop(20);
    std::vector<const ir::Operation*> inside;
    for (int i = 0; i < c.in_loop; ++i) inside.push_back(convert_through_shared(p, c.rows));
    p.close(loop);
    auto plan = p.plan(c.target);
    ASSERT_FALSE(plan.overflow.has_value());
    const int64_t bytes = int64_t(c.rows) * 64;
    EXPECT_EQ(plan.scratch_offset, 0);
    EXPECT_EQ(plan.scratch_at.at(before), 0);
    EXPECT_EQ(plan.scratch_at.at(inside[0]), c.two_slots ? bytes : 0);  // (every other use, in program order)
    if (c.in_loop > 1) EXPECT_EQ(plan.scratch_at.at(inside[1]), 0);
    EXPECT_EQ(plan.scratch_bytes, c.two_slots ? 2 * bytes : bytes);
  }
}

// A conversion read by its dot (kConversionReadByDot) keeps its scratch until the dot,
// which may come after other exchanges (the pipeliner's loop unrolled in two converts the
// second iteration's K^T and V before the if that runs it): those take other bytes. Where
// the loop exchanges twice and half the waves' workgroups still fit (gfx942, 4 KiB uses at
// 4 waves), the uses spread over twice the slots, each in the next one no live use holds:
// 0, 1, 2, 3, then 0 again where the first is dead. Else (sm_90: not said) the two slots
// the live uses need, and nothing more.
TEST(SharedMemoryAllocator, ScratchReadByALaterDotLivesUntilItInASlotOfItsOwn) {
  for (const char* target : {"gfx942", "sm_90"}) {
    SCOPED_TRACE(target);
    Program p;
    p.f.num_warps = 4;
    const int64_t bytes = 64 * 64;  // 64x16 f32
    ir::Operation& loop = p.open_loop(20);
    std::vector<const ir::Operation*> uses;
    for (int pair = 0; pair < 2; ++pair) {
      const ir::Operation* first = convert_through_shared(p, 64);
      const_cast<ir::Operation*>(first)->i1 |= ir::kConversionReadByDot;
      uses.push_back(first);
      uses.push_back(convert_through_shared(p, 64));
      p.b.create1(Op::neg, {first->results[0].get()}, first->results[0]->type, at(7));  // (its reader)
    }
    p.close(loop);
    auto plan = p.plan(target);
    ASSERT_FALSE(plan.overflow.has_value());
    const bool spread = std::string(target) == "gfx942";
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(plan.scratch_at.at(uses[size_t(k)]), spread ? k * bytes : (k % 2) * bytes) << k;
    EXPECT_EQ(plan.scratch_bytes, (spread ? 4 : 2) * bytes);
  }
}

// The scratch region (conversions through shared memory, cross-warp reductions) goes
// above the buffers live where an op uses it, and only those: a conversion before a
// buffer is allocated may use the buffer's bytes (a hand-staged kernel converting its Q
// block before its tl::shared stages exist), one while it is live may not.
TEST(SharedMemoryAllocator, ScratchGoesAboveOnlyTheBuffersLiveWhereItIsUsed) {
  for (bool conversion_first : {true, false}) {
    SCOPED_TRACE(conversion_first ? "conversion before the buffer" : "conversion while it is live");
    Program p;
    auto convert = [&] {
      ir::Value* c = p.b.constant(DType::f32, 1.0, at(5));
      ir::Value* t = p.b.create1(Op::splat, {c}, ir::Type{DType::f32, DType::f32, {16, 16}}, at(5));
      ir::Value* conv = p.b.create1(Op::convert_layout, {t}, t->type, at(5));
      ir::Layout rows, cols;  // (any two layouts of the tile: every element in one thread's registers)
      rows.shape = cols.shape = {16, 16};
      for (uint32_t bit = 0; bit < 8; ++bit) rows.reg.push_back(1u << bit), cols.reg.push_back(1u << (7 - bit));
      t->layout = rows;
      conv->layout = cols;
      conv->def->i0 = int64_t(ir::ConvertPath::shared);
      EXPECT_TRUE(gpu::uses_scratch(*conv->def));
    };
    if (conversion_first) convert();
    ir::Value* a = p.alloc(DType::f32, {16, 16}, 1, 10);  // 1 KiB
    if (!conversion_first) convert();
    p.use({a});
    auto plan = p.plan();
    EXPECT_EQ(plan.buffer_bytes, 1024);
    EXPECT_EQ(plan.scratch_offset, conversion_first ? 0 : 1024);
  }
}

TEST(SharedMemoryAllocator, BuffersNeverLiveTogetherShareBytes) {
  Program p;
  ir::Value* a = p.alloc(DType::f32, {16, 16}, 1, 10);
  p.use({a});
  ir::Value* b = p.alloc(DType::f32, {16, 16}, 2, 12);  // defined after a's last use
  p.use({b});
  auto plan = p.plan();
  EXPECT_FALSE(of(plan, a).live_with(of(plan, b)));
  EXPECT_EQ(of(plan, a).offset, 0);
  EXPECT_EQ(of(plan, b).offset, 0);
  EXPECT_EQ(plan.buffer_bytes, 2048);  // the larger of the two, not the sum
}

// The same ops, once in straight-line code and once in a loop body: in the loop, `a`'s
// use comes before `b`'s definition in the text, but the next iteration uses `a` again
// while `b` is live, so `b` may not take its bytes.
TEST(SharedMemoryAllocator, BufferUsedInALoopIsLiveForTheWholeLoop) {
  for (bool in_loop : {false, true}) {
    SCOPED_TRACE(in_loop ? "in a loop" : "straight line");
    Program p;
    ir::Value* a = p.alloc(DType::f32, {16, 16}, 1, 10);
    ir::Operation* loop = in_loop ? &p.open_loop(11) : nullptr;
    p.use({a});
    ir::Value* b = p.alloc(DType::f32, {16, 16}, 1, 13);  // allocated and dead inside the body
    p.use({b});
    if (loop) p.close(*loop);
    auto plan = p.plan();
    EXPECT_EQ(of(plan, a).live_with(of(plan, b)), in_loop);
    EXPECT_EQ(of(plan, a).shares_bytes_with(of(plan, b)), !in_loop);
    EXPECT_EQ(plan.buffer_bytes, in_loop ? 2048 : 1024);
  }
}

// A buffer passed out of a loop (loop-carried) or out of a branch is live until the
// result's last use: a buffer allocated in between must not reuse its bytes.
TEST(SharedMemoryAllocator, UsesThroughLoopCarriedAndBranchResultsKeepTheBufferLive) {
  Program p;
  ir::Value* a = p.alloc(DType::f32, {16, 16}, 1, 10);
  ir::Operation& carried = p.use({a});
  ir::Value* c = p.b.constant(DType::i1, 1, at(12));
  ir::Value* d = p.alloc(DType::f32, {16, 16}, 1, 13);
  ir::Operation& branch = p.b.create(Op::if_, {c}, {d->type}, at(14));
  for (int r = 0; r < 2; ++r) ir::Builder(*branch.add_region()).create(Op::yield, {d}, {}, at(14));
  ir::Value* b = p.alloc(DType::f32, {16, 16}, 1, 15);  // after both, before the results' uses
  p.use({b});
  p.use({carried.result(), branch.result()});
  auto plan = p.plan();
  EXPECT_EQ(plan.buffers_of.at(carried.result()), std::vector<int>{plan.index_of(a->def)});
  EXPECT_EQ(plan.buffers_of.at(branch.result()), std::vector<int>{plan.index_of(d->def)});
  for (ir::Value* v : {a, d}) {
    EXPECT_TRUE(of(plan, v).live_with(of(plan, b)));
    EXPECT_FALSE(of(plan, v).shares_bytes_with(of(plan, b)));
  }
  EXPECT_EQ(plan.buffer_bytes, 3 * 1024);
}

// A buffer allocated in a loop body and carried to the next iteration is live over the
// whole loop, like one carried in from outside.
TEST(SharedMemoryAllocator, BufferCarriedAcrossIterationsIsLiveForTheWholeLoop) {
  Program p;
  ir::Value* init = p.alloc(DType::f32, {16, 16}, 1, 10);
  ir::Value* c0 = p.b.constant(DType::i32, 0, at(11));
  ir::Value* c8 = p.b.constant(DType::i32, 8, at(11));
  ir::Operation& loop = p.b.create_for(c0, c8, c8, {init}, at(11));
  ir::Builder in(*loop.regions[0]);
  in.create(Op::barrier, {}, {}, at(12));  // (an op before the allocation)
  ir::Value* next = in.create1(Op::shared_alloc, {}, init->type, at(13));
  in.create(Op::yield, {next}, {}, at(14));
  ir::Value* other = p.alloc(DType::f32, {16, 16}, 1, 15);
  p.use({other});
  auto plan = p.plan();
  const gpu::SharedBuffer& n = of(plan, next);
  EXPECT_LE(n.first, plan.buffers[size_t(plan.index_of(init->def))].last);  // from the loop's start
  EXPECT_TRUE(of(plan, init).live_with(n));
  EXPECT_FALSE(of(plan, init).shares_bytes_with(n));
}

TEST(SharedMemoryAllocator, OffsetsAreAligned) {
  Program p;
  ir::Value* big = p.alloc(DType::f32, {4}, 25, 10);     // 400 bytes
  ir::Value* row = p.alloc(DType::f32, {4}, 9, 11);      // 144 bytes: at least a bank row
  ir::Value* small = p.alloc(DType::f32, {4}, 3, 12);    // 48 bytes
  ir::Value* tiny = p.alloc(DType::i8, {4}, 1, 13);      // 4 bytes
  ir::Value* tiny2 = p.alloc(DType::f16, {2}, 1, 14);    // 4 bytes
  p.use({big, row, small, tiny, tiny2});
  auto plan = p.plan();
  // Largest first: 400 at 0; 144 on the next 128-byte bank row (512, not 400); the small
  // ones first-fit into the gap before it, on 16-byte boundaries.
  EXPECT_EQ(of(plan, big).offset, 0);
  EXPECT_EQ(of(plan, row).offset, 512);
  EXPECT_EQ(of(plan, small).offset, 400);
  EXPECT_EQ(of(plan, tiny).offset, 448);
  EXPECT_EQ(of(plan, tiny2).offset, 464);
  for (auto& b : plan.buffers) {
    EXPECT_EQ(b.offset % b.align, 0) << b.alloc->loc.line;
    EXPECT_EQ(b.align, b.bytes >= 128 ? 128 : 16) << b.alloc->loc.line;
  }
  EXPECT_EQ(plan.buffer_bytes, 656);
  EXPECT_EQ(plan.scratch_offset, 0);  // (no op here uses the scratch region)
}

// 64 KiB and 16 KiB live together: 80 KiB. gfx942 has 64 KiB of LDS per workgroup,
// gfx950 160 KiB. The allocator says so as data (what codegen/pipeline.cpp gives stages
// up for, or makes a compile error of at the allocation's line): the buffer placed past
// the limit, the buffers live with it, the bytes.
TEST(SharedMemoryAllocator, OverTheBudgetIsAnOverflowAtTheAllocation) {
  auto build = [](Program& p) {
    ir::Value* a = p.alloc(DType::f32, {64, 128}, 2, 30);  // 65536 bytes
    ir::Value* b = p.alloc(DType::f32, {32, 128}, 1, 31);  // 16384 bytes
    p.use({a, b});
  };
  {
    Program p;
    build(p);
    auto plan = p.plan("gfx950");
    EXPECT_EQ(plan.buffer_bytes, 81920);
  }
  Program p;
  build(p);
  auto plan = p.plan("gfx942");
  ASSERT_TRUE(plan.overflow.has_value()) << "80 KiB of buffers fit in gfx942's 64 KiB";
  const gpu::SharedMemoryOverflow& o = *plan.overflow;
  const std::string& msg = o.message;
  ASSERT_NE(o.at, nullptr);
  EXPECT_EQ(o.at->loc.line, 31u) << msg;  // the one placed past the limit
  EXPECT_EQ(o.needed, 81920);
  EXPECT_EQ(o.limit, 65536);
  ASSERT_EQ(o.live.size(), 2u);  // the 64 KiB it is placed after, and itself
  EXPECT_EQ(o.live[0]->loc.line, 30u);
  EXPECT_EQ(o.live[1], o.at);
  EXPECT_NE(msg.find("81920 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16384 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("65536"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gfx942"), std::string::npos) << msg;
}

TEST(SharedMemoryAllocator, NoBuffersNoBytes) {
  Program p;
  p.b.constant(DType::i32, 1, at(1));
  auto plan = p.plan();
  EXPECT_TRUE(plan.buffers.empty());
  EXPECT_EQ(plan.buffer_bytes, 0);
  EXPECT_EQ(plan.scratch_offset, 0);
}

}  // namespace

namespace {

// What allocate_shared_memory must have recorded in a planned program: every buffer's
// slice (all its stages), every scratch use's at one of at most two offsets and at least the bytes its
// lowering exchanges (scratch_bytes), all within the target's budget. Returns the end of
// the highest slice: the program's shared memory.
int64_t expect_recorded_allocation(const ir::Function& g, const gpu::TargetCapabilities& c) {
  const std::string ir = g.str();
  int64_t end = 0, scratch_offset = -1;
  std::vector<int64_t> slots;  // scratch offsets other than the first use's
  int buffers = 0, scratch_uses = 0;
  ir::walk(const_cast<ir::Block&>(g.body), [&](ir::Operation& op) {
    if (op.op == Op::shared_alloc) {
      ++buffers;
      const ir::Type& t = op.result()->type;
      EXPECT_TRUE(op.smem.has_value()) << ir;
      if (!op.smem) return;
      EXPECT_EQ(op.smem->bytes, t.numel() * t.stages * byte_width(t.dtype)) << ir;
      EXPECT_EQ(op.smem->offset % gpu::buffer_alignment(op, c), 0) << ir;
      end = std::max(end, op.smem->offset + op.smem->bytes);
    } else if (const int64_t need = gpu::scratch_bytes(op)) {
      ++scratch_uses;
      EXPECT_TRUE(op.smem.has_value()) << op_name(op.op) << "\n" << ir;
      if (!op.smem) return;
      EXPECT_GE(op.smem->bytes, need) << ir;
      if (scratch_offset < 0) scratch_offset = op.smem->offset;
      // (one offset, or two: the region's slots, shared_memory.cpp)
      if (op.smem->offset != scratch_offset && std::find(slots.begin(), slots.end(), op.smem->offset) == slots.end())
        slots.push_back(op.smem->offset);
      EXPECT_LE(slots.size(), 1u) << ir;
      end = std::max(end, op.smem->offset + op.smem->bytes);
    } else {
      EXPECT_FALSE(op.smem.has_value()) << op_name(op.op) << "\n" << ir;
    }
  });
  EXPECT_GT(buffers + scratch_uses, 0) << ir;
  EXPECT_NE(ir.find("smem=["), std::string::npos) << ir;
  EXPECT_LE(end, c.shared_bytes_per_program) << ir;
  return end;
}

}  // namespace

// allocate_shared_memory's slices in TL_DUMP_IR, read from codegen::planned_program for
// Triton's tutorial matmul and attention as their transcriptions write them, on sm_90,
// gfx942 and gfx950; and the code object's shared memory is what the IR says (the
// lowering places nothing itself).
TEST(SharedMemoryAllocation, TutorialKernelsRecordEveryBufferAndScratchUse) {
  for (const char* arch : {"sm_90", "gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    const auto target = codegen::parse_target(arch);
    const auto c = codegen::capabilities_for(target);
    {
      SCOPED_TRACE("tutorial 03 matmul 128x128x64, 2 stages");
      auto f = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, /*assumes=*/true);
      auto g = codegen::planned_program(*f, target, tltest::launch_options(4, 2));
      const int64_t end = expect_recorded_allocation(*g, c);
      auto again = tltest::tutorial03_matmul_kernel(128, 128, 64, 8, true);
      EXPECT_EQ(codegen::compile(*again, target, tltest::launch_options(4, 2)).shared_bytes, end);
    }
    {
      SCOPED_TRACE("tutorial 06 attention 128x64 D=64, 2 stages");
      const attn::Config cfg;  // (the tutorial's 128x64, 4 warps, 2 stages)
      auto f = attn::trace_ir(cfg, 64, false);
      auto g = codegen::planned_program(*f, target, tltest::launch_options(cfg.num_warps, cfg.num_stages));
      const int64_t end = expect_recorded_allocation(*g, c);
      auto again = attn::trace_ir(cfg, 64, false);
      const auto o = tltest::launch_options(cfg.num_warps, cfg.num_stages);
      EXPECT_EQ(codegen::compile(*again, target, o).shared_bytes, end);
    }
  }
}

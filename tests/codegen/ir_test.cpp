// The compiler's foundations, each property checked on the tile IR itself: the op-
// properties table and what the cleanup passes may do with it (nothing observable is
// deleted, no read moves across a write), the cache key seeing every attribute, the
// builder and clone that later passes rewrite loops with, and the shared-buffer type.
#include <gtest/gtest.h>

#include <string>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"
#include "support/traced_kernels.hpp"
#include "tl/error.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

constexpr int kNumOps = int(Op::print) + 1;

void cleanup(ir::Function& f) {
  passes::eliminate_common_subexpressions(f);
  passes::eliminate_dead_code(f);
  ir::verify(f);
}

int count_ops(ir::Function& f, Op kind) {
  int n = 0;
  ir::walk(f.body, [&](ir::Operation& op) { n += op.op == kind; });
  return n;
}

// ------------------------------------------------------------ op properties

TEST(OpProperties, EveryOpHasAConsistentEntry) {
  for (int i = 0; i < kNumOps; ++i) {
    Op op = Op(i);
    const ir::OpProperties& p = ir::properties(op);
    SCOPED_TRACE(op_name(op));
    // Pure means nothing beyond the results: no memory traffic, no effects.
    if (p.has(ir::kPure)) {
      EXPECT_FALSE(p.has(ir::kReadsMemory));
      EXPECT_FALSE(p.has(ir::kWritesMemory));
      EXPECT_FALSE(p.has(ir::kSideEffects));
    }
    // An allocation is a new object, not a value: never pure, no effect of its own.
    if (p.has(ir::kAllocates)) {
      EXPECT_FALSE(p.has(ir::kPure));
      EXPECT_FALSE(p.has(ir::kWritesMemory));
      EXPECT_FALSE(p.has(ir::kSideEffects));
    }
    // Everything is something: pure, a memory op, an effect, an allocation, a region op
    // or a terminator.
    EXPECT_NE(p.traits & (ir::kPure | ir::kReadsMemory | ir::kWritesMemory | ir::kSideEffects | ir::kAllocates |
                          ir::kHasRegions | ir::kTerminator),
              0);
  }
  EXPECT_TRUE(ir::has_trait(Op::shared_alloc, ir::kAllocates));
  EXPECT_TRUE(ir::has_trait(Op::load, ir::kReadsMemory));
  EXPECT_FALSE(ir::has_trait(Op::load, ir::kPure));
  EXPECT_TRUE(ir::has_trait(Op::store, ir::kWritesMemory));
  EXPECT_TRUE(ir::has_trait(Op::atomic_rmw, ir::kReadsMemory) && ir::has_trait(Op::atomic_rmw, ir::kWritesMemory));
  EXPECT_TRUE(ir::has_trait(Op::barrier, ir::kSideEffects));
  EXPECT_TRUE(ir::has_trait(Op::fma, ir::kElementwise));
  EXPECT_FALSE(ir::has_trait(Op::reduce, ir::kElementwise));
  EXPECT_TRUE(ir::has_trait(Op::yield, ir::kTerminator));
}

// A barrier (result-less, no operands), a store (writes memory, no result) and an
// assert (an effect) all survive both cleanup passes even though nothing reads them.
TEST(CleanupPasses, KeepBarrierStoreAndResultlessOps) {
  auto f = trace("effects", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto offs = tl::arange(0, 64);
    tl::store(x + offs, tl::full<ty::f32>({64}, 1.0));
    tl::barrier();
    tl::device_assert(offs < 64, "in range");
    tl::barrier();
  });
  cleanup(*f);
  EXPECT_EQ(count_ops(*f, Op::barrier), 2) << f->str();
  EXPECT_EQ(count_ops(*f, Op::store), 1);
  EXPECT_EQ(count_ops(*f, Op::assert_), 1);
}

// A loop whose results nobody reads is kept when its body stores, and removed when its
// body only computes.
TEST(CleanupPasses, LoopsAreKeptForWhatTheirBodyDoes) {
  auto f = trace("loops", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 64);
    auto unused = tl::zeros<ty::f32>({64});
    for (auto i : tl::range(0, n)) unused = unused + 1.0f;  // pure: goes
    for (auto i : tl::range(0, n)) tl::store(x + offs + i * 64, tl::full<ty::f32>({64}, 2.0));
    for (auto i : tl::range(0, n)) tl::barrier();  // an effect: stays
  });
  cleanup(*f);
  EXPECT_EQ(count_ops(*f, Op::for_), 2) << f->str();
  EXPECT_EQ(count_ops(*f, Op::store), 1);
  EXPECT_EQ(count_ops(*f, Op::barrier), 1);
}

// Two equal reads merge only when nothing can write between them.
TEST(CleanupPasses, ReadsAreNotMergedAcrossWrites) {
  auto build = [](int between) {
    return trace("reads", [&](Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", false);
      auto offs = tl::arange(0, 64);
      auto a = tl::load(x + offs);
      if (between == 1) tl::store(x + offs, tl::full<ty::f32>({64}, 3.0));
      if (between == 2) tl::barrier();
      if (between == 3) tl::atomic_add(x + offs, tl::full<ty::f32>({64}, 1.0), sem::relaxed, scope::gpu);
      if (between == 4)
        for (auto i : tl::range(0, n)) tl::store(y + offs, tl::full<ty::f32>({64}, 1.0));
      auto b = tl::load(x + offs);
      tl::store(y + offs, a + b);
    });
  };
  auto none = build(0);
  cleanup(*none);
  EXPECT_EQ(count_ops(*none, Op::load), 1) << "equal reads with nothing between them merge\n" << none->str();
  for (int between : {1, 2, 3, 4}) {
    auto f = build(between);
    cleanup(*f);
    EXPECT_EQ(count_ops(*f, Op::load), 2) << "case " << between << "\n" << f->str();
  }
}

// A read inside a loop whose body writes is not the read before the loop: the write of
// one iteration comes before the read of the next.
TEST(CleanupPasses, ReadInLoopThatWritesIsNotMergedWithReadBefore) {
  auto f = trace("loop_reads", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 64);
    auto a = tl::load(x + offs);
    for (auto i : tl::range(0, n)) {
      auto b = tl::load(x + offs);
      tl::store(x + offs, b + 1.0f);
    }
    tl::store(x + offs + 64, a);
  });
  cleanup(*f);
  EXPECT_EQ(count_ops(*f, Op::load), 2) << f->str();
}

// ------------------------------------------------------------ the cache key

// One op of each kind in a function of its own; the key (ir::hash) must change when any
// attribute field changes, whether or not the op's readable form prints it.
TEST(CacheKey, EveryAttributeOfEveryOpReachesTheKey) {
  for (int i = 0; i < kNumOps; ++i) {
    Op kind = Op(i);
    SCOPED_TRACE(op_name(kind));
    auto make = [&](auto mutate) {
      ir::Function f;
      f.name = "k";
      ir::Builder b(f.body);
      ir::Operation& op = b.create(kind, {}, {ir::Type{DType::i32, DType::i32, {}}}, {});
      op.ints = {1, 0};
      mutate(op);
      return ir::hash(f);
    };
    std::string base = make([](ir::Operation&) {});
    EXPECT_NE(make([](ir::Operation& o) { o.i0 = 7; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.i0 = -7; }), make([](ir::Operation& o) { o.i0 = 7; }));
    EXPECT_NE(make([](ir::Operation& o) { o.i1 = 3; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.i1 = 1 | 2 << 8; }), make([](ir::Operation& o) { o.i1 = 1 | 1 << 8; }));
    EXPECT_NE(make([](ir::Operation& o) { o.f = 0.5; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.f = -0.0; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.f = 1e-300; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.ints = {0, 1}; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.ints.clear(); }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.str = "a"; }), base);
    EXPECT_NE(make([](ir::Operation& o) { o.str = "a b"; }), make([](ir::Operation& o) { o.str = "a"; }));
    EXPECT_NE(make([](ir::Operation& o) { o.results[0]->type = ir::Type::shared_buffer(DType::i32, {16}, 2); }),
              make([](ir::Operation& o) { o.results[0]->type = ir::Type::shared_buffer(DType::i32, {16}, 3); }));
  }
}

TEST(CacheKey, LocationsStayOutOfTheKey) {
  auto make = [](unsigned line) {
    ir::Function f;
    f.name = "k";
    ir::Builder b(f.body);
    b.constant(DType::i32, 5, {"a.cpp", line});
    return ir::hash(f);
  };
  EXPECT_EQ(make(1), make(2));
}

// ------------------------------------------------------------ builder and clone

std::unique_ptr<ir::Function> loop_kernel() {
  return trace("loop", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto offs = tl::arange(0, 64);
    auto acc = tl::zeros<ty::f32>({64});
    auto p = x + offs;
    for (auto i : tl::range(0, n, 64, tl::num_stages(3))) {
      acc = acc + tl::load(p);
      p = p + 64;
    }
    tl::store(x + offs, acc);
  });
}

ir::Operation* first_for(ir::Function& f) {
  ir::Operation* loop = nullptr;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::for_ && !loop) loop = &op;
  });
  return loop;
}

// A whole function cloned op by op is the same program: same key, still verifies.
TEST(Builder, CloneOfAFunctionIsTheSameProgram) {
  auto f = loop_kernel();
  ir::Function g;
  g.name = f->name;
  g.arg_info = f->arg_info;
  ir::ValueMap map;
  for (auto& a : f->body.args) map.map(a.get(), g.body.add_arg(a->type));
  ir::Builder b(g.body);
  ir::clone_ops(f->body, b, map);
  ir::verify(g);
  EXPECT_EQ(ir::hash(g), ir::hash(*f));
  EXPECT_EQ(g.str(false), f->str(false));
  // The copy owns its own values: nothing in it points into the original.
  ir::walk(g.body, [&](ir::Operation& op) {
    for (ir::Value* v : op.operands) EXPECT_FALSE(map.contains(v)) << "operand of the original left in the copy";
  });
}

// Peeling one iteration (what a pipeliner's prologue does): the loop body cloned before
// the loop with its arguments mapped to the inits; the result verifies.
TEST(Builder, CloneLoopBodyWithMappedArguments) {
  auto f = loop_kernel();
  ir::Operation* loop = first_for(*f);
  ASSERT_NE(loop, nullptr);
  ir::Block& body = *loop->regions[0];
  ir::ValueMap map;
  map.map(body.args[0].get(), loop->operands[0]);  // iv = lb
  for (size_t i = 1; i < body.args.size(); ++i) map.map(body.args[i].get(), loop->operands[2 + i]);
  ir::Builder b(f->body);
  b.before(*loop);
  ir::clone_ops(body, b, map, /*skip_terminator=*/true);
  // The loop now starts from the peeled iteration's yields.
  const ir::Operation* y = body.terminator();
  for (size_t i = 0; i + 3 < loop->operands.size(); ++i) loop->operands[3 + i] = map.lookup(y->operands[i]);
  ir::verify(*f);
  EXPECT_EQ(count_ops(*f, Op::load), 2) << f->str();
}

TEST(Builder, AddAndRemoveCarriedValues) {
  auto f = loop_kernel();
  cleanup(*f);
  std::string before = ir::hash(*f);
  ir::Operation* loop = first_for(*f);
  size_t carried = loop->results.size();
  ir::Builder b(f->body);
  b.before(*loop);
  ir::Value* init = b.constant(DType::i32, 0, loop->loc);
  ir::Value* arg = ir::add_carried_value(*loop, init);
  EXPECT_EQ(loop->results.size(), carried + 1);
  EXPECT_EQ(loop->regions[0]->args.size(), carried + 2);
  EXPECT_EQ(arg->index, int(carried) + 1);
  ir::verify(*f);
  EXPECT_NE(ir::hash(*f), before);
  ir::remove_carried_value(f->body, *loop, int(carried));
  passes::eliminate_dead_code(*f);  // the constant that started it
  ir::verify(*f);
  EXPECT_EQ(ir::hash(*f), before);
}

// acc is stored after the loop; p is read in the body: neither may go.
TEST(Builder, RemovingACarriedValueStillInUseIsACompileError) {
  auto f = loop_kernel();
  ir::Operation* loop = first_for(*f);
  ASSERT_EQ(loop->results.size(), 2u);
  int after = 0, in_body = 0;
  for (int i = 0; i < 2; ++i) {
    try {
      ir::remove_carried_value(f->body, *loop, i);
      ADD_FAILURE() << "expected a compile_error removing carried value " << i;
    } catch (const compile_error& e) {
      std::string what = e.what();
      after += what.find("still used after the loop") != std::string::npos;
      in_body += what.find("still read in the loop body") != std::string::npos;
      EXPECT_GT(e.line(), 0u) << what;
    }
  }
  EXPECT_EQ(after, 1);
  EXPECT_EQ(in_body, 1);
  ir::verify(*f);  // untouched
}

TEST(Builder, CreatedLoopVerifiesAndCarries) {
  ir::Function f;
  f.name = "built";
  ir::Value* x = f.body.add_arg(ir::Type{DType::ptr, DType::f32, {}});
  f.arg_info.push_back({"x", true});
  ir::Builder b(f.body);
  ir::SrcLoc here{__FILE__, unsigned(__LINE__)};
  ir::Value* zero = b.constant(DType::i32, 0, here);
  ir::Value* n = b.constant(DType::i32, 8, here);
  ir::Value* one = b.constant(DType::i32, 1, here);
  ir::Operation& loop = b.create_for(zero, n, one, {zero}, here);
  ir::Builder in(*loop.regions[0]);
  ir::Block& body = *loop.regions[0];
  ir::Value* next = in.create1(Op::add, {body.args[1].get(), body.args[0].get()}, ir::Type{DType::i32, DType::i32, {}}, here);
  in.create(Op::yield, {next}, {}, here);
  ir::Value* as_f = b.create1(Op::cast, {loop.result()}, ir::Type{DType::f32, DType::f32, {}}, here);
  b.create(Op::store, {x, as_f}, {}, here);
  ir::verify(f);
  EXPECT_NE(f.str().find("for"), std::string::npos);
}

// ------------------------------------------------------------ shared buffers

// Two allocations of one type are two buffers (CSE keeps both); an unused one goes (DCE),
// one a loop with an effect carries stays.
TEST(SharedAlloc, NeverMergedDeletedWhenUnused) {
  ir::Function f;
  f.name = "allocs";
  ir::Builder b(f.body);
  ir::Type t = ir::Type::shared_buffer(DType::f16, {32, 32}, 2);
  ir::Value* kept1 = b.create1(Op::shared_alloc, {}, t, {"user.cpp", 5});
  ir::Value* kept2 = b.create1(Op::shared_alloc, {}, t, {"user.cpp", 6});
  b.create1(Op::shared_alloc, {}, t, {"user.cpp", 7});  // unused
  ir::Value* c0 = b.constant(DType::i32, 0, {"user.cpp", 8});
  ir::Value* c1 = b.constant(DType::i32, 1, {"user.cpp", 8});
  ir::Operation& loop = b.create_for(c0, c1, c1, {kept1, kept2}, {"user.cpp", 8});
  ir::Builder in(*loop.regions[0]);
  in.create(Op::barrier, {}, {}, {"user.cpp", 9});
  in.create(Op::yield, {loop.regions[0]->args[1].get(), loop.regions[0]->args[2].get()}, {}, {"user.cpp", 9});
  ir::verify(f);
  EXPECT_NE(f.str().find("shared_alloc : smem<2 x tile<32x32xf16>>"), std::string::npos) << f.str();
  cleanup(f);
  EXPECT_EQ(count_ops(f, Op::shared_alloc), 2) << f.str();
  EXPECT_EQ(loop.operands[3], kept1);
  EXPECT_EQ(loop.operands[4], kept2);

  // The verifier: no operands, one shared-buffer result.
  ir::Function g;
  g.name = "bad_alloc";
  ir::Builder gb(g.body);
  gb.create1(Op::shared_alloc, {}, ir::Type{DType::f32, DType::f32, {16}}, {"user.cpp", 40});
  try {
    ir::verify(g);
    FAIL() << "a register-typed shared_alloc verified";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("shared_alloc"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 40u);
  }
}

TEST(SharedBufferType, PrintsComparesAndIsCheckedByTheVerifier) {
  ir::Type t = ir::Type::shared_buffer(DType::bf16, {64, 64}, 3);
  EXPECT_EQ(t.str(), "smem<3 x tile<64x64xbf16>>");
  EXPECT_TRUE(t.is_shared());
  EXPECT_NE(t, ir::Type::shared_buffer(DType::bf16, {64, 64}, 2));
  EXPECT_NE(t, (ir::Type{DType::bf16, DType::bf16, {64, 64}}));

  // A shared buffer is not a value an elementwise op may read.
  ir::Function f;
  f.name = "bad";
  ir::Value* buf = f.body.add_arg(t);
  ir::Builder b(f.body);
  b.create1(Op::add, {buf, buf}, t, {"user.cpp", 12});
  try {
    ir::verify(f);
    FAIL() << "expected the verifier to refuse";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("shared buffer"), std::string::npos) << e.what();
    EXPECT_EQ(e.line(), 12u);
  }
  // Stage counts need not be powers of two; tile dims must be.
  ir::Function g;
  g.name = "npot";
  ir::Value* odd = g.body.add_arg(ir::Type::shared_buffer(DType::f32, {48}, 3));
  ir::Builder gb(g.body);
  ir::Value* c = gb.constant(DType::i1, 1, {"user.cpp", 20});
  ir::Operation& br = gb.create(Op::if_, {c}, {odd->type}, {"user.cpp", 20});
  for (int r = 0; r < 2; ++r) {
    ir::Builder rb(*br.add_region());
    rb.create(Op::yield, {odd}, {}, {"user.cpp", 20});
  }
  EXPECT_THROW(ir::verify(g), compile_error);
}

// ------------------------------------------------------------ shared tiles

TEST(CleanupPasses, TwoSharedReadsAcrossAWriteAreNotMerged) {
  auto build = [](bool write_between) {
    return trace("smem_reads", [&](Trace& t) {
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto offs = tl::arange(0, 64);
      auto buf = tl::shared<ty::f32>({1, 64});
      buf[0].store(tl::full<ty::f32>({64}, 1.0));
      auto a = buf[0].load();
      if (write_between) buf[0].store(tl::full<ty::f32>({64}, 2.0));
      auto b = buf[0].load();
      tl::store(y + offs, a + b);
    });
  };
  auto same = build(false);
  cleanup(*same);
  EXPECT_EQ(count_ops(*same, Op::shared_load), 1) << same->str();
  auto f = build(true);
  cleanup(*f);
  EXPECT_EQ(count_ops(*f, Op::shared_load), 2) << f->str();
  EXPECT_EQ(count_ops(*f, Op::shared_store), 2) << "stores have no results but are kept\n" << f->str();
}

// The op kinds of a block in order, as text: "shared_store barrier shared_load".
std::string ops_of(const ir::Block& b) {
  std::string s;
  for (auto& op : b.ops)
    if (op->op == Op::shared_load || op->op == Op::shared_store || op->op == Op::barrier || op->op == Op::for_ ||
        op->op == Op::if_ || op->op == Op::global_load_to_shared || op->op == Op::async_wait)
      s += std::string(s.empty() ? "" : " ") + op_name(op->op);
  return s;
}

TEST(InsertBarriers, BetweenAWriteAndAReadOfOneBufferOnly) {
  auto f = trace("raw", [&](Trace& t) {
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto offs = tl::arange(0, 64);
    auto a = tl::shared<ty::f32>({2, 64});
    auto b = tl::shared<ty::f32>({1, 64});
    a[0].store(tl::full<ty::f32>({64}, 1.0));
    auto u = b[0].load();  // another buffer: no barrier
    auto v = a[1].load();  // another stage of `a`, but the stage is a run-time fact: one barrier
    auto w = a[0].load();  // a second read: none
    tl::store(y + offs, u + v + w);
  });
  EXPECT_EQ(passes::insert_barriers(*f), 1);
  ir::verify(*f);
  EXPECT_EQ(ops_of(f->body), "shared_store shared_load barrier shared_load shared_load") << f->str();
}

TEST(InsertBarriers, NoneWhereTheUsersBarrierAlreadySeparates) {
  auto f = trace("user_barrier", [&](Trace& t) {
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto a = tl::shared<ty::f32>({1, 64});
    a[0].store(tl::full<ty::f32>({64}, 1.0));
    tl::barrier();
    tl::store(y + tl::arange(0, 64), a[0].load());
  });
  EXPECT_EQ(passes::insert_barriers(*f), 0) << f->str();
  EXPECT_EQ(ops_of(f->body), "shared_store barrier shared_load");
}

// A loop that writes and then reads one buffer each iteration: a barrier before the read
// (other threads' writes) and one before the write (the previous iteration's reads,
// over the back-edge). Nothing before the loop needs one.
TEST(InsertBarriers, AcrossTheLoopBackEdgeAndOutOfBranches) {
  auto f = trace("loop", [&](Trace& t) {
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 64);
    auto a = tl::shared<ty::f32>({2, 64});
    auto acc = tl::zeros<ty::f32>({64});
    for (auto k : tl::range(0, n)) {
      a[k % 2].store(tl::full<ty::f32>({64}, 1.0) + k.to<ty::f32>());
      acc = acc + a[k % 2].load();
    }
    tl::store(y + offs, acc);
  });
  EXPECT_EQ(passes::insert_barriers(*f), 2);
  ir::verify(*f);
  ir::Operation* loop = nullptr;
  for (auto& op : f->body.ops)
    if (op->op == Op::for_) loop = op.get();
  ASSERT_TRUE(loop);
  EXPECT_EQ(ops_of(*loop->regions[0]), "barrier shared_store barrier shared_load") << f->str();

  // A write in one branch reaches the read after the if; reads in a loop that never
  // writes need nothing more.
  auto g = trace("branch", [&](Trace& t) {
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 64);
    auto a = tl::shared<ty::f32>({1, 64});
    tl::if_(n > 0, [&] { a[0].store(tl::full<ty::f32>({64}, 1.0)); });
    auto acc = tl::zeros<ty::f32>({64});
    for (auto k : tl::range(0, n)) {
      (void)k;
      acc = acc + a[0].load();
    }
    tl::store(y + offs, acc);
  });
  EXPECT_EQ(passes::insert_barriers(*g), 1);
  ir::verify(*g);
  EXPECT_EQ(ops_of(g->body), "if barrier for") << g->str();
  // Running the pass again finds nothing left to do.
  EXPECT_EQ(passes::insert_barriers(*g), 0);
  EXPECT_EQ(passes::insert_barriers(*f), 0);
}

}  // namespace

// A direct-to-shared copy lands at the async_wait, not when issued: a barrier between the
// copy and the wait (the user's, here) does not publish it, so the read after the wait
// still gets one, after the wait. The double-buffered loop: a barrier before the copy
// into the stage other threads read last iteration, and one between the wait and the read.
TEST(InsertBarriers, AsyncCopiesArePublishedAfterTheirWait) {
  auto f = trace("copy_wait", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto a = tl::shared<ty::f32>({1, 64});
    tl::amd::global_load_to_shared(a[0], x + tl::arange(0, 64));
    tl::barrier();
    tl::amd::async_wait(0);
    tl::store(y + tl::arange(0, 64), tl::amd::load_shared_relaxed(a[0]));
  });
  EXPECT_EQ(passes::insert_barriers(*f), 1) << f->str();
  ir::verify(*f);
  EXPECT_EQ(ops_of(f->body), "global_load_to_shared barrier async_wait barrier shared_load") << f->str();
  EXPECT_NE(f->str().find("async_wait num_outstanding=0"), std::string::npos) << f->str();
  EXPECT_NE(f->str().find("shared_load relaxed"), std::string::npos) << f->str();

  auto g = trace("pipe", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 64);
    auto a = tl::shared<ty::f32>({2, 64});
    tl::amd::global_load_to_shared(a[0], x + offs);
    auto acc = tl::zeros<ty::f32>({64});
    for (auto k : tl::range(0, n)) {
      tl::amd::global_load_to_shared(a[(k + 1) % 2], x + (k + 1) * 64 + offs);
      tl::amd::async_wait(1);
      acc = acc + tl::amd::load_shared_relaxed(a[k % 2]);
    }
    tl::store(y + offs, acc);
  });
  passes::insert_barriers(*g);
  ir::verify(*g);
  ir::Operation* loop = nullptr;
  for (auto& op : g->body.ops)
    if (op->op == Op::for_) loop = op.get();
  ASSERT_TRUE(loop);
  EXPECT_EQ(ops_of(*loop->regions[0]), "barrier global_load_to_shared async_wait barrier shared_load") << g->str();
}

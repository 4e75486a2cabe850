// The traced program does not depend on the order the host compiler evaluates a call's
// arguments in (codegen/passes/canonical_order.cpp): each program here is spelled twice,
// its argument evaluation forced one way and the other by explicit temporaries, and once
// as one expression (the order of whichever compiler built this test); the three give one
// tile IR and one AMD code object. Effects keep their order.
#include <gtest/gtest.h>

#include <string>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/ir.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::ptr_arg;
using tltest::scalar_arg;

// A program as this build evaluated it (a copy taken before Trace::finish) and as the
// tracer hands it over (in the canonical order).
struct Traced {
  std::unique_ptr<ir::Function> as_evaluated, canonical;
};
template <class F> Traced trace(const char* name, F&& body) {
  Trace t(name, ir::SrcLoc{__FILE__, unsigned(__LINE__)});
  body(t);
  auto as_evaluated = ir::clone_function(t.function());
  return {std::move(as_evaluated), t.finish()};
}

enum class Spelling { a_first, b_first, one_expression };

// Triton's tutorial matmul loop: acc += A[:, k] . B[k, :], the two loads the dot's operands.
Traced matmul(Spelling s) {
  return trace("canon_matmul", [&](Trace& t) {
    auto A = ptr_arg<ty::bf16>(t, "A", true);
    auto B = ptr_arg<ty::bf16>(t, "B", true);
    auto C = ptr_arg<ty::f32>(t, "C", true);
    auto K = scalar_arg<ty::i32>(t, "K", true);
    auto rm = tl::arange(0, 64), rn = tl::arange(0, 64), rk = tl::arange(0, 32);
    auto a = A + (tl::expand_dims(rm, 1) * K + tl::expand_dims(rk, 0));
    auto b = B + (tl::expand_dims(rk, 1) * 64 + tl::expand_dims(rn, 0));
    auto acc = tl::zeros<ty::f32>({64, 64});
    for (auto k : tl::range(0, K, 32, tl::num_stages(3))) {
      (void)k;
      // (One line, as one expression is: a statement's ops are those traced from its line on.)
      if (s == Spelling::a_first) {
        auto ta = tl::load(a); auto tb = tl::load(b); acc = acc + tl::dot(ta, tb);
      } else if (s == Spelling::b_first) {
        auto tb = tl::load(b); auto ta = tl::load(a); acc = acc + tl::dot(ta, tb);
      } else {
        acc = acc + tl::dot(tl::load(a), tl::load(b));
      }
      a = a + 32;
      b = b + 32 * 64;
    }
    tl::store(C + (tl::expand_dims(rm, 1) * 64 + tl::expand_dims(rn, 0)), acc);
  });
}

// A row's prefix sum stored through an address computed in the store's own arguments.
Traced cumsum(Spelling s) {
  return trace("canon_cumsum", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", false);
    auto c = tl::arange(0, 256);
    auto m = c < cols;
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * cols + c, m, 0.0f);
    if (s == Spelling::a_first) {  // the address first (clang's order)
      auto at = y + row * cols + c; auto sum = tl::cumsum(v, 0); tl::store(at, sum, m);
    } else if (s == Spelling::b_first) {  // the value first (GCC's)
      auto sum = tl::cumsum(v, 0); auto at = y + row * cols + c; tl::store(at, sum, m);
    } else {
      tl::store(y + row * cols + c, tl::cumsum(v, 0), m);
    }
  });
}

std::string canonical(const Traced& t) {
  ir::verify(*t.canonical);
  return t.canonical->str(/*with_locations=*/false);
}
std::string as_evaluated(const Traced& t) { return t.as_evaluated->str(/*with_locations=*/false); }

TEST(CanonicalOrder, DotOperandLoadsInEitherOrderTraceOneProgram) {
  auto a_first = canonical(matmul(Spelling::a_first));
  EXPECT_EQ(a_first, canonical(matmul(Spelling::b_first)));
  EXPECT_EQ(a_first, canonical(matmul(Spelling::one_expression)));
  // Traced as spelled, the two differ (what the pass is for).
  EXPECT_NE(as_evaluated(matmul(Spelling::a_first)), as_evaluated(matmul(Spelling::b_first)));
}

TEST(CanonicalOrder, OperandsAreComputedLastFirst) {
  // GCC's order: the dot's B operand loaded before A (the order the recorded VGPR
  // ceilings were measured in), the store's value computed before its address.
  auto f = std::move(matmul(Spelling::a_first).canonical);
  ir::Block* body = nullptr;
  for (auto& op : f->body.ops)
    if (op->op == Op::for_) body = op->regions[0].get();
  ASSERT_NE(body, nullptr);
  int pos_a = -1, pos_b = -1, pos = 0;
  const ir::Operation* dot = nullptr;
  for (auto& op : body->ops)
    if (op->op == Op::dot) dot = op.get();
  ASSERT_NE(dot, nullptr);
  for (auto& op : body->ops) {
    if (op->results.size() == 1 && op->result() == dot->operands[0]) pos_a = pos;
    if (op->results.size() == 1 && op->result() == dot->operands[1]) pos_b = pos;
    ++pos;
  }
  ASSERT_GE(pos_a, 0);
  ASSERT_GE(pos_b, 0);
  EXPECT_LT(pos_b, pos_a) << f->str(false);

  auto g = std::move(cumsum(Spelling::a_first).canonical);
  int scan = -1, address = -1;
  pos = 0;
  const ir::Operation* store = nullptr;
  for (auto& op : g->body.ops)
    if (op->op == Op::store) store = op.get();
  ASSERT_NE(store, nullptr);
  for (auto& op : g->body.ops) {
    if (op->op == Op::scan) scan = pos;
    if (op->results.size() == 1 && op->result() == store->operands[0]) address = pos;
    ++pos;
  }
  ASSERT_GE(scan, 0);
  ASSERT_GE(address, 0);
  EXPECT_LT(scan, address) << g->str(false);
}

TEST(CanonicalOrder, StoredValueAndAddressInEitherOrderTraceOneProgram) {
  auto a_first = canonical(cumsum(Spelling::a_first));
  EXPECT_EQ(a_first, canonical(cumsum(Spelling::b_first)));
  EXPECT_EQ(a_first, canonical(cumsum(Spelling::one_expression)));
  EXPECT_NE(as_evaluated(cumsum(Spelling::a_first)), as_evaluated(cumsum(Spelling::b_first)));
}

TEST(CanonicalOrder, EitherSpellingCompilesToOneAmdCodeObject) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto one = matmul(Spelling::a_first), other = matmul(Spelling::b_first);
    auto x = tltest::compile_for(arch, *one.canonical), y = tltest::compile_for(arch, *other.canonical);
    EXPECT_EQ(x.binary, y.binary) << arch << ": matmul";
    EXPECT_EQ(x.report, y.report) << arch << ": matmul";
    auto p = cumsum(Spelling::a_first), q = cumsum(Spelling::b_first);
    EXPECT_EQ(tltest::compile_for(arch, *p.canonical).binary, tltest::compile_for(arch, *q.canonical).binary)
        << arch << ": cumsum";
  }
}

// The op kinds of a block that write, read or wait, in order.
std::string effects(const ir::Block& b) {
  std::string s;
  for (auto& op : b.ops)
    if (op->op == Op::load || op->op == Op::store || op->op == Op::atomic_rmw || op->op == Op::barrier)
      s += std::string(op_name(op->op)) + " ";
  return s;
}

TEST(CanonicalOrder, LoadsStayBetweenTheEffectsAroundThem) {
  // Each load reads what the store before it wrote; the atomics' order is the program's.
  auto traced = [](bool swap) {
    return trace("canon_effects", [&](Trace& t) {
      auto p = ptr_arg<ty::f32>(t, "p", true);
      auto q = ptr_arg<ty::f32>(t, "q", true);
      auto c = tl::arange(0, 64);
      auto first = tl::load(p + c);
      tl::store(p + c, first + 1.0f);
      auto second = tl::load(p + c);  // after the store: sees first + 1
      tl::store(q + c, second * 2.0f);
      tl::barrier();
      if (swap) {
        tl::atomic_add(q + c, 3.0f);
        tl::atomic_add(p + c, 4.0f);
      } else {
        tl::atomic_add(p + c, 4.0f);
        tl::atomic_add(q + c, 3.0f);
      }
      // A load used only after the atomics still reads before them.
      auto early = tl::load(q + c);
      tl::barrier();
      tl::store(p + c, early);
    });
  };
  auto f = traced(false);
  const std::string before = effects(f.as_evaluated->body);
  EXPECT_EQ(effects(f.canonical->body), before);
  EXPECT_EQ(before, "load store load store barrier atomic_rmw atomic_rmw load barrier store ");
  // Effects are never swapped to agree: the two atomics' orders stay two programs.
  EXPECT_NE(canonical(traced(false)), canonical(traced(true)));
}

// The loop and branch below touch x first or y first, as one expression's operands are
// evaluated in either order (the two spellings on one line: one statement).
Traced carried(bool y_first) {
  return trace("canon_carried", [&](Trace& t) {
    auto p = ptr_arg<ty::f32>(t, "p", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto c = tl::arange(0, 64);
    auto x = tl::zeros<ty::f32>({64});
    auto y = tl::zeros<ty::i32>({64});
    for (auto k : tl::range(0, n, 1)) {
      if (y_first) {
        auto yv = y; auto xv = x; x = xv + yv.to<ty::f32>() + tl::load(p + c); y = yv + k;
      } else {
        auto xv = x; auto yv = y; x = xv + yv.to<ty::f32>() + tl::load(p + c); y = yv + k;
      }
      tl::if_(k > 3, [&] {
        if (y_first) {
          auto yv = y; auto xv = x; x = xv * 2.0f; y = yv * 2;
        } else {
          auto xv = x; auto yv = y; x = xv * 2.0f; y = yv * 2;
        }
      });
    }
    tl::store(p + c, x + y.to<ty::f32>());
  });
}

const ir::Operation* first_of(const ir::Block& b, Op kind) {
  for (auto& op : b.ops)
    if (op->op == kind) return op.get();
  return nullptr;
}

TEST(CanonicalOrder, LoopsAndBranchesCarryTilesInOneOrder) {
  auto y_first = carried(true), x_first = carried(false);
  // (The tracer's first-touch order would give (y, x) and (x, y).)
  EXPECT_EQ(as_evaluated(y_first), as_evaluated(x_first));
  EXPECT_EQ(canonical(y_first), canonical(x_first));
  // A branch gives the tiles it assigned in the order they were made (x declared first);
  // the tracer makes a loop carry them so too, and the canonical order carries them in
  // the order the body reads them: y, converted before x + y is added (the last operand
  // first).
  for (const Traced* t : {&y_first, &x_first}) {
    const ir::Operation* loop = first_of(t->as_evaluated->body, Op::for_);
    ASSERT_NE(loop, nullptr);
    ASSERT_EQ(loop->results.size(), 2u);
    EXPECT_EQ(loop->result(0)->type.dtype, DType::f32) << as_evaluated(*t);
    const ir::Operation* branch = first_of(*loop->regions[0], Op::if_);
    ASSERT_NE(branch, nullptr);
    ASSERT_EQ(branch->results.size(), 2u);
    EXPECT_EQ(branch->result(0)->type.dtype, DType::f32) << as_evaluated(*t);
  }
  const ir::Operation* loop = first_of(y_first.canonical->body, Op::for_);
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->results.size(), 2u);
  EXPECT_EQ(loop->result(0)->type.dtype, DType::i32) << canonical(y_first);
  EXPECT_EQ(loop->result(1)->type.dtype, DType::f32) << canonical(y_first);
}

}  // namespace

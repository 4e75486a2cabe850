// Misuse found while tracing throws tl::trace_error naming the user's file and line
// and saying what was expected. Misuse the C++ compiler can see is a compile error,
// asserted here with requires-expressions.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/reference.hpp"

namespace ty = tl::ty;

namespace {

template <class K> void expect_trace_error(K& k, unsigned line, const std::string& what) {
  auto X = tltest::test_device().alloc<tl::f32>(4096);
  try {
    k[tl::grid(1)](X);
    ADD_FAILURE() << "no error was raised (expected: " << what << ")";
  } catch (const tl::trace_error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.file().find("trace_errors_test.cpp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(TraceErrors, ArangeLengthNotAPowerOfTwo) {
  const unsigned line = __LINE__ + 2;
  auto k = tl::kernel("e_arange", [](tl::ptr<tl::f32> x) {
    auto r = tl::arange(0, 100);
    tl::store(x + r, r.to<tl::f32>());
  });
  expect_trace_error(k, line, "not a power of two");
}

TEST(TraceErrors, ShapeMismatchInArithmetic) {
  const unsigned line = __LINE__ + 4;
  auto k = tl::kernel("e_shape", [](tl::ptr<tl::f32> x) {
    auto a = tl::load(x + tl::arange(0, 64));
    auto b = tl::load(x + tl::arange(0, 128));
    tl::store(x + tl::arange(0, 64), a + b);
  });
  expect_trace_error(k, line, "do not broadcast");
}

TEST(TraceErrors, MaskOfTheWrongShape) {
  const unsigned line = __LINE__ + 5;
  auto k = tl::kernel("e_mask", [](tl::ptr<tl::f32> x) {
    auto r = tl::expand_dims(tl::arange(0, 16), 1);
    auto c = tl::arange(0, 1024);
    auto p = x + r * 1024 + tl::expand_dims(c, 0);
    auto v = tl::load(p, c < 100);
    tl::store(p, v);
  });
  expect_trace_error(k, line, "mask shape [1024] does not match pointer shape [16, 1024]");
}

TEST(TraceErrors, TileMadeInsideALoopUsedAfterIt) {
  // A tile escapes its loop body through a C++ container: the error names the line that
  // uses it after the loop, and the line that made it.
  const unsigned made = __LINE__ + 4, line = made + 2;
  auto k = tl::kernel("e_escape", [](tl::ptr<tl::f32> x) {
    std::vector<tl::tile<ty::f32>> kept;
    for (auto i : tl::range(0, 4)) {
      kept.push_back(tl::load(x + tl::arange(0, 16)) + i.to<tl::f32>());
    }
    tl::store(x + tl::arange(0, 16), kept[0]);
  });
  expect_trace_error(k, line, "used after the body ended");
  expect_trace_error(k, line, fmt::format("body (at {}:{})", __FILE__, made));
}

TEST(TraceErrors, LoopCarriedTileChangesShape) {
  const unsigned line = __LINE__ + 4;
  auto k = tl::kernel("e_carried", [](tl::ptr<tl::f32> x) {
    auto acc = tl::zeros<tl::f32>({16});
    for (auto i : tl::range(0, 4)) {
      acc = tl::load(x + tl::arange(0, 32)) + i.to<tl::f32>();
    }
    tl::store(x + tl::arange(0, 16), acc);
  });
  expect_trace_error(k, line, "loop-carried tile changes");
}

TEST(TraceErrors, ReductionAxisOutOfRange) {
  const unsigned line = __LINE__ + 3;
  auto k = tl::kernel("e_axis", [](tl::ptr<tl::f32> x) {
    auto v = tl::load(x + tl::arange(0, 32));
    tl::store(x, tl::sum(v, 1));
  });
  expect_trace_error(k, line, "axis 1 is out of range");
}

TEST(TraceErrors, DtypeMismatchInStore) {
  // The public API makes this a compile error; the tracer checks it too for
  // type-erased callers, and says which types met.
  const unsigned line = __LINE__ + 3;
  auto k = tl::kernel("e_dtype", [](tl::ptr<tl::f32> x) {
    auto v = tl::load(x + tl::arange(0, 32)).to<tl::bf16>();
    tl::detail::store((x + tl::arange(0, 32)).get(), v.get(), nullptr, std::source_location::current());
  });
  expect_trace_error(k, line, "value of type bf16 stored through a pointer to f32");
}

TEST(TraceErrors, IntegerOnlyOperatorOnFloats) {
  const unsigned line = __LINE__ + 3;
  auto k = tl::kernel("e_bits", [](tl::ptr<tl::f32> x) {
    auto v = tl::load(x + tl::arange(0, 32));
    tl::store(x + tl::arange(0, 32), v & v);
  });
  expect_trace_error(k, line, "needs integer operands");
}

TEST(TraceErrors, TooManyDimensions) {
  const unsigned line = __LINE__ + 2;
  auto k = tl::kernel("e_rank", [](tl::ptr<tl::f32> x) {
    auto z = tl::zeros<tl::f32>({2, 2, 2, 2, 2, 2});
    tl::store(x + tl::arange(0, 64), tl::reshape(z, {64}));
  });
  expect_trace_error(k, line, "at most 5 dimensions");
}

// What C++ itself rejects: a store through a non-pointer, pointer times float,
// storing a value of another element type.
template <class P, class V> concept can_store = requires(P p, V v) { tl::store(p, v); };
template <class A, class B> concept can_multiply = requires(A a, B b) { a * b; };
static_assert(!can_store<tl::f32, tl::f32>, "storing through a non-pointer must not compile");
static_assert(!can_multiply<tl::ptr<tl::f32>, tl::f32>, "multiplying a pointer must not compile");
static_assert(can_store<tl::ptr<tl::f32>, tl::f32>);
static_assert(can_multiply<tl::f32, tl::bf16>);

// A break out of a tl::range body: the range-for's `++`, which closes the traced loop,
// never runs. The error names the tl::range's line.
TEST(TraceErrors, BreakOutOfARangeBody) {
  const unsigned line = __LINE__ + 4;
  auto k = tl::kernel("e_break", [](tl::ptr<tl::f32> x) {
    auto acc = tl::zeros<tl::f32>({16});
    int traced = 0;
    for (auto i : tl::range(0, 4)) {
      acc += tl::load(x + i * 16 + tl::arange(0, 16));
      if (++traced == 1) break;
    }
    tl::store(x + tl::arange(0, 16), acc);
  });
  expect_trace_error(k, line, "left by break or return");
}

TEST(TraceErrors, ReturnFromARangeBody) {
  const unsigned line = __LINE__ + 2;
  auto k = tl::kernel("e_return", [](tl::ptr<tl::f32> x) {
    for (auto i : tl::range(0, 4)) {
      tl::store(x + i * 16 + tl::arange(0, 16), tl::zeros<tl::f32>({16}));
      return;
    }
  });
  expect_trace_error(k, line, "left by break or return");
}

// continue still reaches `++`: the rest of the body is not traced, and the loop is whole.
TEST(TraceErrors, ContinueInARangeBodyIsFine) {
  auto k = tl::kernel("e_continue", [](tl::ptr<tl::f32> x) {
    auto acc = tl::zeros<tl::f32>({16});
    bool skip_rest = true;
    for (auto i : tl::range(0, 4)) {
      acc += (i + 1).to<tl::f32>();
      if (skip_rest) continue;
      acc += 100.0f;
    }
    tl::store(x + tl::arange(0, 16), acc);
  });
  auto X = tltest::test_device().alloc<tl::f32>(16);
  k[tl::grid(1)](X);
  for (float v : X.download()) EXPECT_EQ(v, 10.0f);
}

// A tile kept in a static across traces: its value belonged to the first trace's function.
// The second trace (another specialization) must say so at the line that uses it.
TEST(TraceErrors, TileKeptInAStaticAcrossTraces) {
  const unsigned line = __LINE__ + 5;
  auto k = tl::kernel("e_static", [](tl::ptr<tl::f32> x, int scale) {
    static auto kept = tl::arange(0, 16).to<tl::f32>();
    auto v = tl::load(x + tl::arange(0, 16)) * float(scale);
    tl::store(x + tl::arange(0, 16),
              v + kept);
  });
  auto X = tltest::test_device().alloc<tl::f32>(16);
  X.upload(std::vector<float>(16, 1.0f));
  k[tl::grid(1)](X, 1);  // the trace that made `kept`: fine
  auto got = X.download();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], 1.0f + float(i));
  try {
    k[tl::grid(1)](X, 2);
    ADD_FAILURE() << "no error for a tile kept from an earlier trace";
  } catch (const tl::trace_error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.file().find("trace_errors_test.cpp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("made by an earlier trace"), std::string::npos) << e.what();
  }
}

// A static assigned afresh in every trace is an ordinary tile of each.
TEST(TraceErrors, StaticTileAssignedInEveryTraceIsFine) {
  auto k = tl::kernel("e_static_ok", [](tl::ptr<tl::f32> x, int scale) {
    static tl::tile<ty::f32> kept;
    kept = tl::arange(0, 16).to<tl::f32>() * float(scale);
    tl::store(x + tl::arange(0, 16), kept);
  });
  auto X = tltest::test_device().alloc<tl::f32>(16);
  for (int scale : {1, 2, 3}) {
    k[tl::grid(1)](X, scale);
    auto got = X.download();
    for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], float(i * scale));
  }
}

// A kernel whose body launches the specialization being traced waited forever for its
// own trace (the specialization's lock): a launch error at the inner launch's line.
TEST(TraceErrors, KernelLaunchingItselfFromItsTrace) {
  auto X = tltest::test_device().alloc<tl::f32>(16);
  unsigned line = 0;
  std::function<void()> launch_again;
  auto k = tl::kernel("e_self", [&](tl::ptr<tl::f32> x) {
    tl::store(x + tl::arange(0, 16), tl::zeros<tl::f32>({16}));
    launch_again();
  });
  launch_again = [&] { line = __LINE__; k[tl::grid(1)](X); };
  // Run where a hang cannot stop the test binary (the thread is left behind if it hangs).
  auto outcome = std::make_shared<std::promise<std::string>>();
  std::thread([&, outcome] {
    try {
      k[tl::grid(1)](X);
      outcome->set_value("no error");
    } catch (const tl::launch_error& e) {
      outcome->set_value(e.line() == line && std::string(e.what()).find("launched from inside its own trace") !=
                                                 std::string::npos
                             ? "ok"
                             : std::string("wrong error: ") + e.what());
    } catch (const std::exception& e) {
      outcome->set_value(std::string("untyped error: ") + e.what());
    }
  }).detach();
  auto f = outcome->get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the launch hangs";
  EXPECT_EQ(f.get(), "ok");
}

// A tile declared without a value (`tl::f32 v;`) and read before it is given one: the
// error names the line of the read, whichever operation reads it: an operator, a function
// (which may refuse the placeholder's type first), a loop bound, a branch condition.
TEST(TraceErrors, UseOfATileNeverGivenAValueNamesTheUse) {
  unsigned line = 0;
  int form = 0;
  auto k = tl::kernel("e_unassigned", [&](tl::ptr<tl::f32> x) {
    auto r = tl::arange(0, 16);
    tl::f32 v;
    tl::i32 n;
    tl::i1 c;
    auto y = tl::zeros<tl::f32>({16});
    if (form == 0) { line = __LINE__; y = y + v; }
    if (form == 1) { line = __LINE__; y = tl::exp(v) + y; }
    if (form == 2) { line = __LINE__; y = y + tl::reshape(tl::reshape(v, {4, 4}), {16}); }
    if (form == 3) { line = __LINE__; for (auto i : tl::range(0, n)) y = y + i.to<tl::f32>(); }
    if (form == 4) { line = __LINE__; tl::if_(c, [&] { y = y + 1.0f; }); }
    if (form == 5) { line = __LINE__; tl::store(x + r, v); }
    tl::store(x + r, y);
  });
  for (form = 0; form < 6; ++form) {
    SCOPED_TRACE(form);
    auto X = tltest::test_device().alloc<tl::f32>(16);
    try {
      k[tl::grid(1)](X);
      ADD_FAILURE() << "no error was raised";
    } catch (const tl::trace_error& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(e.file().find("trace_errors_test.cpp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("use of a tile that was never given a value"), std::string::npos)
          << e.what();
    }
  }
}

// Assigning a tile declared without a value inside a loop (its value after it would be
// undefined where the body did not run): the error names the assignment's line and the
// loop's. In a tl::if_ the branch defines the tile (semantics_test's TileDefinitions); one
// assigned in one branch only has no value after it, and its use says so at its line.
TEST(TraceErrors, TileWithoutAValueAssignedInsideALoopOrOneBranch) {
  unsigned line = 0, opened = 0;
  bool branch = false;
  auto k = tl::kernel("e_unassigned_set", [&](tl::ptr<tl::f32> x, tl::i32 n) {
    auto r = tl::arange(0, 16);
    tl::f32 v;
    if (branch) {
      tl::if_(n > 0, [&] { v = tl::load(x + r) * 2.0f; });
      line = __LINE__; tl::store(x + r, v);
    } else {
      opened = __LINE__ + 1;
      for (auto i : tl::range(0, n)) {
        line = __LINE__; v = tl::load(x + r + i);
      }
      tl::store(x + r, v);
    }
  });
  for (bool b : {false, true}) {
    branch = b;
    SCOPED_TRACE(b ? "branch" : "loop");
    auto X = tltest::test_device().alloc<tl::f32>(64);
    try {
      k[tl::grid(1)](X, 3);
      ADD_FAILURE() << "no error was raised";
    } catch (const tl::trace_error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.line(), line) << msg;
      EXPECT_NE(e.file().find("trace_errors_test.cpp"), std::string::npos) << msg;
      if (b) {
        EXPECT_NE(msg.find("use of a tile that was never given a value"), std::string::npos) << msg;
        continue;
      }
      EXPECT_NE(msg.find("cannot be assigned inside a tl::range loop (the one at "), std::string::npos) << msg;
      EXPECT_NE(msg.find(fmt::format("trace_errors_test.cpp:{})", opened)), std::string::npos) << msg;
      EXPECT_NE(msg.find("before the loop"), std::string::npos) << msg;
    }
  }
}

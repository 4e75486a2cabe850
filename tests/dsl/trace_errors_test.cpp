// Misuse found while tracing throws tl::trace_error naming the user's file and line
// and saying what was expected. Misuse the C++ compiler can see is a compile error,
// asserted here with requires-expressions.
#include <string>
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
  // A tile escapes its loop body through a C++ container: the error names the line
  // that made it (the use's own line is not known to the tracer).
  const unsigned line = __LINE__ + 4;
  auto k = tl::kernel("e_escape", [](tl::ptr<tl::f32> x) {
    std::vector<tl::tile<ty::f32>> kept;
    for (auto i : tl::range(0, 4)) {
      kept.push_back(tl::load(x + tl::arange(0, 16)) + i.to<tl::f32>());
    }
    tl::store(x + tl::arange(0, 16), kept[0]);
  });
  expect_trace_error(k, line, "used after the body ended");
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
    auto z = tl::zeros<tl::f32>({2, 2, 2, 2});
    tl::store(x + tl::arange(0, 16), tl::reshape(z, {16}));
  });
  expect_trace_error(k, line, "at most 3 dimensions");
}

// What C++ itself rejects: a store through a non-pointer, pointer times float,
// storing a value of another element type.
template <class P, class V> concept can_store = requires(P p, V v) { tl::store(p, v); };
template <class A, class B> concept can_multiply = requires(A a, B b) { a * b; };
static_assert(!can_store<tl::f32, tl::f32>, "storing through a non-pointer must not compile");
static_assert(!can_multiply<tl::ptr<tl::f32>, tl::f32>, "multiplying a pointer must not compile");
static_assert(can_store<tl::ptr<tl::f32>, tl::f32>);
static_assert(can_multiply<tl::f32, tl::bf16>);

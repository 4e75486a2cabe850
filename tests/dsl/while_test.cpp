// tl::while_ (Triton's `while cond: body`), run on the test device (the CPU in CI;
// TL_DEVICE=cuda runs them on an NVIDIA GPU) against plain C++ loops: data-dependent trip
// counts (0 to 20, per program), tiles carried through the condition, the body or both,
// conditions with effects, nesting with tl::range and tl::if_, and a spin lock taken by
// every program of a grid (Triton's tutorial 05 takes one with
// `while tl.atomic_cas(Lock, 0, 1) == 1: pass`).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

// Each program runs its own number of rounds, loaded from memory: a scalar counter and a
// tile accumulator carried by the body, against the same loop in C++.
TEST(WhileLoop, DataDependentTripCountsCarryTilesAndScalars) {
  constexpr int BLOCK = 16;
  auto k = tl::kernel("while_rounds", [](tl::ptr<tl::i32> rounds, tl::ptr<tl::f32> x, tl::ptr<tl::f32> y,
                                         tl::ptr<tl::i32> taken) {
    auto pid = tl::program_id(0);
    auto n = tl::load(rounds + pid);
    auto offs = tl::arange(0, BLOCK);
    tl::i32 i = 0;
    auto acc = tl::zeros<ty::f32>({BLOCK});
    tl::while_([&] { return i < n; },
               [&] {
                 acc = acc * 0.5f + tl::load(x + i * BLOCK + offs);
                 i += 1;
               });
    tl::store(y + pid * BLOCK + offs, acc);
    tl::store(taken + pid, i);
  });
  const int P = 21;
  std::vector<int32_t> hn(P);
  for (int p = 0; p < P; ++p) hn[p] = p;  // 0 to 20 rounds
  std::shuffle(hn.begin(), hn.end(), rng());
  hn[3] = -4;  // a negative count: no round, like C++
  auto hx = random_floats(size_t(20) * BLOCK);
  auto N = upload<ty::i32>(hn);
  auto X = upload<ty::f32>(hx);
  auto Y = test_device().alloc<ty::f32>(size_t(P) * BLOCK);
  auto T = test_device().alloc<ty::i32>(P);
  poison(Y), poison(T);
  k[tl::grid(P)](N, X, Y, T);
  std::vector<double> want(size_t(P) * BLOCK);
  std::vector<int32_t> want_taken(P);
  for (int p = 0; p < P; ++p) {
    int i = 0;
    std::vector<double> acc(BLOCK, 0.0);
    while (i < hn[p]) {
      for (int e = 0; e < BLOCK; ++e) acc[e] = acc[e] * 0.5 + hx[size_t(i) * BLOCK + e];
      ++i;
    }
    want_taken[p] = i;
    for (int e = 0; e < BLOCK; ++e) want[size_t(p) * BLOCK + e] = acc[e];
  }
  EXPECT_TRUE(near(Y.download(), want, 1e-6, 1e-6));
  EXPECT_EQ(T.download(), want_taken);
}

// The condition region runs once more than the body and may assign tiles: a search that
// advances its cursor in the condition (`while x[++j] < limit`), a tile updated in both
// regions, and one only read. After the loop each holds what the last condition left.
TEST(WhileLoop, ConditionAssignsTilesAndRunsOnceMoreThanTheBody) {
  auto k = tl::kernel("while_search", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> limits, tl::ptr<tl::i32> out) {
    auto pid = tl::program_id(0);
    auto limit = tl::load(limits + pid);
    tl::i32 j = -1;
    tl::i32 conds = 0, bodies = 0;
    tl::i32 sum = 0;
    tl::while_(
        [&] {
          j += 1;
          conds += 1;
          return tl::load(x + j) < limit;
        },
        [&] {
          bodies += 1;
          sum += tl::load(x + j) * 2 + limit;  // limit: read, never assigned
        });
    tl::store(out + pid * 4 + 0, j);
    tl::store(out + pid * 4 + 1, conds);
    tl::store(out + pid * 4 + 2, bodies);
    tl::store(out + pid * 4 + 3, sum);
  });
  // Increasing values with a sentinel past every limit.
  std::vector<int32_t> hx(32);
  for (int i = 0; i < 31; ++i) hx[i] = i * 3 - 10;
  hx[31] = 1 << 30;
  std::vector<int32_t> hl = {-100, -10, -9, 0, 7, 50, 80, 1 << 29};
  const int P = int(hl.size());
  auto X = upload<ty::i32>(hx);
  auto L = upload<ty::i32>(hl);
  auto O = test_device().alloc<ty::i32>(size_t(P) * 4);
  poison(O);
  k[tl::grid(P)](X, L, O);
  std::vector<int32_t> want;
  for (int p = 0; p < P; ++p) {
    int j = -1, conds = 0, bodies = 0;
    uint32_t sum = 0;  // tl's i32 arithmetic wraps (the 2^29 limit's sums do)
    while (++j, ++conds, hx[size_t(j)] < hl[size_t(p)]) {
      ++bodies;
      sum += uint32_t(hx[size_t(j)]) * 2u + uint32_t(hl[size_t(p)]);
    }
    want.insert(want.end(), {j, conds, bodies, int32_t(sum)});
  }
  EXPECT_EQ(O.download(), want);
}

// Collatz steps per element: a tile loop whose condition is a reduction over the tile
// (any element not yet at 1), each element updated under its own mask.
TEST(WhileLoop, TileConditionThroughAReduction) {
  constexpr int BLOCK = 32;
  auto k = tl::kernel("while_collatz", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> steps) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs);
    auto count = tl::zeros<ty::i32>({BLOCK});
    tl::while_([&] { return tl::max(v, 0) > 1; },
               [&] {
                 auto active = v > 1;
                 auto next = tl::where(v % 2 == 0, v / 2, v * 3 + 1);
                 v = tl::where(active, next, v);
                 count = tl::where(active, count + 1, count);
               });
    tl::store(steps + offs, count);
  });
  const int P = 3;
  auto hx = random_ints(size_t(P) * BLOCK, 1, 300);
  auto X = upload<ty::i32>(hx);
  auto S = test_device().alloc<ty::i32>(hx.size());
  poison(S);
  k[tl::grid(P)](X, S);
  std::vector<int32_t> want;
  for (int32_t v : hx) {
    int n = 0;
    while (v > 1) v = v % 2 == 0 ? v / 2 : v * 3 + 1, ++n;
    want.push_back(n);
  }
  EXPECT_EQ(S.download(), want);
}

// while inside tl::range, tl::range and tl::if_ inside while, and a while inside a while:
// every level carries its own tiles.
TEST(WhileLoop, NestsWithRangeAndBranches) {
  auto k = tl::kernel("while_nest", [](tl::ptr<tl::i32> n, tl::ptr<tl::i32> out) {
    auto pid = tl::program_id(0);
    auto limit = tl::load(n + pid);
    tl::i32 total = 0;
    for (auto r : tl::range(0, 3)) {
      tl::i32 i = 0;
      tl::while_([&] { return i < limit + r; },
                 [&] {
                   tl::i32 j = 0;
                   tl::while_([&] { return j < i; }, [&] { j += 1; });
                   for (auto s : tl::range(0, 2)) total += s + j;
                   tl::if_(i % 2 == 0, [&] { total += 100; });
                   i += 1;
                 });
    }
    tl::store(out + pid, total);
  });
  std::vector<int32_t> hn = {0, 1, 2, 5, 9, -3};
  auto N = upload<ty::i32>(hn);
  auto O = test_device().alloc<ty::i32>(hn.size());
  poison(O);
  k[tl::grid(int(hn.size()))](N, O);
  std::vector<int32_t> want;
  for (int32_t limit : hn) {
    int total = 0;
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < limit + r; ++i) {
        int j = i;
        for (int s = 0; s < 2; ++s) total += s + j;
        if (i % 2 == 0) total += 100;
      }
    want.push_back(total);
  }
  EXPECT_EQ(O.download(), want);
}

// Every program of the grid takes one lock, adds to a counter and to a tile of sums under
// it (read, add, write back: lost updates show without the lock), and releases it.
// The totals are exact and the lock is free at the end.
TEST(WhileLoop, SpinLockTakenByEveryProgram) {
  constexpr int BLOCK = 64;
  auto k = tl::kernel("while_spin_lock", [](tl::ptr<tl::i32> lock, tl::ptr<tl::i32> counter, tl::ptr<tl::f32> sums,
                                            tl::ptr<tl::f32> x) {
    auto pid = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto mine = tl::load(x + pid * BLOCK + offs);
    tl::while_([&] { return tl::atomic_cas(lock, tl::i32(0), tl::i32(1)) == 1; }, [&] {});
    auto c = tl::load(counter);
    tl::store(counter, c + pid + 1);
    tl::store(sums + offs, tl::load(sums + offs) + mine);
    tl::atomic_xchg(lock, tl::i32(0));
  });
  const int P = 96;
  auto hx = random_ints(size_t(P) * BLOCK, -1000, 1000);
  std::vector<float> hxf(hx.begin(), hx.end());  // integers: every order of additions is exact
  auto Lock = upload<ty::i32>({0});
  auto Counter = upload<ty::i32>({0});
  auto Sums = upload<ty::f32>(std::vector<float>(BLOCK, 0.0f));
  auto X = upload<ty::f32>(hxf);
  k[tl::grid(P)](Lock, Counter, Sums, X);
  EXPECT_EQ(Lock.download()[0], 0);
  EXPECT_EQ(Counter.download()[0], P * (P + 1) / 2);
  std::vector<double> want(BLOCK, 0.0);
  for (int p = 0; p < P; ++p)
    for (int e = 0; e < BLOCK; ++e) want[e] += hxf[size_t(p) * BLOCK + e];
  EXPECT_TRUE(near(Sums.download(), want, 0, 0));
}

// A shared buffer written by the body and read by the next condition and body, transposed
// (every element crosses threads on a GPU): the barriers around the loop's back edge.
TEST(WhileLoop, SharedBufferReadAndWrittenAcrossRounds) {
  constexpr int B = 32;
  auto k = tl::kernel("while_shared", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::f32> totals, tl::i32 n) {
    auto r = tl::arange(0, B);
    auto offs = tl::expand_dims(r, 1) * B + tl::expand_dims(r, 0);
    auto buf = tl::shared<ty::f32>({1, B, B});
    buf[0].store(tl::load(x + offs));
    tl::i32 i = 0;
    tl::f32 total = 0.0f;
    tl::while_(
        [&] {
          total += tl::sum(tl::sum(buf[0].load(), 1), 0);
          return i < n;
        },
        [&] {
          auto t = tl::trans(buf[0].load());
          buf[0].store(t * 0.5f + tl::expand_dims(r, 0).to<ty::f32>());
          i += 1;
        });
    tl::store(y + offs, buf[0].load());
    tl::store(totals, total);
  });
  const int n = 5;
  auto hx = random_ints(size_t(B) * B, -64, 64);  // small integers: every sum below is exact in f32
  std::vector<float> hxf(hx.begin(), hx.end());
  auto X = upload<ty::f32>(hxf);
  auto Y = test_device().alloc<ty::f32>(size_t(B) * B);
  auto T = test_device().alloc<ty::f32>(1);
  poison(Y), poison(T);
  k[tl::grid(1)](X, Y, T, n);
  std::vector<double> v(hxf.begin(), hxf.end()), t(v.size());
  double total = 0;
  for (int round = 0;; ++round) {
    for (double e : v) total += e;
    if (round >= n) break;
    for (int a = 0; a < B; ++a)
      for (int b = 0; b < B; ++b) t[size_t(a) * B + b] = v[size_t(b) * B + a] * 0.5 + b;
    v = t;
  }
  EXPECT_TRUE(near(Y.download(), v, 0, 0));
  EXPECT_TRUE(near(T.download(), {total}, 1e-6, 0));
}

// A constant-true condition with nothing to end it is the user's endless loop; a
// constant-false one runs no body.
TEST(WhileLoop, BoolConditionFalseRunsNothing) {
  auto k = tl::kernel("while_false", [](tl::ptr<tl::i32> out) {
    tl::i32 v = 7;
    tl::while_([&] { return false; }, [&] { v += 1; });
    tl::store(out, v);
  });
  auto O = test_device().alloc<ty::i32>(1);
  poison(O);
  k[tl::grid(1)](O);
  EXPECT_EQ(O.download()[0], 7);
}

namespace {
template <class K> void expect_trace_error(K& k, unsigned line, const std::string& what) {
  auto O = test_device().alloc<ty::i32>(64);
  try {
    k[tl::grid(1)](O);
    ADD_FAILURE() << "no error was raised (expected: " << what << ")";
  } catch (const tl::trace_error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(e.file().find("while_test.cpp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(WhileLoop, NonScalarConditionIsATraceErrorAtTheLoop) {
  const unsigned line = __LINE__ + 3;
  auto k = tl::kernel("while_tile_cond", [](tl::ptr<tl::i32> out) {
    auto v = tl::load(out + tl::arange(0, 16));
    tl::while_([&] { return v > 0; }, [&] { v -= 1; });
    tl::store(out + tl::arange(0, 16), v);
  });
  expect_trace_error(k, line, "the condition must be a scalar i1");
}

TEST(WhileLoop, CarriedTileChangingShapeIsATraceError) {
  const unsigned line = __LINE__ + 6;
  auto k = tl::kernel("while_shape_change", [](tl::ptr<tl::i32> out) {
    auto v = tl::zeros<ty::i32>({16});
    tl::i32 i = 0;
    tl::while_([&] { return i < 3; },
               [&] {
                 v = tl::zeros<ty::i32>({32});
                 i += 1;
               });
    tl::store(out + tl::arange(0, 32), v);
  });
  expect_trace_error(k, line, "changes from tile<16xi32> to tile<32xi32>");
}

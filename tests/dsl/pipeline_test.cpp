// tl::range(..., tl::num_stages(N)) software pipelining (codegen/passes/pipeline_loops.cpp),
// run on the test device (the CPU in CI, a GPU with TL_DEVICE). For N = 1..4 and loops
// of 0, 1, N-1, N and 1000 iterations with a ragged last block, a pipelined loop must
// give bit for bit what the same loop gives unpipelined (N = 1), which must match a
// double-precision reference: loads into registers (a tile and a scalar per iteration,
// a tl::if_ in the body), through shared memory (the tile staged in a one-stage
// buffer, which the pipeliner multi-buffers with direct copies), and nested loops. The
// compile report says what each loop got, and why a loop was refused.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

#include "support/reference.hpp"

using namespace tltest;
using tl::f32;
using tl::i32;

namespace {

constexpr int kBR = 8, kC = 64;  // rows per iteration, columns

// y[c] = sum over blocks b of (sum of x[rows of b, c]) * s[b] (doubled on even b), rows
// at or past n masked off. MODE 0: the tile goes to registers; MODE 1: it is staged
// through a shared buffer; MODE 2: the same as 0 inside an outer loop over column
// halves (the inner loop's loads depend on the outer induction variable).
auto& stream_kernel() {
  static auto k = tl::kernel("pipe_stream", [](tl::ptr<f32> x, tl::ptr<f32> s, tl::ptr<f32> y, i32 n, int STAGES,
                                               int MODE) {
    auto r = tl::arange(0, kBR);
    auto block = [&](const i32& k, const auto& c) {
      auto rows = k + r;
      auto m = tl::expand_dims(rows < n, 1) & tl::expand_dims(c < kC, 0);
      auto v = tl::load(x + tl::expand_dims(rows, 1) * kC + tl::expand_dims(c, 0), m, 0.0f);
      auto part = tl::sum(v, 0) * tl::load(s + k / kBR);
      tl::if_((k / kBR) % 2 == 0, [&] { part = part * 2.0f; });
      return part;
    };
    if (MODE == 2) {
      auto c = tl::arange(0, kC / 2);
      for (auto h : tl::range(0, 2, 1, tl::num_stages(STAGES))) {
        auto acc = tl::zeros<f32>({kC / 2});
        auto cc = h * (kC / 2) + c;
        for (auto k : tl::range(0, n, kBR, tl::num_stages(STAGES))) acc = acc + block(k, cc);
        tl::store(y + cc, acc);
      }
      return;
    }
    auto c = tl::arange(0, kC);
    auto acc = tl::zeros<f32>({kC});
    if (MODE == 1) {
      // The shared buffer is allocated before the loop (block() would allocate per trace).
      auto buf = tl::shared<f32>({1, kBR, kC});
      for (auto k : tl::range(0, n, kBR, tl::num_stages(STAGES))) {
        auto rows = k + r;
        auto m = tl::expand_dims(rows < n, 1) & tl::expand_dims(c < kC, 0);
        buf[0].store(tl::load(x + tl::expand_dims(rows, 1) * kC + tl::expand_dims(c, 0), m, 0.0f));
        auto part = tl::sum(buf[0].load(), 0) * tl::load(s + k / kBR);
        tl::if_((k / kBR) % 2 == 0, [&] { part = part * 2.0f; });
        acc = acc + part;
      }
    } else {
      for (auto k : tl::range(0, n, kBR, tl::num_stages(STAGES))) acc = acc + block(k, c);
    }
    tl::store(y + c, acc);
  });
  return k;
}

// y[c] = sum over blocks b of (sum of x's rows of b at column c, rows past n left out)
// * s[b], doubled on even b where `double_even` (stream_kernel's tl::if_).
std::vector<double> stream_reference(const std::vector<float>& x, const std::vector<float>& s, int n,
                                     bool double_even = true) {
  std::vector<double> y(kC, 0.0);
  for (int b = 0; b * kBR < n; ++b)
    for (int c = 0; c < kC; ++c) {
      double part = 0;
      for (int i = 0; i < kBR && b * kBR + i < n; ++i) part += x[size_t(b * kBR + i) * kC + c];
      part *= s[size_t(b)];
      if (double_even && b % 2 == 0) part *= 2.0;
      y[size_t(c)] += part;
    }
  return y;
}

// `launch(X, S, Y, n, stages)` for num_stages 1..4 on loops of 0, 1, 2, 3, 4, 5 and
// `many` blocks, the last one whole or ragged, on random inputs, Y poisoned: N = 1 near
// the double-precision reference, every N > 1 bit for bit N = 1.
template <class Launch>
void expect_every_stage_count_agrees(Launch&& launch, int many, bool double_even, const std::string& what) {
  for (int iters : {0, 1, 2, 3, 4, 5, many})
    for (int ragged : {0, 3}) {
      if (iters == 0 && ragged) continue;
      int n = iters * kBR - ragged;
      auto x = random_floats(size_t(std::max(n, 1)) * kC);
      auto s = random_floats(size_t(iters + 1), 0.5f, 1.5f);
      auto X = upload<tl::ty::f32>(x);
      auto S = upload<tl::ty::f32>(s);
      std::vector<float> unpipelined;
      for (int stages = 1; stages <= 4; ++stages) {
        auto Y = test_device().alloc<tl::ty::f32>(kC);
        poison(Y);
        launch(X, S, Y, n, stages);
        auto y = Y.download();
        if (stages == 1) {
          unpipelined = y;
          EXPECT_TRUE(near(y, stream_reference(x, s, n, double_even), 1e-4, 1e-3)) << what << " n " << n;
        } else {
          EXPECT_EQ(y, unpipelined) << what << " n " << n << " num_stages " << stages;
        }
      }
    }
}

class Pipelining : public ::testing::TestWithParam<int> {};

TEST_P(Pipelining, SameResultsForEveryStageCountAndTripCount) {
  const int mode = GetParam();
  // Bit for bit across stage counts needs every rounding as written: with enable_fp_fusion
  // a product and the sum it feeds fuse where pipelining leaves them in one block, not
  // where it puts them apart.
  expect_every_stage_count_agrees(
      [&](auto& X, auto& S, auto& Y, int n, int stages) {
        stream_kernel()[tl::grid(1)].with({.enable_fp_fusion = false})(X, S, Y, n, stages, mode);
      },
      1000, true, fmt::format("mode {}", mode));
}

INSTANTIATE_TEST_SUITE_P(RegistersSharedNested, Pipelining, ::testing::Values(0, 1, 2));

std::vector<std::string> remarks_of(const std::string& meta) {
  return nlohmann::json::parse(meta).at("remarks").get<std::vector<std::string>>();
}

std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, "\n")); }

bool has(const std::vector<std::string>& remarks, const std::string& part) {
  for (auto& r : remarks)
    if (r.find(part) != std::string::npos) return true;
  return false;
}

TEST(Pipelining, ReportSaysWhatEachLoopGot) {
  auto X = test_device().alloc<tl::ty::f32>(kC * kBR), S = test_device().alloc<tl::ty::f32>(2), Y = test_device().alloc<tl::ty::f32>(kC);
  auto reg = remarks_of(stream_kernel().compile("cpu", {}, X, S, Y, 8, 3, 0));
  ASSERT_EQ(reg.size(), 1u) << joined(reg);
  EXPECT_TRUE(has(reg, "num_stages=3: yes (2 loads into registers, 0 into shared memory)")) << joined(reg);
  auto shared = remarks_of(stream_kernel().compile("cpu", {}, X, S, Y, 8, 2, 1));
  EXPECT_TRUE(has(shared, "num_stages=2: yes (1 load into registers, 1 into shared memory)")) << joined(shared);
  // Nested: the inner loop pipelines its loads; the outer one then prefetches the inner
  // loop's prologue (its first blocks, for the next column half) and leaves the loads
  // inside the inner loop to it.
  auto nested = remarks_of(stream_kernel().compile("cpu", {}, X, S, Y, 8, 2, 2));
  ASSERT_EQ(nested.size(), 2u) << joined(nested);
  EXPECT_NE(nested[0].find("yes (2 loads into registers, 0 into shared memory)"), std::string::npos) << joined(nested);
  EXPECT_NE(nested[1].find("yes (2 loads into registers, 0 into shared memory); not pipelined: load at "
                           "pipeline_test.cpp:"), std::string::npos) << joined(nested);
  EXPECT_NE(nested[1].find("is inside a branch or an inner loop"), std::string::npos) << joined(nested);
  // num_stages 1 pipelines nothing and says nothing.
  EXPECT_TRUE(remarks_of(stream_kernel().compile("cpu", {}, X, S, Y, 8, 1, 0)).empty());
}

// Triton's K-loop idiom: pointers carried through the loop and advanced by a step that
// is the same every iteration, and a mask from a carried count (`k_remaining -= BLOCK`):
// codegen/passes/carried_inductions.cpp reads them from the induction variable, so the
// loads are pipelined like the induction-variable ones. y[c] = sum over blocks of x's
// rows (masked past n), each block's rows scaled by w[block]; the loop runs over block
// indices from 0 (Triton's `range(0, cdiv(n, BLOCK))`) or over row offsets from `lb`
// by a step that is not 1 (the iteration index is then (k - lb) / step).
auto& carried_kernel() {
  static auto k = tl::kernel("pipe_carried", [](tl::ptr<f32> x, tl::ptr<f32> w, tl::ptr<f32> y, i32 n, int STAGES,
                                                int BY_OFFSET) {
    auto r = tl::arange(0, kBR), c = tl::arange(0, kC);
    auto p = x + (tl::expand_dims(r, 1) * kC + tl::expand_dims(c, 0));
    auto q = w;
    auto remaining = n;
    auto acc = tl::zeros<f32>({kC});
    auto step = [&] {
      auto v = tl::load(p, tl::expand_dims(r < remaining, 1), 0.0f);
      acc = acc + tl::sum(v, 0) * tl::load(q);
      p += kBR * kC;
      q = q + 1;
      remaining = remaining - kBR;
    };
    if (BY_OFFSET) {
      for (auto k : tl::range(3, n + 3, kBR, tl::num_stages(STAGES))) {
        (void)k;
        step();
      }
    } else {
      for (auto k : tl::range(0, tl::cdiv(n, kBR), 1, tl::num_stages(STAGES))) {
        (void)k;
        step();
      }
    }
    tl::store(y + c, acc);
  });
  return k;
}

TEST(Pipelining, CarriedPointersAndMasksGiveTheSameResultsForEveryStageCount) {
  for (int by_offset : {0, 1})
    expect_every_stage_count_agrees(
        [&](auto& X, auto& W, auto& Y, int n, int stages) {
          carried_kernel()[tl::grid(1)](X, W, Y, n, stages, by_offset);
        },
        100, false, fmt::format("by_offset {}", by_offset));
}

TEST(Pipelining, CarriedPointersArePipelined) {
  auto X = test_device().alloc<tl::ty::f32>(kC * kBR), W = test_device().alloc<tl::ty::f32>(2),
       Y = test_device().alloc<tl::ty::f32>(kC);
  for (int by_offset : {0, 1}) {
    auto r = remarks_of(carried_kernel().compile("cpu", {}, X, W, Y, 8, 3, by_offset));
    ASSERT_EQ(r.size(), 1u) << joined(r);
    EXPECT_NE(r[0].find("num_stages=3: yes (2 loads into registers, 0 into shared memory)"), std::string::npos) << r[0];
  }
}

// A carried pointer advanced by a step that changes from one iteration to the next (read
// in the loop) is not an induction: its loads stay where they are, and the remark says
// why.
TEST(Pipelining, RefusesLoadsFromPointersAdvancedByALoadedStep) {
  const int line = __LINE__ + 5;
  auto k = tl::kernel("pipe_carried_loaded_step", [](tl::ptr<f32> x, tl::ptr<tl::i32> steps, tl::ptr<f32> y, i32 n) {
    auto p = x + tl::arange(0, kC);
    auto acc = tl::zeros<f32>({kC});
    for (auto i : tl::range(0, n, 1, tl::num_stages(2))) {
      acc = acc + tl::load(p);
      p = p + tl::load(steps + i);
    }
    tl::store(y + tl::arange(0, kC), acc);
  });
  auto X = test_device().alloc<tl::ty::f32>(kC * 4), Y = test_device().alloc<tl::ty::f32>(kC);
  auto St = upload<tl::ty::i32>(std::vector<int32_t>{kC, 2 * kC, kC, 0});
  auto r = remarks_of(k.compile("cpu", {}, X, St, Y, 4));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find(fmt::format("pipelined: loop at pipeline_test.cpp:{} num_stages=2: yes (1 load into registers, "
                                  "0 into shared memory); not pipelined: load at pipeline_test.cpp:{} depends on a "
                                  "loop-carried value",
                                  line - 1, line)),
            std::string::npos)
      << r[0];
  // And it still runs right: blocks 0, 1, 3, 4 (after steps of 1, 2 and 1 blocks).
  std::vector<float> x(kC * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7);
  X = upload<tl::ty::f32>(x);
  poison(Y);
  k[tl::grid(1)](X, St, Y, 4);
  auto y = Y.download();
  for (int c = 0; c < kC; ++c)
    EXPECT_EQ(y[size_t(c)], x[size_t(c)] + x[size_t(kC + c)] + x[size_t(3 * kC + c)] + x[size_t(4 * kC + c)]);
}

// A load that may read what an earlier iteration stores stays where it is: here each
// iteration reads the element the previous one wrote (a prefix sum through memory).
TEST(Pipelining, RefusesLoadsAStoreInTheLoopMayFeed) {
  auto k = tl::kernel("pipe_hazard", [](tl::ptr<f32> x, i32 n) {
    for (auto i : tl::range(1, n, 1, tl::num_stages(3))) tl::store(x + i, tl::load(x + i) + tl::load(x + (i - 1)));
  });
  const int n = 100;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[size_t(i)] = float(i % 5);
  auto X = upload<tl::ty::f32>(h);
  auto r = remarks_of(k.compile("cpu", {}, X, n));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("no (load at pipeline_test.cpp:"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("may read what the store at pipeline_test.cpp:"), std::string::npos) << r[0];
  k[tl::grid(1)](X, n);
  auto got = X.download();
  double want = 0;
  for (int i = 0; i < n; ++i) {
    want = i == 0 ? h[0] : want + h[size_t(i)];
    EXPECT_EQ(got[size_t(i)], float(want)) << i;
  }
}

// A loop without its own num_stages takes the launch option's by Triton's rule: only an
// innermost loop whose loads feed a tl::dot (tests/codegen/pipeline_policy_test.cpp has
// those); this one, without a dot, runs as written and the report says why.
TEST(Pipelining, LaunchOptionAppliesToLoopsWithoutTheirOwn) {
  auto k = tl::kernel("pipe_option", [](tl::ptr<f32> x, tl::ptr<f32> y, i32 n) {
    auto c = tl::arange(0, kC);
    auto acc = tl::zeros<f32>({kC});
    for (auto i : tl::range(0, n)) acc = acc + tl::load(x + i * kC + c);
    tl::store(y + c, acc);
  });
  auto x = random_floats(kC * 9);
  auto X = upload<tl::ty::f32>(x);
  auto Y = test_device().alloc<tl::ty::f32>(kC);
  auto r = remarks_of(k.compile("cpu", {.num_stages = 3}, X, Y, 9));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("num_stages=3: no (the launch's num_stages pipelines innermost loops whose loads feed a tl::dot"),
            std::string::npos)
      << r[0];
  EXPECT_TRUE(remarks_of(k.compile("cpu", {}, X, Y, 9)).empty());
  std::vector<float> want_f;
  for (int stages : {1, 3}) {
    poison(Y);
    k[tl::grid(1)].with({.num_stages = stages})(X, Y, 9);
    auto y = Y.download();
    if (stages == 1) want_f = y;
    else EXPECT_EQ(y, want_f);
  }
  std::vector<double> want(kC, 0.0);
  for (int i = 0; i < 9; ++i)
    for (int c = 0; c < kC; ++c) want[size_t(c)] += x[size_t(i * kC + c)];
  EXPECT_TRUE(near(want_f, want, 1e-5, 1e-5));
}

}  // namespace

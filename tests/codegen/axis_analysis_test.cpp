// The axis analysis itself (codegen/passes/axis_analysis.*): the facts of loop-carried
// values from its fixed point (aligned advances keep contiguity and alignment, anything
// else comes out conservative, nested loops recompute inner facts per outer round), the
// value range and its buffer-offset query; and the kernels whose facts are checked here
// run on the CPU backend against double-precision references, outputs poisoned first,
// so that what the facts allow is also what the kernel means.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "codegen/ir/ir.hpp"
#include "codegen/passes/axis_analysis.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "runtime/device.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"

namespace {

using namespace tl;
using passes::AxisAnalysis;
using passes::AxisInfo;
using tl::detail::Trace;
using tltest::ptr_arg;
using tltest::row_sum_loop_kernel;
using tltest::RowWalk;
using tltest::scalar_arg;
using tltest::trace;
namespace rt = tl::runtime;

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();

// The pointer operand of every load, in program order.
std::vector<const ir::Value*> load_pointers(ir::Function& f) {
  std::vector<const ir::Value*> out;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::load) out.push_back(op.operands[0]);
  });
  return out;
}
// The `for` ops, outer before inner.
std::vector<const ir::Operation*> loops(ir::Function& f) {
  std::vector<const ir::Operation*> out;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::for_) out.push_back(&op);
  });
  return out;
}

// --- the CPU backend, for the kernels whose facts are checked ------------------------

rt::Device& cpu() {
  static std::shared_ptr<rt::Device> d = rt::make_cpu_device();
  return *d;
}

// Compiles f for the host and runs it on `programs` programs.
void run_on_cpu(ir::Function& f, uint32_t programs, const rt::ArgSlots& args) {
  auto code = codegen::compile(f, codegen::host_target(), codegen::CompileOptions{});
  auto k = cpu().load(code);
  rt::LaunchDims d;
  d.grid[0] = programs;
  d.grid[1] = d.grid[2] = 1;
  cpu().launch(*k, d, args, nullptr);
}

// Device memory of n floats, 0xAB-poisoned unless given contents.
class Floats {
 public:
  explicit Floats(size_t n) : n_(n), p_(static_cast<float*>(cpu().alloc(n * sizeof(float)))) {
    std::memset(static_cast<void*>(p_), 0xAB, n * sizeof(float));
  }
  explicit Floats(const std::vector<float>& h) : Floats(h.size()) { cpu().copy_to_device(p_, h.data(), n_ * sizeof(float)); }
  ~Floats() { cpu().free(p_); }
  Floats(const Floats&) = delete;
  std::vector<float> get() const {
    std::vector<float> h(n_);
    cpu().copy_to_host(h.data(), p_, n_ * sizeof(float));
    return h;
  }
  uint64_t slot() const { return reinterpret_cast<uint64_t>(p_); }

 private:
  size_t n_;
  float* p_;
};

uint64_t slot_i32(int32_t v) { return uint32_t(v); }

std::vector<float> random_floats(size_t n) {
  static std::mt19937_64 g(20250611);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Sums of n f32 each: the kernel's order differs from the reference's.
void expect_sums(const std::vector<float>& got, const std::vector<double>& want, double n) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * n) << "element " << i;
}

// --- loop-carried facts --------------------------------------------------------------

TEST(AxisAnalysis, CarriedPointerKeepsContiguityAndAlignment) {
  for (RowWalk walk : {RowWalk::carried_add_assign, RowWalk::carried_reassign}) {
    auto f = row_sum_loop_kernel(walk);
    AxisAnalysis a(*f);
    auto ptrs = load_pointers(*f);
    ASSERT_EQ(ptrs.size(), 1u);
    const ir::Operation* loop = loops(*f).at(0);
    ASSERT_EQ(ptrs[0], loop->regions[0]->args.at(1).get());  // the load reads the carried pointer itself
    const AxisInfo& p = a.get(ptrs[0]);
    EXPECT_EQ(p.contiguity[0], 1024) << p.str();
    EXPECT_EQ(p.divisibility[0], 16) << p.str();  // x is 16-byte aligned, cols and BLOCK multiples of 4 f32
    EXPECT_EQ(a.vector_width(ptrs[0], 0), 4);
    // the final pointer (init or last yield) keeps them too
    EXPECT_EQ(a.get(loop->result(0)).contiguity[0], 1024);
    EXPECT_EQ(a.get(loop->result(0)).divisibility[0], 16);
  }
  // the induction-variable version: the same facts
  auto f = row_sum_loop_kernel(RowWalk::induction_variable);
  AxisAnalysis a(*f);
  EXPECT_EQ(a.vector_width(load_pointers(*f).at(0), 0), 4);
}

TEST(AxisAnalysis, CarriedPointerRowSumIsCorrectOnTheCpu) {
  // The kernel the lowering tests vectorize, every walk, over rows whose last block is
  // partial (masked), one program per row; one output past the rows stays poisoned.
  const int rows = 3, cols = 2000;
  auto h = random_floats(rows * cols);
  std::vector<double> want(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) want[r] += h[r * cols + c];
  for (RowWalk walk : {RowWalk::induction_variable, RowWalk::carried_add_assign, RowWalk::carried_reassign}) {
    auto f = row_sum_loop_kernel(walk);
    Floats x(h), out(rows + 1);
    run_on_cpu(*f, rows, {x.slot(), out.slot(), slot_i32(cols)});
    auto got = out.get();
    EXPECT_EQ(std::bit_cast<uint32_t>(got[rows]), 0xABABABABu) << "walk " << int(walk);
    got.pop_back();
    expect_sums(got, want, cols);
  }
}

// Row sums through a pointer carried and advanced by `stride` each iteration, one
// BLOCK of the row per iteration: out[row] = sum over k of x[row*cols + k*stride + c].
std::unique_ptr<ir::Function> strided_walk_kernel(bool stride_div16, bool step_by_one = false) {
  return trace("strided_walk", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto stride = scalar_arg<ty::i32>(t, "stride", stride_div16);
    auto iters = scalar_arg<ty::i32>(t, "iters", false);
    auto c = tl::arange(0, 256);
    auto acc = tl::zeros<ty::f32>({256});
    auto p = x + tl::program_id(0) * cols + c;
    for (auto k : tl::range(0, iters)) {
      (void)k;
      acc += tl::load(p);
      if (step_by_one) p = p + 1;
      else p += stride;
    }
    tl::store(out + tl::program_id(0), tl::sum(acc, 0));
  });
}

TEST(AxisAnalysis, AdvanceByARuntimeStrideKeepsWhatTheStrideKeeps) {
  auto f = strided_walk_kernel(true);
  AxisAnalysis a(*f);
  const ir::Value* p = load_pointers(*f).at(0);
  EXPECT_EQ(a.get(p).contiguity[0], 256) << a.get(p).str();
  EXPECT_EQ(a.get(p).divisibility[0], 16) << a.get(p).str();
  EXPECT_EQ(a.vector_width(p, 0), 4);

  auto g = strided_walk_kernel(false);  // a stride of any number of f32: only 4-byte aligned
  AxisAnalysis b(*g);
  const ir::Value* q = load_pointers(*g).at(0);
  EXPECT_EQ(b.get(q).contiguity[0], 256);
  EXPECT_EQ(b.get(q).divisibility[0], 4) << b.get(q).str();
  EXPECT_EQ(b.vector_width(q, 0), 1);
}

TEST(AxisAnalysis, MisalignedAdvanceIsConservativeAndStillCorrect) {
  // p = p + 1: each iteration's block is still contiguous, but only the first is aligned.
  auto f = strided_walk_kernel(true, true);
  AxisAnalysis a(*f);
  const ir::Value* p = load_pointers(*f).at(0);
  EXPECT_EQ(a.get(p).contiguity[0], 256);
  EXPECT_EQ(a.get(p).divisibility[0], 4) << a.get(p).str();
  EXPECT_EQ(a.vector_width(p, 0), 1);
  EXPECT_EQ(a.vector_width(loops(*f).at(0)->result(0), 0), 1);

  const int rows = 3, cols = 320, iters = 5;
  auto h = random_floats(rows * cols);
  Floats x(h), out(rows);
  run_on_cpu(*f, rows, {x.slot(), out.slot(), slot_i32(cols), slot_i32(16), slot_i32(iters)});
  std::vector<double> want(rows, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < iters; ++k)
      for (int c = 0; c < 256; ++c) want[r] += h[r * cols + k + c];
  expect_sums(out.get(), want, 256.0 * iters);
}

// Carried int offsets replaced by something not contiguous: the first iteration reads
// block 0 as it is, every later one block k with each pair of elements swapped.
std::unique_ptr<ir::Function> pair_swap_kernel() {
  return trace("pair_swap", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto iters = scalar_arg<ty::i32>(t, "iters", false);
    auto c = tl::arange(0, 256);
    auto o = c;
    auto acc = tl::zeros<ty::f32>({256});
    for (auto k : tl::range(0, iters)) {
      acc += tl::load(x + o) * (c + 1).to<ty::f32>();
      o = (k + 1) * 256 + (c ^ 1);
    }
    tl::store(out + c, acc);
  });
}

TEST(AxisAnalysis, NonContiguousYieldIsConservativeAndStillCorrect) {
  auto f = pair_swap_kernel();
  AxisAnalysis a(*f);
  const ir::Operation* loop = loops(*f).at(0);
  const ir::Value* offsets = loop->regions[0]->args.at(1).get();
  ASSERT_EQ(offsets->type.dtype, DType::i32);
  EXPECT_EQ(a.get(offsets).contiguity[0], 1) << a.get(offsets).str();  // contiguous only on entry
  EXPECT_EQ(a.vector_width(load_pointers(*f).at(0), 0), 1);
  EXPECT_EQ(a.get(loop->result(0)).contiguity[0], 1);

  const int iters = 4;
  auto h = random_floats(256 * iters);
  Floats x(h), out(256);
  run_on_cpu(*f, 1, {x.slot(), out.slot(), slot_i32(iters)});
  std::vector<double> want(256, 0.0);
  for (int c = 0; c < 256; ++c)
    for (int k = 0; k < iters; ++k) want[c] += double(h[k * 256 + (k == 0 ? c : c ^ 1)]) * (c + 1);
  expect_sums(out.get(), want, 256.0 * iters);
}

// Sums of [rows_per_program, cols] blocks: the outer loop walks rows with a carried row
// pointer q, advanced by `row_step` elements; the inner loop walks the row in BLOCKs
// through a pointer carried from q + c.
std::unique_ptr<ir::Function> nested_walk_kernel(bool aligned_rows) {
  return trace("nested_walk", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto rows = scalar_arg<ty::i32>(t, "rows", true);
    auto row_step = scalar_arg<ty::i32>(t, "row_step", aligned_rows);
    auto c = tl::arange(0, 128);
    auto acc = tl::zeros<ty::f32>({128});
    auto q = x + tl::program_id(0) * rows * cols;
    for (auto r : tl::range(0, rows)) {
      (void)r;
      auto p = q + c;
      for (auto k : tl::range(0, cols, 128)) {
        acc += tl::load(p, k + c < cols, 0.0f);
        p += 128;
      }
      q += row_step;
    }
    tl::store(out + tl::program_id(0), tl::sum(acc, 0));
  });
}

TEST(AxisAnalysis, NestedLoopsRecomputeInnerFactsEachOuterRound) {
  auto f = nested_walk_kernel(true);
  AxisAnalysis a(*f);
  auto ls = loops(*f);
  ASSERT_EQ(ls.size(), 2u);
  const ir::Value* inner = load_pointers(*f).at(0);
  ASSERT_EQ(inner, ls[1]->regions[0]->args.at(1).get());
  EXPECT_EQ(a.get(inner).contiguity[0], 128);
  EXPECT_EQ(a.get(inner).divisibility[0], 16) << a.get(inner).str();
  EXPECT_EQ(a.vector_width(inner, 0), 4);

  // The outer pointer advanced by a stride of any size: the inner loop's facts, first
  // computed from the aligned init, must come out as the outer fixed point leaves them.
  auto g = nested_walk_kernel(false);
  AxisAnalysis b(*g);
  const ir::Value* q = loops(*g).at(0)->regions[0]->args.at(1).get();
  EXPECT_EQ(b.get(q).divisibility[0], 4) << b.get(q).str();
  const ir::Value* inner2 = load_pointers(*g).at(0);
  EXPECT_EQ(b.get(inner2).divisibility[0], 4) << b.get(inner2).str();
  EXPECT_EQ(b.vector_width(inner2, 0), 1);

  // Both mean the same sums when row_step == cols.
  const int programs = 2, rows = 3, cols = 208;
  auto h = random_floats(programs * rows * cols);
  std::vector<double> want(programs, 0.0);
  for (int i = 0; i < programs * rows * cols; ++i) want[i / (rows * cols)] += h[i];
  for (auto* k : {f.get(), g.get()}) {
    Floats x(h), out(programs);
    run_on_cpu(*k, programs, {x.slot(), out.slot(), slot_i32(cols), slot_i32(rows), slot_i32(cols)});
    expect_sums(out.get(), want, rows * cols);
  }
}

TEST(AxisAnalysis, CarriedConstantsAndRangesMeetInitAndYield) {
  const ir::Value* after = nullptr;
  auto f = trace("counters", [&](Trace& t) {
    auto out = ptr_arg<ty::i32>(t, "out", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    tl::i32 same = 16, up = 0, down = 0;
    for (auto k : tl::range(0, n)) {
      (void)k;
      same = same * 1;
      up = up + 1;
      down = down - 1;
    }
    after = up.get();
    tl::store(out, same);
    tl::store(out + 1, up);
    tl::store(out + 2, down);
  });
  AxisAnalysis a(*f);
  const ir::Operation* loop = loops(*f).at(0);
  const ir::Block& body = *loop->regions[0];
  ASSERT_EQ(body.args.size(), 4u);
  EXPECT_EQ(a.get(body.args[1].get()).constant, 16);  // yields what it got: stays a constant
  EXPECT_EQ(a.get(body.args[1].get()).divisibility[0], 16);
  EXPECT_FALSE(a.get(body.args[2].get()).constant.has_value());
  // a counter keeps growing: widened to the top of i32, but it never goes below 0
  EXPECT_EQ(a.get(body.args[2].get()).range, (passes::ValueRange{0, kI32Max})) << a.get(body.args[2].get()).str();
  EXPECT_TRUE(a.fits_nonnegative_i32(body.args[2].get()));
  EXPECT_TRUE(a.fits_nonnegative_i32(after));
  EXPECT_EQ(a.get(body.args[3].get()).range, (passes::ValueRange{kI32Min, 0}));
  EXPECT_FALSE(a.fits_nonnegative_i32(body.args[3].get()));
}

// --- value ranges --------------------------------------------------------------------

TEST(AxisAnalysis, ValueRangesOfOffsets) {
  std::vector<const ir::Value*> v;
  auto keep = [&](const auto& x) { v.push_back(x.get()); };
  auto f = trace("offsets", [&](Trace& t) {
    auto cols = scalar_arg<ty::i32>(t, "cols", true);  // run-time: divisible by 16, value unknown
    auto pid = tl::program_id(0);
    auto c = tl::arange(0, 1024);
    keep(pid * 1024 + c);                  // 0
    keep(pid * cols);                      // 1
    keep(pid * cols + c);                  // 2
    keep(c - 1);                           // 3
    keep((pid * 1024 + c) / 4);            // 4
    keep(cols % 7);                        // 5
    keep(c % 7);                           // 6
    keep(tl::maximum(c - 5, 0));           // 7
    keep(tl::minimum(c, cols));            // 8
    keep(cols & 255);                      // 9
    keep((pid * 1024 + c) >> 2);           // 10
    keep((pid * 1024 + c).to<ty::i64>());  // 11
    keep((c - 1).to<ty::u32>());           // 12
    keep(cols);                            // 13
    keep(tl::num_programs(0));             // 14
    keep(tl::argmax(c.to<ty::f32>(), 0));  // 15
    keep(tl::where(c < 5, c, c + 2000));   // 16
  });
  AxisAnalysis a(*f);
  using R = passes::ValueRange;
  auto range = [&](int i) { return a.get(v.at(i)).range; };
  EXPECT_EQ(range(0), (R{0, kI32Max}));  // signed overflow is undefined: pid * 1024 is an i32
  EXPECT_TRUE(a.fits_nonnegative_i32(v[0]));
  EXPECT_FALSE(a.fits_nonnegative_i32(v[1])) << a.get(v[1]).str();  // cols may be negative
  EXPECT_FALSE(a.fits_nonnegative_i32(v[2]));
  EXPECT_EQ(range(3), (R{-1, 1022}));
  EXPECT_FALSE(a.fits_nonnegative_i32(v[3]));
  EXPECT_EQ(range(4), (R{0, kI32Max / 4}));
  EXPECT_EQ(range(5), (R{-6, 6}));
  EXPECT_EQ(range(6), (R{0, 6}));
  EXPECT_EQ(range(7), (R{0, 1018}));
  EXPECT_EQ(range(8), (R{kI32Min, 1023}));
  EXPECT_EQ(range(9), (R{0, 255}));  // a non-negative mask bounds any operand
  EXPECT_EQ(range(10), (R{0, kI32Max >> 2}));
  EXPECT_EQ(range(11), (R{0, kI32Max}));
  EXPECT_TRUE(a.fits_nonnegative_i32(v[11]));
  EXPECT_EQ(range(12), (R{0, int64_t(UINT32_MAX)}));  // -1 wraps: unknown
  EXPECT_FALSE(a.fits_nonnegative_i32(v[12]));
  EXPECT_EQ(range(13), (R{kI32Min, kI32Max}));  // kernel arguments: no range
  EXPECT_EQ(range(14), (R{1, kI32Max}));
  EXPECT_EQ(range(15), (R{0, 1023}));
  EXPECT_EQ(range(16), (R{0, 3023}));
  EXPECT_NE(a.get(v[6]).str().find("range=[0,6]"), std::string::npos) << a.get(v[6]).str();
}

TEST(AxisAnalysis, ValueRangesOfInductionVariables) {
  std::vector<const ir::Value*> v;
  auto keep = [&](const auto& x) { v.push_back(x.get()); };
  auto f = trace("ivs", [&](Trace& t) {
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto c = tl::arange(0, 1024);
    for (auto k : tl::range(0, 4096, 1024)) {
      keep(k);      // 0
      keep(k + c);  // 1
      for (auto j : tl::range(0, k)) keep(j);  // 2: below the outer iv
      tl::store(out + k + c, tl::zeros<ty::f32>({1024}));
    }
    for (auto k : tl::range(0, n, 1024)) keep(k + c);  // 3
    auto pid = tl::program_id(0);
    for (auto s : tl::range(pid * 256, n, tl::num_programs(0) * 256)) keep(s + tl::arange(0, 256));  // 4
    for (auto s : tl::range(0, n, n)) keep(s);  // 5: a step that may be negative
  });
  AxisAnalysis a(*f);
  using R = passes::ValueRange;
  auto range = [&](int i) { return a.get(v.at(i)).range; };
  EXPECT_EQ(range(0), (R{0, 3072}));  // the last lb + k*step below ub
  EXPECT_EQ(range(1), (R{0, 4095}));
  EXPECT_TRUE(a.fits_nonnegative_i32(v[1]));
  EXPECT_EQ(range(2), (R{0, 3071}));
  EXPECT_EQ(range(3), (R{0, kI32Max}));
  EXPECT_TRUE(a.fits_nonnegative_i32(v[3]));
  EXPECT_TRUE(a.fits_nonnegative_i32(v[4])) << a.get(v[4]).str();  // grid-stride loop
  // A step of either sign: iv runs between lb and ub, exclusive of ub, whichever way:
  // [min(0, n + 1), max(0, n - 1)].
  EXPECT_EQ(range(5), (R{kI32Min + 1, kI32Max - 1}));
  EXPECT_FALSE(a.fits_nonnegative_i32(v[5]));
}

}  // namespace

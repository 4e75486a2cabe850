// tl::reduce and tl::associative_scan with a combine function on the GPUs, compiled
// without running (codegen/gpu/lower_combine.cpp; tests/dsl/combine_test.cpp runs them):
// the combine is inlined in registers and warp shuffles, shared memory only where the
// axis crosses warps, no spills; and a combine costs what the built-in reduction it
// spells costs (argmax by (value, index) against tl::max with tl::return_indices).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

namespace {

tl::i32 offsets2(int rows, int cols, int stride) {
  return tl::expand_dims(tl::arange(0, rows), 1) * stride + tl::expand_dims(tl::arange(0, cols), 0);
}

std::tuple<tl::f32, tl::f32, tl::f32> welford(tl::f32 mean_a, tl::f32 m2_a, tl::f32 n_a, tl::f32 mean_b, tl::f32 m2_b,
                                              tl::f32 n_b) {
  tl::f32 n = n_a + n_b;
  tl::f32 w_b = tl::where(n == 0.0f, 0.0f, n_b / tl::where(n == 0.0f, 1.0f, n));
  tl::f32 delta = mean_b - mean_a;
  return {mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n};
}

// Mean and variance of each of R rows of C through one tl::reduce over (mean, m2, count).
std::unique_ptr<ir::Function> welford_rows(int R, int C) {
  return trace("welford_rows", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto v = tl::load(x + offsets2(R, C, C));
    auto [mean, m2, n] = tl::reduce(std::tuple{v, tl::zeros<ty::f32>({R, C}), tl::full<ty::f32>({R, C}, 1)}, 1, welford);
    auto rows = tl::arange(0, R);
    tl::store(out + rows, mean);
    tl::store(out + R + rows, m2 / n);
  });
}

// The argmax of each row, by a combine or by tl::max with tl::return_indices.
std::unique_ptr<ir::Function> row_argmax(bool by_combine, int R, int C) {
  return trace(by_combine ? "argmax_combine" : "argmax_builtin", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::i32>(t, "out", true);
    auto v = tl::load(x + offsets2(R, C, C));
    auto rows = tl::arange(0, R);
    if (!by_combine) {
      auto [m, i] = tl::max(v, 1, tl::return_indices);
      tl::store(out + rows, i + m.to<ty::i32>());
      return;
    }
    auto col = tl::broadcast_to(tl::expand_dims(tl::arange(0, C), 0), {R, C});
    auto [m, i] = tl::reduce(std::tuple{v, col}, 1, [](tl::f32 va, tl::i32 ia, tl::f32 vb, tl::i32 ib) {
      tl::i1 a_wins = (va > vb) | ((va == vb) & (ia < ib));
      return std::tuple{tl::where(a_wins, va, vb), tl::where(a_wins, ia, ib)};
    });
    tl::store(out + rows, i + m.to<ty::i32>());
  });
}

// h_t = a_t h_{t-1} + b_t over L steps (a 1-D scan of (a, b) pairs).
std::unique_ptr<ir::Function> recurrence(int L) {
  return trace("linear_recurrence", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::f32>(t, "a", true);
    auto b = ptr_arg<ty::f32>(t, "b", true);
    auto h = ptr_arg<ty::f32>(t, "h", true);
    auto o = tl::arange(0, L);
    auto [pa, ph] = tl::associative_scan(std::tuple{tl::load(a + o), tl::load(b + o)}, 0,
                                         [](tl::f32 a1, tl::f32 b1, tl::f32 a2, tl::f32 b2) {
                                           return std::tuple{a1 * a2, a2 * b1 + b2};
                                         });
    tl::store(h + o, ph);
  });
}

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

}  // namespace

// A row within one warp reduces in registers and shuffles, no LDS; rows across 4 warps
// exchange their partials once through shared memory; no spills either way.
TEST(CombineCodegen, WelfordIsShufflesWithinAWarpAndOneExchangeAcrossWarps) {
  auto f = welford_rows(4, 256);
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto one = tltest::compile_for(arch, *f, 1);
    EXPECT_EQ(one.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(one.report.at("spill_vgpr"), 0) << arch;
    std::string dis = amd::disassemble(one.binary);
    EXPECT_EQ(count(dis, "ds_write") + count(dis, "ds_read"), 0) << arch;
    auto four = tltest::compile_for(arch, *welford_rows(1, 1024), 4);
    EXPECT_GT(four.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(four.report.at("spill_vgpr"), 0) << arch;
    std::printf("%s Welford: [4, 256] at 1 warp %d VGPRs; [1, 1024] at 4 warps %d VGPRs, %d bytes of LDS\n", arch,
                int(one.report.at("vgpr")), int(four.report.at("vgpr")), int(four.report.at("lds_bytes")));
  }
  auto one = tltest::compile_for("sm_90", *f, 1);
  EXPECT_EQ(count(ptx(one), "st.shared"), 0);
  EXPECT_GT(count(ptx(one), "shfl.sync.bfly"), 0);
  EXPECT_EQ(count(ptx(one), ".local"), 0);
  auto four = tltest::compile_for("sm_90", *welford_rows(1, 1024), 4);
  EXPECT_GT(count(ptx(four), "st.shared"), 0);
  EXPECT_GT(count(ptx(four), "bar.sync"), 0);
}

// argmax spelled as a combine of (value, index) costs about what tl::max with
// tl::return_indices costs (a max and an argmax reduction).
TEST(CombineCodegen, ArgmaxByCombineCostsWhatTheBuiltinCosts) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto c = tltest::compile_for(arch, *row_argmax(true, 16, 256), 4);
    auto b = tltest::compile_for(arch, *row_argmax(false, 16, 256), 4);
    EXPECT_EQ(c.report.at("spill_vgpr"), 0) << arch;
    EXPECT_LE(c.report.at("vgpr"), b.report.at("vgpr") + 8) << arch;
    std::string dc = amd::disassemble(c.binary), db = amd::disassemble(b.binary);
    EXPECT_LE(dc.size(), db.size() * 3 / 2) << arch;
    std::printf("%s argmax: combine %d VGPRs, %zu bytes of text; builtin %d VGPRs, %zu bytes\n", arch,
                int(c.report.at("vgpr")), dc.size(), int(b.report.at("vgpr")), db.size());
  }
}

// A scan of pairs: within a warp by shuffles alone; across warps, shared memory.
TEST(CombineCodegen, RecurrenceScanShufflesWithinAWarp) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto one = tltest::compile_for(arch, *recurrence(256), 1);
    EXPECT_EQ(one.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(one.report.at("spill_vgpr"), 0) << arch;
    auto four = tltest::compile_for(arch, *recurrence(1024), 4);
    EXPECT_GT(four.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(four.report.at("spill_vgpr"), 0) << arch;
  }
  auto one = tltest::compile_for("sm_90", *recurrence(256), 1);
  EXPECT_EQ(count(ptx(one), "st.shared"), 0);
  EXPECT_GT(count(ptx(one), "shfl.sync.bfly"), 0);
  auto four = tltest::compile_for("sm_90", *recurrence(1024), 4);
  EXPECT_EQ(count(ptx(four), ".local"), 0);
}

// The verifier holds a combine region to its rules (docs/ir.md): one yield value a
// operand, of its dtype, 2N scalar arguments, nothing in it but pure elementwise ops.
// Each rule broken by hand in a traced argmax-by-combine fails verification at the line.
TEST(CombineIr, VerifierChecksTheRegion) {
  auto broken = [](auto&& mutate) {
    auto f = row_argmax(true, 16, 64);
    ir::Operation* red = nullptr;
    ir::walk(f->body, [&](ir::Operation& op) {
      if (op.op == Op::reduce && !op.regions.empty()) red = &op;
    });
    EXPECT_NE(red, nullptr);
    EXPECT_NO_THROW(ir::verify(*f));
    mutate(*red);
    try {
      ir::verify(*f);
    } catch (const tl::compile_error& e) {
      EXPECT_GT(e.line(), 0u);
      return std::string(e.what());
    }
    return std::string("verified");
  };
  EXPECT_NE(broken([](ir::Operation& r) { r.regions[0]->terminator()->operands.pop_back(); }).find(
                "yields one scalar per operand"),
            std::string::npos);
  EXPECT_NE(broken([](ir::Operation& r) {
              auto* y = r.regions[0]->terminator();
              std::swap(y->operands[0], y->operands[1]);
            }).find("yields scalars of the operands' dtypes"),
            std::string::npos);
  EXPECT_NE(broken([](ir::Operation& r) { r.regions[0]->add_arg(ir::Type{DType::f32, DType::f32, {}}); })
                .find("a combine region takes 2N arguments"),
            std::string::npos);
  EXPECT_NE(broken([](ir::Operation& r) {
              for (auto& o : r.regions[0]->ops)
                if (o->op == Op::select) {
                  o->op = Op::atomic_rmw;
                  break;
                }
            }).find("holds only pure elementwise operations"),
            std::string::npos);
}

// Warp-local layout conversions (codegen/gpu/convert_within_warp.cpp): the layout
// helpers that decide whether elements cross warps and plan the shuffles, an exhaustive
// lane-by-lane simulation of the plans the lowering executes (no GPU here), and kernels
// whose conversion now uses shuffles instead of shared memory on AMDGPU and NVPTX (and
// still computes the same on the CPU), while one that crosses warps keeps shared memory.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "runtime/device.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"

namespace {

using namespace tl;
using gpu::Layout;
using tl::detail::Trace;
using tltest::ptr_arg;
using tltest::trace;

// --- the helpers -------------------------------------------------------------------

TEST(WarpShuffle, LaneOrderChangesInOneWarpAreWarpLocal) {
  // [64, 64] in one wave of 64, coalesced along dim 1 or along dim 0: every element is
  // in the wave under both, so nothing crosses warps.
  Layout rows = gpu::default_layout({64, 64}, {1, 0}, 4, 64, 1);
  Layout cols = gpu::default_layout({64, 64}, {0, 1}, 4, 64, 1);
  EXPECT_FALSE(gpu::crosses_warps(rows, cols));
  EXPECT_FALSE(gpu::crosses_warps(cols, rows));
  // With 4 waves the rows are split among waves one way and the columns the other.
  Layout rows4 = gpu::default_layout({64, 64}, {1, 0}, 4, 64, 4);
  Layout cols4 = gpu::default_layout({64, 64}, {0, 1}, 4, 64, 4);
  EXPECT_TRUE(gpu::crosses_warps(rows4, cols4));
  EXPECT_FALSE(gpu::warp_shuffle_plan(rows4, cols4).has_value());
  // Same warp images, lane order changed (rows or columns first): 4 waves each holding
  // the rows with the same row bits 2..3.
  Layout a = gpu::blocked_layout({64, 64}, {1, 4}, {4, 16}, {4, 1}, {1, 0}, 64, 4);
  Layout b = gpu::blocked_layout({64, 64}, {1, 4}, {4, 16}, {4, 1}, {0, 1}, 64, 4);
  EXPECT_EQ(a.warp, b.warp);
  EXPECT_NE(a.lane, b.lane);
  EXPECT_FALSE(gpu::crosses_warps(a, b));
  EXPECT_TRUE(gpu::warp_shuffle_plan(a, b).has_value());
  // A layout and itself: every register local, no shuffle.
  auto same = gpu::warp_shuffle_plan(rows4, rows4);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->num_shuffles(), 0);
  for (bool l : same->local) EXPECT_TRUE(l);
}

TEST(WarpShuffle, ReductionResultToBlocked) {
  // sum over dim 1 of a [32, 32] tile held by one warp of 32: the result has rows on
  // lanes 8..31 (4 rows each, replicated over the 8 lanes of a row) and in registers.
  // A blocked [32] puts row i on lane i: one shuffle, the sender picking the register.
  Layout in = gpu::default_layout({32, 32}, {1, 0}, 4, 32, 1);
  Layout red = gpu::reduce_layout(in, 1);
  Layout flat = gpu::default_layout({32}, {0}, 4, 32, 1);
  EXPECT_FALSE(gpu::crosses_warps(red, flat));
  auto p = gpu::warp_shuffle_plan(red, flat);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(flat.num_regs(), 1);
  EXPECT_EQ(p->shuffles_per_reg(), 1) << "the replicated source lanes let the sender select";
  EXPECT_EQ(p->num_shuffles(), 1);
  EXPECT_FALSE(p->send_basis.empty());
  // With 4 warps the reduction's rows are split among warps, the blocked [32] layout
  // replicates them over warps: warp 1 needs rows only warp 0 holds.
  Layout in4 = gpu::default_layout({32, 32}, {1, 0}, 4, 32, 4);
  Layout flat4 = gpu::default_layout({32}, {0}, 4, 32, 4);
  EXPECT_TRUE(gpu::crosses_warps(gpu::reduce_layout(in4, 1), flat4));
  // The other way round (each warp holding everything) is warp-local.
  EXPECT_FALSE(gpu::crosses_warps(flat4, gpu::reduce_layout(in4, 1)));
}

TEST(WarpShuffle, TransposeInOneWarpIsAllToAll) {
  // A [32, 32] transpose held by one warp: every lane needs one element of every other
  // lane and lanes reading one source lane want different registers of it, so the plan
  // needs a shuffle per (register, source register); the lowering keeps shared memory.
  Layout rows = gpu::default_layout({32, 32}, {1, 0}, 4, 32, 1);
  Layout cols = gpu::default_layout({32, 32}, {0, 1}, 4, 32, 1);
  auto p = gpu::warp_shuffle_plan(rows, cols);
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->num_shuffles(), 2 * rows.num_regs());
}

// --- simulation of the plans -------------------------------------------------------

// The element that `l` puts in register r of lane `lane` of warp `warp`.
uint32_t held(const Layout& l, uint32_t r, uint32_t lane, uint32_t warp) {
  return l.reg_part(r) ^ l.thread_part(lane, warp);
}

// Brute force: does every thread find each element it needs under dst in its own warp
// under src?
bool brute_warp_local(const Layout& src, const Layout& dst, int ws, int nw) {
  for (int w = 0; w < nw; ++w) {
    std::vector<bool> has(size_t(src.numel()), false);
    for (int l = 0; l < ws; ++l)
      for (int r = 0; r < src.num_regs(); ++r) has[held(src, r, l, w)] = true;
    for (int l = 0; l < ws; ++l)
      for (int r = 0; r < dst.num_regs(); ++r)
        if (!has[held(dst, r, l, w)]) return false;
  }
  return true;
}

// Runs the plan as the lowering emits it, for every lane of every warp: shuffle k of dst
// register r sends, from each lane s, register send_reg(r, k, s, w) (a select tree over
// send_basis pivots of the sender's own bits); lane l reads lane src_lane(r, l, w) and
// keeps shuffle recv_index(l) (a select tree over recv_basis pivots).
void simulate(const Layout& src, const Layout& dst, const gpu::WarpShufflePlan& p, int ws, int nw,
              const std::string& what) {
  ASSERT_EQ(p.num_dst_regs, dst.num_regs()) << what;
  for (uint32_t w = 0; w < uint32_t(nw); ++w)
    for (uint32_t l = 0; l < uint32_t(ws); ++l) {
      // the select trees decompose by pivot bits: the runtime parts must lie in the spans
      uint32_t sx = gpu::apply_bits(p.send_map, l) ^ gpu::apply_bits(p.warp_reg, w);
      ASSERT_EQ(gpu::combine(p.send_basis, gpu::decompose(p.send_pivot, sx)), sx) << what;
      uint32_t rx = gpu::apply_bits(p.recv_map, l);
      ASSERT_EQ(gpu::combine(p.recv_basis, uint32_t(p.recv_index(l))), rx) << what;
      for (int r = 0; r < dst.num_regs(); ++r) {
        uint32_t want = held(dst, uint32_t(r), l, w);
        uint32_t got;
        if (p.local[r]) {
          ASSERT_EQ(p.src_lane(r, l, w), l) << what;
          got = held(src, p.send_reg(r, 0, l, w), l, w);
        } else {
          uint32_t s = p.src_lane(r, l, w);
          ASSERT_LT(s, uint32_t(ws)) << what;
          uint32_t reg = p.send_reg(r, p.recv_index(l), s, w);
          ASSERT_LT(reg, uint32_t(src.num_regs())) << what;
          got = held(src, reg, s, w);
        }
        ASSERT_EQ(got, want) << what << " warp " << w << " lane " << l << " reg " << r;
      }
    }
}

// A random Triton blocked layout of `shape`: random order, elements per thread, and
// lanes and warps spread over random dims (beyond the shape they become copies).
Layout random_blocked(std::mt19937& g, const std::vector<int>& shape, int ws, int nw) {
  int rank = int(shape.size());
  std::vector<int> order(rank), spt(rank, 1), tpw(rank, 1), wpc(rank, 1);
  for (int d = 0; d < rank; ++d) order[d] = d;
  std::shuffle(order.begin(), order.end(), g);
  for (int d = 0; d < rank; ++d) spt[d] = 1 << std::uniform_int_distribution<int>(0, 2)(g);
  auto pick = [&] { return std::uniform_int_distribution<int>(0, rank - 1)(g); };
  for (int n = ws; n > 1; n /= 2) tpw[pick()] *= 2;
  for (int n = nw; n > 1; n /= 2) wpc[pick()] *= 2;
  return gpu::blocked_layout(shape, spt, tpw, wpc, order, ws, nw);
}

// Layouts of `shape` of the kinds the lowering meets: blocked, a reduction's result
// (blocked over one more dim, reduced), a transposed blocked layout.
Layout random_layout(std::mt19937& g, const std::vector<int>& shape, int ws, int nw) {
  int kind = std::uniform_int_distribution<int>(0, 2)(g);
  if (kind == 1) {
    std::vector<int> wide = shape;
    int axis = std::uniform_int_distribution<int>(0, int(shape.size()))(g);
    wide.insert(wide.begin() + axis, 1 << std::uniform_int_distribution<int>(1, 4)(g));
    return gpu::reduce_layout(random_blocked(g, wide, ws, nw), axis);
  }
  if (kind == 2 && shape.size() == 2) {
    Layout t = random_blocked(g, {shape[1], shape[0]}, ws, nw);
    return gpu::trans_layout(t, {1, 0});
  }
  return random_blocked(g, shape, ws, nw);
}

TEST(WarpShuffle, SimulatedPlansDeliverEveryElement) {
  std::mt19937 g(11);
  const std::vector<std::vector<int>> shapes = {{64}, {256}, {16, 16}, {32, 32}, {8, 64}, {64, 64}, {4, 8, 16}};
  int accepted = 0, crossing = 0, shuffled = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    const auto& shape = shapes[size_t(iter) % shapes.size()];
    int ws = iter % 2 ? 64 : 32;
    int nw = 1 << std::uniform_int_distribution<int>(0, 2)(g);
    Layout src = random_layout(g, shape, ws, nw);
    Layout dst = random_layout(g, shape, ws, nw);
    std::string what = "src " + src.str() + "\ndst " + dst.str();
    auto p = gpu::warp_shuffle_plan(src, dst);
    ASSERT_EQ(p.has_value(), brute_warp_local(src, dst, ws, nw)) << what;
    ASSERT_EQ(gpu::crosses_warps(src, dst), !p.has_value()) << what;
    if (!p) {
      ++crossing;
      continue;
    }
    ++accepted;
    if (p->num_shuffles() > 0) ++shuffled;
    simulate(src, dst, *p, ws, nw, what);
    if (HasFatalFailure()) return;
  }
  // the draw must exercise both answers and real shuffles
  EXPECT_GT(accepted, 200);
  EXPECT_GT(crossing, 200);
  EXPECT_GT(shuffled, 100);
}

// --- kernels -----------------------------------------------------------------------

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx950"};

using tltest::compile_for;
using tltest::count;

// y[i] = sum_j x[i, j] * z[i] + z[i] over a [32, 32] f32 tile: the row sums come out of
// the reduction in its slice layout (lanes 0..7 of a row's 8 lanes share it, 8 rows per
// thread on 32 lanes); the product and the store work in that layout, and z, loaded one
// row per lane, is converted into it. With one warp per program nothing crosses warps:
// before the shuffle path this conversion went through 128 bytes of shared memory with
// two barriers on every target.
template <class E = ty::f32> std::unique_ptr<ir::Function> row_sum_scale_kernel() {
  return trace("row_sum_scale", [&](Trace& t) {
    auto x = ptr_arg<E>(t, "x", true);
    auto z = ptr_arg<E>(t, "z", true);
    auto y = ptr_arg<E>(t, "y", true);
    auto r = tl::expand_dims(tl::arange(0, 32), 1);
    auto c = tl::expand_dims(tl::arange(0, 32), 0);
    auto v = tl::load(x + r * 32 + c);
    auto s = tl::sum(v, 1);
    auto i = tl::arange(0, 32);
    auto zv = tl::load(z + i);
    tl::store(y + i, s * zv + zv);
  });
}

TEST(WarpShuffle, ReductionResultConvertsWithoutLdsOnAmd) {
  for (const char* arch : kArchs) {
    auto f = row_sum_scale_kernel();
    auto co = compile_for(arch, *f, 1);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(co.shared_bytes, 0) << arch;
    EXPECT_EQ(co.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(count(dis, "s_barrier"), 0) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "ds_write"), 0) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "ds_read"), 0) << arch << "\n" << dis;
    EXPECT_GE(count(dis, "ds_bpermute_b32"), 1) << arch << "\n" << dis;
  }
}

TEST(WarpShuffle, ReductionResultConvertsWithoutSharedMemoryOnNvidia) {
  auto f = row_sum_scale_kernel();
  auto co = compile_for("sm_90", *f, 1);
  std::string p(co.binary.begin(), co.binary.end());
  EXPECT_EQ(co.shared_bytes, 0);
  EXPECT_EQ(count(p, "st.shared"), 0) << p;
  EXPECT_EQ(count(p, "bar.sync"), 0) << p;
  // one shuffle per distinct row a thread holds in the reduction's layout
  EXPECT_EQ(count(p, "shfl.sync.idx.b32"), 8) << p;
}

TEST(WarpShuffle, NarrowAndWideTypesShuffleAsWords) {
  // f16 travels zero-extended in one word, f64 as two words. (Their tiles get other
  // layouts than f32's, 8 and 2 elements per load: 4 rows per thread for f16, 16 for f64.)
  auto h = row_sum_scale_kernel<ty::f16>();
  auto ch = compile_for("sm_90", *h, 1);
  std::string ph(ch.binary.begin(), ch.binary.end());
  EXPECT_EQ(ch.shared_bytes, 0);
  EXPECT_EQ(count(ph, "shfl.sync.idx.b32"), 4) << ph;
  auto d = row_sum_scale_kernel<ty::f64>();
  auto cd = compile_for("sm_90", *d, 1);
  std::string pd(cd.binary.begin(), cd.binary.end());
  EXPECT_EQ(cd.shared_bytes, 0);
  EXPECT_EQ(count(pd, "shfl.sync.idx.b32"), 2 * 16) << pd;
  for (const char* arch : kArchs) {
    auto a = row_sum_scale_kernel<ty::f16>();
    auto ca = compile_for(arch, *a, 1);
    EXPECT_EQ(ca.shared_bytes, 0) << arch;
    EXPECT_GE(count(amd::disassemble(ca.binary), "ds_bpermute_b32"), 1) << arch;
  }
}

TEST(WarpShuffle, WithFourWarpsZIsStillWarpLocal) {
  // Four warps: each warp loads all of z (the [32] layout repeats over warps), so its
  // conversion into the reduction's layout still stays within each warp.
  auto f = row_sum_scale_kernel();
  auto co = compile_for("sm_90", *f, 4);
  std::string p(co.binary.begin(), co.binary.end());
  EXPECT_EQ(co.shared_bytes, 0);
  EXPECT_EQ(count(p, "bar.sync"), 0) << p;
  EXPECT_GE(count(p, "shfl.sync.idx.b32"), 1) << p;
}

TEST(WarpShuffle, ConversionsAcrossWarpsOrTooManyShufflesKeepSharedMemory) {
  // A [64, 64] transpose with four warps: loaded rows and stored columns are split over
  // warps differently, elements cross warps.
  for (const char* arch : kArchs) {
    auto f = tltest::transpose_kernel(64, 64);
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_GT(co.shared_bytes, 0) << arch;
    EXPECT_GE(count(dis, "s_barrier"), 1) << arch;
    EXPECT_GE(count(dis, "ds_write"), 1) << arch;
    EXPECT_EQ(count(dis, "ds_bpermute"), 0) << arch;
  }
  auto f = tltest::transpose_kernel(64, 64);
  auto co = compile_for("sm_90", *f, 4);
  std::string p(co.binary.begin(), co.binary.end());
  EXPECT_GT(co.shared_bytes, 0);
  EXPECT_GE(count(p, "bar.sync"), 1);
  EXPECT_EQ(count(p, "shfl.sync.idx"), 0);
  // A [32, 32] transpose in one warp is warp-local but all-to-all (see
  // TransposeInOneWarpIsAllToAll): the cost rule keeps it in shared memory.
  auto g = tltest::transpose_kernel(32, 32);
  auto cg = compile_for("sm_90", *g, 1);
  std::string q(cg.binary.begin(), cg.binary.end());
  EXPECT_GT(cg.shared_bytes, 0);
  EXPECT_EQ(count(q, "shfl.sync.idx"), 0);
}

TEST(WarpShuffle, RowSumScaleOnCpu) {
  // The CPU backend ignores layouts: this checks the program the GPU tests compile.
  static std::shared_ptr<runtime::Device> dev = runtime::make_cpu_device();
  auto f = row_sum_scale_kernel();
  auto code = codegen::compile(*f, codegen::host_target(), codegen::CompileOptions{});
  auto k = dev->load(code);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(32 * 32), z(32), y(32, -777.0f);
  for (auto& e : x) e = d(g);
  for (auto& e : z) e = d(g);
  auto* dx = static_cast<float*>(dev->alloc(x.size() * 4));
  auto* dz = static_cast<float*>(dev->alloc(z.size() * 4));
  auto* dy = static_cast<float*>(dev->alloc(y.size() * 4));
  dev->copy_to_device(dx, x.data(), x.size() * 4);
  dev->copy_to_device(dz, z.data(), z.size() * 4);
  dev->copy_to_device(dy, y.data(), y.size() * 4);
  runtime::LaunchDims dims;
  dev->launch(*k, dims, {uint64_t(dx), uint64_t(dz), uint64_t(dy)}, nullptr);
  dev->copy_to_host(y.data(), dy, y.size() * 4);
  for (int i = 0; i < 32; ++i) {
    double s = 0;
    for (int j = 0; j < 32; ++j) s += x[size_t(i * 32 + j)];
    EXPECT_NEAR(y[size_t(i)], s * z[size_t(i)] + z[size_t(i)], 1e-4) << i;
  }
  dev->free(dx);
  dev->free(dz);
  dev->free(dy);
}

}  // namespace

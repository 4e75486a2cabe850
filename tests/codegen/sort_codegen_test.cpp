// tl::sort, tl::topk and tl::histogram compiled for gfx942, gfx950 and sm_90 (no GPU
// here; tests/dsl/sort_test.cpp runs them on one with TL_DEVICE): the bitonic network goes
// bit by bit of the sorted dim, registers free, lanes by xor shuffles, warps through shared
// memory; a 1x1024 sort with its indices at 4 warps spills nothing; the histogram counts
// with shared-memory atomics.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/layout.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/traced_kernels.hpp"
#include "tl/math.hpp"
#include "tl/sort.hpp"

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

namespace {

tl::i32 offsets2(int rows, int cols) {
  return tl::expand_dims(tl::arange(0, rows), 1) * cols + tl::expand_dims(tl::arange(0, cols), 0);
}

// [R, C] f32 sorted along the last dim with its indices (both stored).
std::unique_ptr<ir::Function> sort_kernel(int R, int C) {
  return trace("sort_rows", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto idx = ptr_arg<ty::i32>(t, "idx", true);
    auto [v, i] = tl::sort(tl::load(x + offsets2(R, C)), 1, false, tl::return_indices);
    tl::store(y + offsets2(R, C), v);
    tl::store(idx + offsets2(R, C), i);
  });
}

int lds_accesses(const std::string& dis) {
  return count(dis, "ds_write") + count(dis, "ds_read") + count(dis, "ds_store") + count(dis, "ds_load");
}

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

}  // namespace

// Which hardware bit holds each bit of a dim: blocked layouts have one for every bit;
// a layout that mixes a dim's bit with another dim's has none.
TEST(SortLayout, DimBitHolders) {
  using namespace tl::gpu;
  Layout l = default_layout({1, 1024}, {1, 0}, 4, 64, 4);  // 4 registers, 64 lanes, 4 warps along dim 1
  auto h = dim_bit_holders(l, 1);
  ASSERT_TRUE(h.has_value());
  ASSERT_EQ(h->size(), 10u);
  EXPECT_EQ((*h)[0].kind, HardwareBit::reg);
  EXPECT_EQ((*h)[2].kind, HardwareBit::lane);
  EXPECT_EQ((*h)[9].kind, HardwareBit::warp);
  EXPECT_EQ(dim_bit_holders(l, 0)->size(), 0u);  // a dim of 1
  Layout mixed = l;
  mixed.lane[0] ^= 1u;  // lane bit 0 now holds coordinate bits 0 and 2 together
  EXPECT_FALSE(dim_bit_holders(mixed, 1).has_value());
}

// The brief's bar: a 1x1024 f32 sort with its i32 indices at 4 warps assembles on gfx942,
// gfx950 and sm_90, and spills nothing on AMD (2 x 4 values a lane through 55 compare-
// exchange steps; the 2 warp bits go through LDS).
TEST(SortCodegen, OneRowOf1024At4WarpsNoSpills) {
  auto f = sort_kernel(1, 1024);
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto co = tltest::compile_for(arch, *f, 4);
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
    EXPECT_EQ(co.report.at("scratch_bytes"), 0) << arch;
    EXPECT_GT(lds_accesses(amd::disassemble(co.binary)), 0) << arch;  // the warp bits
    std::printf("sort 1x1024 f32 + i32 indices, 4 warps, %s: %d VGPRs, %d LDS bytes\n", arch,
                int(co.report.at("vgpr")), int(co.report.at("lds_bytes")));
  }
  auto co = tltest::compile_for("sm_90", *f, 4);
  EXPECT_GT(count(ptx(co), "shfl.sync.bfly"), 0);
  EXPECT_EQ(tltest::ptxas_errors(ptx(co)), "");
}

// Rows a warp holds whole ([16, 64] at 4 warps: a row is 64 lanes' registers on AMD) sort
// with registers and shuffles only: no LDS, no barrier.
TEST(SortCodegen, RowsWithinAWarpMoveNothingThroughSharedMemory) {
  auto f = sort_kernel(16, 64);
  auto co = tltest::compile_for("gfx942", *f, 4);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_EQ(lds_accesses(dis), 0) << co.tile_ir;
  EXPECT_EQ(count(dis, "s_barrier"), 0);
  EXPECT_GT(count(dis, "ds_swizzle") + count(dis, "ds_bpermute") + count(dis, "v_mov_b32_dpp") + count(dis, "_dpp"), 0);
  EXPECT_EQ(co.report.at("spill_vgpr"), 0);
  auto nv = tltest::compile_for("sm_90", *f, 4);
  EXPECT_EQ(count(ptx(nv), "st.shared"), 0);
  EXPECT_EQ(tltest::ptxas_errors(ptx(nv)), "");
}

// topk of expert logits in the MoE routing benchmark's shapes (bench/moe_topk_bench.cpp:
// 2048 logits a program, [32, 64] and [16, 128], k = 8, the softmax of the kept ones):
// assembles everywhere, no spills.
TEST(SortCodegen, TopkCompiles) {
  for (auto [T, E] : {std::pair{32, 64}, {16, 128}}) {
    auto f = trace("topk_route", [&](detail::Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto idx = ptr_arg<ty::i32>(t, "idx", true);
      auto [v, i] = tl::topk(tl::load(x + offsets2(T, E)), 8, tl::return_indices);
      auto e = tl::fast_expf(v - tl::max(v, 1, tl::keep_dims));  // the routing weights, as the benchmark
      tl::store(y + offsets2(T, 8), e / tl::sum(e, 1, tl::keep_dims));
      tl::store(idx + offsets2(T, 8), i);
    });
    for (const char* arch : {"gfx942", "gfx950"}) {
      auto co = tltest::compile_for(arch, *f, 4);
      EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
      std::printf("topk 8 of [%d, %d] f32 + indices, 4 warps, %s: %d VGPRs, %d LDS bytes\n", T, E, arch,
                  int(co.report.at("vgpr")), int(co.report.at("lds_bytes")));
    }
    EXPECT_EQ(tltest::ptxas_errors(ptx(tltest::compile_for("sm_90", *f, 4))), "");
  }
}

// The MoE shapes' top-k works in sort_layout (a thread's registers along the experts: 16
// at 4 warps of 32 lanes) and keeps topk_layout: the k-blocks and the first halving within
// a thread's registers, the other halvings across lanes (copies afterwards). On sm_90 the
// (logit, expert) pairs travel as one 64-bit key: the only shuffles are the halvings'
// across lanes, two 32-bit shuffles for each of the 8 registers kept, and no float compare
// or NaN test is left in the network.
TEST(SortCodegen, TopkHalvesWithinThreadsThenAcrossLanes) {
  using namespace tl::gpu;
  for (auto [T, E, lane_halvings] : {std::tuple{32, 64, 2}, {16, 128, 3}}) {
    Layout l = sort_layout({T, E}, 1, 32, 4);
    auto h = dim_bit_holders(l, 1);
    ASSERT_TRUE(h.has_value());
    for (int j = 0; j < 4; ++j) EXPECT_EQ((*h)[size_t(j)].kind, HardwareBit::reg) << E << " bit " << j;
    Layout out = topk_layout(l, 1, 8);
    EXPECT_EQ(out.shape, (std::vector<int>{T, 8}));
    EXPECT_EQ(out.reg, (std::vector<uint32_t>{1, 2, 4}));  // register bit 3 (expert bit 3) combined away
    int copies = 0;
    for (uint32_t x : out.lane) copies += x == 0;
    EXPECT_EQ(copies, lane_halvings) << E;
    auto f = trace("topk_route", [&](detail::Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto idx = ptr_arg<ty::i32>(t, "idx", true);
      auto [v, i] = tl::topk(tl::load(x + offsets2(T, E)), 8, tl::return_indices);
      tl::store(y + offsets2(T, 8), v);
      tl::store(idx + offsets2(T, 8), i);
    });
    auto co = tltest::compile_for("sm_90", *f, 4);
    const std::string p = ptx(co);
    EXPECT_EQ(count(p, "shfl.sync.bfly"), lane_halvings * 8 * 2) << co.tile_ir;
    EXPECT_EQ(count(p, "setp.nan") + count(p, "setp.num") + count(p, "setp.gt.f32") + count(p, "setp.equ.f32"), 0);
    EXPECT_EQ(count(p, "st.shared"), 0);
    EXPECT_EQ(tltest::ptxas_errors(p), "");
    const tltest::PtxasRun v = tltest::run_ptxas(p, "-arch=sm_90 -v");
    const size_t used = v.output.find("Used ");
    std::printf("topk 8 of [%d, %d] f32 + indices, 4 warps, sm_90: %d PTX lines; ptxas: %s\n", T, E, count(p, ";\n"),
                used == std::string::npos ? "-" : v.output.substr(used, v.output.find('\n', used) - used).c_str());
    if (const char* dir = std::getenv("TL_SORT_PTX_DIR"))  // (for reading the SASS by hand)
      if (FILE* fp = std::fopen(fmt::format("{}/topk_{}x{}.ptx", dir, T, E).c_str(), "w")) {
        std::fputs(p.c_str(), fp);
        std::fclose(fp);
      }
  }
}

// A top-k whose row spans warps ([1, 1024] at 8 warps) halves across the warp bits through
// shared memory; one of f64 (no room to pack: value and index go through the network as a
// pair) too.
TEST(SortCodegen, TopkAcrossWarpsAndUnpackedCompile) {
  auto row = trace("topk_row", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto idx = ptr_arg<ty::i32>(t, "idx", true);
    auto [v, i] = tl::topk(tl::load(x + tl::arange(0, 1024)), 8, tl::return_indices);
    tl::store(y + tl::arange(0, 8), v);
    tl::store(idx + tl::arange(0, 8), i);
  });
  auto wide = trace("topk_f64", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f64>(t, "x", true);
    auto y = ptr_arg<ty::f64>(t, "y", true);
    auto idx = ptr_arg<ty::i32>(t, "idx", true);
    auto [v, i] = tl::topk(tl::load(x + offsets2(16, 64)), 4, tl::return_indices);
    tl::store(y + offsets2(16, 4), v);
    tl::store(idx + offsets2(16, 4), i);
  });
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto co = tltest::compile_for(arch, *row, 8);
    EXPECT_GT(lds_accesses(amd::disassemble(co.binary)), 0) << arch;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
    EXPECT_EQ(tltest::compile_for(arch, *wide, 4).report.at("spill_vgpr"), 0) << arch;
  }
  const std::string p = ptx(tltest::compile_for("sm_90", *row, 8));
  EXPECT_GT(count(p, "st.shared"), 0);
  EXPECT_EQ(tltest::ptxas_errors(p), "");
  EXPECT_EQ(tltest::ptxas_errors(ptx(tltest::compile_for("sm_90", *wide, 4))), "");
}

// Sorts of what other ops lay out their own way: a dot's accumulator (MFMA / wgmma
// layouts; converted to a blocked layout first where a dim bit is not one hardware bit),
// a bf16 tile sorted along dim 0, and a sort inside a loop whose result is carried.
TEST(SortCodegen, SortsOfDotResultsAndInLoopsCompile) {
  auto f = trace("sort_mixed", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::f16>(t, "a", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto z = ptr_arg<ty::bf16>(t, "z", true);
    auto n = tltest::scalar_arg<ty::i32>(t, "n", true);
    auto acc = tl::dot(tl::load(a + offsets2(64, 32)), tl::load(a + offsets2(32, 64)));
    auto [v, i] = tl::sort(acc, 1, true, tl::return_indices);
    tl::store(y + offsets2(64, 64), v + i.to<ty::f32>());
    auto b = tl::load(z + offsets2(32, 16));
    for (auto k : tl::range(0, n, 1)) b = tl::sort(b, 0, false) + tl::full<ty::bf16>({32, 16}, 1.0);
    tl::store(z + offsets2(32, 16), b);
  });
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto co = tltest::compile_for(arch, *f, 4);
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
  }
  EXPECT_EQ(tltest::ptxas_errors(ptx(tltest::compile_for("sm_90", *f, 4))), "");
}

// The histogram counts with shared-memory atomics (ds_add_u32 on AMD, atom/red.shared on
// NVIDIA), relaxed, at workgroup scope: no cache write-back or invalidate.
TEST(SortCodegen, HistogramCountsWithSharedAtomics) {
  auto f = trace("histogram", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::i32>(t, "x", true);
    auto out = ptr_arg<ty::i32>(t, "out", true);
    auto o = tl::arange(0, 1024);
    auto v = tl::load(x + o);
    auto h = tl::histogram(v, 64, v != 7);
    tl::atomic_add(out + tl::arange(0, 64), h, tl::sem::relaxed);
  });
  for (const char* arch : {"gfx942", "gfx950"}) {
    std::string dis = amd::disassemble(tltest::compile_for(arch, *f, 4).binary);
    EXPECT_GT(count(dis, "ds_add_u32") + count(dis, "ds_add_rtn_u32"), 0) << arch << dis;
    EXPECT_EQ(count(dis, "buffer_wbl2") + count(dis, "buffer_inv"), 0) << arch;
  }
  std::string p = ptx(tltest::compile_for("sm_90", *f, 4));
  EXPECT_GT(count(p, "atom.shared") + count(p, "red.shared") + count(p, "atom.relaxed.cta.shared") +
                count(p, "red.relaxed.cta.shared"),
            0)
      << p;
  EXPECT_EQ(tltest::ptxas_errors(p), "");
}

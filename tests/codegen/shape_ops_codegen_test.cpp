// tl::join / split / cat / flip on the GPUs, compiled without running: the layout rules
// (codegen/gpu/layout.hpp, Triton's JoinOp/SplitOp inference) that make join, split and
// cat rename registers, and what the code moves where they apply. Tutorial 09's
// EPILOGUE_SUBTILE (a dot's accumulator split in two halves stored separately) moves no
// more data through LDS or shared memory than the plain epilogue storing the whole tile.
#include <gtest/gtest.h>

#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/layout.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

namespace {

tl::i32 offsets2(int rows, int cols, const tl::i32& stride) {
  return tl::expand_dims(tl::arange(0, rows), 1) * stride + tl::expand_dims(tl::arange(0, cols), 0);
}

// Tutorial 09's inner loop and epilogue (without descriptors): C = A . B in f16 over a K
// loop, stored whole or, with `subtile`, as the two halves tl::split gives.
std::unique_ptr<ir::Function> matmul_epilogue(bool subtile, int BM, int BN, int BK) {
  return trace(subtile ? "epilogue_subtile" : "epilogue_whole", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::f16>(t, "a", true);
    auto b = ptr_arg<ty::f16>(t, "b", true);
    auto c = ptr_arg<ty::f16>(t, "c", true);
    auto K = scalar_arg<ty::i32>(t, "K", true);
    auto N = scalar_arg<ty::i32>(t, "N", true);
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto k : tl::range(0, K, BK, tl::num_stages(2))) {
      auto at = tl::load(a + offsets2(BM, BK, K) + k);
      auto bt = tl::load(b + offsets2(BK, BN, N) + k * N);
      acc = tl::dot(at, bt, acc);
    }
    if (!subtile) {
      tl::store(c + offsets2(BM, BN, N), acc.to<ty::f16>());
      return;
    }
    auto halves = tl::trans(tl::reshape(acc, {BM, 2, BN / 2}), {0, 2, 1});
    auto [c0, c1] = tl::split(halves);
    tl::store(c + offsets2(BM, BN / 2, N), c0.to<ty::f16>());
    tl::store(c + BN / 2 + offsets2(BM, BN / 2, N), c1.to<ty::f16>());
  });
}

// The same loop, the accumulator's column halves (tutorial 09's reshape, permute and
// split) scaled apart, then put back together: `join` (the permute and reshape undone: the
// whole tile again) or `interleave` (the halves' columns alternating).
std::unique_ptr<ir::Function> matmul_halves_rejoined(bool interleave, int BM, int BN, int BK) {
  return trace(interleave ? "halves_interleaved" : "halves_joined", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::f16>(t, "a", true);
    auto b = ptr_arg<ty::f16>(t, "b", true);
    auto c = ptr_arg<ty::f16>(t, "c", true);
    auto K = scalar_arg<ty::i32>(t, "K", true);
    auto N = scalar_arg<ty::i32>(t, "N", true);
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto k : tl::range(0, K, BK, tl::num_stages(2))) {
      auto at = tl::load(a + offsets2(BM, BK, K) + k);
      auto bt = tl::load(b + offsets2(BK, BN, N) + k * N);
      acc = tl::dot(at, bt, acc);
    }
    auto [h0, h1] = tl::split(tl::trans(tl::reshape(acc, {BM, 2, BN / 2}), {0, 2, 1}));
    h0 = h0 * 2.0f, h1 = h1 * 3.0f;
    auto whole = interleave ? tl::interleave(h0, h1) : tl::reshape(tl::trans(tl::join(h0, h1), {0, 2, 1}), {BM, BN});
    tl::store(c + offsets2(BM, BN, N), whole.to<ty::f16>());
  });
}

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

int lds_accesses(const std::string& dis) { return count(dis, "ds_write") + count(dis, "ds_read") + count(dis, "ds_store") + count(dis, "ds_load"); }

}  // namespace

// The algebra: join puts the new dim in register bit 0, split of that gives the operand's
// layout back; a layout holding the 2 in lanes is not split in registers.
TEST(ShapeOpsLayout, JoinSplitAndCatRenameRegisters) {
  using namespace tl::gpu;
  Layout l = default_layout({64, 32}, {1, 0}, 4, 64, 4);
  Layout j = join_layout(l);
  EXPECT_EQ(j.shape, (std::vector<int>{64, 32, 2}));
  EXPECT_EQ(j.num_regs(), 2 * l.num_regs());
  ASSERT_EQ(sole_register_bit(j, 1), 0);
  EXPECT_EQ(split_layout(j, 0), l);
  EXPECT_EQ(join_source_layout(j), l);
  EXPECT_EQ(split_source_layout(j, l), j);  // in registers: read as is
  // [64, 2] with one element a thread: the 2 is a lane bit, so split reads it converted.
  Layout lanes = default_layout({64, 2}, {1, 0}, 1, 64, 1);
  EXPECT_FALSE(sole_register_bit(lanes, 1).has_value());
  Layout half = default_layout({64}, {0}, 1, 64, 1);
  EXPECT_EQ(split_source_layout(lanes, half), join_layout(half));
  Layout c = cat_layout(l);
  EXPECT_EQ(c.shape, (std::vector<int>{128, 32}));
  EXPECT_EQ(cat_source_layout(c), l);
  EXPECT_EQ(sole_register_bit(c, uint32_t(l.numel())), int(c.reg.size()) - 1);
}

// Tutorial 09's EPILOGUE_SUBTILE on the AMD GPUs: the split is free (the accumulator's
// column half lies in registers of the MFMA layout, as in Triton's), so the subtiled
// epilogue makes no more LDS accesses and layout conversions than the whole-tile one.
TEST(ShapeOpsCodegen, AmdEpilogueSubtileMovesNoMoreDataThanTheWholeTile) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto fs = matmul_epilogue(true, 128, 128, 32), fw = matmul_epilogue(false, 128, 128, 32);
    auto cs = tltest::compile_for(arch, *fs), cw = tltest::compile_for(arch, *fw);
    std::string ds = amd::disassemble(cs.binary), dw = amd::disassemble(cw.binary);
    EXPECT_LE(lds_accesses(ds), lds_accesses(dw)) << arch << "\n" << cs.tile_ir;
    EXPECT_LE(count(cs.tile_ir, "convert_layout"), count(cw.tile_ir, "convert_layout")) << arch << "\n" << cs.tile_ir;
    EXPECT_EQ(cs.report.at("spill_vgpr"), 0) << arch;
    EXPECT_LE(cs.report.at("vgpr"), cw.report.at("vgpr") + 8) << arch;
  }
}

// split, join and interleave of a dot's accumulator move no data on gfx942 and gfx950
// (Triton's layouts move none: the halves' 2 is an MFMA register bit, join puts it back in
// one, interleave's in register bit 0): the accumulator split apart and joined back, or
// interleaved, is stored with exactly the LDS accesses and layout conversions of the
// whole-tile epilogue, and no conversion lies between the dot and the store.
TEST(ShapeOpsCodegen, AmdSplitJoinInterleaveOfAnAccumulatorMoveNoData) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto whole = tltest::compile_for(arch, *matmul_epilogue(false, 128, 128, 32));
    const int whole_lds = lds_accesses(amd::disassemble(whole.binary));
    for (bool interleave : {false, true}) {
      auto co = tltest::compile_for(arch, *matmul_halves_rejoined(interleave, 128, 128, 32));
      const std::string why = std::string(arch) + (interleave ? " interleave\n" : " join\n") + co.tile_ir;
      EXPECT_EQ(lds_accesses(amd::disassemble(co.binary)), whole_lds) << why;
      EXPECT_EQ(co.report.at("lds_bytes"), whole.report.at("lds_bytes")) << why;
      // (a register-only conversion may reorder the joined registers for the store)
      EXPECT_EQ(count(co.tile_ir, "convert_layout path=shared"), count(whole.tile_ir, "convert_layout path=shared"))
          << why;
      EXPECT_EQ(co.report.at("conversions_shared"), whole.report.at("conversions_shared")) << why;
      EXPECT_EQ(co.report.at("spill_vgpr"), 0) << why;
    }
  }
}

TEST(ShapeOpsCodegen, NvptxEpilogueSubtileMovesNoMoreDataThanTheWholeTile) {
  auto fs = matmul_epilogue(true, 128, 128, 32), fw = matmul_epilogue(false, 128, 128, 32);
  auto cs = tltest::compile_for("sm_90", *fs), cw = tltest::compile_for("sm_90", *fw);
  std::string ps = ptx(cs), pw = ptx(cw);
  EXPECT_LE(count(ps, "st.shared") + count(ps, "ld.shared"), count(pw, "st.shared") + count(pw, "ld.shared")) << cs.tile_ir;
  EXPECT_LE(count(cs.tile_ir, "convert_layout"), count(cw.tile_ir, "convert_layout")) << cs.tile_ir;
}

// A loaded [n, 2] tile of complex numbers split, multiplied by i and joined back, and two
// loaded tiles interleaved: no conversion, no LDS (the load holds each pair in a thread's
// registers, join puts them back there, and the stores take those layouts).
TEST(ShapeOpsCodegen, JoinAndSplitOfLoadedTilesStayInRegisters) {
  auto f = trace("join_split", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto z = ptr_arg<ty::f32>(t, "z", true);
    auto o = tl::arange(0, 1024);
    auto pairs = tl::load(x + offsets2(1024, 2, 2));
    auto [re, im] = tl::split(pairs);
    tl::store(y + offsets2(1024, 2, 2), tl::join(-im, re));
    tl::store(z + tl::arange(0, 2048), tl::interleave(tl::load(y + o), tl::load(x + o)));
  });
  for (const char* arch : {"gfx942", "gfx950", "sm_90"}) {
    auto co = tltest::compile_for(arch, *f);
    EXPECT_EQ(count(co.tile_ir, "convert_layout"), 0) << arch << "\n" << co.tile_ir;
    if (std::string(arch).rfind("gfx", 0) == 0) {
      std::string dis = amd::disassemble(co.binary);
      EXPECT_EQ(co.report.at("lds_bytes"), 0) << arch;
      EXPECT_EQ(lds_accesses(dis), 0) << arch << "\n" << dis;
    } else {
      EXPECT_EQ(count(ptx(co), "st.shared"), 0) << co.tile_ir;
    }
  }
}

// flip: within a warp, registers and xor shuffles (no LDS); across warps, one trip
// through shared memory.
TEST(ShapeOpsCodegen, FlipUsesShufflesWithinAWarpAndLdsAcrossWarps) {
  auto within = trace("flip_within", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto o = tl::arange(0, 256);
    tl::store(x + o, tl::flip(tl::load(x + o)));
  });
  auto across = trace("flip_across", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto o = tl::arange(0, 1024);
    tl::store(x + o, tl::flip(tl::load(x + o)));
  });
  for (const char* arch : {"gfx942", "gfx950"}) {
    // 256 f32 on a 64-lane wave and one warp: 4 registers a lane, every lane of one wave.
    auto cw = tltest::compile_for(arch, *within, 1);
    EXPECT_EQ(cw.report.at("lds_bytes"), 0) << arch;
    auto ca = tltest::compile_for(arch, *across, 4);
    EXPECT_GT(ca.report.at("lds_bytes"), 0) << arch;
  }
  auto cw = tltest::compile_for("sm_90", *within, 1);
  EXPECT_EQ(count(ptx(cw), "st.shared"), 0);
  EXPECT_GT(count(ptx(cw), "shfl.sync.bfly"), 0) << ptx(cw);
}

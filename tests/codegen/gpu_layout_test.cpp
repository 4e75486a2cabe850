// The layout algebra of the GPU lowering (codegen/gpu/layout.hpp) and the index math it
// emits: every layout the lowering makes, and swizzled ones, checked element by element
// against the layout's own definition (register, lane and warp images XORed), by
// evaluating the very LLVM code the lowering emits on constant thread ids.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "codegen/gpu/layout.hpp"

namespace {

using namespace tl::gpu;

// The definition: element of (register r, lane l, warp w).
uint32_t defined_index(const Layout& l, uint32_t r, uint32_t lane, uint32_t warp) {
  return l.reg_part(r) ^ l.thread_part(lane, warp);
}

void expect_emitted_matches_definition(const Layout& l) {
  std::vector<uint32_t> got = evaluate_emitted_indices(l);
  uint32_t lanes = 1u << l.lane.size(), regs = uint32_t(l.num_regs());
  ASSERT_EQ(got.size(), size_t(regs) * lanes * (1u << l.warp.size()));
  for (uint32_t w = 0; w < (1u << l.warp.size()); ++w)
    for (uint32_t ln = 0; ln < lanes; ++ln)
      for (uint32_t r = 0; r < regs; ++r)
        ASSERT_EQ(got[(w * lanes + ln) * regs + r], defined_index(l, r, ln, w))
            << l.str() << " reg " << r << " lane " << ln << " warp " << w;
}

std::vector<Layout> sample_layouts() {
  std::vector<Layout> out;
  for (int wave : {32, 64})
    for (int warps : {1, 4, 8}) {
      for (int vec : {1, 4, 8}) {
        out.push_back(default_layout({1024}, {0}, vec, wave, warps));
        out.push_back(default_layout({64, 64}, {1, 0}, vec, wave, warps));
        out.push_back(default_layout({64, 64}, {0, 1}, vec, wave, warps));
        out.push_back(default_layout({16, 128}, {1, 0}, vec, wave, warps));
        out.push_back(default_layout({4, 8, 32}, {2, 1, 0}, vec, wave, warps));
      }
      Layout b = default_layout({32, 128}, {1, 0}, 4, wave, warps);
      out.push_back(reduce_layout(b, 1));  // slices: lanes and warps become copies
      out.push_back(reduce_layout(b, 0));
      out.push_back(trans_layout(b, {1, 0}));
      out.push_back(broadcast_source_layout(b, {1, 128}));
    }
  return out;
}

TEST(LayoutIndexMath, EmittedCodeComputesEveryLayoutsDefinition) {
  for (const Layout& l : sample_layouts()) expect_emitted_matches_definition(l);
}

// A [64, 64] bf16 tile held 8 elements a thread (16-byte vectors), composed with the XOR
// swizzle shared memory uses: images now overlap between registers, lanes and warps, so
// only XOR (not the ADD a blocked layout gets) computes the right offsets.
TEST(LayoutIndexMath, SwizzledLayoutIsLoweredWithXor) {
  for (int wave : {32, 64}) {
    Layout blocked = default_layout({64, 64}, {1, 0}, 8, wave, 4);
    LinearMap swz = xor_swizzle(64, 64, /*vec_elems=*/8, /*elem_bytes=*/2);
    Layout swizzled = compose(swz, blocked, {64, 64});
    // Some image now has several bits set: the case the emitted code must XOR.
    bool overlapping = false;
    for (uint32_t img : swizzled.lane) overlapping |= img && (img & (img - 1));
    for (uint32_t img : swizzled.warp) overlapping |= img && (img & (img - 1));
    for (uint32_t img : swizzled.reg) overlapping |= img && (img & (img - 1));
    EXPECT_TRUE(overlapping) << swizzled.str();
    expect_emitted_matches_definition(swizzled);
    // And element by element, it is the swizzle of where the blocked layout puts it.
    std::vector<uint32_t> plain = evaluate_emitted_indices(blocked), sw = evaluate_emitted_indices(swizzled);
    for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(sw[i], swz.apply(plain[i])) << i;
  }
}

// --- the swizzle itself ---------------------------------------------------------

// Bank group (of 16 bytes in a 128-byte pass over the banks) of an element offset.
int bank_group(uint32_t elem_offset, int elem_bytes) { return int(elem_offset * uint32_t(elem_bytes) / 16 % 8); }

// 8 lanes of a 128-bit access (one pass over the 32 banks) reading one vector from
// each of 8 consecutive rows at the same column: what reading an MFMA/mma operand
// tile or a transposed tile does. Conflict free when the 8 land in 8 bank groups.
bool column_access_conflict_free(const LinearMap& m, int rows, int cols, int vec, int elem_bytes) {
  for (int row0 = 0; row0 + 8 <= rows; row0 += 8)
    for (int v = 0; v < cols / vec; ++v) {
      std::set<int> groups;
      for (int t = 0; t < 8; ++t) groups.insert(bank_group(m.apply(uint32_t((row0 + t) * cols + v * vec)), elem_bytes));
      if (groups.size() != 8) return false;
    }
  return true;
}

bool row_access_conflict_free(const LinearMap& m, int rows, int cols, int vec, int elem_bytes) {
  int per_pass = 128 / (vec * elem_bytes);
  for (int r = 0; r < rows; ++r)
    for (int v0 = 0; v0 + per_pass <= cols / vec; v0 += per_pass) {
      std::set<int> groups;
      for (int t = 0; t < per_pass; ++t) groups.insert(bank_group(m.apply(uint32_t(r * cols + (v0 + t) * vec)), elem_bytes));
      if (int(groups.size()) != per_pass) return false;
    }
  return true;
}

TEST(XorSwizzle, SixteenByteAccessesAreBankConflictFree) {
  struct Case { int rows, cols, elem_bytes; };
  for (Case c : {Case{64, 64, 2}, Case{128, 64, 2}, Case{64, 128, 2}, Case{64, 64, 4}, Case{64, 128, 1}}) {
    SCOPED_TRACE(testing::Message() << c.rows << "x" << c.cols << " of " << c.elem_bytes << " bytes");
    int vec = 16 / c.elem_bytes;
    LinearMap swz = xor_swizzle(c.rows, c.cols, vec, c.elem_bytes);
    EXPECT_TRUE(column_access_conflict_free(swz, c.rows, c.cols, vec, c.elem_bytes));
    EXPECT_TRUE(row_access_conflict_free(swz, c.rows, c.cols, vec, c.elem_bytes));
    // A bijection on the tile, and its own inverse (the row bits it XORs by are unchanged).
    std::set<uint32_t> seen;
    for (uint32_t i = 0; i < uint32_t(c.rows * c.cols); ++i) {
      seen.insert(swz.apply(i));
      ASSERT_EQ(swz.apply(swz.apply(i)), i);
    }
    EXPECT_EQ(seen.size(), size_t(c.rows * c.cols));
    // Within a vector, elements stay contiguous: one 128-bit access still reads one vector.
    for (uint32_t i = 0; i < uint32_t(c.rows * c.cols); i += uint32_t(vec))
      for (int k = 1; k < vec; ++k) ASSERT_EQ(swz.apply(i + uint32_t(k)), swz.apply(i) + uint32_t(k));
  }
  // Without the swizzle the column access is an 8-way conflict: the check can fail.
  LinearMap identity;
  for (int b = 0; b < 12; ++b) identity.image.push_back(1u << b);
  EXPECT_FALSE(column_access_conflict_free(identity, 64, 64, 8, 2));
}

// Narrow rows (32 bf16 = 64 bytes) share a pass over the banks two at a time: rows 2k
// and 2k+1 sit in its two halves, and the phase changes every two rows, so 8 rows read
// down a column still land in 8 bank groups.
TEST(XorSwizzle, NarrowRowsSharePhases) {
  LinearMap swz = xor_swizzle(128, 32, 8, 2);
  for (int r0 = 0; r0 < 128; r0 += 8)
    for (int v = 0; v < 4; ++v) {
      std::set<int> groups;
      for (int t = 0; t < 8; ++t) groups.insert(bank_group(swz.apply(uint32_t((r0 + t) * 32 + v * 8)), 2));
      EXPECT_EQ(groups.size(), 8u) << "rows " << r0 << ".. vector " << v;
    }
}

// The layout and swizzle the lowering uses for a [64, 64] bf16 tl::shared stage
// (shared_tile_layout, composed with the register layout as lower_shared.cpp does): for
// the planner's default layout of that shape (8 contiguous bf16 per thread, rows across
// lanes; what both the store and the load of the lowering tests get) and for a layout
// whose lanes walk down the rows (a transposed reader), every 8-lane phase of every
// 128-bit access touches 8 distinct 16-byte bank groups, on wave64 and wave32.
TEST(XorSwizzle, SharedTileAccessesOfTheLoweringAreConflictFree) {
  const std::vector<int> shape{64, 64};
  const int eb = 2;
  SharedTileLayout st = shared_tile_layout(shape, eb);
  EXPECT_EQ(st.vec, 8);
  auto phases_conflict_free = [&](const Layout& l, const LinearMap& offsets_map) {
    Layout offsets = compose(offsets_map, l, shape);
    int g = std::min(contiguous_run(l, 1), st.vec);
    EXPECT_EQ(g, 8) << "a 128-bit access per 8 registers: " << l.str();
    int lanes = 1 << l.lane.size(), warps = 1 << l.warp.size();
    for (int w = 0; w < warps; ++w)
      for (int r = 0; r < l.num_regs(); r += g)
        for (int l0 = 0; l0 < lanes; l0 += 8) {
          std::set<uint32_t> groups;
          for (int ln = l0; ln < l0 + 8; ++ln) {
            uint32_t off = offsets.reg_part(uint32_t(r)) ^ offsets.thread_part(uint32_t(ln), uint32_t(w));
            EXPECT_EQ(off % uint32_t(g), 0u);  // the access is one aligned vector
            groups.insert(off * eb / 16 % 8);
          }
          if (groups.size() != 8) return false;
        }
    return true;
  };
  LinearMap identity;
  for (int b = 0; b < 12; ++b) identity.image.push_back(1u << b);
  for (int ws : {64, 32}) {
    SCOPED_TRACE(testing::Message() << "wave" << ws);
    Layout planned = default_layout(shape, {1, 0}, 8, ws, 4);
    EXPECT_TRUE(phases_conflict_free(planned, st.offsets)) << planned.str();
    Layout down_rows = blocked_layout(shape, {1, 8}, {8, ws / 8}, {4, 1}, {0, 1}, ws, 4);
    EXPECT_TRUE(phases_conflict_free(down_rows, st.offsets)) << down_rows.str();
    // Unswizzled, the lanes walking down a column of vectors hit one bank group.
    EXPECT_FALSE(phases_conflict_free(down_rows, identity));
  }
}

// --- inverse and composition ----------------------------------------------------

TEST(LayoutInverse, LocatesEveryElementInAThreadThatHoldsIt) {
  for (const Layout& l : sample_layouts()) {
    auto inv = invert(l);
    ASSERT_TRUE(inv.has_value()) << l.str();
    for (uint32_t e = 0; e < uint32_t(l.numel()); ++e) {
      uint32_t r, ln, w;
      inv->locate(e, r, ln, w);
      ASSERT_LT(r, uint32_t(l.num_regs()));
      ASSERT_LT(ln, 1u << l.lane.size());
      ASSERT_LT(w, 1u << l.warp.size());
      ASSERT_EQ(defined_index(l, r, ln, w), e) << l.str();
    }
  }
}

TEST(LayoutInverse, ALayoutThatMissesElementsHasNone) {
  Layout l = default_layout({64}, {0}, 1, 32, 1);  // 64 elements over 32 lanes: 2 registers
  l.reg.assign(l.reg.size(), 0);                    // registers now copies: half the tile is held by nobody
  EXPECT_FALSE(invert(l).has_value());
}

TEST(LayoutCompose, IdentityAndSwizzleTwiceGiveTheLayoutBack) {
  Layout l = default_layout({64, 64}, {1, 0}, 8, 64, 4);
  LinearMap identity;
  for (int b = 0; b < 12; ++b) identity.image.push_back(1u << b);
  EXPECT_EQ(compose(identity, l, l.shape), l);
  LinearMap swz = xor_swizzle(64, 64, 8, 2);
  EXPECT_EQ(compose(swz, compose(swz, l, l.shape), l.shape), l);
  EXPECT_NE(compose(swz, l, l.shape), l);
}

}  // namespace

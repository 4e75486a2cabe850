// Shared encodings (codegen/gpu/shared_encoding.hpp): every exchange the encoding search
// plans is simulated element by element on a model of shared memory, with the access
// groups the lowering issues: the writing layout's vectors land where the reading
// layout's vectors (or gfx950's transposing reads, modelled from AMD's definition of
// ds_read_b64_tr_b16) find exactly the elements they must hold. Pairs: blocked layouts
// of every order and width, and the dot-operand conversions of the tutorial-06
// attention as planned for gfx90a, gfx942 and gfx950.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>

#include "bench/attention_tutorial.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using namespace tl::gpu;

uint32_t element(const Layout& l, uint32_t r, uint32_t lane, uint32_t warp) {
  return l.reg_part(r) ^ l.thread_part(lane, warp);
}

// Shared memory after `src` wrote its tile through the encoding, `group` elements an
// access at consecutive offsets from the group's first (as the lowering's vector stores);
// `pad`: a padded encoding's padding, applied to the linear offsets.
std::vector<int64_t> write(const Layout& src, const LinearMap& off, int group, const Padding& pad = {}) {
  ir::SharedEncoding e;
  e.padding = pad;
  std::vector<int64_t> mem(size_t(shared_elements(src.numel(), e)), -1);
  const uint32_t dup = src.duplicate_reg_mask();
  for (uint32_t w = 0; w < (1u << src.warp.size()); ++w)
    for (uint32_t lane = 0; lane < (1u << src.lane.size()); ++lane)
      for (int r = 0; r < src.num_regs(); r += group) {
        if (r & dup) continue;
        const uint32_t base = padded_offset(off.apply(element(src, uint32_t(r), lane, w)), pad);
        EXPECT_EQ(base % uint32_t(group), 0u) << "unaligned vector";
        for (int k = 0; k < group; ++k) {
          EXPECT_LT(base + k, mem.size());
          if (base + k < mem.size()) mem[base + k] = element(src, uint32_t(r + k), lane, w);
        }
      }
  return mem;
}

// Every register of `dst` read back, `group` elements an access.
void expect_read(const Layout& dst, const LinearMap& off, int group, const std::vector<int64_t>& mem,
                 const Padding& pad = {}) {
  for (uint32_t w = 0; w < (1u << dst.warp.size()); ++w)
    for (uint32_t lane = 0; lane < (1u << dst.lane.size()); ++lane)
      for (int r = 0; r < dst.num_regs(); r += group) {
        const uint32_t base = padded_offset(off.apply(element(dst, uint32_t(r), lane, w)), pad);
        ASSERT_EQ(base % uint32_t(group), 0u);
        for (int k = 0; k < group; ++k)
          ASSERT_EQ(mem[base + k], int64_t(element(dst, uint32_t(r + k), lane, w)))
              << "register " << r + k << " lane " << lane << " warp " << w;
      }
}

// ds_read_b64_tr_b16 / _b8 as AMD defines them: in each group of 16 lanes, lane l's
// element i is slot l % s of the 8 bytes lane (16 / s) i + l / s of the group addressed,
// s = 4 16-bit or 8 8-bit slots.
void expect_transposed_read(const Layout& dst, const LinearMap& off, int elem_bytes, const std::vector<int64_t>& mem,
                            const Padding& pad = {}) {
  auto a = transposed_read_layout(dst, off, elem_bytes);
  ASSERT_TRUE(a.has_value());
  const uint32_t s = uint32_t(8 / elem_bytes), per = 16 / s;
  for (uint32_t w = 0; w < (1u << dst.warp.size()); ++w)
    for (int r = 0; r < dst.num_regs(); r += int(s))
      for (uint32_t g = 0; g < 4; ++g) {
        uint32_t addr[16];
        for (uint32_t t = 0; t < 16; ++t) {
          addr[t] = padded_offset(off.apply(a->reg_part(uint32_t(r)) ^ a->thread_part(16 * g + t, w)), pad);
          ASSERT_EQ(addr[t] % s, 0u) << "an address not 8-byte aligned";
        }
        for (uint32_t l = 0; l < 16; ++l)
          for (uint32_t i = 0; i < s; ++i)
            ASSERT_EQ(mem[addr[per * i + l / s] + l % s], int64_t(element(dst, uint32_t(r) + i, 16 * g + l, w)))
                << "register " << r + int(i) << " lane " << 16 * g + l << " warp " << w;
      }
}

ExchangePlan expect_exchange(const Layout& src, const Layout& dst, int elem_bytes, bool transposed_reads,
                             bool padded = false) {
  // (padded: as much padding as the search takes, an eighth of the tile)
  ExchangePlan p = exchange_encoding(src, dst, elem_bytes, BankModel{}, transposed_reads, padded ? src.numel() : 0);
  SCOPED_TRACE(fmt::format("{} -> {}: {}{}", src.str(), dst.str(), p.encoding.str(),
                           p.transposed_read ? " read=transposed" : ""));
  EXPECT_TRUE(padded || p.encoding.padding.empty());
  const LinearMap off = shared_offsets(src.shape, p.encoding);
  const Padding& pad = p.encoding.padding;
  // Injective into the scratch tile (the tile's size, plus the padding): a bijection onto
  // [0, numel) before the padding; padded, at most an eighth more.
  const int64_t slots = shared_elements(src.numel(), p.encoding);
  EXPECT_LE(slots, src.numel() + src.numel() / 8);
  std::vector<bool> seen(size_t(slots), false);
  for (uint32_t x = 0; x < uint32_t(src.numel()); ++x) {
    const uint32_t linear = off.apply(x), o = padded_offset(linear, pad);
    EXPECT_LT(linear, uint32_t(src.numel()));
    if (o >= seen.size() || seen[o]) {
      ADD_FAILURE() << "element " << x << " at " << o << ": out of the tile or taken";
      return p;
    }
    seen[o] = true;
  }
  const std::vector<int64_t> mem = write(src, off, shared_access_group(src, p.encoding, elem_bytes), pad);
  for (uint32_t x = 0; x < uint32_t(src.numel()); ++x)
    EXPECT_EQ(mem[padded_offset(off.apply(x), pad)], int64_t(x)) << "an element nobody wrote";
  if (p.transposed_read) expect_transposed_read(dst, off, elem_bytes, mem, pad);
  else expect_read(dst, off, shared_access_group(dst, p.encoding, elem_bytes), mem, pad);
  // The lowering's padded offsets (layout_padded_element_index, folded with constant lane
  // and warp ids) are the model's, for every thread and register of both sides.
  if (!pad.empty())
    for (const Layout* l : {&src, &dst}) {
      const Layout through = compose(off, *l, l->shape);
      const std::vector<uint32_t> got = evaluate_emitted_padded_indices(through, pad);
      size_t i = 0;
      for (uint32_t w = 0; w < (1u << l->warp.size()); ++w)
        for (uint32_t lane = 0; lane < (1u << l->lane.size()); ++lane)
          for (int r = 0; r < l->num_regs(); ++r, ++i)
            if (got[i] != padded_offset(off.apply(element(*l, uint32_t(r), lane, w)), pad)) {
              ADD_FAILURE() << "emitted offset of register " << r << " lane " << lane << " warp " << w;
              return p;
            }
    }
  return p;
}

TEST(SharedEncoding, BlockedExchangesRoundTrip) {
  std::mt19937 rng(7);
  for (int wave : {32, 64})
    for (int trial = 0; trial < 60; ++trial) {
      const int rows = 8 << (rng() % 4), cols = 8 << (rng() % 4);
      auto pick = [&] {
        std::vector<int> order = rng() % 2 ? std::vector<int>{1, 0} : std::vector<int>{0, 1};
        return default_layout({rows, cols}, order, 1 << (rng() % 4), wave, 4);
      };
      const int elem_bytes = 1 << (rng() % 3);
      // AMD's search also pads (padded_shared); the same pairs, so that some pad.
      const Layout a = pick(), b = pick();
      expect_exchange(a, b, elem_bytes, false);
      expect_exchange(a, b, elem_bytes, false, true);
      // Where the read may be gfx950's transposing one (8- and 16-bit, wave 64).
      if (wave == 64 && elem_bytes <= 2) {
        const Layout c = pick(), d = pick();
        expect_exchange(c, d, elem_bytes, true);
        expect_exchange(c, d, elem_bytes, true, true);
      }
    }
}

// batch_shared_conversions' pairs: two tiles joined (join_layout: the pair in register bit
// 0), exchanged once, split back. The exchange of the joined layouts round-trips element
// by element, and join/split rename registers only (their source and result layouts are
// the unjoined ones): samples/moe's gate and up e8m0 scales on sm_90 ([128, 4, 1] bf16,
// coalesced -> the projection of the upcast's wgmma A layout, 8 warps) and the FP8 decode
// kernel's row statistic on sm_90 ([1, 64] f32 -> an accumulator's columns, 2 warps).
TEST(SharedEncoding, BatchedConversionPairsRoundTrip) {
  auto lay = [](std::vector<int> shape, std::vector<uint32_t> reg, std::vector<uint32_t> lane,
                std::vector<uint32_t> warp) {
    Layout l;
    l.shape = std::move(shape), l.reg = std::move(reg), l.lane = std::move(lane), l.warp = std::move(warp);
    return l;
  };
  const std::pair<Layout, Layout> pairs[] = {
      {lay({128, 4, 1}, {256}, {1, 2, 4, 8, 16}, {32, 64, 128}),
       lay({128, 4, 1}, {0, 32, 0, 0, 1, 2}, {0, 0, 4, 8, 16}, {64, 128, 256})},
      {lay({1, 64}, {0, 0, 0, 0}, {1, 2, 4, 8, 16}, {32}), lay({1, 64}, {1, 0, 16, 32}, {2, 4, 0, 0, 0}, {8})}};
  for (const auto& [src, dst] : pairs) {
    const Layout js = join_layout(src), jd = join_layout(dst);
    EXPECT_TRUE(join_source_layout(js) == src);
    EXPECT_EQ(sole_register_bit(jd, 1), 0);
    EXPECT_TRUE(split_layout(jd, 0) == dst);
    for (int elem_bytes : {2, 4}) expect_exchange(js, jd, elem_bytes, false);
  }
}

// The operand conversions of chained dots, where the encoding matters: Q, K^T and V into
// MFMA operand layouts. Their reads are conflict-free under the bank model and 8 bytes or
// more a lane (on gfx950 V, staged by the pipeliner, read from its stage by the
// transposing read, exact, at most 2-way); writes at most 2-way (K^T, written 16 bytes a lane along D and read 8
// along D, cannot have both sides conflict-free with one swizzle of rows).
TEST(SharedEncoding, AttentionOperandsReadWideAndConflictFree) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"})
    for (attn::Config c : {attn::Config{128, 64, 4, 2}, attn::Config{128, 64, 8, 2}, attn::Config{64, 64, 4, 2}})
      for (int D : {64, 128}) {
        SCOPED_TRACE(fmt::format("{} {}x{} w{} D={}", arch, c.block_m, c.block_n, c.num_warps, D));
        auto f = attn::trace_ir(c, D, false);
        codegen::CompileOptions o;
        o.num_warps = c.num_warps;
        o.num_stages = c.num_stages;
        const codegen::TargetDesc target = codegen::parse_target(arch);
        const bool tr = std::string(arch) == "gfx950";
        auto g = codegen::planned_program(*f, target, o);
        int shared = 0, transposed = 0;
        ir::walk(g->body, [&](ir::Operation& op) {
          if (op.op != Op::convert_layout || ir::ConvertPath(op.i0) != ir::ConvertPath::shared) return;
          ++shared;
          ASSERT_TRUE(op.shared.has_value());
          const Layout &src = *op.operands[0]->layout, &dst = *op.result()->layout;
          expect_exchange(src, dst, 2, tr, true);
          const LinearMap off = shared_offsets(src.shape, *op.shared);
          const Padding& pad = op.shared->padding;
          const SharedAccessCost w =
              shared_access_cost(src, off, shared_access_group(src, *op.shared, 2), 2, {}, pad);
          SharedAccessCost r;
          if (op.i1 & ir::kTransposedRead) {
            ++transposed;
            r = shared_access_cost(*transposed_read_layout(dst, off, 2), off, transposed_read_slots(2), 2, {}, pad);
          } else {
            const int group = shared_access_group(dst, *op.shared, 2);
            EXPECT_GE(group, 4) << "a dot operand read narrower than 8 bytes: " << op.shared->str();
            r = shared_access_cost(dst, off, group, 2, {}, pad);
          }
          // Q is converted once, before the loop: its reads may be 2-way.
          if (op.parent != &g->body) EXPECT_EQ(r.worst_ways, 1) << op.shared->str();
          EXPECT_LE(r.worst_ways, 2) << op.shared->str();
          EXPECT_LE(w.worst_ways, 2) << op.shared->str();
        });
        // gfx950 has V (N-contiguous, the second dot's B) staged by the pipeliner and
        // read from its buffer with ds_read_b64_tr_b16 (below); elsewhere V is the third
        // conversion.
        EXPECT_EQ(shared, tr ? 2 : 3) << g->str();
        EXPECT_EQ(transposed, 0) << g->str();
        int staged_reads = 0;
        ir::walk(g->body, [&](ir::Operation& op) {
          if (op.op != Op::shared_load || op.parent == &g->body) return;
          ++staged_reads;
          // The stage as the copies wrote it (every element at the stage's offsets), read
          // by the instruction as AMD defines it: exact and 8-byte aligned. At most 2-way
          // conflicts: a stage has the one fixed swizzle of shared_tile_layout, not an
          // encoding planned for its reader as a conversion's is (which was conflict-free).
          const Layout& dst = *op.result()->layout;
          const SharedTileLayout st = shared_tile_layout(dst.shape, 2, 128);
          std::vector<int64_t> mem(size_t(dst.numel()), -1);
          for (uint32_t x = 0; x < uint32_t(dst.numel()); ++x) mem[st.offsets.apply(x)] = x;
          expect_transposed_read(dst, st.offsets, 2, mem);
          auto a = transposed_read_layout(dst, st.offsets, 2);
          ASSERT_TRUE(a.has_value());
          EXPECT_LE(shared_access_cost(*a, st.offsets, transposed_read_slots(2), 2, {}).worst_ways, 2);
        });
        EXPECT_EQ(staged_reads, tr ? 1 : 0) << g->str();
      }
}

// samples/attention's V at 8 waves on gfx942 (128x64 blocks, D = 128): loaded 8 elements
// of a row a thread, read as the second dot's B (4 consecutive keys a lane, every warp
// all of V), so written along one dim and read along the other. The best swizzle keeps
// both sides conflict-free only by XORing register bits into the address: 16 address
// registers each side, live through the loop (242 VGPRs where Triton 3.6 takes 207).
// Padding every column (64:+4) and every 16 columns (1024:+4) keeps both sides
// conflict-free with one address each, every register's offset an immediate (172).
TEST(SharedEncoding, PaddedVOfAttentionAtEightWavesOnGfx942) {
  Layout src, dst;
  src.shape = dst.shape = {64, 128};
  src.reg = {1, 2, 4, 4096}, src.lane = {8, 16, 32, 64, 128, 256}, src.warp = {512, 1024, 2048};
  dst.reg = {128, 256, 2048, 4096, 16, 32, 64}, dst.lane = {1, 2, 4, 8, 512, 1024}, dst.warp = {0, 0, 0};
  const ExchangePlan swizzled = expect_exchange(src, dst, 2, false);
  const ExchangePlan padded = expect_exchange(src, dst, 2, false, true);
  EXPECT_EQ(padded.encoding.str(), "order=[0,1] vec=4 swizzle=[] padding=[64:+4,1024:+4]");
  EXPECT_EQ(shared_elements(src.numel(), padded.encoding), 8192 + 127 * 4 + 7 * 4);  // element 8191 at 8727
  auto costs = [&](const ir::SharedEncoding& e) {
    const LinearMap off = shared_offsets(src.shape, e);
    return std::pair{shared_access_cost(src, off, shared_access_group(src, e, 2), 2, {}, e.padding),
                     shared_access_cost(dst, off, shared_access_group(dst, e, 2), 2, {}, e.padding)};
  };
  auto [sw, sr] = costs(swizzled.encoding);
  auto [pw, pr] = costs(padded.encoding);
  EXPECT_EQ(sw.addresses + sr.addresses, 32) << swizzled.encoding.str();
  EXPECT_EQ(pw.addresses, 1);
  EXPECT_EQ(pr.addresses, 1);
  EXPECT_EQ(pw.worst_ways, 1);
  EXPECT_EQ(pr.worst_ways, 1);
  // The same instructions: 16 two-byte writes and 32 eight-byte reads a thread.
  EXPECT_EQ(pw.accesses, 16);
  EXPECT_EQ(pr.accesses, 32);
  EXPECT_EQ(shared_access_group(dst, padded.encoding, 2), 4);
  // One interval alone cannot: the columns (64:+4) leave the writes 8-way.
  ir::SharedEncoding one = padded.encoding;
  one.padding = {{64, 4}};
  EXPECT_EQ(costs(one).first.worst_ways, 8);
}

// Padding never raises a program's shared memory: only exchanges smaller than its largest
// are padded, within its bytes (attention's Q, 32 KiB, once before the loop, stays
// swizzled: padded it would take 34 KiB and halve the programs a gfx942 CU holds; K^T and
// V, 16 KiB each in the loop, are padded). NVIDIA pads nothing.
TEST(SharedEncoding, PaddingStaysWithinTheLargestExchange) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950", "sm_90"})
    for (attn::Config c : {attn::Config{128, 64, 4, 2}, attn::Config{128, 64, 8, 2}}) {
      SCOPED_TRACE(fmt::format("{} w{}", arch, c.num_warps));
      auto f = attn::trace_ir(c, 128, false);
      codegen::CompileOptions o;
      o.num_warps = c.num_warps;
      o.num_stages = c.num_stages;
      auto g = codegen::planned_program(*f, codegen::parse_target(arch), o);
      int64_t largest = 0;
      std::vector<const ir::Operation*> exchanges;
      ir::walk(g->body, [&](ir::Operation& op) {
        if (op.op != Op::convert_layout || !op.shared) return;
        exchanges.push_back(&op);
        largest = std::max(largest, op.result()->type.numel() * 2);
      });
      int padded = 0;
      for (const ir::Operation* op : exchanges) {
        const int64_t numel = op->result()->type.numel();
        if (op->shared->padding.empty()) continue;
        ++padded;
        EXPECT_LT(numel * 2, largest) << op->shared->str();
        EXPECT_LE(shared_elements(numel, *op->shared) * 2, largest) << op->shared->str();
      }
      if (std::string(arch) == "sm_90") EXPECT_EQ(padded, 0) << g->str();
      if (std::string(arch) == "gfx942" && c.num_warps == 8) EXPECT_EQ(padded, 2) << g->str();  // K^T and V
    }
}

// The verifier holds a padded encoding to what the lowering assumes (ir::SharedEncoding):
// power-of-two intervals, ascending, within the tile; whole units; no swizzle.
TEST(SharedEncoding, VerifierRejectsMalformedPadding) {
  attn::Config c{128, 64, 8, 2};
  auto f = attn::trace_ir(c, 128, false);
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  auto g = codegen::planned_program(*f, codegen::parse_target("gfx942"), o);
  ir::Operation* padded = nullptr;
  ir::walk(g->body, [&](ir::Operation& op) {
    if (!padded && op.op == Op::convert_layout && op.shared && !op.shared->padding.empty()) padded = &op;
  });
  ASSERT_NE(padded, nullptr) << g->str();
  EXPECT_NE(g->str().find("padding=["), std::string::npos);
  EXPECT_NO_THROW(ir::verify(*g));
  const ir::SharedEncoding good = *padded->shared;
  auto rejects = [&](auto&& change, const char* what) {
    ir::SharedEncoding e = good;
    change(e);
    padded->shared = e;
    try {
      ir::verify(*g);
      ADD_FAILURE() << "accepted " << e.str();
    } catch (const compile_error& err) {
      EXPECT_NE(std::string(err.what()).find(what), std::string::npos) << err.what();
    }
  };
  rejects([](ir::SharedEncoding& e) { e.swizzle = {1}; }, "no swizzle");
  rejects([](ir::SharedEncoding& e) { e.padding[0].first = 96; }, "power-of-two intervals");
  rejects([](ir::SharedEncoding& e) { e.padding = {{1024, 4}, {64, 4}}; }, "ascending");
  rejects([&](ir::SharedEncoding& e) { e.padding[0].second = e.vec + 1; }, "whole units");
  padded->shared = good;
  EXPECT_NO_THROW(ir::verify(*g));
}

// Triton's tutorial-03 matmul in FP8 (plain loads, B row-major, so N-contiguous) planned
// for gfx950: B reaches its MFMA layout by ds_read_b64_tr_b8, 8 bytes a lane, and the
// exchange is exact under the 8-bit instruction's definition.
TEST(SharedEncoding, Gfx950Fp8MatmulReadsBWithTheTransposingByteRead) {
  auto f = tltest::trace("fp8_tile", [&](tl::detail::Trace& t) {
    auto a = tltest::ptr_arg<ty::f8e4m3fn>(t, "a", true);
    auto b = tltest::ptr_arg<ty::f8e4m3fn>(t, "b", true);
    auto c = tltest::ptr_arg<ty::f32>(t, "c", true);
    const int BM = 128, BN = 128, BK = 64, K = 4 * BK;
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto k : tl::range(0, K, BK)) {
      auto x = tl::load(a + tl::expand_dims(rm, 1) * K + tl::expand_dims(k + rk, 0));
      auto y = tl::load(b + tl::expand_dims(k + rk, 1) * BN + tl::expand_dims(rn, 0));
      acc = tl::dot(x, y, acc);
    }
    tl::store(c + tl::expand_dims(rm, 1) * BN + tl::expand_dims(rn, 0), acc);
  });
  codegen::CompileOptions o;
  o.num_warps = 4;
  auto g = codegen::planned_program(*f, codegen::parse_target("gfx950"), o);
  int transposed = 0;
  ir::walk(g->body, [&](ir::Operation& op) {
    if (op.op != Op::convert_layout || ir::ConvertPath(op.i0) != ir::ConvertPath::shared) return;
    expect_exchange(*op.operands[0]->layout, *op.result()->layout, 1, true);
    transposed += (op.i1 & ir::kTransposedRead) != 0;
  });
  EXPECT_EQ(transposed, 1) << g->str();
}

// Seed 002's decode tuple on gfx950 (one wave, FP8 K and V staged in tl::shared, the
// second dot's B an 8-bit V): the second dot's K is renumbered to the first's accumulator
// columns, so P is its A operand with no conversion (the rule that kept 8-bit B out now
// asks only for a transposing byte read), and V is read from its stage by
// ds_read_b64_tr_b8, exactly, whatever rows the renumbering gives a lane.
TEST(SharedEncoding, Gfx950DecodeKeepsPInRegistersAndReadsFp8VTransposed) {
  for (int D : {64, 128}) {
    SCOPED_TRACE(fmt::format("D={}", D));
    auto f = tltest::trace("decode_like", [&](tl::detail::Trace& t) {
      auto q = tltest::ptr_arg<ty::bf16>(t, "q", true);
      auto kc = tltest::ptr_arg<ty::f8e4m3fn>(t, "k", true);
      auto vc = tltest::ptr_arg<ty::f8e4m3fn>(t, "v", true);
      auto o = tltest::ptr_arg<ty::f32>(t, "o", true);
      const int BM = 16, BN = 64;
      auto m = tl::arange(0, BM), d = tl::arange(0, D), n = tl::arange(0, BN);
      auto qt = tl::load(q + tl::expand_dims(m, 1) * D + tl::expand_dims(d, 0));
      auto acc = tl::zeros<ty::f32>({BM, D});
      auto sk = tl::shared<ty::f8e4m3fn>({1, BN, D}), sv = tl::shared<ty::f8e4m3fn>({1, BN, D});
      for (auto n0 : tl::range(0, 4 * BN, BN, tl::num_stages(2))) {
        auto tile = tl::expand_dims((n0 + n) * D, 1) + tl::expand_dims(d, 0);
        sk[0].store(tl::load(kc + tile));
        auto s = tl::dot(qt, tl::trans(sk[0].load().to<ty::bf16>()));
        auto p = tl::exp(s).to<ty::bf16>();
        sv[0].store(tl::load(vc + tile));
        acc = acc + tl::dot(p, sv[0].load().to<ty::bf16>());
      }
      tl::store(o + tl::expand_dims(m, 1) * D + tl::expand_dims(d, 0), acc);
    });
    codegen::CompileOptions opts;
    opts.num_warps = 1;
    opts.num_stages = 2;
    auto g = codegen::planned_program(*f, codegen::parse_target("gfx950"), opts);
    std::vector<const ir::Operation*> dots;
    int v_reads = 0;
    ir::walk(g->body, [&](ir::Operation& op) {
      if (op.op == Op::dot) dots.push_back(&op);
      if (op.op != Op::shared_load || op.parent == &g->body || !op.result()->layout) return;
      const Layout& dst = *op.result()->layout;
      const SharedTileLayout st = shared_tile_layout(dst.shape, 1, 128);
      if (!transposed_read_layout(dst, st.offsets, 1)) return;  // K, read along its rows
      ++v_reads;
      std::vector<int64_t> mem(size_t(dst.numel()), -1);
      for (uint32_t x = 0; x < uint32_t(dst.numel()); ++x) mem[st.offsets.apply(x)] = x;
      expect_transposed_read(dst, st.offsets, 1, mem);
    });
    EXPECT_EQ(v_reads, 1) << g->str();
    ASSERT_EQ(dots.size(), 2u);
    EXPECT_GT(dots[1]->ints.size(), 3u) << "the second dot's K is not renumbered";
    // P reaches the second dot in the first's accumulator layout: no conversion between.
    const ir::Value* a = dots[1]->operands[0];
    while (a->def && a->def->op != Op::dot && a->def->op != Op::convert_layout) a = a->def->operands[0];
    ASSERT_TRUE(a->def);
    EXPECT_EQ(a->def->op, Op::dot) << g->str();
    // gfx942 has no transposing read: the second dot's N is renumbered instead (recorded
    // after the identity K renumbering), so that a lane's columns of one row of V are
    // consecutive: its registers hold 8-byte runs (D / 16 repetitions, at most 8) that the
    // stage read takes whole.
    auto h = codegen::planned_program(*f, codegen::parse_target("gfx942"), opts);
    std::vector<const ir::Operation*> dots942;
    ir::walk(h->body, [&](ir::Operation& op) {
      if (op.op == Op::dot) dots942.push_back(&op);
    });
    ASSERT_EQ(dots942.size(), 2u);
    EXPECT_EQ(dots942[1]->ints.size(), size_t(3 + 6 + (D == 64 ? 6 : 7))) << h->str();
    const ir::Value* v = dots942[1]->operands[1];  // V: cast(shared_load)
    while (v->def && v->def->op != Op::shared_load) v = v->def->operands[0];
    ASSERT_TRUE(v->def && v->layout);
    const Layout* v_layout = &*v->layout;
    int run = 0;
    for (uint32_t want = 1; want < 8; want *= 2)
      for (uint32_t x : v_layout->reg) run += x == want;
    EXPECT_EQ(run, D == 64 ? 2 : 3) << v_layout->str();
  }
}

}  // namespace

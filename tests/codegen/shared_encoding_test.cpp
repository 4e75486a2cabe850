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
// access at consecutive offsets from the group's first (as the lowering's vector stores).
std::vector<int64_t> write(const Layout& src, const LinearMap& off, int group) {
  std::vector<int64_t> mem(size_t(src.numel()), -1);
  const uint32_t dup = src.duplicate_reg_mask();
  for (uint32_t w = 0; w < (1u << src.warp.size()); ++w)
    for (uint32_t lane = 0; lane < (1u << src.lane.size()); ++lane)
      for (int r = 0; r < src.num_regs(); r += group) {
        if (r & dup) continue;
        const uint32_t base = off.apply(element(src, uint32_t(r), lane, w));
        EXPECT_EQ(base % uint32_t(group), 0u) << "unaligned vector";
        for (int k = 0; k < group; ++k) {
          EXPECT_LT(base + k, mem.size());
          if (base + k < mem.size()) mem[base + k] = element(src, uint32_t(r + k), lane, w);
        }
      }
  return mem;
}

// Every register of `dst` read back, `group` elements an access.
void expect_read(const Layout& dst, const LinearMap& off, int group, const std::vector<int64_t>& mem) {
  for (uint32_t w = 0; w < (1u << dst.warp.size()); ++w)
    for (uint32_t lane = 0; lane < (1u << dst.lane.size()); ++lane)
      for (int r = 0; r < dst.num_regs(); r += group) {
        const uint32_t base = off.apply(element(dst, uint32_t(r), lane, w));
        ASSERT_EQ(base % uint32_t(group), 0u);
        for (int k = 0; k < group; ++k)
          ASSERT_EQ(mem[base + k], int64_t(element(dst, uint32_t(r + k), lane, w)))
              << "register " << r + k << " lane " << lane << " warp " << w;
      }
}

// ds_read_b64_tr_b16 / _b8 as AMD defines them: in each group of 16 lanes, lane l's
// element i is slot l % s of the 8 bytes lane (16 / s) i + l / s of the group addressed,
// s = 4 16-bit or 8 8-bit slots.
void expect_transposed_read(const Layout& dst, const LinearMap& off, int elem_bytes, const std::vector<int64_t>& mem) {
  auto a = transposed_read_layout(dst, off, elem_bytes);
  ASSERT_TRUE(a.has_value());
  const uint32_t s = uint32_t(8 / elem_bytes), per = 16 / s;
  for (uint32_t w = 0; w < (1u << dst.warp.size()); ++w)
    for (int r = 0; r < dst.num_regs(); r += int(s))
      for (uint32_t g = 0; g < 4; ++g) {
        uint32_t addr[16];
        for (uint32_t t = 0; t < 16; ++t) {
          addr[t] = off.apply(a->reg_part(uint32_t(r)) ^ a->thread_part(16 * g + t, w));
          ASSERT_EQ(addr[t] % s, 0u) << "an address not 8-byte aligned";
        }
        for (uint32_t l = 0; l < 16; ++l)
          for (uint32_t i = 0; i < s; ++i)
            ASSERT_EQ(mem[addr[per * i + l / s] + l % s], int64_t(element(dst, uint32_t(r) + i, 16 * g + l, w)))
                << "register " << r + int(i) << " lane " << 16 * g + l << " warp " << w;
      }
}

void expect_exchange(const Layout& src, const Layout& dst, int elem_bytes, bool transposed_reads) {
  ExchangePlan p = exchange_encoding(src, dst, elem_bytes, BankModel{}, transposed_reads);
  SCOPED_TRACE(fmt::format("{} -> {}: {}{}", src.str(), dst.str(), p.encoding.str(),
                           p.transposed_read ? " read=transposed" : ""));
  const LinearMap off = shared_offsets(src.shape, p.encoding);
  // A bijection onto [0, numel): the scratch tile is the tile's size.
  std::vector<bool> seen(size_t(src.numel()), false);
  for (uint32_t x = 0; x < uint32_t(src.numel()); ++x) {
    const uint32_t o = off.apply(x);
    ASSERT_LT(o, seen.size());
    ASSERT_FALSE(seen[o]);
    seen[o] = true;
  }
  const std::vector<int64_t> mem = write(src, off, shared_access_group(src, p.encoding, elem_bytes));
  for (int64_t x : mem) ASSERT_GE(x, 0) << "an element nobody wrote";
  if (p.transposed_read) expect_transposed_read(dst, off, elem_bytes, mem);
  else expect_read(dst, off, shared_access_group(dst, p.encoding, elem_bytes), mem);
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
      expect_exchange(pick(), pick(), elem_bytes, false);
      // Where the read may be gfx950's transposing one (8- and 16-bit, wave 64).
      if (wave == 64 && elem_bytes <= 2) expect_exchange(pick(), pick(), elem_bytes, true);
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
          expect_exchange(src, dst, 2, tr);
          const LinearMap off = shared_offsets(src.shape, *op.shared);
          const SharedAccessCost w = shared_access_cost(src, off, shared_access_group(src, *op.shared, 2), 2, {});
          SharedAccessCost r;
          if (op.i1 & ir::kTransposedRead) {
            ++transposed;
            r = shared_access_cost(*transposed_read_layout(dst, off, 2), off, transposed_read_slots(2), 2, {});
          } else {
            const int group = shared_access_group(dst, *op.shared, 2);
            EXPECT_GE(group, 4) << "a dot operand read narrower than 8 bytes: " << op.shared->str();
            r = shared_access_cost(dst, off, group, 2, {});
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

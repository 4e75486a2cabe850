// samples/attention's backward kernels (dK/dV, dQ) compiled for gfx942 and gfx950 at
// Triton's tutorial-06 backward tiles (dK/dV: 32 query rows an iteration over 128 keys a
// program; dQ: 128 rows over 32 keys; 4 waves, bf16, causal, num_stages 1 as the tutorial's
// HIP configurations), no GPU needed: no spills, registers at or under Triton 3.6's for the
// same work, and no LDS read of one or two bytes (the operands read 8 bytes at a time or
// with ds_read_b64_tr_b16, where Triton 3.6 reads dK/dV's Q^T two bytes at a time on
// gfx942). Triton's figures are from bench/results/amd-2026-11-28-attention-bwd
// (bench/amd_quality/attention_bwd.sh): each ceiling is the smaller of Triton's twin of
// the sample's kernel (the same algorithm) and the half of the tutorial's `_attn_bwd` that
// does the same work.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <set>
#include <vector>
#include <string>

#include "runtime/cache.hpp"
#include "samples/attention/attention.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"

namespace {

using tltest::count;

template <class T> T* fake(int i) { return reinterpret_cast<T*>(uintptr_t(i + 1) << 20); }

struct Case {
  const char* arch;
  bool dkdv;
  int D;
  int triton_vgprs;  // Triton 3.6: min(twin, the tutorial's half), unified count (AGPRs in)
};

std::string name(const Case& c) { return fmt::format("{} {} D={}", c.arch, c.dkdv ? "dK/dV" : "dQ", c.D); }

// The metadata of tl::kernel::compile (its "report": VGPRs, spills, LDS) for a case, at
// the problem of bench/amd_quality's cases (S 4096, one query head a key head).
std::string compile(const Case& c) {
  using E = tl::ty::bf16;
  const int S = 4096, BM = c.dkdv ? 32 : 128, BN = c.dkdv ? 128 : 32;
  const attention::Config cfg{BM, BN, 4, 1, 0, 0};
  const float scale = float(1 / std::sqrt(double(c.D)));
  auto o = attention::options_of(cfg);
  auto b = [](int i) { return fake<tl::bfloat16>(i); };
  auto f = [](int i) { return fake<float>(i); };
  if (c.dkdv)
    return attention::bwd_dkdv_kernel<E>().compile(c.arch, o, b(0), b(1), b(2), b(3), f(4), b(6), b(7), S, S, 1,
                                                   scale, BM, BN, c.D, 1, 1);
  return attention::bwd_dq_kernel<E>().compile(c.arch, o, b(0), b(1), b(2), b(3), f(4), b(6), S, S, 1, scale, BM,
                                               BN, c.D, 1, 1);
}

const Case kCases[] = {
    {"gfx942", true, 64, 268},   {"gfx942", true, 128, 401},  {"gfx942", false, 64, 204},
    {"gfx942", false, 128, 308}, {"gfx950", true, 64, 252},   {"gfx950", true, 128, 388},
    {"gfx950", false, 64, 176},  {"gfx950", false, 128, 288},
};

TEST(AttentionBackwardCodegen, AmdWithinTritonsRegistersWithoutSpills) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    auto meta = nlohmann::json::parse(compile(c));
    const auto& r = meta["report"];
    EXPECT_EQ(r["spill_vgpr"].get<int>(), 0);
    EXPECT_EQ(r["spill_sgpr"].get<int>(), 0);
    EXPECT_EQ(r["scratch_bytes"].get<int>(), 0);
    EXPECT_LE(r["vgpr"].get<int>(), c.triton_vgprs) << meta.dump(1);
    // Occupancy (waves a SIMD) at least as high as Triton's at its registers: 512 / VGPRs,
    // rounded down, in granules of 8 (the LDS, 16 or 32 KiB, limits neither side here).
    EXPECT_GE(r["occupancy"].get<int>(), 512 / ((c.triton_vgprs + 7) / 8 * 8)) << meta.dump(1);
  }
}

// No LDS read narrower than 4 bytes anywhere in the kernels (the loops included): the
// dots' operands are read 8 or 16 bytes a lane (gfx950 reads the transposed ones with
// ds_read_b64_tr_b16), the row statistics 4.
TEST(AttentionBackwardCodegen, AmdReadsNoOneOrTwoByteLdsElements) {
  const std::regex narrow(R"(\bds_read_(u8|i8|u16|i16|b16|u8_d16|i8_d16|u16_d16|b16_d16)(_hi)?\b)");
  for (const Case& c : kCases) {
    SCOPED_TRACE(name(c));
    std::string dis = tltest::isa_of_compiled(compile(c));
    ASSERT_GT(count(dis, "v_mfma"), 0) << dis;
    EXPECT_FALSE(std::regex_search(dis, narrow)) << dis;
    // The operands' reads: 8 or 16 bytes a lane (ds_read_b64, ds_read2_b64, ds_read_b128,
    // ds_read_b64_tr_b16, ...).
    EXPECT_TRUE(std::regex_search(dis, std::regex(R"(\bds_read\w*_b(64|128)\b)"))) << dis;
  }
}

// ---- NVIDIA (sm_90) ------------------------------------------------------------------
//
// Every dot of both kernels a warpgroup dot (wgmma) whose B operand the dot reads from the
// pipeliner's one stage of Q^T and dO (dK/dV) or K^T and V^T (dQ), each as it is or
// through the descriptor's transpose bit (split_dot_operand_reads: one read per dot),
// where they were mma.sync dots whose operands went to registers and back through shared
// memory for each use (the H200 had the backward at 0.41x / 0.29x of Triton's wgmma
// kernel, every configuration spilling). The configurations are those of
// bench/run_attention_sample_bench.py that fit 255 registers.

struct NvCase {
  bool dkdv;
  int block_m, block_n, num_warps, D;
  bool causal;
  // Whether the dots accumulating dV and dK (dQ) stay in flight: not where their stage more
  // would leave fewer programs a multiprocessor (dK/dV 64x64, D = 128: 131 KB, one program,
  // where 98 KB fit two).
  bool async = true;
  // Whether those dots stay in flight where they have their stage more: not where a
  // thread's registers would not hold the loop with them in flight (plan_async_dots asks
  // register_pressure.hpp's estimate). dK/dV 64x128 w8 D = 128: dK, dV, the scores, dP^T,
  // the packed P^T and dS^T, the row statistics and, at 8 warps, K's and V's descriptors
  // (32 registers: each warpgroup's depend on its index) are estimated at 240 with no dot
  // in flight, over the 239 plan_async_dots allows; with both dots in flight ptxas used 255
  // registers and spilled 132 bytes causal (0 not causal), with dK's alone 48, with neither
  // 0 (246 registers; not causal 244). Every case spills nothing.
  bool registers_fit = true;
};

std::string name(const NvCase& c) {
  return fmt::format("sm_90 {} {}x{} w{} D={}{}", c.dkdv ? "dK/dV" : "dQ", c.block_m, c.block_n, c.num_warps, c.D,
                     c.causal ? " causal" : "");
}

std::string compile(const NvCase& c) {
  using E = tl::ty::bf16;
  const int S = 4096;
  const attention::Config cfg{c.block_m, c.block_n, c.num_warps, 2, 0, 0};
  const float scale = float(1 / std::sqrt(double(c.D)));
  auto o = attention::options_of(cfg);
  auto b = [](int i) { return fake<tl::bfloat16>(i); };
  auto f = [](int i) { return fake<float>(i); };
  if (c.dkdv)
    return attention::bwd_dkdv_kernel<E>().compile("sm_90", o, b(0), b(1), b(2), b(3), f(4), b(6), b(7), S, S, 1,
                                                   scale, c.block_m, c.block_n, c.D, int(c.causal), 2);
  return attention::bwd_dq_kernel<E>().compile("sm_90", o, b(0), b(1), b(2), b(3), f(4), b(6), S, S, 1, scale,
                                               c.block_m, c.block_n, c.D, int(c.causal), 2);
}

// The planned tile IR of a compiled kernel (its cache entry's artifact).
std::string tile_ir_of(const std::string& meta) {
  auto entry = tl::cache::DiskCache::global().load(nlohmann::json::parse(meta).at("key").get<std::string>());
  if (!entry || !entry->artifacts.count("tile_ir")) throw std::runtime_error("no tile IR for " + meta);
  const auto& a = entry->artifacts.at("tile_ir");
  return std::string(a.begin(), a.end());
}

// The text of each pipelined loop (num_stages=2) of a tile IR dump, header to closing brace.
std::vector<std::string> pipelined_loops(const std::string& ir) {
  std::vector<std::string> loops;
  for (size_t at = ir.find("for num_stages=2"); at != std::string::npos; at = ir.find("for num_stages=2", at + 1)) {
    size_t open = ir.find('{', at), i = open;
    int depth = 0;
    for (; i < ir.size(); ++i) {
      depth += ir[i] == '{' ? 1 : ir[i] == '}' ? -1 : 0;
      if (depth == 0) break;
    }
    loops.push_back(ir.substr(at, i - at));
  }
  return loops;
}

// The pipelined loops: dK/dV's unmasked rows, the masked ones first where causal, and at
// D <= 64 the ragged last block apart (its loads' row masks out of the unmasked loop); dQ's
// unmasked and masked key blocks.
int loop_count(const NvCase& c) { return c.dkdv ? int(c.causal) + (c.D <= 64 ? 2 : 1) : 2; }

const NvCase kNvCases[] = {
    {true, 32, 64, 4, 128, false}, {true, 32, 64, 4, 128, true},  {true, 64, 64, 4, 128, false, false},
    {true, 64, 64, 4, 64, false},  {true, 64, 64, 4, 64, true},   {false, 64, 64, 4, 128, false},
    {false, 64, 64, 4, 128, true}, {false, 128, 64, 8, 128, true}, {false, 128, 64, 8, 64, false},
    // Where ptxas spilled while K and V (dK/dV) or Q and dO (dQ), read by the dots of both
    // loops, stayed in registers (164, 164 and 464 bytes of spill stores): staged once in
    // shared memory, each dot reading them through a descriptor (plan_dot_operand_sources).
    // dK/dV causal 64x64 w4 D = 128 then needs 98 KB: its stage more would leave one program a
    // multiprocessor, so its dots wait at once.
    {true, 64, 64, 4, 128, true, false}, {true, 64, 128, 8, 128, true, true, false}, {false, 128, 32, 4, 128, false},
    {true, 64, 128, 8, 128, false, true, false},
};

TEST(AttentionBackwardCodegen, NvidiaEveryDotIsAWarpgroupDotReadingTheOneStage) {
  for (const NvCase& c : kNvCases) {
    SCOPED_TRACE(name(c));
    const std::string meta = compile(c);
    const std::string ptx = tltest::isa_of_compiled(meta), ir = tile_ir_of(meta);
    EXPECT_EQ(count(ptx, "mma.sync"), 0);
    // Each loop's dots a K step (16) an instruction, one instruction a warpgroup's 64 rows
    // of M: dK/dV K.Q^T and V.dO^T (K = D), P^T.dO and dS^T.Q (K = BLOCK_M) over M =
    // BLOCK_N keys; dQ Q.K^T and dO.V^T (K = D), dS.K (K = BLOCK_N) over M = BLOCK_M rows.
    const int M = c.dkdv ? c.block_n : c.block_m;
    const int k_steps = c.dkdv ? (2 * c.D + 2 * c.block_m) / 16 : (2 * c.D + c.block_n) / 16;
    const int per_loop = k_steps * M / (64 * (c.num_warps / 4));
    const auto loops = pipelined_loops(ir);
    ASSERT_EQ(loops.size(), size_t(loop_count(c))) << ir;
    EXPECT_EQ(count(ptx, "wgmma.mma_async.sync.aligned"), per_loop * int(loops.size())) << ptx;
    const std::regex tile_conversion(R"(convert_layout path=shared[^\n]*: tile<(\d+)x(\d+)x)");
    for (const std::string& loop : loops) {
      EXPECT_EQ(count(loop, "wgmma.mma_async"), c.dkdv ? 4 : 3) << loop;
      // Nothing copied into a buffer of its own in the loop, and no tile converted through
      // scratch: every operand is read where the pipeliner's copies put it.
      EXPECT_EQ(count(loop, " shared_store "), 0) << loop;
      for (auto it = std::sregex_iterator(loop.begin(), loop.end(), tile_conversion); it != std::sregex_iterator(); ++it)
        EXPECT_TRUE((*it)[1] == "1" || (*it)[2] == "1") << it->str();
      // Each staged tile read once per dot that reads it: Q^T and dO twice each in dK/dV,
      // K^T twice and V^T once in dQ.
      EXPECT_EQ(count(loop, "shared_load relaxed read_by_dot"), c.dkdv ? 4 : 3) << loop;
      // The dots accumulating dV and dK (dQ) stay in flight (A from registers, P^T and dS^T
      // (dS)), their stages one more; the others' results are read at once.
      const int in_flight = c.async && c.registers_fit ? (c.dkdv ? 2 : 1) : 0;
      EXPECT_EQ(loop.find("async_dot_stage") != std::string::npos, c.async) << loop;
      EXPECT_EQ(count(loop, " async %"), in_flight) << loop;
      EXPECT_EQ(count(loop, "dot_wait pending=1"), in_flight) << loop;
    }
    const bool replanned = std::regex_search(
        meta, std::regex("stage more for asynchronous dots reading A from registers would leave 1 program a "
                         "multiprocessor where 2 fit without it"));
    EXPECT_EQ(replanned, !c.async) << meta;
    // Each asynchronous dot's wait leaves its group in flight; the synchronous dots (two a
    // loop in dK/dV, two in dQ, every one where nothing stays in flight) and the waits after
    // the loops (one for each asynchronous dot) wait for every group: as many as the dots,
    // and one more a loop with dots in flight, opening the path that skips the loop
    // (lower_for: ptxas's C7515, checked below).
    const int async_dots = c.async && c.registers_fit ? (c.dkdv ? 2 : 1) * int(loops.size()) : 0;
    const int dots = (c.dkdv ? 4 : 3) * int(loops.size());
    EXPECT_EQ(count(ptx, "wgmma.wait_group.sync.aligned 1;"), async_dots) << ptx;
    EXPECT_EQ(count(ptx, "wgmma.wait_group.sync.aligned 0;"), dots + (async_dots ? int(loops.size()) : 0)) << ptx;
    tltest::PtxasRun r = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
    if (!r.ran) continue;
    EXPECT_TRUE(r.ok) << r.output;
    EXPECT_NE(r.output.find(" 0 bytes spill stores"), std::string::npos) << r.output;
  }
}

// The backward's loops on sm_90 are issue-bound at D = 64 (32 exp2 and 16 conversions a
// lane between four dots of 64x64x64 an iteration), where three things cost instructions
// that Triton's kernels do not pay (issue 42; bench/results/h200-2026-11-29-attention-bwd-d64):
// - exp2 is ex2.approx.ftz.f32, one MUFU.EX2 (ex2.approx.f32 scaled the subnormal results
//   around it: an FSETP and two FMULs more an element);
// - the A fragments a warpgroup dot reads from registers (P^T, dS^T; dS) are converted and
//   packed before the group's wgmma.fence: written between the fence and their wgmma,
//   ptxas injected a warpgroup.arrive before each wgmma (its note C7519);
// - a dot whose accumulator is zeros (dK/dV's Q.K^T and V.dO^T, dQ's Q.K^T and dO.V^T)
//   starts with scale-d 0 instead of zeroed registers (ptxas moved 0 into each of the 32
//   accumulator registers a lane every iteration);
// - f32 values shuffled between lanes as floats (shfl.sync's f32 form): shuffled as i32
//   bits, LLVM made -LSE a sign XOR of each of the 16 shuffled values a lane;
// - dK/dV's LSE and Delta rows staged by the pipeliner and read back from shared memory in
//   the accumulator's columns (as Triton's pipeliner stages them), not prefetched in
//   registers and spread by 32 shuffles a lane an iteration (64x64 D = 64: 388 -> 373 SASS
//   instructions in the loop, 238 -> 218 registers);
// - the loop's in-flight dK and dV waited for on the loop's way out, before the path that
//   skips the loop joins it: placed by LLVM between the loop and the wait after it, that
//   path's copies into the accumulators' registers made ptxas serialize every wgmma of the
//   kernel (C7515: a warpgroup.arrive and a wait around each);
// - LSE * log2(e) made once a row by the preprocess, not by dK/dV for every column a lane
//   holds each iteration (16 FMULs a lane at 64x64: the loop 368 -> 352 SASS instructions).
TEST(AttentionBackwardCodegen, NvidiaRegisterOperandsAndZeroAccumulatorsCostNothingInTheLoop) {
  for (const NvCase& c : kNvCases) {
    SCOPED_TRACE(name(c));
    const std::string ptx = tltest::isa_of_compiled(compile(c));
    EXPECT_EQ(count(ptx, "ex2.approx.f32"), 0);
    EXPECT_GT(count(ptx, "ex2.approx.ftz.f32"), 0);
    // Where LSE and Delta reach the scores' columns through shuffles they are float
    // shuffles: -LSE stays a float negation that ptxas folds into the FFMA, not a sign XOR
    // of the shuffled bits. dK/dV reads them from their stage in those columns: no shuffle.
    EXPECT_EQ(count(ptx, ", -2147483648;"), 0) << ptx;
    if (c.dkdv) EXPECT_EQ(count(ptx, "shfl.sync"), 0) << ptx;
    // log2(e) (0f3FB8AA3B) multiplies sm_scale once, nothing else: the kernels read LSE scaled.
    EXPECT_EQ(count(ptx, "0f3FB8AA3B"), 1) << ptx;
    // Between each wgmma.fence and its group's commit: the wgmmas and their descriptors only.
    int groups = 0;
    for (size_t at = ptx.find("wgmma.fence.sync.aligned;"); at != std::string::npos;
         at = ptx.find("wgmma.fence.sync.aligned;", at + 1), ++groups) {
      const size_t end = ptx.find("wgmma.commit_group.sync.aligned;", at);
      ASSERT_NE(end, std::string::npos);
      const std::string group = ptx.substr(at, end - at);
      EXPECT_EQ(count(group, "cvt."), 0) << group;
    }
    EXPECT_EQ(groups, count(ptx, "wgmma.commit_group.sync.aligned;"));
    // The wgmmas whose scale-d is a register set to 0: at least the first K step of each
    // zero-accumulator dot (two a loop in dK/dV and in dQ).
    std::set<std::string> zero_regs;
    const std::regex zero_mov(R"(mov\.b32\s+(%r\d+), 0;)");
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), zero_mov); it != std::sregex_iterator(); ++it)
      zero_regs.insert((*it)[1]);
    int scale_d_0 = 0;
    for (const std::string& z : zero_regs) scale_d_0 += count(ptx, "setp.ne.b32 p, " + z + ", 0;");
    const int loops = loop_count(c);
    EXPECT_GE(scale_d_0, 2 * loops) << ptx;
    EXPECT_EQ(count(ptx, "setp.ne.b32 p, "), count(ptx, "wgmma.mma_async"));
    tltest::PtxasRun r = tltest::run_ptxas(ptx, "-arch=sm_90a -v");
    if (!r.ran) continue;
    EXPECT_TRUE(r.ok) << r.output;
    EXPECT_EQ(r.output.find("C7519"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("C7515"), std::string::npos) << r.output;
  }
}

}  // namespace

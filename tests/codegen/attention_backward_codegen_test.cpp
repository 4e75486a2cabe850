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
#include <string>

#include "samples/attention/attention.hpp"
#include "support/compile.hpp"

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
    return attention::bwd_dkdv_kernel<E>().compile(c.arch, o, b(0), b(1), b(2), b(3), f(4), f(5), b(6), b(7), S, S, 1,
                                                   scale, BM, BN, c.D, 1, 1);
  return attention::bwd_dq_kernel<E>().compile(c.arch, o, b(0), b(1), b(2), b(3), f(4), f(5), b(6), S, S, 1, scale, BM,
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

}  // namespace

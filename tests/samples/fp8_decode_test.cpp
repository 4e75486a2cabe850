// The FP8 decode attention sample's kernels (samples/fp8_decode/decode.hpp) on the test
// device (the CPU in CI, a GPU with TL_DEVICE), against the double-precision reference
// (samples/fp8_decode/reference.hpp), outputs poisoned with NaN first: both FP8 formats,
// GQA groups of 1 to 16, head sizes 64 to 256, ragged lengths (0, 1, not a multiple of
// BLOCK_N, the whole cache), split counts 1 to 64 (empty slices included); then the
// refusals before any launch, and the configuration choice with its guardrail.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samples/fp8_decode/decode.hpp"
#include "samples/fp8_decode/reference.hpp"
#include "support/compile.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

// Runs the sample on random inputs and checks every output element; returns the errors.
// `calls` times on one workspace, the output poisoned before each (the merge's tickets must
// be back at 0 for the next call); the first wrong call's errors, else the last's.
template <tl::DType F, class F8>
fp8_decode::Errors run(const fp8_decode::Problem& p, const std::vector<int32_t>& lens, int split = 0,
                       const fp8_decode::Config* config = nullptr, int calls = 1) {
  tl::device dev = test_device();
  auto in = fp8_decode::random_inputs<F>(p, lens, uint64_t(p.B * 131 + p.S_max * 7 + p.Hq * 3 + p.D + split));
  auto w = fp8_decode::make_workspace<F8>(dev, p, lens, config, split);
  auto Q = upload<tl::ty::bf16>(in.q);
  auto K = upload<tl::elem_t<F8>>(in.k), V = upload<tl::elem_t<F8>>(in.v);
  auto KS = upload<tl::ty::f32>(in.k_scale), VS = upload<tl::ty::f32>(in.v_scale);
  fp8_decode::Errors e;
  for (int c = 0; c < calls; ++c) {
    auto O = upload<tl::ty::bf16>(std::vector<tl::bfloat16>(in.q.size(), tl::to_bf16(std::nan(""))));
    fp8_decode::decode<F8>(w, Q, K, V, KS, VS, O);
    e = fp8_decode::check(p, in, O.download());
    if (!e.ok()) break;
  }
  return e;
}

std::string describe(const fp8_decode::Problem& p, const std::vector<int32_t>& lens, int split) {
  std::string l;
  for (int32_t x : lens) l += fmt::format("{} ", x);
  return fmt::format("{} lens [{}] split {}", p.str(), l, split);
}

template <tl::DType F, class F8>
void expect_right(const fp8_decode::Problem& p, const std::vector<int32_t>& lens, int split = 0,
                  const fp8_decode::Config* config = nullptr) {
  auto e = run<F, F8>(p, lens, split, config);
  EXPECT_TRUE(e.ok()) << describe(p, lens, split) << ": " << e.bad << " wrong and " << e.nan << " NaN of "
                      << e.checked << ", the first at " << e.first << ", worst " << e.worst << " of the bound";
}

// Lengths 0, 1, a multiple of BLOCK_N, not one, and the whole cache (S_max = 200).
const std::vector<int32_t> kRagged = {0, 1, 64, 133, 200};

TEST(Fp8DecodeSample, GroupsAndHeadSizesBothFormats) {
  for (int64_t G : {1, 4, 8, 16})
    for (int64_t D : {64, 128, 256}) {
      fp8_decode::Problem p{int64_t(kRagged.size()), 200, 2 * G, 2, D};
      expect_right<tl::DType::f8e4m3fn, tl::f8e4m3fn>(p, kRagged);
      expect_right<tl::DType::f8e4m3fnuz, tl::f8e4m3fnuz>(p, kRagged);
    }
}

// Every split count's slices: with 64 slices of whole blocks most are empty (a slice
// covers at least BLOCK_N tokens), and their -inf log-sum-exp must weigh nothing.
TEST(Fp8DecodeSample, SplitCountsOneToSixtyFour) {
  fp8_decode::Problem p{int64_t(kRagged.size()), 200, 8, 2, 128};
  for (int split : {1, 2, 3, 5, 8, 13, 32, 64}) expect_right<tl::DType::f8e4m3fn, tl::f8e4m3fn>(p, kRagged, split);
  // A long sequence over many slices, each of several blocks, the last one short.
  fp8_decode::Problem q{2, 2000, 4, 1, 64};
  for (int split : {1, 7, 64}) expect_right<tl::DType::f8e4m3fn, tl::f8e4m3fn>(q, {2000, 1999}, split);
}

// The merge in the partial kernel (split <= 8 outside AMD) and the combine launch (more
// slices), called three times on one workspace: the last program of each (batch, KV head)
// must find every other's partials and leave its ticket at 0. Many programs race for the
// tickets on a GPU (B * Hkv = 40 of them, 8 slices each).
TEST(Fp8DecodeSample, RepeatedCallsMergeEveryTime) {
  fp8_decode::Problem p{int64_t(kRagged.size()), 200, 32, 8, 64};
  for (int split : {1, 3, 8, 16}) {
    tl::device dev = test_device();
    auto w = fp8_decode::make_workspace<tl::f8e4m3fn>(dev, p, kRagged, nullptr, split);
    EXPECT_EQ(w.merge != 0, split <= 8 && !fp8_decode::is_amd(dev.target())) << split;
    auto e = run<tl::DType::f8e4m3fn, tl::f8e4m3fn>(p, kRagged, split, nullptr, 3);
    EXPECT_TRUE(e.ok()) << describe(p, kRagged, split) << ": " << e.bad << " wrong and " << e.nan << " NaN";
  }
}

// Configurations other than the chosen one (block sizes and pipeline depths).
TEST(Fp8DecodeSample, OtherConfigurations) {
  fp8_decode::Problem p{int64_t(kRagged.size()), 200, 8, 1, 128};
  for (fp8_decode::Config c : {fp8_decode::Config{16, 1, 1}, {32, 2, 1}, {64, 3, 4}, {128, 2, 2}})
    expect_right<tl::DType::f8e4m3fn, tl::f8e4m3fn>(p, kRagged, 3, &c);
}

// The dots in f16 (NVIDIA's choice): both formats, every group size, D 64 and 256, several
// slices, in and out of shared memory.
TEST(Fp8DecodeSample, DotsInF16) {
  for (int64_t G : {1, 8, 16})
    for (int64_t D : {64, 256}) {
      fp8_decode::Problem p{int64_t(kRagged.size()), 200, 2 * G, 2, D};
      for (fp8_decode::Config c : {fp8_decode::Config{64, 3, 2, 1, 1}, {32, 2, 4, 0, 1}}) {
        expect_right<tl::DType::f8e4m3fn, tl::f8e4m3fn>(p, kRagged, 3, &c);
        expect_right<tl::DType::f8e4m3fnuz, tl::f8e4m3fnuz>(p, kRagged, 2, &c);
      }
    }
}

// A batch whose every sequence is empty writes zeros, not NaN (0/0).
TEST(Fp8DecodeSample, EmptySequencesWriteZeros) {
  fp8_decode::Problem p{2, 64, 4, 2, 64};
  tl::device dev = test_device();
  auto in = fp8_decode::random_inputs<tl::DType::f8e4m3fn>(p, {0, 0}, 7);
  auto w = fp8_decode::make_workspace<tl::f8e4m3fn>(dev, p, in.seq_lens, nullptr, 4);
  auto Q = upload<tl::ty::bf16>(in.q);
  auto K = upload<tl::ty::f8e4m3fn>(in.k), V = upload<tl::ty::f8e4m3fn>(in.v);
  auto KS = upload<tl::ty::f32>(in.k_scale), VS = upload<tl::ty::f32>(in.v_scale);
  auto O = upload<tl::ty::bf16>(std::vector<tl::bfloat16>(in.q.size(), tl::to_bf16(std::nan(""))));
  fp8_decode::decode<tl::f8e4m3fn>(w, Q, K, V, KS, VS, O);
  for (tl::bfloat16 x : O.download()) ASSERT_EQ(tl::to_float(x), 0.0f);
}

// Refused with a clear error before anything is launched (the workspace is where a
// problem is checked; make_workspace allocates nothing before its checks pass).
TEST(Fp8DecodeSample, BadProblemsAreRefusedBeforeLaunch) {
  tl::device dev = test_device();
  auto refused = [&](const fp8_decode::Problem& p, std::vector<int32_t> lens, const std::string& why, int split = 0) {
    try {
      fp8_decode::make_workspace<tl::f8e4m3fn>(dev, p, lens, nullptr, split);
      ADD_FAILURE() << "accepted: " << describe(p, lens, split);
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({1, 64, 8, 2, 96}, {64}, "D must be 64, 128 or 256");
  refused({1, 64, 6, 4, 64}, {64}, "Hq must be a multiple of Hkv");
  refused({1, 64, 34, 2, 64}, {64}, "at most 16 query heads per KV head");
  refused({0, 64, 8, 2, 64}, {}, "must be positive");
  refused({2, 64, 8, 2, 64}, {64}, "1 sequence lengths for B=2");
  refused({1, 64, 8, 2, 64}, {65}, "seq_lens[0] = 65 is outside [0, S_max = 64]");
  refused({2, 64, 8, 2, 64}, {3, -1}, "seq_lens[1] = -1");
  refused({1, 64, 8, 2, 64}, {64}, "split count must be 1 to 64", 65);
  refused({1, 64, 8, 2, 64, -1.0f}, {64}, "softmax scale");
  refused({64, 1 << 20, 8, 8, 128}, {}, "2^31");
  fp8_decode::Config odd{48, 2, 1};
  try {
    fp8_decode::make_workspace<tl::f8e4m3fn>(dev, {1, 64, 8, 2, 64}, std::vector<int32_t>{64}, &odd);
    ADD_FAILURE() << "BLOCK_N 48 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("BLOCK_N"), std::string::npos) << e.what();
  }
}

// The split count: at most about four programs per compute unit, slices of at least 4 blocks, 1
// to 64; ragged batches by their longest sequence over the mean.
TEST(Fp8DecodeSample, SplitChoice) {
  fp8_decode::Config c{64, 2, 1};
  auto split = [&](const fp8_decode::Problem& p, int cus, std::vector<int32_t> lens = {}) {
    return fp8_decode::choose_slicing(p, cus, c, lens).split;
  };
  EXPECT_EQ(split({1, 32768, 64, 8, 128}, 132), 64);   // 8 pairs: 528 / 8 = 66, at most 64
  EXPECT_EQ(split({16, 8192, 64, 8, 128}, 132), 4);    // 128 pairs: 528 / 128 = 4.1
  EXPECT_EQ(split({64, 4096, 32, 8, 128}, 132), 1);    // 512 pairs: 528 / 512 = 1.03
  EXPECT_EQ(split({1, 200, 8, 1, 128}, 304), 1);       // too short to split (4 blocks at the least)
  EXPECT_EQ(split({1, 1 << 20, 8, 1, 128}, 304), 64);  // at most 64
  EXPECT_EQ(fp8_decode::choose_slicing({16, 8192, 64, 8, 128}, 132, c).chunk, 2048);
  // Ragged: one chunk for every sequence, the shortest for which the non-empty programs
  // fit the budget: 8192 + 0 + 4096 + 4096 tokens in 256-token chunks are 64 programs a
  // KV head (8 x 64 = 512 <= 528), the longest sequence's 32 the split; with 30 compute
  // units (120 programs, 15 a KV head) 1216-token chunks: 7 + 0 + 4 + 4.
  std::vector<int32_t> lens = {8192, 0, 4096, 4096};
  auto r = fp8_decode::choose_slicing({4, 8192, 8, 8, 128}, 132, c, lens);
  EXPECT_EQ(r.split, 32);
  EXPECT_EQ(r.chunk, 256);
  r = fp8_decode::choose_slicing({4, 8192, 8, 8, 128}, 30, c, lens);
  EXPECT_EQ(r.split, 7);
  EXPECT_EQ(r.chunk, 1216);
  EXPECT_EQ(split({4, 8192, 8, 8, 128}, 132, std::vector<int32_t>(4, 0)), 1);
  // A forced split: that many slices of the longest sequence, whole blocks.
  r = fp8_decode::choose_slicing({1, 1000, 8, 1, 128}, 132, c, {}, 3);
  EXPECT_EQ(r.split, 3);
  EXPECT_EQ(r.chunk, 384);
}

// The guardrail takes the first candidate that compiles without spills and within the
// budget, and says why it refused the others: a tile over a lane's registers (BLOCK_N 128
// at 1 warp), VGPRs over the budget (BLOCK_N 32 over 2 warps at D 256: 132; BLOCK_N 64 at
// D 256, whose 2 stages do not fit gfx942's 64 KiB of LDS: the compiler plans it with one
// stage, docs/language.md "Where errors point", and then it needs 274); when every one is
// refused, the error gives each reason.
TEST(Fp8DecodeSample, GuardrailRefusesWhatCannotRun) {
  fp8_decode::Problem p{16, 8192, 64, 8, 256};
  try {
    fp8_decode::guarded_choice<tl::f8e4m3fnuz>({{128, 2, 1}, {32, 2, 2}}, "gfx942", p);
    ADD_FAILURE() << "a configuration passed";
  } catch (const std::runtime_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("no configuration passes the guardrail"), std::string::npos) << w;
    EXPECT_NE(w.find("registers a lane has"), std::string::npos) << w;
    EXPECT_NE(w.find("over the budget of 108"), std::string::npos) << w;
  }
  std::vector<fp8_decode::Config> list = {{128, 2, 1}, {64, 2, 1}, {32, 2, 8}};
  auto [c, seen] = fp8_decode::guarded_choice<tl::f8e4m3fnuz>(list, "gfx942", p);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_NE(seen[0].refused.find("registers a lane has"), std::string::npos) << seen[0].refused;
  EXPECT_NE(seen[1].refused.find("VGPRs, over the budget of 108"), std::string::npos) << seen[1].refused;
  EXPECT_TRUE(seen[2].refused.empty()) << seen[2].refused;
  EXPECT_EQ(c.block_n, 32);
  EXPECT_EQ(fp8_decode::spills_of(seen[2].report), 0);
}

}  // namespace

namespace {

// Compiled without an AMD GPU (the only proof gfx942 and gfx950 get): for every head size,
// the configuration the guardrail chooses has at most 108 VGPRs (seed 002's fixed kernel;
// AGPRs included) and no spills, its K and V tiles pipelined into LDS by direct copies;
// seed 002's first kernel (K and V loaded as plain tiles, a 128-token tile, 1 warp) is
// refused (at D=128 for its registers: on gfx942 it spills; on gfx950 the pipeliner stages
// its K-contiguous K tile into LDS for the dot, and it no longer spills but still needs
// over 108 VGPRs). Seed 002's fixed tuple is chosen at D=64 (SeedTupleOnAmd), refused at
// D=128 and 256.
TEST(Fp8DecodeSample, AmdChoiceFitsTheSeedsBudget) {
  for (const char* target : {"gfx942", "gfx950"})
    for (int64_t D : {64, 128, 256}) {
      SCOPED_TRACE(fmt::format("{} D={}", target, D));
      fp8_decode::Problem p{16, 8192, 64, 8, D};
      auto [c, seen] = std::string(target) == "gfx942"
                           ? fp8_decode::guarded_choice<tl::f8e4m3fnuz>(fp8_decode::candidates(target, D), target, p)
                           : fp8_decode::guarded_choice<tl::f8e4m3fn>(fp8_decode::candidates(target, D), target, p);
      const nlohmann::json& r = seen.back().report;
      EXPECT_TRUE(seen.back().refused.empty());
      EXPECT_LE(r["vgpr"].get<int64_t>(), 108);
      EXPECT_EQ(r["spill_vgpr"].get<int64_t>(), 0);
      EXPECT_EQ(r["scratch_bytes"].get<int64_t>(), 0);
      EXPECT_EQ(c.via_shared, 1);
      ASSERT_GE(seen.size(), 2u);  // the seed's first kernel refused
      EXPECT_FALSE(seen[0].refused.empty());
      if (D == 64) EXPECT_EQ(c.block_n, 64) << "the seed's tuple";
      else EXPECT_FALSE(seen[1].refused.empty()) << "the seed's tuple fits at D=" << D << ": tighten SeedTupleOnAmd";
      if (D == 128)
        EXPECT_TRUE(seen[0].refused.find("spilled") != std::string::npos ||
                    seen[0].refused.find("VGPRs, over the budget of 108") != std::string::npos)
            << seen[0].refused;
      std::string meta = std::string(target) == "gfx942" ? fp8_decode::compile_partial<tl::f8e4m3fnuz>(c, target, p)
                                                         : fp8_decode::compile_partial<tl::f8e4m3fn>(c, target, p);
      std::string remarks = nlohmann::json::parse(meta)["remarks"].dump();
      EXPECT_NE(remarks.find("2 into shared memory"), std::string::npos) << remarks;
    }
}

// Seed 002's fixed tuple (BLOCK_N 64, 2 stages, 1 wave, K and V through tl::shared) on
// gfx942 and gfx950, from its code object: no spills; K's and V's copies are buffer loads
// into LDS (one offset VGPR a lane, the chunks' rows in soffset, masked-off chunks past the
// bound: no global_load_lds, no exec-mask branch around a copy); V, the second dot's 8-bit
// B, read 8 bytes a row (gfx942: N renumbered, ds_read_b64; gfx950: ds_read_b64_tr_b8),
// never a byte at a time; the per-token scales and P without lane shuffles at D=128. At
// D=64 it fits the 108-VGPR budget and the guardrail chooses it. At D=128 it does not yet
// (gfx942 131, gfx950 124: the V rows and K steps LLVM reads ahead while occupancy is
// LDS-bound); the ceilings below only keep it from growing.
TEST(Fp8DecodeSample, SeedTupleOnAmd) {
  const fp8_decode::Config seed{64, 2, 1, 1};
  for (const char* target : {"gfx942", "gfx950"})
    for (int64_t D : {64, 128}) {
      SCOPED_TRACE(fmt::format("{} D={}", target, D));
      const bool g942 = std::string(target) == "gfx942";
      fp8_decode::Problem p{16, 8192, 64, 8, D};
      std::string meta = g942 ? fp8_decode::compile_partial<tl::f8e4m3fnuz>(seed, target, p)
                              : fp8_decode::compile_partial<tl::f8e4m3fn>(seed, target, p);
      const nlohmann::json r = nlohmann::json::parse(meta)["report"];
      const int64_t vgpr = r["vgpr"].get<int64_t>();  // AGPRs included (gfx90a and later)
      EXPECT_EQ(fp8_decode::spills_of(r), 0);
      EXPECT_LE(vgpr, D == 64 ? 108 : g942 ? 131 : 124);
      std::string isa = tltest::isa_of_compiled(meta);
      // 8 KB of K and of V an iteration, in the prologue and the loop: 4 (gfx942) or 16
      // (gfx950) bytes a lane a copy.
      const int copies = 2 * 2 * int(64 * D) / (64 * (g942 ? 4 : 16));
      EXPECT_EQ(tltest::count(isa, g942 ? "buffer_load_dword v" : "buffer_load_dwordx4 v"), copies) << isa;
      EXPECT_EQ(tltest::count(isa, "global_load_lds"), 0) << isa;
      EXPECT_EQ(tltest::count(isa, "ds_read_u8"), 0) << isa;
      EXPECT_EQ(tltest::count(isa, "ds_read_b64_tr_b8"), g942 ? 0 : int(2 * D / 16)) << isa;
      if (D == 128) {
        EXPECT_LE(tltest::count(isa, "s_cbranch_execz"), 8) << isa;  // 262 with branches around the copies
        EXPECT_LE(tltest::count(isa, "ds_bpermute_b32"), 2) << isa;
      }
      if (D == 64) {
        auto [c, seen] = g942 ? fp8_decode::guarded_choice<tl::f8e4m3fnuz>(fp8_decode::candidates(target, D), target, p)
                              : fp8_decode::guarded_choice<tl::f8e4m3fn>(fp8_decode::candidates(target, D), target, p);
        EXPECT_EQ(c.block_n, 64);
        EXPECT_EQ(c.num_stages, 2);
        EXPECT_EQ(c.num_warps, 1);
        EXPECT_EQ(c.via_shared, 1);
      }
    }
}

}  // namespace

namespace {

// The loop's FP8 conversions (K's and V's tiles to the dots' type as the dots read them)
// take one instruction per two elements: cvt.rn.f16x2.e4m3x2 on sm_90 (whose dots are f16:
// nothing after it, no widening to f32 and back), v_cvt_pk_f32_fp8 on gfx942 and gfx950
// (one an element before, v_cvt_f32_fp8 on AMD), and no per-element convert left. Each
// target's first-choice configuration at D = 128, converting a thread's share of the two
// [BLOCK_N, 128] tiles once an iteration:
//  - sm_90, BLOCK_N 64 over 2 warps: K^T's 64 columns and V's 128 split between them,
//    128 + 128 elements a thread;
//  - AMD, BLOCK_N 32 over 4 waves: V's 128 columns split four ways (16 a lane), K^T's 32
//    columns two ways (16-column MFMA tiles; two waves read each half: 32 a lane).
TEST(Fp8DecodeSample, ConvertsTwoElementsAnInstruction) {
  struct Case {
    const char* target;
    fp8_decode::Config c;
    int elements;  // FP8 elements a thread converts an iteration
  } cases[] = {{"sm_90", {64, 3, 2, 1, 1}, 128 + 128}, {"gfx942", {32, 2, 4, 1}, 32 + 16},
               {"gfx950", {32, 2, 4, 1}, 32 + 16}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.target);
    fp8_decode::Problem p{16, 8192, 64, 8, 128};
    const std::string t = k.target;
    std::string isa = tltest::isa_of_compiled(t == "gfx942" ? fp8_decode::compile_partial<tl::f8e4m3fnuz>(k.c, t, p)
                                                            : fp8_decode::compile_partial<tl::f8e4m3fn>(k.c, t, p));
    const int pairs = t == "sm_90" ? tltest::count(isa, "cvt.rn.f16x2.e4m3x2") : tltest::count(isa, "v_cvt_pk_f32_fp8");
    EXPECT_EQ(pairs, k.elements / 2) << isa;
    EXPECT_EQ(tltest::count(isa, "v_cvt_f32_fp8"), 0);
    if (t == "sm_90") {
      EXPECT_EQ(tltest::count(isa, "cvt.f32.f16"), 0) << isa;
      EXPECT_GT(tltest::count(isa, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"), 0) << isa;
    }
  }
}

// On sm_90 the combine is a programmatic dependent launch of the partial kernel: the
// partial kernel lets it start after its main loop (griddepcontrol.launch_dependents after
// the loop's last mma, only where a combine is launched), the combine waits before its
// first load (griddepcontrol.wait), and its launch asks for PDL.
TEST(Fp8DecodeSample, CombineIsADependentLaunchOnSm90) {
  fp8_decode::Problem p{1, 32768, 64, 8, 128};
  const fp8_decode::Config c{64, 3, 2, 1, 1};
  const std::string partial = tltest::isa_of_compiled(fp8_decode::compile_partial<tl::f8e4m3fn>(c, "sm_90", p));
  EXPECT_EQ(tltest::count(partial, "griddepcontrol.launch_dependents;"), 1) << partial;
  EXPECT_GT(partial.find("griddepcontrol.launch_dependents;"), partial.rfind("mma.sync"));
  EXPECT_LT(partial.find("griddepcontrol.launch_dependents;"), partial.find("st.global"));
  const std::string merging = tltest::isa_of_compiled(fp8_decode::compile_partial<tl::f8e4m3fn>(c, "sm_90", p, 8));
  EXPECT_EQ(tltest::count(merging, "griddepcontrol"), 0);
  const std::string combine = tltest::isa_of_compiled(fp8_decode::compile_combine("sm_90", p, 64));
  EXPECT_EQ(tltest::count(combine, "griddepcontrol.wait;"), 1) << combine;
  EXPECT_LT(combine.find("griddepcontrol.wait;"), combine.find("ld.global"));
  EXPECT_TRUE(fp8_decode::combine_options(p, 64).launch_pdl);
}

}  // namespace

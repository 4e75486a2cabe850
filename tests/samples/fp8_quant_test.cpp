// The FP8 quantization sample's kernels (samples/fp8_quant/fp8_quant.hpp) on the test
// device, against the host reference (samples/fp8_quant/reference.hpp): scales bit for
// bit, values bit for bit against the kernel's arithmetic done on the host and as a
// correct FP8 rounding of the exact quotient; both FP8 formats, both atomic semantics
// (identical bytes), ragged shapes, the scale floor, infinities and NaN. Then the AMD
// code: compiled for gfx942 and gfx950 without a GPU, the relaxed amax atomic is a bare
// global_atomic_smax (acq_rel: with buffer_wbl2/buffer_inv), no spills, 16-byte stores.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/amdgpu/code_object.hpp"
#include "runtime/cache.hpp"
#include "samples/fp8_quant/fp8_quant.hpp"
#include "samples/fp8_quant/reference.hpp"
#include "support/compile.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

constexpr tl::sem kSems[] = {tl::sem::relaxed, tl::sem::acq_rel};

tl::bfloat16 bf(double v) { return tl::to_bf16(v); }
tl::bfloat16 bf_bits(uint16_t bits) {
  tl::bfloat16 b;
  std::memcpy(&b, &bits, 2);
  return b;
}

struct Problem {
  int64_t E, K, N;
  std::vector<tl::bfloat16> w;  // [E, K, N]
  tl::bfloat16& at(int64_t e, int64_t k, int64_t n) { return w[size_t((e * K + k) * N + n)]; }
};

// Random weights, columns of different magnitudes (2^-8 .. 2^4).
Problem random_problem(int64_t E, int64_t K, int64_t N) {
  Problem p{E, K, N, std::vector<tl::bfloat16>(size_t(E * K * N))};
  auto f = random_floats(p.w.size(), -1.0f, 1.0f);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        size_t i = size_t((e * K + k) * N + n);
        p.w[i] = bf(std::ldexp(double(f[i]), int((n * 5 + e) % 13) - 8));
      }
  return p;
}

// What one run wrote.
struct Out {
  std::vector<uint8_t> q;  // [E, N, K] FP8 codes
  std::vector<float> s;    // [E, N]
};

// Runs the sample's launches on the test device, outputs and the amax workspace
// poisoned first (the zero kernel must clear the workspace).
template <class O> Out run(const Problem& p, const fp8_quant::Config& c) {
  auto dev = test_device();
  auto W = upload<tl::ty::bf16>(p.w);
  auto A = dev.alloc<tl::i32>(size_t(p.E * p.N));
  auto Q = dev.alloc<O>(size_t(p.E * p.N * p.K));
  auto S = dev.alloc<tl::f32>(size_t(p.E * p.N));
  poison(A), poison(Q), poison(S);
  fp8_quant::quantize<O>(c, W, A, Q, S, p.E, p.K, p.N);
  dev.synchronize();
  Out o;
  auto hq = Q.download();
  o.q.resize(hq.size());
  std::memcpy(o.q.data(), hq.data(), hq.size());
  o.s = S.download();
  return o;
}

std::string describe(const Problem& p, const fp8_quant::Config& c, tl::DType d) {
  return "E" + std::to_string(p.E) + " K" + std::to_string(p.K) + " N" + std::to_string(p.N) + " tile " +
         std::to_string(c.block_k) + "x" + std::to_string(c.block_n) + " w" + std::to_string(c.num_warps) + " " +
         std::string(tl::name(d)) + (c.sem == tl::sem::relaxed ? " relaxed" : " acq_rel");
}

// Runs both semantics, checks each against the reference, and the two identical.
// Returns the relaxed run's output and the reference.
template <class O> std::pair<Out, fp8_quant::Reference> check(const Problem& p, fp8_quant::Config c) {
  const tl::DType d = tl::elem_t<O>::dtype;
  fp8_quant::Reference ref(p.w, p.E, p.K, p.N, d);
  Out first;
  for (tl::sem s : kSems) {
    c.sem = s;
    Out o = run<O>(p, c);
    auto m = fp8_quant::compare(ref, p.w, o.q, o.s, 1, true);
    EXPECT_EQ(m.scales, 0) << describe(p, c, d);
    EXPECT_EQ(m.values, 0) << describe(p, c, d) << ": first at e=" << m.first_e << " k=" << m.first_k
                           << " n=" << m.first_n;
    EXPECT_EQ(m.not_exact, 0) << describe(p, c, d);
    if (s == tl::sem::relaxed) {
      first = o;
    } else {
      EXPECT_EQ(o.q, first.q) << describe(p, c, d) << ": acq_rel values differ from relaxed";
      EXPECT_EQ(std::memcmp(o.s.data(), first.s.data(), o.s.size() * 4), 0)
          << describe(p, c, d) << ": acq_rel scales differ from relaxed";
    }
  }
  return {first, ref};
}

template <class F> void both_formats(F&& f) {
  f.template operator()<tl::f8e4m3fn>();
  f.template operator()<tl::f8e4m3fnuz>();
}

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------------
// Results.

TEST(Fp8QuantSample, RaggedShapesBothFormatsBothSemantics) {
  // K and N multiples of the tile, ragged (K = 300 over tiles of 128: a last tile of
  // 44 rows; N = 200: 72 columns), smaller than one tile, one expert; small tiles put
  // many K tiles (many atomics) on each column.
  struct Case {
    int64_t E, K, N;
    int bk, bn, warps;
  };
  for (Case k : {Case{2, 256, 128, 128, 128, 4}, Case{3, 300, 200, 128, 128, 4}, Case{1, 77, 33, 128, 128, 4},
                 Case{1, 1000, 129, 32, 64, 2}, Case{5, 16, 48, 16, 16, 1}})
    both_formats([&]<class O>() {
      fp8_quant::Config c{.block_k = k.bk, .block_n = k.bn, .num_warps = k.warps};
      check<O>(random_problem(k.E, k.K, k.N), c);
    });
}

TEST(Fp8QuantSample, AmaxIsExactAndTheLargestValueMapsToFp8Max) {
  // Each column's largest |w| (placed at a random row, once negative) must come out as
  // exactly +-FP8_MAX: amax exact, 1/scale and the product within the saturation.
  both_formats([&]<class O>() {
    Problem p = random_problem(2, 200, 70);
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t n = 0; n < p.N; ++n) p.at(e, (n * 37 + e) % p.K, n) = bf((n % 2 ? -1 : 1) * 3.0 * (n + 1));
    auto [o, ref] = check<O>(p, {.block_k = 64, .block_n = 32});
    const double mx = tl::max_finite(tl::elem_t<O>::dtype);
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t n = 0; n < p.N; ++n) {
        EXPECT_EQ(ref.amax[size_t(e * p.N + n)], 3.0 * (n + 1));
        EXPECT_EQ(o.s[size_t(e * p.N + n)], float(3.0 * (n + 1) / mx)) << n;
        int64_t k = (n * 37 + e) % p.K;
        EXPECT_EQ(tl::to_double(tl::elem_t<O>::dtype, o.q[size_t((e * p.N + n) * p.K + k)]), (n % 2 ? -mx : mx)) << n;
      }
  });
}

TEST(Fp8QuantSample, AllZeroColumnsTakeTheScaleFloor) {
  // Columns of zeros (and of -0 and of values far below the floor): scale 1e-12/FP8_MAX
  // (no division by zero), values 0; the other columns are unaffected.
  both_formats([&]<class O>() {
    Problem p = random_problem(2, 130, 40);
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t k = 0; k < p.K; ++k) {
        p.at(e, k, 0) = bf(0.0);
        p.at(e, k, 17) = bf(k % 2 ? -0.0 : 0.0);
        p.at(e, k, 39) = bf(k % 3 ? 1e-30 : -1e-30);
      }
    auto [o, ref] = check<O>(p, {.block_k = 64, .block_n = 16});
    const float floor_scale = float(double(1e-12f) / tl::max_finite(tl::elem_t<O>::dtype));
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t n : {0, 17, 39}) {
        EXPECT_EQ(o.s[size_t(e * p.N + n)], floor_scale) << "column " << n;
        for (int64_t k = 0; k < p.K; ++k) EXPECT_EQ(tl::to_double(tl::elem_t<O>::dtype, o.q[size_t((e * p.N + n) * p.K + k)]), 0.0);
      }
  });
}

TEST(Fp8QuantSample, InfinitiesClampTheScaleAndSaturate) {
  // A column holding +inf (and one holding -inf and +inf): amax inf is clamped to
  // FLT_MAX, so the scale is finite (FLT_MAX / FP8_MAX), +-inf saturate to +-FP8_MAX and
  // the finite values of the column become (nearly all) 0; no NaN appears.
  both_formats([&]<class O>() {
    const tl::DType d = tl::elem_t<O>::dtype;
    Problem p = random_problem(1, 150, 24);
    p.at(0, 7, 3) = bf(INFINITY);
    p.at(0, 149, 20) = bf(-INFINITY);
    p.at(0, 0, 20) = bf(INFINITY);
    p.at(0, 1, 20) = bf(3.0e38);  // finite and huge: 3e38 / (FLT_MAX / FP8_MAX)
    auto [o, ref] = check<O>(p, {.block_k = 32, .block_n = 8});
    const double mx = tl::max_finite(d);
    for (int64_t n : {3, 20}) {
      EXPECT_EQ(o.s[size_t(n)], float(double(FLT_MAX) / mx)) << n;
      for (int64_t k = 0; k < p.K; ++k) EXPECT_FALSE(std::isnan(tl::to_double(d, o.q[size_t(n * p.K + k)])));
    }
    EXPECT_EQ(tl::to_double(d, o.q[size_t(3 * p.K + 7)]), mx);
    EXPECT_EQ(tl::to_double(d, o.q[size_t(20 * p.K + 149)]), -mx);
    EXPECT_EQ(tl::to_double(d, o.q[size_t(20 * p.K + 0)]), mx);
    EXPECT_NEAR(tl::to_double(d, o.q[size_t(20 * p.K + 1)]), 3.0e38 / FLT_MAX * mx, 0.07 * mx);
    EXPECT_EQ(tl::to_double(d, o.q[size_t(20 * p.K + 2)]), 0.0);
  });
}

TEST(Fp8QuantSample, NanPoisonsItsColumnOnly) {
  // NaN (positive and negative, quiet bf16 codes) in two columns, in different K tiles:
  // those columns get a NaN scale and all-NaN values (the integer amax keeps the NaN,
  // as torch's amax does); every other column is exactly as without them.
  both_formats([&]<class O>() {
    const tl::DType d = tl::elem_t<O>::dtype;
    Problem clean = random_problem(2, 100, 50), p = clean;
    p.at(1, 99, 5) = bf_bits(0x7fc0);
    p.at(1, 3, 44) = bf_bits(0xffc1);
    p.at(1, 50, 44) = bf(INFINITY);
    auto [o, ref] = check<O>(p, {.block_k = 32, .block_n = 16});
    auto [oc, refc] = check<O>(clean, {.block_k = 32, .block_n = 16});
    for (int64_t e = 0; e < p.E; ++e)
      for (int64_t n = 0; n < p.N; ++n) {
        bool poisoned = e == 1 && (n == 5 || n == 44);
        size_t i = size_t(e * p.N + n);
        EXPECT_EQ(std::isnan(o.s[i]), poisoned) << e << " " << n;
        if (!poisoned) EXPECT_EQ(o.s[i], oc.s[i]) << e << " " << n;
        for (int64_t k = 0; k < p.K; ++k) {
          uint8_t code = o.q[size_t((e * p.N + n) * p.K + k)];
          EXPECT_EQ(std::isnan(tl::to_double(d, code)), poisoned) << e << " " << n << " " << k;
          if (!poisoned) EXPECT_EQ(code, oc.q[size_t((e * p.N + n) * p.K + k)]);
        }
      }
  });
}

TEST(Fp8QuantSample, ClampBitPatternsAreTheFloats) {
  EXPECT_EQ(bits_to_float(fp8_quant::kFloorBits), 1e-12f);
  EXPECT_EQ(bits_to_float(fp8_quant::kFltMaxBits), FLT_MAX);
  EXPECT_EQ(bits_to_float(fp8_quant::kInfBits), INFINITY);
  EXPECT_TRUE(fp8_quant::uses_fnuz("gfx942"));
  EXPECT_TRUE(fp8_quant::uses_fnuz("gfx942:sramecc+:xnack-"));
  EXPECT_FALSE(fp8_quant::uses_fnuz("gfx950"));
  EXPECT_FALSE(fp8_quant::uses_fnuz("sm_90"));
  EXPECT_THROW(fp8_quant::check_shape(1, 65536, 32768), std::invalid_argument);  // K * N = 2^31
  EXPECT_NO_THROW(fp8_quant::check_shape(1, 65536, 32767));
}

// ---------------------------------------------------------------------------------
// The AMD code, compiled without a GPU.

namespace {

struct AmdCode {
  std::string dis;
  nlohmann::json report;
};

// Compiles the amax (cast = false) or cast kernel for `arch` through the sample's own
// compile(), then disassembles the code object from the cache entry it made.
template <class O> AmdCode amd_code(const std::string& arch, const fp8_quant::Config& c, int64_t K, int64_t N, bool cast) {
  auto meta = nlohmann::json::parse(fp8_quant::compile<O>(c, arch, K, N, cast));
  auto entry = tl::cache::DiskCache::global().load(meta.at("key").template get<std::string>());
  if (!entry) throw std::runtime_error("no cache entry for " + meta.dump());
  return {tl::amd::disassemble(entry->artifacts.at("code")), meta.at("report")};
}

template <class F> void on_gfx942_and_gfx950(F&& f) {
  f.template operator()<tl::f8e4m3fnuz>("gfx942");
  f.template operator()<tl::f8e4m3fn>("gfx950");
}

}  // namespace

TEST(Fp8QuantAmd, RelaxedAmaxAtomicIsBare) {
  on_gfx942_and_gfx950([]<class O>(const char* arch) {
    for (fp8_quant::Config c : {fp8_quant::Config{}, fp8_quant::Config{.block_k = 128, .block_n = 128}}) {
      ASSERT_EQ(c.sem, tl::sem::relaxed);  // the default
      auto code = amd_code<O>(arch, c, 5120, 8192, false);
      EXPECT_GE(count(code.dis, "global_atomic_smax"), 1) << arch << "\n" << code.dis;
      EXPECT_EQ(count(code.dis, "global_atomic_cmpswap"), 0) << arch << "\n" << code.dis;  // no CAS loop
      EXPECT_EQ(count(code.dis, "buffer_wbl2"), 0) << arch << "\n" << code.dis;
      EXPECT_EQ(count(code.dis, "buffer_inv"), 0) << arch << "\n" << code.dis;
      EXPECT_EQ(code.report.at("spill_vgpr"), 0) << arch;
      EXPECT_EQ(code.report.at("spill_sgpr"), 0) << arch;
    }
  });
}

TEST(Fp8QuantAmd, AcqRelAmaxAtomicHasCacheFences) {
  on_gfx942_and_gfx950([]<class O>(const char* arch) {
    fp8_quant::Config c{.sem = tl::sem::acq_rel};
    auto code = amd_code<O>(arch, c, 5120, 8192, false);
    EXPECT_GE(count(code.dis, "global_atomic_smax"), 1) << arch << "\n" << code.dis;
    EXPECT_GE(count(code.dis, "buffer_wbl2"), 1) << arch << "\n" << code.dis;
    EXPECT_GE(count(code.dis, "buffer_inv"), 1) << arch << "\n" << code.dis;
    EXPECT_EQ(code.report.at("spill_vgpr"), 0) << arch;
  });
}

TEST(Fp8QuantAmd, CastKernelStoresSixteenFp8ALaneWithoutSpills) {
  on_gfx942_and_gfx950([]<class O>(const char* arch) {
    // The design shapes: K a multiple of 16, so every lane's 16 FP8 along K are one
    // 16-byte store: the tile's bytes over the lanes (64 a wave), 16 at a time. Both the
    // default tile ([64, 64] over 4 waves: one store a lane) and torchao's ([128, 128]:
    // four).
    for (fp8_quant::Config c : {fp8_quant::Config{}, fp8_quant::Config{.block_k = 128, .block_n = 128}})
      for (auto [K, N] : {std::pair<int64_t, int64_t>{5120, 8192}, {2048, 1408}}) {
        auto code = amd_code<O>(arch, c, K, N, true);
        int x4 = count(code.dis, "global_store_dwordx4") + count(code.dis, "buffer_store_dwordx4");
        EXPECT_EQ(x4, c.block_k * c.block_n / (c.num_warps * 64 * 16)) << arch << " K" << K << "\n" << code.dis;
        EXPECT_EQ(count(code.dis, "global_store_byte") + count(code.dis, "global_store_short"), 0) << arch << " K" << K;
        EXPECT_EQ(code.report.at("spill_vgpr"), 0) << arch << " K" << K;
        EXPECT_EQ(code.report.at("spill_sgpr"), 0) << arch << " K" << K;
      }
    // K not a multiple of 16 (ragged rows of Q): narrower stores, still correct, no spills.
    auto ragged = amd_code<O>(arch, fp8_quant::Config{}, 300, 200, true);
    EXPECT_EQ(ragged.report.at("spill_vgpr"), 0) << arch;
  });
}

// The cast kernel's conversions to FP8 take one instruction per two elements:
// cvt.rn.satfinite.e4m3x2.f32 on sm_90 (the software conversion before, ~20 an element),
// v_cvt_pk_fp8_f32 on gfx942 and gfx950 (one an element before). A [64, 64] tile over 4
// warps: 32 elements a thread on NVIDIA, 16 a lane on AMD.
TEST(Fp8QuantSample, ConvertsTwoElementsAnInstruction) {
  for (const char* target : {"sm_90", "gfx942", "gfx950"}) {
    SCOPED_TRACE(target);
    const std::string t = target;
    const fp8_quant::Config c{};
    std::string isa = tltest::isa_of_compiled(t == "gfx942" ? fp8_quant::compile<tl::f8e4m3fnuz>(c, t, 5120, 8192, true)
                                                            : fp8_quant::compile<tl::f8e4m3fn>(c, t, 5120, 8192, true));
    const int elements = c.block_k * c.block_n / (c.num_warps * (t == "sm_90" ? 32 : 64));
    const int pairs = t == "sm_90" ? count(isa, "cvt.rn.satfinite.e4m3x2.f32") : count(isa, "v_cvt_pk_fp8_f32");
    EXPECT_EQ(pairs, elements / 2) << isa;
  }
}

// tl::dot_scaled (Triton's tl.dot_scaled, OCP MX) on the test device (the CPU in CI,
// TL_DEVICE=cuda on the H100/H200, where it is the upcast path too: sm_90 has no scaled
// MMA), against a double reference of the dequantized operands, outputs poisoned first:
//  - every pair of formats ("e2m1", "e4m3", "e5m2", "bf16") with scales on both, in a K
//    loop, M and N ragged against the blocks (masked loads and stores);
//  - one operand unscaled (Triton's None: MXFP4 weights times bf16 activations);
//  - scales at the range's ends (e8m0 0 and 254 paired so that products stay finite),
//    with a tolerance for what bf16 cannot hold below 2^-126 (its subnormal spacing);
//  - a NaN scale (255) making exactly its row NaN; u8 operands and scales (Triton's uint8).
// The tolerance otherwise is f32 accumulation's: the upcast operands are exact, so is
// every product (bf16 x bf16 in f32), the sums round: K 2^-22 sum |a b|.
// GPU compile checks: sm_90, gfx90a, gfx942 and gfx950 compile the tutorial-10 shape.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/reference.hpp"
#include "tl/numeric.hpp"

using namespace tltest;

namespace {

enum Fmt { E2M1, E4M3, E5M2, BF16 };
const char* const kFormats[] = {"e2m1", "e4m3", "e5m2", "bf16"};

// C [M, N] = dot_scaled(A [M, K], scale_a [M, K / 32], B^T [N, K], scale_b [N, K / 32]):
// A and B stored K-contiguous (e2m1 two a byte), B loaded [BN, BK] and transposed, as
// tutorial 10 does. SA / SB = 0: that operand's scale is nullptr.
template <class EA, class EB, class ES> auto& scaled_kernel() {
  static const std::string name = std::string("dot_scaled_") + std::string(tl::name(EA::dtype)) + "_" +
                                  std::string(tl::name(EB::dtype)) + "_" + std::string(tl::name(ES::dtype));
  static auto k = tl::kernel(name, [](tl::ptr<EA> a, tl::ptr<ES> sa, tl::ptr<EB> b, tl::ptr<ES> sb, tl::ptr<tl::f32> c,
                                      int M, int N, int K, int FA, int FB, int SA, int SB, int BM, int BN, int BK) {
    const int PA = FA == E2M1 ? 2 : 1, PB = FB == E2M1 ? 2 : 1;
    auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
    auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
    auto row_a = tl::expand_dims(rm, 1), row_b = tl::expand_dims(rn, 1);
    auto acc = tl::zeros<tl::f32>({BM, BN});
    for (auto k0 : tl::range(0, K, BK)) {
      auto ka = tl::expand_dims(k0 / PA + tl::arange(0, BK / PA), 0);
      auto kb = tl::expand_dims(k0 / PB + tl::arange(0, BK / PB), 0);
      auto ks = tl::expand_dims(k0 / 32 + tl::arange(0, BK / 32), 0);
      auto x = tl::load(a + row_a * (K / PA) + ka, tl::broadcast_to(row_a < M, {BM, BK / PA}), 0);
      auto y = tl::load(b + row_b * (K / PB) + kb, tl::broadcast_to(row_b < N, {BN, BK / PB}), 0);
      tl::mx_scale scale_a = nullptr, scale_b = nullptr;
      if (SA) scale_a = tl::load(sa + row_a * (K / 32) + ks, tl::broadcast_to(row_a < M, {BM, BK / 32}), 127);
      if (SB) scale_b = tl::load(sb + row_b * (K / 32) + ks, tl::broadcast_to(row_b < N, {BN, BK / 32}), 127);
      acc = tl::dot_scaled(x, scale_a, kFormats[FA], tl::trans(y), scale_b, kFormats[FB], acc);
    }
    auto out = row_a * N + tl::expand_dims(rn, 0);
    tl::store(c + out, acc, (row_a < M) & (tl::expand_dims(rn, 0) < N));
  });
  return k;
}

template <Fmt F> struct elem_of_fmt;
template <> struct elem_of_fmt<E2M1> { using type = tl::ty::f4e2m1; };
template <> struct elem_of_fmt<E4M3> { using type = tl::ty::f8e4m3fn; };
template <> struct elem_of_fmt<E5M2> { using type = tl::ty::f8e5m2; };
template <> struct elem_of_fmt<BF16> { using type = tl::ty::bf16; };

// An operand [rows, K] in its format's bytes (K-contiguous, e2m1 packed) and its values.
struct Operand {
  std::vector<uint8_t> bytes;
  std::vector<double> v;
};

// Values of |x| <= limit; a few of the FP8 ones tiny (their subnormals).
Operand make_operand(Fmt f, int rows, int K, double limit) {
  Operand o;
  o.v.resize(size_t(rows) * K);
  std::uniform_real_distribution<double> u(-limit, limit);
  std::uniform_int_distribution<int> nib(0, 15), coin(0, 15);
  for (size_t i = 0; i < o.v.size(); ++i) {
    switch (f) {
      case E2M1: {
        int code;
        do code = nib(rng()); while (std::fabs(tl::e2m1_to_double(uint8_t(code))) > limit);
        if (i % 2 == 0) o.bytes.push_back(uint8_t(code));
        else o.bytes.back() |= uint8_t(code << 4);
        o.v[i] = tl::e2m1_to_double(uint8_t(code));
        break;
      }
      case E4M3: case E5M2: {
        const tl::DType d = f == E4M3 ? tl::DType::f8e4m3fn : tl::DType::f8e5m2;
        double x = u(rng()) * (coin(rng()) == 0 ? 0x1p-10 : 1.0);
        uint8_t code = tl::to_fp8(d, x);
        o.bytes.push_back(code);
        o.v[i] = tl::to_double(d, code);
        break;
      }
      case BF16: {
        tl::bfloat16 h = tl::to_bf16(u(rng()));
        o.bytes.push_back(uint8_t(h.bits & 0xFF));
        o.bytes.push_back(uint8_t(h.bits >> 8));
        o.v[i] = tl::to_float(h);
        break;
      }
    }
  }
  return o;
}

std::vector<uint8_t> random_scales(int rows, int K, int lo, int hi) {
  std::uniform_int_distribution<int> e(lo, hi);
  std::vector<uint8_t> s(size_t(rows) * K / 32);
  for (auto& x : s) x = uint8_t(e(rng()));
  return s;
}

template <class E> tl::buffer<E> upload_bytes(const std::vector<uint8_t>& bytes) {
  using H = typename tl::buffer<E>::host_t;
  std::vector<H> h(bytes.size() / sizeof(H));
  std::memcpy(static_cast<void*>(h.data()), bytes.data(), h.size() * sizeof(H));
  return upload<E>(h);
}

struct Problem {
  int M, N, K, BM = 16, BN = 16, BK = 32;
  Operand a, b;                     // b is B^T: [N, K]
  std::vector<uint8_t> sa, sb;      // empty: no scale
};

// The exact sum of the dequantized products, and what may separate it from an f32 sum of
// bf16 upcasts: K 2^-22 sum |a b|, and below 2^-126 bf16's spacing 2^-133 (half of it
// off at most) times the other operand.
void reference(const Problem& p, std::vector<double>& want, std::vector<double>& tol) {
  want.assign(size_t(p.M) * p.N, 0.0);
  tol.assign(size_t(p.M) * p.N, 0.0);
  auto scale = [](const std::vector<uint8_t>& s, int row, int k, int K) {
    return s.empty() ? 1.0 : tl::e8m0_to_double(s[size_t(row) * (K / 32) + size_t(k / 32)]);
  };
  for (int m = 0; m < p.M; ++m)
    for (int n = 0; n < p.N; ++n) {
      double acc = 0, mag = 0, sub = 0;
      for (int k = 0; k < p.K; ++k) {
        double x = p.a.v[size_t(m) * p.K + k] * scale(p.sa, m, k, p.K);
        double y = p.b.v[size_t(n) * p.K + k] * scale(p.sb, n, k, p.K);
        acc += x * y, mag += std::fabs(x * y);
        double ex = std::fabs(x) < 0x1p-126 ? 0x1p-134 : 0, ey = std::fabs(y) < 0x1p-126 ? 0x1p-134 : 0;
        sub += ex * std::fabs(y) + ey * std::fabs(x) + ex * ey;
      }
      want[size_t(m) * p.N + n] = acc;
      tol[size_t(m) * p.N + n] = p.K * 0x1p-22 * mag + sub;
    }
}

template <Fmt FA, Fmt FB, class ES = tl::ty::e8m0, class EA = typename elem_of_fmt<FA>::type,
          class EB = typename elem_of_fmt<FB>::type>
::testing::AssertionResult run(const Problem& p) {
  auto a = upload_bytes<EA>(p.a.bytes);
  auto b = upload_bytes<EB>(p.b.bytes);
  auto sa = upload_bytes<ES>(p.sa.empty() ? std::vector<uint8_t>(16, 127) : p.sa);
  auto sb = upload_bytes<ES>(p.sb.empty() ? std::vector<uint8_t>(16, 127) : p.sb);
  auto c = test_device().alloc<tl::ty::f32>(size_t(p.M) * p.N);
  poison(c);
  scaled_kernel<EA, EB, ES>()[tl::grid(tl::cdiv(p.M, p.BM), tl::cdiv(p.N, p.BN))](
      a, sa, b, sb, c, p.M, p.N, p.K, int(FA), int(FB), int(!p.sa.empty()), int(!p.sb.empty()), p.BM, p.BN, p.BK);
  std::vector<double> want, tol;
  reference(p, want, tol);
  auto got = c.download();
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : std::fabs(double(got[i]) - want[i]) <= tol[i];
    if (!ok)
      return ::testing::AssertionFailure() << kFormats[FA] << " x " << kFormats[FB] << ": C[" << i / size_t(p.N)
                                           << ", " << i % size_t(p.N) << "] = " << got[i] << ", want " << want[i]
                                           << " +- " << tol[i];
  }
  return ::testing::AssertionSuccess();
}

Problem problem(Fmt fa, Fmt fb, int M, int N, int K, bool scale_a, bool scale_b, double limit = 6) {
  Problem p{M, N, K};
  p.a = make_operand(fa, M, K, limit);
  p.b = make_operand(fb, N, K, limit);
  if (scale_a) p.sa = random_scales(M, K, 120, 134);
  if (scale_b) p.sb = random_scales(N, K, 120, 134);
  return p;
}

template <Fmt FA, Fmt FB> void pair() {
  // M and N ragged against 16 x 16 blocks, K three blocks of 32.
  EXPECT_TRUE((run<FA, FB>(problem(FA, FB, 40, 24, 96, true, true))));
}

TEST(DotScaled, EveryFormatPairAgainstDoubles) {
  pair<E2M1, E2M1>(), pair<E2M1, E4M3>(), pair<E2M1, E5M2>(), pair<E2M1, BF16>();
  pair<E4M3, E2M1>(), pair<E4M3, E4M3>(), pair<E4M3, E5M2>(), pair<E4M3, BF16>();
  pair<E5M2, E2M1>(), pair<E5M2, E4M3>(), pair<E5M2, E5M2>(), pair<E5M2, BF16>();
  pair<BF16, E2M1>(), pair<BF16, E4M3>(), pair<BF16, E5M2>(), pair<BF16, BF16>();
}

// Triton's None for one operand: MXFP4 weights times bf16 activations, and the other way.
TEST(DotScaled, OneOperandUnscaled) {
  Problem p = problem(BF16, E2M1, 48, 32, 128, false, true);
  p.BK = 64;
  EXPECT_TRUE((run<BF16, E2M1>(p)));
  Problem q = problem(E2M1, E4M3, 16, 40, 64, true, false);
  EXPECT_TRUE((run<E2M1, E4M3>(q)));
}

// Scales 0 (2^-127) and 254 (2^127) against each other along K, so that every product
// is finite; operand values under 2 so that 2^127 x them stays in f32's range.
TEST(DotScaled, ScalesAtTheRangeEnds) {
  for (auto [fa, fb] : {std::pair{E2M1, E4M3}, std::pair{E4M3, E2M1}}) {
    Problem p = problem(fa, fb, 32, 32, 128, true, true, 1.9);
    const int kb = p.K / 32;
    const int shift[] = {127, -127, 0, 126};  // per K block: a's code 127 + shift, b's 127 - shift
    for (int r = 0; r < 32; ++r)
      for (int j = 0; j < kb; ++j) {
        p.sa[size_t(r) * kb + j] = uint8_t(127 + shift[j]);
        p.sb[size_t(r) * kb + j] = uint8_t(127 - shift[j]);
      }
    if (fa == E2M1) EXPECT_TRUE((run<E2M1, E4M3>(p)));
    else EXPECT_TRUE((run<E4M3, E2M1>(p)));
  }
}

// A scale code 255 (NaN, OCP) in a's row 5, K block 1: row 5 of C is NaN, the rest exact.
TEST(DotScaled, NanScaleReachesItsRowOnly) {
  Problem p = problem(E2M1, E2M1, 32, 32, 64, true, true);
  p.sa[5 * 2 + 1] = 255;
  EXPECT_TRUE((run<E2M1, E2M1>(p)));
  std::vector<double> want, tol;
  reference(p, want, tol);
  for (int n = 0; n < 32; ++n) EXPECT_TRUE(std::isnan(want[5 * 32 + n]));  // the reference agrees
  EXPECT_FALSE(std::isnan(want[4 * 32]));
}

// Triton's uint8 operands and scales: the codes of the format the string names.
TEST(DotScaled, U8CodesAsTritonPassesThem) {
  Problem p = problem(E2M1, E5M2, 32, 16, 64, true, true);
  EXPECT_TRUE((run<E2M1, E5M2, tl::ty::u8, tl::ty::u8, tl::ty::u8>(p)));
}

// Tutorial 10's kernel shape (64 x 64 blocks, BK 128, 4 warps) compiles for every GPU
// target (sm_90 and gfx942/gfx90a through the upcast, gfx950 on its scaled MFMA: below),
// without spills on AMD, and assembles for sm_90a where ptxas is.
TEST(DotScaled, CompilesForEveryGpuTarget) {
  tl::device cpu = tl::cpu_device();
  tl::buffer<tl::ty::f4e2m1> a4(cpu, 1 << 16), b4(cpu, 1 << 16);
  tl::buffer<tl::ty::f8e4m3fn> a8(cpu, 1 << 16), b8(cpu, 1 << 16);
  tl::buffer<tl::ty::e8m0> sa(cpu, 1 << 12), sb(cpu, 1 << 12);
  tl::buffer<tl::ty::f32> c(cpu, 1 << 16);
  const tl::launch_options o{.num_warps = 4, .num_stages = 2};
  for (const char* target : {"sm_90", "gfx90a", "gfx942", "gfx950"}) {
    const std::string meta4 = scaled_kernel<tl::ty::f4e2m1, tl::ty::f4e2m1, tl::ty::e8m0>().compile(
        target, o, a4, sa, b4, sb, c, 256, 256, 512, int(E2M1), int(E2M1), 1, 1, 64, 64, 128);
    const std::string meta8 = scaled_kernel<tl::ty::f8e4m3fn, tl::ty::f8e4m3fn, tl::ty::e8m0>().compile(
        target, o, a8, sa, b8, sb, c, 256, 256, 512, int(E4M3), int(E4M3), 1, 1, 64, 64, 128);
    if (target[0] != 'g') {  // NVIDIA: ptxas, where this machine has it, assembles it
      // e2m1 on sm_90: bf16 a times scaled e2m1 b (samples/moe's form, the dot swapped: b
      // the wgmma's register A) upcasts b by byte permutes (decompose_scaled_dots'
      // e2m1_to_bf16_prmt), its scale multiply paired (mul.rn.bf16x2), no 2^126 multiply
      // (bf16 0x7E80); both operands e2m1 (tutorial 10's form) keep the nibble multiplies.
      tl::buffer<tl::ty::bf16> a16(cpu, 1 << 16);
      const std::string meta16 = scaled_kernel<tl::ty::bf16, tl::ty::f4e2m1, tl::ty::e8m0>().compile(
          target, o, a16, sa, b4, sb, c, 256, 256, 512, int(BF16), int(E2M1), 0, 1, 64, 64, 128);
      const std::string ptx16 = tltest::isa_of_compiled(meta16), ptx4 = tltest::isa_of_compiled(meta4);
      EXPECT_NE(ptx16.find("prmt.b32 h01, 0x3F3F3F00, 0x40404040, m;"), std::string::npos);
      EXPECT_NE(ptx16.find("mul.rn.bf16x2"), std::string::npos);
      EXPECT_EQ(ptx16.find("0x7E80;"), std::string::npos);
      EXPECT_EQ(ptx4.find("prmt.b32 h01, 0x3F3F3F00"), std::string::npos);
      EXPECT_NE(ptx4.find("0x7E80;"), std::string::npos);
      for (const std::string* m : {&meta4, &meta8, &meta16}) {
        tltest::PtxasRun r = tltest::run_ptxas(tltest::isa_of_compiled(*m), "-arch=sm_90a -v");
        if (!r.ran) continue;
        EXPECT_TRUE(r.ok) << r.output;
        // No spills: the f32 upcast of a whole [64, 128] operand tile at 4 warps once took
        // ptxas to 24 / 56 bytes of spills (e2m1 / e4m3); none at 2afa8af and since.
        EXPECT_NE(r.output.find(" 0 bytes spill stores"), std::string::npos) << r.output;
        auto at = r.output.find("spill stores");
        std::printf("dot_scaled 64x64x128 4 warps, %s, sm_90a: %s\n",
                    m == &meta4 ? "e2m1" : m == &meta8 ? "e4m3" : "bf16 x e2m1",
                    at == std::string::npos ? "?" : r.output.substr(r.output.rfind('\n', at) + 1, at - r.output.rfind('\n', at) + 11).c_str());
      }
      continue;
    }
    auto fp4 = nlohmann::json::parse(meta4), fp8 = nlohmann::json::parse(meta8);
    for (auto* m : {&fp4, &fp8}) {
      const auto& r = m->at("report");
      EXPECT_EQ(r.at("spill_vgpr").get<int>(), 0) << target << " " << r.dump();
      std::printf("dot_scaled 64x64x128 4 warps, %s, %s: %d VGPRs, %d spills\n", m == &fp4 ? "e2m1" : "e4m3", target,
                  r.at("vgpr").get<int>(), r.at("spill_vgpr").get<int>());
    }
  }
}

// gfx950 runs tl::dot_scaled on v_mfma_scale_f32_*_f8f6f4 (the numerics cannot run here:
// the CPU and the H100 check them through the upcast, so this holds the code to what the
// instruction needs). At tutorial 10's shape, for MXFP4 (e2m1 x e2m1), MXFP8 (e4m3 x e4m3)
// and e5m2 x e4m3, with 32x32 (the default) and 16x16 instructions:
//  - only scaled MFMAs multiply (no bf16 MFMA of an upcast, no unscaled f8f6f4), with the
//    operands' format codes in cbsz / blgp (0 e4m3, 1 e5m2, 4 e2m1; the instruction takes
//    B as its A, as every AMD dot here) and two VGPR scales, op_sel 0 (the lane's byte);
//  - A and B read from shared memory 16 bytes a lane (ds_read_b128), nothing narrower
//    than 8 bytes but the scales' own loads;
//  - no spills, and at most the VGPRs of Triton 3.6's kernel at the same configuration
//    (bench/dot_scaled_amd_static.py, bench/results/dot_scaled_amd-2026-11-28). K is 8192:
//    tl's int arguments are constants, and at K = 512 LLVM unrolls the four iterations (120
//    VGPRs for MXFP8), where Triton's K is a run-time argument and its loop stays one.
// gfx942 keeps the upcast (bf16 MFMAs), without spills.
struct ScaledCompile {
  std::string isa;
  nlohmann::json report;
};
template <class EA, class EB>
ScaledCompile compile_scaled(const char* target, Fmt fa, Fmt fb, int nonkdim) {
  tl::device cpu = tl::cpu_device();
  tl::buffer<EA> a(cpu, 1 << 16);
  tl::buffer<EB> b(cpu, 1 << 16);
  tl::buffer<tl::ty::e8m0> sa(cpu, 1 << 12), sb(cpu, 1 << 12);
  tl::buffer<tl::ty::f32> c(cpu, 1 << 16);
  tl::launch_options o{.num_warps = 4, .num_stages = 2};
  o.matrix_instr_nonkdim = nonkdim;
  const std::string meta = scaled_kernel<EA, EB, tl::ty::e8m0>().compile(target, o, a, sa, b, sb, c, 256, 256, 8192,
                                                                         int(fa), int(fb), 1, 1, 64, 64, 128);
  return {tltest::isa_of_compiled(meta), nlohmann::json::parse(meta).at("report")};
}

int count_re(const std::string& text, const std::string& re) {
  std::regex r(re);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), r), std::sregex_iterator()));
}

TEST(DotScaled, Gfx950RunsOnTheScaledMfma) {
  struct Case {
    const char* what;
    ScaledCompile (*compile)(const char*, Fmt, Fmt, int);
    Fmt fa, fb;
    const char* formats;  // the instruction's cbsz / blgp as the disassembly prints them
    int triton_vgprs;     // Triton 3.6, same kernel and configuration (as many at 16x16)
  };
  const Case cases[] = {
      {"mxfp4", compile_scaled<tl::ty::f4e2m1, tl::ty::f4e2m1>, E2M1, E2M1, " cbsz:4 blgp:4", 76},
      {"mxfp8", compile_scaled<tl::ty::f8e4m3fn, tl::ty::f8e4m3fn>, E4M3, E4M3, "", 104},
      {"e5m2 x e4m3", compile_scaled<tl::ty::f8e5m2, tl::ty::f8e4m3fn>, E5M2, E4M3, " blgp:1", 104},
      // Triton's uint8 operands (tutorial 10 loads bytes), bitcast to the formats' types
      // (below B's transpose): staged and read by the dot a K step at a time as f4e2m1
      // pointers are (50 / 54 VGPRs; 84 when the bitcast kept the dot from its stage).
      {"mxfp4 from u8", compile_scaled<tl::ty::u8, tl::ty::u8>, E2M1, E2M1, " cbsz:4 blgp:4", 76},
  };
  for (const Case& c : cases)
    for (int nonkdim : {32, 16}) {
      SCOPED_TRACE(std::string(c.what) + " " + std::to_string(nonkdim) + "x" + std::to_string(nonkdim));
      const ScaledCompile r = c.compile("gfx950", c.fa, c.fb, nonkdim);
      const std::string shape = nonkdim == 32 ? "32x32x64" : "16x16x128";
      // A warp's 32x32 of C an iteration: two 64-wide K steps of one 32x32x64, or 2x2
      // 16x16x128 of one K step, in the loop.
      const std::string mfma = "v_mfma_scale_f32_" + shape + "_f8f6f4";
      const int n = count_re(r.isa, mfma + " ");
      EXPECT_EQ(count_re(tltest::amd_loop(r.isa), mfma + " "), nonkdim == 32 ? 2 : 4) << r.isa;
      // Every one with both scales in VGPRs, byte 0, and the formats.
      const std::string full = mfma + R"( [av]\[\d+:\d+\], v\[\d+:\d+\], v\[\d+:\d+\], ([av]\[\d+:\d+\]|0), )" +
                               R"(v\d+, v\d+ op_sel_hi:\[0,0,0\])" + c.formats + R"(\s)";
      EXPECT_EQ(count_re(r.isa, full), n) << r.isa;
      EXPECT_EQ(count_re(r.isa, R"(v_mfma_f32_\w+)"), 0) << "an unscaled or upcast MFMA\n" << r.isa;
      EXPECT_EQ(count_re(r.isa, R"(ds_read_(u8|i8|u16|i16|b32)\b|ds_read2_b32)"), 0) << "a narrow LDS read\n" << r.isa;
      EXPECT_GE(count_re(r.isa, R"(ds_read_b128)"), 2) << r.isa;
      EXPECT_EQ(r.report.at("spill_vgpr").get<int>(), 0) << r.report.dump();
      const int vgprs = r.report.at("vgpr").get<int>();
      std::printf("dot_scaled 64x64x128 4 warps K 8192, %s, gfx950 %s: %d VGPRs (Triton 3.6: %d), 0 spills\n", c.what,
                  shape.c_str(), vgprs, c.triton_vgprs);
      EXPECT_LE(vgprs, c.triton_vgprs) << r.report.dump();
    }
  // gfx942: the upcast, bf16 MFMAs, no spills.
  const ScaledCompile g = compile_scaled<tl::ty::f4e2m1, tl::ty::f4e2m1>("gfx942", E2M1, E2M1, 0);
  EXPECT_GT(count_re(g.isa, R"(v_mfma_f32_\w+_bf16)"), 0) << g.isa;
  EXPECT_EQ(count_re(g.isa, R"(v_mfma_scale)"), 0);
  EXPECT_EQ(g.report.at("spill_vgpr").get<int>(), 0);
}

}  // namespace

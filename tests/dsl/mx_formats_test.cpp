// The OCP MX storage types (tl::f4e2m1: two e2m1 values a byte, tl::e8m0: scale codes),
// run on the test device (the CPU in CI, TL_DEVICE=cuda on the H100):
//  - the host conversions (tl/numeric.hpp) against OCP MX v1.0's tables: the 16 e2m1
//    values, e8m0 codes 0 / 127 / 254 / 255, round-to-nearest-even ties;
//  - the device conversions: every byte (every pair of codes) decoded to f32 and bf16 as
//    the table says, f32 and bf16 encoded as the host does (ties, saturation, NaN, -0,
//    subnormals, random values), e8m0 both ways for every code;
//  - loads and stores of packed tiles: masked (ragged columns, untouched bytes kept),
//    a 3-D tile and a 1-D one through a round trip.
// Outputs are poisoned before each run.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/reference.hpp"
#include "tl/numeric.hpp"

using namespace tltest;

namespace {

// OCP MX v1.0, table 5 (FP4 E2M1): code -> value.
const double kOcpE2m1[16] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0};

bool same(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

template <class H> std::vector<H> from_bytes(const std::vector<uint8_t>& b) {
  std::vector<H> h(b.size() / sizeof(H));
  std::memcpy(static_cast<void*>(h.data()), b.data(), h.size() * sizeof(H));
  return h;
}
template <class H> std::vector<uint8_t> to_bytes(const std::vector<H>& h) {
  std::vector<uint8_t> b(h.size() * sizeof(H));
  std::memcpy(b.data(), static_cast<const void*>(h.data()), b.size());
  return b;
}

TEST(MxHost, E2m1MatchesOcpTable) {
  for (int c = 0; c < 16; ++c) {
    EXPECT_TRUE(same(tl::e2m1_to_double(uint8_t(c)), kOcpE2m1[c])) << c;
    EXPECT_EQ(tl::to_e2m1(kOcpE2m1[c]), c) << c;
  }
  // Ties go to the even code (mantissa bit 0), saturation at +-6, NaN to +-6.
  const std::pair<double, int> cases[] = {{0.25, 0}, {0.75, 2}, {1.25, 2}, {1.75, 4}, {2.5, 4}, {3.5, 6}, {5.0, 6},
                                          {-0.25, 8}, {-5.0, 14}, {0.2500001, 1}, {4.9999, 6}, {5.0001, 7},
                                          {1e9, 7}, {-INFINITY, 15}, {1e-40, 0}};
  for (auto [x, code] : cases) EXPECT_EQ(tl::to_e2m1(x), code) << x;
  EXPECT_EQ(tl::to_e2m1(std::numeric_limits<double>::quiet_NaN()), 7);
  EXPECT_EQ(tl::fp4x2(1.0, -6.0).bits, 0xF2);  // the first value in the low nibble
}

TEST(MxHost, E8m0MatchesOcpTable) {
  EXPECT_EQ(tl::e8m0_to_double(0), std::ldexp(1.0, -127));
  EXPECT_EQ(tl::e8m0_to_double(127), 1.0);
  EXPECT_EQ(tl::e8m0_to_double(254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(tl::e8m0_to_double(255)));
  EXPECT_EQ(tl::to_e8m0(1.0f), 127);
  EXPECT_EQ(tl::to_e8m0(1.4999f), 127);
  EXPECT_EQ(tl::to_e8m0(1.5f), 128);  // a tie rounds up (the implicit bit is odd), as PyTorch
  EXPECT_EQ(tl::to_e8m0(-4.0f), 129);  // no sign
  EXPECT_EQ(tl::to_e8m0(0.0f), 0);
  EXPECT_EQ(tl::to_e8m0(std::ldexp(1.0f, -127)), 0);
  EXPECT_EQ(tl::to_e8m0(std::ldexp(1.0f, 127)), 254);
  EXPECT_EQ(tl::to_e8m0(3.0e38f), 254);
  EXPECT_EQ(tl::to_e8m0(INFINITY), 254);
  EXPECT_EQ(tl::to_e8m0(NAN), 255);
}

// y = x.to<f32>(), yb = x.to<bf16>() for an f4e2m1 tile [R, C] (R x 2C values).
auto& decode_kernel() {
  static auto k = tl::kernel("fp4_decode", [](tl::ptr<tl::f4e2m1> x, tl::ptr<tl::f32> y, tl::ptr<tl::bf16> yb, int R,
                                               int C) {
    auto rows = tl::expand_dims(tl::arange(0, R), 1);
    auto v = tl::load(x + rows * C + tl::expand_dims(tl::arange(0, C), 0));
    auto out = rows * (2 * C) + tl::expand_dims(tl::arange(0, 2 * C), 0);
    tl::store(y + out, v.to<tl::f32>());
    tl::store(yb + out, v.to<tl::bf16>());
  });
  return k;
}

TEST(MxDevice, EveryByteDecodesAsOcpTable) {
  std::vector<uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[size_t(i)] = uint8_t(i);  // every (low, high) pair of codes
  auto x = upload<tl::ty::f4e2m1>(from_bytes<tl::float4_e2m1x2>(bytes));
  auto y = test_device().alloc<tl::ty::f32>(512);
  auto yb = test_device().alloc<tl::ty::bf16>(512);
  poison(y), poison(yb);
  decode_kernel()[tl::grid(1)](x, y, yb, 16, 16);
  auto got = y.download();
  auto gotb = yb.download();
  for (int i = 0; i < 256; ++i)
    for (int h = 0; h < 2; ++h) {
      double want = kOcpE2m1[h ? i >> 4 : i & 15];
      EXPECT_TRUE(same(got[size_t(2 * i + h)], want)) << "byte " << i << (h ? " high" : " low") << ": " << got[size_t(2 * i + h)];
      EXPECT_TRUE(same(tl::to_float(gotb[size_t(2 * i + h)]), want)) << "bf16, byte " << i;
    }
}

// y = x.to<f4e2m1>() and yb = xb.to<f4e2m1>(), [R, C] values -> [R, C / 2] bytes.
auto& encode_kernel() {
  static auto k = tl::kernel("fp4_encode", [](tl::ptr<tl::f32> x, tl::ptr<tl::bf16> xb, tl::ptr<tl::f4e2m1> y,
                                               tl::ptr<tl::f4e2m1> yb, int R, int C) {
    auto rows = tl::expand_dims(tl::arange(0, R), 1);
    auto in = rows * C + tl::expand_dims(tl::arange(0, C), 0);
    auto out = rows * (C / 2) + tl::expand_dims(tl::arange(0, C / 2), 0);
    tl::store(y + out, tl::load(x + in).to<tl::f4e2m1>());
    tl::store(yb + out, tl::load(xb + in).to<tl::f4e2m1>());
  });
  return k;
}

TEST(MxDevice, EncodesRoundingToNearestEvenSaturating) {
  const int R = 32, C = 64;
  std::vector<float> x;
  for (double v : kOcpE2m1) x.push_back(float(v));
  // ties, their neighbours, saturation, NaN, zeros, subnormals
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f})
    for (float s : {1.0f, -1.0f}) {
      x.push_back(s * t);
      x.push_back(std::nextafter(s * t, 0.0f));
      x.push_back(std::nextafter(s * t, s * INFINITY));
    }
  for (float v : {7.0f, -100.0f, 3e38f, INFINITY, -INFINITY, NAN, -NAN, -0.0f, 1e-30f, -1e-45f, 0.2499999f, 0.1f})
    x.push_back(v);
  auto r = random_floats(size_t(R) * C - x.size(), -8.0f, 8.0f);
  x.insert(x.end(), r.begin(), r.end());
  std::vector<tl::bfloat16> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = tl::to_bf16(x[i]);
  auto dx = upload<tl::ty::f32>(x);
  auto dxb = upload<tl::ty::bf16>(xb);
  auto y = test_device().alloc<tl::ty::f4e2m1>(size_t(R) * C / 2);
  auto yb = test_device().alloc<tl::ty::f4e2m1>(size_t(R) * C / 2);
  poison(y), poison(yb);
  encode_kernel()[tl::grid(1)](dx, dxb, y, yb, R, C);
  auto got = to_bytes(y.download()), gotb = to_bytes(yb.download());
  for (size_t i = 0; i < got.size(); ++i) {
    uint8_t want = uint8_t(tl::to_e2m1(x[2 * i]) | tl::to_e2m1(x[2 * i + 1]) << 4);
    uint8_t wantb = uint8_t(tl::to_e2m1(tl::to_float(xb[2 * i])) | tl::to_e2m1(tl::to_float(xb[2 * i + 1])) << 4);
    EXPECT_EQ(int(got[i]), int(want)) << "f32 " << x[2 * i] << ", " << x[2 * i + 1];
    EXPECT_EQ(int(gotb[i]), int(wantb)) << "bf16 " << tl::to_float(xb[2 * i]) << ", " << tl::to_float(xb[2 * i + 1]);
  }
}

// The e8m0 codes both ways: d = s.to<f32>() (every code), q = x.to<e8m0>(), qb = xb.to<e8m0>().
auto& e8m0_kernel() {
  static auto k = tl::kernel("e8m0_convert", [](tl::ptr<tl::e8m0> s, tl::ptr<tl::f32> d, tl::ptr<tl::bf16> db,
                                                 tl::ptr<tl::f32> x, tl::ptr<tl::bf16> xb, tl::ptr<tl::e8m0> q,
                                                 tl::ptr<tl::e8m0> qb, int N) {
    auto i = tl::arange(0, N);
    auto codes = tl::load(s + i);
    tl::store(d + i, codes.to<tl::f32>());
    tl::store(db + i, codes.to<tl::bf16>());
    tl::store(q + i, tl::load(x + i).to<tl::e8m0>());
    tl::store(qb + i, tl::load(xb + i).to<tl::e8m0>());
  });
  return k;
}

TEST(MxDevice, E8m0BothWays) {
  const int N = 256;
  std::vector<tl::float8_e8m0> codes(N);
  for (int i = 0; i < N; ++i) codes[size_t(i)].bits = uint8_t(i);
  std::vector<float> x = {1.0f, 1.5f, 1.4999f, -4.0f, 0.0f, -0.0f, std::ldexp(1.0f, -127), std::ldexp(1.0f, -127) * 1.5f,
                          std::ldexp(1.0f, -127) * 1.51f, std::ldexp(1.0f, -149), std::ldexp(1.0f, 127), 3e38f,
                          INFINITY, -INFINITY, NAN};
  for (int e = -126; e <= 127; e += 3) x.push_back(std::ldexp(1.0f, e) * (1.0f + float(e & 7) / 8));
  auto r = random_floats(size_t(N) - x.size(), -1e6f, 1e6f);
  x.insert(x.end(), r.begin(), r.end());
  std::vector<tl::bfloat16> xb(x.size());
  for (size_t i = 0; i < x.size(); ++i) xb[i] = tl::to_bf16(x[i]);
  auto s = upload<tl::ty::e8m0>(codes);
  auto d = test_device().alloc<tl::ty::f32>(N);
  auto db = test_device().alloc<tl::ty::bf16>(N);
  auto q = test_device().alloc<tl::ty::e8m0>(N), qb = test_device().alloc<tl::ty::e8m0>(N);
  poison(d), poison(db), poison(q), poison(qb);
  e8m0_kernel()[tl::grid(1)](s, d, db, upload<tl::ty::f32>(x), upload<tl::ty::bf16>(xb), q, qb, N);
  auto gd = d.download();
  auto gdb = db.download();
  auto gq = q.download(), gqb = qb.download();
  for (int c = 0; c < N; ++c) {
    double want = c == 255 ? NAN : std::ldexp(1.0, c - 127);  // OCP: 2^(code - 127), 255 NaN
    EXPECT_TRUE(same(gd[size_t(c)], want)) << "code " << c << ": " << gd[size_t(c)];
    EXPECT_TRUE(same(tl::to_float(gdb[size_t(c)]), want)) << "bf16, code " << c;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(int(gq[i].bits), int(tl::to_e8m0(x[i]))) << x[i];
    EXPECT_EQ(int(gqb[i].bits), int(tl::to_e8m0(tl::to_float(xb[i])))) << tl::to_float(xb[i]);
  }
}

// Packed tiles through masks: the first `cols` bytes of each row are written, then read
// back with the rest masked (other = code 0, +0 pairs); 3-D and 1-D tiles round-trip.
auto& packed_memory_kernel() {
  static auto k = tl::kernel("fp4_packed_memory", [](tl::ptr<tl::f32> x, tl::ptr<tl::f4e2m1> y, tl::ptr<tl::f32> back,
                                                      tl::ptr<tl::f32> x3, tl::ptr<tl::f32> back3, tl::ptr<tl::f32> x1,
                                                      tl::ptr<tl::f32> back1, tl::i32 cols, int R, int C) {
    auto rows = tl::expand_dims(tl::arange(0, R), 1);
    auto c = tl::expand_dims(tl::arange(0, C), 0);
    auto mask = tl::broadcast_to(c < cols, {R, C});
    auto values = tl::load(x + rows * (2 * C) + tl::expand_dims(tl::arange(0, 2 * C), 0));
    tl::store(y + rows * C + c, values.to<tl::f4e2m1>(), mask);
    auto again = tl::load(y + rows * C + c, mask, 0);
    tl::store(back + rows * (2 * C) + tl::expand_dims(tl::arange(0, 2 * C), 0), again.to<tl::f32>());
    // [2, 4, 16] values through [2, 4, 8] bytes, and [32] through [16]
    auto i3 = tl::expand_dims(tl::expand_dims(tl::arange(0, 2), 1), 2) * 64 +
              tl::expand_dims(tl::expand_dims(tl::arange(0, 4), 0), 2) * 16 +
              tl::expand_dims(tl::expand_dims(tl::arange(0, 16), 0), 0);
    tl::store(back3 + i3, tl::load(x3 + i3).to<tl::f4e2m1>().to<tl::f32>());
    auto i1 = tl::arange(0, 32);
    tl::store(back1 + i1, tl::load(x1 + i1).to<tl::f4e2m1>().to<tl::f32>());
  });
  return k;
}

TEST(MxDevice, PackedTilesLoadAndStoreThroughMasks) {
  const int R = 16, C = 32, cols = 21;  // a ragged edge inside the bytes of a row
  auto x = random_floats(size_t(R) * 2 * C, -7.0f, 7.0f);
  auto x3 = random_floats(128, -7.0f, 7.0f), x1 = random_floats(32, -7.0f, 7.0f);
  auto y = test_device().alloc<tl::ty::f4e2m1>(size_t(R) * C);
  auto back = test_device().alloc<tl::ty::f32>(size_t(R) * 2 * C);
  auto back3 = test_device().alloc<tl::ty::f32>(128), back1 = test_device().alloc<tl::ty::f32>(32);
  poison(y), poison(back), poison(back3), poison(back1);
  packed_memory_kernel()[tl::grid(1)](upload<tl::ty::f32>(x), y, back, upload<tl::ty::f32>(x3), back3,
                                      upload<tl::ty::f32>(x1), back1, cols, R, C);
  auto bytes = to_bytes(y.download());
  auto got = back.download();
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      size_t i = size_t(r) * C + size_t(c);
      if (c >= cols) {
        EXPECT_EQ(int(bytes[i]), 0xAB) << "a masked-off byte was written: row " << r << " byte " << c;
        EXPECT_TRUE(same(got[2 * i], 0.0) && same(got[2 * i + 1], 0.0)) << "masked-off load, row " << r;
        continue;
      }
      EXPECT_EQ(int(bytes[i]), int(tl::to_e2m1(x[2 * i]) | tl::to_e2m1(x[2 * i + 1]) << 4)) << r << ", " << c;
      EXPECT_TRUE(same(got[2 * i], tl::e2m1_to_double(tl::to_e2m1(x[2 * i])))) << r << ", " << c;
      EXPECT_TRUE(same(got[2 * i + 1], tl::e2m1_to_double(tl::to_e2m1(x[2 * i + 1])))) << r << ", " << c;
    }
  auto g3 = back3.download(), g1 = back1.download();
  for (size_t i = 0; i < 128; ++i) EXPECT_TRUE(same(g3[i], tl::e2m1_to_double(tl::to_e2m1(x3[i])))) << "3-D " << i;
  for (size_t i = 0; i < 32; ++i) EXPECT_TRUE(same(g1[i], tl::e2m1_to_double(tl::to_e2m1(x1[i])))) << "1-D " << i;
}

// The conversions are integer and shape ops every target lowers: each kernel above compiles
// for the GPUs too (run there with TL_DEVICE), without spills on AMD.
TEST(MxDevice, KernelsCompileForEveryGpuTarget) {
  tl::device cpu = tl::cpu_device();
  tl::buffer<tl::ty::f32> f(cpu, 1024), f2(cpu, 1024);
  tl::buffer<tl::ty::bf16> b(cpu, 1024), b2(cpu, 1024);
  tl::buffer<tl::ty::f4e2m1> p(cpu, 1024), p2(cpu, 1024);
  tl::buffer<tl::ty::e8m0> s(cpu, 1024), s2(cpu, 1024), s3(cpu, 1024);
  for (const char* target : {"gfx90a", "gfx942", "gfx950", "sm_90"}) {
    const tl::launch_options o{.num_warps = 4};
    std::vector<std::string> metas = {
        decode_kernel().compile(target, o, p, f, b, 16, 16),
        encode_kernel().compile(target, o, f, b, p, p2, 32, 64),
        e8m0_kernel().compile(target, o, s, f, b, f2, b2, s2, s3, 256),
        packed_memory_kernel().compile(target, o, f, p, f2, f, f2, f, f2, 21, 16, 32)};
    for (const auto& m : metas) {
      auto report = nlohmann::json::parse(m).at("report");
      if (target[0] != 'g') continue;  // NVIDIA's spills are ptxas's, not in the report
      ASSERT_TRUE(report.contains("spill_vgpr")) << report.dump();
      EXPECT_EQ(report.at("spill_vgpr").get<int>(), 0) << target;
    }
  }
}

}  // namespace

// tl's random numbers against Triton's own (tests/data/philox_triton_3.6.json, made by
// tests/data/philox_reference.py with Triton 3.6 on an H100): for int32, negative and int64
// seeds, int32 and int64 offset tiles (negatives, values at the ends of their ranges) and
// 10 and 7 rounds, randint4x, randint, rand and rand4x give Triton's bits exactly on the
// test device; randn (whose bits follow each target's log, sqrt, cos) agrees to a few ulp.
// Then the misuses, and tutorial 04's seeded dropout, transcribed.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr int N = 64;

// TL_TEST_DATA_DIR: where the GPU machine's bundle put tests/data (no source tree there).
nlohmann::json reference() {
  const char* dir = std::getenv("TL_TEST_DATA_DIR");
  const std::string path = (dir ? std::string(dir) : std::string(TL_SOURCE_DIR) + "/tests/data") + "/philox_triton_3.6.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

struct Draws {
  std::vector<uint32_t> int4x, randint, rand, rand4x;
  std::vector<float> randn;
};

// Every entry point for one (seed type, offset type): S and O are tl::i32 or tl::i64.
template <class S, class O> Draws draw(int64_t seed, const std::vector<int64_t>& offsets, int n_rounds) {
  static auto k = tl::kernel("philox_draws", [](S seed, tl::ptr<typename O::elem> offs_ptr, tl::ptr<tl::u32> int4x,
                                                tl::ptr<tl::u32> ri, tl::ptr<tl::f32> r, tl::ptr<tl::f32> r4,
                                                tl::ptr<tl::f32> rn, int rounds) {
    auto i = tl::arange(0, N);
    auto offs = tl::load(offs_ptr + i);
    auto four = tl::randint4x(seed, offs, rounds);
    for (int w : tl::static_range(4)) tl::store(int4x + w * N + i, four[size_t(w)]);
    tl::store(ri + i, tl::randint(seed, offs, rounds));
    tl::store(r + i, tl::rand(seed, offs, rounds));
    auto u = tl::rand4x(seed, offs, rounds);
    for (int w : tl::static_range(4)) tl::store(r4 + w * N + i, u[size_t(w)]);
    tl::store(rn + i, tl::randn(seed, offs, rounds));
  });
  std::vector<typename tl::buffer<typename O::elem>::host_t> ho(offsets.begin(), offsets.end());
  auto Offs = upload<typename O::elem>(ho);
  auto I4 = test_device().alloc<ty::u32>(4 * N), RI = test_device().alloc<ty::u32>(N);
  auto R = test_device().alloc<ty::f32>(N), R4 = test_device().alloc<ty::f32>(4 * N), RN = test_device().alloc<ty::f32>(N);
  poison(I4), poison(RI), poison(R), poison(R4), poison(RN);
  using SeedHost = std::conditional_t<std::is_same_v<S, tl::i32>, int32_t, int64_t>;
  k[tl::grid(1)](SeedHost(seed), Offs, I4, RI, R, R4, RN, n_rounds);
  Draws d;
  d.int4x = I4.download(), d.randint = RI.download();
  for (float f : R.download()) d.rand.push_back(bits(f));
  for (float f : R4.download()) d.rand4x.push_back(bits(f));
  d.randn = RN.download();
  return d;
}

}  // namespace

TEST(Random, BitsEqualTritons) {
  auto ref = reference();
  ASSERT_EQ(ref["meta"]["n"].get<int>(), N);
  int checked = 0;
  for (auto& c : ref["cases"]) {
    const int64_t seed = c["seed"].get<int64_t>();
    const bool seed64 = seed < INT32_MIN || seed > INT32_MAX;  // Triton's int argument specialization
    const bool offs64 = c["offsets_dtype"] == "i64";
    const int rounds = c["n_rounds"].get<int>();
    auto offsets = c["offsets"].get<std::vector<int64_t>>();
    SCOPED_TRACE(testing::Message() << "seed " << seed << (seed64 ? " (i64)" : " (i32)") << ", offsets "
                                    << c["offsets_dtype"].get<std::string>() << ", n_rounds " << rounds);
    Draws d = seed64 ? (offs64 ? draw<tl::i64, tl::i64>(seed, offsets, rounds) : draw<tl::i64, tl::i32>(seed, offsets, rounds))
                     : (offs64 ? draw<tl::i32, tl::i64>(seed, offsets, rounds) : draw<tl::i32, tl::i32>(seed, offsets, rounds));
    std::vector<uint32_t> int4x;
    for (auto& w : c["randint4x"]) for (auto v : w) int4x.push_back(v.get<uint32_t>());
    std::vector<uint32_t> rand4x;
    for (auto& w : c["rand4x"]) for (auto v : w) rand4x.push_back(v.get<uint32_t>());
    EXPECT_EQ(d.int4x, int4x);
    EXPECT_EQ(d.randint, c["randint"].get<std::vector<uint32_t>>());
    EXPECT_EQ(d.rand, c["rand"].get<std::vector<uint32_t>>());
    EXPECT_EQ(d.rand4x, rand4x);
    auto want_n = c["randn"].get<std::vector<uint32_t>>();
    for (int e = 0; e < N; ++e) {
      float want = std::bit_cast<float>(want_n[size_t(e)]);
      // log, sqrt, cos: a few ulp apart between targets' implementations (Triton's libdevice here)
      EXPECT_NEAR(d.randn[size_t(e)], want, 4e-6 * (1.0 + std::fabs(want))) << "randn element " << e;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

// Uniform floats stay in [0, 1) and normals look standard over many draws; umulhi is the
// high word of the 64-bit product, for signed and unsigned tiles.
TEST(Random, UniformRangeNormalMomentsAndUmulhi) {
  constexpr int B = 1024;
  auto k = tl::kernel("rand_stats", [](tl::ptr<tl::f32> u, tl::ptr<tl::f32> n, tl::ptr<tl::u32> a, tl::ptr<tl::u32> b,
                                       tl::ptr<tl::u32> hu, tl::ptr<tl::i32> hs, tl::i32 seed) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    tl::store(u + offs, tl::rand(seed, offs));
    tl::store(n + offs, tl::randn(seed, offs));
    auto x = tl::load(a + offs), y = tl::load(b + offs);
    tl::store(hu + offs, tl::umulhi(x, y));
    tl::store(hs + offs, tl::umulhi(x.bitcast<ty::i32>(), y.bitcast<ty::i32>()));
  });
  const int P = 16;
  std::vector<uint32_t> ha(size_t(P) * B), hb(ha.size());
  for (size_t i = 0; i < ha.size(); ++i) ha[i] = uint32_t(rng()()), hb[i] = uint32_t(rng()());
  ha[0] = hb[0] = 0xFFFFFFFFu;
  auto U = test_device().alloc<ty::f32>(ha.size()), Nn = test_device().alloc<ty::f32>(ha.size());
  auto A = upload<ty::u32>(ha), Bb = upload<ty::u32>(hb);
  auto HU = test_device().alloc<ty::u32>(ha.size());
  auto HS = test_device().alloc<ty::i32>(ha.size());
  poison(U), poison(Nn), poison(HU), poison(HS);
  k[tl::grid(P)](U, Nn, A, Bb, HU, HS, 1234);
  auto u = U.download(), n = Nn.download();
  auto hu = HU.download();
  auto hs = HS.download();
  double mean = 0, var = 0;
  for (size_t i = 0; i < u.size(); ++i) {
    ASSERT_GE(u[i], 0.0f) << i;
    ASSERT_LT(u[i], 1.0f) << i;
    mean += n[i], var += double(n[i]) * n[i];
    uint32_t want = uint32_t((uint64_t(ha[i]) * hb[i]) >> 32);
    ASSERT_EQ(hu[i], want) << i;
    ASSERT_EQ(uint32_t(hs[i]), want) << i;
  }
  mean /= double(u.size()), var = var / double(u.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var, 1.0, 0.05);
}

// Triton's tutorial 04, _seeded_dropout: the mask comes from tl.rand(seed, offsets), so
// the same seed drops the same elements, and another seed others.
TEST(Random, Tutorial04SeededDropout) {
  constexpr int BLOCK_SIZE = 1024;
  auto _seeded_dropout = tl::kernel("_seeded_dropout", [](tl::ptr<tl::f32> x_ptr, tl::ptr<tl::f32> output_ptr,
                                                          tl::i32 n_elements, tl::f32 p, tl::i32 seed) {
    // compute memory offsets of elements handled by this instance
    auto pid = tl::program_id(0);
    auto block_start = pid * BLOCK_SIZE;
    auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
    // load data from x
    auto mask = offsets < n_elements;
    auto x = tl::load(x_ptr + offsets, mask);
    // randomly prune it
    auto random = tl::rand(seed, offsets);
    auto x_keep = random > p;
    // write-back
    auto output = tl::where(x_keep, x / (1 - p), 0.0f);
    tl::store(output_ptr + offsets, output, mask);
  });
  const int n = 3000;
  auto hx = random_floats(n, 0.5f, 2.0f);  // never 0: a zero output is a dropped element
  auto X = upload<ty::f32>(hx);
  std::vector<std::vector<float>> outs;
  for (int seed : {123, 123, 512}) {
    auto O = test_device().alloc<ty::f32>(n);
    poison(O);
    _seeded_dropout[tl::grid(int(tl::cdiv(n, BLOCK_SIZE)))](X, O, n, 0.5f, seed);
    outs.push_back(O.download());
  }
  EXPECT_EQ(outs[0], outs[1]);
  int kept = 0, differ = 0;
  for (int i = 0; i < n; ++i) {
    bool keep = outs[0][size_t(i)] != 0.0f;
    kept += keep;
    differ += keep != (outs[2][size_t(i)] != 0.0f);
    if (keep) EXPECT_FLOAT_EQ(outs[0][size_t(i)], hx[size_t(i)] / 0.5f) << i;
  }
  EXPECT_GT(kept, n / 2 - 150);
  EXPECT_LT(kept, n / 2 + 150);
  EXPECT_GT(differ, n / 4);
}

TEST(Random, NonPositiveRoundsIsATraceErrorAtTheLine) {
  const unsigned line = __LINE__ + 2;
  auto k = tl::kernel("rand_rounds", [](tl::ptr<tl::f32> y) {
    tl::store(y + tl::arange(0, 16), tl::rand(7, tl::arange(0, 16), 0));
  });
  auto Y = test_device().alloc<ty::f32>(16);
  try {
    k[tl::grid(1)](Y);
    ADD_FAILURE() << "no error";
  } catch (const tl::trace_error& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("n_rounds must be positive"), std::string::npos) << e.what();
  }
}

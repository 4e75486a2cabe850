// Triton tutorial 04 (python/tutorials/04-low-memory-dropout.py): the baseline `_dropout`
// (the keep mask an int32 tensor read from memory) and `_seeded_dropout`, whose mask is
// `tl.rand(seed, offsets) > p`, against a host Philox 4x32-10 written from Triton's
// triton/language/random.py (its constants, key schedule and uint_to_uniform_float).
#include <bit>

#include "conformance/common.hpp"

namespace {
using namespace conformance;

auto _dropout = tl::kernel("_dropout", [](tl::ptr<tl::f32> x_ptr,       // pointer to the input
                                          tl::ptr<tl::i32> x_keep_ptr,  // pointer to a mask of 0s and 1s
                                          tl::ptr<tl::f32> output_ptr,  // pointer to the output
                                          tl::i32 n_elements,           // number of elements in the `x` tensor
                                          tl::f32 p,  // probability that an element of `x` is changed to zero
                                          int BLOCK_SIZE) {
  auto pid = tl::program_id(0);
  auto block_start = pid * BLOCK_SIZE;
  auto offsets = block_start + tl::arange(0, BLOCK_SIZE);
  auto mask = offsets < n_elements;
  // Load data
  auto x = tl::load(x_ptr + offsets, mask);
  auto x_keep = tl::load(x_keep_ptr + offsets, mask);
  // The line below is the crucial part, described in the paragraph above!
  // (Triton's tl.where takes the int32 mask as its condition; tl's wants an i1.)
  auto output = tl::where(x_keep != 0, x / (1 - p), 0.0);
  // Write-back output
  tl::store(output_ptr + offsets, output, mask);
});

TEST(Tutorial04, Dropout) {
  conformance::note_partial("tl.where of an integer condition");
  for (int n : {10, 3000}) {
    const float p = 0.5f;
    std::vector<float> hx(n);
    std::normal_distribution<float> randn;
    for (auto& v : hx) v = randn(rng());
    std::vector<int32_t> keep(n);
    std::uniform_real_distribution<float> rand;
    for (auto& k : keep) k = rand(rng()) > p;
    auto x = upload<tl::f32>(hx);
    auto x_keep = upload<tl::i32>(keep);
    auto output = tl::buffer<tl::ty::f32>(test_device(), n);
    poison(output);
    _dropout[tl::grid(tl::cdiv(n, 1024))](x, x_keep, output, n, p, 1024);
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[i] = keep[i] ? double(hx[i] / (1 - p)) : 0.0;
    EXPECT_TRUE(close(output.download(), want, 0, 0, "output")) << n;
  }
}

auto _seeded_dropout = tl::kernel("_seeded_dropout", [](tl::ptr<tl::f32> x_ptr, tl::ptr<tl::f32> output_ptr,
                                                        tl::i32 n_elements, tl::f32 p, tl::i32 seed, int BLOCK_SIZE) {
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
  auto output = tl::where(x_keep, x / (1 - p), 0.0);
  tl::store(output_ptr + offsets, output, mask);
});

// Triton's tl.rand(seed, offset) on the host: philox(seed, offset, 0, 0, 0) with 10 rounds,
// its first word read as an int32, folded onto the non-negatives, times 4.6566127342e-10.
float host_rand(int32_t seed, int32_t offset) {
  uint64_t s = uint64_t(int64_t(seed));
  uint32_t k0 = uint32_t(s), k1 = uint32_t(s >> 32);
  uint32_t c0 = uint32_t(offset), c1 = 0, c2 = 0, c3 = 0;
  auto umulhi = [](uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * b) >> 32); };
  for (int r = 0; r < 10; ++r) {
    uint32_t p0 = c0, p2 = c2;
    c0 = umulhi(0xCD9E8D57u, p2) ^ c1 ^ k0;
    c2 = umulhi(0xD2511F53u, p0) ^ c3 ^ k1;
    c1 = 0xCD9E8D57u * p2;
    c3 = 0xD2511F53u * p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  int32_t v = std::bit_cast<int32_t>(c0);
  if (v < 0) v = -v - 1;
  return float(v) * 4.6566127342e-10f;
}

TEST(Tutorial04, SeededDropout) {
  const int n = 3000;
  const float p = 0.5f;
  std::vector<float> hx(n);
  std::normal_distribution<float> randn;
  for (auto& v : hx) v = randn(rng());
  auto x = upload<tl::f32>(hx);
  std::vector<std::vector<float>> outputs;
  for (int seed : {123, 123, 512}) {
    auto output = tl::buffer<tl::ty::f32>(test_device(), n);
    poison(output);
    _seeded_dropout[tl::grid(tl::cdiv(n, 1024))](x, output, n, p, seed, 1024);
    std::vector<double> want(n);
    int kept = 0;
    for (int i = 0; i < n; ++i) {
      bool keep = host_rand(seed, i) > p;
      kept += keep;
      want[size_t(i)] = keep ? double(hx[size_t(i)] / (1 - p)) : 0.0;
    }
    EXPECT_TRUE(close(output.download(), want, 0, 0, "output")) << "seed " << seed;
    EXPECT_NEAR(kept, n * (1 - p), 5 * std::sqrt(n * p * (1 - p))) << "seed " << seed;  // the mask is uniform
    outputs.push_back(output.download());
  }
  // the same seed gives the same mask, another seed another one
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_NE(outputs[0], outputs[2]);
}

}  // namespace

// tl::amd's copies straight into shared memory (global_load_to_shared, async_wait,
// load_shared_relaxed: Gluon's AMD async_copy), run on the test device (the CPU in CI;
// TL_DEVICE=cuda runs them on an NVIDIA GPU through cp.async). The Gluon idiom: a
// double-buffered loop that prefetches the next block into stage (k+1)%2, waits until
// at most that one copy is outstanding, and reads the current stage relaxed. It must
// give exactly what plain loads give, masked-off rows holding `other`. The same through
// buffer_load_to_shared (a scalar base and i32 offsets; Gluon's cdna4 op, global_load_to_shared's
// semantics on the CPU and NVIDIA; its gfx950 code is tested in amdgpu_buffer_test).
#include <cstring>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr int kR = 32, kC = 32, kBlock = kR * kC;

// Each block k of x ([nb, 32, 32]) goes through the pipeline and out to y[k]; rows at or
// past `rows` are masked off and must read as 7. The prefetch is issued every iteration
// (masked off past the last block) so that async_wait(1) always leaves only the copy
// just issued outstanding.
template <class E, bool BUFFER = false> void pipeline(const char* name) {
  using H = typename E::host;
  auto k = tl::kernel(name, [](tl::ptr<E> x, tl::ptr<E> y, tl::i32 nblocks, tl::i32 rows) {
    auto r = tl::arange(0, kR), c = tl::arange(0, kC);
    auto offs = tl::expand_dims(r, 1) * kC + tl::expand_dims(c, 0);
    auto row_ok = tl::broadcast_to(tl::expand_dims(r < rows, 1), {kR, kC});
    auto buf = tl::shared<E>({2, kR, kC});
    auto copy = [&](const tl::shared_stage<E>& stage, const tl::i32& block, const tl::i1& mask) {
      if constexpr (BUFFER) tl::amd::buffer_load_to_shared(stage, x, block * kBlock + offs, mask, 7);
      else tl::amd::global_load_to_shared(stage, x + block * kBlock + offs, mask, 7);
    };
    copy(buf[0], tl::i32(0), row_ok);
    for (auto kk : tl::range(0, nblocks)) {
      tl::i32 next = kk + 1;
      auto in_range = tl::broadcast_to(tl::expand_dims(r < rows, 1), {kR, kC}) & (tl::full<tl::i32>({kR, kC}, 0) + next < nblocks);
      copy(buf[next % 2], next, in_range);
      tl::amd::async_wait(1);
      tl::store(y + kk * kBlock + offs, tl::amd::load_shared_relaxed(buf[kk % 2]));
    }
  });
  const int nb = 5, rows = 24;
  std::vector<H> h(nb * kBlock);
  for (auto& v : h) {
    uint64_t bits = rng()();
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(H));
  }
  // `other` as the kernel converts it (7 in the element type), read back bit for bit.
  H seven{};
  {
    auto one = tl::kernel(std::string(name) + "_seven", [](tl::ptr<E> o) { tl::store(o + tl::arange(0, 1), tl::full<E>({1}, 7)); });
    auto O = test_device().alloc<E>(1);
    one[tl::grid(1)](O);
    seven = O.download()[0];
  }
  auto X = upload<E>(h);
  auto Y = test_device().alloc<E>(nb * kBlock);
  poison(Y);
  k[tl::grid(1)](X, Y, nb, rows);
  auto y = Y.download();
  int bad = 0;
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < kR; ++i)
      for (int j = 0; j < kC; ++j) {
        int at = b * kBlock + i * kC + j;
        const H& want = i < rows ? h[at] : seven;
        bad += std::memcmp(&y[at], &want, sizeof(H)) != 0;
      }
  EXPECT_EQ(bad, 0) << name << ": elements not what a masked tl::load with other = 7 gives";
}

}  // namespace

TEST(AsyncCopy, DoubleBufferedPipelineCopiesEveryDtypeBitExact) {
  pipeline<ty::i8>("acp_i8");
  pipeline<ty::i16>("acp_i16");
  pipeline<ty::i32>("acp_i32");
  pipeline<ty::i64>("acp_i64");
  pipeline<ty::u8>("acp_u8");
  pipeline<ty::u16>("acp_u16");
  pipeline<ty::u32>("acp_u32");
  pipeline<ty::u64>("acp_u64");
  pipeline<ty::f16>("acp_f16");
  pipeline<ty::bf16>("acp_bf16");
  pipeline<ty::f32>("acp_f32");
  pipeline<ty::f64>("acp_f64");
  pipeline<ty::f8e4m3fn>("acp_f8e4m3fn");
  pipeline<ty::f8e5m2>("acp_f8e5m2");
  pipeline<ty::f8e4m3fnuz>("acp_f8e4m3fnuz");
  pipeline<ty::f8e5m2fnuz>("acp_f8e5m2fnuz");
}

TEST(AsyncCopy, BufferLoadToSharedCopiesLikeGlobalLoadToShared) {
  pipeline<ty::i8, true>("acpb_i8");
  pipeline<ty::bf16, true>("acpb_bf16");
  pipeline<ty::f32, true>("acpb_f32");
  pipeline<ty::f64, true>("acpb_f64");
}

// The same reduction (column sums of every block, in f32) through the async pipeline and
// through plain loads: identical results, both near a double-precision reference.
TEST(AsyncCopy, PipelineMatchesPlainLoadsAndADoubleReference) {
  auto async_k = tl::kernel("acp_colsum", [](tl::ptr<tl::bf16> x, tl::ptr<tl::f32> s, tl::i32 nblocks) {
    auto r = tl::arange(0, kR), c = tl::arange(0, kC);
    auto offs = tl::expand_dims(r, 1) * kC + tl::expand_dims(c, 0);
    auto buf = tl::shared<tl::bf16>({2, kR, kC});
    tl::amd::global_load_to_shared(buf[0], x + offs);
    auto acc = tl::zeros<tl::f32>({kC});
    for (auto kk : tl::range(0, nblocks)) {
      tl::i32 next = kk + 1;
      auto m = tl::full<tl::i32>({kR, kC}, 0) + next < nblocks;
      tl::amd::global_load_to_shared(buf[next % 2], x + next * kBlock + offs, m);
      tl::amd::async_wait(1);
      acc = acc + tl::sum(tl::amd::load_shared_relaxed(buf[kk % 2]).to<tl::f32>(), 0);
    }
    tl::store(s + c, acc);
  });
  auto plain_k = tl::kernel("acp_colsum_plain", [](tl::ptr<tl::bf16> x, tl::ptr<tl::f32> s, tl::i32 nblocks) {
    auto r = tl::arange(0, kR), c = tl::arange(0, kC);
    auto offs = tl::expand_dims(r, 1) * kC + tl::expand_dims(c, 0);
    auto acc = tl::zeros<tl::f32>({kC});
    for (auto kk : tl::range(0, nblocks)) acc = acc + tl::sum(tl::load(x + kk * kBlock + offs).to<tl::f32>(), 0);
    tl::store(s + c, acc);
  });
  const int nb = 6;
  auto f = random_floats(nb * kBlock);
  std::vector<tl::bfloat16> h(f.size());
  for (size_t i = 0; i < f.size(); ++i) h[i] = tl::to_bf16(f[i]);
  auto X = upload<ty::bf16>(h);
  auto SA = test_device().alloc<tl::f32>(kC), SP = test_device().alloc<tl::f32>(kC);
  poison(SA);
  poison(SP);
  async_k[tl::grid(1)](X, SA, nb);
  plain_k[tl::grid(1)](X, SP, nb);
  std::vector<double> want(kC, 0.0);
  for (int b = 0; b < nb; ++b)
    for (int i = 0; i < kR; ++i)
      for (int j = 0; j < kC; ++j) want[j] += tl::to_float(h[b * kBlock + i * kC + j]);
  auto sa = SA.download(), sp = SP.download();
  // Bit-identical where both sum in the same order (the CPU); on a GPU the relaxed read
  // may land in another layout (its users'), so the cross-thread order may differ.
  if (!on_gpu()) {
    EXPECT_EQ(std::memcmp(sa.data(), sp.data(), sa.size() * sizeof(float)), 0) << "async and plain loads differ";
  } else {
    EXPECT_TRUE(near(sa, std::vector<double>(sp.begin(), sp.end()), 1e-6, 1e-6));
  }
  EXPECT_TRUE(near(sa, want, 1e-5, 1e-4));
}

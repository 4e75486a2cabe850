// The attention sample's kernels (samples/attention/attention.hpp) on the test device (the
// CPU in CI, a GPU with TL_DEVICE) against the double reference (samples/attention/
// reference.hpp): O, LSE, dQ, dK, dV for causal and not, G = 1, 4, 8, D = 64 and 128 (256
// forward), S = 1, 17, 128, 1000, S_q != S_k both ways (S_q > S_k causal leaves rows that see
// no key), bf16 and f16, outputs poisoned first. Then bad input: each a clear error before
// anything is launched (the outputs stay poisoned).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "samples/attention/attention.hpp"
#include "samples/attention/reference.hpp"
#include "support/reference.hpp"

using namespace tltest;

namespace {

struct Case {
  attention::Problem p;
  attention::Config fwd, dkdv, dq;
  bool f16 = false;
  bool backward = true;
};

std::string describe(const Case& c) {
  return fmt::format("{} {} fwd {} dkdv {} dq {}", c.p.str(), c.f16 ? "f16" : "bf16", attention::str(c.fwd),
                     attention::str(c.dkdv), attention::str(c.dq));
}

void expect_ok(const attention::Errors& e, const Case& c, const char* what) {
  EXPECT_TRUE(e.ok()) << describe(c) << ": " << what << ": " << e.bad << " wrong and " << e.nan << " NaN of "
                      << e.checked << ", the first at " << e.first << ", worst " << e.worst << " of the bound";
}

template <class E> void run(const Case& c) {
  using H = attention::host_t<E>;
  const attention::Problem& p = c.p;
  auto in = attention::random_inputs<H>(p, uint64_t(p.S_q * 7919 + p.S_k * 31 + p.D + p.H * 5 + p.causal));
  auto Q = upload<E>(in.q), K = upload<E>(in.k), V = upload<E>(in.v), DO = upload<E>(in.d_o);
  auto dev = test_device();
  auto O = dev.alloc<E>(size_t(p.q_elems()));
  auto LSE = dev.alloc<tl::ty::f32>(size_t(p.rows()));
  poison(O), poison(LSE);
  attention::forward<E>(c.fwd, p, Q, K, V, O, LSE);
  auto want = attention::reference(p, in, c.backward);
  expect_ok(attention::compare(O.download(), want.o, want.o_bound), c, "O");
  expect_ok(attention::compare(LSE.download(), want.lse, want.lse_bound), c, "LSE");
  if (!c.backward) return;
  auto Delta = dev.alloc<tl::ty::f32>(size_t(p.rows()));
  auto DQ = dev.alloc<E>(size_t(p.q_elems())), DK = dev.alloc<E>(size_t(p.kv_elems())),
       DV = dev.alloc<E>(size_t(p.kv_elems()));
  poison(Delta), poison(DQ), poison(DK), poison(DV);
  attention::backward<E>(c.dkdv, c.dq, p, Q, K, V, O, DO, LSE, Delta, DQ, DK, DV);
  expect_ok(attention::compare(DQ.download(), want.dq, want.dq_bound), c, "dQ");
  expect_ok(attention::compare(DK.download(), want.dk, want.dk_bound), c, "dK");
  expect_ok(attention::compare(DV.download(), want.dv, want.dv_bound), c, "dV");
}

void run(const Case& c) { c.f16 ? run<tl::ty::f16>(c) : run<tl::ty::bf16>(c); }

attention::Problem problem(int64_t B, int64_t H, int64_t Hkv, int64_t S_q, int64_t S_k, int64_t D, bool causal) {
  attention::Problem p;
  p.B = B, p.H = H, p.Hkv = Hkv, p.S_q = S_q, p.S_k = S_k, p.D = D, p.causal = causal;
  return p;
}

// Small blocks, so that every loop runs several iterations and the diagonal spans several
// key blocks (BLOCK_M 32 over BLOCK_N 16) or part of one (16 over 32), with and without
// pipelining.
const attention::Config kFwdA{32, 16, 4, 2, 0, 0}, kFwdB{16, 32, 4, 1, 0, 0}, kFwdC{64, 32, 4, 3, 0, 0};
const attention::Config kDkdvA{16, 32, 4, 2, 0, 0}, kDkdvB{32, 16, 4, 1, 0, 0};
const attention::Config kDqA{32, 16, 4, 2, 0, 0}, kDqB{16, 32, 4, 3, 0, 0};

TEST(AttentionSample, EqualLengthsBothMasks) {
  for (bool causal : {false, true}) run({problem(1, 2, 2, 128, 128, 64, causal), kFwdA, kDkdvA, kDqA});
}

TEST(AttentionSample, GroupedQueryHeadsF16D128) {
  // G = 4 (two key heads of four query heads each, two batches), S = 17: one ragged block.
  for (bool causal : {false, true}) run({problem(2, 8, 2, 17, 17, 128, causal), kFwdB, kDkdvB, kDqB, true});
}

TEST(AttentionSample, DecodeRowsAgainstLongerKeys) {
  // S_q < S_k: one query row (decode), and 17 rows over 300 keys; G = 8.
  run({problem(1, 8, 1, 1, 200, 64, true), kFwdA, kDkdvA, kDqA});
  run({problem(1, 8, 1, 17, 300, 128, false), kFwdC, kDkdvB, kDqA});
  run({problem(1, 8, 1, 17, 300, 64, true), kFwdB, kDkdvA, kDqB, true});
}

TEST(AttentionSample, RowsThatSeeNoKey) {
  // Causal with S_q > S_k: the first S_q - S_k rows see no key (O 0, LSE +inf, no gradient).
  run({problem(1, 4, 1, 200, 17, 64, true), kFwdA, kDkdvA, kDqA});
  run({problem(1, 2, 2, 100, 64, 64, true), kFwdC, kDkdvB, kDqB});
  run({problem(1, 1, 1, 1, 1, 64, false), kFwdA, kDkdvA, kDqA});
  run({problem(1, 1, 1, 1, 1, 128, true), kFwdB, kDkdvB, kDqB, true});
}

TEST(AttentionSample, LongSequence) {
  run({problem(1, 1, 1, 1000, 1000, 64, true), kFwdC, kDkdvA, kDqA});
  run({problem(1, 1, 1, 1000, 1000, 64, false), kFwdA, kDkdvB, kDqB, true});
}

TEST(AttentionSample, ForwardD256) {
  for (bool causal : {false, true}) run({problem(1, 4, 2, 100, 77, 256, causal), kFwdA, kDkdvA, kDqA, false, false});
}

// Every misuse is refused before a launch: the outputs keep their poison.
TEST(AttentionSample, BadInputIsAClearErrorBeforeAnyLaunch) {
  auto dev = test_device();
  auto p = problem(1, 4, 2, 32, 32, 64, false);
  auto Q = dev.alloc<tl::ty::bf16>(size_t(p.q_elems())), K = dev.alloc<tl::ty::bf16>(size_t(p.kv_elems()));
  auto V = dev.alloc<tl::ty::bf16>(size_t(p.kv_elems())), O = dev.alloc<tl::ty::bf16>(size_t(p.q_elems()));
  auto LSE = dev.alloc<tl::ty::f32>(size_t(p.rows()));
  poison(O);
  const auto poisoned = O.download();
  auto expect_refused = [&](const attention::Problem& bad, const attention::Config& c, const std::string& says) {
    try {
      attention::forward<tl::ty::bf16>(c, bad, Q, K, V, O, LSE);
      ADD_FAILURE() << bad.str() << ": no error, expected one saying '" << says << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    auto now = O.download();
    EXPECT_EQ(0, std::memcmp(now.data(), poisoned.data(), now.size() * sizeof(now[0]))) << bad.str() << " launched";
  };
  auto with = [&](auto change) {
    auto b = p;
    change(b);
    return b;
  };
  expect_refused(with([](auto& b) { b.Hkv = 3; }), kFwdA, "H must be a multiple of Hkv");
  expect_refused(with([](auto& b) { b.D = 48; }), kFwdA, "D must be 16, 32, 64, 128 or 256");
  expect_refused(with([](auto& b) { b.D = 512; }), kFwdA, "D must be");
  expect_refused(with([](auto& b) { b.S_q = 0; }), kFwdA, "S_q and S_k must be positive");
  expect_refused(with([](auto& b) { b.S_k = -5; }), kFwdA, "S_q and S_k must be positive");
  expect_refused(with([](auto& b) { b.Hkv = 0; }), kFwdA, "B, H and Hkv must be positive");
  expect_refused(with([](auto& b) { b.sm_scale = -0.5; }), kFwdA, "sm_scale must be positive");
  expect_refused(with([](auto& b) { b.sm_scale = std::numeric_limits<double>::infinity(); }), kFwdA, "sm_scale");
  expect_refused(with([](auto& b) { b.S_q = 64; }), kFwdA, "Q has 8192 elements, the problem needs 16384");
  expect_refused(with([](auto& b) { b.H = 8; b.Hkv = 4; }), kFwdA, "Q has");
  expect_refused(with([](auto& b) { b.S_k = 31; }), kFwdA, "K has 4096 elements, the problem needs 3968");
  expect_refused(with([](auto& b) { b.B = int64_t(1) << 20; b.S_q = b.S_k = 1024; }), kFwdA, "2^31");
  expect_refused(p, {48, 16, 4, 1, 0, 0}, "BLOCK_M and BLOCK_N must be powers of two");
  expect_refused(p, {32, 8, 4, 1, 0, 0}, "BLOCK_M and BLOCK_N");
  expect_refused(p, {32, 16, 3, 1, 0, 0}, "num_warps must be");
  expect_refused(p, {32, 16, 4, 0, 0, 0}, "num_stages must be 1 to 8");
  // The backward checks its own buffers: a dK of the query heads' size.
  auto DO = dev.alloc<tl::ty::bf16>(size_t(p.q_elems())), DQ = dev.alloc<tl::ty::bf16>(size_t(p.q_elems()));
  auto DK = dev.alloc<tl::ty::bf16>(size_t(p.q_elems())), DV = dev.alloc<tl::ty::bf16>(size_t(p.kv_elems()));
  auto Delta = dev.alloc<tl::ty::f32>(size_t(p.rows()));
  poison(DQ);
  auto dq_before = DQ.download();
  try {
    attention::backward<tl::ty::bf16>(kDkdvA, kDqA, p, Q, K, V, O, DO, LSE, Delta, DQ, DK, DV);
    ADD_FAILURE() << "a dK of the wrong length was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dK has 8192 elements, the problem needs 4096"), std::string::npos) << e.what();
  }
  auto dq_now = DQ.download();
  EXPECT_EQ(0, std::memcmp(dq_now.data(), dq_before.data(), dq_now.size() * sizeof(dq_now[0])));
}

}  // namespace

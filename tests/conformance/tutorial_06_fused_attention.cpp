// Triton tutorial 06 (python/tutorials/06-fused-attention.py), the forward pass:
// `_attn_fwd` and `_attn_fwd_inner` with the tutorial's STAGE scheme (causal: the
// off-band blocks with STAGE 1, then the diagonal block with STAGE 2 and its mask; not
// causal: STAGE 3 over the whole row), exp2 online softmax, `l_i` starting at 1, the
// row log-sum-exp M stored, f16 Q K V O over Z x H heads of N_CTX x HEAD_DIM.
//
// The tutorial loads and stores through tensor descriptors (`desc_k.load([offsetk_y, 0])`):
// tl has none (gap "tensor descriptors"), so each descriptor access is a pointer tile at
// the same rows of the same [Z * H * N_CTX, HEAD_DIM] matrix. warp_specialize is off (gap).
#include <limits>

#include "conformance/common.hpp"

namespace {
using namespace conformance;

// desc.load([row, 0]) of a [rows, HEAD_DIM] block of a row-major [y_dim, HEAD_DIM] matrix
tl::f16 desc_load(const tl::ptr<tl::f16>& base, const tl::i32& row, int rows, int HEAD_DIM) {
  auto r = row + tl::arange(0, rows);
  return tl::load(base + tl::expand_dims(r, 1) * HEAD_DIM + tl::expand_dims(tl::arange(0, HEAD_DIM), 0));
}

void _attn_fwd_inner(tl::f32& acc, tl::f32& l_i, tl::f32& m_i, const tl::f16& q,  //
                     const tl::ptr<tl::f16>& desc_k, const tl::ptr<tl::f16>& desc_v,  //
                     const tl::i32& offset_y, const tl::i32& start_m, const tl::f32& qk_scale,  //
                     int BLOCK_M, int HEAD_DIM, int BLOCK_N,  //
                     int STAGE, const tl::i32& offs_m, const tl::i32& offs_n,  //
                     const tl::i32& N_CTX) {
  // range of values handled by this stage
  tl::i32 lo, hi;
  if (STAGE == 1) {
    lo = 0, hi = start_m * BLOCK_M;
  } else if (STAGE == 2) {
    lo = start_m * BLOCK_M, hi = (start_m + 1) * BLOCK_M;
    lo = tl::multiple_of(lo, BLOCK_M);
  } else {  // causal = False
    lo = 0, hi = N_CTX;
  }
  auto offsetk_y = offset_y + lo;
  auto offsetv_y = offset_y + lo;
  // loop over k, v and update accumulator
  for (auto start_n_ : tl::range(lo, hi, BLOCK_N)) {
    auto start_n = tl::multiple_of(start_n_, BLOCK_N);
    // -- compute qk ----
    auto k = tl::trans(desc_load(desc_k, offsetk_y, BLOCK_N, HEAD_DIM));
    auto qk = tl::dot(q, k);
    tl::f32 m_ij;  // assigned in both branches below, as Triton's
    if (STAGE == 2) {
      auto mask = tl::expand_dims(offs_m, 1) >= (start_n + tl::expand_dims(offs_n, 0));
      qk = qk * qk_scale + tl::where(mask, 0.0, -1.0e6);  // Triton: tl.where(mask, 0, -1.0e6)
      m_ij = tl::maximum(m_i, tl::max(qk, 1));
      qk -= tl::expand_dims(m_ij, 1);
    } else {
      m_ij = tl::maximum(m_i, tl::max(qk, 1) * qk_scale);
      qk = qk * qk_scale - tl::expand_dims(m_ij, 1);
    }
    auto p = tl::exp2(qk);
    // -- compute correction factor
    auto alpha = tl::exp2(m_i - m_ij);
    auto l_ij = tl::sum(p, 1);
    // -- update output accumulator --
    acc = acc * tl::expand_dims(alpha, 1);
    // prepare p and v for the dot
    auto v = desc_load(desc_v, offsetv_y, BLOCK_N, HEAD_DIM);
    auto p16 = p.to<tl::f16>();  // p = p.to(dtype)
    acc = tl::dot(p16, v, acc);
    // update m_i and l_i
    // place this at the end of the loop to reduce register pressure
    l_i = l_i * alpha + l_ij;
    m_i = m_ij;
    offsetk_y += BLOCK_N;
    offsetv_y += BLOCK_N;
  }
}

auto _attn_fwd = tl::kernel("_attn_fwd", [](tl::f32 sm_scale, tl::ptr<tl::f32> M,  //
                                            tl::i32 Z, tl::i32 H, tl::ptr<tl::f16> desc_q, tl::ptr<tl::f16> desc_k,
                                            tl::ptr<tl::f16> desc_v, tl::ptr<tl::f16> desc_o, tl::i32 N_CTX,  //
                                            int HEAD_DIM, int BLOCK_M, int BLOCK_N, int STAGE) {
  auto start_m = tl::program_id(0);
  auto off_hz = tl::program_id(1);
  auto off_z = off_hz / H;
  auto off_h = off_hz % H;

  auto offset_y = off_z * (N_CTX * H) + off_h * N_CTX;
  auto qo_offset_y = offset_y + start_m * BLOCK_M;
  // initialize offsets
  auto offs_m = start_m * BLOCK_M + tl::arange(0, BLOCK_M);
  auto offs_n = tl::arange(0, BLOCK_N);
  // initialize pointer to m and l
  auto m_i = tl::zeros<tl::f32>({BLOCK_M}) - std::numeric_limits<float>::infinity();
  auto l_i = tl::zeros<tl::f32>({BLOCK_M}) + 1.0;
  auto acc = tl::zeros<tl::f32>({BLOCK_M, HEAD_DIM});
  // load scales
  auto qk_scale = sm_scale;
  qk_scale *= 1.44269504;  // 1/log(2)
  // load q: it will stay in SRAM throughout
  auto q = desc_load(desc_q, qo_offset_y, BLOCK_M, HEAD_DIM);
  // stage 1: off-band
  // For causal = True, STAGE = 3 and _attn_fwd_inner gets 1 as its STAGE
  // For causal = False, STAGE = 1, and _attn_fwd_inner gets 3 as its STAGE
  if (STAGE & 1)
    _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N,
                    4 - STAGE, offs_m, offs_n, N_CTX);
  // stage 2: on-band
  if (STAGE & 2)
    _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, start_m, qk_scale, BLOCK_M, HEAD_DIM, BLOCK_N, 2,
                    offs_m, offs_n, N_CTX);
  // epilogue
  m_i += tl::log2(l_i);
  acc = acc / tl::expand_dims(l_i, 1);
  auto m_ptrs = M + off_hz * N_CTX + offs_m;
  tl::store(m_ptrs, m_i);
  // desc_o.store([qo_offset_y, 0], acc.to(dtype))
  auto rows = qo_offset_y + tl::arange(0, BLOCK_M);
  tl::store(desc_o + tl::expand_dims(rows, 1) * HEAD_DIM + tl::expand_dims(tl::arange(0, HEAD_DIM), 0),
            acc.to<tl::f16>());
});

void test_op(int Z, int H, int N_CTX, int HEAD_DIM, bool causal, int BLOCK_M, int BLOCK_N) {
  SCOPED_TRACE(::testing::Message() << "Z " << Z << " H " << H << " N_CTX " << N_CTX << " HEAD_DIM " << HEAD_DIM
                                    << (causal ? " causal" : ""));
  ASSERT_LE(BLOCK_N, HEAD_DIM);  // the kernel's tl.static_assert
  const double sm_scale = 0.5;
  const size_t n = size_t(Z) * H * N_CTX * HEAD_DIM;
  // q, k, v = torch.empty(...).normal_(mean=0.0, std=0.5)
  std::normal_distribution<double> normal(0.0, 0.5);
  std::vector<tl::half> hq(n), hk(n), hv(n);
  for (auto* h : {&hq, &hk, &hv})
    for (auto& x : *h) x = tl::to_f16(normal(rng()));
  auto q = upload<tl::f16>(hq), k = upload<tl::f16>(hk), v = upload<tl::f16>(hv);
  auto o = output<tl::f16>(n);
  auto M = output<tl::f32>(size_t(Z) * H * N_CTX);
  int stage = causal ? 3 : 1;
  _attn_fwd[tl::grid(tl::cdiv(N_CTX, BLOCK_M), Z * H)].with({.num_warps = 4, .num_stages = 2})(
      float(sm_scale), M, Z, H, q, k, v, o, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N, stage);

  std::vector<double> o_ref(n), m_ref(size_t(Z) * H * N_CTX);
  for (int zh = 0; zh < Z * H; ++zh)
    for (int i = 0; i < N_CTX; ++i) {
      size_t qi = (size_t(zh) * N_CTX + i) * HEAD_DIM;
      std::vector<double> s(N_CTX, -std::numeric_limits<double>::infinity());
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < (causal ? i + 1 : N_CTX); ++j) {
        size_t kj = (size_t(zh) * N_CTX + j) * HEAD_DIM;
        double dot = 0;
        for (int d = 0; d < HEAD_DIM; ++d) dot += to_double(hq[qi + d]) * to_double(hk[kj + d]);
        s[j] = dot * sm_scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int j = 0; j < N_CTX; ++j) sum += std::exp(s[j] - mx);
      m_ref[size_t(zh) * N_CTX + i] = (mx + std::log(sum)) / std::log(2.0);  // log2 of sum_j exp(s_ij)
      for (int d = 0; d < HEAD_DIM; ++d) {
        double acc = 0;
        for (int j = 0; j < N_CTX; ++j) acc += std::exp(s[j] - mx) / sum * to_double(hv[(size_t(zh) * N_CTX + j) * HEAD_DIM + d]);
        o_ref[qi + d] = acc;
      }
    }
  // P is rounded to f16 for the second dot (2^-11 of each weight), O to f16.
  EXPECT_TRUE(close(o.download(), o_ref, 0x1p-10, 4e-3, "o"));
  EXPECT_TRUE(close(M.download(), m_ref, 1e-5, 1e-4, "M"));
}

TEST(Tutorial06, FusedAttentionForward) {
  conformance::note_partial("tensor descriptors");
  conformance::note_partial("warp_specialize");
  conformance::note_partial("tl.where of mixed literals");
  test_op(1, 2, 128, 64, false, 64, 32);
  test_op(2, 1, 128, 64, true, 64, 32);
}

}  // namespace

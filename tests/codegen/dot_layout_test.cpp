// tl::dot's matrix-core plans (codegen/gpu/dot_layout.cpp), checked on the host against
// the hardware's own description of each instruction: for every target's instructions,
// tile shapes, warp counts and kpack, the operands are distributed to (warp, lane,
// register) by the plan's layouts, the lowering's loop (lower_dot.cpp: K steps, M and N
// repetitions, kpack chunks, the plan's register indices) runs with each instruction
// simulated by the ISA's fragment formulas (written here independently of the layout
// code: AMD's Matrix Instruction Calculator, the PTX ISA's fragment tables), and the
// accumulator registers, read back through the plan's accumulator layout, must hold
// A.B exactly (small integers). This is the proof the MFMA path gets without an AMD GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>
#include <tuple>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/target.hpp"

namespace {

using namespace tl;
using namespace tl::gpu;

// The element of tile `shape` held at (warp, lane, register) under `l`.
uint32_t flat_of(const Layout& l, uint32_t w, uint32_t lane, uint32_t r) { return l.reg_part(r) ^ l.thread_part(lane, w); }

// One instruction as the hardware documents it: lane `l`'s A element e is A[row][k] with
// (row, k) = a_at(l, e); B element e is B[k][col] = b_at(l, e); accumulator element i is
// D[row][col] = c_at(l, i).
struct Hw {
  std::function<std::pair<int, int>(int, int)> a_at, b_at, c_at;
};

Hw hardware(const MatrixInstruction& mi) {
  Hw h;
  if (mi.family == MatrixFamily::fma) {
    // No warp instruction: each lane one FMA (input_precision ieee), lane l computing
    // D[l / 8][l % 8] of the m4n8 step from its own A[l / 8][k] and B[k][l % 8].
    h.a_at = [](int l, int) { return std::pair{l / 8, 0}; };
    h.b_at = [](int l, int) { return std::pair{0, l % 8}; };
    h.c_at = [](int l, int) { return std::pair{l / 8, l % 8}; };
    return h;
  }
  if (mi.family == MatrixFamily::amd_mfma) {
    // AMD Matrix Instruction Calculator (CDNA3), e.g. v_mfma_f32_32x32x8_bf16:
    // A[i][k]: lane = i + 32 * (k / 4), item k % 4; D[i][j]: lane = j + 32 * ((i / 4) % 2),
    // item = 4 * (i / 8) + i % 4. 16x16: D lane = j + 16 * (i / 4), item = i % 4.
    const int M = mi.m, kb = mi.k_per_lane;
    h.a_at = [=](int l, int e) { return std::pair{l % M, kb * (l / M) + e}; };
    h.b_at = [=](int l, int e) { return std::pair{kb * (l / M) + e, l % M}; };
    if (M == 32) h.c_at = [](int l, int i) { return std::pair{8 * (i / 4) + 4 * (l / 32) + i % 4, l % 32}; };
    else h.c_at = [](int l, int i) { return std::pair{4 * (l / 16) + i, l % 16}; };
  } else {
    // PTX ISA, "Matrix Fragments for mma.m16n8k16 / k32 / k8": groupID = lane >> 2,
    // threadID_in_group = lane % 4; `w` elements per 32-bit register, element e of the
    // lane's list is register e / w, byte/half e % w.
    const int w = 32 / bit_width(mi.a);
    h.a_at = [=](int l, int e) {
      int r = e / w, j = e % w, g = l >> 2, t = l % 4;
      return std::pair{g + 8 * (r & 1), w * t + j + 4 * w * (r >> 1)};
    };
    h.b_at = [=](int l, int e) {
      int r = e / w, j = e % w, g = l >> 2, t = l % 4;
      return std::pair{w * t + j + 4 * w * r, g};
    };
    h.c_at = [](int l, int i) { return std::pair{(l >> 2) + 8 * (i >> 1), 2 * (l % 4) + (i & 1)}; };
  }
  return h;
}

// Runs the dot as the lowering does and returns what the accumulator layout reads back.
std::vector<int64_t> simulate(const DotPlan& p, const std::vector<int64_t>& A, const std::vector<int64_t>& B, int M,
                              int N, int K, int num_warps) {
  const int lanes = p.lanes();
  const MatrixInstruction& mi = p.instr;
  Hw hw = hardware(mi);
  const int na = p.a.num_regs(), nb = p.b.num_regs(), nc = p.acc.num_regs();
  EXPECT_EQ(na, p.a_regs_per_step() * p.k_steps * p.reps_m);
  EXPECT_EQ(nb, p.b_regs_per_step() * p.k_steps * p.reps_n);
  EXPECT_EQ(nc, p.acc_regs_per_instr() * p.reps_m * p.reps_n);
  std::vector<int64_t> out(size_t(M) * N, 0);
  std::vector<int> written(size_t(M) * N, 0);
  for (int w = 0; w < num_warps; ++w) {
    // Registers of every lane of this warp.
    std::vector<std::vector<int64_t>> ra(lanes, std::vector<int64_t>(na)), rb(lanes, std::vector<int64_t>(nb)),
        rc(lanes, std::vector<int64_t>(nc, 0));
    for (int l = 0; l < lanes; ++l) {
      for (int r = 0; r < na; ++r) ra[l][r] = A[flat_of(p.a, w, l, r)];
      for (int r = 0; r < nb; ++r) rb[l][r] = B[flat_of(p.b, w, l, r)];
    }
    const int kl = mi.k_per_lane, klb = p.b_per_instr(), per = p.acc_regs_per_instr();
    for (int ks = 0; ks < p.k_steps; ++ks)
      for (int m = 0; m < p.reps_m; ++m)
        for (int n = 0; n < p.reps_n; ++n)
          for (int j = 0; j < p.kpack; ++j) {
            // The instruction: gather its A and B tiles from the lanes' fragments.
            std::vector<int64_t> ta(size_t(mi.m) * mi.k, INT64_MIN), tb(size_t(mi.k) * mi.n, INT64_MIN);
            // Swapped (AMD): the hardware's A is our B's fragment, its B our A's, and its
            // D[n][m] our C[m][n].
            const auto& first = p.swap_operands ? rb : ra;
            const auto& second = p.swap_operands ? ra : rb;
            const int r1 = p.swap_operands ? p.b_reg(n, ks) + j * klb : p.a_reg(m, ks) + j * kl;
            const int r2 = p.swap_operands ? p.a_reg(m, ks) + j * kl : p.b_reg(n, ks) + j * klb;
            for (int l = 0; l < lanes; ++l)
              for (int e = 0; e < std::max(kl, klb); ++e) {
                if (e < kl) {
                  auto [ar, ak] = hw.a_at(l, e);
                  ta.at(size_t(ar) * mi.k + ak) = first[l][r1 + e];
                }
                if (e < klb) {
                  auto [bk, bn] = hw.b_at(l, e);
                  tb.at(size_t(bk) * mi.n + bn) = second[l][r2 + e];
                }
              }
            for (int64_t x : ta) EXPECT_NE(x, INT64_MIN) << "an A element no lane supplies";
            for (int64_t x : tb) EXPECT_NE(x, INT64_MIN) << "a B element no lane supplies";
            for (int l = 0; l < lanes; ++l)
              for (int i = 0; i < per; ++i) {
                auto [cr, cc] = hw.c_at(l, i);  // of the hardware's D
                int64_t s = 0;
                for (int k = 0; k < mi.k; ++k) s += ta[size_t(cr) * mi.k + k] * tb[size_t(k) * mi.n + cc];
                rc[l][p.acc_reg(m, n) + i] += s;
              }
          }
    for (int l = 0; l < lanes; ++l)
      for (int r = 0; r < nc; ++r) {
        uint32_t f = flat_of(p.acc, w, l, r);
        if (written[f]) EXPECT_EQ(out[f], rc[l][r]) << "copies of element " << f << " disagree";
        out[f] = rc[l][r];
        written[f] = 1;
      }
  }
  for (size_t f = 0; f < written.size(); ++f) EXPECT_TRUE(written[f]) << "element " << f << " held by no thread";
  return out;
}

// Random small-integer A and B through the plan's simulated fragments, every product
// element checked against the plain loop (exact: integers).
void expect_exact_product(const DotPlan& p, int M, int N, int K, int num_warps, std::mt19937& rng) {
  std::vector<int64_t> A(size_t(M) * K), B(size_t(K) * N);
  for (auto& x : A) x = int(rng() % 15) - 7;
  for (auto& x : B) x = int(rng() % 15) - 7;
  auto got = simulate(p, A, B, M, N, K, num_warps);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t want = 0;
      for (int k = 0; k < K; ++k) want += A[size_t(m) * K + k] * B[size_t(k) * N + n];
      ASSERT_EQ(got[size_t(m) * N + n], want) << "C[" << m << "][" << n << "]";
    }
}

// A warpgroup plan (wgmma) against the PTX ISA's wgmma fragments ("Register fragments"
// of wgmma.mma_async, m64nNk*): warp w % 4 of warpgroup g holds rows 16 (w % 4) + (lane >> 2)
// + 8 ((i >> 1) & 1) and columns 8 (i >> 2) + 2 (lane % 4) + (i & 1) of accumulator element
// i, and A from registers the mma.sync m16n8k A fragment in those 16 rows; warpgroup g's
// instruction (mr, nr) starts at row 64 (g_m + wg_m mr), column n (g_n + wg_n nr), with
// g_m = g % wg_m, g_n = g / wg_m % wg_n: where the lowering points its descriptors
// (lower_warpgroup_dot.cpp). Every register of the plan's accumulator and A layouts must
// name exactly that element.
void expect_warpgroup_fragments(const DotPlan& p, int M, int N, int K, int num_warps) {
  const MatrixInstruction& mi = p.instr;
  const int wg_m = p.warps_m / 4, wg_n = p.warps_n, w = 32 / bit_width(mi.a);
  ASSERT_EQ(p.acc.num_regs(), p.acc_regs_per_instr() * p.reps_m * p.reps_n);
  ASSERT_EQ(p.a.num_regs(), p.a_regs_per_step() * p.k_steps * p.reps_m);
  for (int warp = 0; warp < num_warps; ++warp) {
    const int g = warp / 4, g_m = g % wg_m, g_n = g / wg_m % wg_n, row16 = 16 * (warp % 4);
    for (int lane = 0; lane < 32; ++lane)
      for (int mr = 0; mr < p.reps_m; ++mr) {
        const int row0 = 64 * (g_m + wg_m * mr) + row16 + (lane >> 2);
        for (int nr = 0; nr < p.reps_n; ++nr)
          for (int i = 0; i < p.acc_regs_per_instr(); ++i) {
            const int row = row0 + 8 * ((i >> 1) & 1), col = mi.n * (g_n + wg_n * nr) + 8 * (i >> 2) + 2 * (lane % 4) + (i & 1);
            ASSERT_EQ(flat_of(p.acc, warp, lane, p.acc_reg(mr, nr) + i), uint32_t(row * N + col))
                << "warp " << warp << " lane " << lane << " accumulator " << mr << "," << nr << " element " << i;
          }
        for (int ks = 0; ks < p.k_steps; ++ks)
          for (int e = 0; e < mi.k_per_lane; ++e) {
            const int r = e / w, j = e % w;
            const int row = row0 + 8 * (r & 1), k = ks * mi.k + w * (lane % 4) + j + 4 * w * (r >> 1);
            ASSERT_EQ(flat_of(p.a, warp, lane, p.a_reg(mr, ks) + e), uint32_t(row * K + k))
                << "warp " << warp << " lane " << lane << " A " << mr << "," << ks << " element " << e;
          }
      }
  }
}

void check_target(const std::string& arch) {
  auto caps = codegen::capabilities_for(codegen::parse_target(arch));
  ASSERT_FALSE(caps.matrix_instructions.empty()) << arch;
  std::mt19937 rng(7);
  int checked = 0;
  std::set<std::string> warpgroup_used;
  for (const auto& mi : caps.matrix_instructions) {
    if (mi.family == MatrixFamily::nvidia_wgmma) {
      for (int num_warps : {4, 8, 16})
        for (auto [M, N, K] : {std::tuple{64, 8, 64}, {64, 16, 32}, {64, 32, 64}, {128, 64, 64}, {64, 128, 128},
                               {128, 256, 64}, {256, 128, 32}, {64, 512, 64}, {256, 256, 64}}) {
          std::string why;
          DotRequest req;
          req.warpgroup = true;
          auto p = plan_dot(caps, mi.a, mi.b, M, N, K, num_warps, 32, req, why);
          if (!p || p->instr.name != mi.name) continue;
          SCOPED_TRACE(fmt::format("{} {} [{}x{}x{}] warps {}", arch, mi.name, M, N, K, num_warps));
          expect_warpgroup_fragments(*p, M, N, K, num_warps);
          if (::testing::Test::HasFatalFailure()) return;
          warpgroup_used.insert(mi.name);
        }
      EXPECT_TRUE(warpgroup_used.count(mi.name)) << arch << ": no shape selects " << mi.name;
      continue;
    }
    if (mi.scaled) continue;  // (tl::dot_scaled's: DotLayout.Gfx950ScaledMatchesTheIsa)
    for (int nonkdim : {0, 16, 32})
      for (int kpack : {1, 2})
        for (int num_warps : {1, 2, 4, 8})
          for (auto [M, N, K] : {std::tuple{16, 16, 128}, {32, 64, 64}, {64, 32, 256}, {128, 128, 32}, {16, 128, 64},
                                 {256, 16, 128}}) {
            std::string why;
            // AMD swaps the operands: the instruction for (x, y) is the table's (y, x).
            const bool amd = mi.family == MatrixFamily::amd_mfma;
            DotRequest req{nonkdim, kpack};
            req.ieee = mi.family == MatrixFamily::fma;  // (taken for input_precision ieee only)
            auto p = plan_dot(caps, amd ? mi.b : mi.a, amd ? mi.a : mi.b, M, N, K, num_warps, caps.wave_size, req, why);
            if (!p || p->instr.name != mi.name || p->instr.a != mi.a || p->instr.b != mi.b) continue;
            EXPECT_EQ(p->swap_operands, amd);
            SCOPED_TRACE(fmt::format("{} {} [{}x{}x{}] warps {} nonkdim {} kpack {}", arch, mi.name, M, N, K, num_warps,
                                     nonkdim, kpack));
            expect_exact_product(*p, M, N, K, num_warps, rng);
            if (::testing::Test::HasFatalFailure()) return;
            ++checked;
          }
  }
  // Every instruction of the table is reachable by some shape and options above.
  std::set<std::pair<std::string, int>> used;
  for (const auto& mi : caps.matrix_instructions) {
    if (mi.family == MatrixFamily::nvidia_wgmma || mi.scaled) continue;  // (checked above / below)
    bool any = false;
    for (int nonkdim : {16, 32})
      for (auto [M, N, K] : {std::tuple{32, 32, 128}, {16, 16, 128}, {32, 32, 64}, {32, 32, 16}, {16, 16, 32},
                             {16, 16, 16}, {32, 32, 8}, {16, 16, 4}, {32, 32, 2}}) {
        std::string why;
        const bool amd = mi.family == MatrixFamily::amd_mfma;
        DotRequest req{nonkdim, 1};
        req.ieee = mi.family == MatrixFamily::fma;
        auto p = plan_dot(caps, amd ? mi.b : mi.a, amd ? mi.a : mi.b, M, N, K, 4, caps.wave_size, req, why);
        any |= p && p->instr.name == mi.name && p->instr.a == mi.a && p->instr.b == mi.b;
      }
    EXPECT_TRUE(any) << arch << ": no shape selects " << mi.name << " for " << name(mi.a) << " x " << name(mi.b);
  }
  EXPECT_GT(checked, 20) << arch;
}

// gfx950's block-scaled MFMAs (v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4), as CDNA4
// and Triton's scaled-MFMA layouts describe them, written here apart from the plan's code:
// lane l of an operand holds row l % m; lane group g = l / m holds, of the instruction's k,
// FP8 elements 0-15 at 16 g + e and 16-31 at 16 (64 / m) + 16 g + (e - 16) (two runs), e2m1
// bytes e (two values each, the low nibble first) at 32 g + 2 e (one run); the scale
// register of lane l scales row l % m over the instruction's k from 32 (l / m) to
// 32 (l / m) + 31. The plan's layouts place A, B and both scales in (warp, lane, register);
// the lowering's loop runs each instruction on what the lanes hold, applying to every
// element the scale of its hardware block, and each element must meet exactly the scale
// of its own row (column of B) and logical 32 of K; the accumulator then holds
// (A 2^sa).(B 2^sb) exactly. On every shape, warp count and size that plans.
void expect_scaled_product(const DotPlan& p, int M, int N, int K, int num_warps, std::mt19937& rng) {
  const MatrixInstruction& mi = p.instr;
  const bool fp4 = mi.a == DType::f4e2m1;
  const int m = mi.m, groups = 64 / m, per = fp4 ? 2 : 1, Ks = K / per, kl = mi.k_per_lane;
  ASSERT_TRUE(p.swap_operands);
  ASSERT_EQ(p.kpack, 1);
  std::vector<int64_t> A(size_t(M) * K), B(size_t(K) * N);
  std::vector<int> SA(size_t(M) * K / 32), SB(size_t(N) * K / 32);
  for (auto& x : A) x = int(rng() % 7) - 3;
  for (auto& x : B) x = int(rng() % 7) - 3;
  for (auto& x : SA) x = int(rng() % 4);
  for (auto& x : SB) x = int(rng() % 4);
  // The instruction's k (0 .. 32 groups - 1) of lane l's element e (its byte's first value).
  auto hw_k = [&](int l, int e) {
    return fp4 ? 32 * (l / m) + 2 * e : e < 16 ? 16 * (l / m) + e : 16 * groups + 16 * (l / m) + e - 16;
  };
  std::vector<int64_t> out(size_t(M) * N, 0);
  for (int w = 0; w < num_warps; ++w) {
    std::vector<std::vector<int64_t>> acc(64, std::vector<int64_t>(size_t(p.acc.num_regs()), 0));
    for (int ks = 0; ks < p.k_steps; ++ks)
      for (int mr = 0; mr < p.reps_m; ++mr)
        for (int nr = 0; nr < p.reps_n; ++nr) {
          // Hardware A is our B^T ([n][k]), hardware B our A^T ([k][m]): per instruction row
          // (n or m) and k, the logical value and the exponent the hardware applies.
          struct El { int64_t v = INT64_MIN; int e = 0; };
          std::vector<El> ha(size_t(m) * 32 * groups), hb(size_t(m) * 32 * groups);
          for (int l = 0; l < 64; ++l) {
            for (int e = 0; e < kl; ++e)
              for (int half = 0; half < per; ++half) {
                const int k = hw_k(l, e) + half;
                // B's register: storage element [ks_byte][n] of our [Ks, N] B.
                const uint32_t fb = flat_of(p.b, w, l, p.b_reg(nr, ks) + e);
                const int n = int(fb % N), kb = int(fb / N) * per + half;
                // The scale the hardware applies to row l % m, k: lane (l % m) + m (k / 32)'s.
                const int lane_s = l % m + m * (k / 32);
                const uint32_t fs = flat_of(p.b_scale, w, lane_s, p.scale_reg(nr, ks));
                ASSERT_EQ(int(fs / (K / 32)), n) << "B row " << n << " meets another row's scale";
                ASSERT_EQ(int(fs % (K / 32)), kb / 32) << "B k " << kb << " meets another block's scale";
                ha[size_t(l % m) * 32 * groups + k] = {B[size_t(kb) * N + n], SB[fs]};
                const uint32_t fa = flat_of(p.a, w, l, p.a_reg(mr, ks) + e);
                const int row = int(fa / Ks), ka = int(fa % Ks) * per + half;
                const uint32_t ft = flat_of(p.a_scale, w, lane_s, p.scale_reg(mr, ks));
                ASSERT_EQ(int(ft / (K / 32)), row) << "A row " << row << " meets another row's scale";
                ASSERT_EQ(int(ft % (K / 32)), ka / 32) << "A k " << ka << " meets another block's scale";
                hb[size_t(l % m) * 32 * groups + k] = {A[size_t(row) * K + ka], SA[ft]};
              }
          }
          for (const El& x : ha) ASSERT_NE(x.v, INT64_MIN) << "a hardware A element no lane supplies";
          for (const El& x : hb) ASSERT_NE(x.v, INT64_MIN) << "a hardware B element no lane supplies";
          for (int l = 0; l < 64; ++l)
            for (int i = 0; i < p.acc_regs_per_instr(); ++i) {
              const int r = m == 32 ? 8 * (i / 4) + 4 * (l / 32) + i % 4 : 4 * (l / 16) + i, c = l % m;
              int64_t s = 0;
              for (int k = 0; k < 32 * groups; ++k) {
                const El &x = ha[size_t(r) * 32 * groups + k], &y = hb[size_t(c) * 32 * groups + k];
                s += (x.v << x.e) * (y.v << y.e);
              }
              acc[size_t(l)][size_t(p.acc_reg(mr, nr) + i)] += s;
            }
        }
    for (int l = 0; l < 64; ++l)
      for (int r = 0; r < p.acc.num_regs(); ++r) out[flat_of(p.acc, w, l, r)] = acc[size_t(l)][size_t(r)];
  }
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int k = 0; k < K; ++k)
        want += (A[size_t(i) * K + k] << SA[size_t(i) * (K / 32) + k / 32]) *
                (B[size_t(k) * N + j] << SB[size_t(j) * (K / 32) + k / 32]);
      ASSERT_EQ(out[size_t(i) * N + j], want) << "C[" << i << "][" << j << "]";
    }
}

}  // namespace

TEST(DotLayout, Gfx950ScaledMatchesTheIsa) {
  auto caps = codegen::capabilities_for(codegen::parse_target("gfx950"));
  std::mt19937 rng(11);
  std::set<std::string> used;
  for (const auto& mi : caps.matrix_instructions) {
    if (!mi.scaled) continue;
    const int per = mi.a == DType::f4e2m1 ? 2 : 1;
    for (int nonkdim : {16, 32})
      for (int num_warps : {1, 2, 4, 8})
        for (auto [M, N, K] : {std::tuple{32, 32, 128}, {64, 64, 128}, {64, 32, 256}, {128, 64, 512}, {16, 64, 128}}) {
          std::string why;
          DotRequest req{nonkdim, 1};
          req.scaled = true;
          auto p = plan_dot(caps, mi.b, mi.a, M, N, K / per, num_warps, 64, req, why);
          if (!p || p->instr.name != mi.name || p->instr.a != mi.a || p->instr.b != mi.b) continue;
          SCOPED_TRACE(
              fmt::format("{} {} x {} [{}x{}x{}] warps {}", mi.name, name(mi.a), name(mi.b), M, N, K, num_warps));
          expect_scaled_product(*p, M, N, K, num_warps, rng);
          if (::testing::Test::HasFatalFailure()) return;
          used.insert(mi.name + std::string(name(mi.a)) + std::string(name(mi.b)));
        }
  }
  // Both sizes, e2m1 x e2m1 and the four FP8 pairs.
  EXPECT_EQ(used.size(), 10u);
}

TEST(DotLayout, Gfx90aMatchesTheIsa) { check_target("gfx90a"); }
TEST(DotLayout, Gfx942MatchesTheIsa) { check_target("gfx942"); }
TEST(DotLayout, Gfx950MatchesTheIsa) { check_target("gfx950"); }
TEST(DotLayout, Sm80MatchesThePtxIsa) { check_target("sm_80"); }
TEST(DotLayout, Sm90MatchesThePtxIsa) { check_target("sm_90"); }

// A renumbering of K (A and B alike) or of N (B and the accumulator alike) changes which
// element a lane holds, never the product: the chained dots of a decode kernel take both
// (K to the first dot's accumulator columns on gfx950, N so that an 8-bit B's repetitions
// are consecutive columns on gfx942). Random bit permutations, every AMD target.
TEST(DotLayout, RenumberedKAndNKeepTheProduct) {
  std::mt19937 rng(11);
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    auto caps = codegen::capabilities_for(codegen::parse_target(arch));
    for (int num_warps : {1, 4})
      for (auto [M, N, K] : {std::tuple{16, 128, 64}, {16, 64, 64}, {32, 64, 128}, {16, 256, 32}})
        for (int which = 0; which < 3; ++which) {
          auto perm = [&](int n) {
            std::vector<uint32_t> bits;
            for (int b = 0; (1 << b) < n; ++b) bits.push_back(1u << b);
            std::shuffle(bits.begin(), bits.end(), rng);
            return bits;
          };
          DotRequest req{16, 1, 0, 0, {}};
          if (which != 1) req.k_perm = perm(K);
          if (which != 0) req.n_perm = perm(N);
          std::string why;
          auto p = plan_dot(caps, DType::bf16, DType::bf16, M, N, K, num_warps, 64, req, why);
          ASSERT_TRUE(p.has_value()) << why;
          SCOPED_TRACE(fmt::format("{} [{}x{}x{}] warps {} renumbering {}", arch, M, N, K, num_warps, which));
          expect_exact_product(*p, M, N, K, num_warps, rng);
          if (::testing::Test::HasFatalFailure()) return;
        }
  }
}

// The choices Triton users expect: 32x32 once M and N allow it, 16x16 below or when
// asked; the largest k dividing K; warps halving the larger repetition count; kpack kept
// only where K holds two instructions' k.
TEST(DotLayout, InstructionAndWarpChoice) {
  auto gfx942 = codegen::capabilities_for(codegen::parse_target("gfx942"));
  auto gfx950 = codegen::capabilities_for(codegen::parse_target("gfx950"));
  std::string why;
  auto p = plan_dot(gfx942, DType::bf16, DType::bf16, 128, 128, 64, 4, 64, DotRequest{0, 1}, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->instr.name, "v_mfma_f32_32x32x8_bf16");
  EXPECT_EQ(p->warps_m, 2);
  EXPECT_EQ(p->warps_n, 2);
  EXPECT_EQ(p->reps_m, 2);
  EXPECT_EQ(p->k_steps, 8);
  p = plan_dot(gfx942, DType::bf16, DType::bf16, 128, 128, 64, 4, 64, DotRequest{16, 2}, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->instr.name, "v_mfma_f32_16x16x16_bf16");
  EXPECT_EQ(p->kpack, 2);
  EXPECT_EQ(p->a_regs_per_step(), 8);  // one 128-bit read feeds two MFMAs
  p = plan_dot(gfx950, DType::bf16, DType::bf16, 128, 128, 64, 4, 64, DotRequest{0, 1}, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->instr.name, "v_mfma_f32_32x32x16_bf16");
  p = plan_dot(gfx950, DType::f8e4m3fn, DType::f8e4m3fn, 64, 64, 128, 4, 64, DotRequest{16, 1}, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->instr.name, "v_mfma_f32_16x16x128_f8f6f4");
  p = plan_dot(gfx942, DType::bf16, DType::bf16, 16, 64, 64, 4, 64, DotRequest{0, 1}, why);
  ASSERT_TRUE(p) << why;
  EXPECT_EQ(p->instr.m, 16);
  EXPECT_EQ(p->warps_n, 4);
  // Failures say why.
  EXPECT_FALSE(plan_dot(gfx942, DType::f8e4m3fn, DType::f8e4m3fn, 64, 64, 64, 4, 64, DotRequest{0, 1}, why));
  EXPECT_NE(why.find("no matrix instruction of gfx942 multiplies f8e4m3fn by f8e4m3fn"), std::string::npos) << why;
  EXPECT_FALSE(plan_dot(gfx942, DType::bf16, DType::bf16, 16, 16, 64, 4, 64, DotRequest{32, 1}, why));
  EXPECT_NE(why.find("with matrix_instr_nonkdim=32"), std::string::npos) << why;
}

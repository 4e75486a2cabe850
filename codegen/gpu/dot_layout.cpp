// The matrix-core plan of a tl::dot (dot_layout.hpp): instruction choice, warp split and
// the accumulator and operand layouts built from each family's fragment.
//
// Fragments, as images of the element-index and lane-id bits in (row, col) of the
// instruction's tile (A: [m, k], B: [k, n], accumulator: [m, n]):
//  - AMD MFMA (wave64; AMD's Matrix Instruction Calculator for CDNA2/CDNA3, Triton's
//    MFMA linear layouts for CDNA4): A row = lane % m, k = kb * (lane / m) + element (kb:
//    the lane's elements, k-packed); B likewise with n; accumulator col = lane % n, row =
//    element bits 0-1, then the lane groups above n, then the remaining element bits
//    (32x32: row = 8 (i / 4) + 4 (lane / 32) + i % 4; 16x16: row = 4 (lane / 16) + i).
//    gfx950's f8f6f4 instructions hold their 32 FP8 a lane in two halves of k; A and B
//    are laid out alike, so the contiguous numbering used here only permutes which
//    hardware k two elements meet at, the same for A and B.
//  - NVIDIA mma.sync m16n8kK (PTX ISA, "Matrix fragments for mma.m16n8k*"; groupID =
//    lane / 4, threadID_in_group = lane % 4, w elements per 32-bit register: 2 for 16-bit
//    types, 4 for 8-bit, 1 for tf32): A row = groupID + 8 (reg & 1), k = w threadID + j +
//    4w (reg >> 1); B k = w threadID + j + 4w reg, n = groupID; accumulator row =
//    groupID + 8 (i >> 1), col = 2 threadID + (i & 1).
#include "codegen/gpu/dot_layout.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tl/error.hpp"

namespace tl::gpu {
namespace {

struct Coord {
  int r = 0, c = 0;
};
struct Fragment {
  std::vector<Coord> elem, lane;  // per element-index bit, per lane-id bit
};

int lg(int x) { return log2_exact(x); }

Fragment transposed(Fragment f) {
  for (auto* v : {&f.elem, &f.lane})
    for (Coord& x : *v) std::swap(x.r, x.c);
  return f;
}

// MFMA operand [rows, k]: lane % rows -> row, lane / rows -> k group of kb elements.
Fragment mfma_operand(int rows, int kb) {
  Fragment f;
  for (int j = 0; j < lg(kb); ++j) f.elem.push_back({0, 1 << j});
  for (int j = 0; j < 6; ++j) f.lane.push_back(j < lg(rows) ? Coord{1 << j, 0} : Coord{0, kb << (j - lg(rows))});
  return f;
}

Fragment mfma_acc(const MatrixInstruction& mi) {
  Fragment f;
  const int elems = mi.m * mi.n / 64, groups = 6 - lg(mi.n);
  for (int j = 0; j < lg(mi.n); ++j) f.lane.push_back({0, 1 << j});
  for (int j = 0; j < groups; ++j) f.lane.push_back({4 << j, 0});
  for (int j = 0; j < lg(elems); ++j) f.elem.push_back({j < 2 ? 1 << j : 4 << (groups + j - 2), 0});
  return f;
}

// Elements of A per 32-bit register: 2 for 16-bit types, 4 for 8-bit, 1 for tf32.
int mma_per_reg(const MatrixInstruction& mi) { return 32 / bit_width(mi.a); }

Fragment mma_a(const MatrixInstruction& mi) {
  const int w = mma_per_reg(mi);
  Fragment f;
  for (int j = 0; j < lg(w); ++j) f.elem.push_back({0, 1 << j});
  f.elem.push_back({8, 0});
  f.elem.push_back({0, 4 * w});
  f.lane = {{0, w}, {0, 2 * w}, {1, 0}, {2, 0}, {4, 0}};
  return f;
}

Fragment mma_b(const MatrixInstruction& mi) {
  const int w = mma_per_reg(mi);
  Fragment f;
  for (int j = 0; j < lg(w); ++j) f.elem.push_back({1 << j, 0});
  f.elem.push_back({4 * w, 0});
  f.lane = {{w, 0}, {2 * w, 0}, {0, 1}, {0, 2}, {0, 4}};
  return f;
}

// MatrixFamily::fma: an m4n8 step of k = 1 a warp, lane bits 0-2 along N and 3-4 along
// M; A's element is its row's (the N lanes hold copies), B's its column's.
Fragment fma_acc() {
  Fragment f;
  f.lane = {{0, 1}, {0, 2}, {0, 4}, {1, 0}, {2, 0}};
  return f;
}
Fragment fma_a() {
  Fragment f;
  f.lane = {{}, {}, {}, {1, 0}, {2, 0}};
  return f;
}
Fragment fma_b() {
  Fragment f;
  f.lane = {{0, 1}, {0, 2}, {0, 4}, {}, {}};
  return f;
}

Fragment mma_acc() {
  Fragment f;
  f.elem = {{0, 1}, {8, 0}};
  f.lane = {{0, 2}, {0, 4}, {1, 0}, {2, 0}, {4, 0}};
  return f;
}

enum class WarpRole { n, m, copy };

// A layout of a [rows, cols] tile: the fragment, then `reg_extra` register bits, the
// lanes, and one image per warp bit.
Layout build(int rows, int cols, const Fragment& f, const std::vector<Coord>& reg_extra,
             const std::vector<Coord>& warp) {
  auto flat = [&](Coord x) { return uint32_t(x.r) * uint32_t(cols) + uint32_t(x.c); };
  Layout l;
  l.shape = {rows, cols};
  for (Coord x : f.elem) l.reg.push_back(flat(x));
  for (Coord x : reg_extra) l.reg.push_back(flat(x));
  for (Coord x : f.lane) l.lane.push_back(flat(x));
  for (Coord x : warp) l.warp.push_back(flat(x));
  return l;
}

// wgmma (PTX ISA, "Register Fragments and Shared Memory Matrix Layouts" of
// wgmma.mma_async): warp w % 4 of a warpgroup holds rows 16 (w % 4) .. +15 of the m64nN
// accumulator in mma.sync's m16n8 fragment, repeated along N in registers (d[4j..4j+3]
// hold columns 8j..8j+7); A from registers is mma.sync's A fragment likewise. Warpgroups
// split M, then N (the warp-id bits above the first two: M first, as Triton's mma v3
// warpsPerCTA); repetitions along N, then M, are register bits above the instruction's.
std::optional<DotPlan> plan_warpgroup_dot(const std::vector<const MatrixInstruction*>& takes, int M, int N, int K,
                                          int num_warps, const DotRequest& req, std::string& why) {
  if (num_warps % 4 != 0) {
    why = fmt::format("wgmma needs whole warpgroups (num_warps a multiple of 4), not {} warps", num_warps);
    return std::nullopt;
  }
  const int groups = num_warps / 4;
  int wg_m = 1, wg_n = 1;
  if (req.warps_m || req.warps_n) {
    wg_m = std::max(1, req.warps_m / 4), wg_n = std::max(1, req.warps_n);
  } else {
    while (wg_m * wg_n < groups && M % (64 * wg_m * 2) == 0) wg_m *= 2;
    while (wg_m * wg_n < groups && N % (8 * wg_n * 2) == 0) wg_n *= 2;
  }
  if (M % (64 * wg_m) != 0 || N % (8 * wg_n) != 0 || wg_m * wg_n > groups || groups % (wg_m * wg_n) != 0) {
    why = fmt::format("a [{}, {}] tile cannot be split over {} warpgroups of m64 wgmma instructions ({}x{})", M, N,
                      groups, wg_m, wg_n);
    return std::nullopt;
  }
  const int n_each = std::min(256, N / wg_n);
  const MatrixInstruction* pick = nullptr;
  for (const MatrixInstruction* mi : takes)
    if (mi->n == n_each && K % mi->k == 0) pick = mi;
  if (!pick) {
    why = fmt::format("no wgmma instruction m64n{}k* divides K = {}", n_each, K);
    return std::nullopt;
  }
  DotPlan p;
  p.instr = *pick;
  p.warps_m = 4 * wg_m, p.warps_n = wg_n;
  p.k_steps = K / pick->k;
  p.reps_m = M / (64 * wg_m);
  p.reps_n = N / (n_each * wg_n);
  std::vector<Coord> warp_acc = {{16, 0}, {32, 0}}, warp_a = warp_acc, warp_b = {{}, {}};
  for (int j = 0; j < lg(wg_m); ++j) warp_acc.push_back({64 << j, 0}), warp_a.push_back({64 << j, 0}), warp_b.push_back({});
  for (int j = 0; j < lg(wg_n); ++j) warp_acc.push_back({0, n_each << j}), warp_a.push_back({}), warp_b.push_back({0, n_each << j});
  for (int j = lg(wg_m * wg_n); j < lg(groups); ++j) warp_acc.push_back({}), warp_a.push_back({}), warp_b.push_back({});
  std::vector<Coord> ra, rb, rc;
  for (int j = 3; j < lg(n_each); ++j) rc.push_back({0, 1 << j});
  for (int j = 0; j < lg(p.reps_n); ++j) rc.push_back({0, (n_each * wg_n) << j});
  for (int j = 0; j < lg(p.reps_m); ++j) rc.push_back({(64 * wg_m) << j, 0});
  for (int j = 0; j < lg(p.k_steps); ++j) ra.push_back({0, pick->k << j}), rb.push_back({pick->k << j, 0});
  for (int j = 0; j < lg(p.reps_m); ++j) ra.push_back({(64 * wg_m) << j, 0});
  // B never lives in registers (its descriptor reads it); this layout only gives a read
  // of it a well-formed one: mma.sync's B fragment, its n8 blocks in registers.
  for (int j = 3; j < lg(n_each); ++j) rb.push_back({0, 1 << j});
  for (int j = 0; j < lg(p.reps_n); ++j) rb.push_back({0, (n_each * wg_n) << j});
  p.acc = build(M, N, mma_acc(), rc, warp_acc);
  p.a = build(M, K, mma_a(*pick), ra, warp_a);
  p.b = build(K, N, mma_b(*pick), rb, warp_b);
  return p;
}

}  // namespace

std::optional<DotPlan> plan_dot(const TargetCapabilities& caps, DType a, DType b, int M, int N, int K,
                                int num_warps, int wave_size, const DotRequest& req, std::string& why) {
  std::vector<const MatrixInstruction*> takes;
  bool swap = !caps.matrix_instructions.empty() && caps.matrix_instructions[0].family == MatrixFamily::amd_mfma;
  for (const auto& mi : caps.matrix_instructions)
    if ((mi.family == MatrixFamily::nvidia_wgmma) == req.warpgroup && (swap ? mi.a == b && mi.b == a : mi.a == a && mi.b == b) &&
        (req.ieee ? !mi.tf32 : mi.family != MatrixFamily::fma) && mi.scaled == req.scaled)
      takes.push_back(&mi);
  if (takes.empty() && req.ieee) {
    why = fmt::format("input_precision ieee: {} has no {}instruction that multiplies f32 without rounding to TF32",
                      caps.arch, req.warpgroup ? "warpgroup (wgmma) " : "");
    return std::nullopt;
  }
  if (takes.empty()) {
    why = fmt::format("no {}matrix instruction of {} multiplies {} by {}", req.warpgroup ? "warpgroup (wgmma) " : "",
                      caps.arch, name(a), name(b));
    return std::nullopt;
  }
  if (req.warpgroup) {
    if (wave_size != 32) {
      why = fmt::format("wgmma needs warps of 32 lanes, not {}", wave_size);
      return std::nullopt;
    }
    return plan_warpgroup_dot(takes, M, N, K, num_warps, req, why);
  }
  const bool amd = takes[0]->family == MatrixFamily::amd_mfma;
  const int lanes = amd ? 64 : 32;
  if (wave_size != lanes) {
    why = fmt::format("{}'s matrix instructions need waves of {} lanes, not {}", caps.arch, lanes, wave_size);
    return std::nullopt;
  }
  // The instruction: AMD's M = N as asked (or Triton's rule, then the other size), the
  // largest k dividing K among those that fit the tile.
  const int nonkdim = req.nonkdim;
  std::vector<int> sizes = {0};
  if (amd) sizes = nonkdim ? std::vector<int>{nonkdim} : (std::min(M, N) >= 32 ? std::vector<int>{32, 16}
                                                                                  : std::vector<int>{16, 32});
  const MatrixInstruction* pick = nullptr;
  for (int size : sizes) {
    for (const MatrixInstruction* mi : takes)
      if ((!size || mi->m == size) && mi->m <= M && mi->n <= N && K % mi->k == 0 && (!pick || mi->k > pick->k))
        pick = mi;
    if (pick) break;
  }
  if (!pick) {
    std::string have;
    for (const MatrixInstruction* mi : takes) have += fmt::format("{}{}x{}x{}", have.empty() ? "" : ", ", mi->m, mi->n, mi->k);
    why = fmt::format("no matrix instruction of {} for {} x {} fits a [{}, {}] x [{}, {}] dot{} (it has {})", caps.arch,
                      name(a), name(b), M, K, K, N,
                      nonkdim ? fmt::format(" with matrix_instr_nonkdim={}", nonkdim) : std::string(), have);
    return std::nullopt;
  }
  DotPlan p;
  p.instr = *pick;
  p.swap_operands = swap;
  p.kpack = amd && !pick->scaled && req.kpack > 1 && K % (pick->k * req.kpack) == 0 ? req.kpack : 1;
  const int kp = pick->k * p.kpack;
  p.k_steps = K / kp;
  p.reps_m = M / pick->m;
  p.reps_n = N / pick->n;
  std::vector<WarpRole> roles;
  if (req.warps_m || req.warps_n) {
    // As asked: the split must divide the tile and the program's warps.
    const int wm = std::max(1, req.warps_m), wn = std::max(1, req.warps_n);
    if (wm * wn > num_warps || num_warps % (wm * wn) != 0 || p.reps_m % wm != 0 || p.reps_n % wn != 0) {
      why = fmt::format("a [{}, {}] tile of {}x{} instructions cannot be split {}x{} over {} warps", M, N, pick->m,
                        pick->n, wm, wn, num_warps);
      return std::nullopt;
    }
    for (int w = 1; w < wn; w *= 2) roles.push_back(WarpRole::n), p.warps_n *= 2, p.reps_n /= 2;
    for (int w = 1; w < wm; w *= 2) roles.push_back(WarpRole::m), p.warps_m *= 2, p.reps_m /= 2;
    for (int w = wm * wn; w < num_warps; w *= 2) roles.push_back(WarpRole::copy);
  } else {
    // Halve the larger repetition count, M on ties (Triton's warpsPerTile); warps the
    // tile cannot use hold copies.
    for (int w = 1; w < num_warps; w *= 2) {
      if (p.reps_m >= p.reps_n && p.reps_m > 1) roles.push_back(WarpRole::m), p.warps_m *= 2, p.reps_m /= 2;
      else if (p.reps_n > 1) roles.push_back(WarpRole::n), p.warps_n *= 2, p.reps_n /= 2;
      else roles.push_back(WarpRole::copy);
    }
  }
  // Warp-id bits: N first (the low bits), then M, then copies.
  std::stable_sort(roles.begin(), roles.end(), [](WarpRole x, WarpRole y) { return int(x) < int(y); });
  std::vector<Coord> warp_acc, warp_a, warp_b;
  int wn = 0, wm = 0;
  for (WarpRole r : roles) {
    if (r == WarpRole::n) {
      Coord c{0, pick->n << wn++};
      warp_acc.push_back(c), warp_a.push_back({}), warp_b.push_back(c);
    } else if (r == WarpRole::m) {
      Coord c{pick->m << wm++, 0};
      warp_acc.push_back(c), warp_a.push_back(c), warp_b.push_back({});
    } else {
      warp_acc.push_back({}), warp_a.push_back({}), warp_b.push_back({});
    }
  }
  const int kb = pick->k_per_lane * p.kpack;
  const bool fma = pick->family == MatrixFamily::fma;
  Fragment fa = amd ? mfma_operand(pick->m, kb) : fma ? fma_a() : mma_a(*pick);
  Fragment fb = amd ? transposed(mfma_operand(pick->n, kb)) : fma ? fma_b() : mma_b(*pick);
  if (pick->scaled && pick->a != DType::f4e2m1) {
    // The scaled FP8 forms hold a lane's 32 k in two runs of 16, the second (64 / m) x 16
    // further on (Triton's kWidth 16 for CDNA4's scaled MFMA): the instruction's 32s of k,
    // which one scale each covers, are then the lane groups' first runs, then their second
    // ones, each scale given by the lane group of its number. FP4's 32 a lane are one run.
    fa = mfma_operand(pick->m, 16), fb = mfma_operand(pick->n, 16);
    fa.elem.push_back({0, 16 * (64 / pick->m)}), fb.elem.push_back({0, 16 * (64 / pick->n)});
    fb = transposed(fb);
  }
  Fragment fc = amd ? transposed(mfma_acc(*pick)) : fma ? fma_acc() : mma_acc();
  std::vector<Coord> ra, rb, rc;
  for (int j = 0; j < lg(p.k_steps); ++j) ra.push_back({0, kp << j}), rb.push_back({kp << j, 0});
  for (int j = 0; j < lg(p.reps_n); ++j) rc.push_back({0, (pick->n * p.warps_n) << j});
  for (int j = 0; j < lg(p.reps_m); ++j) rc.push_back({(pick->m * p.warps_m) << j, 0});
  for (int j = 0; j < lg(p.reps_m); ++j) ra.push_back({(pick->m * p.warps_m) << j, 0});
  for (int j = 0; j < lg(p.reps_n); ++j) rb.push_back({0, (pick->n * p.warps_n) << j});
  p.acc = build(M, N, fc, rc, warp_acc);
  p.a = build(M, K, fa, ra, warp_a);
  p.b = build(K, N, fb, rb, warp_b);
  if (pick->scaled) {
    // One scale a lane and instruction: lane % m its row, lane / m which 32 of the
    // instruction's k (as many as the lane groups); K steps then M (N) repetitions in
    // registers, the warps as the operand's.
    const int groups = 64 / pick->m, blocks = K * (pick->a == DType::f4e2m1 ? 2 : 1) / 32;
    Fragment fs;
    for (int j = 0; j < 6; ++j)
      fs.lane.push_back(j < lg(pick->m) ? Coord{1 << j, 0} : Coord{0, 1 << (j - lg(pick->m))});
    std::vector<Coord> rsa, rsb, wsa, wsb;
    for (int j = 0; j < lg(p.k_steps); ++j) rsa.push_back({0, groups << j}), rsb.push_back({0, groups << j});
    for (int j = 0; j < lg(p.reps_m); ++j) rsa.push_back({(pick->m * p.warps_m) << j, 0});
    for (int j = 0; j < lg(p.reps_n); ++j) rsb.push_back({(pick->n * p.warps_n) << j, 0});
    for (size_t w = 0; w < warp_a.size(); ++w) wsa.push_back(warp_a[w]), wsb.push_back({warp_b[w].c, 0});
    p.a_scale = build(M, blocks, fs, rsa, wsa);
    p.b_scale = build(N, blocks, fs, rsb, wsb);
  }
  if (!req.k_perm.empty()) {
    // K renumbered: column bits of A (flat bits 0..lg K) and row bits of B (above lg N).
    if (int(req.k_perm.size()) != lg(K)) {
      why = fmt::format("a K renumbering of {} bits for K = {}", req.k_perm.size(), K);
      return std::nullopt;
    }
    auto renumber = [&](Layout& l, int shift) {
      for (auto* images : {&l.reg, &l.lane, &l.warp})
        for (uint32_t& x : *images) {
          uint32_t k = (x >> shift) & uint32_t(K - 1), out = 0;
          for (int bit = 0; bit < lg(K); ++bit)
            if (k >> bit & 1) out ^= req.k_perm[size_t(bit)];
          x = (x & ~(uint32_t(K - 1) << shift)) | (out << shift);
        }
    };
    renumber(p.a, 0);
    renumber(p.b, lg(N));
    p.k_perm = req.k_perm;
  }
  if (!req.n_perm.empty()) {
    // N renumbered: column bits of B and of the accumulator (flat bits 0..lg N).
    if (int(req.n_perm.size()) != lg(N)) {
      why = fmt::format("an N renumbering of {} bits for N = {}", req.n_perm.size(), N);
      return std::nullopt;
    }
    for (Layout* l : {&p.b, &p.acc})
      for (auto* images : {&l->reg, &l->lane, &l->warp})
        for (uint32_t& x : *images) {
          uint32_t n = x & uint32_t(N - 1), out = 0;
          for (int bit = 0; bit < lg(N); ++bit)
            if (n >> bit & 1) out ^= req.n_perm[size_t(bit)];
          x = (x & ~uint32_t(N - 1)) | out;
        }
    p.n_perm = req.n_perm;
  }
  return p;
}

DotPlan recorded_dot_plan(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps, int wave_size) {
  auto fail = [&](const std::string& why) -> DotPlan {
    throw compile_error(fmt::format("tl::dot: {}", why), dot.loc.file, dot.loc.line);
  };
  if (dot.str.empty() || dot.ints.size() < 3) fail("no plan recorded (plan_dots did not run)");
  const MatrixInstruction* mi = nullptr;
  for (const auto& x : caps.matrix_instructions)
    if (x.name == dot.str) mi = &x;
  if (!mi) fail(fmt::format("{} has no matrix instruction {}", caps.arch, dot.str));
  const ir::Type &a = dot.operands[0]->type, &b = dot.operands[1]->type;
  DotRequest req;
  req.nonkdim = mi->family == MatrixFamily::amd_mfma ? mi->m : 0;
  req.warpgroup = mi->family == MatrixFamily::nvidia_wgmma;
  req.ieee = dot.i0 != 0;
  req.scaled = dot.operands.size() == 5;
  req.kpack = dot.ints[0];
  req.warps_m = dot.ints[1];
  req.warps_n = dot.ints[2];
  const size_t lk = size_t(log2_exact(a.shape[1])), ln = size_t(log2_exact(b.shape[1]));
  if (dot.ints.size() != 3 && dot.ints.size() != 3 + lk && dot.ints.size() != 3 + lk + ln)
    fail(fmt::format("a recorded plan of {} numbers for K = {}, N = {}", dot.ints.size(), a.shape[1], b.shape[1]));
  if (dot.ints.size() >= 3 + lk) {
    req.k_perm.assign(dot.ints.begin() + 3, dot.ints.begin() + long(3 + lk));
    bool identity = true;
    for (size_t i = 0; i < lk; ++i) identity &= req.k_perm[i] == 1u << i;
    if (identity) req.k_perm.clear();
  }
  if (dot.ints.size() == 3 + lk + ln) req.n_perm.assign(dot.ints.begin() + long(3 + lk), dot.ints.end());
  std::string why;
  auto p = plan_dot(caps, a.dtype, b.dtype, a.shape[0], b.shape[1], a.shape[1], num_warps, wave_size, req, why);
  if (!p) fail(why);
  if (p->instr.name != dot.str) fail(fmt::format("recorded {} but the plan rebuilds {}", dot.str, p->instr.name));
  return *p;
}

bool scaled_dot_is_native(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps) {
  if (dot.operands.size() != 5) return false;
  const ir::Type &a = dot.operands[0]->type, &b = dot.operands[1]->type;
  DotRequest req;
  req.scaled = true;
  std::string why;
  return plan_dot(caps, a.dtype, b.dtype, a.shape[0], b.shape[1], a.shape[1], num_warps, caps.wave_size, req, why)
      .has_value();
}

}  // namespace tl::gpu

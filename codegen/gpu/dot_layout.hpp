// tl::dot on the matrix cores: which instruction a dot uses, how the program's warps
// split its [M, N] tile, and the three layouts it works in (Triton's MFMA / MMA
// accumulator encodings and their dot-operand encodings), all as linear layouts
// (layout.hpp), so that reshape, trans, reductions and conversions keep working on them.
//
// One instruction computes an [m, k] x [k, n] tile per warp; its fragment (which lane and
// register holds which element) is the family's (AMD MFMA, NVIDIA mma.sync), and is
// linear in the lane and element bits. A dot's tile is covered by:
//  - warps: the low warp-id bits split N, the next ones M (Triton's warpsPerCTA, chosen
//    by halving the larger of the M and N repetitions), any left over hold copies;
//  - repetitions per warp along M and N (register bits above the fragment's) and along K
//    (the operands' registers), interleaved with the warps as in Triton.
// Register order: accumulator [fragment][N reps][M reps]; A [k-packed fragment][K steps]
// [M reps]; B [k-packed fragment][K steps][N reps]. `kpack` (AMD) gives each lane
// kpack instructions' worth of contiguous k elements (one 128-bit LDS read for two
// MFMAs); instruction j of a K step takes chunk j. Which hardware k an element meets is
// then permuted, identically for A and B, which a sum over k does not see.
#pragma once

#include <optional>
#include <string>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/ir/ir.hpp"

namespace tl::gpu {

struct DotPlan {
  MatrixInstruction instr;
  // AMD: the instruction computes C^T = B^T A^T (B's fragment as its A, A's as its B, as
  // Triton's transposed MFMA layout), so that a lane's accumulator elements are 4
  // consecutive N (32x32: rows of D are our N) and the epilogue stores 16 bytes of f32 a
  // lane instead of one element. `instr` is then the one for (b's type, a's type).
  bool swap_operands = false;
  int kpack = 1;
  int warps_m = 1, warps_n = 1;
  // A renumbering of K shared by A and B (one image per K bit, empty: none), so that A's
  // layout can be another dot's accumulator layout where the instruction's k order
  // differs from the accumulator's column order (gfx950's 8-wide k): a sum over k does
  // not see the order its terms meet in.
  std::vector<uint32_t> k_perm;
  // A renumbering of N shared by B and the accumulator (one image per N bit, empty:
  // none), so that the N repetitions a lane holds are consecutive columns: an 8-bit B
  // read from shared memory without a transposing read then takes one row's bytes of all
  // of them in one access (reps_n bytes) instead of a byte a read. The columns of the
  // result follow; whatever reads it reads the layout it is in.
  std::vector<uint32_t> n_perm;
  int reps_m = 1, reps_n = 1, k_steps = 1;  // per warp; k_steps of instr.k * kpack
  Layout acc, a, b;
  // A block-scaled instruction (tl::dot_scaled): the layouts of a's scales [M, K / 32] and
  // b's [N, K / 32], one e8m0 a lane per instruction, the byte the instruction reads for
  // the lane (lane l gives the scale of its row, l % m, and of the (l / m)-th 32 of the
  // instruction's k: CDNA4's v_mfma_scale_*_f8f6f4, Triton's MFMA scale layout); register
  // order [K steps][M (N) reps], as the operands'.
  Layout a_scale, b_scale;
  bool scaled() const { return instr.scaled; }
  int scale_reg(int rep, int ks) const { return ks + k_steps * rep; }

  // wgmma: one instruction per warpgroup (four warps, rows 16 apart); warps_m counts warps
  // (4 a warpgroup along M), warps_n warpgroups along N.
  bool warpgroup() const { return instr.family == MatrixFamily::nvidia_wgmma; }
  int acc_regs_per_instr() const { return instr.m * instr.n / (lanes() * (warpgroup() ? 4 : 1)); }
  int a_regs_per_step() const { return instr.k_per_lane * kpack; }
  // B elements a lane holds per instruction: n * k / lanes (A's count where m = n, half
  // of it for NVIDIA's m16n8).
  // (fma: one, the B element of the lane's column.)
  int b_per_instr() const { return instr.family == MatrixFamily::fma ? 1 : instr.n * instr.k / lanes(); }
  int b_regs_per_step() const { return b_per_instr() * kpack; }
  int lanes() const { return instr.family == MatrixFamily::amd_mfma ? 64 : 32; }
  // First register of a fragment: accumulator tile (mi, ni); A tile (mi, K step ks);
  // B tile (ni, ks). Instruction j of a K step reads registers j * k_per_lane onwards.
  int acc_reg(int mi, int ni) const { return acc_regs_per_instr() * (ni + reps_n * mi); }
  int a_reg(int mi, int ks) const { return a_regs_per_step() * (ks + k_steps * mi); }
  int b_reg(int ni, int ks) const { return b_regs_per_step() * (ks + k_steps * ni); }
};

// What a plan is asked for beyond the shapes.
struct DotRequest {
  // The instruction's M and N (AMD's matrix_instr_nonkdim; 0: 32 when the tile's M and N
  // are at least 32, else 16, as Triton); kpack as asked where K allows it.
  int nonkdim = 0, kpack = 1;
  // Warps split: 0 = Triton's warpsPerTile (halve the larger repetition count); else
  // exactly this many warps along M and N (their product at most num_warps, the rest
  // copies): what plan_dots records, and its rule for chained dots (every warp along M).
  int warps_m = 0, warps_n = 0;
  std::vector<uint32_t> k_perm;  // DotPlan::k_perm
  std::vector<uint32_t> n_perm;  // DotPlan::n_perm
  // NVIDIA: plan with the warpgroup instructions (wgmma) instead of mma.sync; warps_m and
  // warps_n then count warps along M (a multiple of 4) and warpgroups along N.
  bool warpgroup = false;
  // Triton's input_precision "ieee" (the dot op's i0): no instruction that rounds f32
  // operands to TF32; f32 FMAs (MatrixFamily::fma) where the matrix cores have none other.
  // Without it the fma family is not taken.
  bool ieee = false;
  // tl::dot_scaled: only block-scaled instructions (MatrixInstruction::scaled) take it,
  // and only it takes them.
  bool scaled = false;
};

// The plan of a dot of a [M, K] (dtype a) by [K, N] (dtype b) on `caps`' matrix
// instructions, with num_warps warps of wave_size lanes. Among the instructions of the
// asked nonkdim, the one with the largest k that divides K. nullopt, with `why`, when no
// instruction fits or the asked warp split does not.
std::optional<DotPlan> plan_dot(const TargetCapabilities& caps, DType a, DType b, int M, int N, int K,
                                int num_warps, int wave_size, const DotRequest& req, std::string& why);

// The plan plan_dots recorded on a dot op (instruction name in `str`; kpack, warps_m,
// warps_n, then the K renumbering and the N renumbering in `ints`: none, K's lg K images,
// or K's then N's lg N images, K's the identity where only N is renumbered), rebuilt for
// the lowering and later passes.
// A compile error (a tl bug) when the op has none or it no longer fits.
DotPlan recorded_dot_plan(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps, int wave_size);

// Whether a tl::dot_scaled (a dot of five operands) runs on one of `caps`' block-scaled
// instructions as it is (a plan exists for its formats and shape at num_warps), rather
// than upcast to bf16 (passes::decompose_scaled_dots).
bool scaled_dot_is_native(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps);

}  // namespace tl::gpu

// A warpgroup dot (Hopper's wgmma, sm_90a), as the plan says: each warpgroup issues, for
// every K step and every M and N repetition of its part of the tile, one m64nNk
// wgmma.mma_async reading B (and A, or A from the registers of the plan's A layout) from
// their shared buffers through matrix descriptors, then commits them as one group. A
// synchronous dot waits for the group right away; an asynchronous one (ir::kAsyncDot)
// leaves it in flight for the dot_wait plan_async_dots put after it.
//
// A descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 the start address >> 4,
// 16-29 the leading-dimension byte offset >> 4, 32-45 the stride-dimension byte offset
// >> 4, 62-63 the swizzle (1: 128 bytes, 2: 64, 3: 32). The buffer lies in the descriptor
// encoding (warpgroup_dot.hpp): rows of the swizzle width, column blocks of rows x width
// bytes one after another. The stride offset is then the 8 rows of a swizzle atom, the
// leading offset one column block (Triton's createDescriptor). Each instruction's start
// address is the unswizzled address of its sub-tile's first element, which the
// encoding's map gives for a sub-tile starting on a multiple of 8 rows; the hardware
// applies the swizzle to the addresses it forms from there.
#include <fmt/format.h>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {
uint64_t swizzle_mode(int swz) { return swz == 128 ? 1 : swz == 64 ? 2 : 3; }
}  // namespace

void Lowerer::lower_warpgroup_dot(const ir::Operation& op, const DotPlan& p) {
  const MatrixInstruction& mi = p.instr;
  const int wg_m = p.warps_m / 4, wg_n = p.warps_n;
  // This warpgroup's place in the tile: warpgroups split M, then N (dot_layout.cpp).
  llvm::Value* group = b.CreateLShr(warp_id(), 2, "warpgroup");
  llvm::Value* g_m = b.CreateURem(group, b.getInt32(uint32_t(wg_m)));
  llvm::Value* g_n = b.CreateURem(b.CreateUDiv(group, b.getInt32(uint32_t(wg_m))), b.getInt32(uint32_t(wg_n)));

  struct Operand {
    DescriptorOperand m;
    unsigned eb = 0;
    LinearMap offsets;
    std::vector<int> stored;  // the buffer's tile shape
    llvm::Value* base = nullptr;  // the stage's address, i32
    uint64_t fixed = 0;           // the descriptor's bits other than the address
  };
  auto operand = [&](int index) {
    Operand o;
    auto m = match_descriptor_operand(op.operands[size_t(index)], index);
    if (!m && index == 0) return o;  // A from registers
    if (!m) fail(op, "tl::dot: a warpgroup dot's B is not a shared buffer read (a tl bug)");
    o.m = *m;
    const ir::Type& bt = m->alloc->result()->type;
    o.eb = unsigned(byte_width(bt.dtype));
    o.stored = bt.shape;
    o.offsets = stage_layout(m->read->operands[0], o.eb).offsets;
    llvm::Value* stage = shared_stage_base(*m->read, o.eb);
    o.base = b.CreateTrunc(b.CreatePtrToInt(stage, b.getInt64Ty()), b.getInt32Ty());
    const int swz = descriptor_swizzle_bytes(bt);
    const uint64_t lbo = uint64_t(bt.shape[0]) * uint64_t(swz), sbo = 8 * uint64_t(swz);
    o.fixed = ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | swizzle_mode(swz) << 62;
    return o;
  };
  Operand A = operand(0), B = operand(1);
  const bool a_in_registers = !A.m.read;
  Values a_regs = a_in_registers ? get(op.operands[0], p.a) : Values{};
  // The descriptor of the sub-tile whose first element is at logical (row, col) of the
  // operand ([M, K] for A, [K, N] for B), moved by this warpgroup's index along M (A) or
  // N (B), `extra`, in steps of `extra_step` (the map applied to it at run time).
  auto descriptor = [&](const Operand& o, bool is_b, int row, int col, llvm::Value* extra, int extra_step) {
    // stored coordinates: A K-major [M, K] as is, else [K, M]; B K-major [N, K], else [K, N]
    auto stored_flat = [&](int r, int c) {
      const bool swap = is_b ? o.m.k_major : !o.m.k_major;
      if (swap) std::swap(r, c);
      return uint32_t(r) * uint32_t(o.stored[1]) + uint32_t(c);
    };
    const bool extra_on_rows = !is_b;  // A: the warpgroup moves along M (rows); B: along N
    uint32_t fixed_off = o.offsets.apply(stored_flat(row, col));
    llvm::Value* off = b.getInt32(fixed_off);
    // The warpgroup's offset: each of its bits moves the sub-tile by a power of two
    // along M or N, whose image the map gives (XORed, as the map is linear).
    for (int bit = 0; (1 << bit) < (extra_on_rows ? wg_m : wg_n); ++bit) {
      const int step = extra_step << bit;
      uint32_t img = extra_on_rows ? o.offsets.apply(stored_flat(step, 0)) : o.offsets.apply(stored_flat(0, step));
      llvm::Value* on = b.CreateAnd(b.CreateLShr(extra, uint64_t(bit)), b.getInt32(1));
      off = b.CreateXor(off, b.CreateMul(on, b.getInt32(img)));
    }
    llvm::Value* addr = b.CreateAdd(o.base, b.CreateMul(off, b.getInt32(o.eb)));
    llvm::Value* field = b.CreateZExt(b.CreateAnd(b.CreateLShr(addr, 4), b.getInt32(0x3FFF)), b.getInt64Ty());
    return b.CreateOr(field, b.getInt64(o.fixed));
  };
  Values c = get(op.operands[2], p.acc);
  const int per_acc = p.acc_regs_per_instr();
  // An accumulator of zeros (the attention backward's dP^T = V.dO^T, each iteration) is not
  // read: the first K step's wgmmas take scale-d 0 and no registers. Passed as zeros, ptxas
  // set the 32 accumulator registers a lane to 0 with a move each (IMAD.MOV) every iteration.
  const bool zero_c = ir::is_zero_constant(op.operands[2]);
  // A from registers: every instruction's fragment packed (NVIDIA: cvt.rn.bf16x2 of P^T and
  // dS^T in the attention backward) before the fence, as PTX asks (a wgmma.fence between a
  // register's write and the wgmma reading it). Packed at each wgmma instead, after the
  // fence, ptxas put a warpgroup.arrive before each (its C7519 note) and the group's
  // wgmmas each waited on their own scoreboard: dK/dV at 64x64 D=64 on the H200 357 -> 331 us.
  // Only up to 16 registers a lane (every attention tile's P^T / dS^T: a 64 x 64 A, or two
  // 64 x 32): MoE's upcast A of K = 128, all made before the fence, left ptxas 14.9 KB of
  // spill stores (gpt-oss's gate/up, 64x128x128 w4), where made at each wgmma it had 0.4.
  const auto a_fragment = [&](int mr, int ks) {
    return Values(a_regs.begin() + p.a_reg(mr, ks), a_regs.begin() + p.a_reg(mr, ks) + mi.k_per_lane);
  };
  const bool pack_first = a_in_registers && int64_t(a_regs.size()) * bit_width(mi.a) <= 16 * 32;
  std::vector<Values> a_words(size_t(pack_first ? p.k_steps * p.reps_m : 0));
  for (int ks = 0; ks < p.k_steps && pack_first; ++ks)
    for (int mr = 0; mr < p.reps_m; ++mr)
      a_words[size_t(ks * p.reps_m + mr)] = hooks_.warpgroup_a_words(b, mi, a_fragment(mr, ks));
  hooks_.warpgroup_fence(b);
  for (int ks = 0; ks < p.k_steps; ++ks)
    for (int mr = 0; mr < p.reps_m; ++mr) {
      llvm::Value* da = a_in_registers ? nullptr : descriptor(A, false, 64 * wg_m * mr, ks * mi.k, g_m, 64);
      Values fa = !a_in_registers ? Values{}
                  : pack_first    ? a_words[size_t(ks * p.reps_m + mr)]
                                  : hooks_.warpgroup_a_words(b, mi, a_fragment(mr, ks));
      for (int nr = 0; nr < p.reps_n; ++nr) {
        llvm::Value* db = descriptor(B, true, ks * mi.k, mi.n * wg_n * nr, g_n, mi.n);
        const int cr = p.acc_reg(mr, nr);
        Values fc(c.begin() + cr, c.begin() + cr + per_acc);
        const bool accumulate = !(zero_c && ks == 0);
        if (!accumulate)
          for (auto& x : fc) x = llvm::PoisonValue::get(x->getType());
        Values out = hooks_.warpgroup_matrix_multiply(b, mi, da, fa, db, !A.m.k_major, !B.m.k_major, fc, accumulate);
        if (int(out.size()) != per_acc)
          fail(op, fmt::format("tl::dot: {} has no lowering of {}", hooks_.target_name(), mi.name));
        std::copy(out.begin(), out.end(), c.begin() + cr);
      }
    }
  hooks_.warpgroup_commit(b);
  if (op.i1 != ir::kAsyncDot) c = hooks_.warpgroup_wait(b, 0, c);
  info_.uses_matrix_instructions = true;
  set_natural(op.result(), Regs{p.acc, std::move(c)});
}

void Lowerer::lower_dot_wait(const ir::Operation& op) {
  const Layout& l = plan_.of(op.result());
  Values regs = get(op.operands[0], l);
  if (op.i0 == 0 && waited_after_loop_.count(op.operands[0])) return set_natural(op.result(), Regs{l, regs});
  set_natural(op.result(), Regs{l, hooks_.warpgroup_wait(b, int(op.i0), regs)});
}

void Lowerer::lower_fence_async_shared(const ir::Operation&) { hooks_.fence_async_shared(b); }

}  // namespace tl::gpu

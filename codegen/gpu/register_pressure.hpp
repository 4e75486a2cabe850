// Register estimates over the planned tile IR (codegen/gpu): the 32-bit registers a thread
// holds of tile values, from their layouts, before any code exists. The one analysis the
// planning passes ask whether something fits a thread's registers:
//  - plan_dot_operand_sources: a converted dot operand held across its loop beside what
//    the loop carries (carried_registers);
//  - plan_async_dots: warpgroup dots left in flight, each holding its register A operand
//    until its group completes (peak_live_registers).
// Scalars, addresses, indices and what the lowering adds are not counted (descriptors only
// as descriptor_registers says): plan_dot_operand_sources keeps a quarter of the registers
// for them, plan_async_dots 16 (ptxas 12.8 used 4 to 65 more than peak_live_registers on
// 110 sm_90 kernels: an estimate for deciding near the limit, not a register count).
// Private to codegen.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/gpu/passes.hpp"
#include "codegen/ir/ir.hpp"

namespace tl::gpu {

// 32-bit registers a thread holds of `v`: its layout's distinct elements (0 without a
// layout or when rematerialized at its users).
int64_t registers_of(const ir::Value* v);

// What a loop keeps in registers from one iteration to the next: its carried tiles and the
// tiles from before it that it reads (attention's Q operand).
int64_t carried_registers(ir::Operation& loop);

// A value of a loop body kept in registers past its last use, until (and at) `until`, an
// op of the same body: where it is after its definition, the value stays live to the end of
// the body and, across the back edge, from the body's start (a warpgroup dot's register A,
// which the wgmma reads until its group completes; the group's wait may be in the next
// iteration).
struct HeldUntil {
  const ir::Value* value = nullptr;
  const ir::Operation* until = nullptr;
};

// The most registers live at once after an op of `loop`'s body (`for`): the tiles read from
// before the loop throughout, the carried ones until their last use, each tile computed in
// the body from its op to its last use (an op with regions counts as one op: what it uses
// inside, it uses there), `held` as said; and the warpgroup dots' loop-invariant matrix
// descriptors that depend on the warpgroup (descriptor_registers). A tile that renames
// another's registers (broadcast, expand_dims, reshape, trans, splat, a bitcast of one
// width) costs nothing and keeps the other live while it is read: a row statistic
// broadcast along the scores is the column's registers. Not counted: tiles of pointers
// (the lowering computes a copy's addresses a chunk at a time), shared reads a dot reads
// itself a K step at a time (ir::kReadByDot, kConversionReadByDot) and what only renames
// or converts them (trans, reshape, bitcast, cast).
int64_t peak_live_registers(ir::Operation& loop, const PlanTarget& t, const std::vector<HeldUntil>& held = {});

// The registers a thread holds across `loop` for the matrix descriptors of its warpgroup
// dots' operands read from a buffer stage fixed for the loop, where the operand is split
// among several warpgroups (more than 4 warps along M for A, several warpgroups along N for
// B): each warpgroup's descriptors then depend on its index, a run-time value, and ptxas
// keeps them (64 bits each, one a K step and repetition) in registers through the loop,
// moving them to uniform registers before each wgmma. With one warpgroup they are
// constants. (The attention backward's dK/dV at 8 warps: K and V, 16 K steps, 32
// registers, SASS R2UR 33 against 0 at 4 warps.)
int64_t descriptor_registers(ir::Operation& loop, const PlanTarget& t);

}  // namespace tl::gpu

// The operation kinds of the tile IR, shared by the tracer and the compiler.
#pragma once

#include <cstdint>

namespace tl {

enum class Op : uint8_t {
  // values
  constant, program_id, num_programs, arange, splat, broadcast, expand_dims, reshape, trans,
  // Triton's tt.join / tt.split / tt.cat and tl.flip. join(a, b): a new last dim of 2
  // (a at 0, b at 1). split: one half of a tile whose last dim is 2 (i0: which, 0 or 1;
  // Triton's split has both as results, tl traces one op per half). cat(a, b): a then b
  // along dim 0, order kept. flip: the elements along dim i0 reversed.
  join, split, cat, flip,
  // Triton's tt.gather: operands src and an integer index tile of src's rank (equal dims
  // but along i0, the axis); out[..., i, ...] = src[..., index[..., i, ...], ...] along i0,
  // the result of index's shape.
  gather,
  // Triton's tl.sort (a bitonic network): operands the keys and, optionally, an i32 tile of
  // their shape sorted with them (the indices of tl::topk / return_indices); one result per
  // operand, of its type. i0: the dim; i1: 1 = descending. Keys order as numbers with every
  // NaN above +inf (-0.0 == +0.0); equal keys order by the second operand, ascending.
  sort,
  // Triton's tl.histogram: operands an integer tile and, optionally, an i1 mask of its
  // shape; the result is i32 [num_bins], the count of each value in [0, num_bins) among
  // the elements the mask keeps (values outside are not counted).
  histogram,
  // elementwise
  add, sub, mul, div, rem, min, max, band, bor, bxor, shl, shr,
  neg, bnot, exp, exp2, log, log2, sqrt, rsqrt, abs, sin, cos, erf, floor, ceil,
  fma, cmp, select, cast, bitcast, addptr,
  // memory
  load, store, atomic_rmw, atomic_cas,
  // a buffer in the program's shared memory (Triton's ttg.local_alloc without a value):
  // no operands, one result of shared-buffer type; the GPU lowering places it
  shared_alloc,
  // one stage of a shared buffer (Triton's ttg.local_load / local_store): operands the
  // buffer and a scalar i32 stage index; the load's result is a register tile of the
  // buffer's tile type, the store takes one as its third operand
  shared_load, shared_store,
  // Gluon's tl::amd copies (seed 001): global_load_to_shared copies a tile from global
  // memory straight into one stage of a shared buffer (operands buffer, stage, pointer
  // tile [, mask [, other]]; no result); the copy lands asynchronously and is complete
  // for this thread once an async_wait (i0 = how many loads may still be outstanding)
  // lets it. shared_load with i0 = 1 is load_shared_relaxed: a read the user has
  // already synchronized with an async_wait.
  global_load_to_shared, async_wait,
  // Hopper's TMA (NVIDIA sm_90, a descriptor load whose kernel takes the descriptor's
  // CUtensorMap: dsl/src/descriptor.cpp): copies the box at the coordinates into one stage
  // of a shared buffer through cp.async.bulk.tensor and waits for it on an mbarrier in the
  // op's own 16 bytes of scratch. Operands: the buffer, the stage (scalar i32), the map
  // (the kernel argument marked {tensor_map}) and one scalar i32 coordinate a dim
  // (outermost first, as the descriptor's offsets); no result. Complete for every thread
  // when the op ends (a write of the stage, as a shared_store is, for the barrier passes).
  // Only NVIDIA sm_90 lowers it; no other target's trace makes it.
  // With i1 == kTensorMapIssue (made by the software pipeliner for a loop's stages, as
  // Triton's pipeliner makes async_tma_copy_global_to_local) it only issues the copy:
  // two operands more, the loop's mbarriers (an i64 [1] buffer, one stage an mbarrier)
  // and a scalar i1 (issue only where it holds); the copy arrives on the mbarrier of
  // its stage with its bytes, and an mbarrier wait of that stage completes it.
  tensor_map_load,
  // Hopper's mbarriers for the pipeliner's TMA stages (Triton's init_barrier,
  // wait_barrier, inval_barrier). Operand 0: the mbarriers, an i64 [1] shared buffer of
  // one stage an mbarrier. i0 == kMbarrierInit: one thread initialises every stage's
  // mbarrier to expect i1 arrivals a phase; kMbarrierWait (operands 1, 2: the stage and
  // the phase parity, scalar i32): every thread waits until that phase of the stage's
  // mbarrier has completed, after which what the copies arriving on it wrote is
  // visible to it; kMbarrierInval: one thread invalidates them (no thread waits on them
  // any more). No result.
  mbarrier,
  // Hopper's TMA store (a descriptor store whose kernel takes the descriptor's
  // CUtensorMap): the box at the coordinates written from one stage of a shared buffer (the
  // value's shared_store before it) by cp.async.bulk.tensor; what lies outside the map's
  // dims is not written. Operands as tensor_map_load's own (buffer, stage, map,
  // coordinates); no result. It orders the threads' writes of the stage before the copy
  // itself (a proxy fence and a barrier), and its issuing thread waits until the copy has
  // read the stage (for the barrier passes: a barrier of its own, then a read of the stage:
  // codegen/passes/insert_barriers.cpp).
  tensor_map_store,
  // synchronization: every thread of the program waits here, and its earlier shared-
  // memory writes are visible to the others after it
  barrier,
  // reductions and scans (attribute: axis, combine kind)
  reduce, scan,
  // matrix multiply-accumulate (Triton's tt.dot): operands a [M, K], b [K, N] and the
  // accumulator c [M, N]; the result c + a.b has c's type. Operand dtypes: bf16, f16, an
  // FP8 format (each operand its own) or f32 with an f32 accumulator, i8 with i32.
  dot,
  // GPU planning only (never traced): the same tile in another distributed layout
  // (Triton's ttg.convert_layout). i0: the path the conversion takes (ir::ConvertPath),
  // decided by a pass; the lowering only emits it.
  convert_layout,
  // GPU planning only (never traced), NVIDIA's warpgroup dots (plan_async_dots):
  // dot_wait (Triton's warp_group_dot_wait) takes an asynchronous dot's result and gives
  // it back once at most i0 of this warpgroup's dot groups are still in flight;
  // fence_async_shared (fence.proxy.async.shared::cta) orders this thread's earlier
  // shared-memory writes, its own stores and cp.async copies, before later reads by the
  // async proxy (wgmma's operand reads through matrix descriptors). No operands, no result.
  dot_wait, fence_async_shared,
  // control flow: regions end in a yield
  for_, if_, yield,
  // while_ (MLIR's scf.while): operands the initial carried values, results the values
  // when the loop ends. regions[0] ("before") takes the carried values as block arguments
  // and ends in a yield of (scalar i1 condition, values...): false ends the loop with those
  // values as its results, true runs regions[1] ("after", the body) on them, whose yield
  // gives the next iteration's carried values. Both regions carry the same types.
  while_,
  // Compiler hints (Triton's tl.multiple_of / max_contiguous / max_constancy): the result
  // is the operand, with a fact (i0: HintKind) about its values per dimension (ints) that
  // axis analysis takes as given; lowerings emit nothing for it.
  hint,
  // tl.assume: operand a scalar i1 the program promises true (llvm.assume); axis analysis
  // reads facts such as `x > 0` and `x % 16 == 0` from it. No result.
  assume,
  // Triton's tt.elementwise_inline_asm: the target's assembly applied elementwise. Operands
  // the argument tiles (one shape: the results'); one result per result dtype. str: the
  // LLVM constraint string, a newline, then the asm template; i0: pack (elements one
  // invocation takes from each operand); i1: 1 = pure (no effect beyond its results).
  inline_asm_elementwise,
  // Programmatic dependent launch (Triton's tl.extra.cuda.gdc_wait / gdc_launch_dependents;
  // PTX griddepcontrol on sm_90 and later). gdc_wait: the program waits until every grid
  // this launch depends on has completed and its memory writes are visible.
  // gdc_launch_dependents: this program lets the launch that depends on this one start
  // (once every program has said so or finished). No operands, no result; the targets
  // without programmatic launch (AMD, the CPU, NVIDIA before sm_90) emit nothing, which is
  // exact there: their launches start after the previous one has finished.
  gdc_wait, gdc_launch_dependents,
  // debugging
  assert_, print,
};

enum class CmpPred : uint8_t { lt, le, gt, ge, eq, ne };
// xor_sum: integers only; prod: scans only (tl::cumprod).
enum class ReduceKind : uint8_t { sum, max, min, argmax, argmin, xor_sum, prod };
// Op::hint's i0.
enum class HintKind : uint8_t { multiple_of, max_contiguous, max_constancy };
enum class AtomicKind : uint8_t { add, max, min, xchg, band, bor, bxor };

// Memory semantics of an atomic, as Triton's `sem`: acq_rel by default.
enum class sem : uint8_t { relaxed, acquire, release, acq_rel };
// Who must observe an atomic: the workgroup (CTA), the device (GPU) or the system.
enum class scope : uint8_t { cta, gpu, sys };

// A load's or store's cache modifier, Triton's cache_modifier (".ca", ".cg", ...): none is
// the target's default. Loads take ca, cg, cs, lu, cv; stores wb, cg, cs, wt (PTX's
// meanings; docs/language.md, "Cache modifiers", maps each to every target's bits).
enum class cache_modifier : uint8_t { none, ca, cg, cs, lu, cv, wb, wt };
// Triton's eviction_policy ("evict_first", "evict_last"): how long the line should stay.
enum class evict : uint8_t { normal, first, last };

const char* op_name(Op op);

}  // namespace tl

// What every pass and lowering may assume about an op kind, in one table
// (op_properties.cpp) instead of a list per pass. A new op is described once here; a
// pass that asks "may I delete, merge or move this?" asks the table, so a result-less
// barrier or a shared-memory store is never mistaken for dead code, and two reads are
// never merged across a write.
#pragma once

#include <cstdint>
#include <string>

#include "tl/opcode.hpp"

namespace tl::ir {

class Operation;
class Value;

enum OpTrait : uint16_t {
  // The results depend only on the operands and attributes: equal ops may be merged,
  // an unused one deleted, and it may be recomputed anywhere its operands are visible.
  kPure = 1 << 0,
  // Reads memory the program can also write (global or shared): two such reads are
  // equal only if no write happens between them.
  kReadsMemory = 1 << 1,
  // Writes memory: never deleted, never duplicated, orders the reads around it.
  kWritesMemory = 1 << 2,
  // Observable without its results (a trap, a print, a barrier, a wait): never deleted,
  // and an ordering point for memory like a write.
  kSideEffects = 1 << 3,
  // Element i of the result depends only on element i of each operand (operands and
  // result share one shape); lowerings map it over a thread's elements.
  kElementwise = 1 << 4,
  // Ends a region (yield).
  kTerminator = 1 << 5,
  // Owns regions (for, if): what it does is what its regions do.
  kHasRegions = 1 << 6,
  // Makes a new object (a shared-memory buffer): two equal-looking allocations are two
  // buffers, so it is never merged, but an unused one may be deleted (no other effect).
  kAllocates = 1 << 7,
};

// The attribute fields of Operation an op kind gives meaning to.
enum OpAttr : uint8_t {
  kAttrI0 = 1 << 0,
  kAttrI1 = 1 << 1,
  kAttrF = 1 << 2,
  kAttrInts = 1 << 3,
  kAttrStr = 1 << 4,
};

struct OpProperties {
  uint16_t traits = 0;
  uint8_t attrs = 0;  // OpAttr bits

  bool has(OpTrait t) const { return (traits & t) != 0; }
};

const OpProperties& properties(Op op);
inline bool has_trait(Op op, OpTrait t) { return properties(op).has(t); }

// `load` and `store` with i0 == kBufferAccess, and `global_load_to_shared` with i1 ==
// kBufferAccess, are AMD buffer accesses (Gluon's amd.cdna3.buffer_load/buffer_store and
// amd.cdna4.buffer_load_to_shared, traced by tl::amd): their pointer operand is always
// `addptr(splat(base), offsets)`, base a scalar pointer and offsets an i32 tile of
// element offsets (the verifier keeps it so). Every target gives them the semantics of
// the masked load/store/copy through that pointer; AMD lowers them to buffer
// instructions (the copy only where the target has buffer loads into LDS).
constexpr int64_t kBufferAccess = 1;
// `add`, `sub`, `mul` and `shl` with i1 == kIndexArithmetic address or mask memory
// (codegen/passes/index_arithmetic.cpp): the language lets them not wrap, and the GPU
// lowerings emit them `nsw`.
constexpr int64_t kIndexArithmetic = 1;
// `global_load_to_shared` with i1 == kCompilerCopy: made by the software pipeliner from a
// load stored into a shared buffer, not asked for by the user (tl::amd's copies), so the
// instruction is the target's choice: AMD issues it as buffer loads into LDS where its
// pointers allow (Triton's ConvertToBufferOps on its pipeliner's async copies).
constexpr int64_t kCompilerCopy = 2;
// `async_wait` with i1 == kWaitCountsCopies (made by the software pipeliner) counts
// global_load_to_shared ops (copy groups, NVIDIA's commit groups) still in flight, not
// AMD's raw vmcnt: the AMD lowering turns it into the vmcnt those copies' instructions
// make: plan_wait_counts (codegen/gpu/plan_wait_counts.cpp) records it as
// kWaitCountsLoads. The user's tl::amd::async_wait(n) is raw (i1 0).
constexpr int64_t kWaitCountsCopies = 1;
// `async_wait` with i1 == kWaitCountsLoads (GPU planning, plan_wait_counts): i0 is the
// number of the target's memory loads (AMD's vmcnt) that may stay in flight, counted from
// the copy plans and register loads the pipeliner's copy-group count let stay.
constexpr int64_t kWaitCountsLoads = 2;
// `for` with i1 == kAsyncDotStage (made by the software pipeliner): the loop's buffers
// got a stage more than its num_stages for a dot that may stay in flight across
// iterations (PipelineOptions::dot_may_run_async); plan_async_dots makes that dot
// asynchronous. A recorded fact, so that nothing infers it from the buffers' stages.
constexpr int64_t kAsyncDotStage = 1;
// `global_load_to_shared` with i0 == kCopyIntoLastReadStage (made by the software
// pipeliner, in its loop's body after the reads): the copy writes the stage the previous
// iteration read (the one before it, where an asynchronous dot got its buffers a stage
// more), never one this iteration reads, so only a barrier since the top of the
// iteration must order it after the reads (codegen/passes/insert_barriers.cpp), not one
// right before it.
constexpr int64_t kCopyIntoLastReadStage = 1;
// `tensor_map_load` with i1 == kTensorMapIssue (made by the software pipeliner for TMA
// stages): the op issues the copy and returns; the copy arrives on the mbarrier of its
// stage (its operands after the coordinates: the mbarriers, the predicate), and the
// loop's `mbarrier` wait of that stage completes it. i0 == kCopyIntoLastReadStage as for
// global_load_to_shared.
constexpr int64_t kTensorMapIssue = 1;
// `mbarrier`'s i0: what it does to the mbarriers (Hopper, the pipeliner's TMA stages).
constexpr int64_t kMbarrierInit = 0;
constexpr int64_t kMbarrierWait = 1;
constexpr int64_t kMbarrierInval = 2;
// `shared_load` with i1 == kReadByDot (GPU planning, plan_dot_operand_sources): the only
// user is a tl::dot (directly or through a cast and/or trans, dot_operand_source.hpp)
// that reads the registers it needs a K step at a time next to its instructions; the
// shared_load itself emits nothing.
constexpr int64_t kReadByDot = 1;
// `convert_layout` through shared memory: i1 holds flags of how its result is read.
// kTransposedRead (plan_shared_encodings): with a transposing read (gfx950's
// ds_read_b64_tr_b16 / _b8), wide along the dim the encoding does not store contiguous.
// kConversionReadByDot (plan_dot_operand_sources): the only user is the tl::dot right
// after it or in the if after it, which reads the registers a K step at a time next to
// its instructions (as kReadByDot for shared_load); the conversion itself only writes,
// and the barrier before the dot's reads is insert_shared_barriers'.
constexpr int64_t kTransposedRead = 1;
// `dot` with i1 == kAsyncDot (plan_async_dots, NVIDIA's wgmma): the dot's instructions are
// issued and left in flight; its result may be read only through a dot_wait, and the
// shared buffers it reads stay in use until then.
constexpr int64_t kAsyncDot = 1;
constexpr int64_t kConversionReadByDot = 2;
// `convert_layout`'s i0: how the conversion moves data, decided by plan_conversion_paths
// (codegen/gpu/plan_conversion_paths.cpp) and only emitted by the lowering.
enum class ConvertPath : int64_t {
  undecided = 0,
  registers = 1,     // each thread already holds what it needs: a renaming, no code
  warp_shuffle = 2,  // no element crosses warps: indexed lane shuffles, no shared memory
  shared = 3,        // through the scratch region of shared memory, with barriers
};
const char* convert_path_name(ConvertPath p);
// The scalar base and the i32 offsets of a buffer access's pointer operand
// (`addptr(splat(base), offsets)`); both null when the op is not one or is malformed.
struct BufferOperands {
  const Value* base = nullptr;
  const Value* offsets = nullptr;
};
BufferOperands buffer_operands(const Operation& op);

// `load` and `store`'s i1: tl::load / tl::store's access_options. Bits 0-3 the cache
// modifier (tl::cache), bits 4-5 the eviction policy (tl::evict), bit 6 volatile; 0 is
// the target's default access. The tracer checks the combination (a load's modifier on a
// load, nothing beside volatile), the verifier again.
struct AccessFlags {
  cache_modifier modifier = cache_modifier::none;
  evict eviction = evict::normal;
  bool is_volatile = false;
  bool is_default() const { return modifier == cache_modifier::none && eviction == evict::normal && !is_volatile; }
};
constexpr int64_t kAccessVolatile = 1 << 6;
int64_t encode_access(const AccessFlags& a);
AccessFlags access_flags(const Operation& op);  // of a load or store; the default for any other op
const char* cache_name(cache_modifier c);  // "cg"
const char* evict_name(evict e);  // "evict_last"
// Why `a` is not a valid access for a load (`load`) or a store: empty when it is.
std::string access_error(const AccessFlags& a, bool load);

// Every thread of a program holds the same value, and LLVM sees it (no divergent
// source), so a buffer resource built from it stays in SGPRs: kernel arguments, program
// ids, constants, a `for` loop's induction variable over uniform bounds, and pure
// arithmetic on those (not a load: LLVM treats loaded values as divergent).
bool is_uniform_scalar(const Value* v);

// For one op, regions included: does running it write memory or have an effect beyond
// its results? (for/if: whatever any op inside does.) A volatile load is an effect (it
// must happen, in order, every time: never merged, dropped or moved across another
// access), and so is an inline_asm_elementwise that is not pure.
bool writes_or_has_effects(const Operation& op);
// Are the op's results a function of its operands and attributes alone, nothing else
// happening (kPure, per op rather than per kind): an inline_asm_elementwise is pure when
// its user said so (tl::inline_asm_elementwise's is_pure), as Triton's is_pure makes its
// asm movable and mergeable. Regions are not looked into: callers that move an op ask
// for a region-less one.
bool is_pure(const Operation& op);
// May an unused op be deleted: no write, no effect, inside its regions either.
bool is_removable_if_unused(const Operation& op);

}  // namespace tl::ir

// The GPU middle end: passes over the tile IR that decide how a program runs on a GPU,
// each recording its decisions in the IR (value layouts, convert_layout ops and their
// paths, dot plans, operand sources) so that TL_DUMP_IR shows them and the lowering
// (codegen/gpu/lower_*.cpp) only emits. codegen/pipeline.cpp runs them in this order,
// Triton's TritonGPU pipeline being the model:
//   convert_to_buffer_ops      AMD: a loop's register loads of dot operands as buffer
//                              loads
//   split_dot_operand_reads    sm_90: a staged tile read by several warpgroup dots (as it
//                              is and transposed) read once per dot
//   plan_dots                  each tl::dot's instruction, warp split and kpack; chained
//                              dots (attention's P @ V) get every warp along M, so that
//                              the first dot's accumulator is the second's A operand
//   assign_layouts             coalescing anchors (loads, stores), layout propagation to
//                              every tile value, rematerialization of cheap index math
//   insert_layout_conversions  an explicit convert_layout wherever a value is used in
//                              another layout than its own
//   plan_conversion_paths      registers, warp shuffles or shared memory for each
//                              conversion
//   batch_shared_conversions   two conversions of a loop body through shared memory
//                              between the same layouts made as one (one barrier)
//   plan_dot_operand_sources   dot operands staged in shared memory and read from there
//                              (or from a conversion's) a K step at a time
//   plan_shared_encodings      how each conversion through shared memory lies there
//                              (order, vector unit, swizzle)
//   plan_async_dots            sm_90: warpgroup dots left in flight across iterations
//   plan_copies                each global_load_to_shared's copy layout, chunk width and
//                              whether it goes through a buffer resource
//   plan_wait_counts           AMD: the loads each of the pipeliner's waits leaves in
//                              flight (vmcnt)
//   allocate_shared_memory     every buffer's and every scratch use's bytes of shared
//                              memory (Operation::smem), or the overflow as data (the
//                              pipeline then plans a loop with fewer stages)
//   insert_shared_barriers     the barriers those bytes need beyond the tile IR's
//                              (Triton's Membar), and sm_90's async-proxy fences
// Private to codegen.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/shared_memory.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/passes/axis_analysis.hpp"

namespace tl::gpu {

// The program shape and target facts the passes plan against.
struct PlanTarget {
  const TargetCapabilities* caps = nullptr;
  int wave_size = 0, num_warps = 0;
  int nonkdim = 0, kpack = 1;  // the launch's matrix_instr_nonkdim and kpack (AMD)
  // NVIDIA: the launch's mma_version (0: tl chooses, wgmma where a dot allows it on sm_90;
  // 2: mma.sync; 3: wgmma, an error at a dot that cannot take it).
  int mma_version = 0;
};

// AMD (targets with buffer instructions): the register loads in loops whose values reach a
// dot's A or B become buffer loads (ir::kBufferAccess, Triton's ConvertToBufferOps) where
// their base is a small-range pointer argument (ir::ArgInfo::pointer_range_32) and their
// offsets provably non-negative. Returns how many it converted.
int convert_to_buffer_ops(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t);

// sm_90 (warpgroup dots, unless the launch asks for mma.sync): a rank-2 read of a shared
// buffer whose value reaches several dots' operands, through transposes only, and every
// one of them a possible warpgroup dot, becomes one read per dot (a transpose after it
// where an odd number lay between), so that each dot reads the stage through a matrix
// descriptor of its own (split_dot_operand_reads.cpp). Returns how many reads it split;
// the old ones are left to dead-code elimination.
int split_dot_operand_reads(ir::Function& f, const PlanTarget& t);

// Records on every dot its matrix instruction (`str`) and kpack, warps_m, warps_n (and a
// K renumbering) in `ints`. On sm_90 a dot whose operands a wgmma reads from shared
// memory (warpgroup_dot.hpp) takes the warpgroup instructions unless the launch asks for
// mma.sync (mma_version=2). A dot whose A operand is computed from another dot's result
// through elementwise ops (dot -> (elementwise | cast)* -> dot) is a chain: both dots put
// every warp along M (one instruction size for both on AMD) and, where the instruction's
// k order differs from the accumulator's column order, the second renumbers K so that the
// first's accumulator layout is its A layout. Adds a remark line per chain. A dot no
// instruction fits is a compile error at its line.
void plan_dots(ir::Function& f, const PlanTarget& t, std::vector<std::string>& remarks);

// Gives every distributed tile value its layout (Value::layout) or marks it
// rematerialized, and every store, tile atomic and global_load_to_shared the layout it
// works in (Operation::layout). Reads the dot plans plan_dots recorded.
void assign_layouts(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t);

// The layout op `op` reads operand `index` in, when it has one (every eager operand of
// every op but global_load_to_shared, whose copy layout the lowering still chooses).
// The one answer both insert_layout_conversions and the lowering rely on.
std::optional<Layout> operand_layout(const ir::Operation& op, int index, const PlanTarget& t);

// Inserts a convert_layout wherever a value with a layout of its own is read in another
// one (operand_layout). Returns how many it inserted.
int insert_layout_conversions(ir::Function& f, const PlanTarget& t);

// Stages dot operands converted through shared memory where reading them from a buffer
// of their own pays; marks shared_loads (ir::kReadByDot) and conversions through shared
// memory (ir::kConversionReadByDot) read by their dot a K step at a time. Reads the
// conversions' recorded paths.
void plan_dot_operand_sources(ir::Function& f, const PlanTarget& t);

// Decides each convert_layout's path (ir::ConvertPath); in loops, the target's
// register-pressure rules (TargetCapabilities::register_pressure_rules) count a shuffle's
// address registers against it. plan_conversion_path: the same for one conversion made
// later (plan_copies').
void plan_conversion_paths(ir::Function& f, const PlanTarget& t);
void plan_conversion_path(ir::Operation& conv, const PlanTarget& t);
// The path a conversion from `from` to `to` placed in block `where` gets (the rule above).
ir::ConvertPath conversion_path_at(const Layout& from, const Layout& to, const ir::Block* where, const PlanTarget& t);
// How many convert_layouts take each path, indexed by ConvertPath (the compile report's).
std::vector<int> conversion_path_counts(ir::Function& f);

// In each loop body, two convert_layouts through shared memory of the same type and layouts
// become one of the pair (join, convert, split): one barrier where there were three. The
// second's operand, computed by pure ops from values available at the first, moves up to
// it. Returns how many pairs were made.
int batch_shared_conversions(ir::Function& f, const PlanTarget& t);

// Records on every convert_layout through shared memory its encoding (Operation::shared,
// by exchange_encoding).
// Also gives every buffer a warpgroup dot reads through descriptors its descriptor
// encoding (on its shared_alloc; other buffers keep the lowering's default swizzle).
void plan_shared_encodings(ir::Function& f, const PlanTarget& t);
// The encoding of one conversion through shared memory (a later pass's: plan_copies').
void plan_exchange_encoding(ir::Operation& conv, const PlanTarget& t);
// Warpgroup dots in a pipelined loop whose buffers have a stage to spare (the pipeliner
// gave them num_stages + 1) run asynchronously: marked ir::kAsyncDot, followed by a
// dot_wait leaving one group in flight (Triton's wait(1)), and waited for fully after the
// loop; as many of a loop's as a thread's registers hold with them in flight
// (register_pressure.hpp). Returns the async dots.
int plan_async_dots(ir::Function& f, const PlanTarget& t, int num_stages);

// Records on every global_load_to_shared its copy layout (Operation::layout) and plan
// (Operation::copy: the bytes a lane moves per load, and on AMD whether a compiler copy
// goes through a buffer resource it makes), and converts its pointers, mask and other to
// that layout where they have another (plan_copies.cpp; what they were computed from is
// left to dead-code elimination). A copy no width fits is a compile error at its line.
// Returns the copies planned.
int plan_copies(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t);

// On targets whose copy waits count loads (AMD's vmcnt): every async_wait the pipeliner
// counted in copy groups (ir::kWaitCountsCopies) records the loads that may stay in
// flight instead (ir::kWaitCountsLoads), from the copy plans and the register loads'
// layouts (plan_wait_counts.cpp). Runs after plan_copies.
void plan_wait_counts(ir::Function& f, const passes::AxisAnalysis& axis, const PlanTarget& t);

// Records where each shared_alloc's buffer and each op's scratch (scratch_bytes) lie in
// the program's shared memory (Operation::smem; shared_memory.hpp's allocator), last of
// the planning passes: it sizes what they decided. Where the program does not fit it
// records nothing and returns the overflow (the buffer or op, the buffers live there):
// codegen/pipeline.cpp plans again with fewer stages or makes it an error at that line.
// `remarks` gets a line where the scratch shares bytes with buffers not live where it is
// used.
std::optional<SharedMemoryOverflow> allocate_shared_memory(ir::Function& f, const PlanTarget& t,
                                                           std::vector<std::string>& remarks);
// The barriers the planning made necessary, over the allocated bytes (Triton's Membar):
// between an exchange through scratch and the previous one's reads, around buffers in
// the bytes of dead ones, before a dot reads an operand staged for it; and, with
// warpgroup dots, a fence_async_shared before every barrier. Returns the barriers added.
int insert_shared_barriers(ir::Function& f, const PlanTarget& t);

}  // namespace tl::gpu

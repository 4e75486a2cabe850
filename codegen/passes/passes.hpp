// Tile-IR passes, one per file, each with a single entry point.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace tl::passes {

// Orders the ops of each statement the tracer recorded (the ops a store or a variable's
// value is computed from, traced from its line on) by their data flow, so that a traced
// program is one program whatever order the host compiler evaluated a call's arguments in
// (codegen/passes/canonical_order.cpp). `same_call`: whether two ops were traced by one
// call (the tracer knows the column too); null: the same file and line. Returns whether
// anything moved.
using SameCall = std::function<bool(const ir::Operation&, const ir::Operation&)>;
bool order_canonically(ir::Function& f, const SameCall& same_call = nullptr);

// Removes ops whose results are unused and that have no side effects.
void eliminate_dead_code(ir::Function& f);
// Merges identical side-effect-free ops (same op, operands, attributes and type).
void eliminate_common_subexpressions(ir::Function& f);
// Inserts a barrier between shared-memory accesses of one buffer that other threads'
// accesses may conflict with (read after write, write after read or write), across
// branches and loop back-edges, unless one already separates them (Triton's Membar).
// Returns how many it inserted.
int insert_barriers(ir::Function& f);

// Where an op touches shared memory, for the barrier analysis: byte ranges on a GPU once
// allocated, buffer numbers on the tile IR (one address space either way).
struct SharedRange {
  int64_t begin = 0, end = 0;
};
struct SharedAccess {
  // read; write (a thread's stores); copy (global_load_to_shared: lands at an async_wait);
  // exchange (an op's own write, barrier and read of its scratch: a layout conversion or
  // cross-warp reduction through shared memory).
  enum Kind : uint8_t { read, write, copy, exchange } kind;
  std::vector<SharedRange> ranges;
};
// Appends the accesses `op` makes (none for most ops).
using SharedAccessModel = std::function<void(const ir::Operation& op, std::vector<SharedAccess>& out)>;
// The same analysis over the accesses `model` gives (codegen/gpu/insert_shared_barriers.cpp
// runs it after the GPU's allocation).
int insert_barriers(ir::Function& f, const SharedAccessModel& model);

// Marks integer add/sub/mul/shl whose results address or mask memory (i1 =
// kIndexArithmetic), which the language lets not wrap (codegen/passes/index_arithmetic.cpp).
// Returns how many.
int mark_index_arithmetic(ir::Function& f);

// Folds add(x, dot(a, b, 0)) into dot(a, b, x) where the add is the dot's only reader
// (`acc += tl::dot(a, b)`; codegen/passes/combine_dot_accumulate.cpp). Returns how many.
int combine_dot_accumulate(ir::Function& f);

// Rewrites each tl::dot_scaled (a dot of five operands) that `native` refuses into the
// upcast of its operands to bf16 with their scales and an ordinary dot (Triton's
// DecomposeScaledBlocked; codegen/passes/decompose_scaled_dots.cpp). Where `stage_b` says
// so of the rewritten dot (sm_90's wgmma, which reads B from shared memory only), an
// upcast b times a 16-bit a as loaded is computed transposed (the upcast wgmma's A, from
// registers), and another upcast b goes through a one-stage shared buffer of its own.
// `bf16_math`: the target multiplies bf16 natively, e2m1 is upcast in bf16 arithmetic.
// Returns how many.
int decompose_scaled_dots(ir::Function& f, const std::function<bool(const ir::Operation&)>& native,
                          const std::function<bool(const ir::Operation&)>& stage_b = nullptr, bool bf16_math = false);

// Rewrites loop-carried values advanced by a loop-invariant step (`a += BLOCK_K *
// stride`, `k_remaining -= BLOCK_K`) inside loops with num_stages > 1 (the loop's own,
// else `default_num_stages`) as init + iteration * step, from the induction variable, and
// stops carrying those nothing reads after the loop
// (codegen/passes/carried_inductions.cpp). Returns how many it rewrote.
int rewrite_carried_inductions(ir::Function& f, int default_num_stages);

struct PipelineOptions {
  int num_stages = 1;              // for loops that do not set their own (the launch option)
  int64_t shared_bytes_limit = 0;  // a program's shared memory on the target; 0: no limit
  // The target's direct global->shared copy widths (bytes a lane) and its wave size: a
  // load whose contiguity, alignment or mask allows none of them (a ragged K masked per
  // element) is pipelined into registers instead of becoming a copy. Empty with wave
  // size 1: the CPU, which copies anything element by element.
  std::vector<int> direct_to_shared_widths;
  int wave_size = 1;
  // Element widths (bits) at which a dot reads an operand tile from a shared buffer
  // across its rows, wide (NVIDIA's ldmatrix.trans, 16-bit). A load feeding a dot with
  // its M or N along the contiguous dim is staged into shared memory by the pipeliner
  // only at these widths; a K-contiguous one at any.
  std::vector<int> transposed_dot_read_bits;
  // A dot operand whose pointers run contiguous along dim 0 (attention's K^T) staged by
  // copying its transpose (rows along the last dim) and reading tl::trans of the buffer.
  bool copy_transposed = false;
  // A rank-1 load broadcast into an elementwise op on a dot's result (attention's LSE and
  // Delta; a dot dot_reads_descriptors accepts) staged through shared memory and read back
  // in the layout its broadcast wants, not held in registers and shuffled into it
  // (pipeline_loops.cpp, broadcast_into_dot_result).
  bool stage_broadcast_rows = false;
  // Whether `dot` will read its staged operands through matrix descriptors (sm_90's wgmma:
  // a 16-bit tile read K-major or, by the descriptor's transpose bit, MN-major, with no
  // copy either way). A tile copied transposed that feeds such dots both as it is and
  // transposed (the attention backward's Q^T in dK/dV, K^T in dQ) is staged once and read
  // both ways from the stage (codegen/gpu/split_dot_operand_reads.cpp gives each dot its
  // own read). Null: no target dot reads both ways without a copy.
  std::function<bool(const ir::Operation& dot)> dot_reads_descriptors;
  // Whether a dot may run asynchronously, its instructions still reading their operand
  // buffers while the next iteration runs (NVIDIA's wgmma: codegen/gpu/
  // plan_async_dots.cpp). A loop with such a dot reading its staged buffers gives them
  // one stage more than num_stages, where shared memory allows, so that the copies of
  // iteration i+S-1 never overwrite the stage the dot of iteration i-1 may still read.
  std::function<bool(const ir::Operation& dot)> dot_may_run_async;
  // Limits put on single loops where a plan did not fit the target's shared memory
  // (codegen/pipeline.cpp plans again with them), by loop number: a for loop's place in
  // pre-order among the function's for loops as the pipeliner finds them.
  struct LoopLimit {
    int max_stages = 1 << 30;
    bool async_dot_stage = true;  // whether it may get the stage more for an asynchronous dot
  };
  std::map<int, LoopLimit> loop_limits;
};

// A loop the pipeliner staged loads of into shared memory (pipeline_loops' report).
struct StagedLoop {
  int number = 0;  // PipelineOptions::loop_limits' key
  ir::SrcLoc loc;
  int stages = 0;   // what it was pipelined at
  int buffers = 0;  // the stages its buffers got (stages + 1 with the asynchronous dot's)
  // The shared_allocs its copies write (the program's ops as the pipeliner left them).
  std::vector<const ir::Operation*> allocs;
};
// The stages `loop` is pipelined at: its own tl::num_stages where it has one; else the
// launch's for an innermost loop (no loop inside it) with a tl::dot directly in its body
// fed by a load of the body (Triton's rule: AssignLatencies), and 1 for any other loop,
// with the reason in `why_not`. The pipeliner, the carried-induction rewrite and the
// asynchronous dots all ask it, so that they agree on which loops are pipelined.
int loop_num_stages(const ir::Operation& loop, int launch_num_stages, std::string* why_not = nullptr);

// Software-pipelines tl::range loops with num_stages > 1 (codegen/passes/pipeline_loops.cpp):
// loads issued num_stages-1 iterations ahead, into registers or through multi-buffered
// shared memory. Adds a `pipelined: ...` line to `remarks` per such loop; returns how
// many loops it pipelined.
// `staged`: where not null, every loop that pipelined a load into shared memory, what a
// program over the target's shared memory can give up (in the order pipelined).
int pipeline_loops(ir::Function& f, const PipelineOptions& o, std::vector<std::string>& remarks,
                   std::vector<StagedLoop>* staged = nullptr);

}  // namespace tl::passes

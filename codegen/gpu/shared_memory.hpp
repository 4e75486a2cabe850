// The shared-memory allocator (Triton's AllocationAnalysis): where each shared_alloc's
// buffer lives in the program's shared memory (LDS on AMD), so that buffers live at the
// same time never share a byte and buffers that are never live together may; the scratch
// region that layout conversions and reductions exchange data through goes above the
// buffers live where it is used (SharedMemoryPlan::scratch_offset). The pass
// allocate_shared_memory (codegen/gpu/passes.hpp) runs it and records the result in the IR,
// which the lowering reads. See shared_memory.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/ir/ir.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

struct SharedBuffer {
  const ir::Operation* alloc = nullptr;  // its shared_alloc
  int64_t bytes = 0;                     // stages * tile elements * element bytes
  int64_t align = 16;
  int64_t offset = 0;  // from the start of the program's shared memory
  // Live range, inclusive, in program points: ops numbered in pre-order, a for/if
  // covering the points of its regions (shared_memory.cpp says how uses widen it).
  int64_t first = 0, last = 0;

  bool live_with(const SharedBuffer& o) const { return first <= o.last && o.first <= last; }
  bool shares_bytes_with(const SharedBuffer& o) const {
    return offset < o.offset + o.bytes && o.offset < offset + bytes;
  }
};

// A program that needs more shared memory than its target has (its buffers, or them and
// the scratch region), as data: codegen/pipeline.cpp plans it again with fewer pipeline
// stages where a loop's buffers are live there, else makes `message` a compile error at
// `at`'s line.
struct SharedMemoryOverflow {
  int64_t needed = 0, limit = 0;
  // The buffer's shared_alloc that would end past the limit, or the op with the most
  // scratch where the scratch region would.
  const ir::Operation* at = nullptr;
  // The shared_allocs of the buffers live there: those the buffer would be placed among,
  // the buffer included; those live at ops that use the scratch region.
  std::vector<const ir::Operation*> live;
  std::string message;
};

struct SharedMemoryPlan {
  std::vector<SharedBuffer> buffers;  // in definition (pre-)order
  // Every value of shared-buffer type (a shared_alloc's result, a loop-carried argument
  // or result, a branch result) -> the buffers it may be (indices into `buffers`).
  std::unordered_map<const ir::Value*, std::vector<int>> buffers_of;
  int64_t buffer_bytes = 0;  // the end of the highest buffer
  // Where the scratch region (layout conversions, cross-warp reductions and scans,
  // gathers, sorts) starts: above every buffer live at an op that may use it
  // (uses_scratch), so that it may share bytes with buffers that are not, which the
  // barriers separate from it (insert_shared_barriers). Every use starts there or at a
  // second slot above (scratch_at).
  int64_t scratch_offset = 0;
  // The region's bytes: the largest use's (scratch_bytes(op)) rounded to 16, or, with a
  // second slot, that slot's offset in the region (a bank row multiple) and those again.
  int64_t scratch_bytes = 0;
  // Where each use's scratch starts: the region's start, or (shared_memory.cpp says when)
  // every other use in program order its second slot.
  std::unordered_map<const ir::Operation*, int64_t> scratch_at;
  const ir::Operation* largest_scratch_use = nullptr;
  // Where the program does not fit (the plan is then incomplete, not to be recorded).
  std::optional<SharedMemoryOverflow> overflow;

  // The buffer a shared_alloc defines, or -1.
  int index_of(const ir::Operation* alloc) const;
};

// The bytes of the scratch region the GPU lowering of `op` exchanges data through, 0 for
// none: a conversion through shared memory, a cross-warp reduction or scan (tl::reduce /
// tl::associative_scan included), a gather, a flip across warps, a sort across warps, a
// histogram, an atomic whose old values are read by threads that did not do it. The one
// answer for the allocator (allocate_shared_memory) and the lowering, which checks each
// of its uses against the slice the allocator recorded on the op. Reads the layouts the
// planning recorded (a tl bug where one is missing).
int64_t scratch_bytes(const ir::Operation& op);
// The dtype a built-in reduction or scan accumulates in on a GPU (f16 and bf16 sums and
// scans in f32), which its cross-warp scratch holds.
DType gpu_accumulator_dtype(const ir::Operation& reduce_or_scan);
inline bool uses_scratch(const ir::Operation& op) { return scratch_bytes(op) > 0; }

// Live ranges and offsets of every shared_alloc in `f`, and the scratch region above the
// buffers live where it is used. Where the first allocation (in placement order) would end
// past the target's `shared_bytes_per_program`, or the scratch region would, the plan's
// `overflow` says so, its message naming the bytes needed, the limit and `target`.
SharedMemoryPlan plan_shared_memory(const ir::Function& f, const TargetCapabilities& caps, const std::string& target);

// What allocate_shared_memory recorded in `f` (its ops' `smem` slices), read back for the
// lowering: buffers at their offsets, which values may be which buffer, the scratch region.
// Live ranges are not kept in the IR (the barriers are placed by then).
SharedMemoryPlan recorded_shared_memory(const ir::Function& f, const TargetCapabilities& caps);

// The bytes a shared_alloc's buffer takes: all its stages of its tile.
int64_t buffer_bytes(const ir::Operation& alloc);
// The alignment a buffer gets (shared_memory.cpp says why).
int64_t buffer_alignment(const ir::Operation& alloc, const TargetCapabilities& caps);

}  // namespace tl::gpu

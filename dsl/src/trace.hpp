// The tracer's state: the function being recorded, the insertion block, and the stack
// of open loops and branches with the tile cells each one has seen.
#pragma once

#include <memory>
#include <unordered_set>
#include <vector>

#include "codegen/ir/ir.hpp"
#include "tl/tile.hpp"

namespace tl::detail {

struct CellEntry {
  TileBase* cell;
  ir::Value* entry;  // loops: the body's block argument; branches: the value before the branch
  ir::Value* init;   // loops: the value before the loop
  ir::Value* then_value = nullptr;  // branches: the value at the end of the then region;
                                    // while loops: at the end of the condition region
  bool seen_in_then = false;
  ir::Value* after = nullptr;  // while loops: the body's block argument (`entry` is the condition region's)
};

struct Frame {
  // in_else: branches, tracing the else region; while loops, tracing the body.
  enum Kind { Loop, Branch, While } kind;
  ir::Operation* op;
  ir::Block* outer;  // where the loop or branch op sits
  std::vector<CellEntry> cells;
  bool in_else = false;
};

// TileBase::get's value for a tile never given one, and the error naming its use.
ir::Value* unassigned_placeholder();
std::string unassigned_message(const std::string& op);

// One trace in progress on this thread. Kernels trace on the launching thread, so
// concurrent first launches of different kernels each have their own.
class Trace {
 public:
  Trace(std::string kernel_name, ir::SrcLoc loc);
  ~Trace();
  Trace(const Trace&) = delete;

  static Trace& current(const Loc& loc);  // throws when no trace is open
  static Trace* current_or_null();

  ir::Function& function() { return *fn_; }
  std::unique_ptr<ir::Function> finish();

  // Appends an op at the insertion point.
  ir::Operation* emit(Op op, std::vector<ir::Value*> operands, const Loc& loc);
  ir::Value* emit1(Op op, std::vector<ir::Value*> operands, ir::Type result, const Loc& loc);
  // `pointer_range_32`: ir::ArgInfo's, for pointers.
  ir::Value* add_argument(ir::Type t, std::string name, bool divisible_by_16, bool pointer_range_32 = false);
  // The argument just added is a descriptor's CUtensorMap (ir::ArgInfo::tensor_map).
  void mark_tensor_map(const ir::Value* arg) { fn_->arg_info[size_t(arg->index)].tensor_map = true; }

  int depth() const { return int(frames_.size()); }

  // The launch's shared-memory budget, set by the runtime before tracing when the target
  // has one (GPUs): every tl::shared is counted against it as it is traced, so the error
  // names the line that goes over. 0: no budget (the CPU's buffers are stack arrays).
  void set_shared_budget(int64_t limit, std::string target) { shared_limit_ = limit; shared_target_ = std::move(target); }
  int64_t shared_limit() const { return shared_limit_; }
  const std::string& shared_target() const { return shared_target_; }
  int64_t shared_bytes = 0;  // of every tl::shared traced so far
  // The launch's registers, set by the runtime before tracing on GPUs: `lanes` threads a
  // program (num_warps x wave size), each with `registers_per_lane` 32-bit registers of
  // the target's file. A tile with more elements a lane than that is refused where it is
  // made (emit1). 0: no limit (the CPU).
  void set_register_budget(int lanes, int registers_per_lane, int num_warps, std::string target) {
    lanes_ = lanes, registers_per_lane_ = registers_per_lane, num_warps_ = num_warps, register_target_ = std::move(target);
  }
  // The FP8 formats the target's matrix instructions take, set by the runtime before
  // tracing on GPUs (from the capability table): a tl::dot of another format is refused
  // at its line, naming the formats the target has. Unset (the CPU): every format.
  void set_dot_fp8_formats(std::vector<DType> formats, std::string target) {
    dot_fp8_known_ = true, dot_fp8_ = std::move(formats), dot_fp8_target_ = std::move(target);
  }
  // Whether the launch is for the CPU, set by the runtime before tracing: what has no CPU
  // form (tl::inline_asm_elementwise) traces its fallback there, or is refused at its line.
  void set_cpu_target(bool cpu) { cpu_target_ = cpu; }
  bool cpu_target() const { return cpu_target_; }
  bool dot_fp8_known() const { return dot_fp8_known_; }
  const std::vector<DType>& dot_fp8_formats() const { return dot_fp8_; }
  const std::string& dot_fp8_target() const { return dot_fp8_target_; }
  std::vector<Frame>& frames() { return frames_; }
  ir::Block* block() { return block_; }
  void set_block(ir::Block* b) { block_ = b; }

  // The tile cells holding a value of this trace (TileBase registers them). Those still
  // alive when the trace ends were kept past it (in a static, a global): ~Trace makes them
  // stale, so that a later trace using one reports it instead of reading a dead value.
  void track(TileBase* cell) { cells_.insert(cell); }
  void forget(TileBase* cell);  // from this trace and the ones it is nested in
  // The block arguments end_for drops (those of cells the loop does not carry): kept
  // until the trace ends, since a copy of a cell may still point at one.
  std::vector<std::unique_ptr<ir::Value>> retired_values;
  // A tile without a value was read (TileBase::get gave unassigned_placeholder()): an
  // error the operation reading it threw, at its line, is about that tile.
  bool unassigned_read = false;

 private:
  std::unique_ptr<ir::Function> fn_;
  ir::Block* block_;
  std::vector<Frame> frames_;
  Trace* previous_;
  ir::SrcLoc kernel_loc_;
  std::unordered_set<TileBase*> cells_;
  int64_t shared_limit_ = 0;
  std::string shared_target_;
  int lanes_ = 0, registers_per_lane_ = 0, num_warps_ = 0;
  std::string register_target_;
  bool cpu_target_ = false;
  bool dot_fp8_known_ = false;
  std::vector<DType> dot_fp8_;
  std::string dot_fp8_target_;

  void check_tile_size(Op op, const ir::Type& t, const Loc& loc) const;
  void check_combine(Op op, const std::vector<ir::Value*>& operands, const Loc& loc) const;
};

// Whether `b` is the region of a tl::reduce / tl::associative_scan combine function.
bool is_combine_region(const ir::Block* b);

// A conversion to or from an OCP MX storage type (f4e2m1, e8m0), traced as integer and
// shape ops every target lowers (dsl/src/mx_formats.cpp).
ir::Value* mx_convert(ir::Value* a, DType to, const Loc& loc);

}  // namespace tl::detail

// Axis analysis, Triton's AxisInfo: for every integer or pointer tile, per dimension,
//   contiguity   - elements come in runs of this many consecutive values (+1 each)
//                  along the dim, runs starting at multiples of the run length;
//   divisibility - the largest power of two dividing the first value of every run
//                  (for pointers: the byte address);
//   constancy    - elements come in runs of this many equal values along the dim.
// Sources: arange, constants, kernel arguments (`arg_info[i].divisible_by_16`, like
// Triton's tt.divisibility=16), and the rules of add/mul/splat/broadcast/addptr/...
// The GPU lowering reads it to decide how wide a load or store may be: a 128-bit
// access needs 16/elem_bytes contiguous elements whose first address is 16-aligned.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace tl::passes {

struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;  // one entry per dim (1 for scalars)
  std::optional<int64_t> constant;                            // value when known (scalars, splats)
  std::string str() const;
};

class AxisAnalysis {
 public:
  explicit AxisAnalysis(const ir::Function& f);
  // The facts about v; conservative (1, 1, 1) for values the rules do not cover.
  const AxisInfo& get(const ir::Value* v) const;

  // The widest access, in elements, that a load/store through the pointer tile `ptr`
  // may use along dim `dim`: contiguous, and its first address aligned to the whole
  // access; capped at `max_bytes` per access.
  int vector_width(const ir::Value* ptr, int dim, int max_bytes = 16) const;
  // How many consecutive elements along `dim` share one mask value.
  int64_t mask_constancy(const ir::Value* mask, int dim) const;

 private:
  void block(const ir::Block& b);
  void op(const ir::Operation& op);
  AxisInfo& set(const ir::Value* v, AxisInfo info);
  std::unordered_map<const ir::Value*, AxisInfo> info_;
  const ir::Function& f_;
};

}  // namespace tl::passes

// Axis analysis, Triton's AxisInfo: for every integer or pointer tile, per dimension d,
// stated for every index i of the tile (the other dims' indices held):
//   contiguity c   - where i_d % c < c - 1: v[i + e_d] == v[i] + 1 (for pointers: one
//                    element further), i.e. aligned runs of c consecutive values;
//   divisibility v - where i_d % contiguity_d == 0 (every run's first element; every
//                    element when contiguity is 1): v[i] is a multiple of v (pointers:
//                    the byte address), v a power of two;
//   constancy c    - where i_d % c < c - 1: v[i + e_d] == v[i];
// and, for the whole tile, a constant every element equals, and an inclusive value range
// [lo, hi] every element lies in (integers only; unknown is the dtype's full range).
// Each rule in axis_analysis.cpp says why it keeps these; axis_analysis_rules_test checks
// every rule by brute force: the facts it claims against the values the program computes.
// Integer arithmetic wraps on every target; like Triton's, the analysis assumes that the
// index arithmetic of offsets and masks does not (docs/language.md): `arange + INT_MAX`
// is not contiguous where it wraps. Signs are not assumed: `x / 4` and `x % 4` are
// constant or contiguous over aligned runs only where the range proves x >= 0. Like
// wrapping, a division by zero is assumed not to happen: `x % N` of a run-time N (a
// multiple of 16) is contiguous over aligned runs of x >= 0, which x % 0 (= 0) is not.
// Sources: arange, constants, program ids, kernel arguments (`arg_info[i].divisible_by_16`,
// like Triton's tt.divisibility=16; their values are otherwise unknown), the user's
// hints (tl::multiple_of / max_contiguous / max_constancy: a `hint` op's facts, taken as
// given) and promises (tl::assume: `x > 0`, `x % 16 == 0`, about a scalar x wherever it
// is used), and the rules of
// add/mul/splat/broadcast/addptr/...; loop-carried values and loop results come from a
// fixed point over the loop body (axis_analysis.cpp says why one is needed).
// The GPU lowering reads it to decide how wide a load or store may be: a 128-bit
// access needs 16/elem_bytes contiguous elements whose first address is 16-aligned.
// The range is for buffer loads/stores (AMD), whose offsets are 32-bit and must not be
// negative, and for the rules of / and %, which hold over aligned runs only for
// non-negative dividends.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace tl::passes {

// Inclusive bounds of every element's value. Integers of up to 63 value bits only: u64
// (and floats, pointers) always have the full int64 range, which means unknown.
struct ValueRange {
  int64_t lo = std::numeric_limits<int64_t>::min();
  int64_t hi = std::numeric_limits<int64_t>::max();
  bool operator==(const ValueRange&) const = default;
};

struct AxisInfo {
  std::vector<int64_t> contiguity, divisibility, constancy;  // one entry per dim (1 for scalars)
  std::optional<int64_t> constant;                            // value when known (scalars, splats)
  ValueRange range;                                           // the dtype's full range when unknown
  bool operator==(const AxisInfo&) const = default;
  std::string str() const;
};

class AxisAnalysis {
 public:
  explicit AxisAnalysis(const ir::Function& f);
  // The facts about v; conservative (1, 1, 1, full range) for values the rules do not cover.
  const AxisInfo& get(const ir::Value* v) const;

  // The widest access, in elements, that a load/store through the pointer tile `ptr`
  // may use along dim `dim`: contiguous, and its first address aligned to the whole
  // access; capped at `max_bytes` per access.
  int vector_width(const ir::Value* ptr, int dim, int max_bytes = 16) const;
  // How many consecutive elements along `dim` share one mask value.
  int64_t mask_constancy(const ir::Value* mask, int dim) const;
  // Every element of the integer tile v is in [0, 2^31 - 1]: it may be used as (or
  // truncated to) a non-negative i32, what a 32-bit buffer offset needs.
  bool fits_nonnegative_i32(const ir::Value* v) const;

 private:
  void block(const ir::Block& b);
  void op(const ir::Operation& op);
  void loop(const ir::Operation& op);
  void while_loop(const ir::Operation& op);
  bool join_back_edge(const ir::Value* arg, const ir::Value* yielded, int round);
  ValueRange range_of(const ir::Operation& op) const;
  // tl::assume's facts, read before the walk (axis_analysis.cpp): by the scalar they are about.
  struct Assumed {
    ValueRange range;
    int64_t divisibility = 1;
    std::optional<int64_t> constant;
  };
  void collect_assumptions(const ir::Block& b);
  void assume_fact(const ir::Value* cond, const ir::Block& where);
  std::unordered_map<const ir::Value*, Assumed> assumed_;
  AxisInfo& set(const ir::Value* v, AxisInfo info);
  std::unordered_map<const ir::Value*, AxisInfo> info_;
  const ir::Function& f_;
};

}  // namespace tl::passes

// Integer arithmetic with tl's one semantics, emitted the same way by every target's
// lowering (CPU, NVIDIA, AMD), so that a kernel gives one answer everywhere
// (docs/language.md, "Integer semantics"):
// - add, sub, mul, neg and shl wrap (two's complement); no nsw/nuw flags, so LLVM never
//   folds `v + 1 > v` to true on one target while another wraps;
// - x / 0 and x % 0 give 0; INT_MIN / -1 wraps to INT_MIN and INT_MIN % -1 is 0 (LLVM
//   leaves all of them undefined and x86 traps on them);
// - shifts by the bit width or more give 0 (<<, unsigned >>) or the sign fill (signed >>),
//   where LLVM's shifts are poison.
// With a constant operand that rules the special cases out, LLVM folds the guards away.
#pragma once

#include "tl/opcode.hpp"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace tl::codegen {

// One of add, sub, mul, div, rem, min, max, band, bor, bxor, shl, shr on integer
// operands of one LLVM integer (or integer vector) type. `no_signed_wrap`: add, sub, mul
// and shl are nsw, for index arithmetic only (codegen/passes/index_arithmetic.cpp), which
// the language lets not wrap; shl keeps its guard for over-wide shifts.
llvm::Value* integer_binary(llvm::IRBuilderBase& b, Op op, bool is_signed, llvm::Value* x, llvm::Value* y,
                            bool no_signed_wrap = false);

// How many times the body of `tl::range(lb, ub, step)` runs (i32 operands): for lb,
// lb + step, ... while below ub for a positive step, above it for a negative one
// (Python's range; docs/language.md). Counted in 64 bits, so that no bound near INT_MAX or
// INT_MIN makes it wrap: at most 2^32 - 1, returned as an i32 holding that count unsigned
// (the lowerings count it down to 0). A zero step gives 0: the caller faults before.
llvm::Value* loop_trip_count(llvm::IRBuilderBase& b, llvm::Value* lb, llvm::Value* ub, llvm::Value* step);

// The same loop as a rotated loop on its induction variable (what LLVM's loop passes and
// the GPU backends handle best; on gfx942 it kept the AMD code-quality suite's loop
// kernels at their registers, where counting trips cost lse_stream 2 to 6 VGPRs): whether
// the first trip runs (lb before ub in the step's direction), and, from a trip at iv with
// next = iv + step (which may be nsw: where it wraps the test does not read it), whether
// next is a trip too: iv + step did not wrap, and then next is before ub. A step of unknown sign
// selects between the two directions; a zero step runs no trip past the first test
// (the caller faults before).
llvm::Value* loop_enters(llvm::IRBuilderBase& b, llvm::Value* lb, llvm::Value* ub, llvm::Value* step);
llvm::Value* loop_continues(llvm::IRBuilderBase& b, llvm::Value* iv, llvm::Value* next, llvm::Value* ub,
                            llvm::Value* step);

}  // namespace tl::codegen

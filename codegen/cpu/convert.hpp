// IR builders for the narrow float conversions (bf16, f16 and the four FP8 formats),
// written as integer bit manipulation so that the result is exact and the same on every
// CPU (and GPU) whatever its conversion instructions or libcalls. Narrow floats travel
// as their codes: i16 for f16/bf16, i8 for FP8. Every helper accepts a scalar or a
// vector of the stated element type.
#pragma once

#include "tl/dtype.hpp"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace tl::codegen {

// The code's value as f32 (exact: every narrow value is an f32). NaN codes keep their
// payload in the top mantissa bits, as tl::decode does.
llvm::Value* decode_to_f32(llvm::IRBuilderBase& b, llvm::Value* code, DType from);

// f32 -> code, rounding to nearest even. Overflow gives +-max finite when `saturate`,
// else inf (or the format's NaN where it has no inf); NaN gives the format's quiet NaN;
// formats without -0 turn -0 (and negative underflow) into +0.
llvm::Value* encode_from_f32(llvm::IRBuilderBase& b, llvm::Value* x, DType to, bool saturate);

// f64 -> f32 rounding to odd: a later rounding of the result to at most 22 significant
// bits is then the same as rounding the f64 once (no double-rounding error).
llvm::Value* f64_to_f32_round_odd(llvm::IRBuilderBase& b, llvm::Value* x);

// f64 -> code, rounded once from the f64.
llvm::Value* encode_from_f64(llvm::IRBuilderBase& b, llvm::Value* x, DType to, bool saturate);

// Integer (any width, signed or not) -> code, rounded once from the exact integer.
llvm::Value* encode_from_int(llvm::IRBuilderBase& b, llvm::Value* v, bool is_signed, DType to, bool saturate);

// x*y+z for narrow float operands given as f32 (exact values of the narrow format), with
// one rounding to `to`: the exact result is rounded to odd at f32 and then encoded.
llvm::Value* fma_narrow(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y, llvm::Value* z, DType to);

}  // namespace tl::codegen

// The one matcher for "a dot operand read from a shared buffer": the operand is a
// shared_load's result, possibly converted (an FP8 tile cast to the dot's type, or u8
// codes bitcast to their OCP MX format for a scaled dot) and possibly transposed (B^T
// stored K-contiguous), in that order:
//   operand = [trans]( [cast | bitcast]( shared_load(buffer, stage) ) )
// assign_layouts reads such a tile straight into the operand layout (Triton's local_load
// into a dot operand); plan_dot_operand_sources lets the dot read it a K step at a time;
// the lowering finds the read again from the operand. Structural only: who else uses the
// values is each caller's question. Private to codegen/gpu.
#pragma once

#include <optional>

#include "codegen/ir/ir.hpp"

namespace tl::gpu {

struct SharedDotOperand {
  const ir::Operation* read = nullptr;   // the shared_load
  const ir::Operation* cast = nullptr;   // the conversion (cast or bitcast) of the registers read, or null
  const ir::Operation* trans = nullptr;  // the transpose, or null
  // The registers the dot takes, before any transpose (the cast's result, else the read's).
  const ir::Value* registers = nullptr;
};

std::optional<SharedDotOperand> match_shared_dot_operand(const ir::Value* operand);

// Whether `op` converts the registers a dot operand's read gives, element by element: a
// cast, or a bitcast (same width: a register of the read is a register of the result).
bool converts_dot_operand_registers(const ir::Operation& op);

}  // namespace tl::gpu

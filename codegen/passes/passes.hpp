// Tile-IR passes, one per file, each with a single entry point.
#pragma once

#include "codegen/ir/ir.hpp"

namespace tl::passes {

// Removes ops whose results are unused and that have no side effects.
void eliminate_dead_code(ir::Function& f);
// Merges identical side-effect-free ops (same op, operands, attributes and type).
void eliminate_common_subexpressions(ir::Function& f);

}  // namespace tl::passes

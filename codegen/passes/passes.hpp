// Tile-IR passes, one per file, each with a single entry point.
#pragma once

#include "codegen/ir/ir.hpp"

namespace tl::passes {

// Removes ops whose results are unused and that have no side effects.
void eliminate_dead_code(ir::Function& f);
// Merges identical side-effect-free ops (same op, operands, attributes and type).
void eliminate_common_subexpressions(ir::Function& f);
// Inserts a barrier between shared-memory accesses of one buffer that other threads'
// accesses may conflict with (read after write, write after read or write), across
// branches and loop back-edges, unless one already separates them (Triton's Membar).
// Returns how many it inserted.
int insert_barriers(ir::Function& f);

}  // namespace tl::passes

// How much shared memory a program's buffers take before the allocator places them: the
// one estimate the passes that add shared buffers ask before adding one (the pipeliner's
// stages and staged dot operands, pipeline_loops.cpp; plan_dot_operand_sources' staged
// conversions). The allocator (codegen/gpu/shared_memory.cpp) gives the final answer
// afterwards, and codegen/pipeline.cpp plans again with fewer stages where it does not
// fit; this estimate only keeps those passes from adding what cannot fit.
//
// The figure is the most bytes of buffers live at one point of the program, each buffer
// live over the allocator's structured live range (from its shared_alloc to its last use,
// through the loop-carried and branch values that may be it, to the end of a loop that
// uses it without allocating it, over the whole of a loop that carries it) and rounded up
// to a bank row (128 bytes: the allocator aligns every buffer that large to one), so that
// buffers that are never live together (attention's masked and unmasked loops, each with
// its own stages) are not counted twice. Scratch for layout conversions and reductions is
// not in it: before layouts exist only the caller knows what it expects to need.
#pragma once

#include <cstdint>
#include <functional>

#include "codegen/ir/ir.hpp"

namespace tl::passes {

// The bytes a shared_alloc's buffer takes, as the caller counts it (the pipeliner counts a
// buffer it is about to multi-buffer at the loop's stages).
using SharedBytesOf = std::function<int64_t(const ir::Operation& alloc)>;

// The most bytes of shared buffers live at one point of `f`, or of the points inside
// `within` (an op of `f`, e.g. a loop: a buffer about to be added there is live with
// those). `bytes_of` defaults to every stage of the buffer's tile.
int64_t live_shared_bytes(const ir::Function& f, const ir::Operation* within = nullptr,
                          const SharedBytesOf& bytes_of = {});

}  // namespace tl::passes

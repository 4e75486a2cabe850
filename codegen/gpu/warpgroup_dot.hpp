// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a): the questions every pass that plans
// for it asks, answered once.
//  - Which operands a wgmma reads through a matrix descriptor: a tile read from a shared
//    buffer in the dot's own dtype (no conversion on the way), possibly transposed.
//  - How such a buffer lies in shared memory: Triton's NVMMASharedEncoding, the contiguous
//    dim in rows of the swizzle width (128, 64 or 32 bytes), 16-byte units XORed with the
//    row index, a tile wider than the swizzle stored as column blocks one after another
//    (ir::SharedEncoding::row). The descriptor says the swizzle, the distance between 8-row
//    groups (8 swizzle rows) and between column blocks.
//  - Whether a dot can be a warpgroup dot at all, and why not (a launch that forces
//    mma_version=3 reports it at the dot's line).
// Private to codegen/gpu (and codegen/pipeline.cpp, which tells the pipeliner which loops
// will keep a dot in flight).
#pragma once

#include <optional>
#include <string>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/ir/ir.hpp"

namespace tl::gpu {

struct DescriptorOperand {
  const ir::Operation* read = nullptr;   // the shared_load
  const ir::Operation* alloc = nullptr;  // the buffer's shared_alloc
  const ir::Operation* trans = nullptr;  // the transpose, or null
  // The buffer stores the operand's K fastest (A [M, K] as stored; B^T [N, K] transposed).
  // Otherwise it is MN-major, which only 16-bit wgmma instructions read (their transpose
  // immediates).
  bool k_major = true;
};

// Operand `index` (0: A, 1: B) of a dot, when a wgmma can read it through a descriptor:
// `[trans](shared_load(buffer))` of a rank-2 shared_alloc, the read (and the transpose)
// used by this dot alone. Every pass and the lowering ask this one matcher.
std::optional<DescriptorOperand> match_descriptor_operand(const ir::Value* operand, int index);

// The swizzle width (bytes) of a buffer read through descriptors: the widest of 128, 64,
// 32 that its contiguous rows are a multiple of; 0 when none is (rows under 32 bytes) or
// the other dims are not a multiple of the 8 rows of a swizzle atom.
int descriptor_swizzle_bytes(const ir::Type& buffer);
// The encoding of such a buffer (descriptor_swizzle_bytes > 0).
ir::SharedEncoding descriptor_encoding(const ir::Type& buffer);

// Why `dot` cannot be a warpgroup dot on `caps` with `num_warps` warps ("" when it can):
// no wgmma of its dtypes, a tile the warpgroups cannot split, B (or A of an 8- or 32-bit
// type) not read from a shared buffer, an MN-major operand of a type without transposes,
// a buffer no swizzle fits. A 16-bit A that is not a shared read comes from registers. `operands_known` false: the operands'
// sources are not settled yet (the pipeliner asks before it stages them) and only the
// types and the tile are checked.
std::string warpgroup_dot_obstacle(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps,
                                   bool operands_known = true);

}  // namespace tl::gpu

// Which shared-memory allocations a shared-typed value may be: the shared_alloc it is,
// or, for a loop-carried value, a loop's result or a branch's result, the union of what
// flows into it (inits and yields, to a fixed point: a yield feeds an earlier body
// argument). One answer for everything that reasons about shared buffers: barrier
// insertion (codegen/passes/insert_barriers.cpp) and the GPU's allocator and lowering
// (codegen/gpu/shared_memory.cpp). Triton's Allocation analysis keeps the same map from
// its buffer values to their allocations.
#pragma once

#include <unordered_map>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace tl::passes {

class SharedBuffers {
 public:
  explicit SharedBuffers(const ir::Function& f);

  // The shared_alloc ops `v` may be, in the order the program defines them; empty for a
  // value that is not a shared buffer.
  const std::vector<const ir::Operation*>& of(const ir::Value* v) const;
  // Every shared_alloc, in pre-order.
  const std::vector<const ir::Operation*>& allocations() const { return allocs_; }
  const std::unordered_map<const ir::Value*, std::vector<const ir::Operation*>>& all() const { return of_; }

 private:
  void collect(const ir::Block& b);
  void propagate(const ir::Block& b, bool& changed);
  void merge(const ir::Value* into, const ir::Value* from, bool& changed);

  std::vector<const ir::Operation*> allocs_;
  std::unordered_map<const ir::Value*, std::vector<const ir::Operation*>> of_;
};

}  // namespace tl::passes

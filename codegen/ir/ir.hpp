// The tile IR: typed, shaped SSA with nested regions (for/if) and the user's source
// location on every operation. It is what the tracer records, what every pass reads
// and rewrites, and what the targets lower. It owns no LLVM types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "codegen/ir/layout.hpp"
#include "tl/dtype.hpp"
#include "tl/opcode.hpp"

namespace tl::ir {

// Where a value lives. Registers: a tile (or scalar) distributed over the program's
// threads. Shared: a buffer in the program's shared memory (LDS on AMD), which ops read
// and write through, never used as a value itself.
enum class MemorySpace : uint8_t { registers, shared };

// A tile type: element dtype (with the pointee for pointers) and a static shape;
// an empty shape is a scalar. A shared-memory buffer is `stages` tiles of `shape`
// (a multi-buffered ring: the stage count is any positive number and sits outside the
// power-of-two tile shape, so a 3-stage pipeline needs no 4th buffer).
//
// Pointers may point to pointers (a `ptr<ptr<f16>>` parameter, Triton's arrays of
// pointers): `pointee` is then ptr, what a load through it gives, and the loaded
// pointers' own pointee is told by `pointee_levels` (how many pointers deep the pointee
// is: 1 for ptr<ptr<f16>>, 2 for ptr<ptr<ptr<f16>>>) and `element` (f16 for both).
// Every pass that reads `pointee` as "what a load gives" stays right; pointee_type()
// is the whole type of a loaded element.
struct Type {
  DType dtype = DType::i32;
  DType pointee = DType::i32;  // meaningful only when dtype == ptr
  std::vector<int> shape;
  MemorySpace space = MemorySpace::registers;
  int stages = 0;  // shared buffers only: how many tiles of `shape`
  int pointee_levels = 0;      // pointers to pointers only (pointee == ptr): see above
  DType element = DType::i32;  // pointers to pointers only: the innermost pointee

  // A scalar pointer to values of type `to` (which may itself be a pointer).
  static Type pointer_to(const Type& to) {
    Type t{DType::ptr, to.dtype, {}};
    if (to.is_ptr()) {
      t.pointee_levels = to.pointee_levels + 1;
      t.element = to.pointee_levels > 0 ? to.element : to.pointee;
    }
    return t;
  }
  // The scalar type of what a load through this pointer gives.
  Type pointee_type() const {
    if (pointee_levels == 0) return Type{pointee, pointee, {}};
    Type t{DType::ptr, pointee_levels > 1 ? DType::ptr : element, {}};
    t.pointee_levels = pointee_levels - 1;
    t.element = t.pointee_levels > 0 ? element : DType::i32;
    return t;
  }

  static Type shared_buffer(DType elem, std::vector<int> tile_shape, int stages) {
    return Type{elem, elem, std::move(tile_shape), MemorySpace::shared, stages};
  }
  bool is_shared() const { return space == MemorySpace::shared; }

  bool is_scalar() const { return shape.empty(); }
  bool is_ptr() const { return dtype == DType::ptr; }
  int64_t numel() const {
    int64_t n = 1;
    for (int d : shape) n *= d;
    return n;
  }
  int rank() const { return int(shape.size()); }
  // (register tiles only: a shared buffer's shape is not changed by reshaping a value)
  Type with_shape(std::vector<int> s) const { Type t = *this; t.shape = std::move(s); return t; }
  Type with_dtype(DType d) const { Type t = *this; t.dtype = d; return t; }
  Type scalar() const { return with_shape({}); }
  // dtype of the elements as loaded from memory (the pointee for pointers)
  bool operator==(const Type& o) const {
    return dtype == o.dtype && shape == o.shape && (dtype != DType::ptr || same_pointee(o)) && space == o.space &&
           stages == o.stages;
  }
  bool operator!=(const Type& o) const { return !(*this == o); }
  // Pointers: whether both point to the same type (levels and innermost element included).
  bool same_pointee(const Type& o) const {
    return pointee == o.pointee && pointee_levels == o.pointee_levels && (pointee_levels == 0 || element == o.element);
  }
  std::string str() const;
};

struct SrcLoc {
  const char* file = "";  // std::source_location::file_name(): static storage
  unsigned line = 0;
};

class Operation;
class Block;

class Value {
 public:
  Type type;
  Operation* def = nullptr;  // null for block arguments
  Block* owner = nullptr;    // the block whose argument this is, or null
  int index = 0;             // result or argument index
  // GPU planning (codegen/gpu passes), empty before it and on the CPU: the distributed
  // layout the value lives in, or `rematerialized` for cheap index math that has none and
  // is emitted wherever it is used, in the layout of its user (Triton's
  // rematerialization). Printed by Function::str.
  std::optional<Layout> layout;
  bool rematerialized = false;
};

// Per-argument facts from the launch, like Triton's specialization.
struct ArgInfo {
  std::string name;
  bool divisible_by_16 = false;  // pointers: 16-byte aligned; ints: value % 16 == 0
  // Pointers: every byte the kernel may access through it lies less than 2 GiB
  // (kBufferNumRecords) past it (Triton's AMD `tt.pointer_range = 32`), known from the
  // launch's tl::buffer: non-negative offsets from it fit a buffer access's 32 bits.
  bool pointer_range_32 = false;
  // NVIDIA sm_90: the argument is a descriptor's CUtensorMap, 128 bytes passed by value
  // as a grid constant (its value a pointer to them), read only by tensor_map_load.
  bool tensor_map = false;
};

class Block {
 public:
  std::vector<std::unique_ptr<Value>> args;
  std::vector<std::unique_ptr<Operation>> ops;
  Operation* parent = nullptr;  // the op owning this region; null for the function body

  Value* add_arg(Type t);
  Operation* terminator() const;  // the trailing yield, or null
};

class Operation {
 public:
  Op op;
  std::vector<Value*> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::vector<std::unique_ptr<Block>> regions;
  Block* parent = nullptr;
  SrcLoc loc;
  // attributes; which ones an op uses is documented in ops.md (docs/ir.md)
  int64_t i0 = 0, i1 = 0;
  double f = 0.0;
  std::vector<int> ints;
  std::string str;
  // GPU planning: the layout an op without a tile result works in (a store, a tile
  // atomic, a global_load_to_shared), when it is not its operands' own.
  std::optional<Layout> layout;
  // GPU planning: how the shared memory an op exchanges data through is laid out (a
  // convert_layout through shared memory).
  std::optional<SharedEncoding> shared;
  // GPU planning (plan_copies): how a global_load_to_shared copies, in `layout`.
  struct CopyPlan {
    int chunk_bytes = 0;  // what one lane moves per load (AMD global_load_lds_dwordxN, cp.async's size)
    // AMD: through a buffer resource holding the offsets' uniform part (their lane parts
    // small and non-negative, their constants in soffset): masked-off chunks need no branch.
    bool through_resource = false;
    bool operator==(const CopyPlan&) const = default;
  };
  std::optional<CopyPlan> copy;
  // GPU planning (allocate_shared_memory): the bytes of the program's shared memory the op
  // owns: a shared_alloc's buffer (all its stages), or the scratch an op exchanges data
  // through (gpu::scratch_bytes), from `offset`.
  struct SharedSlice {
    int64_t offset = 0, bytes = 0;
    bool operator==(const SharedSlice&) const = default;
  };
  std::optional<SharedSlice> smem;

  Value* result(int i = 0) const { return results.at(i).get(); }
  Value* add_result(Type t);
  Block* add_region();
};

class Function {
 public:
  std::string name;
  SrcLoc loc;
  Block body;  // the kernel arguments are body.args
  std::vector<ArgInfo> arg_info;
  // GPU planning: the warps a program runs, which every layout and the lowering are made
  // for (codegen/pipeline.cpp records the launch's num_warps on the planned copy; 0 on
  // the traced function and on the CPU). Printed `attributes {num_warps = 4}`.
  int num_warps = 0;

  std::string str(bool with_locations = true) const;
};

// "file.cpp:12": a source location as compile remarks name it (the file without its folder).
std::string short_location(const SrcLoc& l);

// Replace every use of `from` inside `scope` (recursively) with `to`.
void replace_all_uses(Block& scope, Value* from, Value* to);
// Visit every op, pre-order.
template <class F> void walk(Block& b, F&& f) {
  for (auto& op : b.ops) {
    f(*op);
    for (auto& r : op->regions) walk(*r, f);
  }
}

// Checks the structural and type rules every pass relies on; throws tl::compile_error
// naming the op and its source line.
void verify(const Function& f);
// Stable hash of the canonical form (locations left out): 32 hex characters.
std::string hash(const Function& f);

}  // namespace tl::ir

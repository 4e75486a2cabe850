// The CPU lowering's shared state: one Lowerer turns one tile-IR function into one LLVM
// function with the CPU kernel ABI (see target.cpp). Its methods are split by concern
// over lower.cpp (driver, control flow, tiles and loops), elementwise.cpp, memory.cpp,
// reduce.cpp and debug.cpp.
//
// Representation: a scalar is an SSA value; a tile is either a stack buffer (an alloca
// of numel elements, row-major) or "rematerialized": recomputed per element where it is
// read (fusion.cpp says which). That fuses elementwise chains into one loop, and brings
// address and mask arithmetic such as `x + pid * BLOCK + arange(0, BLOCK)` into the load
// loop as an affine expression the loop vectorizer turns into a contiguous access. Element values in SSA ("register"
// form) are: i1 as i1, f16/bf16 as i16 codes, FP8 as i8 codes, everything else natural;
// in buffers and memory i1 is an i8.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/target.hpp"

namespace tl::codegen::cpu {

// A position in a tile: one i64 per dimension and the row-major flat index.
struct Idx {
  std::vector<llvm::Value*> dims;
  llvm::Value* flat = nullptr;
};

struct TileRep {
  llvm::Value* scalar = nullptr;  // scalars: the SSA value (register form)
  llvm::Value* buf = nullptr;     // materialized tiles: the buffer
  bool remat = false;             // recomputed from its defining op at each read
};

// The runtime entry points the generated code calls (defined in runtime/cpu_device.cpp).
inline constexpr const char* kFaultFn = "tl_cpu_fault";
// tl_cpu_fault's kinds: a failed device_assert (the message is its text), an access outside
// every allocation (TL_BOUNDS_CHECK), a run-time error of the program (the message says it).
inline constexpr int kFaultAssert = 0, kFaultOutOfBounds = 1, kFaultRuntimeError = 2;
inline constexpr const char* kPrintFn = "tl_cpu_print";
inline constexpr const char* kCheckFn = "tl_cpu_check";
// The metadata on each stack buffer naming the line of the op it is for: !{file, line}.
inline constexpr const char* kLocMetadata = "tl.loc";
// A constant string beside each kernel, one character per argument ('p' for a pointer,
// '-' otherwise), so that the runtime's bounds checker knows which slots are pointers.
inline constexpr const char* kPtrArgsSuffix = ".ptrargs";

std::string kernel_symbol(const std::string& function_name);

class Lowerer {
 public:
  // `features`: the LLVM target features, which say what masked accesses the CPU has.
  Lowerer(const ir::Function& f, llvm::Module& m, const CompileOptions& opts, const std::string& symbol,
          const std::string& features);
  void run();

  // ---- types (lower.cpp)
  llvm::Type* reg_type(DType t);
  llvm::Type* mem_type(DType t);
  llvm::Value* to_mem(llvm::Value* reg, DType t);
  llvm::Value* from_mem(llvm::Value* mem, DType t);
  llvm::Value* zero(DType t);

  // ---- tiles, indices and loops (lower.cpp)
  TileRep& rep(const ir::Value* v);
  // Values held as one SSA value (TileRep::scalar): scalars, and shared buffers (their
  // stack buffer's address); ssa_type is that value's LLVM type.
  static bool in_ssa(const ir::Type& t);
  llvm::Type* ssa_type(const ir::Type& t);
  llvm::Value* alloc_buffer(const ir::Type& t, const char* name = "tile");
  llvm::Value* alloc_scalar(llvm::Type* t, const char* name = "acc");
  llvm::Value* buf_ptr(llvm::Value* buf, DType t, llvm::Value* flat);
  llvm::Value* load_buf(llvm::Value* buf, DType t, llvm::Value* flat);
  void store_buf(llvm::Value* buf, DType t, llvm::Value* flat, llvm::Value* reg);
  // shared_load / shared_store (memory.cpp): the stage's first element; the store.
  llvm::Value* shared_stage_ptr(const ir::Operation& op);
  void lower_shared_store(const ir::Operation& op);
  // tl::amd::global_load_to_shared: a plain masked copy (the CPU has nothing asynchronous).
  void lower_global_load_to_shared(const ir::Operation& op);
  Idx idx_from_dims(const std::vector<int>& shape, std::vector<llvm::Value*> dims);
  Idx idx_from_flat(const std::vector<int>& shape, llvm::Value* flat);
  // Emits counted loops over `shape` (innermost = last dimension) and calls `body` with
  // the builder inside the innermost one; the builder ends up after the nest.
  void loop_nest(const std::vector<int>& shape, const std::function<void(const Idx&)>& body);
  static constexpr int kUnrollLimit = 32, kSmallLoop = 8;
  llvm::MDNode* loop_metadata(bool unroll, bool vectorize);
  // Element `idx` of `v` (idx is a position in v's shape; ignored for scalars).
  llvm::Value* elem(const ir::Value* v, const Idx& idx);
  // Writes every element of `v` into `buf`.
  void copy_into(llvm::Value* buf, const ir::Value* v);
  // Drops the cache of recomputed elements, whose values are valid only where they
  // dominate: loop_nest calls it on entering and leaving each body. (Code that branches
  // inside a body reads all its operands before the branch, so it needs no call.)
  void forget_elements() { memo_.clear(); }
  llvm::BasicBlock* new_block(const char* name);

  // ---- which tiles get buffers (fusion.cpp)
  void plan_fusion();
  bool is_rematerializable(const ir::Operation& op) const;

  // ---- per-element semantics (elementwise.cpp)
  llvm::Value* compute(const ir::Operation& op, const Idx& idx);
  // contract: the float add/sub/mul may fuse into an fma (enable_fp_fusion, not the math
  // library's own)
  llvm::Value* binary(Op op, DType t, llvm::Value* a, llvm::Value* b, bool contract = false);
  llvm::Value* unary(Op op, DType t, llvm::Value* a);
  llvm::Value* compare(CmpPred p, DType t, llvm::Value* a, llvm::Value* b);
  llvm::Value* cast(llvm::Value* v, DType from, DType to);
  // Narrow floats to f32 for arithmetic and back (RNE); identity for other types.
  llvm::Value* widen(llvm::Value* v, DType t);
  llvm::Value* narrow(llvm::Value* v, DType t);
  llvm::Type* compute_type(DType t);
  llvm::Value* constant(const ir::Operation& op);

  // ---- memory (memory.cpp)
  llvm::Value* load_elem(const ir::Operation& op, const Idx& idx);
  void store_elem(const ir::Operation& op, const Idx& idx);
  llvm::Value* atomic_rmw_elem(const ir::Operation& op, const Idx& idx);
  llvm::Value* atomic_cas_elem(const ir::Operation& op, const Idx& idx);
  // Loops over a load's or store's lanes. Where the CPU has no masked vector access of
  // the element's width, a masked op runs in vector-sized chunks: unmasked (vectorized)
  // where all the chunk's lanes are on, a scalar loop otherwise (where the vectorizer
  // would emit a branch per lane).
  void memory_loop(const ir::Operation& op, const std::function<void(const Idx&)>& body);
  bool native_masked(DType t) const;
  // Bounds check of one access (when enabled): branches to a fault-and-return block.
  void check_access(const ir::Operation& op, llvm::Value* ptr, DType t, const char* what);

  // ---- reductions and scans (reduce.cpp)
  void lower_reduce(const ir::Operation& op);
  void lower_scan(const ir::Operation& op);
  // tl::reduce / tl::associative_scan: a left fold along the axis with the op's combine
  // region inlined at each step (combine(acc, x[k]), in index order).
  void lower_combine_reduce(const ir::Operation& op);
  void lower_combine_scan(const ir::Operation& op);
  std::vector<llvm::Value*> inline_combine(const ir::Block& region, const std::vector<llvm::Value*>& lhs,
                                           const std::vector<llvm::Value*>& rhs);
  void lower_dot(const ir::Operation& op);  // dot.cpp
  // ---- tl::sort and tl::histogram (sort.cpp)
  void lower_sort(const ir::Operation& op);
  void lower_histogram(const ir::Operation& op);

  // ---- debugging and faults (debug.cpp)
  void lower_assert(const ir::Operation& op);
  void lower_print(const ir::Operation& op);
  // A block that reports the fault to the runtime and returns from the kernel.
  llvm::BasicBlock* fault_block(int kind, const ir::Operation& op, const std::string& msg);
  llvm::Constant* global_string(const std::string& s);

  llvm::LLVMContext& ctx() { return ctx_; }
  llvm::IRBuilder<>& b() { return b_; }
  const CompileOptions& opts() const { return opts_; }

 private:
  void lower_block(const ir::Block& blk);
  void lower_op(const ir::Operation& op);
  void lower_for(const ir::Operation& op);
  void lower_if(const ir::Operation& op);
  void lower_while(const ir::Operation& op);
  // Materializes `op`'s single result with a loop over its shape.
  void materialize(const ir::Operation& op);
  // Copies a for loop's yielded tiles into its carried buffers, staging through
  // temporaries where a copy could read a carried buffer another copy has written.
  void yield_tiles(const std::vector<llvm::Value*>& carried, const std::vector<const ir::Value*>& yielded);
  void reads_of_carried(const ir::Value* v, bool remapped, const std::vector<llvm::Value*>& carried,
                        std::vector<std::pair<llvm::Value*, bool>>& out, std::vector<const ir::Value*>& seen);

  const ir::Function& f_;
  llvm::Module& mod_;
  llvm::LLVMContext& ctx_;
  CompileOptions opts_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* alloca_block_ = nullptr;
  llvm::Value* args_ = nullptr;
  llvm::Value* rt_ctx_ = nullptr;
  llvm::Value* pid_[3] = {};
  llvm::Value* nprog_[3] = {};
  std::unordered_map<const ir::Value*, TileRep> reps_;
  struct PairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, llvm::Value*, PairHash> memo_;
  std::unordered_map<std::string, llvm::Constant*> strings_;
  std::unordered_set<const ir::Value*> remat_;
  // The op being lowered: every stack buffer is tagged with its line (kLocMetadata), so
  // that a frame over the CPU's limit names the lines that need the space (target.cpp).
  const ir::Operation* current_op_ = nullptr;
  void tag_buffer(llvm::AllocaInst* a);
  int64_t enclosing_trips_ = 1;  // iterations of the loop nests around the one being emitted
  int64_t nested_work_ = 1;      // the most iterations of a loop nest emitted in the current body
  bool ignore_mask_ = false;     // memory_loop's all-lanes-on path
  bool scalar_loops_ = false;    // memory_loop's partial path: keep loops scalar
  bool has_avx_ = false, has_avx512bw_ = false;

 public:
  llvm::Function* function() const { return fn_; }
  llvm::FunctionCallee fault_fn();
  llvm::FunctionCallee print_fn();
  llvm::FunctionCallee check_fn();
};

}  // namespace tl::codegen::cpu

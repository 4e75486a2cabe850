// The state of one GPU kernel lowering, shared by the lower_*.cpp files of this folder
// (each handles one family of ops). Private to codegen/gpu.
//
// A tile value becomes, in each thread, the list of LLVM values it owns under a
// distributed layout (layout.hpp). Values are lowered in one of two ways:
//  - eagerly, at their op, in the layout the GPU middle end recorded in the IR
//    (passes.hpp; read through layout_plan.hpp: loads, reductions, loop results,
//    arithmetic on those): `natural()`;
//  - lazily, where they are used and in the layout the user wants, for cheap pure
//    index computations (splat, arange, broadcast, reshape, integer/pointer arithmetic
//    on those): "rematerialization", as Triton's RemoveLayoutConversions does.
// `get(v, layout)` hands out a lazy value in any layout (re-emitted) and an eager one in
// its own; every change of layout is a convert_layout op with its planned path.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codegen/gpu/hooks.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/gpu/layout_plan.hpp"
#include "codegen/gpu/lowering.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/gpu/shared_memory.hpp"
#include "codegen/passes/axis_analysis.hpp"

namespace tl::gpu {

using Values = std::vector<llvm::Value*>;

struct Regs {
  Layout layout;
  Values v;
};

// Software FP8 conversions (fp8.cpp): i8 bits <-> f32, saturating, NaN kept.
llvm::Value* fp8_to_f32_soft(llvm::IRBuilderBase& b, DType fmt, llvm::Value* bits);
llvm::Value* f32_to_fp8_soft(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x);
double fp8_max_finite(DType fmt);

// Index math (index_math.cpp): a flat-index value and the bits it may have set, so that
// parts combine with ADD where their bits are disjoint and XOR where they are not.
struct IndexPart {
  llvm::Value* value = nullptr;
  uint32_t bits = 0;
};
// XOR of bases[i] over the set bits i of `id` (i32).
IndexPart hardware_bits_to_index(llvm::IRBuilderBase& b, const std::vector<uint32_t>& bases, llvm::Value* id);
IndexPart combine_index(llvm::IRBuilderBase& b, const IndexPart& x, const IndexPart& y);
// The lane and warp part of `l`'s flat index, and the index of register r on top of it.
IndexPart layout_thread_index(llvm::IRBuilderBase& b, const Layout& l, llvm::Value* lane, llvm::Value* warp);
llvm::Value* layout_element_index(llvm::IRBuilderBase& b, const Layout& l, const IndexPart& thread, int r);
// The same through a padded encoding (`l`: the layout through its linear map): the
// thread's padded offset plus the register's own constant (padded_offset), so that
// registers differing only in bits no lane or warp sets share one address.
llvm::Value* layout_padded_element_index(llvm::IRBuilderBase& b, const Layout& l, const IndexPart& thread, int r,
                                        const Padding& pad);
// v as x + k: the constants added (add, or a disjoint or) on top of a part LLVM knows is
// non-negative, so that x * eb is a valid byte offset on its own (a buffer access's
// offset, the constants going to the instruction's immediate or soffset).
std::pair<llvm::Value*, int64_t> split_constant(llvm::Value* v, const llvm::DataLayout& dl);

// A load or store made as a buffer access (lower_buffer.cpp): the uniform scalar base
// pointer and the i32 element-offset tiles whose sum is the per-element offset.
struct BufferAccess {
  const ir::Value* base = nullptr;
  std::vector<const ir::Value*> offsets;
  // When the mask is exactly `offsets < n` (n a uniform i32 scalar; the RMSNorm's `c <
  // cols`): n, made the resource's num_records (n * sizeof(E)), so that the hardware's
  // range check is the mask and no lane needs its offset selected past the end.
  const ir::Value* bound = nullptr;
};

class Lowerer;
// One value of each lane from the lane `mask` XOR its own, any scalar type (lower_reduce.cpp).
llvm::Value* shuffle_any(Lowerer& L, llvm::Value* x, int mask);

// A conversion that crosses no warps, by indexed shuffles (convert_within_warp.cpp):
// `v` in the source layout of `plan` (warp_shuffle_plan), the result in its destination.
std::vector<llvm::Value*> convert_within_warp(Lowerer& L, const WarpShufflePlan& plan,
                                              const std::vector<llvm::Value*>& v);

class Lowerer {
 public:
  Lowerer(const ir::Function& f, llvm::Module& m, const codegen::CompileOptions& opts, GpuHooks& hooks);
  LoweringResult run();

  // ---- values (lower_kernel.cpp)
  llvm::Value* scalar(const ir::Value* v);
  // `v` in layout `l`: a rematerialized value is emitted in it; any other must already
  // be in it (the middle end made every change of layout a convert_layout).
  Values get(const ir::Value* v, const Layout& l);
  const Regs& natural(const ir::Value* v);
  // The layout the plan assigned a tile operand, else the default of its shape.
  Layout preferred_layout(const ir::Value* v);
  bool is_lazy(const ir::Value* v) const { return plan_.rematerialized(v); }
  bool has_uses(const ir::Value* v) const { return plan_.has_uses(v); }
  void set_natural(const ir::Value* v, Regs r);
  void set_scalar(const ir::Value* v, llvm::Value* x) { scalars_[v] = x; }

  // ---- thread geometry (lower_kernel.cpp)
  // Flat-index part that the thread's lane and warp contribute under `l` (i32).
  const IndexPart& thread_index(const Layout& l);
  // Flat element index of register r under `l` (i32).
  llvm::Value* element_index(const Layout& l, int r);
  // i1 true in exactly one of the threads that hold copies of the same elements
  // (nullptr when no thread holds a copy).
  llvm::Value* owner_predicate(const Layout& l, bool ignore_warp_copies = false);
  llvm::Value* lane_id() { return lane_; }
  llvm::Value* warp_id() { return warp_; }
  llvm::Value* thread_id() { return tid_; }

  // ---- control-flow helpers
  // Runs `body` in a block entered only when `cond` holds (cond may be nullptr: always).
  void if_then(llvm::Value* cond, const std::function<void()>& body);
  // Like if_then, and merges the value `body` returns with `otherwise`.
  llvm::Value* if_then_value(llvm::Value* cond, const std::function<llvm::Value*()>& body, llvm::Value* otherwise);
  [[noreturn]] void fail(const ir::Operation& op, const std::string& what);

  // ---- elementwise (lower_elementwise.cpp)
  llvm::Type* reg_type(DType t);      // in registers (i1 as i1, FP8 as i8, ptr as global ptr)
  llvm::Type* mem_type(DType t);      // in memory (i1 as i8)
  llvm::Value* constant(DType t, double f, int64_t i);
  llvm::Value* element(const ir::Operation& op, const Values& args);
  llvm::Value* cast(llvm::Value* x, DType from, DType to);
  llvm::Value* cast_fp8_value(llvm::Value* f, DType to);  // an FP8's f32 value on to `to`
  Values cast_registers(const Values& v, DType from, DType to);  // FP8 two at a time where the target can
  llvm::Value* to_mem(llvm::Value* x, DType t);    // i1 -> i8
  llvm::Value* from_mem(llvm::Value* x, DType t);  // i8 -> i1
  // Registers r .. r + width - 1 in their memory form as what one access writes: the
  // value itself, or a vector of `width` (one 16-byte access).
  llvm::Value* pack_for_memory(const Values& regs, int r, int width, DType t);
  Values lazy_value(const ir::Value* v, const Layout& l);
  void lower_elementwise_tile(const ir::Operation& op);
  void lower_inline_asm(const ir::Operation& op);  // lower_inline_asm.cpp
  void lower_shape_op(const ir::Operation& op);  // broadcast/reshape/trans of eager values
  void lower_move_op(const ir::Operation& op);   // join/split/cat/flip (lower_elementwise.cpp)

  // ---- memory (lower_memory.cpp)
  void lower_load(const ir::Operation& op);
  void lower_store(const ir::Operation& op);
  void lower_atomic(const ir::Operation& op);
  // ---- buffer accesses (lower_buffer.cpp)
  // How `op` (a load or store) is made as a buffer access, or nullopt for a global one:
  // always for tl::amd's, and for an ordinary one through a uniform base plus offsets
  // proven to stay inside the resource, on targets with buffer instructions.
  std::optional<BufferAccess> buffer_access(const ir::Operation& op);
  void lower_buffer_load(const ir::Operation& op, const BufferAccess& a);
  void lower_buffer_store(const ir::Operation& op, const BufferAccess& a);
  // The byte offset of each register as (per-thread part, constant): the constant goes
  // into the resource's base, so one per-thread offset serves every register and access.
  Values buffer_offsets(const BufferAccess& a, const Layout& l, unsigned elem_bytes, std::vector<int64_t>& consts);
  const ir::Value* mask_bound(const ir::Operation& op, const BufferAccess& a);
  llvm::Value* buffer_resource(const BufferAccess& a, unsigned elem_bytes, int64_t const_bytes = 0);
  llvm::Value* masked_buffer_offset(llvm::Value* byte_offset, llvm::Value* cond);
  // tl::amd::buffer_load_to_shared: issues the copy of the chunk at register r of `l`
  // (`bytes` a lane) into `shared`, masked off by `cond` (or not, nullptr) without a branch.
  std::function<llvm::Instruction*(int, llvm::Value*, llvm::Value*)> buffer_chunk_copier(const ir::Operation& op,
                                                                                        const Layout& l, int bytes);

  // ---- tl::dot on the matrix cores (lower_dot.cpp)
  void lower_dot(const ir::Operation& op);
  // ---- NVIDIA's warpgroup dots (lower_warpgroup_dot.cpp)
  void lower_warpgroup_dot(const ir::Operation& op, const DotPlan& p);
  void lower_dot_wait(const ir::Operation& op);
  void lower_fence_async_shared(const ir::Operation& op);
  // Shared loads their dot reads a K step at a time (ir::kReadByDot, decided by
  // plan_dot_operand_sources), with the values between the read and the dot (its cast
  // and transpose), which emit nothing where they stand.
  void collect_operand_reads_by_dot();
  std::unordered_set<const ir::Operation*> deferred_reads_;       // the shared_loads
  std::unordered_set<const ir::Value*> deferred_values_;          // their results, a cast and the trans of one
  // Reads registers [first, first + count) of shared_load `op` in layout `l` into `out`
  // (memory form; the ldmatrix or vector accesses covering them).
  void read_stage_registers(const ir::Operation& op, const Layout& l, int first, int count, Values& out);

  // ---- reductions (lower_reduce.cpp)
  void lower_reduce(const ir::Operation& op);
  void lower_scan(const ir::Operation& op);
  // tl::reduce / tl::associative_scan: the same steps with the op's combine region
  // inlined at each (lower_combine.cpp).
  void lower_combine_reduce(const ir::Operation& op);
  void lower_combine_scan(const ir::Operation& op);
  Values inline_combine(const ir::Block& region, const Values& lhs, const Values& rhs);
  // ---- tl::sort and tl::histogram (lower_sort.cpp)
  void lower_sort(const ir::Operation& op);
  void lower_histogram(const ir::Operation& op);

  // ---- layout conversion and shared memory (convert_layout.cpp)
  // A convert_layout by the path and encoding its op records (lower_convert_layout).
  Values convert(const Values& v, const Layout& from, const Layout& to, DType t, ir::ConvertPath path,
                 const ir::SharedEncoding* enc, bool transposed_read = false);
  void lower_convert_layout(const ir::Operation& op);
  // Shared memory is one array (`tl_shared`): the user's buffers (shared_alloc) where the
  // allocator put them (shared_memory.hpp), then one scratch region that every layout
  // conversion and cross-warp reduction reuses, sized by the largest. A buffer id is the
  // plan's index of a user buffer, or kScratch. Each buffer has its own alias scope, so
  // that LLVM does not order an access to one against the accesses of another. The
  // barriers between ops are the IR's (insert_barriers, insert_shared_barriers); an op's
  // lowering orders only its own accesses (its scratch write before its read).
  static constexpr int kScratch = -1;
  // An access to one of several user buffers (a loop or branch picks which): no scope.
  static constexpr int kUnknownBuffer = -2;
  void smem_setup();  // reads the allocation, before anything is lowered
  // The op lower_block is lowering (smem_check_scratch checks its scratch against the
  // slice the allocator gave it).
  const ir::Operation* lowering_op_ = nullptr;
  // A pointer at `byte_offset` into the scratch slice of the op being lowered (its
  // Operation::smem: uses alternate between slots), or into the slice at `base`; the base
  // of user buffer `buffer`.
  llvm::Value* smem_ptr(llvm::Value* byte_offset);
  llvm::Value* smem_ptr(llvm::Value* byte_offset, int64_t base);
  llvm::Value* smem_buffer_base(int buffer);
  // The op being lowered exchanges `bytes` through the scratch region: a tl bug unless
  // allocate_shared_memory gave it that many (Operation::smem, scratch_bytes).
  void smem_check_scratch(int64_t bytes);
  int64_t smem_total() const;  // the program's shared memory: buffers and scratch
  // Loads and stores of shared memory, tagged with their buffer's alias scope.
  // `relaxed` (load_shared_relaxed): also noalias with the buffer's direct-to-shared
  // copies, so that AMD's SIInsertWaitcnts does not wait for them (the user's async_wait did).
  llvm::Value* smem_load(llvm::Type* ty, llvm::Value* ptr, unsigned align, int buffer = kScratch,
                         bool relaxed = false);
  // The alias metadata smem_load gives a load, for any other read of `buffer` (an
  // intrinsic such as gfx950's transposing LDS read).
  void smem_tag_read(llvm::Instruction* read, int buffer, bool relaxed);
  // A direct-to-shared copy into `buffer`: its own scope (tl.shared.bufferN.copies).
  void smem_tag_copy(llvm::Instruction* copy, int buffer);
  // relaxed: a store no copy in flight writes to (the fill of a masked-off chunk of a
  // copy): LLVM need not wait for the buffer's copies before it.
  void smem_store(llvm::Value* v, llvm::Value* ptr, unsigned align, int buffer = kScratch, bool relaxed = false);
  // A barrier: the IR's (Op::barrier), or one inside an op's exchange through scratch.
  void barrier(bool user = false);
  // Called where an op's exchange through scratch starts writing: emits the barrier the IR
  // put right before the op (lower_block defers it to here, past the op's register and
  // shuffle work, which touches no shared memory), and, for the op's second and later
  // exchanges, one after the earlier ones' reads.
  void scratch_write_begins();
  bool deferred_barrier_ = false;
  const ir::Operation* exchanged_op_ = nullptr;  // the op that last wrote scratch
  bool has_copies_ = false;  // the kernel has a global_load_to_shared
  // Writes each thread's registers of `l` to the scratch region at their flat index
  // (vectorized), and reads back the elements `to` wants.
  // `l` gives each register's offset in elements; `group` registers a vector store (0:
  // the run of registers at consecutive offsets, up to 16 bytes); `pad`: the offsets are
  // a padded encoding's linear ones (padded_element_index).
  void smem_store_tile(const Values& v, const Layout& l, llvm::Type* ty, int64_t base_elems = 0, int group = 0,
                       const Padding& pad = {});
  // element_index through a padded encoding (layout_padded_element_index).
  llvm::Value* padded_element_index(const Layout& l, int r, const Padding& pad);
  Values smem_load_tile(const Layout& l, llvm::Type* ty, int64_t base_elems = 0);
  // An exchange through the scratch region (a convert_layout through shared memory):
  // written at once, then read into `to`'s registers, all at once or a range at a time
  // (a dot's K step).
  struct Exchange {
    Layout to;
    Layout addr;  // each register group's offset: the reading (or addressing) layout through the encoding
    llvm::Type* ty = nullptr;
    DType t = DType::f32;
    int group = 1;  // registers a read
    bool transposed = false;
    Padding pad;  // the encoding's padding (addr: the offsets before it)
    int64_t base = 0;  // the writing op's scratch slice (a dot may read it: kConversionReadByDot)
  };
  // Writes `v` into the op's scratch and, with own_barrier, waits for every thread's
  // writes (a conversion read by its dot: the barrier is insert_shared_barriers').
  Exchange exchange_write(const Values& v, const Layout& from, const Layout& to, DType t,
                          const ir::SharedEncoding& enc, bool transposed_read, bool own_barrier = true);
  // Reads registers [first, first + count) of x.to into `out` (those not read yet).
  void exchange_read(const Exchange& x, int first, int count, Values& out);
  // Conversions whose dot reads them (ir::kConversionReadByDot), written, not yet read.
  std::unordered_map<const ir::Value*, Exchange> exchanges_read_by_dot_;
  // Results of a for loop whose warpgroup dots lower_for waited for on the way out (and
  // whose initial values were complete): the dot_wait 0 after the loop has nothing left.
  std::unordered_set<const ir::Value*> waited_after_loop_;
  void lower_shared_alloc(const ir::Operation& op);
  // ---- tl::shared stages (lower_shared.cpp)
  int smem_buffer_of(const ir::Value* v) const;
  llvm::Value* shared_stage_base(const ir::Operation& op, unsigned elem_bytes);
  // The swizzled form a stage of `shape` lies in, for this target's banks.
  SharedTileLayout stage_layout(const ir::Value* buffer, unsigned elem_bytes);
  // What a shared_load / shared_store of op's stage in layout `l` needs: the element's
  // memory type, the swizzled offset of every register, how many registers one access
  // moves, the buffer (for its alias scope) and the stage's base.
  struct StageAccess {
    llvm::Type* ty;
    unsigned eb;
    Layout offsets;
    int group;
    int buffer;
    llvm::Value* base;
  };
  StageAccess stage_access(const ir::Operation& op, const Layout& l, DType t);
  void lower_shared_load(const ir::Operation& op);
  void lower_shared_store(const ir::Operation& op);
  void lower_global_load_to_shared(const ir::Operation& op);
  void lower_tensor_map_load(const ir::Operation& op);  // (lower_tensor_map.cpp)
  void lower_mbarrier(const ir::Operation& op);         // (lower_tensor_map.cpp)
  void lower_tensor_map_store(const ir::Operation& op);  // (lower_tensor_map.cpp)
  // The address of register r of `offsets` (element offsets of a stage) from the stage's
  // `base`, the swizzle's XOR applied after the base is added (read_stage_registers).
  llvm::Value* stage_address(llvm::Value* base, llvm::Type* ty, const Layout& offsets, int r, int buffer);
  void lower_async_wait(const ir::Operation& op);
  // Makes the values held by the owners of `l` (owner_predicate) visible to every copy.
  Values broadcast_from_owners(const Values& v, const Layout& l, DType t);

  // ---- control flow (lower_kernel.cpp)
  void lower_block(const ir::Block& blk);
  void lower_op(const ir::Operation& op);
  void lower_for(const ir::Operation& op);
  void lower_if(const ir::Operation& op);
  void lower_while(const ir::Operation& op);
  std::vector<Values> lower_region(const ir::Block& region, const std::vector<Layout>& layouts, size_t first = 0);
  void lower_assert(const ir::Operation& op);

  const ir::Function& f_;
  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  codegen::CompileOptions opts_;
  GpuHooks& hooks_;
  llvm::IRBuilder<> b;
  llvm::Function* fn_ = nullptr;
  passes::AxisAnalysis axis_;
  int ws_, nw_, threads_;
  KernelInfo info_;

 private:
  LayoutPlan plan_;  // every layout decision, made before lowering (assign_layouts.cpp)
  std::unordered_map<const ir::Value*, llvm::Value*> scalars_;
  std::unordered_map<const ir::Value*, Regs> natural_;
  // caches of lazily emitted / converted values, one map per open region
  std::vector<std::map<std::pair<const ir::Value*, std::string>, Values>> scopes_;
  std::map<std::string, IndexPart> thread_offsets_;
  std::map<std::string, llvm::Value*> owner_predicates_;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::Value *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  // ---- shared memory state (convert_layout.cpp)
  int smem_id(int buffer) const { return buffer == kScratch ? int(smem_plan_.buffers.size()) : buffer; }
  SharedMemoryPlan smem_plan_;
  llvm::GlobalVariable* smem_ = nullptr;
  // Per buffer id (users, then the scratch): its alias scope and the others'.
  std::vector<llvm::MDNode*> smem_scope_, smem_noalias_;
  // Per user buffer: the scope of its direct-to-shared copies, what they do not alias,
  // and what a relaxed read of it does not alias (its plain noalias plus its copies).
  std::vector<llvm::MDNode*> smem_copy_scope_, smem_copy_noalias_, smem_relaxed_noalias_;
};

}  // namespace tl::gpu

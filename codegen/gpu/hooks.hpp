// What the shared GPU lowering asks of a target (AMDGPU, NVPTX): the few places where
// the hardware differs. Everything else (layouts, elementwise maps, vectorized memory
// access, reductions, layout conversions) lives once in codegen/gpu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/dtype.hpp"
#include "tl/opcode.hpp"

namespace llvm {
class Function;
class Type;
class Instruction;
class LLVMContext;
class Value;
class Module;
class IRBuilderBase;
}  // namespace llvm

namespace tl::gpu {

// Facts about the kernel that the target turns into attributes and ABI choices.
struct KernelInfo {
  int block_threads = 0;        // num_warps * wave_size
  int waves_per_eu = 0;         // AMD occupancy hint; 0 = none
  bool uses_program_id[3] = {false, false, false};
  bool uses_num_programs = false;
  bool uses_trap = false;
  bool uses_matrix_instructions = false;  // a tl::dot (AMD: accumulators may use AGPRs)
  int max_regs_per_value = 0;             // the most registers (elements) one tile value has in a thread
};

// Calls the LLVM intrinsic `name` (overloaded on `overloads`) with `args` (defined in
// lower_dot.cpp). A table entry whose name or argument types do not match LLVM's
// declaration is a compile error naming it, not an assertion inside LLVM.
llvm::Value* call_intrinsic(llvm::IRBuilderBase& b, const std::string& name, const std::vector<llvm::Type*>& overloads,
                            const std::vector<llvm::Value*>& args);

class GpuHooks {
 public:
  virtual ~GpuHooks() = default;

  virtual std::string target_name() const = 0;  // "gfx942", "sm_90": for messages
  virtual int wave_size() const = 0;
  // The architecture's capability table (codegen/gpu/capabilities.hpp): the shared-memory
  // budget and static limit the lowering checks, and what later features ask about.
  virtual const TargetCapabilities& capabilities() const = 0;
  virtual unsigned shared_address_space() const { return 3; }
  virtual unsigned global_address_space() const { return 1; }

  // Calling convention and kernel attributes, once lowering knows what the body uses.
  virtual void finish_kernel(llvm::Function& fn, const KernelInfo& info) = 0;

  // Work-item id within the program (0 .. block_threads-1), i32.
  virtual llvm::Value* thread_id(llvm::IRBuilderBase& b) = 0;
  // The warp (wavefront) index of this thread, uniform across the warp, i32.
  virtual llvm::Value* warp_id(llvm::IRBuilderBase& b, llvm::Value* tid) = 0;
  virtual llvm::Value* program_id(llvm::IRBuilderBase& b, int axis) = 0;
  virtual llvm::Value* num_programs(llvm::IRBuilderBase& b, int axis, int block_threads) = 0;

  // Lane exchange within a warp: the i32 `v` of lane (lane ^ mask). Every lane active.
  virtual llvm::Value* shuffle_xor(llvm::IRBuilderBase& b, llvm::Value* v, int mask) = 0;
  // Indexed lane read within a warp: the i32 `v` of lane `src_lane` (i32, any value in
  // 0 .. wave size - 1, may differ per lane). Every lane active. Warp-local layout
  // conversions are made of these (convert_within_warp.cpp).
  virtual llvm::Value* shuffle_idx(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) = 0;
  // The same of an f32 `v` as a float, where the target has such a shuffle (nullptr: the
  // caller shuffles its bits). LLVM turns a negation of a float it sees only as shuffled
  // integer bits into an integer XOR of the sign, which ptxas cannot fold into the FFMA
  // that uses it (the attention backward's exp2(s - LSE): 16 LOP3 a lane an iteration).
  virtual llvm::Value* shuffle_idx_f32(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) {
    return nullptr;
  }

  // Workgroup barrier that also orders shared-memory accesses across it.
  virtual void barrier(llvm::IRBuilderBase& b) = 0;
  // A barrier that orders shared memory only (what the compiler's own barriers need).
  // AMD: the workgroup fences of barrier() also wait for every load in flight (vmcnt(0)),
  // direct-to-LDS copies included, which would undo an async_wait(n > 0).
  virtual void shared_barrier(llvm::IRBuilderBase& b) { barrier(b); }
  // tl::amd::global_load_to_shared: copy `bytes` (one of capabilities().
  // direct_to_shared_widths) from `global` into shared memory at `shared`, without
  // registers; lanes of a warp write consecutive `bytes`-sized chunks (the lowering's
  // layout guarantees it: AMD's LDS DMA can write nothing else). Returns the emitted
  // instruction (for alias metadata). commit_copies closes this op's copies (NVIDIA's
  // commit group); async_wait(n) waits until at most n loads (AMD) / groups (NVIDIA)
  // are outstanding.
  virtual llvm::Instruction* copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* global, llvm::Value* shared,
                                            int bytes) { return nullptr; }
  // A copy of `bytes` that reads nothing and writes zeros where `pred` (i1) is false,
  // with no branch (NVIDIA: cp.async's src-size operand, 0 for a masked-off chunk), for a
  // masked copy whose `other` is zero; null where the target has none.
  virtual llvm::Instruction* copy_to_shared_or_zeros(llvm::IRBuilderBase& b, llvm::Value* global,
                                                     llvm::Value* shared, int bytes, llvm::Value* pred) {
    return nullptr;
  }
  // A buffer load of `bytes` a lane straight into shared memory at `shared` (AMD's
  // buffer_load_dword[x3|x4] ... lds, tl::amd::buffer_load_to_shared and the compiler's
  // own copies): `voffset` past the resource's bound reads 0 and writes it; `soffset`
  // (a uniform i32, null for 0) is added to every lane's. Null where the target has none
  // of that width (capabilities().buffer_copy_widths).
  virtual llvm::Instruction* buffer_copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* rsrc, llvm::Value* voffset,
                                                   llvm::Value* shared, int bytes, llvm::Value* soffset = nullptr) {
    return nullptr;
  }
  virtual void commit_copies(llvm::IRBuilderBase& b) {}
  // Waits until at most `n` remain in flight: the async_wait's recorded count (loads
  // where TargetCapabilities::copy_waits_count_loads, planned by plan_wait_counts).
  virtual void async_wait(llvm::IRBuilderBase& b, int n) {}
  // A copy that reads nothing and writes zeros to the `bytes` at `shared`
  // (TargetCapabilities::has_zero_copy), issued for a masked-off chunk so that every
  // chunk of a copy issues one load: a wait counting loads then counts right. Null where
  // the target has none.
  virtual llvm::Instruction* copy_zeros_to_shared(llvm::IRBuilderBase& b, llvm::Value* shared, int bytes) {
    return nullptr;
  }

  // One matrix instruction of capabilities().matrix_instructions: `a` and `b` are the
  // lane's k_per_lane elements of each operand (in register form: bfloat, half, float, i8
  // bits for FP8 and i8) in fragment order (codegen/gpu/dot_layout.cpp), `c` its
  // accumulator elements (f32 or i32); returns the new accumulator elements. Every lane
  // of the warp must run it.
  virtual std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilderBase& b, const MatrixInstruction& mi,
                                                    const std::vector<llvm::Value*>& a,
                                                    const std::vector<llvm::Value*>& bv,
                                                    const std::vector<llvm::Value*>& c) {
    return {};
  }
  // A block-scaled one (MatrixInstruction::scaled, tl::dot_scaled): the same operands (an
  // f4e2m1 operand's registers are its bytes, two values each), and each lane's e8m0 scale
  // of `a` and of `b` (an i8), the one the instruction reads for that lane.
  virtual std::vector<llvm::Value*> scaled_matrix_multiply(llvm::IRBuilderBase& b, const MatrixInstruction& mi,
                                                           const std::vector<llvm::Value*>& a,
                                                           const std::vector<llvm::Value*>& bv,
                                                           const std::vector<llvm::Value*>& c, llvm::Value* scale_a,
                                                           llvm::Value* scale_b) {
    return {};
  }

  // NVIDIA's warpgroup MMA (wgmma, sm_90a; the instruction's family nvidia_wgmma): one
  // m64nNk instruction for the lane's warpgroup, A and B through 64-bit shared-memory
  // matrix descriptors (`trans_a` / `trans_b`: the operand lies MN-major), or A from
  // registers (`desc_a` null: `a`, the lane's k_per_lane elements in mma.sync's A
  // fragment order, as matrix_multiply takes them, packed by warpgroup_a_words), `c` the lane's
  // n / 2 accumulator elements (f32 or i32) in the fragment's order; returns them as the
  // instruction leaves them (still being written until a wait). warpgroup_fence before a
  // warpgroup's first wgmma that reads registers written since, warpgroup_commit closes
  // the wgmmas issued since the last commit into a group, warpgroup_wait lets at most
  // `pending` groups stay in flight and gives `regs` back through it, so that nothing
  // reads them before (the compiler sees the wait as their definition). `accumulate`
  // false: the instruction computes A.B alone (wgmma's scale-d 0), `c` is not read.
  virtual std::vector<llvm::Value*> warpgroup_matrix_multiply(llvm::IRBuilderBase& b, const MatrixInstruction& mi,
                                                              llvm::Value* desc_a, const std::vector<llvm::Value*>& a,
                                                              llvm::Value* desc_b, bool trans_a, bool trans_b,
                                                              const std::vector<llvm::Value*>& c, bool accumulate) {
    return {};
  }
  // An A fragment from registers as the instruction reads it (NVIDIA: 32-bit words), made
  // before the warpgroup_fence of the group whose wgmma reads it.
  virtual std::vector<llvm::Value*> warpgroup_a_words(llvm::IRBuilderBase& b, const MatrixInstruction& mi,
                                                      const std::vector<llvm::Value*>& a) {
    return a;
  }
  virtual void warpgroup_fence(llvm::IRBuilderBase& b) {}
  virtual void warpgroup_commit(llvm::IRBuilderBase& b) {}
  virtual std::vector<llvm::Value*> warpgroup_wait(llvm::IRBuilderBase& b, int pending,
                                                   const std::vector<llvm::Value*>& regs) {
    return regs;
  }
  // fence.proxy.async.shared::cta: this thread's shared-memory writes before it are
  // ordered before later reads through the async proxy (a wgmma's descriptors).
  virtual void fence_async_shared(llvm::IRBuilderBase& b) {}
  // Programmatic dependent launch (tl::gdc_wait / gdc_launch_dependents): NVIDIA sm_90+'s
  // griddepcontrol. Nothing where the target has none: its launches never overlap the
  // previous one (AMD, older NVIDIA).
  virtual void grid_dependency_wait(llvm::IRBuilderBase& b) {}
  virtual void grid_dependency_launch_dependents(llvm::IRBuilderBase& b) {}
  // Hopper's TMA (Op::tensor_map_load, Op::mbarrier). false: the target has no TMA.
  // mbarrier_init: one thread initialises the `count` mbarriers from `mbarriers` (8 bytes
  // each) to expect `arrivals` arrivals a phase; mbarrier_inval: one thread invalidates
  // them; neither waits for the other threads. mbarrier_wait: every thread returns once
  // the phase of parity `phase` (i32 0 or 1) of the mbarrier at `mbarrier` has completed.
  // tensor_map_issue (where `pred`, an i1 or null, holds): one thread arrives on the
  // mbarrier at `mbarrier` expecting `bytes` and copies the box of the tensor map at
  // `tensor_map` (a generic pointer to its 128 bytes) whose first element is at `coords`
  // (innermost dim first) into shared memory at `dst`; the copy completes the bytes.
  virtual bool mbarrier_init(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* mbarriers, int count,
                             int arrivals) {
    return false;
  }
  virtual bool mbarrier_inval(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* mbarriers, int count) {
    return false;
  }
  virtual bool mbarrier_wait(llvm::IRBuilderBase& b, llvm::Value* mbarrier, llvm::Value* phase) { return false; }
  virtual bool tensor_map_issue(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* dst, llvm::Value* mbarrier,
                                llvm::Value* tensor_map, const std::vector<llvm::Value*>& coords, int bytes,
                                llvm::Value* pred) {
    return false;
  }
  // tensor_map_store: one thread copies shared memory at `src` to the box of the map whose
  // first element is at `coords` (what lies outside the map's dims is not written) and
  // waits until the copy has read `src`. The caller has fenced and synchronised the
  // writes of `src`.
  virtual bool tensor_map_store(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* src, llvm::Value* tensor_map,
                                const std::vector<llvm::Value*>& coords) {
    return false;
  }

  // NVIDIA's ldmatrix.x4 (.trans): four 8x8 matrices of 16-bit elements from shared
  // memory, lane l giving the address of row l % 8 of matrix l / 8 (16 contiguous bytes);
  // returns the lane's four 32-bit registers, register q holding row l / 4, columns
  // 2 (l % 4) and 2 (l % 4) + 1 of matrix q (of its transpose with `trans`). Empty where
  // the target has no such instruction (has_load_matrix false).
  virtual bool has_load_matrix() const { return false; }
  virtual std::vector<llvm::Value*> load_matrix_x4(llvm::IRBuilderBase& b, llvm::Value* shared, bool trans) {
    return {};
  }

  // gfx950's ds_read_b64_tr_b16 / _b8 (capabilities' transposed_shared_read_bits): in each
  // group of 16 lanes, lane l receives as its element i slot l % s of the 8 bytes lane
  // s' i + l / s of the group addressed, s = 64 / elem_bits slots a read, s' = 16 / s
  // (shared_encoding.hpp, transposed_read_layout). Returns <s x i(elem_bits)>; nullptr
  // where the target has no such instruction.
  virtual llvm::Value* load_shared_transposed(llvm::IRBuilderBase& b, llvm::Value* shared, int elem_bits) {
    return nullptr;
  }

  // The LLVM sync scope of an atomic at `sc` (cta / gpu / sys).
  virtual uint8_t sync_scope(llvm::LLVMContext& ctx, scope sc) = 0;
  // Target metadata on an atomic instruction (AMD: no fine-grained memory).
  virtual void decorate_atomic(llvm::Instruction* inst, scope sc) {}
  // True when the backend drops the ordering of atomicrmw (LLVM 22's NVPTX emits a
  // relaxed `atom` whatever the ordering): the lowering then brackets a relaxed atomic
  // with scoped fences, release before and acquire after.
  virtual bool order_rmw_with_fences() const { return false; }

  // tl::load / tl::store's cache modifier, eviction policy and volatile (ir::AccessFlags,
  // never the default here). load_with_policy / store_with_policy emit the whole access of
  // `ty` / `v` at `ptr` (global, `align` bytes) where LLVM has no form for the policy
  // (NVIDIA: ld.global.cg, L2::cache_hint, as inline PTX, as Triton does), and give null /
  // false where the target leaves it to an LLVM load or store that decorate_access then
  // marks (volatile, !nontemporal: AMD's memory legalizer turns those into sc0/sc1/nt or
  // glc/slc). docs/language.md, "Cache modifiers", has each target's table.
  virtual llvm::Value* load_with_policy(llvm::IRBuilderBase& b, llvm::Type* ty, llvm::Value* ptr, unsigned align,
                                        const ir::AccessFlags& a) {
    return nullptr;
  }
  virtual bool store_with_policy(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* ptr, unsigned align,
                                 const ir::AccessFlags& a) {
    return false;
  }
  virtual void decorate_access(llvm::Instruction* access, const ir::AccessFlags& a, bool load) {}

  // Elementwise math on f32 (or f64) where the target has its own implementation;
  // nullptr means "use LLVM's intrinsic".
  virtual llvm::Value* math(llvm::IRBuilderBase& b, Op op, llvm::Value* x) { return nullptr; }
  // 1/y of an f32 y with |y| in [2^-126, 2^126] by the target's reciprocal instruction alone
  // (about an ulp: NVIDIA rcp.approx.ftz.f32, AMD v_rcp_f32), no range fix-ups: the IR's
  // `div rcp` (i0 = 2), which tl's math library refines with a Newton step (tanh,
  // sigmoid). nullptr: an fdiv with approximate-function flags.
  virtual llvm::Value* approx_reciprocal(llvm::IRBuilderBase& b, llvm::Value* y) { return nullptr; }
  // 2^x of an f32 x whose result is a normal number or infinity, by the target's
  // instruction alone (about 2 ulp: NVIDIA ex2.approx.ftz.f32, AMD v_exp_f32), without
  // the subnormal-result scaling of tl::exp2's lowering: the IR's `exp2 raw` (i0 = 2), in
  // tl::tanh where |x| >= 0.9. nullptr: tl::exp2's lowering.
  virtual llvm::Value* approx_exp2(llvm::IRBuilderBase& b, llvm::Value* x) { return nullptr; }

  // FP8 conversions where the hardware has them; nullptr selects the portable software
  // path (codegen/gpu/fp8.cpp). `bits` is i8; f32 in and out. Saturation and NaN
  // handling must match docs/ir.md (saturate to max finite, keep NaN).
  virtual llvm::Value* fp8_to_f32(llvm::IRBuilderBase& b, DType fmt, llvm::Value* bits) { return nullptr; }
  virtual llvm::Value* f32_to_fp8(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x) { return nullptr; }
  // The same, two elements in one instruction where the hardware has one (a tile's
  // registers convert in pairs: Lowerer::cast_registers): `lo` and `hi` (i8 bits) to a
  // <2 x float> (lo in element 0); two f32 to a <2 x i8>. nullptr: one at a time.
  virtual llvm::Value* fp8x2_to_f32x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) {
    return nullptr;
  }
  virtual llvm::Value* f32x2_to_fp8x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) {
    return nullptr;
  }

  // Buffer accesses, where capabilities().has_buffer_ops() (AMD CDNA): a raw buffer
  // resource over the uniform global pointer `base` (num_records: `num_records`, a
  // uniform i64 byte count, or kBufferNumRecords when null; the table's flags); a load of `ty` (any scalar or vector of up to 16 bytes) and a store of
  // `v` at the i32 byte offset `voffset` from it. Out-of-range offsets read 0 and drop
  // the write. Targets without buffer instructions are never asked.
  virtual llvm::Value* buffer_resource(llvm::IRBuilderBase& b, llvm::Value* base, llvm::Value* num_records) {
    return nullptr;
  }
  // `a`: the access's cache bits, in the instruction's cache-policy operand.
  virtual llvm::Value* buffer_load(llvm::IRBuilderBase& b, llvm::Type* ty, llvm::Value* rsrc, llvm::Value* voffset,
                                   const ir::AccessFlags& a = {}) {
    return nullptr;
  }
  virtual void buffer_store(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* rsrc, llvm::Value* voffset,
                            const ir::AccessFlags& a = {}) {}

  // A failed device_assert: record `line` where a debugger can find it, then stop.
  virtual void trap(llvm::IRBuilderBase& b, unsigned line) = 0;
};

}  // namespace tl::gpu

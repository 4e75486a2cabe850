// See amdgpu_hooks.hpp.
#include "codegen/amdgpu/amdgpu_hooks.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "codegen/gpu/lower_context.hpp"

namespace tl::amd {

namespace Intr = llvm::Intrinsic;
constexpr llvm::ArrayRef<llvm::Type*> kNoTypes;  // non-overloaded intrinsics

void AmdgpuHooks::finish_kernel(llvm::Function& fn, const gpu::KernelInfo& info) {
  fn.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  fn.addFnAttr("amdgpu-flat-work-group-size", fmt::format("{},{}", info.block_threads, info.block_threads));
  if (info.waves_per_eu > 0) fn.addFnAttr("amdgpu-waves-per-eu", fmt::format("{}", info.waves_per_eu));
  // Programs are whole workgroups, and the body asks for nothing the ABI does not need:
  // saying so keeps the hidden inputs (dispatch pointer, queue pointer, ...) out of the
  // preloaded SGPRs, as AMDGPUAttributor would infer.
  fn.addFnAttr("uniform-work-group-size", "true");
  fn.addFnAttr("amdgpu-no-workitem-id-y");
  fn.addFnAttr("amdgpu-no-workitem-id-z");
  if (!info.uses_program_id[0]) fn.addFnAttr("amdgpu-no-workgroup-id-x");
  if (!info.uses_program_id[1]) fn.addFnAttr("amdgpu-no-workgroup-id-y");
  if (!info.uses_program_id[2]) fn.addFnAttr("amdgpu-no-workgroup-id-z");
  if (!info.uses_num_programs) fn.addFnAttr("amdgpu-no-dispatch-ptr");
  if (!info.uses_trap) fn.addFnAttr("amdgpu-no-queue-ptr");
  for (const char* a : {"amdgpu-no-dispatch-id", "amdgpu-no-implicitarg-ptr", "amdgpu-no-hostcall-ptr",
                        "amdgpu-no-heap-ptr", "amdgpu-no-multigrid-sync-arg", "amdgpu-no-completion-action",
                        "amdgpu-no-default-queue", "amdgpu-no-lds-kernel-id"})
    fn.addFnAttr(a);
  fn.addFnAttr(llvm::Attribute::NoUnwind);
  // MFMA accumulators: in VGPRs unless AGPRs avoid a spill (LLVM 22 puts every MFMA
  // accumulator in AGPRs without this, which costs occupancy and spills past 256; with
  // "0" the register allocator starts from VGPR forms and moves to AGPRs only under
  // pressure: SIMachineFunctionInfo, measured in codegen/amdgpu/README's notes).
  if (info.uses_matrix_instructions) fn.addFnAttr("amdgpu-agpr-alloc", "0");
}

llvm::Value* AmdgpuHooks::thread_id(llvm::IRBuilderBase& b) {
  tid_ = b.CreateIntrinsic(Intr::amdgcn_workitem_id_x, kNoTypes, {});
  lane_ = b.CreateAnd(tid_, b.getInt32(desc_.wave_size - 1));
  return tid_;
}

llvm::Value* AmdgpuHooks::warp_id(llvm::IRBuilderBase& b, llvm::Value* tid) {
  // Uniform across the wave: readfirstlane puts it (and what derives from it) in SGPRs.
  llvm::Value* w = b.CreateLShr(tid, uint64_t(gpu::log2_exact(desc_.wave_size)));
  return b.CreateIntrinsic(Intr::amdgcn_readfirstlane, {b.getInt32Ty()}, {w}, nullptr, "warp");
}

llvm::Value* AmdgpuHooks::program_id(llvm::IRBuilderBase& b, int axis) {
  static const Intr::ID ids[] = {Intr::amdgcn_workgroup_id_x, Intr::amdgcn_workgroup_id_y,
                                 Intr::amdgcn_workgroup_id_z};
  return b.CreateIntrinsic(ids[axis], kNoTypes, {});
}

llvm::Value* AmdgpuHooks::num_programs(llvm::IRBuilderBase& b, int axis, int block_threads) {
  // The HSA dispatch packet holds the grid size in work-items (u32 at byte 12 + 4*axis);
  // a program is block_threads work-items along x and one along y and z. The packet
  // exists under every code object version, unlike the v5 implicit block counts.
  llvm::Value* packet = b.CreateIntrinsic(Intr::amdgcn_dispatch_ptr, kNoTypes, {});
  llvm::Value* p = b.CreateConstGEP1_32(b.getInt8Ty(), packet, 12 + 4 * axis);
  auto* load = b.CreateAlignedLoad(b.getInt32Ty(), p, llvm::Align(4), "grid_size");
  load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return axis == 0 ? b.CreateUDiv(load, b.getInt32(uint32_t(block_threads))) : static_cast<llvm::Value*>(load);
}

llvm::Value* AmdgpuHooks::shuffle_xor(llvm::IRBuilderBase& b, llvm::Value* v, int mask) {
  // xor 1, 2: DPP quad permutes, a VALU operand modifier (no LDS traffic).
  if (mask == 1 || mask == 2) {
    int ctrl = mask == 1 ? 0xB1 /* quad_perm [1,0,3,2] */ : 0x4E /* quad_perm [2,3,0,1] */;
    return b.CreateIntrinsic(Intr::amdgcn_update_dpp, {b.getInt32Ty()},
                             {llvm::PoisonValue::get(b.getInt32Ty()), v, b.getInt32(ctrl), b.getInt32(0xF),
                              b.getInt32(0xF), b.getTrue()});
  }
  // xor 4..16: ds_swizzle in bitmask mode (and 0x1f, or 0, xor mask) within 32 lanes.
  if (mask < 32) return b.CreateIntrinsic(Intr::amdgcn_ds_swizzle, kNoTypes, {v, b.getInt32(0x1F | (mask << 10))});
  if (mask == 32)
    if (llvm::Value* r = arch_.swap_wave_halves(b, v, lane_)) return r;
  // Anything else: ds_bpermute, which reads lane (addr / 4).
  llvm::Value* addr = b.CreateShl(b.CreateXor(lane_, b.getInt32(mask)), 2);
  return b.CreateIntrinsic(Intr::amdgcn_ds_bpermute, kNoTypes, {addr, v});
}

llvm::Value* AmdgpuHooks::shuffle_idx(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) {
  // ds_bpermute_b32: a lane-indexed read through the LDS crossbar, all 64 lanes, without
  // touching LDS memory (no allocation, no barrier). It takes a byte address: lane * 4.
  llvm::Value* addr = b.CreateShl(src_lane, 2);
  return b.CreateIntrinsic(Intr::amdgcn_ds_bpermute, kNoTypes, {addr, v});
}

void AmdgpuHooks::barrier(llvm::IRBuilderBase& b) {
  // s_barrier alone does not order LDS accesses on gfx90a+ (back-off barrier): the
  // workgroup-scope fences make the backend wait for outstanding LDS operations.
  llvm::LLVMContext& ctx = b.getContext();
  auto wg = ctx.getOrInsertSyncScopeID("workgroup");
  b.CreateFence(llvm::AtomicOrdering::Release, wg);
  b.CreateIntrinsic(Intr::amdgcn_s_barrier, kNoTypes, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, wg);
}

// global_load_lds: the LDS address is M0 (wave-uniform) + lane * bytes. Each lane's own
// destination minus lane * bytes is that base in every lane (the lowering's layout makes
// it so), so readfirstlane of it is right even when only some lanes are active (a mask).
llvm::Instruction* AmdgpuHooks::copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* global, llvm::Value* shared,
                                               int bytes) {
  return b.CreateIntrinsic(Intr::amdgcn_global_load_lds, kNoTypes,
                           {global, lds_dma_base(b, shared, bytes), b.getInt32(uint32_t(bytes)), b.getInt32(0),
                            b.getInt32(0)});
}

// The LDS base a wave's direct-to-LDS load writes from (M0): each lane's destination
// minus lane * bytes, the same in every lane (see copy_to_shared).
llvm::Value* AmdgpuHooks::lds_dma_base(llvm::IRBuilderBase& b, llvm::Value* shared, int bytes) {
  llvm::Value* lane = lane_ ? lane_ : b.CreateAnd(thread_id(b), b.getInt32(desc_.wave_size - 1));
  llvm::Value* addr = b.CreatePtrToInt(shared, b.getInt32Ty());
  llvm::Value* base = b.CreateSub(addr, b.CreateMul(lane, b.getInt32(uint32_t(bytes))));
  base = b.CreateIntrinsic(b.getInt32Ty(), Intr::amdgcn_readfirstlane, {base});
  return b.CreateIntToPtr(base, shared->getType());
}

// buffer_load_dword ... lds through an all-zero resource (a null V#: no records, an
// invalid data format): every access is out of range, reads 0 without touching memory,
// and writes the 0 to LDS like any direct-to-LDS load, counted by vmcnt like one.
llvm::Instruction* AmdgpuHooks::copy_zeros_to_shared(llvm::IRBuilderBase& b, llvm::Value* shared, int bytes) {
  llvm::Value* rsrc = llvm::ConstantPointerNull::get(llvm::PointerType::get(b.getContext(), 8));
  return b.CreateIntrinsic(Intr::amdgcn_raw_ptr_buffer_load_lds, kNoTypes,
                           {rsrc, lds_dma_base(b, shared, bytes), b.getInt32(uint32_t(bytes)), b.getInt32(0),
                            b.getInt32(0), b.getInt32(0), b.getInt32(0)});
}

// buffer_load_dword[x3|x4] ... lds: the LDS base in M0 as for global_load_lds, the
// global address from the resource, the lane's offset and the uniform soffset (out of
// range: zeros written).
llvm::Instruction* AmdgpuHooks::buffer_copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* rsrc, llvm::Value* voffset,
                                                      llvm::Value* shared, int bytes, llvm::Value* soffset) {
  const auto& w = capabilities().buffer_copy_widths;
  if (std::find(w.begin(), w.end(), bytes) == w.end()) return nullptr;
  return b.CreateIntrinsic(Intr::amdgcn_raw_ptr_buffer_load_lds, kNoTypes,
                           {rsrc, lds_dma_base(b, shared, bytes), b.getInt32(uint32_t(bytes)), voffset,
                            soffset ? soffset : b.getInt32(0), b.getInt32(0), b.getInt32(0)});
}

// s_waitcnt with gfx9's fields (every CDNA chip): vmcnt in bits [3:0] and [15:14],
// expcnt [6:4] and lgkmcnt [11:8] at their maxima (not waited for). vmcnt counts
// every outstanding global/buffer load, direct-to-LDS ones included, completed in
// order; past its 6-bit maximum there is nothing to wait for.
void AmdgpuHooks::async_wait(llvm::IRBuilderBase& b, int n) {
  uint32_t vm = uint32_t(std::min(n, 63));
  uint32_t imm = (vm & 0xF) | (0x7u << 4) | (0xFu << 8) | ((vm >> 4) << 14);
  b.CreateIntrinsic(Intr::amdgcn_s_waitcnt, kNoTypes, {b.getInt32(imm)});
}

// MLIR's amdgpu.lds_barrier: this wave's LDS accesses done (lgkmcnt(0); vmcnt and expcnt
// at their maxima, not waited for), then s_barrier.
void AmdgpuHooks::shared_barrier(llvm::IRBuilderBase& b) {
  b.CreateIntrinsic(Intr::amdgcn_s_waitcnt, kNoTypes, {b.getInt32(0xF | (0x7 << 4) | (0x0 << 8) | (0x3 << 14))});
  b.CreateIntrinsic(Intr::amdgcn_s_barrier, kNoTypes, {});
}

uint8_t AmdgpuHooks::sync_scope(llvm::LLVMContext& ctx, scope sc) {
  switch (sc) {
    case scope::cta: return uint8_t(ctx.getOrInsertSyncScopeID("workgroup"));
    case scope::gpu: return uint8_t(ctx.getOrInsertSyncScopeID("agent"));
    case scope::sys: return uint8_t(llvm::SyncScope::System);
  }
  return uint8_t(llvm::SyncScope::System);
}

void AmdgpuHooks::decorate_atomic(llvm::Instruction* inst, scope sc) {
  // Device-scope atomics on ordinary (coarse-grained, local) memory may use the hardware
  // float atomics instead of a CAS loop; system scope keeps the conservative lowering.
  if (sc == scope::sys) return;
  llvm::LLVMContext& ctx = inst->getContext();
  inst->setMetadata("amdgpu.no.fine.grained.memory", llvm::MDNode::get(ctx, {}));
  inst->setMetadata("amdgpu.no.remote.memory", llvm::MDNode::get(ctx, {}));
  // gfx90a's global_atomic_add_f32 flushes denormals; accepting that (as Triton does)
  // is what lets the backend use it rather than a compare-and-swap loop.
  if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(inst))
    if (rmw->getOperation() == llvm::AtomicRMWInst::FAdd && rmw->getType()->isFloatTy())
      inst->setMetadata("amdgpu.ignore.denormal.mode", llvm::MDNode::get(ctx, {}));
}

static bool is_e5m2(DType fmt) { return fmt == DType::f8e5m2 || fmt == DType::f8e5m2fnuz; }

// The 32-bit word that holds `bits` (an i8) and the byte it is in, where `bits` is a
// constant element of a loaded vector of whole words; {nullptr, 0} otherwise. The
// converts' byte and word selects read a byte where it lies, where zero-extending it
// first costs a v_bfe/v_and and a register per byte (FP8 dequantize: 26 VGPRs against
// Triton's 19, bench/amd_quality).
static std::pair<llvm::Value*, unsigned> word_of_byte(llvm::IRBuilderBase& b, llvm::Value* bits) {
  auto* ee = llvm::dyn_cast<llvm::ExtractElementInst>(bits);
  auto* ci = ee ? llvm::dyn_cast<llvm::ConstantInt>(ee->getIndexOperand()) : nullptr;
  if (!ci) return {nullptr, 0};
  unsigned n = unsigned(llvm::cast<llvm::FixedVectorType>(ee->getVectorOperandType())->getNumElements());
  unsigned i = unsigned(ci->getZExtValue());
  if (n % 4 != 0 || i >= n) return {nullptr, 0};
  llvm::Value* words = b.CreateBitCast(ee->getVectorOperand(), llvm::FixedVectorType::get(b.getInt32Ty(), n / 4));
  return {b.CreateExtractElement(words, uint64_t(i / 4)), i % 4};
}

llvm::Value* AmdgpuHooks::fp8_to_f32(llvm::IRBuilderBase& b, DType fmt, llvm::Value* bits) {
  if (!caps_.has_hardware_fp8(fmt)) return nullptr;
  auto [w, sel] = word_of_byte(b, bits);
  if (!w) w = b.CreateZExt(bits, b.getInt32Ty());
  return b.CreateIntrinsic(is_e5m2(fmt) ? Intr::amdgcn_cvt_f32_bf8 : Intr::amdgcn_cvt_f32_fp8, kNoTypes,
                           {w, b.getInt32(sel)});
}

// v_cvt_pk_f32_fp8 / bf8: bytes 0-1 (word_sel 0) or 2-3 (1) of a word to two f32. Two
// neighbouring bytes of one loaded word, the low one even (a vector load's registers in
// order), are converted in place; any other pair is packed into a word first.
llvm::Value* AmdgpuHooks::fp8x2_to_f32x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) {
  if (!caps_.has_hardware_fp8(fmt)) return nullptr;
  // `hi` the element right after `lo` in the same vector: then the word holding `lo` holds both.
  auto* ee_lo = llvm::dyn_cast<llvm::ExtractElementInst>(lo);
  auto* ee_hi = llvm::dyn_cast<llvm::ExtractElementInst>(hi);
  auto* i_lo = ee_lo ? llvm::dyn_cast<llvm::ConstantInt>(ee_lo->getIndexOperand()) : nullptr;
  auto* i_hi = ee_hi ? llvm::dyn_cast<llvm::ConstantInt>(ee_hi->getIndexOperand()) : nullptr;
  const bool neighbours = i_lo && i_hi && ee_hi->getVectorOperand() == ee_lo->getVectorOperand() &&
                          i_hi->getZExtValue() == i_lo->getZExtValue() + 1;
  auto [w, byte] = neighbours ? word_of_byte(b, lo) : std::pair<llvm::Value*, unsigned>{nullptr, 0};
  if (!w || byte % 2 != 0) {
    llvm::Value* v = llvm::Constant::getNullValue(llvm::FixedVectorType::get(b.getInt8Ty(), 4));
    v = b.CreateInsertElement(b.CreateInsertElement(v, lo, uint64_t(0)), hi, uint64_t(1));
    w = b.CreateBitCast(v, b.getInt32Ty());
    byte = 0;
  }
  return b.CreateIntrinsic(is_e5m2(fmt) ? Intr::amdgcn_cvt_pk_f32_bf8 : Intr::amdgcn_cvt_pk_f32_fp8, kNoTypes,
                           {w, b.getInt1(byte == 2)});
}

// The convert rounds to nearest even but does not saturate: clamp first, keeping NaN.
static llvm::Value* clamp_to_fp8_range(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x) {
  llvm::Value* m = llvm::ConstantFP::get(b.getFloatTy(), gpu::fp8_max_finite(fmt));
  llvm::Value* c = b.CreateBinaryIntrinsic(Intr::minnum, b.CreateBinaryIntrinsic(Intr::maxnum, x, b.CreateFNeg(m)), m);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, c);
}

// v_cvt_pk_fp8_f32 / bf8 (srcA, srcB, old, word_sel false): srcA to byte 0, srcB to byte 1.
static llvm::Value* cvt_pk_fp8(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) {
  return b.CreateIntrinsic(is_e5m2(fmt) ? Intr::amdgcn_cvt_pk_bf8_f32 : Intr::amdgcn_cvt_pk_fp8_f32, kNoTypes,
                           {clamp_to_fp8_range(b, fmt, lo), clamp_to_fp8_range(b, fmt, hi), b.getInt32(0),
                            b.getFalse()});
}

llvm::Value* AmdgpuHooks::f32_to_fp8(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x) {
  if (!caps_.has_hardware_fp8(fmt)) return nullptr;
  return b.CreateTrunc(cvt_pk_fp8(b, fmt, x, x), b.getInt8Ty());
}

llvm::Value* AmdgpuHooks::f32x2_to_fp8x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) {
  if (!caps_.has_hardware_fp8(fmt)) return nullptr;
  llvm::Value* pair = b.CreateTrunc(cvt_pk_fp8(b, fmt, lo, hi), b.getInt16Ty());
  return b.CreateBitCast(pair, llvm::FixedVectorType::get(b.getInt8Ty(), 2));
}

llvm::Value* AmdgpuHooks::load_shared_transposed(llvm::IRBuilderBase& b, llvm::Value* shared, int elem_bits) {
  if (!caps_.has_transposed_shared_read(elem_bits)) return nullptr;
  if (elem_bits == 16)
    return b.CreateIntrinsic(Intr::amdgcn_ds_read_tr16_b64, {llvm::FixedVectorType::get(b.getInt16Ty(), 4)}, {shared});
  // The 8-bit form selects only as <2 x i32> (LLVM 22): its bytes in order.
  llvm::Value* words =
      b.CreateIntrinsic(Intr::amdgcn_ds_read_tr8_b64, {llvm::FixedVectorType::get(b.getInt32Ty(), 2)}, {shared});
  return b.CreateBitCast(words, llvm::FixedVectorType::get(b.getInt8Ty(), 8));
}

// f32 exp as exp2(x * log2(e)), as Triton's AMD backend and tl's NVPTX lowering do:
// llvm.exp2 is one v_exp_f32 (with the backend's denormal-range scaling), while
// llvm.exp.f32 expands to a correctly rounded sequence (range reduction, v_rndne,
// v_cvt_i32, v_ldexp and overflow/underflow selects) whose temporaries, interleaved
// over a row's registers, cost a softmax of 16 values a lane 57 VGPRs against 30
// (bench/amd_quality). The error is Triton's: the rounding of x * log2(e), a few ulp
// for |x| near the f32 range's end.
llvm::Value* AmdgpuHooks::math(llvm::IRBuilderBase& b, Op op, llvm::Value* x) {
  if (op != Op::exp || !x->getType()->isFloatTy()) return nullptr;
  return b.CreateUnaryIntrinsic(Intr::exp2, b.CreateFMul(x, llvm::ConstantFP::get(b.getFloatTy(), M_LOG2E)));
}

// v_rcp_f32 (1 ulp) alone: an fdiv with approximate flags adds the subnormal scaling.
llvm::Value* AmdgpuHooks::approx_reciprocal(llvm::IRBuilderBase& b, llvm::Value* y) {
  return b.CreateIntrinsic(Intr::amdgcn_rcp, {b.getFloatTy()}, {y});
}

// v_exp_f32 (1 ulp) alone: llvm.exp2 adds the scaling for subnormal results.
llvm::Value* AmdgpuHooks::approx_exp2(llvm::IRBuilderBase& b, llvm::Value* x) {
  return b.CreateIntrinsic(Intr::amdgcn_exp2, {b.getFloatTy()}, {x});
}

void AmdgpuHooks::trap(llvm::IRBuilderBase& b, unsigned line) {
  // The failing line goes to a global the runtime (or a debugger) can read with
  // hipModuleGetGlobal("tl_assert_line"); s_trap then ends the dispatch with an error,
  // which the runtime reports as tl::kernel_fault.
  llvm::Module* m = b.GetInsertBlock()->getModule();
  auto* g = m->getGlobalVariable("tl_assert_line");
  if (!g) {
    g = new llvm::GlobalVariable(*m, b.getInt32Ty(), false, llvm::GlobalValue::ExternalLinkage, b.getInt32(0),
                                 "tl_assert_line", nullptr, llvm::GlobalValue::NotThreadLocal, 1);
    g->setVisibility(llvm::GlobalValue::ProtectedVisibility);
  }
  b.CreateStore(b.getInt32(line), g, /*volatile=*/true);
  b.CreateIntrinsic(Intr::trap, kNoTypes, {});
}

}  // namespace tl::amd

namespace tl::amd {

// A raw buffer resource (V#, 128 bits) over `base`: stride 0 (raw: the offset is a byte
// offset, no index, no swizzle), num_records = gpu::kBufferNumRecords bytes unless the
// lowering passes a tighter bound (a mask `offsets < n` made the range check), and word 3
// from the capability table (0x27000 on CDNA: DATA_FORMAT 32 and NUM_FORMAT float, which
// the raw untyped buffer_load/store instructions ignore but must be nonzero; everything
// else 0, so an out-of-range access returns 0 / is dropped: CDNA3 ISA, "Buffer
// Instructions", range checking). The V# lives in 4 SGPRs, so base must be uniform:
// readfirstlane says so to LLVM (a no-op on a kernel argument; without it a base LLVM
// cannot prove uniform would get a waterfall loop around every access).
llvm::Value* AmdgpuHooks::buffer_resource(llvm::IRBuilderBase& b, llvm::Value* base, llvm::Value* num_records) {
  if (!caps_.has_buffer_ops()) return nullptr;
  llvm::Value* uniform = b.CreateIntrinsic(Intr::amdgcn_readfirstlane, {base->getType()}, {base});
  llvm::Type* rsrc_ty = llvm::PointerType::get(b.getContext(), 8);  // addrspace(8): buffer resource
  return b.CreateIntrinsic(Intr::amdgcn_make_buffer_rsrc, {rsrc_ty, base->getType()},
                           {uniform, b.getInt16(0), num_records ? num_records : b.getInt64(gpu::kBufferNumRecords),
                            b.getInt32(int32_t(caps_.buffer_resource_flags))});
}

namespace {
// The integer type a raw buffer access of `ty` moves (i8, i16, i32, <2 x i32>, <4 x i32>:
// what buffer_load_{ubyte,ushort,dword,dwordx2,dwordx4} select from in LLVM for every
// element type; bf16 and i1-as-i8 vectors included), bitcast to and from `ty`.
llvm::Type* buffer_int_type(llvm::LLVMContext& ctx, unsigned bits) {
  if (bits <= 32) return llvm::IntegerType::get(ctx, bits);
  return llvm::FixedVectorType::get(llvm::Type::getInt32Ty(ctx), bits / 32);
}
}  // namespace

// The aux operand of a buffer access: the chip's bits for the cache modifier, and LLVM's
// volatile bit (31: the backend then treats it as a volatile global access) for volatile.
uint32_t AmdgpuHooks::buffer_aux(const ir::AccessFlags& a, bool load) const {
  return arch_.buffer_cache_bits(a.modifier, load) | (a.is_volatile ? 1u << 31 : 0u);
}

// llvm.amdgcn.raw.ptr.buffer.load(rsrc, voffset, soffset = 0, aux): voffset is the byte
// offset checked against num_records (soffset is not range-checked, so it stays 0).
llvm::Value* AmdgpuHooks::buffer_load(llvm::IRBuilderBase& b, llvm::Type* ty, llvm::Value* rsrc, llvm::Value* voffset,
                                      const ir::AccessFlags& a) {
  unsigned bits = unsigned(ty->getPrimitiveSizeInBits());
  llvm::Type* ity = buffer_int_type(b.getContext(), bits);
  llvm::Value* v = b.CreateIntrinsic(Intr::amdgcn_raw_ptr_buffer_load, {ity},
                                     {rsrc, voffset, b.getInt32(0), b.getInt32(buffer_aux(a, true))});
  return ity == ty ? v : b.CreateBitCast(v, ty);
}

void AmdgpuHooks::buffer_store(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* rsrc, llvm::Value* voffset,
                               const ir::AccessFlags& a) {
  unsigned bits = unsigned(v->getType()->getPrimitiveSizeInBits());
  llvm::Type* ity = buffer_int_type(b.getContext(), bits);
  if (ity != v->getType()) v = b.CreateBitCast(v, ity);
  b.CreateIntrinsic(Intr::amdgcn_raw_ptr_buffer_store, {ity},
                    {v, rsrc, voffset, b.getInt32(0), b.getInt32(buffer_aux(a, false))});
}

// A global access with a cache modifier, as Triton's AMD backend marks it (its table of
// <volatile, nontemporal> per modifier): loads .cg, .cs (and .lu) nontemporal, .cv
// volatile and nontemporal; stores .cs nontemporal, .wt volatile and nontemporal; .ca,
// .wb and a store's .cg unmarked. LLVM's memory legalizer sets the bits: nt on gfx942/
// gfx950 and glc slc on gfx90a for nontemporal, sc0 sc1 (glc) and a wait for volatile.
// The eviction policy has no AMD form (Triton ignores it there too).
void AmdgpuHooks::decorate_access(llvm::Instruction* access, const ir::AccessFlags& a, bool load) {
  bool is_volatile = a.is_volatile, nontemporal = false;
  switch (a.modifier) {
    case cache_modifier::cg: nontemporal = load; break;
    case cache_modifier::cs: case cache_modifier::lu: nontemporal = true; break;
    case cache_modifier::cv: case cache_modifier::wt: is_volatile = nontemporal = true; break;
    default: break;
  }
  if (is_volatile) {
    if (auto* l = llvm::dyn_cast<llvm::LoadInst>(access)) l->setVolatile(true);
    if (auto* st = llvm::dyn_cast<llvm::StoreInst>(access)) st->setVolatile(true);
  }
  if (nontemporal) {
    llvm::LLVMContext& ctx = access->getContext();
    access->setMetadata(llvm::LLVMContext::MD_nontemporal,
                        llvm::MDNode::get(ctx, llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                                   llvm::Type::getInt32Ty(ctx), 1))));
  }
}

}  // namespace tl::amd

namespace tl::amd {

// The MFMA's operands as its intrinsic takes them (LLVM 22, IntrinsicsAMDGPU.td; each
// checked with llc): f32 one float; f16 <k x half>; bf16 <4 x i16> for the 1k forms and
// <8 x bfloat> for gfx950's; 8-bit elements packed into i32 (4), i64 (8), <4 x i32> (16)
// or <8 x i32> (32, f8f6f4). The accumulator is <m*n/64 x float|i32>; the trailing
// immediates are cbsz, abid, blgp = 0 (no broadcast), and for f8f6f4 the formats (cbsz,
// blgp: 0 = e4m3, 1 = e5m2) and zero scales (LLVM then selects the unscaled form).
std::vector<llvm::Value*> AmdgpuHooks::matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                                       const std::vector<llvm::Value*>& a,
                                                       const std::vector<llvm::Value*>& bv,
                                                       const std::vector<llvm::Value*>& c) {
  return scaled_matrix_multiply(b, mi, a, bv, c, nullptr, nullptr);
}

// gfx950's v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4 (LLVM 22's
// llvm.amdgcn.mfma.scale.*.f8f6f4: A, B, C, cbsz, blgp, opsel_a, scale_a, opsel_b,
// scale_b): cbsz / blgp the formats of A and B (0 e4m3, 1 e5m2, 2 e2m3, 3 e3m2, 4 e2m1;
// an e2m1 operand is 16 bytes a lane, <4 x i32>), each scale a VGPR whose byte opsel
// picks (the lane's e8m0 in byte 0). Without scales (the unscaled f8f6f4 forms of an FP8
// tl::dot) the scales are 0 and LLVM selects v_mfma_f32_*_f8f6f4.
std::vector<llvm::Value*> AmdgpuHooks::scaled_matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                                              const std::vector<llvm::Value*>& a,
                                                              const std::vector<llvm::Value*>& bv,
                                                              const std::vector<llvm::Value*>& c,
                                                              llvm::Value* scale_a, llvm::Value* scale_b) {
  auto vector_of = [&](const std::vector<llvm::Value*>& x) -> llvm::Value* {
    llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(x[0]->getType(), unsigned(x.size())));
    for (size_t i = 0; i < x.size(); ++i) v = b.CreateInsertElement(v, x[i], uint64_t(i));
    return v;
  };
  auto operand = [&](const std::vector<llvm::Value*>& x, DType t) -> llvm::Value* {
    if (t == DType::f32) return x[0];
    llvm::Value* v = vector_of(x);
    if (t == DType::bf16 && x.size() == 4) return b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt16Ty(), 4));
    if (bit_width(t) != 8) return v;
    const unsigned bits = unsigned(x.size()) * 8;
    if (bits <= 64) return b.CreateBitCast(v, b.getIntNTy(bits));
    return b.CreateBitCast(v, llvm::FixedVectorType::get(b.getInt32Ty(), bits / 32));
  };
  std::vector<llvm::Value*> args = {operand(a, mi.a), operand(bv, mi.b), vector_of(c)};
  std::vector<llvm::Type*> overloads;
  if (mi.intrinsic.find("f8f6f4") != std::string::npos) {
    auto format = [](DType t) { return t == DType::f4e2m1 ? 4 : t == DType::f8e5m2 ? 1 : 0; };
    auto scale = [&](llvm::Value* s) { return s ? b.CreateZExt(s, b.getInt32Ty()) : b.getInt32(0); };
    overloads = {args[0]->getType(), args[1]->getType()};
    args.push_back(b.getInt32(uint32_t(format(mi.a))));
    args.push_back(b.getInt32(uint32_t(format(mi.b))));
    args.push_back(b.getInt32(0));  // opsel_a: byte 0
    args.push_back(scale(scale_a));
    args.push_back(b.getInt32(0));  // opsel_b
    args.push_back(scale(scale_b));
  } else {
    for (int i = 0; i < 3; ++i) args.push_back(b.getInt32(0));
  }
  llvm::Value* r = gpu::call_intrinsic(b, mi.intrinsic, overloads, args);
  std::vector<llvm::Value*> out;
  for (size_t i = 0; i < c.size(); ++i) out.push_back(b.CreateExtractElement(r, uint64_t(i)));
  return out;
}

}  // namespace tl::amd

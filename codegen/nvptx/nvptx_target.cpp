// The NVIDIA target: the shared GPU lowering with NVPTX hooks (warp 32, shfl.sync,
// bar.sync, CTA/device sync scopes, approximate transcendental instructions in place of
// libdevice), then LLVM's NVPTX backend to PTX text, which is the binary (the CUDA
// driver JIT-compiles it with cuModuleLoadData).
//
// Atomics: LLVM 22's NVPTX backend emits `atom` (relaxed, .gpu scope) for atomicrmw
// whatever its ordering and scope, so non-relaxed ones are bracketed by scoped fences
// (fence.acq_rel.cta/.gpu/.sys); a sys-scope atomicrmw is therefore only gpu-scope
// atomic (cmpxchg keeps its scope and ordering).
//
// device_assert traps (`trap;`): __assertfail lives in libdevice/the CUDA runtime,
// which tl does not link; the failing line is stored in the global tl_assert_line
// first. OCP FP8 converts use the hardware's pair converts on sm_89+ (cvt.*.e4m3x2 /
// e5m2x2), the FNUZ formats and older chips the portable software path.
#include <fmt/format.h>
#include <llvm-c/Target.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "codegen/compile_profile.hpp"
#include "codegen/gpu/hooks.hpp"
#include "codegen/gpu/lowering.hpp"
#include "codegen/nvptx/nvptx_capabilities.hpp"
#include "codegen/gpu/optimize.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace tl::nvptx {
namespace {

namespace Intr = llvm::Intrinsic;
constexpr llvm::ArrayRef<llvm::Type*> kNoTypes;  // non-overloaded intrinsics
constexpr const char* kTriple = "nvptx64-nvidia-cuda";

// The PTX ISA version to ask for: 7.8 (CUDA 11.8) covers sm_80..sm_90, newer chips need
// the version that introduced them. The CUDA 13 driver JIT accepts all of these.
int ptx_version(const std::string& arch) {
  int sm = std::atoi(arch.c_str() + 3);
  bool accel = !arch.empty() && (arch.back() == 'a' || arch.back() == 'f');
  if (sm >= 120) return sm >= 121 ? 88 : 87;
  if (sm >= 100) return sm >= 103 ? 88 : 86;
  if (sm >= 90 && accel) return 80;
  return 78;
}

class NvptxHooks final : public gpu::GpuHooks {
 public:
  explicit NvptxHooks(const codegen::TargetDesc& d) : desc_(d), caps_(nvptx::capabilities(d.arch)) {}
  std::string target_name() const override { return desc_.arch; }
  int wave_size() const override { return 32; }
  const gpu::TargetCapabilities& capabilities() const override { return caps_; }

  void finish_kernel(llvm::Function& fn, const gpu::KernelInfo& info) override {
    fn.setCallingConv(llvm::CallingConv::PTX_Kernel);
    fn.addFnAttr("nvvm.maxntid", fmt::format("{}", info.block_threads));
    // The register budget said outright: what a CTA of this size may use (an SM's 64K
    // registers over its threads, in the allocation's steps of 8, at most 255). Without it
    // ptxas 13.0 (and the driver's JIT) gives some large kernels 32 registers and a stack:
    // the attention sample's causal forward at 128x64, 4 warps, took 32 registers and 18 KB
    // of spill stores (7.8 TFLOP/s on the H100) where the budget gives 255 and 1.6 KB.
    // Kernels whose tiles are small (at most kSmallTile elements a thread in any value:
    // elementwise and row-wise kernels, no dot accumulators) state none: ptxas's own choice
    // (Triton's, which states none) keeps them at full occupancy, what a streaming kernel's
    // loads in flight need. GELU-tanh over bf16 at 8 elements a thread: 32 registers, 64
    // warps an SM; given 255, ptxas interleaved all 8 elements in 48 (40 warps).
    constexpr int kSmallTile = 16;
    const int budget = std::min(255, 65536 / std::max(1, info.block_threads) / 8 * 8);
    if (info.uses_matrix_instructions || info.max_regs_per_value > kSmallTile)
      fn.addFnAttr("nvvm.maxnreg", fmt::format("{}", budget));
    fn.addFnAttr(llvm::Attribute::NoUnwind);
  }
  llvm::Value* thread_id(llvm::IRBuilderBase& b) override {
    return b.CreateIntrinsic(Intr::nvvm_read_ptx_sreg_tid_x, kNoTypes, {});
  }
  llvm::Value* warp_id(llvm::IRBuilderBase& b, llvm::Value* tid) override { return b.CreateLShr(tid, 5, "warp"); }
  llvm::Value* program_id(llvm::IRBuilderBase& b, int axis) override {
    static const Intr::ID ids[] = {Intr::nvvm_read_ptx_sreg_ctaid_x, Intr::nvvm_read_ptx_sreg_ctaid_y,
                                   Intr::nvvm_read_ptx_sreg_ctaid_z};
    return b.CreateIntrinsic(ids[axis], kNoTypes, {});
  }
  llvm::Value* num_programs(llvm::IRBuilderBase& b, int axis, int) override {
    static const Intr::ID ids[] = {Intr::nvvm_read_ptx_sreg_nctaid_x, Intr::nvvm_read_ptx_sreg_nctaid_y,
                                   Intr::nvvm_read_ptx_sreg_nctaid_z};
    return b.CreateIntrinsic(ids[axis], kNoTypes, {});
  }
  llvm::Value* shuffle_xor(llvm::IRBuilderBase& b, llvm::Value* v, int mask) override {
    return b.CreateIntrinsic(Intr::nvvm_shfl_sync_bfly_i32, kNoTypes,
                             {b.getInt32(0xffffffffu), v, b.getInt32(uint32_t(mask)), b.getInt32(0x1f)});
  }
  // shfl.sync.idx.b32 over the full warp; c = 0x1f: the source lane is taken modulo 32.
  llvm::Value* shuffle_idx(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) override {
    return b.CreateIntrinsic(Intr::nvvm_shfl_sync_idx_i32, kNoTypes,
                             {b.getInt32(0xffffffffu), v, src_lane, b.getInt32(0x1f)});
  }
  llvm::Value* shuffle_idx_f32(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) override {
    return b.CreateIntrinsic(Intr::nvvm_shfl_sync_idx_f32, kNoTypes,
                             {b.getInt32(0xffffffffu), v, src_lane, b.getInt32(0x1f)});
  }
  void barrier(llvm::IRBuilderBase& b) override {
    b.CreateIntrinsic(Intr::nvvm_barrier_cta_sync_aligned_all, kNoTypes, {b.getInt32(0)});
  }
  bool order_rmw_with_fences() const override { return true; }

  // tl::load / tl::store's cache modifiers and eviction policies, as Triton's NVIDIA
  // backend writes them (LLVM's NVPTX has no form for either): inline PTX
  // `ld.global{.cg|.cs|.lu|.cv|.ca}{.L1::evict_*}{.L2::cache_hint}{.vN}.bW` (stores:
  // .cg/.cs/.wt/.wb), the L2 policy from `createpolicy.fractional.L2::evict_*.b64 p, 1.0`.
  // An L1 eviction priority is only written without a cache operator (PTX has no form
  // with both). The defaults (.ca, .wb) alone, volatile, and pointer elements are LLVM's
  // plain or volatile access (ld.volatile.global); pointers keep no modifier.
  llvm::Value* load_with_policy(llvm::IRBuilderBase& b, llvm::Type* ty, llvm::Value* ptr, unsigned align,
                                const ir::AccessFlags& a) override {
    if (!needs_ptx(a, cache_modifier::ca) || ty->isPtrOrPtrVectorTy()) return nullptr;
    Words w = words_of(ty);
    std::string text = "ld.global" + qualifiers(a) + w.suffix() + " " + w.list(0) + ", [$" + std::to_string(w.n) + "]";
    std::string constraints;
    for (int i = 0; i < w.n; ++i) constraints += "=" + w.letter() + ",";
    constraints += "l";
    std::vector<llvm::Value*> args = {ptr};
    add_policy(b, a, w.n + 1, text, constraints, args);
    std::vector<llvm::Type*> outs(size_t(w.n), b.getIntNTy(unsigned(w.bits)));
    llvm::Type* ret = w.n == 1 ? outs[0] : llvm::StructType::get(b.getContext(), outs);
    std::vector<llvm::Type*> ins;
    for (llvm::Value* x : args) ins.push_back(x->getType());
    auto* fty = llvm::FunctionType::get(ret, ins, false);
    llvm::CallInst* call = b.CreateCall(fty, llvm::InlineAsm::get(fty, text + ";", constraints, false), args);
    call->setOnlyReadsMemory();
    llvm::Value* words = call;
    if (w.n > 1) {
      llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(outs[0], unsigned(w.n)));
      for (int i = 0; i < w.n; ++i) v = b.CreateInsertElement(v, b.CreateExtractValue(call, unsigned(i)), uint64_t(i));
      words = v;
    }
    return b.CreateBitCast(words, ty);
  }

  bool store_with_policy(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* ptr, unsigned align,
                         const ir::AccessFlags& a) override {
    llvm::Type* ty = v->getType();
    if (!needs_ptx(a, cache_modifier::wb) || ty->isPtrOrPtrVectorTy()) return false;
    Words w = words_of(ty);
    std::string text = "st.global" + qualifiers(a) + w.suffix() + " [$0], " + w.list(1);
    std::string constraints = "l";
    std::vector<llvm::Value*> args = {ptr};
    llvm::Type* word = b.getIntNTy(unsigned(w.bits));
    if (w.n == 1) {
      args.push_back(b.CreateBitCast(v, word));
    } else {
      llvm::Value* vec = b.CreateBitCast(v, llvm::FixedVectorType::get(word, unsigned(w.n)));
      for (int i = 0; i < w.n; ++i) args.push_back(b.CreateExtractElement(vec, uint64_t(i)));
    }
    for (int i = 0; i < w.n; ++i) constraints += "," + w.letter();
    add_policy(b, a, w.n + 1, text, constraints, args);
    std::vector<llvm::Type*> ins;
    for (llvm::Value* x : args) ins.push_back(x->getType());
    auto* fty = llvm::FunctionType::get(b.getVoidTy(), ins, false);
    b.CreateCall(fty, llvm::InlineAsm::get(fty, text + ";", constraints + ",~{memory}", true), args);
    return true;
  }

  void decorate_access(llvm::Instruction* access, const ir::AccessFlags& a, bool load) override {
    if (!a.is_volatile) return;
    if (auto* l = llvm::dyn_cast<llvm::LoadInst>(access)) l->setVolatile(true);
    if (auto* st = llvm::dyn_cast<llvm::StoreInst>(access)) st->setVolatile(true);
  }
  // cp.async: .cg (L2 only) for 16 bytes, .ca for 4 and 8 (the only sizes .cg has not);
  // each global_load_to_shared is one commit group, so async_wait(n) is wait_group n.
  llvm::Instruction* copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* global, llvm::Value* shared,
                                    int bytes) override {
    auto id = bytes == 16 ? Intr::nvvm_cp_async_cg_shared_global_16
              : bytes == 8 ? Intr::nvvm_cp_async_ca_shared_global_8
                           : Intr::nvvm_cp_async_ca_shared_global_4;
    return b.CreateIntrinsic(id, kNoTypes, {shared, global});
  }
  llvm::Instruction* copy_to_shared_or_zeros(llvm::IRBuilderBase& b, llvm::Value* global, llvm::Value* shared,
                                             int bytes, llvm::Value* pred) override {
    // src-size 0: nothing is read (the pointer of a masked-off chunk may be anywhere)
    // and the chunk is zero-filled (PTX ISA, cp.async).
    auto id = bytes == 16 ? Intr::nvvm_cp_async_cg_shared_global_16_s
              : bytes == 8 ? Intr::nvvm_cp_async_ca_shared_global_8_s
                           : Intr::nvvm_cp_async_ca_shared_global_4_s;
    llvm::Value* size = b.CreateSelect(pred, b.getInt32(uint32_t(bytes)), b.getInt32(0));
    return b.CreateIntrinsic(id, kNoTypes, {shared, global, size});
  }
  void commit_copies(llvm::IRBuilderBase& b) override {
    b.CreateIntrinsic(Intr::nvvm_cp_async_commit_group, kNoTypes, {});
  }
  void async_wait(llvm::IRBuilderBase& b, int n) override {
    b.CreateIntrinsic(Intr::nvvm_cp_async_wait_group, kNoTypes, {b.getInt32(uint32_t(n))});
  }
  uint8_t sync_scope(llvm::LLVMContext& ctx, scope sc) override {
    switch (sc) {
      case scope::cta: return uint8_t(ctx.getOrInsertSyncScopeID("block"));
      case scope::gpu: return uint8_t(ctx.getOrInsertSyncScopeID("device"));
      case scope::sys: return uint8_t(llvm::SyncScope::System);
    }
    return uint8_t(llvm::SyncScope::System);
  }
  // Without libdevice: the hardware's approximate instructions (what CUDA's fast-math
  // intrinsics use); sqrt stays the correctly rounded sqrt.rn.
  // exp2 is Triton's tl.exp2 on NVIDIA, ex2.approx.ftz.f32: one MUFU.EX2, results below
  // 2^-126 flushed to +0. ex2.approx.f32 keeps them by scaling around the MUFU (an FSETP
  // and two FMULs more an element), which the attention backward at D = 64 paid in its
  // issue-bound loop: its dK/dV kernel 363 -> 357 us, dQ 223 -> 201 us on the H200 (issue 42).
  llvm::Value* math(llvm::IRBuilderBase& b, Op op, llvm::Value* x) override {
    if (!x->getType()->isFloatTy()) return nullptr;
    auto f = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
    switch (op) {
      case Op::exp2: return b.CreateIntrinsic(Intr::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {x});
      case Op::exp:
        return b.CreateIntrinsic(Intr::nvvm_ex2_approx, {b.getFloatTy()}, {b.CreateFMul(x, f(M_LOG2E))});
      case Op::log2: return b.CreateIntrinsic(Intr::nvvm_lg2_approx_f, kNoTypes, {x});
      case Op::log: return b.CreateFMul(b.CreateIntrinsic(Intr::nvvm_lg2_approx_f, kNoTypes, {x}), f(M_LN2));
      case Op::sin: return b.CreateIntrinsic(Intr::nvvm_sin_approx_f, kNoTypes, {x});
      case Op::cos: return b.CreateIntrinsic(Intr::nvvm_cos_approx_f, kNoTypes, {x});
      case Op::rsqrt: return b.CreateIntrinsic(Intr::nvvm_rsqrt_approx_f, kNoTypes, {x});
      default: return nullptr;
    }
  }
  // One MUFU.RCP: the .ftz form has none of rcp.approx.f32's subnormal and huge-operand
  // scaling (five instructions more), which `div rcp`'s operand range does not need.
  llvm::Value* approx_reciprocal(llvm::IRBuilderBase& b, llvm::Value* y) override {
    return b.CreateIntrinsic(Intr::nvvm_rcp_approx_ftz_f, kNoTypes, {y});
  }
  // One MUFU.EX2: ex2.approx.f32 scales subnormal results around it (two instructions
  // more), which `exp2 raw`'s results (1 and above in tanh) never are.
  llvm::Value* approx_exp2(llvm::IRBuilderBase& b, llvm::Value* x) override {
    return b.CreateIntrinsic(Intr::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {x});
  }
  // sm_89+ (the capability table's hardware_fp8): OCP FP8 to f16 in hardware
  // (cvt.rn.f16x2.e4m3x2 / e5m2x2), exact, and f16 to f32 exact too: a few instructions
  // where the bit-level conversion took ~20 (an FP8 KV cache dequantized in a decode loop
  // converts every element it streams). The instruction converts two bytes: a tile's
  // registers use both (fp8x2_to_f32x2), a lone element the low one.
  // The FNUZ formats, and older chips: the bit-level conversion (nullptr).
  llvm::Value* fp8_to_f32(llvm::IRBuilderBase& b, DType fmt, llvm::Value* bits) override {
    if (!caps_.has_hardware_fp8(fmt)) return nullptr;
    llvm::Value* pair = fp8x2_to_f16x2(b, fmt, b.CreateZExt(bits, b.getInt16Ty()));
    return b.CreateFPExt(b.CreateExtractElement(pair, uint64_t(0)), b.getFloatTy());
  }
  llvm::Value* fp8x2_to_f32x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) override {
    if (!caps_.has_hardware_fp8(fmt)) return nullptr;
    llvm::Value* bytes = llvm::PoisonValue::get(llvm::FixedVectorType::get(b.getInt8Ty(), 2));
    bytes = b.CreateInsertElement(b.CreateInsertElement(bytes, lo, uint64_t(0)), hi, uint64_t(1));
    llvm::Value* pair = fp8x2_to_f16x2(b, fmt, b.CreateBitCast(bytes, b.getInt16Ty()));
    return b.CreateFPExt(pair, llvm::FixedVectorType::get(b.getFloatTy(), 2));
  }
  // f32 to OCP FP8 (cvt.rn.satfinite.e4m3x2.f32 / e5m2x2, sm_89+): round to nearest even,
  // saturate to the largest finite value (infinities included), NaN to NaN: docs/ir.md's
  // cast. Which NaN code comes out is the hardware's (the PTX ISA says only "NaN"; not
  // checked on a GPU), which may differ in sign and payload from the software path's
  // sign | 0x7f (e4m3) / sign | 0x7e (e5m2): any NaN of the format is a NaN, as tl's tests
  // compare them. Two floats an instruction; a lone element takes the low byte.
  llvm::Value* f32_to_fp8(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x) override {
    llvm::Value* pair = f32x2_to_fp8x2(b, fmt, x, llvm::ConstantFP::get(b.getFloatTy(), 0.0));
    return pair ? b.CreateExtractElement(pair, uint64_t(0)) : nullptr;
  }
  llvm::Value* f32x2_to_fp8x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) override {
    if (!caps_.has_hardware_fp8(fmt)) return nullptr;
    const char* name = fmt == DType::f8e4m3fn ? "llvm.nvvm.ff.to.e4m3x2.rn" : "llvm.nvvm.ff.to.e5m2x2.rn";
    // PTX's `cvt d, a, b` puts a in the upper byte of d: `hi` goes first.
    llvm::Value* pair = gpu::call_intrinsic(b, name, {}, {hi, lo});
    return b.CreateBitCast(pair, llvm::FixedVectorType::get(b.getInt8Ty(), 2));
  }
  void trap(llvm::IRBuilderBase& b, unsigned line) override {
    llvm::Module* m = b.GetInsertBlock()->getModule();
    auto* g = m->getGlobalVariable("tl_assert_line");
    if (!g)
      g = new llvm::GlobalVariable(*m, b.getInt32Ty(), false, llvm::GlobalValue::ExternalLinkage, b.getInt32(0),
                                   "tl_assert_line", nullptr, llvm::GlobalValue::NotThreadLocal, 1);
    b.CreateStore(b.getInt32(line), g, /*volatile=*/true);
    b.CreateIntrinsic(Intr::trap, kNoTypes, {});
  }

 private:
  codegen::TargetDesc desc_;
  gpu::TargetCapabilities caps_;

  // A matrix operand's elements (bfloat, half, float, i8 bits) packed into 32-bit words,
  // element 0 lowest: 2 16-bit elements a word, 4 8-bit ones, one f32 (its bits).
  static std::vector<llvm::Value*> pack_words(llvm::IRBuilderBase& b, const std::vector<llvm::Value*>& x, DType t) {
    std::vector<llvm::Value*> out;
    const size_t w = size_t(32 / bit_width(t));
    for (size_t r = 0; r < x.size(); r += w) {
      if (w == 1) {
        out.push_back(b.CreateBitCast(x[r], b.getInt32Ty()));
        continue;
      }
      llvm::Value* v = llvm::PoisonValue::get(llvm::FixedVectorType::get(x[r]->getType(), unsigned(w)));
      for (size_t i = 0; i < w; ++i) v = b.CreateInsertElement(v, x[r + i], uint64_t(i));
      out.push_back(b.CreateBitCast(v, b.getInt32Ty()));
    }
    return out;
  }

  // Inline PTX with side effects whose first `outputs` results are `args`' first ones,
  // tied (constraints "=f,..,0,1,.."); returns the results.
  static std::vector<llvm::Value*> call_tied_asm(llvm::IRBuilderBase& b, const std::string& text,
                                                 const std::string& constraints, const std::vector<llvm::Value*>& args,
                                                 size_t outputs) {
    std::vector<llvm::Type*> out_types, in_types;
    for (size_t i = 0; i < outputs; ++i) out_types.push_back(args[i]->getType());
    for (llvm::Value* a : args) in_types.push_back(a->getType());
    llvm::Type* ret = outputs == 1 ? out_types[0] : llvm::StructType::get(b.getContext(), out_types);
    auto* fty = llvm::FunctionType::get(ret, in_types, false);
    llvm::InlineAsm* asm_ = llvm::InlineAsm::get(fty, text, constraints, /*hasSideEffects=*/true);
    llvm::CallInst* call = b.CreateCall(fty, asm_, args);
    call->addFnAttr(llvm::Attribute::Convergent);
    std::vector<llvm::Value*> out;
    for (unsigned i = 0; i < outputs; ++i) out.push_back(outputs == 1 ? call : b.CreateExtractValue(call, i));
    return out;
  }

  // Whether an access needs inline PTX: a cache operator other than the default, or an
  // eviction policy (volatile is LLVM's own).
  static bool needs_ptx(const ir::AccessFlags& a, cache_modifier default_modifier) {
    if (a.is_volatile) return false;
    return a.eviction != evict::normal || (a.modifier != cache_modifier::none && a.modifier != default_modifier);
  }
  // ".cg", ".L1::evict_last", ".L2::cache_hint" as the access asks.
  static std::string qualifiers(const ir::AccessFlags& a) {
    std::string q;
    if (a.modifier != cache_modifier::none) q += std::string(".") + ir::cache_name(a.modifier);
    const char* priority = a.eviction == evict::first ? "evict_first" : "evict_last";
    if (a.eviction != evict::normal && a.modifier == cache_modifier::none) q += std::string(".L1::") + priority;
    if (a.eviction != evict::normal) q += ".L2::cache_hint";
    return q;
  }
  // The L2 policy operand ($index) of an access with an eviction policy.
  static void add_policy(llvm::IRBuilderBase& b, const ir::AccessFlags& a, int index, std::string& text,
                         std::string& constraints, std::vector<llvm::Value*>& args) {
    if (a.eviction == evict::normal) return;
    const std::string p = a.eviction == evict::first ? "evict_first" : "evict_last";
    auto* fty = llvm::FunctionType::get(b.getInt64Ty(), {}, false);
    llvm::CallInst* policy = b.CreateCall(
        fty, llvm::InlineAsm::get(fty, "createpolicy.fractional.L2::" + p + ".b64 $0, 1.0;", "=l", false));
    policy->setDoesNotAccessMemory();
    text += ", $" + std::to_string(index);
    constraints += ",l";
    args.push_back(policy);
  }
  // An access of `ty` as the words PTX moves (Triton's split): under 32 bits one word of
  // its width, else words of max(32, element bits), n of them (.v2/.v4).
  struct Words {
    int bits = 32, n = 1;
    std::string letter() const { return bits == 8 ? "c" : bits == 16 ? "h" : bits == 32 ? "r" : "l"; }
    std::string suffix() const { return (n > 1 ? ".v" + std::to_string(n) : "") + ".b" + std::to_string(bits); }
    std::string list(int first) const {
      if (n == 1) return "$" + std::to_string(first);
      std::string s = "{";
      for (int i = 0; i < n; ++i) s += (i ? ", $" : "$") + std::to_string(first + i);
      return s + "}";
    }
  };
  static Words words_of(llvm::Type* ty) {
    const int total = int(ty->getPrimitiveSizeInBits());
    if (total < 32) return {total, 1};
    const int word = std::max(32, int(ty->getScalarSizeInBits()));
    return {word, total / word};
  }

  // Two FP8 codes (i16, the low byte element 0) to <2 x half>.
  llvm::Value* fp8x2_to_f16x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* codes) {
    const char* name = fmt == DType::f8e4m3fn ? "llvm.nvvm.e4m3x2.to.f16x2.rn" : "llvm.nvvm.e5m2x2.to.f16x2.rn";
    return gpu::call_intrinsic(b, name, {}, {codes});
  }

  bool has_load_matrix() const override { return capabilities().load_matrix; }
  std::vector<llvm::Value*> load_matrix_x4(llvm::IRBuilderBase& b, llvm::Value* shared, bool trans) override {
    llvm::Value* r = b.CreateIntrinsic(trans ? Intr::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                                             : Intr::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16,
                                       {shared->getType()}, {shared});
    std::vector<llvm::Value*> out;
    for (unsigned q = 0; q < 4; ++q) out.push_back(b.CreateExtractValue(r, q));
    return out;
  }

  // wgmma.mma_async as inline PTX (LLVM 22 has intrinsics for its fence, commit and wait,
  // not for the instruction). The accumulator goes in and out tied to the same registers;
  // scale-d is a predicate set to 1 (accumulate: a fresh accumulator is zeros already).
  // 16-bit types take the transpose immediates, the others only K-major operands.
  // A from registers: its elements packed in 32-bit words as mma.sync's (four a lane for
  // k16), the form without imm-trans-a.
  std::vector<llvm::Value*> warpgroup_matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                                      llvm::Value* desc_a, const std::vector<llvm::Value*>& a,
                                                      llvm::Value* desc_b, bool trans_a, bool trans_b,
                                                      const std::vector<llvm::Value*>& c, bool accumulate) override {
    const size_t n = c.size();
    const bool integer = mi.acc == DType::i32;
    std::string regs;
    for (size_t i = 0; i < n; ++i) regs += fmt::format("{}${}", i ? "," : "", i);
    std::vector<llvm::Value*> args(c.begin(), c.end());
    std::string a_operand;
    std::string constraints;
    for (size_t i = 0; i < n; ++i) constraints += integer ? "=r," : "=f,";
    for (size_t i = 0; i < n; ++i) constraints += fmt::format("{},", i);
    // (operand numbers: the n outputs first, then the inputs in order)
    if (desc_a) {
      a_operand = fmt::format("${}", n + args.size());
      args.push_back(desc_a);
      constraints += "l,";
    } else {
      for (size_t i = 0; i < a.size(); ++i) {  // (warpgroup_a_words' 32-bit words)
        a_operand += fmt::format("{}${}", i ? "," : "{", n + args.size());
        args.push_back(a[i]);
        constraints += "r,";
      }
      a_operand += "}";
    }
    const size_t db = n + args.size();
    args.push_back(desc_b);
    args.push_back(b.getInt32(accumulate ? 1 : 0));  // scale-d
    constraints += "l,r";
    std::string scales = integer ? "" : ", 1, 1";
    if (mi.transposable) scales += desc_a ? fmt::format(", {}, {}", trans_a ? 1 : 0, trans_b ? 1 : 0)
                                          : fmt::format(", {}", trans_b ? 1 : 0);
    const std::string text = fmt::format(
        "{{\n.reg .pred p;\nsetp.ne.b32 p, ${}, 0;\nwgmma.mma_async.sync.aligned.m{}n{}k{}.{} {{{}}}, {}, ${}, p{};\n}}",
        db + 1, mi.m, mi.n, mi.k, mi.ptx_types, regs, a_operand, db, scales);
    return call_tied_asm(b, text, constraints, args, n);
  }
  std::vector<llvm::Value*> warpgroup_a_words(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                              const std::vector<llvm::Value*>& a) override {
    return pack_words(b, a, mi.a);
  }
  void warpgroup_fence(llvm::IRBuilderBase& b) override {
    b.CreateIntrinsic(Intr::nvvm_wgmma_fence_sync_aligned, kNoTypes, {});
  }
  void warpgroup_commit(llvm::IRBuilderBase& b) override {
    b.CreateIntrinsic(Intr::nvvm_wgmma_commit_group_sync_aligned, kNoTypes, {});
  }
  // The wait as inline PTX that takes the registers and gives them back (Triton's
  // WGMMAWaitGroupOp): their uses after it cannot be moved before it.
  std::vector<llvm::Value*> warpgroup_wait(llvm::IRBuilderBase& b, int pending,
                                           const std::vector<llvm::Value*>& regs) override {
    const size_t n = regs.size();
    if (n == 0) {  // (a wait that ties no registers: lower_for's path that skips a loop)
      auto* fty = llvm::FunctionType::get(b.getVoidTy(), false);
      b.CreateCall(fty, llvm::InlineAsm::get(fty, fmt::format("wgmma.wait_group.sync.aligned {};", pending), "",
                                             /*hasSideEffects=*/true))
          ->addFnAttr(llvm::Attribute::Convergent);
      return {};
    }
    std::string constraints;
    for (size_t i = 0; i < n; ++i) constraints += regs[i]->getType()->isFloatTy() ? "=f," : "=r,";
    for (size_t i = 0; i < n; ++i) constraints += fmt::format("{}{}", i ? "," : "", i);
    return call_tied_asm(b, fmt::format("wgmma.wait_group.sync.aligned {};", pending), constraints, regs, n);
  }
  void fence_async_shared(llvm::IRBuilderBase& b) override {
    gpu::call_intrinsic(b, "llvm.nvvm.fence.proxy.async.shared_cta", {}, {});
  }
  // griddepcontrol.wait / .launch_dependents (PTX 7.8, sm_90+). Before sm_90 a launch never
  // overlaps the previous one (the runtime launches it plainly), so nothing is owed.
  bool has_grid_dependency_control() const { return std::atoi(desc_.arch.c_str() + 3) >= 90; }
  void grid_dependency_wait(llvm::IRBuilderBase& b) override {
    if (has_grid_dependency_control()) b.CreateIntrinsic(Intr::nvvm_griddepcontrol_wait, kNoTypes, {});
  }
  void grid_dependency_launch_dependents(llvm::IRBuilderBase& b) override {
    if (has_grid_dependency_control()) b.CreateIntrinsic(Intr::nvvm_griddepcontrol_launch_dependents, kNoTypes, {});
  }

  // Hopper's TMA (Op::tensor_map_load, Op::mbarrier) in the form Triton 3.6 emits for a
  // descriptor load on sm_90 (bench/results/sm90-2026-11-28-tma-ptx/triton_tma_load.ptx,
  // and its pipelined tutorial 09), which is known to run, rather than the form LLVM 22's
  // TMA intrinsics lower to (the copy's destination a 64-bit shared::cluster address from
  // cvta, a fence.mbarrier_init after the init, thread 0 issuing): that form faulted on
  // the H200 with CUDA_ERROR_ILLEGAL_INSTRUCTION, and which of the three differences is at
  // fault is not known yet. So, as Triton: inline PTX with the 32-bit shared::cta
  // addresses of the box and the mbarrier; thread 0 initialises an mbarrier; no
  // fence.mbarrier_init (Triton has none: one CTA, no cluster); one thread of warp 0
  // chosen by elect.sync issues the copy; every thread waits for the phase with
  // try_wait.parity; thread 0 invalidates the mbarrier once no thread waits on it.
  llvm::Value* tma_asm(llvm::IRBuilderBase& b, llvm::Type* ret, const std::string& text,
                       const std::string& constraints, std::vector<llvm::Value*> args) {
    std::vector<llvm::Type*> ins;
    for (llvm::Value* x : args) ins.push_back(x->getType());
    auto* fty = llvm::FunctionType::get(ret, ins, false);
    llvm::CallInst* call = b.CreateCall(fty, llvm::InlineAsm::get(fty, text, constraints, true), args);
    call->addFnAttr(llvm::Attribute::Convergent);
    return call;
  }
  // `body` run by the threads for which `pred` holds.
  template <class Body>
  static void tma_only(llvm::IRBuilderBase& b, llvm::Value* pred, const char* name, Body&& body) {
    llvm::LLVMContext& ctx = b.getContext();
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    auto* then = llvm::BasicBlock::Create(ctx, std::string("tma.") + name, fn);
    auto* next = llvm::BasicBlock::Create(ctx, std::string("tma.") + name + ".end", fn);
    b.CreateCondBr(pred, then, next);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(next);
    b.SetInsertPoint(next);
  }
  bool has_tma() const { return std::atoi(desc_.arch.c_str() + 3) >= 90; }
  static llvm::Value* shared32(llvm::IRBuilderBase& b, llvm::Value* p, const char* name) {
    return b.CreatePtrToInt(p, b.getInt32Ty(), name);
  }

  bool mbarrier_init(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* mbarriers, int count,
                     int arrivals) override {
    if (!has_tma()) return false;
    tma_only(b, b.CreateICmpEQ(tid, b.getInt32(0)), "init", [&] {
      for (int s = 0; s < count; ++s)
        tma_asm(b, b.getVoidTy(), fmt::format("mbarrier.init.shared::cta.b64 [$0], {};", arrivals), "r,~{memory}",
                {shared32(b, b.CreateConstGEP1_32(b.getInt8Ty(), mbarriers, unsigned(8 * s)), "tma.bar")});
    });
    return true;
  }
  bool mbarrier_inval(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* mbarriers, int count) override {
    if (!has_tma()) return false;
    tma_only(b, b.CreateICmpEQ(tid, b.getInt32(0)), "inval", [&] {
      for (int s = 0; s < count; ++s)
        tma_asm(b, b.getVoidTy(), "mbarrier.inval.shared::cta.b64 [$0];", "r,~{memory}",
                {shared32(b, b.CreateConstGEP1_32(b.getInt8Ty(), mbarriers, unsigned(8 * s)), "tma.bar")});
    });
    return true;
  }
  // Every thread: until the phase of parity `phase` has completed (the bytes of the copies
  // arriving on it landed).
  bool mbarrier_wait(llvm::IRBuilderBase& b, llvm::Value* mbarrier, llvm::Value* phase) override {
    if (!has_tma()) return false;
    llvm::LLVMContext& ctx = b.getContext();
    llvm::Function* fn = b.GetInsertBlock()->getParent();
    llvm::Value* bar32 = shared32(b, mbarrier, "tma.bar");
    auto* wait = llvm::BasicBlock::Create(ctx, "tma.wait", fn);
    auto* done = llvm::BasicBlock::Create(ctx, "tma.done", fn);
    b.CreateBr(wait);
    b.SetInsertPoint(wait);
    llvm::Value* complete = tma_asm(
        b, b.getInt32Ty(),
        "{\n\t.reg .pred c;\n\tmbarrier.try_wait.parity.shared.b64 c, [$1], $2;\n\tselp.u32 $0, 1, 0, c;\n\t}",
        "=r,r,r,~{memory}", {bar32, phase});
    b.CreateCondBr(b.CreateICmpNE(complete, b.getInt32(0)), done, wait);
    b.SetInsertPoint(done);
    return true;
  }
  // One thread of warp 0 chosen by elect.sync (lane 0: the whole warp takes the branch)
  // arms the mbarrier with the box's bytes (arrive.expect_tx: its one arrival) and issues
  // the copy, in that order in the one thread: Triton arms from thread 0 and issues from
  // the elected lane with a bar.sync between them, which the one thread does not need (a
  // copy that completes before the arm would only leave the transaction count negative
  // until the arm, the phase still waiting for its arrival).
  bool tensor_map_issue(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* dst, llvm::Value* mbarrier,
                        llvm::Value* tensor_map, const std::vector<llvm::Value*>& coords, int bytes,
                        llvm::Value* pred) override {
    if (!has_tma()) return false;
    llvm::Value* dst32 = shared32(b, dst, "tma.dst");
    llvm::Value* bar32 = shared32(b, mbarrier, "tma.bar");
    llvm::Value* map = b.CreatePtrToInt(tensor_map, b.getInt64Ty(), "tma.map");
    llvm::Value* warp0 = b.CreateICmpULT(tid, b.getInt32(32));
    if (pred) warp0 = b.CreateAnd(warp0, pred);
    tma_only(b, warp0, "warp0", [&] {
      llvm::Value* elected = tma_asm(
          b, b.getInt32Ty(), "{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 $0, 1, 0, p;\n\t}", "=r", {});
      tma_only(b, b.CreateICmpNE(elected, b.getInt32(0)), "issue", [&] {
        tma_asm(b, b.getVoidTy(), fmt::format("mbarrier.arrive.expect_tx.shared.b64 _, [$0], {};", bytes),
                "r,~{memory}", {bar32});
        std::string list;
        std::string constraints = "r,l,r";
        std::vector<llvm::Value*> args = {dst32, map, bar32};
        for (size_t i = 0; i < coords.size(); ++i) {
          list += fmt::format("{}${}", i ? ", " : "", 3 + i);
          constraints += ",r";
          args.push_back(coords[i]);
        }
        tma_asm(b, b.getVoidTy(),
                fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], "
                            "[$1, {{{}}}], [$2];",
                            coords.size(), list),
                constraints + ",~{memory}", args);
      });
    });
    return true;
  }
  // Triton's TMA store: one thread of warp 0 chosen by elect.sync issues
  // cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group, commits the group and waits until
  // it has read the stage.
  bool tensor_map_store(llvm::IRBuilderBase& b, llvm::Value* tid, llvm::Value* src, llvm::Value* tensor_map,
                        const std::vector<llvm::Value*>& coords) override {
    if (!has_tma()) return false;
    llvm::Value* src32 = shared32(b, src, "tma.src");
    llvm::Value* map = b.CreatePtrToInt(tensor_map, b.getInt64Ty(), "tma.map");
    tma_only(b, b.CreateICmpULT(tid, b.getInt32(32)), "warp0", [&] {
      llvm::Value* elected = tma_asm(
          b, b.getInt32Ty(), "{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 $0, 1, 0, p;\n\t}", "=r", {});
      tma_only(b, b.CreateICmpNE(elected, b.getInt32(0)), "store", [&] {
        std::string list;
        std::string constraints = "l,r";
        std::vector<llvm::Value*> args = {map, src32};
        for (size_t i = 0; i < coords.size(); ++i) {
          list += fmt::format("{}${}", i ? ", " : "", 2 + i);
          constraints += ",r";
          args.push_back(coords[i]);
        }
        tma_asm(b, b.getVoidTy(),
                fmt::format("cp.async.bulk.tensor.{}d.global.shared::cta.bulk_group [$0, {{{}}}], [$1];", coords.size(), list),
                constraints + ",~{memory}", args);
        tma_asm(b, b.getVoidTy(), "cp.async.bulk.commit_group;", "~{memory}", {});
        tma_asm(b, b.getVoidTy(), "cp.async.bulk.wait_group.read 0;", "~{memory}", {});
      });
    });
    return true;
  }

  // mma.sync (LLVM 22's llvm.nvvm.mma.*, fragments in codegen/gpu/dot_layout.cpp): A in
  // four 32-bit registers, B in two, C/D four f32 or s32. Two 16-bit elements a register
  // (bf16 packed as i32, f16 as <2 x half>), four 8-bit ones (i32), one tf32 (the f32's
  // bits: the hardware reads its top 19).
  std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                            const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                            const std::vector<llvm::Value*>& c) override {
    auto regs = [&](const std::vector<llvm::Value*>& x, DType t) {
      std::vector<llvm::Value*> out = pack_words(b, x, t);
      // (LLVM's f16 mma intrinsics take <2 x half>, the others i32)
      if (t == DType::f16)
        for (auto& v : out) v = b.CreateBitCast(v, llvm::FixedVectorType::get(b.getHalfTy(), 2));
      return out;
    };
    std::vector<llvm::Value*> args = regs(a, mi.a);
    for (llvm::Value* x : regs(bv, mi.b)) args.push_back(x);
    for (llvm::Value* x : c) args.push_back(x);
    llvm::Value* r = gpu::call_intrinsic(b, mi.intrinsic, {}, args);
    std::vector<llvm::Value*> out;
    for (unsigned i = 0; i < c.size(); ++i) out.push_back(b.CreateExtractValue(r, i));
    return out;
  }
};

class NvptxTarget final : public codegen::Target {
 public:
  explicit NvptxTarget(const codegen::TargetDesc& d) : desc_(d), hooks_(d) {}
  const codegen::TargetDesc& desc() const override { return desc_; }

  void lower(const ir::Function& f, llvm::Module& m, const codegen::CompileOptions& opts) override {
    llvm::Triple triple(kTriple);
    // mma.sync on FP8 needs PTX 8.4 (sm_89+, where the capability table lists it); a
    // warpgroup dot (wgmma) the architecture-specific sm_90a (PTX 8.0), whose code runs on
    // compute capability 9.0 alone: a kernel without one stays plain sm_90.
    bool fp8_dot = false, warpgroup_dot = false, tensor_map = false;
    ir::walk(const_cast<ir::Block&>(f.body), [&](ir::Operation& op) {
      tensor_map |= op.op == Op::tensor_map_load || op.op == Op::mbarrier || op.op == Op::tensor_map_store;  // (cp.async.bulk.tensor, elect.sync: PTX 8.0)
      fp8_dot |= op.op == Op::dot && is_fp8(op.operands[0]->type.dtype);
      if (op.op == Op::dot)
        for (const auto& mi : hooks_.capabilities().matrix_instructions)
          warpgroup_dot |= mi.name == op.str && mi.family == gpu::MatrixFamily::nvidia_wgmma;
    });
    arch_ = warpgroup_dot && desc_.arch == "sm_90" ? "sm_90a" : desc_.arch;
    int ptx = ptx_version(arch_);
    if (fp8_dot) ptx = std::max(ptx, 84);
    if (tensor_map) ptx = std::max(ptx, 80);
    features_ = desc_.features.empty() ? fmt::format("+ptx{}", ptx) : desc_.features;
    tm_ = &machine(opts);
    m.setTargetTriple(triple);
    m.setDataLayout(tm_->createDataLayout());
    lowered_ = gpu::lower_kernel(f, m, opts, hooks_);
    gpu::verify_module(m, "NVPTX lowering");
  }

  std::string lowering_state() const override {
    return nlohmann::json{{"lowering", gpu::lowering_result_json(lowered_)}, {"arch", arch_}, {"features", features_}}
        .dump();
  }
  void restore_lowering_state(const std::string& state, const codegen::CompileOptions& opts) override {
    const nlohmann::json j = nlohmann::json::parse(state);
    arch_ = j.at("arch").get<std::string>();
    features_ = j.at("features").get<std::string>();
    lowered_ = gpu::lowering_result_from_json(j.at("lowering").get<std::string>());
    tm_ = &machine(opts);
  }

  void emit(llvm::Module& m, const codegen::CompileOptions& opts, codegen::CodeObject& out) override {
    {
      codegen::PhaseTimer t(codegen::kPhaseMiddleEnd);
      gpu::optimize_module(m, *tm_, opts.opt_level);
    }
    out.llvm_ir = gpu::module_text(m);
    llvm::SmallVector<char, 0> buf;
    llvm::raw_svector_ostream os(buf);
    {
      // (PTX: ptxas runs in the driver at load, outside the compile; no link here.)
      codegen::PhaseTimer t(codegen::kPhaseCodegen);
      llvm::legacy::PassManager pm;
      if (tm_->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
        throw compile_error("the NVPTX target cannot emit PTX");
      pm.run(m);
    }
    out.kernel_symbol = lowered_.kernel_symbol;
    out.remarks.insert(out.remarks.end(), lowered_.remarks.begin(), lowered_.remarks.end());
    out.format = "ptx";
    out.binary.assign(buf.begin(), buf.end());
    out.block_threads = lowered_.block_threads;
    out.shared_bytes = lowered_.shared_bytes;
    out.report = {{"shared_bytes", lowered_.shared_bytes}, {"block_threads", lowered_.block_threads}};
    // A buffer past the 48 KiB static limit is `.extern .shared`: the launch passes its
    // size and the CUDA runtime raises the function's dynamic limit to it at load.
    if (lowered_.dynamic_shared_bytes > 0) out.report["dynamic_shared_bytes"] = lowered_.dynamic_shared_bytes;
  }

 private:
  // This thread's machine for arch_ and features_ (what lower() chose for the kernel).
  llvm::TargetMachine& machine(const codegen::CompileOptions& opts) const {
    return codegen::thread_machine(fmt::format("nvptx|{}|{}|{}", arch_, features_, opts.opt_level >= 3), [&] {
      static std::once_flag once;
      std::call_once(once, [] {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
      });
      llvm::Triple triple(kTriple);
      std::string err;
      const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
      if (!t) throw compile_error("NVPTX target is not available in this LLVM: " + err);
      llvm::TargetOptions options;
      std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
          triple, arch_, features_, options, std::nullopt, std::nullopt,
          opts.opt_level >= 3 ? llvm::CodeGenOptLevel::Aggressive : llvm::CodeGenOptLevel::Default));
      if (!tm) throw compile_error(fmt::format("cannot create an NVPTX target machine for {}", arch_));
      return tm;
    });
  }

  codegen::TargetDesc desc_;
  std::string arch_, features_;  // the kernel's: sm_90a where it has a warpgroup dot
  NvptxHooks hooks_;
  llvm::TargetMachine* tm_ = nullptr;  // this thread's (codegen::thread_machine)
  gpu::LoweringResult lowered_;
};

}  // namespace
}  // namespace tl::nvptx

namespace tl::codegen {
std::unique_ptr<Target> make_nvptx_target(const TargetDesc& d) { return std::make_unique<nvptx::NvptxTarget>(d); }
}  // namespace tl::codegen

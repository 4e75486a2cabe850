// The AMDGPU side of the shared GPU lowering: work-item ids, wave64 lane exchanges
// (DPP, ds_swizzle, ds_bpermute), barriers, buffer resources and raw buffer accesses, the AMDGPU memory model's sync scopes, FP8
// hardware converts and kernel attributes.
#pragma once

#include "codegen/amdgpu/arch.hpp"
#include "codegen/gpu/hooks.hpp"
#include "codegen/target.hpp"

namespace tl::amd {

class AmdgpuHooks final : public gpu::GpuHooks {
 public:
  explicit AmdgpuHooks(const codegen::TargetDesc& d)
      : desc_(d), arch_(overlay_for(d.arch)), caps_(amd::capabilities_for(d.arch, d.wave_size)) {}

  std::string target_name() const override { return desc_.arch; }
  int wave_size() const override { return desc_.wave_size; }
  const gpu::TargetCapabilities& capabilities() const override { return caps_; }
  void finish_kernel(llvm::Function& fn, const gpu::KernelInfo& info) override;
  llvm::Value* thread_id(llvm::IRBuilderBase& b) override;
  llvm::Value* warp_id(llvm::IRBuilderBase& b, llvm::Value* tid) override;
  llvm::Value* program_id(llvm::IRBuilderBase& b, int axis) override;
  llvm::Value* num_programs(llvm::IRBuilderBase& b, int axis, int block_threads) override;
  llvm::Value* shuffle_xor(llvm::IRBuilderBase& b, llvm::Value* v, int mask) override;
  llvm::Value* shuffle_idx(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* src_lane) override;
  void barrier(llvm::IRBuilderBase& b) override;
  void shared_barrier(llvm::IRBuilderBase& b) override;
  llvm::Instruction* copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* global, llvm::Value* shared,
                                    int bytes) override;
  void async_wait(llvm::IRBuilderBase& b, int n) override;
  llvm::Instruction* copy_zeros_to_shared(llvm::IRBuilderBase& b, llvm::Value* shared, int bytes) override;
  uint8_t sync_scope(llvm::LLVMContext& ctx, scope sc) override;
  void decorate_atomic(llvm::Instruction* inst, scope sc) override;
  llvm::Value* fp8_to_f32(llvm::IRBuilderBase& b, DType fmt, llvm::Value* bits) override;
  llvm::Value* f32_to_fp8(llvm::IRBuilderBase& b, DType fmt, llvm::Value* x) override;
  llvm::Value* fp8x2_to_f32x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) override;
  llvm::Value* f32x2_to_fp8x2(llvm::IRBuilderBase& b, DType fmt, llvm::Value* lo, llvm::Value* hi) override;
  llvm::Value* math(llvm::IRBuilderBase& b, Op op, llvm::Value* x) override;
  llvm::Value* approx_reciprocal(llvm::IRBuilderBase& b, llvm::Value* y) override;
  llvm::Value* approx_exp2(llvm::IRBuilderBase& b, llvm::Value* x) override;
  llvm::Value* load_shared_transposed(llvm::IRBuilderBase& b, llvm::Value* shared, int elem_bits) override;
  void trap(llvm::IRBuilderBase& b, unsigned line) override;
  std::vector<llvm::Value*> scaled_matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                                   const std::vector<llvm::Value*>& a,
                                                   const std::vector<llvm::Value*>& bv,
                                                   const std::vector<llvm::Value*>& c, llvm::Value* scale_a,
                                                   llvm::Value* scale_b) override;
  std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilderBase& b, const gpu::MatrixInstruction& mi,
                                            const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                            const std::vector<llvm::Value*>& c) override;
  llvm::Value* buffer_resource(llvm::IRBuilderBase& b, llvm::Value* base, llvm::Value* num_records) override;
  llvm::Value* buffer_load(llvm::IRBuilderBase& b, llvm::Type* ty, llvm::Value* rsrc, llvm::Value* voffset,
                           const ir::AccessFlags& a) override;
  llvm::Instruction* buffer_copy_to_shared(llvm::IRBuilderBase& b, llvm::Value* rsrc, llvm::Value* voffset,
                                           llvm::Value* shared, int bytes, llvm::Value* soffset = nullptr) override;
  void buffer_store(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* rsrc, llvm::Value* voffset,
                    const ir::AccessFlags& a) override;
  void decorate_access(llvm::Instruction* access, const ir::AccessFlags& a, bool load) override;

 private:
  llvm::Value* lds_dma_base(llvm::IRBuilderBase& b, llvm::Value* shared, int bytes);
  uint32_t buffer_aux(const ir::AccessFlags& a, bool load) const;
  codegen::TargetDesc desc_;
  const ArchOverlay& arch_;
  gpu::TargetCapabilities caps_;  // arch_'s, or the default for a chip without an overlay
  llvm::Value* lane_ = nullptr;  // for swaps that need the lane id
  llvm::Value* tid_ = nullptr;
};

}  // namespace tl::amd

// gfx950 (MI350/MI355X, CDNA4): the same v_cvt_*_fp8/bf8 instructions convert the OCP
// formats (e4m3fn, e5m2) here, and v_permlane32_swap exchanges the halves of a wave64
// without going through the LDS crossbar (ds_bpermute).
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "codegen/amdgpu/arch.hpp"

namespace tl::amd {
namespace {
constexpr llvm::ArrayRef<llvm::Type*> kNoTypes;  // non-overloaded intrinsics

class Gfx950 final : public ArchOverlay {
 public:
  const char* name() const override { return "gfx950"; }
  bool hardware_fp8(DType fmt) const override { return fmt == DType::f8e4m3fn || fmt == DType::f8e5m2; }
  llvm::Value* swap_wave_halves(llvm::IRBuilderBase& b, llvm::Value* v, llvm::Value* lane) const override {
    // permlane32.swap(old, src): lanes 32..63 of the first result take src's lanes 0..31,
    // lanes 0..31 of the second take old's lanes 32..63.
    llvm::Value* r = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_permlane32_swap, kNoTypes,
                                       {v, v, b.getFalse(), b.getFalse()});
    llvm::Value* upper = b.CreateExtractValue(r, 0);
    llvm::Value* lower = b.CreateExtractValue(r, 1);
    return b.CreateSelect(b.CreateICmpULT(lane, b.getInt32(32)), lower, upper);
  }
};
}  // namespace

const ArchOverlay& gfx950_overlay() {
  static const Gfx950 o;
  return o;
}

}  // namespace tl::amd

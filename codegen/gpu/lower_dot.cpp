// tl::dot on the matrix cores: the operands and the accumulator are brought into the
// layouts the plan chose (dot_layout.hpp; from a shared buffer they were read straight
// into them, otherwise the usual conversion runs), then each warp issues, for every K
// step, every M repetition and every N repetition (A reused across N, as Triton orders
// them), the target's matrix instruction on the fragment registers. The result stays in
// the accumulator layout: a K loop carries it there without conversion.
#include "codegen/gpu/lower_context.hpp"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/Support/raw_ostream.h>

#include "tl/error.hpp"

namespace tl::gpu {

llvm::Value* call_intrinsic(llvm::IRBuilderBase& b, const std::string& name, const std::vector<llvm::Type*>& overloads,
                            const std::vector<llvm::Value*>& args) {
  llvm::Intrinsic::ID id = llvm::Intrinsic::lookupIntrinsicID(name);
  if (id == llvm::Intrinsic::not_intrinsic) throw compile_error(fmt::format("LLVM has no intrinsic {}", name));
  llvm::Module* m = b.GetInsertBlock()->getModule();
  llvm::Function* f = llvm::Intrinsic::getOrInsertDeclaration(m, id, overloads);
  llvm::FunctionType* ft = f->getFunctionType();
  bool ok = ft->getNumParams() == args.size();
  for (size_t i = 0; ok && i < args.size(); ++i) ok = ft->getParamType(unsigned(i)) == args[i]->getType();
  if (!ok || f->getName() != name) {
    std::string got, want;
    llvm::raw_string_ostream gs(got), ws(want);
    for (llvm::Value* a : args) a->getType()->print(gs), gs << ' ';
    ft->print(ws);
    throw compile_error(fmt::format("intrinsic {} called with ({}) but declared {} ({})", name, got, want,
                                    f->getName().str()));
  }
  return b.CreateCall(f, args);
}

void Lowerer::lower_dot(const ir::Operation& op) {
  const DotPlan& p = plan_.dot(&op);
  const MatrixInstruction& mi = p.instr;
  Values a = get(op.operands[0], p.a);
  Values bv = get(op.operands[1], p.b);
  Values c = get(op.operands[2], p.acc);
  const int per_acc = p.acc_regs_per_instr(), kl = mi.k_per_lane, klb = p.b_per_instr();
  for (int ks = 0; ks < p.k_steps; ++ks)
    for (int mi_rep = 0; mi_rep < p.reps_m; ++mi_rep)
      for (int ni_rep = 0; ni_rep < p.reps_n; ++ni_rep)
        for (int j = 0; j < p.kpack; ++j) {
          const int ar = p.a_reg(mi_rep, ks) + j * kl, br = p.b_reg(ni_rep, ks) + j * klb;
          const int cr = p.acc_reg(mi_rep, ni_rep);
          Values fa(a.begin() + ar, a.begin() + ar + kl), fb(bv.begin() + br, bv.begin() + br + klb);
          Values fc(c.begin() + cr, c.begin() + cr + per_acc);
          Values out = p.swap_operands ? hooks_.matrix_multiply(b, mi, fb, fa, fc)
                                       : hooks_.matrix_multiply(b, mi, fa, fb, fc);
          if (int(out.size()) != per_acc)
            fail(op, fmt::format("tl::dot: {} has no lowering of {}", hooks_.target_name(), mi.name));
          std::copy(out.begin(), out.end(), c.begin() + cr);
        }
  info_.uses_matrix_instructions = true;
  set_natural(op.result(), Regs{p.acc, std::move(c)});
}

}  // namespace tl::gpu

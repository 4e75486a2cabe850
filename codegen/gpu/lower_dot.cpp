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

#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/ir/op_properties.hpp"
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

void Lowerer::collect_operand_reads_by_dot() {
  ir::walk(const_cast<ir::Block&>(f_.body), [&](ir::Operation& op) {
    if (op.op != Op::dot) return;
    for (int i = 0; i < 2; ++i) {
      auto m = match_shared_dot_operand(op.operands[size_t(i)]);
      if (!m || m->read->i1 != ir::kReadByDot) continue;
      deferred_reads_.insert(m->read);
      deferred_values_.insert(m->read->result());
      if (m->cast) deferred_values_.insert(m->cast->result());
      if (m->trans) deferred_values_.insert(m->trans->result());
    }
  });
}

void Lowerer::lower_dot(const ir::Operation& op) {
  const DotPlan& p = plan_.dot(&op);
  if (p.warpgroup()) return lower_warpgroup_dot(op, p);
  const MatrixInstruction& mi = p.instr;
  // An operand is either in registers already (converted to the operand layout) or read
  // from its shared buffer by this dot, a K step at a time (plan_deferred_operand_reads).
  // A read converted on the way (an FP8 tile cast to bf16) reads into `raw` and
  // converts each register once, as its K step needs it.
  struct Operand {
    const ir::Operation* read = nullptr;
    const ir::Operation* cast = nullptr;
    const Exchange* exchange = nullptr;  // a conversion's scratch, read here
    Layout layout;
    Values regs, raw;
  };
  auto operand = [&](const ir::Value* v, const Layout& want) {
    Operand o;
    if (auto x = exchanges_read_by_dot_.find(v); x != exchanges_read_by_dot_.end()) {
      o.exchange = &x->second;
      o.regs.assign(size_t(want.num_regs()), nullptr);
      return o;
    }
    if (!deferred_values_.count(v)) {
      o.regs = get(v, want);
      return o;
    }
    auto m = match_shared_dot_operand(v);
    o.cast = m->cast;
    o.read = m->read;
    o.layout = plan_.of(m->read->result());
    o.regs.assign(size_t(want.num_regs()), nullptr);
    if (o.cast) o.raw.assign(size_t(want.num_regs()), nullptr);
    return o;
  };
  Operand A = operand(op.operands[0], p.a), B = operand(op.operands[1], p.b);
  // (Operands are never i1: their memory form is their register form.)
  auto need = [&](Operand& o, int first, int count) {
    if (o.exchange) return exchange_read(*o.exchange, first, count, o.regs);
    if (!o.read) return;
    if (!o.cast) return read_stage_registers(*o.read, o.layout, first, count, o.regs);
    read_stage_registers(*o.read, o.layout, first, count, o.raw);
    const DType from = o.cast->operands[0]->type.dtype, to = o.cast->result()->type.dtype;
    if (o.cast->op == Op::bitcast) {  // (u8 codes as their MX format: the same bits)
      for (int r = first; r < first + count; ++r)
        if (!o.regs[size_t(r)]) o.regs[size_t(r)] = b.CreateBitCast(o.raw[size_t(r)], reg_type(to));
      return;
    }
    // Each run of registers not converted yet converts at once, so that FP8 converts in
    // pairs (cast_registers) within the K step's registers.
    for (int r = first; r < first + count;) {
      if (o.regs[size_t(r)]) {
        ++r;
        continue;
      }
      int end = r;
      while (end < first + count && !o.regs[size_t(end)]) ++end;
      Values done = cast_registers(Values(o.raw.begin() + r, o.raw.begin() + end), from, to);
      std::copy(done.begin(), done.end(), o.regs.begin() + r);
      r = end;
    }
  };
  Values& a = A.regs;
  Values& bv = B.regs;
  Values c = get(op.operands[2], p.acc);
  // tl::dot_scaled on a block-scaled instruction: each lane's scale byte of a and of b
  // for every instruction, in the scale layouts' registers ([K steps][repetitions]).
  Values sa, sb;
  if (p.scaled()) sa = get(op.operands[3], p.a_scale), sb = get(op.operands[4], p.b_scale);
  const int per_acc = p.acc_regs_per_instr(), kl = mi.k_per_lane, klb = p.b_per_instr();
  for (int ks = 0; ks < p.k_steps; ++ks)
    for (int mi_rep = 0; mi_rep < p.reps_m; ++mi_rep)
      for (int ni_rep = 0; ni_rep < p.reps_n; ++ni_rep)
        for (int j = 0; j < p.kpack; ++j) {
          if (ni_rep == 0 && j == 0) need(A, p.a_reg(mi_rep, ks), p.a_regs_per_step());
          if (j == 0) need(B, p.b_reg(ni_rep, ks), p.b_regs_per_step());
          const int ar = p.a_reg(mi_rep, ks) + j * kl, br = p.b_reg(ni_rep, ks) + j * klb;
          const int cr = p.acc_reg(mi_rep, ni_rep);
          Values fa(a.begin() + ar, a.begin() + ar + kl), fb(bv.begin() + br, bv.begin() + br + klb);
          Values fc(c.begin() + cr, c.begin() + cr + per_acc);
          // The fma family is no instruction of the target's: one f32 FMA a lane (k = 1),
          // the K steps in order, so each element is an FMA chain over k ascending.
          Values out;
          if (mi.family == MatrixFamily::fma) {
            out = {b.CreateIntrinsic(llvm::Intrinsic::fma, {b.getFloatTy()}, {fa[0], fb[0], fc[0]})};
          } else if (p.scaled()) {
            llvm::Value* s_a = sa[size_t(p.scale_reg(mi_rep, ks))];
            llvm::Value* s_b = sb[size_t(p.scale_reg(ni_rep, ks))];
            out = p.swap_operands ? hooks_.scaled_matrix_multiply(b, mi, fb, fa, fc, s_b, s_a)
                                  : hooks_.scaled_matrix_multiply(b, mi, fa, fb, fc, s_a, s_b);
          } else {
            out = p.swap_operands ? hooks_.matrix_multiply(b, mi, fb, fa, fc)
                                  : hooks_.matrix_multiply(b, mi, fa, fb, fc);
          }
          if (int(out.size()) != per_acc)
            fail(op, fmt::format("tl::dot: {} has no lowering of {}", hooks_.target_name(), mi.name));
          std::copy(out.begin(), out.end(), c.begin() + cr);
        }
  for (int i = 0; i < 2; ++i) exchanges_read_by_dot_.erase(op.operands[size_t(i)]);
  info_.uses_matrix_instructions |= mi.family != MatrixFamily::fma;
  set_natural(op.result(), Regs{p.acc, std::move(c)});
}

}  // namespace tl::gpu

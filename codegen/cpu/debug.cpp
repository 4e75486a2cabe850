// device_assert, device_print and the fault path they share with bounds checking: the
// kernel reports to the runtime (runtime/cpu_device.cpp) and returns; the launch then
// throws tl::kernel_fault on the host.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>

#include "codegen/cpu/lower.hpp"

namespace tl::codegen::cpu {

using llvm::Value;

llvm::Constant* Lowerer::global_string(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  auto* init = llvm::ConstantDataArray::getString(ctx_, s, true);
  auto* g = new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, ".str");
  g->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  g->setAlignment(llvm::Align(1));
  strings_.emplace(s, g);
  return g;
}

llvm::BasicBlock* Lowerer::fault_block(int kind, const ir::Operation& op, const std::string& msg) {
  llvm::BasicBlock* bb = new_block("fault");
  llvm::IRBuilder<> fb(bb);
  fb.CreateCall(fault_fn(), {rt_ctx_, fb.getInt32(kind), global_string(op.loc.file ? op.loc.file : ""),
                             fb.getInt32(op.loc.line), global_string(msg), pid_[0], pid_[1], pid_[2]});
  fb.CreateRetVoid();
  return bb;
}

void Lowerer::lower_assert(const ir::Operation& op) {
  const ir::Value* c = op.operands[0];
  Value* ok;
  if (c->type.is_scalar()) {
    ok = elem(c, Idx{});
  } else {
    Value* all = alloc_scalar(b_.getInt1Ty(), "assert.all");
    b_.CreateStore(b_.getTrue(), all);
    loop_nest(c->type.shape, [&](const Idx& idx) {
      b_.CreateStore(b_.CreateAnd(b_.CreateLoad(b_.getInt1Ty(), all), elem(c, idx)), all);
    });
    ok = b_.CreateLoad(b_.getInt1Ty(), all);
  }
  llvm::BasicBlock* cont = new_block("assert.ok");
  b_.CreateCondBr(ok, cont, fault_block(kFaultAssert, op, op.str));
  b_.SetInsertPoint(cont);
}

void Lowerer::lower_print(const ir::Operation& op) {
  const ir::Value* v = op.operands[0];
  const DType t = v->type.dtype;
  Value* prefix = global_string(op.str);
  auto print_one = [&](Value* x, Value* index) {
    Value* d;
    bool integer = !is_float(t);
    if (t == DType::ptr) d = b_.CreateUIToFP(b_.CreatePtrToInt(x, b_.getInt64Ty()), b_.getDoubleTy());
    else if (integer) d = is_signed(t) ? b_.CreateSIToFP(x, b_.getDoubleTy()) : b_.CreateUIToFP(x, b_.getDoubleTy());
    else d = cast(x, t, DType::f64);
    b_.CreateCall(print_fn(), {rt_ctx_, prefix, pid_[0], pid_[1], pid_[2], index, d, b_.getInt32(integer ? 1 : 0)});
  };
  // A scalar has no index: the runtime prints it without one.
  if (v->type.is_scalar()) print_one(elem(v, Idx{}), b_.getInt64(-1));
  else loop_nest(v->type.shape, [&](const Idx& idx) { print_one(elem(v, idx), idx.flat); });
}

}  // namespace tl::codegen::cpu

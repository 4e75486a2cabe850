// tl::inline_asm_elementwise: each thread runs the assembly over its own elements, `pack`
// registers at a time, every argument and result in the one layout the plan gave the
// results. Elements under 32 bits travel packed, as Triton does (tl/inline_asm.hpp): the
// operand list is each result's outputs, then each argument's inputs. A thread whose
// register count is not a multiple of pack fills the last group with poison and drops
// what the asm gives for it.
#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/Support/Error.h>

#include <algorithm>

#include "codegen/gpu/lower_context.hpp"

namespace tl::gpu {
namespace {

// Elements one 32-bit register carries (the tracer's rule, dsl/src/inline_asm.cpp).
int per_register(llvm::Type* t, int pack) {
  const int bits = t->isPointerTy() ? 64 : int(t->getPrimitiveSizeInBits());
  return bits < 32 ? std::min(32 / bits, pack) : 1;
}

}  // namespace

void Lowerer::lower_inline_asm(const ir::Operation& op) {
  const size_t nl = op.str.find('\n');
  if (nl == std::string::npos) fail(op, "inline_asm_elementwise without constraints");
  const std::string constraints = op.str.substr(0, nl), text = op.str.substr(nl + 1);
  const int pack = int(op.i0);
  const bool scalar_op = op.result()->type.is_scalar();
  const Layout* l = scalar_op ? nullptr : &plan_.of(op.result());
  const int n = scalar_op ? 1 : l->num_regs();

  std::vector<Values> args;
  std::vector<llvm::Type*> arg_types;
  for (const ir::Value* o : op.operands) {
    args.push_back(scalar_op ? Values{scalar(o)} : get(o, *l));
    arg_types.push_back(reg_type(o->type.dtype));
  }
  std::vector<llvm::Type*> result_types;
  for (const auto& r : op.results) result_types.push_back(reg_type(r->type.dtype));

  // The asm's signature: per result pack / k outputs of <k x T> (T when k is 1), then per
  // argument pack / k inputs alike.
  auto slot_type = [&](llvm::Type* t) -> llvm::Type* {
    const int k = per_register(t, pack);
    return k == 1 ? t : llvm::FixedVectorType::get(t, unsigned(k));
  };
  std::vector<llvm::Type*> outs, ins;
  for (llvm::Type* t : result_types)
    for (int j = 0; j < pack / per_register(t, pack); ++j) outs.push_back(slot_type(t));
  for (llvm::Type* t : arg_types)
    for (int j = 0; j < pack / per_register(t, pack); ++j) ins.push_back(slot_type(t));
  llvm::Type* ret = outs.size() == 1 ? outs[0] : llvm::StructType::get(ctx_, outs);
  auto* fty = llvm::FunctionType::get(ret, ins, false);
  if (llvm::Error e = llvm::InlineAsm::verify(fty, constraints)) {
    std::string why = llvm::toString(std::move(e));
    fail(op, fmt::format("tl::inline_asm_elementwise: LLVM refuses the constraints \"{}\" for {} outputs and {} "
                         "inputs: {}", constraints, outs.size(), ins.size(), why));
  }
  llvm::InlineAsm* asm_ = llvm::InlineAsm::get(fty, text, constraints, /*hasSideEffects=*/op.i1 == 0);

  std::vector<Values> results(op.results.size(), Values(size_t(n)));
  for (int g = 0; g < n; g += pack) {
    std::vector<llvm::Value*> operands;
    for (size_t a = 0; a < args.size(); ++a) {
      const int k = per_register(arg_types[a], pack);
      for (int j = 0; j < pack; j += k) {
        auto elem = [&](int r) -> llvm::Value* {
          return r < n ? args[a][size_t(r)] : llvm::PoisonValue::get(arg_types[a]);
        };
        if (k == 1) {
          operands.push_back(elem(g + j));
          continue;
        }
        llvm::Value* v = llvm::PoisonValue::get(slot_type(arg_types[a]));
        for (int i = 0; i < k; ++i) v = b.CreateInsertElement(v, elem(g + j + i), uint64_t(i));
        operands.push_back(v);
      }
    }
    llvm::CallInst* call = b.CreateCall(fty, asm_, operands);
    unsigned slot = 0;
    for (size_t r = 0; r < result_types.size(); ++r) {
      const int k = per_register(result_types[r], pack);
      for (int j = 0; j < pack; j += k) {
        llvm::Value* v = outs.size() == 1 ? call : b.CreateExtractValue(call, slot);
        ++slot;
        for (int i = 0; i < k; ++i)
          if (g + j + i < n) results[r][size_t(g + j + i)] = k == 1 ? v : b.CreateExtractElement(v, uint64_t(i));
      }
    }
  }
  for (size_t r = 0; r < op.results.size(); ++r) {
    if (scalar_op) set_scalar(op.result(int(r)), results[r][0]);
    else set_natural(op.result(int(r)), Regs{*l, std::move(results[r])});
  }
}

}  // namespace tl::gpu

// Marks the integer arithmetic that addresses or masks memory (codegen/passes/
// passes.hpp: mark_index_arithmetic).
//
// Integer arithmetic wraps on every target (docs/language.md). Index arithmetic is the one
// exception the language states: the tiles a load or store is addressed and masked with
// must not wrap (Triton's axis analysis assumes the same, and so does tl's: contiguity
// and alignment are proven from them). A wrapped offset addresses memory out of bounds,
// so its value is undefined anyway; telling LLVM so (`nsw`) lets it fold sext(a + c) into
// an address's constant offset, which the GPUs' load and store instructions carry for
// free (measured: the AMD code-quality suite's attention forward, 128x64 D=128 4 waves,
// 306 VGPRs on gfx942 with it, 309 without).
//
// A value is index arithmetic when it takes part in addressing or masking memory: some
// use of it is, transitively, the offset of an addptr, a mask of a memory op or a stage
// index of a shared buffer, through integer arithmetic, comparisons and mask logic,
// shape changes, integer casts and selects. Other uses besides (`tl::where(mask, v, 0)`,
// the offsets stored as values) do not matter: were the value to wrap, the access it
// addresses or masks would be undefined, and with it the program. Values that only reach
// memory through a reduction, a loop-carried value or a branch are not index arithmetic.
#include <unordered_map>
#include <vector>

#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

class IndexArithmetic {
 public:
  explicit IndexArithmetic(ir::Function& f) {
    ir::walk(f.body, [&](ir::Operation& op) {
      for (size_t i = 0; i < op.operands.size(); ++i) uses_[op.operands[i]].push_back({&op, int(i)});
    });
  }

  bool addresses_memory(const ir::Value* v) {
    auto it = memo_.find(v);
    if (it != memo_.end()) return it->second;
    memo_[v] = false;  // (SSA: a value never reaches itself but through a block argument)
    bool any = false;
    for (auto [user, i] : uses_[v])
      if ((any = use_addresses_or_masks(*user, i))) break;
    return memo_[v] = any;
  }

 private:
  // Whether operand i of `user` takes part in addressing or masking memory.
  bool use_addresses_or_masks(const ir::Operation& user, int i) {
    switch (user.op) {
      case Op::addptr: return i == 1;
      case Op::load: return i == 1;                   // ptr, mask, other
      case Op::store: return i == 2;                  // ptr, value, mask
      case Op::atomic_rmw: return i == 2;             // ptr, value, mask
      case Op::global_load_to_shared: return i == 1 || i == 3;  // buffer, stage, ptr, mask, other
      case Op::shared_load: case Op::shared_store: return i == 1;  // the stage
      case Op::tensor_map_store: return i == 1 || i >= 3;  // the stage, the coordinates
      case Op::tensor_map_load:  // the stage, the coordinates
        return i == 1 || (i >= 3 && size_t(i) < 3 + user.operands[0]->type.shape.size());
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::shl: case Op::shr:
      case Op::min: case Op::max: case Op::band: case Op::bor: case Op::bxor: case Op::neg: case Op::bnot:
      case Op::abs: case Op::cmp: case Op::splat: case Op::broadcast: case Op::expand_dims: case Op::reshape:
      case Op::trans: case Op::convert_layout:
        return user.results.size() == 1 && addresses_memory(user.result());
      case Op::select:  // the condition or a chosen value
        return addresses_memory(user.result());
      case Op::cast:
        return is_int(user.result()->type.dtype) && addresses_memory(user.result());
      default: return false;
    }
  }

  std::unordered_map<const ir::Value*, std::vector<std::pair<const ir::Operation*, int>>> uses_;
  std::unordered_map<const ir::Value*, bool> memo_;
};

}  // namespace

int mark_index_arithmetic(ir::Function& f) {
  IndexArithmetic index(f);
  int marked = 0;
  ir::walk(f.body, [&](ir::Operation& op) {
    bool arithmetic = op.op == Op::add || op.op == Op::sub || op.op == Op::mul || op.op == Op::shl;
    if (!arithmetic || op.results.size() != 1 || !is_int(op.result()->type.dtype)) return;
    bool mark = index.addresses_memory(op.result());
    if (mark) ++marked;
    op.i1 = mark ? ir::kIndexArithmetic : 0;
  });
  return marked;
}

}  // namespace tl::passes

// match_shared_dot_operand (dot_operand_source.hpp).
#include "codegen/gpu/dot_operand_source.hpp"

namespace tl::gpu {

std::optional<SharedDotOperand> match_shared_dot_operand(const ir::Value* v) {
  SharedDotOperand m;
  if (v->def && v->def->op == Op::trans) m.trans = v->def, v = v->def->operands[0];
  m.registers = v;
  if (v->def && converts_dot_operand_registers(*v->def)) m.cast = v->def, v = v->def->operands[0];
  if (!v->def || v->def->op != Op::shared_load) return std::nullopt;
  m.read = v->def;
  return m;
}

bool converts_dot_operand_registers(const ir::Operation& op) { return op.op == Op::cast || op.op == Op::bitcast; }

}  // namespace tl::gpu

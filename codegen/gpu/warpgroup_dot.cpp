// Warpgroup dots (warpgroup_dot.hpp): descriptor operands, their encoding, and whether a
// dot can be one.
#include "codegen/gpu/warpgroup_dot.hpp"

#include <fmt/format.h>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/ir/builder.hpp"

namespace tl::gpu {

namespace {
// Uses of `v` in the function `op` belongs to.
size_t uses_in_function(const ir::Value* v, const ir::Operation& op) {
  ir::Block* top = op.parent;
  while (top->parent) top = top->parent->parent;
  return ir::uses_of(*top, v).size();
}
}  // namespace

std::optional<DescriptorOperand> match_descriptor_operand(const ir::Value* v, int index) {
  DescriptorOperand m;
  if (v->def && v->def->op == Op::trans) m.trans = v->def, v = v->def->operands[0];
  if (!v->def || v->def->op != Op::shared_load) return std::nullopt;
  m.read = v->def;
  // The read (and its transpose) must be this dot's alone: read in another layout too,
  // it would reach the dot through a conversion instead.
  if (uses_in_function(m.read->result(), *m.read) != 1 ||
      (m.trans && uses_in_function(m.trans->result(), *m.trans) != 1))
    return std::nullopt;
  const ir::Value* buf = m.read->operands[0];
  if (!buf->def || buf->def->op != Op::shared_alloc || buf->type.rank() != 2) return std::nullopt;
  m.alloc = buf->def;
  // A [M, K] stored as is has K last (fastest); B [K, N] has N last unless transposed.
  m.k_major = index == 0 ? !m.trans : m.trans != nullptr;
  return m;
}

int descriptor_swizzle_bytes(const ir::Type& buffer) {
  if (buffer.rank() != 2) return 0;
  const int64_t row_bytes = int64_t(buffer.shape[1]) * byte_width(buffer.dtype);
  if (buffer.shape[0] % 8 != 0) return 0;
  for (int swz : {128, 64, 32})
    if (row_bytes % swz == 0) return swz;
  return 0;
}

ir::SharedEncoding descriptor_encoding(const ir::Type& buffer) {
  const int swz = descriptor_swizzle_bytes(buffer);
  const int eb = byte_width(buffer.dtype);
  ir::SharedEncoding e;
  e.order = {1, 0};
  e.vec = 16 / eb;
  e.row = swz / eb;
  // Address bits 4.. (the 16-byte unit) XOR bits 7.. (128-byte lines): with rows of swz
  // bytes, row bit j sits at address bit log2(swz) + j, so the units' log2(swz / 16) bits
  // flip with row bits from 7 - log2(swz) on (128: rows 1, 2, 4; 64: 2, 4; 32: 4).
  const int unit_bits = log2_exact(swz / 16), first = 7 - log2_exact(swz);
  e.swizzle.assign(size_t(first), 0);
  for (int j = 0; j < unit_bits; ++j) e.swizzle.push_back(1u << j);
  return e;
}

std::string warpgroup_dot_obstacle(const TargetCapabilities& caps, const ir::Operation& dot, int num_warps,
                                   bool operands_known) {
  const ir::Type &a = dot.operands[0]->type, &b = dot.operands[1]->type;
  DotRequest req;
  req.warpgroup = true;
  req.ieee = dot.i0 != 0;  // wgmma multiplies f32 only as TF32
  std::string why;
  auto p = plan_dot(caps, a.dtype, b.dtype, a.shape[0], b.shape[1], a.shape[1], num_warps, 32, req, why);
  if (!p) return why;
  if (!operands_known) return "";
  for (int i = 0; i < 2; ++i) {
    const char* which = i == 0 ? "A" : "B";
    auto m = match_descriptor_operand(dot.operands[size_t(i)], i);
    // A may come from registers (wgmma's register form, mma.sync's A fragment per warp:
    // attention's P and Q), for 16-bit types.
    if (!m && i == 0 && bit_width(a.dtype) == 16) continue;
    if (!m)
      return fmt::format("its {} operand is not a tile read from a shared buffer in {} (wgmma reads {} there)", which,
                         name(i == 0 ? a.dtype : b.dtype),
                         i == 0 ? "A of 8- and 32-bit types" : "B always");
    if (!m->k_major && !p->instr.transposable)
      return fmt::format("its {} operand is stored {}-contiguous: wgmma reads {} only K-major", which,
                         i == 0 ? "M" : "N", name(a.dtype));
    if (!descriptor_swizzle_bytes(m->alloc->result()->type))
      return fmt::format("its {} operand's buffer {} has rows under 32 bytes or not a multiple of 8 of them", which,
                         m->alloc->result()->type.str());
  }
  return "";
}

}  // namespace tl::gpu

// plan_shared_encodings (passes.hpp): how each exchange through shared memory lies there.
// A convert_layout whose path is `shared` writes its operand's layout and reads its
// result's through one scratch tile; the encoding (the dim stored fastest, the unit and
// the XOR swizzle) is the one exchange_encoding picks for that pair of layouts, so that
// both sides move up to 16 bytes an access with as few bank conflicts as the family
// allows (a K^T or V tile read by a dot: 8-byte reads along K instead of 2-byte ones),
// and, where the target has a transposing read (gfx950), whether the result is read
// with it. Recorded on the op (`read=transposed shared=[order=... vec=... swizzle=...]`);
// the lowering reads it.
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/shared_encoding.hpp"

namespace tl::gpu {

void plan_shared_encodings(ir::Function& f, const PlanTarget& t) {
  const BankModel banks{t.caps->shared_banks, t.caps->shared_bank_bytes};
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::convert_layout || ir::ConvertPath(op.i0) != ir::ConvertPath::shared) return;
    ExchangePlan p = exchange_encoding(*op.operands[0]->layout, *op.result()->layout,
                                       byte_width(op.result()->type.dtype), banks,
                                       t.caps->has_transposed_shared_read(bit_width(op.result()->type.dtype)));
    op.shared = p.encoding;
    op.i1 = (op.i1 & ~ir::kTransposedRead) | (p.transposed_read ? ir::kTransposedRead : 0);
  });
}

}  // namespace tl::gpu

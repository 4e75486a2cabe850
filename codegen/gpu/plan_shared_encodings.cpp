// plan_shared_encodings (passes.hpp): how each exchange through shared memory lies there.
// A convert_layout whose path is `shared` writes its operand's layout and reads its
// result's through one scratch tile; the encoding (the dim stored fastest, the unit and
// the XOR swizzle) is the one exchange_encoding picks for that pair of layouts, so that
// both sides move up to 16 bytes an access with as few bank conflicts as the family
// allows (a K^T or V tile read by a dot: 8-byte reads along K instead of 2-byte ones),
// and, where the target has a transposing read (gfx950), whether the result is read
// with it. On AMD (padded_shared) the encoding may instead be padded (Triton's
// PaddedSharedEncoding), where that is cheaper than every swizzle and the padded tile
// fits in the bytes of the program's largest exchange. Recorded on the op
// (`read=transposed shared=[order=... vec=... swizzle=... padding=[interval:+amount]]`);
// the lowering reads it.
//
// A buffer a warpgroup dot (wgmma) reads through matrix descriptors gets the encoding the
// descriptor describes (descriptor_encoding: 128-, 64- or 32-byte swizzle rows), recorded
// on its shared_alloc; everything that writes or reads the buffer (the pipeliner's
// copies, a user's stores) follows it. Other buffers keep the lowering's default
// (shared_tile_layout), which for a 128-byte row is the same swizzle.
#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"

namespace tl::gpu {

namespace {
bool exchanges_through_shared(const ir::Operation& op) {
  return op.op == Op::convert_layout && ir::ConvertPath(op.i0) == ir::ConvertPath::shared;
}

// `peak_bytes`: the largest exchange of the program. A padded encoding may take up to that
// many bytes, no more: padding the largest exchange would raise the program's shared
// memory (32 KiB to 34 KiB for attention's Q: two programs a CU to one), a smaller one
// fits in the bytes the largest already takes.
void plan_exchange(ir::Operation& conv, const PlanTarget& t, int64_t peak_bytes) {
  if (!exchanges_through_shared(conv)) return;
  const BankModel banks{t.caps->shared_banks, t.caps->shared_bank_bytes};
  const DType dt = conv.result()->type.dtype;
  const int64_t eb = byte_width(dt), bytes = conv.result()->type.numel() * eb;
  const int64_t max_padding = t.caps->padded_shared ? std::max<int64_t>(0, peak_bytes - bytes) / eb : 0;
  ExchangePlan p = exchange_encoding(*conv.operands[0]->layout, *conv.result()->layout, int(eb), banks,
                                     t.caps->has_transposed_shared_read(bit_width(dt)), max_padding);
  conv.shared = p.encoding;
  conv.i1 = (conv.i1 & ~ir::kTransposedRead) | (p.transposed_read ? ir::kTransposedRead : 0);
}
}  // namespace

void plan_exchange_encoding(ir::Operation& conv, const PlanTarget& t) { plan_exchange(conv, t, 0); }

void plan_shared_encodings(ir::Function& f, const PlanTarget& t) {
  int64_t peak = 0;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (exchanges_through_shared(op))
      peak = std::max(peak, op.result()->type.numel() * byte_width(op.result()->type.dtype));
  });
  ir::walk(f.body, [&](ir::Operation& op) { plan_exchange(op, t, peak); });
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op != Op::dot || !recorded_dot_plan(*t.caps, op, t.num_warps, t.wave_size).warpgroup()) return;
    for (int i = 0; i < 2; ++i)
      if (auto m = match_descriptor_operand(op.operands[size_t(i)], i)) {
        auto& alloc = const_cast<ir::Operation&>(*m->alloc);
        alloc.shared = descriptor_encoding(alloc.result()->type);
      }
  });
}

}  // namespace tl::gpu

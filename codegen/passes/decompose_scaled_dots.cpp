// tl::dot_scaled where the target has no scaled matrix instruction for its formats: each
// operand upcast to bf16 in registers with its scales, then an ordinary dot (Triton's
// DecomposeScaledBlocked, the lowering it takes on Hopper, gfx942 and gfx90a). This is the
// one implementation of the upcast: the tracer records the scaled dot as it was written
// (docs/ir.md, dot with five operands), gfx950's planning keeps the ones its scaled MFMA
// takes, and every other target, the CPU included, comes through here first.
//
// An e2m1 value times a power of two, an e4m3 or e5m2 one too, is a bf16 value (1, 3 or 2
// mantissa bits, bf16's exponent range is f32's), so the upcast is exact but where the
// scaled value leaves bf16's range, and the dot's products are exact in its f32 sums.
#include <algorithm>
#include <optional>

#include "codegen/ir/builder.hpp"
#include "codegen/passes/passes.hpp"

namespace tl::passes {
namespace {

using ir::Type;
using ir::Value;
using Shape = std::vector<int>;

// The ops of the upcast, inserted before the dot at its line.
class Upcast {
 public:
  Upcast(ir::Builder& b, ir::SrcLoc loc) : b_(b), loc_(loc) {}

  // x [rows, K (/ 2 for e2m1)], packed along its last dim, as bf16 [rows, K], times its
  // scales [rows, K / 32] unless `scale` is null.
  Value* operand(Value* x, Value* scale) {
    const DType d = x->type.dtype;
    Value* v = d == DType::f4e2m1 ? e2m1_to_f32(x) : x;
    if (!scale) return cast(v, DType::bf16);
    v = cast(v, DType::f32);
    const int rows = v->type.shape[0], K = v->type.shape[1];
    Value* blocks = reshape(v, {rows, K / 32, 32});
    Value* s = broadcast(reshape(e8m0_to_f32(scale), {rows, K / 32, 1}), {rows, K / 32, 32});
    Value* scaled = b_.create1(Op::mul, {blocks, s}, blocks->type, loc_);
    return cast(reshape(scaled, {rows, K}), DType::bf16);
  }

  Value* trans(Value* x) {
    Value* t = b_.create1(Op::trans, {x}, x->type.with_shape({x->type.shape[1], x->type.shape[0]}), loc_);
    t->def->ints = {1, 0};
    return t;
  }

 private:
  ir::Builder& b_;
  ir::SrcLoc loc_;

  Value* splat(DType t, int64_t v, const Shape& s) {
    Value* c = b_.constant(t, v, loc_);
    return b_.create1(Op::splat, {c}, Type{t, t, s}, loc_);
  }
  Value* op(Op o, Value* x, int64_t c) {
    return b_.create1(o, {x, splat(x->type.dtype, c, x->type.shape)}, x->type, loc_);
  }
  Value* op(Op o, Value* x, Value* y) { return b_.create1(o, {x, y}, x->type, loc_); }
  Value* cmp(CmpPred p, Value* x, int64_t c) {
    const DType i1 = DType::i1;
    Value* r = b_.create1(Op::cmp, {x, splat(x->type.dtype, c, x->type.shape)}, Type{i1, i1, x->type.shape}, loc_);
    r->def->i0 = int64_t(p);
    return r;
  }
  Value* select(Value* c, int64_t a, Value* other) {
    return b_.create1(Op::select, {c, splat(other->type.dtype, a, other->type.shape), other}, other->type, loc_);
  }
  Value* select(Value* c, Value* a, Value* other) { return b_.create1(Op::select, {c, a, other}, other->type, loc_); }
  Value* cast(Value* x, DType to) {
    return x->type.dtype == to ? x : b_.create1(Op::cast, {x}, x->type.with_dtype(to), loc_);
  }
  Value* bitcast(Value* x, DType to) {
    return x->type.dtype == to ? x : b_.create1(Op::bitcast, {x}, x->type.with_dtype(to), loc_);
  }
  Value* reshape(Value* x, const Shape& s) { return b_.create1(Op::reshape, {x}, x->type.with_shape(s), loc_); }
  Value* broadcast(Value* x, const Shape& s) { return b_.create1(Op::broadcast, {x}, x->type.with_shape(s), loc_); }

  // e8m0 codes as f32: 2^(code - 127), bits code << 23; code 0 (2^-127) is f32's
  // subnormal 0x00400000, code 255 NaN (OCP MX).
  Value* e8m0_to_f32(Value* scale) {
    Value* c = cast(bitcast(scale, DType::u8), DType::u32);
    Value* bits = op(Op::shl, c, 23);
    bits = select(cmp(CmpPred::eq, c, 0), 0x00400000, bits);
    bits = select(cmp(CmpPred::eq, c, 255), 0x7FC00000, bits);
    return bitcast(bits, DType::f32);
  }

  // Packed e2m1 [rows, K / 2] (element 2i in byte i's low nibble) as f32 [rows, K]. A
  // code c (sign, e, m) put at f32's sign and at the top of its exponent and mantissa
  // fields, bits 31 and 24..22 (c * (2^28 + 2^22): the two copies of c do not overlap),
  // is the f32 2^(e - 127) (1 + m / 2), or 2^-127 m for e = 0 (a subnormal), exactly
  // e2m1's value times 2^-126: one multiply by 2^126 makes it exact. Three integer ops
  // and one multiply an element (Triton's bit-placement upcast) where picking the
  // normal or subnormal form took nine; it needs subnormal f32 operands kept, which
  // every target's f32 multiply does (no flush-to-zero mode is set).
  Value* e2m1_to_f32(Value* x) {
    const int rows = x->type.shape[0], half = x->type.shape[1];
    Value* bytes = bitcast(x, DType::u8);
    Value* lo = op(Op::band, bytes, 15);
    Value* hi = op(Op::shr, bytes, 4);
    Value* pairs = b_.create1(Op::join, {lo, hi}, lo->type.with_shape({rows, half, 2}), loc_);
    Value* c = cast(reshape(pairs, {rows, 2 * half}), DType::u32);
    Value* bits = op(Op::band, op(Op::mul, c, (1 << 28) + (1 << 22)), 0x81C00000);
    Value* tiny = bitcast(bits, DType::f32);
    Value* two_126 = b_.create1(Op::splat, {b_.constant_f(DType::f32, 0x1p126, loc_)}, tiny->type, loc_);
    return b_.create1(Op::mul, {tiny, two_126}, tiny->type, loc_);
  }
};

// A scale operand that scales nothing: the tracer's stand-in for Triton's None, code 127
// (2^0) everywhere.
bool unit_scale(const Value* s) {
  const ir::Operation* d = s->def;
  if (!d || d->op != Op::splat || !d->operands[0]->def || d->operands[0]->def->op != Op::constant) return false;
  const ir::Operation& c = *d->operands[0]->def;
  return (c.result()->type.dtype == DType::e8m0 || is_int(c.result()->type.dtype)) && c.i0 == 127;
}

using DotTest = std::function<bool(const ir::Operation&)>;

// b upcast to bf16 [N, K] through a one-stage shared buffer of its own at the function's
// top, read back transposed for the dot: a K-major B that sm_90's wgmma reads through a
// matrix descriptor (it reads B from shared memory only; Triton's Hopper emulation stores
// the upcast operand with local_alloc the same way). The dot stays synchronous (a
// one-stage operand: plan_async_dots), so the next iteration's store waits for its reads.
Value* staged(ir::Function& f, ir::Builder& b, Value* v, ir::SrcLoc loc) {
  ir::Builder top(f.body);
  top.before(*f.body.ops.front());  // (f.body holds the dot, or the loop around it)
  Value* buf = top.create1(Op::shared_alloc, {}, Type::shared_buffer(v->type.dtype, v->type.shape, 1), loc);
  Value* zero = b.constant(DType::i32, 0, loc);
  b.create(Op::shared_store, {buf, zero, v}, {}, loc);
  return b.create1(Op::shared_load, {buf, zero}, v->type, loc);
}

int decompose(ir::Function& f, ir::Block& block, const DotTest& native, const DotTest& stage_b) {
  int n = 0;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    ir::Operation& op = *block.ops[i];
    for (auto& r : op.regions) n += decompose(f, *r, native, stage_b);
    if (op.op != Op::dot || !ir::is_scaled_dot(op) || native(op)) continue;
    ir::Builder b(block);
    b.before(op);
    Upcast u(b, op.loc);
    Value *a = op.operands[0], *bt = op.operands[1], *acc = op.operands[2];
    Value* sa = unit_scale(op.operands[3]) ? nullptr : op.operands[3];
    Value* sb = unit_scale(op.operands[4]) ? nullptr : op.operands[4];
    Value* a16 = u.operand(a, sa);
    // b is [K, N] packed along K: upcast as [N, K], its scales' orientation.
    Value* bn = u.operand(u.trans(bt), sb);
    op.operands = {a16, u.trans(bn), acc};
    if (bn->def->op != Op::trans && stage_b && stage_b(op)) op.operands[1] = u.trans(staged(f, b, bn, op.loc));
    i = size_t(std::find_if(block.ops.begin(), block.ops.end(), [&](auto& o) { return o.get() == &op; }) -
               block.ops.begin());
    ++n;
  }
  return n;
}

}  // namespace

int decompose_scaled_dots(ir::Function& f, const std::function<bool(const ir::Operation&)>& native,
                          const std::function<bool(const ir::Operation&)>& stage_b) {
  return decompose(f, f.body, native, stage_b);
}

}  // namespace tl::passes

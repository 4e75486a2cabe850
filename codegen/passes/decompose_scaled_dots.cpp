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
  // `bf16_math`: the target multiplies bf16 natively (sm_90), where e2m1 is upcast in
  // 16-bit registers (below).
  Upcast(ir::Builder& b, ir::SrcLoc loc, bool bf16_math) : b_(b), loc_(loc), bf16_math_(bf16_math) {}

  // x [rows, K (/ 2 for e2m1)], packed along its last dim, as bf16 [rows, K], times its
  // scales [rows, K / 32] unless `scale` is null.
  Value* operand(Value* x, Value* scale) {
    const DType d = x->type.dtype;
    if (d == DType::f4e2m1 && bf16_math_) {
      Value* v = e2m1_to(x, DType::bf16);
      if (!scale) return v;
      const int rows = v->type.shape[0], K = v->type.shape[1];
      Value* blocks = reshape(v, {rows, K / 32, 32});
      Value* s = broadcast(reshape(e8m0_to(scale, DType::bf16), {rows, K / 32, 1}), {rows, K / 32, 32});
      return reshape(b_.create1(Op::mul, {blocks, s}, blocks->type, loc_), {rows, K});
    }
    Value* v = d == DType::f4e2m1 ? e2m1_to(x, DType::f32) : x;
    if (!scale) return cast(v, DType::bf16);
    v = cast(v, DType::f32);
    const int rows = v->type.shape[0], K = v->type.shape[1];
    Value* blocks = reshape(v, {rows, K / 32, 32});
    Value* s = broadcast(reshape(e8m0_to(scale, DType::f32), {rows, K / 32, 1}), {rows, K / 32, 32});
    Value* scaled = b_.create1(Op::mul, {blocks, s}, blocks->type, loc_);
    return cast(reshape(scaled, {rows, K}), DType::bf16);
  }

  // x^T (rank 2). On sm_90 (bf16_math) the transpose of a transpose is the tile itself:
  // b written tl::trans(w) is upcast as w, and a bf16 b that needs no upcast reaches the
  // dot as tl::trans(w), which a wgmma reads through a descriptor (w^T^T^T was no
  // descriptor operand: samples/moe's bf16 grouped GEMM fell back to mma.sync and spilled
  // 412 B at 64x64x256). Elsewhere the transposes stay as they were: AMD's bf16 grouped
  // GEMM plans differently without them, not yet compared.
  Value* trans(Value* x) {
    if (bf16_math_ && x->def && x->def->op == Op::trans && x->def->ints == std::vector<int>{1, 0})
      return x->def->operands[0];
    Value* t = b_.create1(Op::trans, {x}, x->type.with_shape({x->type.shape[1], x->type.shape[0]}), loc_);
    t->def->ints = {1, 0};
    return t;
  }

 private:
  ir::Builder& b_;
  ir::SrcLoc loc_;
  bool bf16_math_ = false;

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

  // e8m0 codes as f32 (2^(code - 127): bits code << 23; code 0, 2^-127, is f32's
  // subnormal 0x00400000, code 255 NaN, OCP MX) or as bf16 (f32's upper half: code << 7,
  // 0x0040, 0x7FC0), for the bf16 upcast.
  Value* e8m0_to(Value* scale, DType to) {
    const bool f32 = to == DType::f32;
    Value* c = cast(bitcast(scale, DType::u8), f32 ? DType::u32 : DType::u16);
    Value* bits = op(Op::shl, c, f32 ? 23 : 7);
    bits = select(cmp(CmpPred::eq, c, 0), f32 ? 0x00400000 : 0x0040, bits);
    bits = select(cmp(CmpPred::eq, c, 255), f32 ? 0x7FC00000 : 0x7FC0, bits);
    return bitcast(bits, to);
  }

  // Packed e2m1 [rows, K / 2] (element 2i in byte i's low nibble) as f32 [rows, K] (or bf16, below). A
  // code c (sign, e, m) put at f32's sign and at the top of its exponent and mantissa
  // fields, bits 31 and 24..22 (c * (2^28 + 2^22): the two copies of c do not overlap),
  // is the f32 2^(e - 127) (1 + m / 2), or 2^-127 m for e = 0 (a subnormal), exactly
  // e2m1's value times 2^-126: one multiply by 2^126 makes it exact. Three integer ops
  // and one multiply an element (Triton's bit-placement upcast) where picking the
  // normal or subnormal form took nine; it needs subnormal f32 operands kept, which
  // every target's f32 multiply does (no flush-to-zero mode is set).
  // As bf16: the same placement in bf16's bits (f32's upper half: sign bit 15, the exponent's
  // low bits and the mantissa's top one at 8..6: c * (2^12 + 2^6)), then one bf16
  // multiply by 2^126, exact; the scale's multiply after it is bf16 too, rounded once
  // (to nearest even) as the f32 product's conversion rounds it. Per element: half a
  // nibble op, a 16-bit convert, multiply and mask, two bf16 multiplies (which pair up as
  // bf16x2), where the f32 form took three 32-bit integer ops, two f32 multiplies and half
  // a bf16x2 convert: gpt-oss-20b's gate/up K step on sm_90 issues ~900 upcast
  // instructions a thread in f32 (Triton's byte-permute form: ~530).
  Value* e2m1_to(Value* x, DType to) {
    const bool f32 = to == DType::f32;
    const int rows = x->type.shape[0], half = x->type.shape[1];
    Value* bytes = bitcast(x, DType::u8);
    Value* lo = op(Op::band, bytes, 15);
    Value* hi = op(Op::shr, bytes, 4);
    Value* pairs = b_.create1(Op::join, {lo, hi}, lo->type.with_shape({rows, half, 2}), loc_);
    Value* c = cast(reshape(pairs, {rows, 2 * half}), f32 ? DType::u32 : DType::u16);
    Value* bits = f32 ? op(Op::band, op(Op::mul, c, (1 << 28) + (1 << 22)), 0x81C00000)
                      : op(Op::band, op(Op::mul, c, (1 << 12) + (1 << 6)), 0x81C0);
    Value* tiny = bitcast(bits, to);
    Value* two_126 = b_.create1(Op::splat, {b_.constant_f(to, 0x1p126, loc_)}, tiny->type, loc_);
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

// Whether `v` is computed in registers from its operands (an upcast), not a tile as it was
// loaded or read (possibly transposed or cast, which a descriptor or a staged read takes).
bool computed(const Value* v) {
  while (v->def && (v->def->op == Op::trans || v->def->op == Op::cast)) v = v->def->operands[0];
  return v->def && v->def->op != Op::load && v->def->op != Op::shared_load;
}

// sm_90 (`warpgroup` says the dot can be a wgmma), an upcast b times a 16-bit a read as it
// was loaded (samples/moe's bf16 activations times MXFP4 weights): the dot transposed,
// acc^T = bn a^T + acc^T, so that the upcast is wgmma's A, which it reads from registers
// in the layout the upcast makes it in, and a is its B, read from the pipeliner's stage
// through a descriptor. Triton's Hopper lowering of tl.dot_scaled swaps them the same
// way. Without it the upcast B went through a shared buffer of its own every K step (a
// store, a barrier, the dot synchronous): gpt-oss-20b's gate/up at 128x128x128 w8 stored
// 64 KiB a K step. The transposes around the accumulator are layout renamings (a loop's
// carried accumulator is carried transposed). Returns whether it swapped.
bool swap_operands(Upcast& u, ir::Function& f, ir::Operation& op, Value* a16, Value* bn, Value* acc,
                   const DotTest& warpgroup) {
  if (!warpgroup || bit_width(a16->type.dtype) != 16 || computed(a16) || !computed(bn)) return false;
  Value* res = op.result();
  const ir::Type t = res->type;
  op.operands = {bn, u.trans(a16), u.trans(acc)};
  res->type = t.with_shape({t.shape[1], t.shape[0]});
  if (!warpgroup(op)) {
    res->type = t;  // (the transposes made for it are dead code)
    return false;
  }
  ir::Builder after(*op.parent);
  after.after(op);
  Value* back = after.create1(Op::trans, {res}, t, op.loc);
  back->def->ints = {1, 0};
  ir::replace_all_uses(f.body, res, back);
  back->def->operands[0] = res;
  return true;
}

int decompose(ir::Function& f, ir::Block& block, const DotTest& native, const DotTest& stage_b, bool bf16_math) {
  int n = 0;
  for (size_t i = 0; i < block.ops.size(); ++i) {
    ir::Operation& op = *block.ops[i];
    for (auto& r : op.regions) n += decompose(f, *r, native, stage_b, bf16_math);
    if (op.op != Op::dot || !ir::is_scaled_dot(op) || native(op)) continue;
    ir::Builder b(block);
    b.before(op);
    Upcast u(b, op.loc, bf16_math);
    Value *a = op.operands[0], *bt = op.operands[1], *acc = op.operands[2];
    Value* sa = unit_scale(op.operands[3]) ? nullptr : op.operands[3];
    Value* sb = unit_scale(op.operands[4]) ? nullptr : op.operands[4];
    Value* a16 = u.operand(a, sa);
    // b is [K, N] packed along K: upcast as [N, K], its scales' orientation.
    Value* bn = u.operand(u.trans(bt), sb);
    if (swap_operands(u, f, op, a16, bn, acc, stage_b)) {
      ++n;
      i = size_t(std::find_if(block.ops.begin(), block.ops.end(), [&](auto& o) { return o.get() == &op; }) -
                 block.ops.begin()) + 1;  // (past the transpose back)
      continue;
    }
    op.operands = {a16, u.trans(bn), acc};
    if (computed(bn) && stage_b && stage_b(op)) op.operands[1] = u.trans(staged(f, b, bn, op.loc));
    i = size_t(std::find_if(block.ops.begin(), block.ops.end(), [&](auto& o) { return o.get() == &op; }) -
               block.ops.begin());
    ++n;
  }
  return n;
}

}  // namespace

int decompose_scaled_dots(ir::Function& f, const std::function<bool(const ir::Operation&)>& native,
                          const std::function<bool(const ir::Operation&)>& stage_b, bool bf16_math) {
  return decompose(f, f.body, native, stage_b, bf16_math);
}

}  // namespace tl::passes

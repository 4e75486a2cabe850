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
  // 16-bit registers (e2m1_to) or by a byte-permute table in inline PTX
  // (e2m1_to_bf16_prmt).
  Upcast(ir::Builder& b, ir::SrcLoc loc, bool bf16_math) : b_(b), loc_(loc), bf16_math_(bf16_math) {}

  // x [rows, K (/ 2 for e2m1)], packed along its last dim, as bf16 [rows, K], times its
  // scales [rows, K / 32] unless `scale` is null.
  // `permute`: upcast e2m1 by e2m1_to_bf16_prmt (bf16_math only).
  Value* operand(Value* x, Value* scale, bool permute = false) {
    const DType d = x->type.dtype;
    if (d == DType::f4e2m1 && bf16_math_ && !permute) {
      Value* v = e2m1_to(x, DType::bf16);
      if (!scale) return v;
      const int rows = v->type.shape[0], K = v->type.shape[1];
      Value* blocks = reshape(v, {rows, K / 32, 32});
      Value* s = broadcast(reshape(e8m0_to(scale, DType::bf16), {rows, K / 32, 1}), {rows, K / 32, 32});
      return reshape(b_.create1(Op::mul, {blocks, s}, blocks->type, loc_), {rows, K});
    }
    if (d == DType::f4e2m1 && bf16_math_) {
      if (!scale) return e2m1_to_bf16_prmt(x, nullptr);
      // The scales by byte: a 32-element block is 16 bytes.
      const int rows = x->type.shape[0], half = x->type.shape[1];
      Value* s = broadcast(reshape(e8m0_to(scale, DType::bf16), {rows, half / 16, 1}), {rows, half / 16, 16});
      return e2m1_to_bf16_prmt(x, s);
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
  // instructions a thread in f32 (Triton's byte-permute form: ~530). An operand that a
  // swapped dot (swap_operands) takes as its register A is upcast by e2m1_to_bf16_prmt
  // instead; tutorial 10's (both operands upcast, the dot as written) keeps this form:
  // there the permute form's asm spilled (sm_90 64x128x256 w4 0 -> 352 B, 128x128x128
  // w4 0 -> 52 B, 128x256x128 w8 0 -> 44 B).
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

  // Packed e2m1 [rows, K / 2] as bf16 [rows, K] on sm_90, times `scale` (bf16, a byte's:
  // [rows, K / 32, 16], broadcast) unless it is null: a pure inline asm four bytes (eight codes) a 32-bit
  // register. Each code's bf16 bits are looked up with prmt (a byte permute of two 32-bit
  // words: an 8-entry byte table indexed by the code's three magnitude bits, one for its
  // low and one for its high byte), its sign OR-ed in, and the pairs multiplied by their
  // scales with mul.rn.bf16x2; the two results are the low and the high nibbles' values,
  // joined as elements 2i and 2i + 1. e2m1_to's bf16 form places each nibble with a 16-bit
  // multiply and a mask, one element a register, and multiplied by 2^126 before the
  // scale, each multiply a scalar bf16 one (moe down 128x128x128 w8: 64 IMAD, 100 LOP3,
  // 64 HMUL2 in the K loop; bench/results/moe-static-2026-11-29). The values looked up are
  // e2m1's exactly, so each scaled product rounds once, to nearest even, as before: the
  // results are bit-identical. The bytes travel four to a register into the asm (they
  // were one a register, live beside the previous K step's wgmma operands). Triton's
  // Hopper upcast is a byte-permute table too.
  Value* e2m1_to_bf16_prmt(Value* x, Value* scale) {
    const int rows = x->type.shape[0], half = x->type.shape[1];
    Value* bytes = bitcast(x, DType::u8);
    // $4: bytes j = 0..3, code lo_j in bits 0-3, hi_j in 4-7; $5, $6: the scales of bytes
    // 0, 1 and 2, 3 (bf16x2). Outputs: $0 = (lo0, lo1), $1 = (lo2, lo3) as bf16x2, $2, $3
    // the same of the hi codes. Magnitude m (0..7): bf16 0, 0.5, 1, 1.5, 2, 3, 4, 6 =
    // 0x0000, 3F00, 3F80, 3FC0, 4000, 4040, 4080, 40C0: low bytes 00 00 80 C0 00 40 80 C0
    // (prmt's bytes 0..7 of {0xC0800000, 0xC0804000}), high bytes 00 3F 3F 3F 40 40 40 40
    // ({0x3F3F3F00, 0x40404040}). prmt reads four selectors from its third operand's low
    // 16 bits: the nibbles lo0 hi0 lo1 hi1 (m), or lo2 hi2 lo3 hi3 (m >> 16). The signs:
    // s (x << 4) has lo_j's at byte j's top bit, x hi_j's; permuted into the high-byte
    // words' order, masked and OR-ed into them. Then each result word takes its low and
    // high bytes from the two words (0x6240: bytes 0 and 2 of each, the lo codes; 0x7351:
    // bytes 1 and 3, the hi ones).
    const bool scaled = scale != nullptr;
    const std::string out = scaled ? "t" : "$";
    std::string text =
        "{\n"
        ".reg .b32 m, mh, s, l01, l23, h01, h23, s01, s23, t0, t1, t2, t3;\n"
        "and.b32 m, $4, 0x77777777;\n"
        "shr.u32 mh, m, 16;\n"
        "shl.b32 s, $4, 4;\n"
        "prmt.b32 l01, 0xC0800000, 0xC0804000, m;\n"
        "prmt.b32 l23, 0xC0800000, 0xC0804000, mh;\n"
        "prmt.b32 h01, 0x3F3F3F00, 0x40404040, m;\n"
        "prmt.b32 h23, 0x3F3F3F00, 0x40404040, mh;\n"
        "prmt.b32 s01, s, $4, 0x5140;\n"
        "prmt.b32 s23, s, $4, 0x7362;\n"
        "and.b32 s01, s01, 0x80808080;\n"
        "and.b32 s23, s23, 0x80808080;\n"
        "or.b32 h01, h01, s01;\n"
        "or.b32 h23, h23, s23;\n"
        "prmt.b32 " + out + "0, l01, h01, 0x6240;\n"
        "prmt.b32 " + out + "1, l23, h23, 0x6240;\n"
        "prmt.b32 " + out + "2, l01, h01, 0x7351;\n"
        "prmt.b32 " + out + "3, l23, h23, 0x7351;\n";
    if (scaled)
      text +=
          "mul.rn.bf16x2 $0, t0, $5;\n"
          "mul.rn.bf16x2 $1, t1, $6;\n"
          "mul.rn.bf16x2 $2, t2, $5;\n"
          "mul.rn.bf16x2 $3, t3, $6;\n";
    text += "}";
    std::vector<Value*> args{bytes};
    if (scaled) args = {reshape(bytes, scale->type.shape), scale};  // ([rows, K / 32, 16])
    ir::Operation& op = b_.create(Op::inline_asm_elementwise, args, {}, loc_);
    op.str = std::string(scaled ? "=r,=r,=r,=r,r,r,r" : "=r,=r,=r,=r,r") + "\n" + text;
    op.i0 = 4;  // pack: four bytes a register
    op.i1 = 1;  // pure
    const Type t = args[0]->type.with_dtype(DType::bf16);
    Value* lo = reshape(op.add_result(t), {rows, half});
    Value* hi = reshape(op.add_result(t), {rows, half});
    Value* pairs = b_.create1(Op::join, {lo, hi}, lo->type.with_shape({rows, half, 2}), loc_);
    return reshape(pairs, {rows, 2 * half});
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
    // b is [K, N] packed along K: upcast as [N, K], its scales' orientation. By byte
    // permutes where it can become a swapped warpgroup dot's register A (a 16-bit a read
    // as loaded, swap_operands), the upcast made in that operand layout.
    const bool may_swap = stage_b && bit_width(a16->type.dtype) == 16 && !computed(a16);
    Value* bn = u.operand(u.trans(bt), sb, /*permute=*/may_swap);
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

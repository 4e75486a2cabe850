// tl::dot on the CPU: a loop nest LLVM's vectorizer takes. The operands are first
// widened once into buffers of the accumulator's type (f32, or i32 for i8: FP8, bf16 and
// f16 decoded, i8 sign-extended), so the multiply-accumulate nest reads plain arrays;
// the innermost loop runs along N, where c[m, n] += a[m, k] * b[k, n] is independent per
// n (no reduction across iterations, so no fast-math is needed to vectorize it), and
// each c[m, n] sums its products in k order, in the accumulator's precision.
#include "codegen/cpu/lower.hpp"

namespace tl::codegen::cpu {

using llvm::Value;

void Lowerer::lower_dot(const ir::Operation& op) {
  const ir::Value *a = op.operands[0], *b = op.operands[1], *c = op.operands[2];
  const ir::Value* r = op.result();
  const int M = a->type.shape[0], K = a->type.shape[1], N = b->type.shape[1];
  const DType acc = r->type.dtype;  // f32 or i32 (the verifier's rule)
  const bool integer = acc == DType::i32;

  auto widened = [&](const ir::Value* x, const char* name) {
    Value* buf = alloc_buffer(x->type.with_dtype(acc), name);
    const DType t = x->type.dtype;
    loop_nest(x->type.shape, [&](const Idx& i) {
      Value* v = elem(x, i);
      v = integer ? b_.CreateSExt(v, b_.getInt32Ty()) : (t == DType::f32 ? v : cast(v, t, DType::f32));
      store_buf(buf, acc, i.flat, v);
    });
    return buf;
  };
  Value* wa = widened(a, "dot.a");
  Value* wb = widened(b, "dot.b");
  Value* out = alloc_buffer(r->type, "dot");
  loop_nest({M, N}, [&](const Idx& i) { store_buf(out, acc, i.flat, elem(c, i)); });
  loop_nest({M, K, N}, [&](const Idx& i) {
    Value *m = i.dims[0], *k = i.dims[1], *n = i.dims[2];
    Value* x = load_buf(wa, acc, idx_from_dims({M, K}, {m, k}).flat);
    Value* y = load_buf(wb, acc, idx_from_dims({K, N}, {k, n}).flat);
    Value* at = idx_from_dims({M, N}, {m, n}).flat;
    Value* cur = load_buf(out, acc, at);
    Value* sum = integer ? b_.CreateAdd(cur, b_.CreateMul(x, y)) : b_.CreateFAdd(cur, b_.CreateFMul(x, y));
    store_buf(out, acc, at, sum);
  });
  rep(r).buf = out;
}

}  // namespace tl::codegen::cpu

import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
try:
    from triton.language.extra.libdevice import tanh
except ImportError:
    from triton.language.extra.cuda.libdevice import tanh
@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    inner = sqrt_2_over_pi * (a + 0.044715 * a * a * a)
    g = 0.5 * a * (1 + tanh(inner))
    tl.store(y_ptr + offs, g.to(tl.bfloat16), mask=mask)
src = triton.compiler.ASTSource(fn=gelu_tanh_kernel, signature={"x_ptr": "*bf16", "y_ptr": "*bf16", "n": "i32", "BLOCK_SIZE": "constexpr"}, constexprs={"BLOCK_SIZE": 1024}, attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]]})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
open("tri_gelu.ptx", "w").write(k.asm["ptx"])

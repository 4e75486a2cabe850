import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = a * tl.sigmoid(a) * b
    tl.store(c_ptr + offs, c.to(tl.bfloat16), mask=mask)
src = triton.compiler.ASTSource(fn=swiglu_kernel, signature={"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "n": "i32", "BLOCK_SIZE": "constexpr"}, constexprs={"BLOCK_SIZE": 1024}, attrs={(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]], (3,): [["tt.divisibility", 16]]})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
open("tri_swiglu.ptx", "w").write(k.asm["ptx"])
print(k.asm["ptx"][:200])

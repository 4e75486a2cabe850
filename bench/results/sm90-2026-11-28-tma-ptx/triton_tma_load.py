import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def k(desc, out, c0, c1):
    t = desc.load([c1, c0])
    r = tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :]
    tl.store(out + r, t)

src = ASTSource(fn=k, signature={"desc": "tensordesc<fp32[16, 32]>", "out": "*fp32", "c0": "i32", "c1": "i32"}, constexprs={})
c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
open("tri.ptx", "w").write(c.asm["ptx"])
print({k: v for k, v in c.metadata._asdict().items() if k in ("tensordesc_meta", "shared", "num_warps", "name")})

# Triton 3.6's tutorial 09 TMA kernel (matmul_kernel_tma_persistent, as
# bench/run_persistent_matmul_bench.py has it) compiled for sm_90 without a GPU:
#   python3 triton_tutorial09.py False|True   (flatten; writes triton_tri09_flatten_<false/true>.ptx here)
import os, sys
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
here = os.path.dirname(os.path.abspath(__file__))
src_txt = open(os.path.join(here, '../../run_persistent_matmul_bench.py')).read()
start = src_txt.index('@triton.jit\ndef _compute_pid')
end = src_txt.index('def triton_side')
chunk = src_txt[start:end]
flatten = sys.argv[1] if len(sys.argv) > 1 else "True"
chunk = chunk.replace("flatten=True", f"flatten={flatten}")
open(os.path.join(here, 'kern_%s.py' % flatten), 'w').write("import triton\nimport triton.language as tl\n" + chunk)
sys.path.insert(0, here)  # (the kernel written out, imported: triton.jit needs its source file)
mod = __import__('kern_%s' % flatten)
sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[256, 64]>", "c_desc": "tensordesc<fp16[128, 128]>",
       "M": "i32", "N": "i32", "K": "i32"}
const = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "EPILOGUE_SUBTILE": True, "NUM_SMS": 132}
for k in const: sig[k] = "constexpr"
s = ASTSource(fn=mod.matmul_kernel_tma_persistent, signature=sig, constexprs=const)
c = triton.compile(s, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 3})
open(os.path.join(here, f"triton_tri09_flatten_{flatten.lower()}.ptx"), "w").write(c.asm["ptx"])
print(c.metadata.shared, c.metadata.num_warps)

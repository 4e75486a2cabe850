# kern.py: bench/run_moe_bench.py's fused_moe_kernel without its torch imports.
src = open('../../run_moe_bench.py').read()
start, end = src.index('@triton.jit\ndef fused_moe_kernel'), src.index('E2M1 = torch')
open('kern.py', 'w').write('import triton\nimport triton.language as tl\n' + src[start:end])

# Triton 3.6's kernels of bench/run_attention_sample_bench.py compiled for sm_90 (no GPU): ptxas -v.
import sys, os, subprocess, re, importlib.util
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("b", "/work/main/bench/run_attention_sample_bench.py")
b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")
def one(kind, BM, BN, W, D, causal, ST):
    fn = b.attn_bwd_dkdv if kind == "dkdv" else b.attn_bwd_dq
    if kind == "dkdv":
        sig = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "DO": "*bf16", "LSE": "*fp32", "Delta": "*fp32", "DK": "*bf16", "DV": "*bf16", "S": "i32", "G": "i32", "sm_scale": "fp32"}
    else:
        sig = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "DO": "*bf16", "LSE": "*fp32", "Delta": "*fp32", "DQ": "*bf16", "S": "i32", "G": "i32", "sm_scale": "fp32"}
    cst = {"BLOCK_M": BM, "BLOCK_N": BN, "D": D, "CAUSAL": causal, "STAGES": ST}
    for k in cst: sig[k] = "constexpr"
    src = ASTSource(fn=fn, signature=sig, constexprs=cst)
    c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": W, "num_stages": ST})
    ptx = c.asm["ptx"]
    p = os.environ.get("OUT", "/tmp") + f"/triton_{kind}_{BM}x{BN}_w{W}_D{D}{'c' if causal else ''}_s{ST}.ptx"
    open(p, "w").write(ptx)
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", p, "-o", "/dev/null"], capture_output=True, text=True).stderr
    regs = re.search(r"Used (\d+) registers", out).group(1)
    sp = re.search(r"(\d+) bytes spill stores", out).group(1)
    print(f"shared={c.metadata.shared} triton {kind} {BM}x{BN} w{W} D={D}{' causal' if causal else ''} s{ST}: {regs} regs, {sp} B spill stores, wgmma {ptx.count('wgmma.mma_async')}")
for a in sys.argv[1:]:
    k, BM, BN, W, D, c, ST = a.split(",")
    one(k, int(BM), int(BN), int(W), int(D), bool(int(c)), int(ST))

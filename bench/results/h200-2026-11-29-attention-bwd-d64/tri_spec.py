# Triton 3.6's backward kernels compiled for sm_90 without a GPU, specialized as a launch
# specializes them (pointers and S divisible by 16: tt.divisibility), num_stages left at
# Triton's default (3) as the benchmark launches them. ptxas -v.
import sys, os, re, subprocess, importlib.util, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("b", "/work/main/bench/run_attention_sample_bench.py")
b = importlib.util.module_from_spec(spec); spec.loader.exec_module(b)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")
for a in sys.argv[1:]:
    kind, BM, BN, W, D, causal, ST = a.split(","); BM, BN, W, D, ST = map(int, (BM, BN, W, D, ST))
    fn = b.attn_bwd_dkdv if kind == "dkdv" else b.attn_bwd_dq
    ptrs = ["Q", "K", "V", "DO", "LSE", "Delta"] + (["DK", "DV"] if kind == "dkdv" else ["DQ"])
    sig = {p: ("*fp32" if p in ("LSE", "Delta") else "*bf16") for p in ptrs}
    sig.update({"S": "i32", "G": "i32", "sm_scale": "fp32"})
    cst = {"BLOCK_M": BM, "BLOCK_N": BN, "D": D, "CAUSAL": bool(int(causal)), "STAGES": ST}
    for k in cst: sig[k] = "constexpr"
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(ptrs) + 1)}  # the pointers and S
    c = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=cst, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": W})
    p = os.environ.get("OUT", "/tmp") + f"/triton_{kind}_{BM}x{BN}_w{W}_D{D}{'c' if int(causal) else ''}_s{ST}.ptx"
    open(p, "w").write(c.asm["ptx"])
    out = subprocess.run([PTXAS, "-arch=sm_90a", "-v", p, "-o", "/dev/null"], capture_output=True, text=True).stderr
    regs = re.search(r"Used (\d+) registers", out).group(1); sp = re.search(r"(\d+) bytes spill stores", out).group(1)
    print(f"triton {kind} {BM}x{BN} w{W} D={D}{' causal' if int(causal) else ''} s{ST}: {regs} regs, {sp} B spill stores, shared {c.metadata.shared}, wgmma {c.asm['ptx'].count('wgmma.mma_async')}")

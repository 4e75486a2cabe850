# Triton 3.6's fused_moe_kernel (bench/run_moe_bench.py) compiled for sm_90 without a GPU, ptxas -v.
# args: BM,BN,BK,GROUP,STAGES,WARPS,MXFP4(0/1),GATE_UP(0/1); ints divisible by 16 as at gpt-oss-20b's layer.
import sys, os, subprocess, re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
sys.path.insert(0, os.path.dirname(__file__))
import kern  # bench/run_moe_bench.py's fused_moe_kernel (make_kern.py writes kern.py)
PTXAS = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/ptxas")
def one(bm,bn,bk,gm,st,w,mx,gu):
    sig = {"a_ptr":"*bf16","b_ptr":"*u8" if mx else "*bf16","b_scale_ptr":"*u8" if mx else "*bf16","c_ptr":"*bf16",
           "sorted_token_ids_ptr":"*i32","expert_ids_ptr":"*i32","num_tokens_post_padded_ptr":"*i32",
           "N":"i32","K":"i32","EM":"i32","num_valid_tokens":"i32","stride_am":"i32","stride_be":"i32","stride_bn":"i32",
           "stride_bse":"i32","stride_bsn":"i32","stride_cm":"i32"}
    cst={"BLOCK_SIZE_M":bm,"BLOCK_SIZE_N":bn,"BLOCK_SIZE_K":bk,"GROUP_SIZE_M":gm,"top_k":4 if gu else 1,"MXFP4":bool(mx),"GATE_UP":bool(gu)}
    for k in cst: sig[k]="constexpr"
    # the strides as the bench passes them are plain ints; K and N = 2880 (not divisible by 16) -> no attrs beyond pointers
    src=ASTSource(fn=kern.fused_moe_kernel, signature=sig, constexprs=cst, attrs={(i,):[["tt.divisibility",16]] for i in range(17) if not (mx and i==15)})
    c=triton.compile(src,target=GPUTarget("cuda",90,32),options={"num_warps":w,"num_stages":st})
    name=f"{'mx' if mx else 'bf'}_{'gu' if gu else 'dn'}_{bm}x{bn}x{bk}_s{st}_w{w}"
    out=os.environ.get("OUT",".")
    open(f"{out}/{name}.ptx","w").write(c.asm["ptx"]); open(f"{out}/{name}.ttgir","w").write(c.asm["ttgir"])
    r=subprocess.run([PTXAS,"-arch=sm_90a","-v",f"{out}/{name}.ptx","-o",f"{out}/{name}.cubin"],capture_output=True,text=True).stderr
    regs=re.search(r"Used (\d+) registers",r).group(1); sp=re.search(r"(\d+) bytes spill stores",r).group(1)
    ptx=c.asm["ptx"]
    print(f"{name}: shared={c.metadata.shared} regs={regs} spill={sp} wgmma={ptx.count('wgmma.mma_async')} mma.sync={ptx.count('mma.sync')} cp.async={ptx.count('cp.async.cg')+ptx.count('cp.async.ca')} ldmatrix={ptx.count('ldmatrix')} ld.global={len(re.findall(r'ld.global',ptx))}",flush=True)
for a in sys.argv[1:]:
    v=[int(x) for x in a.split(",")]
    try: one(*v)
    except Exception as e: print(a, type(e).__name__, str(e)[:300])

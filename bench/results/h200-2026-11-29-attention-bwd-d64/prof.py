# One launch each of tl's dK/dV (PTX given) and Triton's, for ncu.
import json, os, sys, numpy as np, torch, cupy
sys.path.insert(0, "../bench"); sys.path.insert(0, "../bench/amd_quality")
import run_attention_sample_bench as rb
B, H, S, D = 4, 16, 2048, 64
mk = lambda: torch.randn(B, H, S, D, device="cuda").bfloat16()
q, k, v, do = mk(), mk(), mk(), mk()
lse = torch.zeros(B, H, S, device="cuda"); delta = torch.zeros(B, H, S, device="cuda")
dk, dv = torch.empty_like(k), torch.empty_like(v)
cp = lambda t: cupy.asarray(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)
ptx, name, BN, st_tr = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
meta = json.load(open(f"tl/{name}.json"))
fn = cupy.RawModule(path=ptx).get_function(meta["kernel_symbol"])
dyn = int(meta["report"].get("dynamic_shared_bytes", 0))
if dyn: fn.max_dynamic_shared_size_bytes = dyn
args = (cp(q), cp(k), cp(v), cp(do), cp(lse), cp(delta), cp(dk), cp(dv), np.int32(S), np.int32(S), np.int32(1), np.float32(0.125))
for _ in range(2):
    fn((S // BN, B * H, 1), (meta["block_threads"], 1, 1), args, shared_mem=dyn)
    rb.attn_bwd_dkdv[(S // 64, B * H)](q, k, v, do, lse, delta, dk, dv, S, 1, 0.125, BLOCK_M=64, BLOCK_N=64, D=D, CAUSAL=False, STAGES=st_tr, num_warps=4)
torch.cuda.synchronize()

# Triton's backward kernels as the bench launches them (no num_stages option: Triton's default),
# their PTX and SASS written to $OUT.
import os, sys, torch
sys.path.insert(0, "../bench"); sys.path.insert(0, "../bench/amd_quality")
import run_attention_sample_bench as rb
B, H, S, D = 4, 16, 2048, 64
mk = lambda: torch.randn(B, H, S, D, device="cuda").bfloat16()
q, k, v, do = mk(), mk(), mk(), mk()
lse = torch.zeros(B, H, S, device="cuda"); delta = torch.zeros(B, H, S, device="cuda")
dk, dv, dq = torch.empty_like(k), torch.empty_like(v), torch.empty_like(q)
out = os.environ["OUT"]
for (kind, BM, BN, W, st) in [("dkdv", 64, 64, 4, 3), ("dkdv", 64, 64, 4, 2), ("dq", 128, 64, 8, 2), ("dq", 128, 64, 8, 3), ("dq", 64, 64, 4, 2)]:
    if kind == "dkdv":
        h = rb.attn_bwd_dkdv[(S // BN, B * H)](q, k, v, do, lse, delta, dk, dv, S, 1, 0.125, BLOCK_M=BM, BLOCK_N=BN, D=D, CAUSAL=False, STAGES=st, num_warps=W)
    else:
        h = rb.attn_bwd_dq[(S // BM, B * H)](q, k, v, do, lse, delta, dq, S, 1, 0.125, BLOCK_M=BM, BLOCK_N=BN, D=D, CAUSAL=False, STAGES=st, num_warps=W)
    n = f"{out}/tri_{kind}_{BM}x{BN}_w{W}_s{st}"
    open(n + ".ptx", "w").write(h.asm["ptx"])
    print(n, h.metadata.num_stages if hasattr(h.metadata, "num_stages") else "", h.n_regs, h.n_spills, h.metadata.shared)

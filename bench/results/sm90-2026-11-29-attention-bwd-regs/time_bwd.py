#!/usr/bin/env python3
"""The attention backward's kernels one at a time on the GPU: tl's (the PTX tl generated for sm_90,
loaded through the driver as tl loads it, with the compile's metadata beside it: symbol, threads,
dynamic shared bytes) beside Triton 3.6's same kernels (bench/run_attention_sample_bench.py's
attn_bwd_dkdv / attn_bwd_dq, default = wgmma), same inputs, outputs compared with Triton's,
timed with triton.testing.do_bench (L2 flushed, median), ROUNDS rounds interleaved, the
best round's median kept. (h200-2026-11-29-attention-bwd-d64's, for the kernels of da95019 on:
tl's dK/dV and dQ read Delta and LSE * log2(e) from one scratch [B*H, 2, S]; OLD=1 for PTX from
before, whose kernels took LSE and Delta.)

  [SHAPE=B,H,S,D] [NO_TRITON=1] [ROUNDS=5] [JSON=kernels.json] python3 time_bwd.py DIR
      DIR: NAME.ptx (+ variants NAME.VARIANT.ptx, with NAME.VARIANT.json where their launch
      differs) and NAME.json (tl_dump.cpp's), NAME
      sm_90_{dkdv,dq}_BMxBN_wW_DD_sS; $OUT/JSON gets the rows
"""
import glob, json, os, re, sys
import numpy as np, torch, triton, cupy
sys.path.insert(0, os.environ.get("BENCH", "bench"))
sys.path.insert(0, os.path.join(os.environ.get("BENCH", "bench"), "amd_quality"))
import run_attention_sample_bench as rb

d = sys.argv[1]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
B, H, S, D = map(int, os.environ.get("SHAPE", "4,16,2048,64").split(","))  # (Hkv = H, non-causal)
torch.manual_seed(0)
mk = lambda: torch.randn(B, H, S, D, device="cuda").bfloat16()
q, k, v, do = mk(), mk(), mk(), mk()
scale = 1 / D ** 0.5
s = torch.einsum("bhqd,bhkd->bhqk", q.float(), k.float()) * scale
lse = torch.logsumexp(s, -1).contiguous()
o = (torch.softmax(s, -1) @ v.float()).bfloat16()
delta = (o.float() * do.float()).sum(-1).contiguous()
stats = torch.stack([delta.view(B * H, S), lse.view(B * H, S) * 1.44269504088896340736], 1).contiguous()  # f32 product
OLD = bool(os.environ.get("OLD"))
del s
def cp(t):
    return cupy.asarray(t.view(torch.int16) if t.dtype == torch.bfloat16 else t)
cases = []  # (kernel, config, impl, fn, outs)
triton_done = set()
for ptx in sorted(glob.glob(f"{d}/*.ptx")):
    base = os.path.basename(ptx)[:-4]
    name, _, variant = base.partition(".")
    m = re.match(r"sm_90_(dkdv|dq)_(\d+)x(\d+)_w(\d+)_D(\d+)(c?)_s(\d+)$", name)
    if not m or int(m.group(5)) != D or m.group(6): continue
    kind, BM, BN, W, st = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(7))
    meta = json.load(open(f"{d}/{base}.json" if os.path.exists(f"{d}/{base}.json") else f"{d}/{name}.json"))
    fn = cupy.RawModule(path=ptx).get_function(meta["kernel_symbol"])
    dyn = int(meta.get("report", {}).get("dynamic_shared_bytes", 0))
    if dyn: fn.max_dynamic_shared_size_bytes = dyn
    thr = (int(meta["block_threads"]), 1, 1)
    i32, f32 = np.int32, np.float32
    cfg = f"{BM}x{BN} w{W} s{st}"
    if kind == "dkdv":
        dk_t, dv_t = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
        grid = (S // BN, B * H, 1)
        rows = (cp(lse), cp(delta)) if OLD else (cp(stats),)
        args = (cp(q), cp(k), cp(v), cp(do), *rows, cp(dk_t), cp(dv_t), i32(S), i32(S), i32(1), f32(scale))
        cases.append((kind, cfg, "tl" + ("." + variant if variant else ""), lambda fn=fn, g=grid, a=args, t=thr, n=dyn: fn(g, t, a, shared_mem=n), [dk_t, dv_t]))
        if (kind, cfg) not in triton_done and not os.environ.get("NO_TRITON"):
            dk_r, dv_r = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
            cases.append((kind, cfg, "triton", lambda BM=BM, BN=BN, W=W, st=st, dk_r=dk_r, dv_r=dv_r: rb.attn_bwd_dkdv[(S // BN, B * H)](
                q, k, v, do, lse, delta, dk_r, dv_r, S, 1, scale, BLOCK_M=BM, BLOCK_N=BN, D=D, CAUSAL=False, STAGES=st, num_warps=W), [dk_r, dv_r]))
    else:
        dq_t = torch.full_like(q, float("nan"))
        grid = (S // BM, B * H, 1)
        rows = (cp(lse), cp(delta)) if OLD else (cp(stats),)
        args = (cp(q), cp(k), cp(v), cp(do), *rows, cp(dq_t), i32(S), i32(S), i32(1), f32(scale))
        cases.append((kind, cfg, "tl" + ("." + variant if variant else ""), lambda fn=fn, g=grid, a=args, t=thr, n=dyn: fn(g, t, a, shared_mem=n), [dq_t]))
        if (kind, cfg) not in triton_done and not os.environ.get("NO_TRITON"):
            dq_r = torch.full_like(q, float("nan"))
            cases.append((kind, cfg, "triton", lambda BM=BM, BN=BN, W=W, st=st, dq_r=dq_r: rb.attn_bwd_dq[(S // BM, B * H)](
                q, k, v, do, lse, delta, dq_r, S, 1, scale, BLOCK_M=BM, BLOCK_N=BN, D=D, CAUSAL=False, STAGES=st, num_warps=W), [dq_r]))
    triton_done.add((kind, cfg))
for c in cases: c[3]()
torch.cuda.synchronize()
ref = {}
for kind, cfg, impl, fn, outs in cases:
    if impl == "triton": ref[(kind, cfg)] = outs
times = {i: [] for i in range(len(cases))}
for r in range(ROUNDS):
    for i, c in enumerate(cases):
        times[i].append(triton.testing.do_bench(c[3], warmup=10, rep=60, return_mode="median"))
res = []
for i, (kind, cfg, impl, fn, outs) in enumerate(cases):
    rr = ref.get((kind, cfg))
    diff = max(float((a.float() - b.float()).abs().max()) for a, b in zip(outs, rr)) if rr else None
    row = dict(kernel=kind, config=cfg, impl=impl, us=min(times[i]) * 1e3, us_rounds=[round(t * 1e3, 1) for t in times[i]], max_abs_diff=diff)
    print(json.dumps(row), flush=True)
    res.append(row)
json.dump(res, open(os.path.join(os.environ.get("OUT", "."), os.environ.get("JSON", "kernels.json")), "w"), indent=1)

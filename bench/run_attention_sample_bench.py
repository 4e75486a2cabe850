#!/usr/bin/env python3
"""samples/attention (forward and backward) beside Triton 3.6's tutorial-06 kernels and torch's SDPA,
bf16, [B, H, S, D] (K, V [B, Hkv, S, D]), f32 accumulation, on the GPU, same run.

Shapes (B, H, Hkv, S, D, causal): (4, 8, 8, 4096, 128) non-causal and causal (B*H = 32),
(4, 16, 16, 2048, 64) non-causal (B*H = 64), grouped (1, 32, 8, 8192, 128) causal.
TFLOP/s: the forward's 4*B*H*S^2*D (half when causal), the backward 2.5 times that.

  tl      bench/attention_sample_bench.cpp (tl-bench-attention-sample): the sample's kernels at the
          tutorial bench's forward configurations (128x64 w4 s2, 64x64 w4 s2, 128x128 w8 s2) and
          backward ones (dK/dV rows x keys / dQ rows x keys: Triton's tutorial blocks 32x128 /
          128x32 w4, and 64x64 / 64x64 w4, 32x64 w4 / 128x64 w8, 64x128 w8 / 128x64 w8)
  Triton  the tutorial's algorithm (the forward is the anchor's attn_fwd of
          ../shared/anchors/attention_anchor.py with its K/V head divided by G and the LSE stored,
          as the tutorial stores M: bench/amd_quality/triton_kernels.py's attention_fwd; the
          backward, written here, is the tutorial's preprocess, dK/dV per
          key block and dQ per query block), at the same configurations, DISABLE_MMA_V3=1
          (mma.sync, tl's instruction class) and default (wgmma), each in a process of its own;
          the tutorial's own backward configuration (BLOCK 32/128/128/32, w4, s5) beside them
  torch   scaled_dot_product_attention (is_causal, enable_gqa for the grouped shape), forward, and
          its backward alone (autograd of the forward's output with a given dO)

Triton and torch are checked against an f32 reference of the first head (O, and dQ/dK/dV of the
backward): |err| <= 2e-2 + 2e-2 |ref|. Times: triton.testing.do_bench (warmup 25, rep 200, median;
L2 flushed before each call); tl-bench-attention-sample times the same way.

    python3 bench/run_attention_sample_bench.py --tl /tmp/tl/bin/tl-bench-attention-sample --out $OUT

Writes attention_sample.json, attention_sample.md and attention_sample.png to --out.
"""
import argparse, json, math, os, subprocess, sys

SHAPES = [(4, 8, 8, 4096, 128, False), (4, 8, 8, 4096, 128, True), (4, 16, 16, 2048, 64, False),
          (1, 32, 8, 8192, 128, True)]
FWD = [(128, 64, 4, 2), (64, 64, 4, 2), (128, 128, 8, 2)]
# (dK/dV BLOCK_M rows a step, BLOCK_N keys a program, dQ BLOCK_M rows a program, BLOCK_N keys a step, warps, stages)
# (tl's list, bench/attention_sample_bench.cpp, and the tutorial's own 5 stages)
# The last two: each kernel's best one at D = 64 on the H200 (bench/results/h200-2026-11-29-attention-bwd-d64):
# tl's dK/dV 64x64 s2 with dQ 128x32 s2, Triton's dK/dV 64x64 s3 with dQ 128x64 w8 s3.
BWD = [(32, 128, 128, 32, 4, 2), (64, 64, 64, 64, 4, 2), (32, 64, 128, 64, (4, 8), 2), (64, 128, 128, 64, 8, 2),
       (32, 128, 128, 32, 4, 5), (64, 64, 128, 32, 4, 2), (64, 64, 128, 64, (4, 8), 3)]
MODES = {"mma.sync": "1", "default": "0"}
# TL_TRITON_MODES=default (a comma list) times only those of Triton's builds: a session with
# little device time keeps the default (wgmma) kernels, the anchor.
if os.environ.get("TL_TRITON_MODES"):
    MODES = {m: f for m, f in MODES.items() if m in os.environ["TL_TRITON_MODES"].split(",")}
TOL = 2e-2

try:
    import triton
    import triton.language as tl
except ImportError:
    triton = None

if triton is not None:
    # The forward is the amd_quality suite's Triton twin of the sample's (one definition for
    # both; the bundle carries bench/amd_quality/ beside this script).
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "amd_quality"))
    from triton_kernels import attention_fwd as attn_fwd

    @triton.jit
    def attn_bwd_preprocess(O, DO, Delta, rows, BLOCK_M: tl.constexpr, D: tl.constexpr):
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, D)
        ok = (offs_m < rows)[:, None]
        o = tl.load(O + offs_m[:, None] * D + offs_d[None, :], mask=ok, other=0.0).to(tl.float32)
        do = tl.load(DO + offs_m[:, None] * D + offs_d[None, :], mask=ok, other=0.0).to(tl.float32)
        tl.store(Delta + offs_m, tl.sum(o * do, 1), mask=offs_m < rows)

    @triton.jit
    def attn_bwd_dkdv(Q, K, V, DO, LSE, Delta, DK, DV, S, G, sm_scale, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, STAGES: tl.constexpr):
        n0 = tl.program_id(0) * BLOCK_N
        bhkv = tl.program_id(1)
        offs_n = n0 + tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, D)
        kv_base = bhkv * S * D
        k = tl.load(K + kv_base + offs_n[:, None] * D + offs_d[None, :])
        v = tl.load(V + kv_base + offs_n[:, None] * D + offs_d[None, :])
        dk = tl.zeros([BLOCK_N, D], tl.float32)
        dv = tl.zeros([BLOCK_N, D], tl.float32)
        qk_scale = sm_scale * 1.44269504
        m_mid = 0
        if CAUSAL:
            m_mid = n0 + BLOCK_N
        for g in range(0, G):
            bh = bhkv * G + g
            q_base = bh * S * D
            if CAUSAL:  # the diagonal blocks, masked
                for m in tl.range(n0, m_mid, BLOCK_M, num_stages=STAGES):
                    offs_m = m + tl.arange(0, BLOCK_M)
                    qT = tl.load(Q + q_base + offs_m[None, :] * D + offs_d[:, None])
                    lse2 = tl.load(LSE + bh * S + offs_m) * 1.44269504
                    pT = tl.math.exp2(tl.dot(k, qT) * qk_scale - lse2[None, :])
                    pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
                    do = tl.load(DO + q_base + offs_m[:, None] * D + offs_d[None, :])
                    dv = tl.dot(pT.to(tl.bfloat16), do, dv)
                    Di = tl.load(Delta + bh * S + offs_m)
                    dpT = tl.dot(v, tl.trans(do))
                    dsT = pT * (dpT - Di[None, :])
                    dk = tl.dot(dsT.to(tl.bfloat16), tl.trans(qT), dk)
            for m in tl.range(m_mid, S, BLOCK_M, num_stages=STAGES):
                offs_m = m + tl.arange(0, BLOCK_M)
                qT = tl.load(Q + q_base + offs_m[None, :] * D + offs_d[:, None])
                lse2 = tl.load(LSE + bh * S + offs_m) * 1.44269504
                pT = tl.math.exp2(tl.dot(k, qT) * qk_scale - lse2[None, :])
                do = tl.load(DO + q_base + offs_m[:, None] * D + offs_d[None, :])
                dv = tl.dot(pT.to(tl.bfloat16), do, dv)
                Di = tl.load(Delta + bh * S + offs_m)
                dpT = tl.dot(v, tl.trans(do))
                dsT = pT * (dpT - Di[None, :])
                dk = tl.dot(dsT.to(tl.bfloat16), tl.trans(qT), dk)
        tl.store(DK + kv_base + offs_n[:, None] * D + offs_d[None, :], (dk * sm_scale).to(tl.bfloat16))
        tl.store(DV + kv_base + offs_n[:, None] * D + offs_d[None, :], dv.to(tl.bfloat16))

    @triton.jit
    def attn_bwd_dq(Q, K, V, DO, LSE, Delta, DQ, S, G, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    D: tl.constexpr, CAUSAL: tl.constexpr, STAGES: tl.constexpr):
        m0 = tl.program_id(0) * BLOCK_M
        bh = tl.program_id(1)
        offs_m = m0 + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, D)
        q_base = bh * S * D
        kv_base = (bh // G) * S * D
        q = tl.load(Q + q_base + offs_m[:, None] * D + offs_d[None, :])
        do = tl.load(DO + q_base + offs_m[:, None] * D + offs_d[None, :])
        lse2 = tl.load(LSE + bh * S + offs_m) * 1.44269504
        Di = tl.load(Delta + bh * S + offs_m)
        dq = tl.zeros([BLOCK_M, D], tl.float32)
        qk_scale = sm_scale * 1.44269504
        lo = S
        if CAUSAL:
            lo = m0
        for n in tl.range(0, lo, BLOCK_N, num_stages=STAGES):
            offs_n = n + tl.arange(0, BLOCK_N)
            kT = tl.load(K + kv_base + offs_n[None, :] * D + offs_d[:, None])
            vT = tl.load(V + kv_base + offs_n[None, :] * D + offs_d[:, None])
            p = tl.math.exp2(tl.dot(q, kT) * qk_scale - lse2[:, None])
            dp = tl.dot(do, vT)
            ds = p * (dp - Di[:, None])
            dq = tl.dot(ds.to(tl.bfloat16), tl.trans(kT), dq)
        if CAUSAL:  # the diagonal blocks, masked
            for n in tl.range(m0, m0 + BLOCK_M, BLOCK_N, num_stages=STAGES):
                offs_n = n + tl.arange(0, BLOCK_N)
                kT = tl.load(K + kv_base + offs_n[None, :] * D + offs_d[:, None])
                vT = tl.load(V + kv_base + offs_n[None, :] * D + offs_d[:, None])
                p = tl.math.exp2(tl.dot(q, kT) * qk_scale - lse2[:, None])
                p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
                dp = tl.dot(do, vT)
                ds = p * (dp - Di[:, None])
                dq = tl.dot(ds.to(tl.bfloat16), tl.trans(kT), dq)
        tl.store(DQ + q_base + offs_m[:, None] * D + offs_d[None, :], (dq * sm_scale).to(tl.bfloat16))


def fwd_flops(B, H, S, D, causal):
    return 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)


def shape_key(s):
    return f"B={s[0]} H={s[1]} Hkv={s[2]} S={s[3]} D={s[4]}" + (" causal" if s[5] else "")


def inputs(B, H, Hkv, S, D, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    mk = lambda h: torch.randn(B, h, S, D, device="cuda", generator=g).bfloat16()
    return mk(H), mk(Hkv), mk(Hkv), mk(H)


def reference(q, k, v, do, causal, scale):
    """f32 O, dQ, dK, dV of head 0 (batch 0, its key head 0 with G = 1 in the reference)."""
    import torch
    qh, kh, vh, doh = (x[0, 0].float().requires_grad_(True) for x in (q, k, v, do))
    s = (qh @ kh.T) * scale
    if causal:
        S = s.shape[0]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    o = torch.softmax(s, dim=-1) @ vh
    o.backward(doh.detach())
    return o.detach(), qh.grad, kh.grad, vh.grad


def close(got, ref):
    err = (got.float() - ref).abs()
    w = (err / (TOL + TOL * ref.abs())).max().item()
    return bool(w <= 1.0), w


def triton_worker(mode, shapes, out):
    import torch
    from triton.testing import do_bench
    rows = []
    for (B, H, Hkv, S, D, causal) in shapes:
        G = H // Hkv
        q, k, v, do = inputs(B, H, Hkv, S, D, seed=S + D + int(causal))
        scale = 1.0 / math.sqrt(D)
        o_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal, scale) if G == 1 else (None,) * 4
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
        base = {"shape": shape_key((B, H, Hkv, S, D, causal)), "impl": f"triton {mode}"}
        for BM, BN, W, ST in FWD:
            f = lambda: attn_fwd[(triton.cdiv(S, BM), B * H)](q, k, v, o, lse, S, G, scale, BLOCK_M=BM, BLOCK_N=BN,
                                                                D=D, CAUSAL=causal, STAGES=ST, num_warps=W)
            row = dict(base, **{"pass": "fwd", "config": f"{BM}x{BN} w{W} s{ST}"})
            try:
                o.fill_(float("nan"))
                compiled = f()
                torch.cuda.synchronize()
            except Exception as e:
                row.update(ok=False, skipped=True, error=f"{type(e).__name__}: {str(e)[:200]}")
                rows.append(row), print(json.dumps(row), flush=True)
                continue
            ok, worst = close(o[0, 0], o_ref) if o_ref is not None else (bool(torch.isfinite(o).all().item()), None)
            ms = do_bench(f, warmup=25, rep=200, return_mode="median")
            row.update(ms=ms, tflops=fwd_flops(B, H, S, D, causal) / ms / 1e9, ok=ok, worst=worst,
                       registers=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None))
            rows.append(row), print(json.dumps(row), flush=True)
        # The backward from the first configuration's O and LSE.
        BM, BN, W, ST = FWD[0]
        attn_fwd[(triton.cdiv(S, BM), B * H)](q, k, v, o, lse, S, G, scale, BLOCK_M=BM, BLOCK_N=BN, D=D, CAUSAL=causal,
                                              STAGES=ST, num_warps=W)
        delta = torch.empty_like(lse)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        for M1, N1, M2, N2, W, ST in BWD:
            W1, W2 = W if isinstance(W, tuple) else (W, W)
            def f():
                attn_bwd_preprocess[(triton.cdiv(B * H * S, 64),)](o, do, delta, B * H * S, BLOCK_M=64, D=D)
                attn_bwd_dkdv[(S // N1, B * Hkv)](q, k, v, do, lse, delta, dk, dv, S, G, scale, BLOCK_M=M1,
                                                  BLOCK_N=N1, D=D, CAUSAL=causal, STAGES=ST, num_warps=W1)
                attn_bwd_dq[(S // M2, B * H)](q, k, v, do, lse, delta, dq, S, G, scale, BLOCK_M=M2, BLOCK_N=N2, D=D,
                                              CAUSAL=causal, STAGES=ST, num_warps=W2)
            row = dict(base, **{"pass": "bwd", "config": f"{M1}x{N1} w{W1} s{ST} / {M2}x{N2} w{W2} s{ST}"})
            try:
                dq.fill_(float("nan"))
                f()
                torch.cuda.synchronize()
            except Exception as e:
                row.update(ok=False, skipped=True, error=f"{type(e).__name__}: {str(e)[:200]}")
                rows.append(row), print(json.dumps(row), flush=True)
                continue
            if dq_ref is not None:
                oks = [close(dq[0, 0], dq_ref), close(dk[0, 0], dk_ref), close(dv[0, 0], dv_ref)]
                ok, worst = all(x[0] for x in oks), max(x[1] for x in oks)
            else:
                ok, worst = bool(torch.isfinite(dq).all().item()), None
            ms = do_bench(f, warmup=25, rep=200, return_mode="median")
            row.update(ms=ms, tflops=2.5 * fwd_flops(B, H, S, D, causal) / ms / 1e9, ok=ok, worst=worst)
            rows.append(row), print(json.dumps(row), flush=True)
        q = k = v = do = o = dq = dk = dv = None
        torch.cuda.empty_cache()
    with open(out, "w") as fh:
        json.dump({"triton": triton.__version__, "rows": rows}, fh, indent=1)


def torch_side(shapes):
    import torch
    from triton.testing import do_bench
    F = torch.nn.functional
    rows = []
    for (B, H, Hkv, S, D, causal) in shapes:
        q, k, v, do = inputs(B, H, Hkv, S, D, seed=S + D + int(causal))
        scale = 1.0 / math.sqrt(D)
        gqa = H != Hkv
        qg, kg, vg = (x.clone().requires_grad_(True) for x in (q, k, v))
        fwd = lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale, enable_gqa=gqa)
        base = {"shape": shape_key((B, H, Hkv, S, D, causal)), "impl": "torch", "config": "sdpa"}
        with torch.no_grad():
            ms = do_bench(fwd, warmup=25, rep=200, return_mode="median")
        rows.append(dict(base, **{"pass": "fwd", "ms": ms, "tflops": fwd_flops(B, H, S, D, causal) / ms / 1e9,
                                  "ok": True}))
        print(json.dumps(rows[-1]), flush=True)
        out = fwd()
        bwd = lambda: torch.autograd.grad(out, (qg, kg, vg), do, retain_graph=True)
        ms = do_bench(bwd, warmup=25, rep=200, return_mode="median")
        rows.append(dict(base, **{"pass": "bwd", "ms": ms,
                                  "tflops": 2.5 * fwd_flops(B, H, S, D, causal) / ms / 1e9, "ok": True}))
        print(json.dumps(rows[-1]), flush=True)
        q = k = v = do = qg = kg = vg = out = None
        torch.cuda.empty_cache()
    return rows


def tl_rows(tl_json):
    rows = []
    for r in json.load(open(tl_json))["runs"]:
        s = r["shape"]
        rows.append(dict(r, shape=shape_key((s["B"], s["H"], s["Hkv"], s["S"], s["D"], s["causal"]))))
    return rows


def write_tables(out, rows, device):
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    impls = ["tl", "triton mma.sync", "triton default", "torch"]
    lines = [f"# samples/attention beside Triton and torch ({device})", "",
             "TFLOP/s, medians (forward 4*B*H*S^2*D flops, half causal; backward 2.5x). `best` is each side's",
             "best configuration; `tl/mma.sync` the ratio of tl's best to Triton's mma.sync best.", ""]
    best = {}
    for ps in ("fwd", "bwd"):
        lines += [f"## {'forward' if ps == 'fwd' else 'backward'}", "",
                  "| shape | config | " + " | ".join(impls) + " |", "|---|---|" + "---|" * len(impls)]
        for s in shapes:
            cfgs = []
            for r in rows:
                if r["shape"] == s and r.get("pass") == ps and r.get("config") not in cfgs and r["impl"] != "torch":
                    cfgs.append(r.get("config"))
            for c in cfgs + ["best"]:
                cells = []
                for impl in impls:
                    sel = [r for r in rows if r["shape"] == s and r.get("pass") == ps and r["impl"] == impl and
                           "tflops" in r and r.get("ok") and (c == "best" or r.get("config") == c or impl == "torch")]
                    v = max((r["tflops"] for r in sel), default=None)
                    if c == "best":
                        best[(ps, s, impl)] = v
                    cells.append("-" if v is None else f"{v:.1f}")
                lines.append(f"| {s} | {c} | " + " | ".join(cells) + " |")
            t, m = best.get((ps, s, "tl")), best.get((ps, s, "triton mma.sync"))
            if t and m:
                lines.append(f"| {s} | tl/mma.sync | {t / m:.2f} | | | |")
        lines.append("")
    open(os.path.join(out, "attention_sample.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(14, 5))
        for ax, ps in zip(axes, ("fwd", "bwd")):
            x = range(len(shapes))
            for i, impl in enumerate(impls):
                vals = [best.get((ps, s, impl)) or 0 for s in shapes]
                ax.bar([xi + i * 0.2 for xi in x], vals, width=0.2, label=impl)
            ax.set_xticks([xi + 0.3 for xi in x])
            ax.set_xticklabels([s.replace(" ", "\n", 2) for s in shapes], fontsize=7)
            ax.set_ylabel("TFLOP/s (best configuration)")
            ax.set_title(f"attention {'forward' if ps == 'fwd' else 'backward'}, {device}")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "attention_sample.png"), dpi=110)
    except ImportError:
        print("(matplotlib not installed: no plot)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="tl-bench-attention-sample")
    ap.add_argument("--out", default=".")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        triton_worker(a.worker, SHAPES, a.worker_out)
        return
    os.makedirs(a.out, exist_ok=True)
    rows = []
    if a.tl:
        tl_json = os.path.join(a.out, "tl_attention_sample.json")
        subprocess.run([a.tl, "--json", tl_json], check=False)
        rows += tl_rows(tl_json)
    for mode, flag in MODES.items():
        wout = os.path.join(a.out, f"triton_{mode.replace('.', '_')}.json")
        env = dict(os.environ, DISABLE_MMA_V3=flag, TRITON_CACHE_DIR=f"/tmp/triton-cache-{mode}")
        subprocess.run([sys.executable, __file__, "--worker", mode, "--worker-out", wout], env=env, check=False)
        if os.path.exists(wout):
            rows += json.load(open(wout))["rows"]
    rows += torch_side(SHAPES)
    import torch
    device = torch.cuda.get_device_name()
    json.dump({"device": device, "triton": triton.__version__, "torch": torch.__version__, "rows": rows},
              open(os.path.join(a.out, "attention_sample.json"), "w"), indent=1)
    write_tables(a.out, rows, device)


if __name__ == "__main__":
    main()

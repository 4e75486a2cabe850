#!/usr/bin/env python3
"""The AMD code-quality suite run on an NVIDIA GPU (the H100 machine), tl beside Triton.

tl:     tl-amd-quality --bench (every case at its benchmark problem, checked against a
        double-precision reference, then timed: device events around batches of calls,
        median of 20 batches).
Triton: the twins of triton_kernels.py with the same problem, grid and num_warps, checked
        against a torch double-precision reference, timed the same way (CUDA events
        around batches, median; no cache flush between calls, as tl's side).
GB/s is the bytes each kernel must move (tl's count, cases.hpp) over the median time.

  python3 bench/amd_quality/gpu_bench.py --tl /tmp/tl/bin/tl-amd-quality --out DIR
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_kernels as tk  # noqa: E402

DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def time_ms(f, repeats=20):
    """Median milliseconds per call: CUDA events around batches of calls (~1 ms each)."""
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); f(); b.record(); b.synchronize()
    inner = max(1, min(100, int(1.0 / max(a.elapsed_time(b), 1e-3))))
    t = []
    for _ in range(repeats):
        a.record()
        for _ in range(inner):
            f()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / inner)
    t.sort()
    return t[len(t) // 2]


def problem(case):
    """(args, grid, check) for the Triton twin: check() compares its outputs with a torch
    double-precision reference and returns the largest error relative to the tolerance
    (<= 1 passes)."""
    f, p = case["family"], case["params"]
    grid = tuple(p["grid"])
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1)
    rnd = lambda *s, lo=-1.0, hi=1.0: torch.rand(*s, device=dev, generator=g, dtype=torch.float64) * (hi - lo) + lo

    def rel(out, ref, atol, rtol):
        return ((out.double() - ref).abs() / (atol + rtol * ref.abs())).max().item()

    if f == "attention_fwd":
        S, D, BH = p["S"], p["D"], grid[1]
        q, k, v = (rnd(BH, S, D, lo=-1, hi=1).bfloat16() for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(BH, S, device=dev)
        scale = D ** -0.5

        def check():  # the first head against softmax(Q.K^T * scale) V in double
            ref = torch.softmax((q[0].double() @ k[0].double().T) * scale, -1) @ v[0].double()
            return rel(o[0], ref, 1e-2, 1e-2)
        return (q, k, v, o, lse, S, p["G"], scale), grid, check
    if f in ("attention_bwd_dkdv", "attention_bwd_dq"):
        S, D, BH = p["S"], p["D"], grid[1]
        q, k, v, d_o = (rnd(BH, S, D).bfloat16() for _ in range(4))
        scale = D ** -0.5
        # LSE and Delta from the causal forward in double, a head at a time; the first head's
        # gradients in double are the reference.
        keep = torch.ones(S, S, device=dev, dtype=torch.bool).tril()
        lse, delta = torch.empty(BH, S, device=dev), torch.empty(BH, S, device=dev)
        for h in range(BH):
            qh, kh, vh, doh = (t[h].double() for t in (q, k, v, d_o))
            s = ((qh @ kh.T) * scale).masked_fill(~keep, float("-inf"))
            lh = torch.logsumexp(s, -1)
            pm = torch.exp(s - lh[:, None])
            dh = ((pm @ vh) * doh).sum(-1)
            lse[h], delta[h] = lh.float(), dh.float()
            if h == 0:
                ds = pm * (doh @ vh.T - dh[:, None])
                ref = {"dq": ds @ kh * scale, "dk": ds.T @ qh * scale, "dv": pm.T @ doh}
        if f == "attention_bwd_dkdv":
            dk, dv = torch.empty_like(k), torch.empty_like(v)
            check = lambda: max(rel(dk[0], ref["dk"], 5e-2, 2e-2), rel(dv[0], ref["dv"], 5e-2, 2e-2))
            return (q, k, v, d_o, lse, delta, dk, dv, S, S, p["G"], scale), grid, check
        dq = torch.empty_like(q)
        return (q, k, v, d_o, lse, delta, dq, S, S, p["G"], scale), grid, lambda: rel(dq[0], ref["dq"], 5e-2, 2e-2)
    if f.startswith("softmax"):
        dt = DT[p["dtype"]]
        R, C = grid[0], p["cols"]
        x = rnd(R, C, lo=-4, hi=4).to(dt)
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        tol = 1e-2 if dt != torch.float32 else 1e-4
        return (x, y, C, p["stride"]), grid, lambda: rel(y, ref, 1e-6, tol)
    if f == "layernorm_fwd":
        R, C = grid[0], p["cols"]
        x, w, b = rnd(R, C, lo=-2, hi=3).bfloat16(), rnd(C, lo=0.5, hi=1.5).bfloat16(), rnd(C, lo=-.5, hi=.5).bfloat16()
        y, mean, rstd = torch.empty_like(x), torch.empty(R, device=dev), torch.empty(R, device=dev)
        ref = torch.nn.functional.layer_norm(x.double(), (C,), w.double(), b.double(), 1e-5)
        return (x, y, w, b, mean, rstd, C, 1e-5), grid, lambda: rel(y, ref, 2e-2, 1e-2)
    if f == "layernorm_bwd":
        R, C = grid[0], p["cols"]
        x, dy, w = rnd(R, C, lo=-2, hi=2).bfloat16(), rnd(R, C).bfloat16(), rnd(C, lo=0.5, hi=1.5).bfloat16()
        mean, rstd = rnd(R, lo=-.1, hi=.1).float(), rnd(R, lo=.8, hi=1.2).float()
        dx = torch.empty_like(x)
        xh = (x.double() - mean.double()[:, None]) * rstd.double()[:, None]
        wdy = w.double() * dy.double()
        ref = (wdy - (xh * (xh * wdy).mean(1, keepdim=True) + wdy.mean(1, keepdim=True))) * rstd.double()[:, None]
        return (x, dy, w, mean, rstd, dx, C), grid, lambda: rel(dx, ref, 2e-2, 1e-2)
    if f == "cross_entropy_fwd":
        R, V = grid[0], p["vocab"]
        x = rnd(R, V, lo=-6, hi=6).bfloat16()
        t = torch.randint(0, V, (R,), device=dev, generator=g)
        loss = torch.empty(R, device=dev)
        ref = torch.nn.functional.cross_entropy(x.double(), t, reduction="none")
        return (x, t, loss, V), grid, lambda: rel(loss, ref, 1e-4, 1e-4)
    if f == "rotary":
        T, H, D = grid[0], p["H"], p["D"]
        x = rnd(T, H, D, lo=-2, hi=2).bfloat16()
        cs, sn = rnd(T, D // 2).float(), rnd(T, D // 2).float()
        y = torch.empty_like(x)
        x1, x2 = x.double()[..., :D // 2], x.double()[..., D // 2:]
        c, s = cs.double()[:, None, :], sn.double()[:, None, :]
        ref = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
        return (x, cs, sn, y), grid, lambda: rel(y, ref, 2e-2, 1e-2)
    if f == "swiglu":
        R, n = grid[0], p["n"]
        a = rnd(R, 2 * n, lo=-5, hi=5).bfloat16()
        out = torch.empty(R, n, device=dev, dtype=torch.bfloat16)
        gd, ud = a.double()[:, :n], a.double()[:, n:]
        ref = torch.nn.functional.silu(gd) * ud
        return (a, out, n), grid, lambda: rel(out, ref, 2e-2, 1e-2)
    if f == "sum_argmax":
        R, C = p["rows"], p["cols"]
        x = rnd(R, C).float()
        sums, idx = torch.empty(R, device=dev), torch.empty(R, device=dev, dtype=torch.int32)
        rs, ri = x.double().sum(1), x.argmax(1)
        return (x, sums, idx, R, C), grid, lambda: max(rel(sums, rs, 1e-4, 1e-4), 2.0 * float((idx != ri).any()))
    if f == "cumsum":
        R, C = grid[0], p["cols"]
        x = rnd(R, C).float()
        y = torch.empty_like(x)
        ref = x.double().cumsum(1)
        return (x, y, C), grid, lambda: rel(y, ref, 1e-3, 1e-4)
    if f == "transpose":
        M, N = p["M"], p["N"]
        x = rnd(M, N).float()
        y = torch.empty(N, M, device=dev)
        return (x, y, M, N), grid, lambda: 2.0 * float((y != x.t()).any())
    if f == "embedding":
        T, D, V = grid[0] * p["BT"], p["D"], p["vocab"]
        ids = torch.randint(0, V, (T,), device=dev, generator=g, dtype=torch.int32)
        table = rnd(V, D).bfloat16()
        out = torch.empty(T, D, device=dev, dtype=torch.bfloat16)
        return (ids, table, out, D), grid, lambda: 2.0 * float((out != table[ids.long()]).any())
    if f == "histogram":
        n, bins = p["n"], p["bins"]
        x = torch.randint(0, bins, (n,), device=dev, generator=g, dtype=torch.int32)
        hist = torch.zeros(bins, device=dev, dtype=torch.int32)
        ref = torch.bincount(x.long(), minlength=bins)
        return (x, hist, n), grid, lambda: 2.0 * float((hist.long() != ref).any())
    if f == "fp8_dequant":
        R, C = grid[0], p["cols"]
        q = rnd(R, C, lo=-200, hi=200).float().to(torch.float8_e4m3fn)  # the OCP format (sm_90)
        s = rnd(R, lo=0.001, hi=0.01).float()
        out = torch.empty(R, C, device=dev, dtype=torch.bfloat16)
        ref = q.float().double() * s.double()[:, None]
        return (q, s, out, C), grid, lambda: rel(out, ref, 1e-6, 1e-2)
    if f == "lse_stream":
        R, C = grid[0], p["cols"]
        x = rnd(R, C, lo=-20, hi=20).float()
        out = torch.empty(R, device=dev)
        ref = torch.logsumexp(x.double(), 1)
        return (x, out, C), grid, lambda: rel(out, ref, 1e-4, 1e-5)
    if f == "segment_sum":
        S, L = grid[0], p["max_len"]
        lens = torch.randint(0, L + 1, (S,), device=dev, generator=g)
        offs = torch.zeros(S + 1, device=dev, dtype=torch.int64)
        offs[1:] = lens.cumsum(0)
        v = rnd(max(int(offs[-1]), 1)).float()
        out = torch.empty(S, device=dev)
        cs = torch.cat([torch.zeros(1, device=dev, dtype=torch.float64), v.double().cumsum(0)])
        ref = cs[offs[1:]] - cs[offs[:-1]]
        return (v, offs.int(), out), grid, lambda: rel(out, ref, 1e-4, 1e-5)
    raise KeyError(f)


def triton_side(case):
    fn, _, consts, _ = tk.signature(case["family"], case["params"], "sm_90")
    args, grid, check = problem(case)
    launch = lambda: fn[grid](*args, **consts, num_warps=case["num_warps"])
    launch()
    torch.cuda.synchronize()
    err = check()
    ms = time_ms(launch) if err <= 1 else 0.0
    return err, ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, help="the tl-amd-quality binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = ["--only", args.only] if args.only else []
    tl_json = os.path.join(args.out, "amd_quality_tl.json")
    p = subprocess.run([args.tl, "--bench", "--out", tl_json, *only])
    tl_rows = {r["name"]: r for r in json.load(open(tl_json))}
    rows, md = [], []
    for name, t in tl_rows.items():
        try:
            err, ms = triton_side(t)
        except Exception as e:  # recorded; the other cases still run
            print(f"triton {name}: {type(e).__name__}: {e}", flush=True)
            err, ms = float("inf"), 0.0
        tg = t["bytes"] / (ms * 1e6) if ms > 0 else 0.0
        r = {"name": name, "problem": t["problem"], "num_warps": t["num_warps"], "tl_gbps": t["gbps"],
             "tl_ms": t["ms"], "tl_error": t["error"], "triton_gbps": tg, "triton_ms": ms, "triton_err_over_tol": err}
        rows.append(r)
        ratio = t["gbps"] / tg if tg > 0 else 0.0
        md.append(f"| {name} | {t['problem']} | w{t['num_warps']} | {t['gbps']:.0f} | {tg:.0f} | {ratio:.2f} | "
                  f"{'ok' if not t['error'] else 'WRONG: ' + t['error'][:80]} / {'ok' if err <= 1 else 'WRONG'} |")
        print(md[-1], flush=True)
    dev = torch.cuda.get_device_name()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# AMD code-quality suite on {dev}: tl beside Triton {triton.__version__}", "",
             f"{now}. GB/s = bytes each kernel must move (cases.hpp) / median time; both sides timed by "
             "CUDA events around batches of back-to-back calls (no cache flush), after a check against a "
             "double-precision reference.", "",
             "| case | problem | warps | tl GB/s | Triton GB/s | tl / Triton | check tl / Triton |",
             "| --- | --- | --- | --- | --- | --- | --- |", *md, "",
             f"python3 bench/amd_quality/gpu_bench.py --tl {args.tl} --out {args.out}", ""]
    open(os.path.join(args.out, "amd_quality_h100.md"), "w").write("\n".join(lines))
    json.dump({"device": dev, "triton": triton.__version__, "rows": rows},
              open(os.path.join(args.out, "amd_quality_h100.json"), "w"), indent=1)
    bad = p.returncode != 0 or any(r["triton_err_over_tol"] > 1 for r in rows)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

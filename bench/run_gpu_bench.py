#!/usr/bin/env python3
"""The side-by-side GPU benchmark: tl (bench/gpu_bench.cpp), Triton and torch in one run.

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_gpu_bench.py --tl .bundle/bin/tl-bench-gpu --out $OUT
Writes rmsnorm.csv, rmsnorm.png, launch.csv and summary.md to --out.

Every kernel's result is checked against a float64 reference before it is timed;
times are CUDA-event medians (triton.testing.do_bench, return_mode="median") and the
tl side uses the same method in C++. Small shapes rotate over several buffer sets so
that no side is measured out of L2.
"""
import argparse, csv, json, os, subprocess, sys, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench



@triton.jit
def rms_fwd_row(X, Y, W, N, eps, BLOCK: tl.constexpr):
    # one program per row
    row = tl.program_id(0).to(tl.int64)
    c = tl.arange(0, BLOCK)
    m = c < N
    x = tl.load(X + row * N + c, mask=m, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + row * N + c, (x * inv * g).to(tl.bfloat16), mask=m)


@triton.jit
def rms_fwd_packed(X, Y, W, M, N, eps, BLOCK: tl.constexpr, R: tl.constexpr):
    # R rows per program as one [R, BLOCK] tile
    rows = (tl.program_id(0) * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BLOCK)
    cm = c < N
    m = (rows[:, None] < M) & cm[None, :]
    x = tl.load(X + rows[:, None] * N + c[None, :], mask=m, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, 1) / N + eps)
    g = tl.load(W + c, mask=cm, other=0.0).to(tl.float32)
    tl.store(Y + rows[:, None] * N + c[None, :], (x * inv[:, None] * g[None, :]).to(tl.bfloat16), mask=m)


@triton.jit
def rms_bwd(X, DY, W, RSTD, DX, DWP, M, N, BLOCK: tl.constexpr, R: tl.constexpr, STAGES: tl.constexpr = None):
    # the algorithm of samples/rmsnorm: persistent programs over blocks of R rows,
    # one partial dgamma per program; STAGES hands the loop to Triton's own software
    # pipeliner with that many stages (None: Triton's default, as a plain range)
    pid = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    m = c < N
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    dg = tl.zeros([R, BLOCK], dtype=tl.float32)
    for first in tl.range(pid * R, M, tl.num_programs(0) * R, num_stages=STAGES):
        rows = first + tl.arange(0, R)
        rm = rows < M
        m2 = rm[:, None] & m[None, :]
        offs = rows[:, None].to(tl.int64) * N + c[None, :]
        x = tl.load(X + offs, mask=m2, other=0.0).to(tl.float32)
        dy = tl.load(DY + offs, mask=m2, other=0.0).to(tl.float32)
        r = tl.load(RSTD + rows, mask=rm, other=0.0)
        dot = tl.sum(dy * g[None, :] * x, 1) / N
        d = r[:, None] * g[None, :] * dy - x * (r * r * r * dot)[:, None]
        tl.store(DX + offs, d.to(tl.bfloat16), mask=m2)
        dg += dy * x * r[:, None]
    tl.store(DWP + pid * N + c, tl.sum(dg, 0), mask=m)


@triton.jit
def rms_bwd_prefetch(X, DY, W, RSTD, DX, DWP, M, N, BLOCK: tl.constexpr, R: tl.constexpr):
    # tl's backward with PREFETCH, statement for statement: the next block of rows is
    # loaded before the current one is computed (a two-stage pipeline written out)
    pid = tl.program_id(0)
    step = tl.num_programs(0) * R
    c = tl.arange(0, BLOCK)
    m = c < N
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    dg = tl.zeros([R, BLOCK], dtype=tl.float32)
    rn = pid * R + tl.arange(0, R)
    on = rn[:, None].to(tl.int64) * N + c[None, :]
    mn = (rn < M)[:, None] & m[None, :]
    x_next = tl.load(X + on, mask=mn, other=0.0)
    dy_next = tl.load(DY + on, mask=mn, other=0.0)
    r_next = tl.load(RSTD + rn, mask=rn < M, other=0.0)
    for first in range(pid * R, M, step):
        rows = first + tl.arange(0, R)
        x = x_next.to(tl.float32)
        dy = dy_next.to(tl.float32)
        r = r_next
        rn = rows + step
        on = rn[:, None].to(tl.int64) * N + c[None, :]
        mn = (rn < M)[:, None] & m[None, :]
        x_next = tl.load(X + on, mask=mn, other=0.0)
        dy_next = tl.load(DY + on, mask=mn, other=0.0)
        r_next = tl.load(RSTD + rn, mask=rn < M, other=0.0)
        offs = rows[:, None].to(tl.int64) * N + c[None, :]
        m2 = (rows < M)[:, None] & m[None, :]
        dot = tl.sum(dy * g[None, :] * x, 1) / N
        d = r[:, None] * g[None, :] * dy - x * (r * r * r * dot)[:, None]
        tl.store(DX + offs, d.to(tl.bfloat16), mask=m2)
        dg += dy * x * r[:, None]
    tl.store(DWP + pid * N + c, tl.sum(dg, 0), mask=m)


@triton.jit
def rms_bwd_chunked(X, DY, W, RSTD, DX, DWP, M, N, CHUNK: tl.constexpr):
    # tl's backward for very wide rows, statement for statement: per row a pass over
    # column chunks for sum(dy*g*x), a second that writes dx; the partial dgamma row of
    # the program kept in DWP and updated chunk by chunk
    pid = tl.program_id(0)
    c = tl.arange(0, CHUNK)
    partial = DWP + pid.to(tl.int64) * N
    for c0 in range(0, N, CHUNK):
        tl.store(partial + c0 + c, tl.zeros([CHUNK], dtype=tl.float32), mask=c0 + c < N)
    for row in range(pid, M, tl.num_programs(0)):
        base = row.to(tl.int64) * N
        r = tl.load(RSTD + row)
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        for c0 in range(0, N, CHUNK):
            cc = c0 + c
            m = cc < N
            x = tl.load(X + base + cc, mask=m, other=0.0).to(tl.float32)
            dy = tl.load(DY + base + cc, mask=m, other=0.0).to(tl.float32)
            g = tl.load(W + cc, mask=m, other=0.0).to(tl.float32)
            acc += dy * g * x
        k3 = r * r * r * (tl.sum(acc, 0) / N)
        for c0 in range(0, N, CHUNK):
            cc = c0 + c
            m = cc < N
            x = tl.load(X + base + cc, mask=m, other=0.0).to(tl.float32)
            dy = tl.load(DY + base + cc, mask=m, other=0.0).to(tl.float32)
            g = tl.load(W + cc, mask=m, other=0.0).to(tl.float32)
            tl.store(DX + base + cc, (r * g * dy - x * k3).to(tl.bfloat16), mask=m)
            tl.store(partial + cc, tl.load(partial + cc, mask=m, other=0.0) + dy * x * r, mask=m)


@triton.jit
def rms_dgamma(DWP, DW, P, N, BP: tl.constexpr, BC: tl.constexpr):
    c = tl.program_id(0) * BC + tl.arange(0, BC)
    cm = c < N
    p = tl.arange(0, BP)
    acc = tl.zeros([BP, BC], dtype=tl.float32)
    for p0 in range(0, P, BP):
        rows = p0 + p
        acc += tl.load(DWP + rows[:, None] * N + c[None, :], mask=(rows < P)[:, None] & cm[None, :], other=0.0)
    tl.store(DW + c, tl.sum(acc, 0), mask=cm)


def warps_for(B):
    return 1 if B <= 256 else 2 if B <= 1024 else 4 if B <= 4096 else 8


def gbs(nbytes, ms):
    return nbytes / ms / 1e6


def rotate(make, n_bytes):
    # enough input sets that one pass over them exceeds L2 (50 MB) several times
    sets = max(1, min(16, (256 << 20) // max(1, n_bytes)))
    return [make() for _ in range(sets)]


def bench(fn_sets):
    it = [0]
    def step():
        fn_sets[it[0] % len(fn_sets)]()
        it[0] += 1
    return do_bench(step, warmup=25, rep=200, return_mode="median")


def triton_side(tl_rows):
    rows = []
    for t in tl_rows:
        M, N = t["rows"], t["cols"]
        B = triton.next_power_of_2(N)
        eps = 1e-6
        n_bytes = M * N * 2 * 3
        sets = rotate(lambda: (torch.randn(M, N, device="cuda", dtype=torch.bfloat16),
                               torch.empty(M, N, device="cuda", dtype=torch.bfloat16),
                               torch.randn(M, N, device="cuda", dtype=torch.bfloat16),
                               torch.empty(M, N, device="cuda", dtype=torch.bfloat16)), n_bytes)
        w = (1 + 0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16)
        x, y, dy, dx = sets[0]
        ref = torch.nn.functional.rms_norm(x.double(), (N,), w.double(), eps)
        R = max(1, min(16, 2048 // B))
        nwp = 4 if B * R <= 4096 else 8
        plain = lambda s: rms_fwd_row[(M,)](s[0], s[1], w, N, eps, BLOCK=B, num_warps=warps_for(B))
        packed = lambda s: rms_fwd_packed[(triton.cdiv(M, R),)](s[0], s[1], w, M, N, eps, BLOCK=B, R=R, num_warps=nwp)
        res = {"rows": M, "cols": N}
        fbytes = 2 * M * N * 2 + N * 2
        for name, f in (("triton_row", plain), ("triton_packed", packed)):
            y.fill_(float("nan"))
            f(sets[0]); torch.cuda.synchronize()
            err = ((y.double() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (name, M, N, err)
            res[name] = gbs(fbytes, bench([lambda s=s: f(s) for s in sets]))
        tf = lambda s: torch.nn.functional.rms_norm(s[0], (N,), w, eps)
        res["torch"] = gbs(fbytes, bench([lambda s=s: tf(s) for s in sets]))
        # backward, the same algorithm as tl's (R rows per program, deterministic dgamma)
        rstd = torch.rsqrt(x.float().pow(2).mean(1) + eps).contiguous()
        # the configuration tl's heuristic chose (rmsnorm::choose), as tl's harness reports it
        Rb, P, nwb = t["bwd_rows_per_pid"], t["bwd_programs"], t["bwd_warps"]
        prefetch = t.get("bwd_num_stages", 1) > 1
        chunk = t.get("bwd_chunk", 0)
        BC = min(64, max(16, B // 128))  # tl's dgamma tile (rmsnorm::dgamma_tile): [4096 / BC, BC]
        dwp = torch.empty(P, N, device="cuda", dtype=torch.float32)
        dw = torch.empty(N, device="cuda", dtype=torch.float32)
        xd = x.double().requires_grad_()
        wd = w.double().requires_grad_()
        torch.nn.functional.rms_norm(xd, (N,), wd, eps).backward(dy.double())
        # Triton's same algorithm (the two-stage pipeline written out where tl's loop runs at
        # num_stages 2), and
        # the plain loop under Triton's own pipeliner (2 stages): tl is held to the faster.
        # (For very wide rows tl runs its chunked kernel: Triton runs the same, and the plain
        # loop under its pipeliner, with the one-pass configuration, as the second column.)
        same = rms_bwd_chunked if chunk else rms_bwd_prefetch if prefetch else rms_bwd
        same_args = {"CHUNK": chunk} if chunk else {"BLOCK": B, "R": Rb}
        variants = {"triton_bwd": (same, same_args), "triton_bwd_pipelined": (rms_bwd, {"BLOCK": B, "R": Rb, "STAGES": 2})}
        for name, (kern, args) in variants.items():
            def bwd(s, kern=kern, args=args):
                kern[(P,)](s[0], s[2], w, rstd, s[3], dwp, M, N, num_warps=nwb, **args)
                rms_dgamma[(triton.cdiv(N, BC),)](dwp, dw, P, N, BP=4096 // BC, BC=BC, num_warps=4)
            dx.fill_(float("nan"))
            bwd(sets[0]); torch.cuda.synchronize()
            err = ((dx.double() - xd.grad).norm() / xd.grad.norm()).item()
            assert err < 2e-2, (name, M, N, err)
            res[name] = gbs(3 * M * N * 2 + N * 2 + M * 4, bench([lambda s=s: bwd(s) for s in sets]))
        rows.append(res)
        print(f"triton {M:>6}x{N:<6} row {res['triton_row']:6.0f}  packed {res['triton_packed']:6.0f}  "
              f"torch {res['torch']:6.0f}  bwd {res['triton_bwd']:6.0f}  bwd pipelined {res['triton_bwd_pipelined']:6.0f} GB/s",
              flush=True)
        del sets
        torch.cuda.empty_cache()
    return rows


def triton_launch_us():
    x = torch.randn(128, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(128, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    rms_fwd_row[(1,)](x, y, w, 128, 1e-6, BLOCK=128, num_warps=1)
    torch.cuda.synchronize()
    ts = []
    for _ in range(7):
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            rms_fwd_row[(1,)](x, y, w, 128, 1e-6, BLOCK=128, num_warps=1)
        ts.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    ts.sort()
    return ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, help="path to tl-bench-gpu")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    tl_json = os.path.join(a.out, "tl_gpu_bench.json")
    subprocess.run([a.tl, "--json", tl_json], check=True)
    tlr = json.load(open(tl_json))
    tri = triton_side(tlr["rmsnorm"])
    tri_launch = triton_launch_us()
    copy = tlr["copy_gbs"]
    with open(os.path.join(a.out, "rmsnorm.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["rows", "cols", "tl_fwd_gbs", "triton_row_gbs", "triton_packed_gbs", "torch_gbs", "tl_over_triton_packed",
                     "tl_pct_copy", "tl_bwd_gbs", "triton_bwd_gbs", "triton_bwd_pipelined_gbs", "bwd_config", "tl_ok"])
        lines = ["| shape | tl fwd | Triton row | Triton packed | torch | tl / Triton packed | tl % of copy | tl bwd | "
                 "Triton bwd (same algorithm) | Triton bwd (own pipeliner) | bwd config |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for t, r in zip(tlr["rmsnorm"], tri):
            ratio = t["fwd_gbs"] / r["triton_packed"]
            cfg = (f"R{t['bwd_rows_per_pid']} w{t['bwd_warps']} P{t['bwd_programs']}"
                   + (" num_stages=2" if t.get("bwd_num_stages", 1) > 1 else "")
                   + (f" chunk {t['bwd_chunk']}" if t.get("bwd_chunk") else ""))
            wr.writerow([t["rows"], t["cols"], round(t["fwd_gbs"]), round(r["triton_row"]), round(r["triton_packed"]),
                         round(r["torch"]), round(ratio, 3), round(100 * t["fwd_gbs"] / copy, 1), round(t["bwd_gbs"]),
                         round(r["triton_bwd"]), round(r["triton_bwd_pipelined"]), cfg, t["ok"]])
            lines.append(f"| {t['rows']}x{t['cols']} | {t['fwd_gbs']:.0f} | {r['triton_row']:.0f} | {r['triton_packed']:.0f} | "
                         f"{r['torch']:.0f} | {ratio:.2f} | {100 * t['fwd_gbs'] / copy:.0f} % | {t['bwd_gbs']:.0f} | "
                         f"{r['triton_bwd']:.0f} | {r['triton_bwd_pipelined']:.0f} | {cfg} |")
    with open(os.path.join(a.out, "launch.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["tl_launch_us", "driver_launch_us", "triton_launch_us"])
        wr.writerow([round(tlr["launch"]["tl_launch_us"], 3), round(tlr["launch"]["driver_launch_us"], 3), round(tri_launch, 3)])
    summary = [f"# GPU benchmark: {props.name}, {time.strftime('%Y-%m-%d')}", "",
               f"Device-to-device copy: {copy:.0f} GB/s (bytes read + written). RMSNorm bf16, GB/s, CUDA-event medians.", ""]
    summary += lines
    summary += ["", f"Host time per cached launch: tl {tlr['launch']['tl_launch_us']:.2f} us, bare cuLaunchKernel "
                f"{tlr['launch']['driver_launch_us']:.2f} us, Triton {tri_launch:.2f} us."]
    open(os.path.join(a.out, "summary.md"), "w").write("\n".join(summary) + "\n")
    print("\n".join(summary))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        labels = [f"{t['rows']}x{t['cols']}" for t in tlr["rmsnorm"]]
        xs = range(len(labels))
        fig, ax = plt.subplots(figsize=(10, 4.5))
        wdt = 0.2
        for k, (name, vals) in enumerate([("tl", [t["fwd_gbs"] for t in tlr["rmsnorm"]]),
                                           ("Triton row", [r["triton_row"] for r in tri]),
                                           ("Triton packed", [r["triton_packed"] for r in tri]),
                                           ("torch", [r["torch"] for r in tri])]):
            ax.bar([x + (k - 1.5) * wdt for x in xs], vals, wdt, label=name)
        ax.axhline(copy, color="k", linestyle="--", linewidth=1, label="copy bandwidth")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=20)
        ax.set_ylabel("GB/s")
        ax.set_title(f"RMSNorm forward, bf16, {props.name}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "rmsnorm.png"), dpi=110)
    except Exception as e:  # the numbers matter more than the picture
        print("plot failed:", e, file=sys.stderr)


if __name__ == "__main__":
    main()

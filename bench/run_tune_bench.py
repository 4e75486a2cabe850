#!/usr/bin/env python3
"""Autotuning, tl beside Triton, on the GPU machine (bench/run_on_gpu.sh, TL_BENCHES=tune).

tl: tl-bench-tune (bench/tune_bench.cpp) runs the RMSNorm forward with rmsnorm::choose's
hand-picked configuration and with tl::autotune's choice over samples/rmsnorm/tune.hpp's
space (rows per program 1..32 x warps 1..16, minus what the shape cannot run), and times
the tuning (compiles included) in a fresh cache directory; then a second process in the
same directory, which must find every decision stored and time nothing.

Triton: @triton.autotune over the same 30 configurations with the same early pruning
(prune_configs_by), key=['M', 'N'], in a fresh TRITON_CACHE_DIR: the first call's wall
time is the tuning (compiles and benchmarks); the chosen kernel is then timed with
do_bench (CUDA events, median) and checked against float64.

Writes tune.md, tune.csv, tl_tune.json, tl_tune_second.json and triton_tune.json to --out.
"""
import argparse, csv, json, os, subprocess, sys, tempfile, time

# Before triton is imported: a cold compile cache, so the tuning includes the compiles
# tl's side also does.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-tune-")

import torch
import triton
import triton.language as tl

SHAPES = [(32768, 128), (65536, 128), (8192, 4096), (4096, 8192), (16384, 2048), (2048, 16384), (1024, 32768)]


def next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


def prune(configs, named_args, **kwargs):
    # samples/rmsnorm/tune.hpp's forward_launch skips exactly these
    M, N = named_args["M"], named_args["N"]
    B = next_pow2(N)
    keep = []
    for c in configs:
        r, w = c.kwargs["R"], c.num_warps
        if r > 1 and B > 512:
            continue
        if M % r:
            continue
        if r > 1 and r * B > 8192:
            continue
        if r * B < w * 32:
            continue
        keep.append(c)
    return keep


CONFIGS = [triton.Config({"R": r}, num_warps=w) for r in (1, 2, 4, 8, 16, 32) for w in (1, 2, 4, 8, 16)]


@triton.autotune(configs=CONFIGS, key=["M", "N"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def rms_fwd_tuned(X, Y, W, RSTD, M, N, eps, BLOCK: tl.constexpr, R: tl.constexpr):
    # R rows per program as one [R, BLOCK] tile (R = 1: one row), as samples/rmsnorm
    rows = (tl.program_id(0) * R + tl.arange(0, R)).to(tl.int64)
    c = tl.arange(0, BLOCK)
    cm = c < N
    m = (rows[:, None] < M) & cm[None, :]
    x = tl.load(X + rows[:, None] * N + c[None, :], mask=m, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, 1) / N + eps)
    g = tl.load(W + c, mask=cm, other=0.0).to(tl.float32)
    tl.store(Y + rows[:, None] * N + c[None, :], (x * inv[:, None] * g[None, :]).to(tl.bfloat16), mask=m)
    tl.store(RSTD + rows, inv, mask=rows < M)


def triton_side():
    out = []
    for M, N in SHAPES:
        torch.manual_seed(M * 31 + N)
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w = (1 + 0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16)
        y = torch.empty_like(x)
        r = torch.empty(M, device="cuda", dtype=torch.float32)
        B = next_pow2(N)
        grid = lambda meta: (triton.cdiv(M, meta["R"]),)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        rms_fwd_tuned[grid](x, y, w, r, M, N, 1e-6, BLOCK=B)
        torch.cuda.synchronize()
        tune_ms = (time.perf_counter() - t0) * 1e3
        best = rms_fwd_tuned.best_config
        xd = x.double()
        ref = xd * torch.rsqrt((xd * xd).mean(1, keepdim=True) + 1e-6) * w.double()
        err = ((y.double() - ref).abs() / (1 + ref.abs())).max().item()
        us = triton.testing.do_bench(lambda: rms_fwd_tuned[grid](x, y, w, r, M, N, 1e-6, BLOCK=B),
                                     return_mode="median") * 1e3
        nbytes = 2 * M * N * 2 + N * 2 + M * 4
        kept = len(prune(CONFIGS, {"M": M, "N": N}))
        out.append({"rows": M, "cols": N, "tune_ms": tune_ms, "configs": len(CONFIGS), "timed": kept,
                    "rows_per_pid": best.kwargs["R"], "num_warps": best.num_warps, "us": us,
                    "gbs": nbytes / us / 1e3, "max_err": err, "ok": err < 0.02})
        print(f"triton {M:>6}x{N:<6} tuning {tune_ms:8.1f} ms ({kept} timed) -> R={best.kwargs['R']} "
              f"w={best.num_warps} {us:8.2f} us {nbytes / us / 1e3:7.1f} GB/s {'ok' if err < 0.02 else 'WRONG'}",
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, help="path to tl-bench-tune")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, TL_CACHE_DIR=tempfile.mkdtemp(prefix="tl-tune-"), TL_PRINT_AUTOTUNING="1")
    rc = 0
    with open(os.path.join(a.out, "tune_tables.log"), "w") as log:
        for name in ("tl_tune.json", "tl_tune_second.json"):
            p = subprocess.run([a.tl, "--json", os.path.join(a.out, name), "--repeats", str(a.repeats)], env=env,
                               stdout=subprocess.PIPE, stderr=log, text=True)
            print(p.stdout, end="", flush=True)
            rc |= p.returncode
    tl_first = json.load(open(os.path.join(a.out, "tl_tune.json")))["results"]
    tl_second = json.load(open(os.path.join(a.out, "tl_tune_second.json")))["results"]
    tri = triton_side()
    json.dump(tri, open(os.path.join(a.out, "triton_tune.json"), "w"), indent=2)

    rows = []
    for t, s, tr in zip(tl_first, tl_second, tri):
        rows.append({"shape": f"{t['rows']}x{t['cols']}",
                     "tl_hand": f"R={t['hand']['rows_per_pid']} w={t['hand']['num_warps']}",
                     "tl_hand_gbs": round(t["hand"]["gbs"], 1),
                     "tl_tuned": f"R={t['tuned']['rows_per_pid']} w={t['tuned']['num_warps']}",
                     "tl_tuned_gbs": round(t["tuned"]["gbs"], 1),
                     "tl_tuned_vs_hand": round(t["tuned"]["gbs"] / t["hand"]["gbs"], 3),
                     "tl_tune_ms": round(t["tune_ms"], 1),
                     "tl_timed": t["timed"],
                     "tl_second_process_ms": round(s["tune_ms"], 2),
                     "tl_second_from_disk": s["from_disk"],
                     "triton_tuned": f"R={tr['rows_per_pid']} w={tr['num_warps']}",
                     "triton_tuned_gbs": round(tr["gbs"], 1),
                     "triton_tune_ms": round(tr["tune_ms"], 1),
                     "triton_timed": tr["timed"],
                     "ok": t["ok"] and s["ok"] and tr["ok"]})
    with open(os.path.join(a.out, "tune.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        wr.writeheader()
        wr.writerows(rows)
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    with open(os.path.join(a.out, "tune.md"), "w") as f:
        f.write(f"# RMSNorm forward (bf16): tl::autotune vs hand-picked, and tuning wall time beside "
                f"@triton.autotune ({dev}, triton {triton.__version__})\n\n")
        f.write("Same 30 configurations (rows per program 1..32 x warps 1..16) and the same pruning on "
                "both sides; cold compile caches. GB/s: medians of device-event timings.\n\n")
        f.write("| " + " | ".join(rows[0].keys()) + " |\n|" + "---|" * len(rows[0]) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(v) for v in r.values()) + " |\n")
    print(open(os.path.join(a.out, "tune.md")).read())
    if not all(r["ok"] for r in rows):
        rc = 1
    sys.exit(rc)


if __name__ == "__main__":
    main()

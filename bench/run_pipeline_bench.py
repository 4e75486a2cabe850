#!/usr/bin/env python3
"""Software pipelining (tl::num_stages) beside Triton's: a streaming reduction over K blocks.

y[m] = sum over k of x[m, k], x bf16 [8192, 8192] (128 MiB, past the H100's L2), f32
sums; each program BLOCK_M = 16 rows, a loop over K in blocks of BLOCK_K = 256 columns,
4 warps, num_stages 1..4 in both:

  tl      bench/pipeline_bench.cpp (tl-bench-pipeline): the loop into registers, and
          the block staged through a one-stage tl::shared buffer (which the pipeliner
          turns into num_stages stages filled by cp.async)
  Triton  the same kernel with tl.range(0, K, BLOCK_K, num_stages=S) (Triton's own
          pipeliner decides how: cp.async into shared memory on NVIDIA)

Every result is checked against torch's float64 row sums first; times are CUDA-event
medians (triton.testing.do_bench, return_mode="median"; tl times batches with CUDA
events, also medians). GB/s counts x read once and y written.

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_pipeline_bench.py --tl /tmp/tl/bin/tl-bench-pipeline --out $OUT
Writes pipeline.csv, pipeline.md and tl_pipeline.json to --out.
"""
import argparse, csv, json, os, subprocess

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

M, K, BLOCK_M, BLOCK_K, WARPS = 8192, 8192, 16, 256, 4


@triton.jit
def stream_row_sum(X, Y, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_K)
    base = X + (rows * K)[:, None]
    row_ok = (rows < M)[:, None]
    acc = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, num_stages=STAGES):
        c = k + cols
        v = tl.load(base + c[None, :], mask=row_ok & (c < K)[None, :], other=0.0)
        acc += tl.sum(v.to(tl.float32), 1)
    tl.store(Y + rows, acc, mask=rows < M)


def hashed_x(m, k):
    # tl-bench-pipeline's values: hash32 of the flat index, top 24 bits as [-1, 1)
    i = torch.arange(m * k, device="cuda", dtype=torch.int64) & 0xFFFFFFFF
    i ^= i >> 16
    i = (i * 0x7FEB352D) & 0xFFFFFFFF
    i ^= i >> 15
    i = (i * 0x2C1B3C6D) & 0xFFFFFFFF
    i ^= i >> 16
    u = ((i >> 8) - (1 << 23)).to(torch.float32) * 2.0**-23
    return u.to(torch.bfloat16).view(m, k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    if a.tl:
        js = os.path.join(a.out, "tl_pipeline.json")
        subprocess.run([a.tl, "--json", js], check=True)
        for r in json.load(open(js))["runs"]:
            rows.append({"impl": "tl " + r["variant"], "num_stages": r["num_stages"], "ms": r["ms"], "gbs": r["gbs"],
                         "ok": r["ok"]})
    x = hashed_x(M, K)
    want = x.double().sum(1)
    y = torch.empty(M, device="cuda", dtype=torch.float32)
    nbytes = 2.0 * M * K + 4.0 * M
    for s in range(1, 5):
        run = lambda: stream_row_sum[(triton.cdiv(M, BLOCK_M),)](x, y, M, K, BLOCK_M, BLOCK_K, s, num_warps=WARPS,
                                                                  num_stages=s)
        y.fill_(-1.25e-9)
        run()
        torch.cuda.synchronize()
        ok = bool(((y.double() - want).abs() / (1 + want.abs())).max() < 1e-4)
        ms = do_bench(run, warmup=25, rep=200, return_mode="median")
        rows.append({"impl": "triton", "num_stages": s, "ms": ms, "gbs": nbytes / ms / 1e6, "ok": ok})
        print(f"triton    num_stages={s} {ms:8.4f} ms {nbytes / ms / 1e6:7.0f} GB/s  {'ok' if ok else 'WRONG'}",
              flush=True)
    with open(os.path.join(a.out, "pipeline.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["impl", "num_stages", "ms", "gbs", "ok"])
        w.writeheader()
        w.writerows(rows)
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    with open(os.path.join(a.out, "pipeline.md"), "w") as f:
        f.write(f"Streaming row sum, x bf16 [{M}, {K}], [{BLOCK_M}, {BLOCK_K}] blocks, {WARPS} warps: "
                "GB/s (CUDA-event medians)\n\n| num_stages | " + " | ".join(impls) + " |\n|" + " --- |" * (len(impls) + 1) + "\n")
        for s in range(1, 5):
            cells = []
            for i in impls:
                r = next(r for r in rows if r["impl"] == i and r["num_stages"] == s)
                cells.append(f"{r['gbs']:.0f}" + ("" if r["ok"] else " WRONG"))
            f.write(f"| {s} | " + " | ".join(cells) + " |\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for i in impls:
            pts = sorted((r["num_stages"], r["gbs"]) for r in rows if r["impl"] == i)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=i)
        ax.set_xlabel("num_stages")
        ax.set_ylabel("GB/s (median)")
        ax.set_xticks([1, 2, 3, 4])
        ax.set_title(f"Streaming row sum [{M}x{K}] bf16, H100")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(a.out, "pipeline.png"), dpi=120)
    except ImportError:
        print("(matplotlib missing: no plot)")
    if not all(r["ok"] for r in rows):
        raise SystemExit("a result was wrong")


if __name__ == "__main__":
    main()

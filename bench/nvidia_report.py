#!/usr/bin/env python3
"""NVIDIA resource reports side by side: tl's RMSNorm kernels against Triton's twins.

For each design shape, tl's sample compiles both directions for the GPU with its own
heuristic (rmsnorm::choose) and loads them there (`tl-sample-rmsnorm --target sm_90
--report`): registers per thread, spill stores/loads and local memory come from the CUDA
driver and ptxas's JIT log (runtime/cuda_device.cpp). Triton's twins from
run_gpu_bench.py are compiled for the same configuration (BLOCK, rows per program,
num_warps; the backward pipelined (num_stages 2, Triton's twin with the next block's loads written out) or chunked) and launched once; their CompiledKernel gives
n_regs and n_spills (= local memory / 4, from the same driver attributes).

On the GPU machine, from the unpacked bundle (bench/nvidia_report.sh does this):
    python3 bench/nvidia_report.py --tl /tmp/tl/bin/tl-sample-rmsnorm --out $OUT
Writes nvidia_report.md and nvidia_report.json to --out.
"""
import argparse, json, os, subprocess, sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_gpu_bench import rms_fwd_row, rms_fwd_packed, rms_bwd, rms_bwd_prefetch, rms_bwd_chunked  # noqa: E402

SHAPES = [(32768, 128), (65536, 128), (8192, 4096), (4096, 8192), (16384, 2048), (2048, 16384), (1024, 32768)]


def tl_reports(sample, target, rows, cols):
    """The sample's report blocks (one per direction) as dicts of ints and strings."""
    out = subprocess.run([sample, "--target", target, "--report", "--rows", str(rows), "--cols", str(cols)],
                         check=True, capture_output=True, text=True).stdout
    blocks = []
    for text in out.strip().split("\n\n"):
        b = {}
        for line in text.splitlines():
            k, _, v = line.partition(": ")
            b[k] = int(v) if v.lstrip("-").isdigit() else v
        blocks.append(b)
    return blocks


def triton_report(b, rows, cols):
    """Compiles and launches Triton's twin of tl's kernel `b` (same BLOCK, R, num_warps)."""
    M, N = rows, cols
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    w = torch.ones(N, device="cuda", dtype=torch.bfloat16)
    rstd = torch.ones(M, device="cuda", dtype=torch.float32)
    B, R, nw, P = b["block"], b["rows_per_pid"], b["num_warps"], b["programs"]
    dwp = torch.empty(P, N, device="cuda", dtype=torch.float32)
    if "fwd" in b["kernel"]:
        if R == 1:
            k = rms_fwd_row[(M,)](x, y, w, N, 1e-6, BLOCK=B, num_warps=nw)
            name = f"rms_fwd_row BLOCK={B}"
        else:
            k = rms_fwd_packed[(M // R,)](x, y, w, M, N, 1e-6, BLOCK=B, R=R, num_warps=nw)
            name = f"rms_fwd_packed BLOCK={B} R={R}"
    elif b["chunk"] > 0:
        k = rms_bwd_chunked[(P,)](x, x, w, rstd, y, dwp, M, N, CHUNK=b["chunk"], num_warps=nw)
        name = f"rms_bwd_chunked CHUNK={b['chunk']}"
    elif b.get("num_stages", 1) > 1:  # tl's loop at num_stages 2: Triton's twin with the loads written ahead
        k = rms_bwd_prefetch[(P,)](x, x, w, rstd, y, dwp, M, N, BLOCK=B, R=R, num_warps=nw)
        name = f"rms_bwd_prefetch BLOCK={B} R={R}"
    else:
        k = rms_bwd[(P,)](x, x, w, rstd, y, dwp, M, N, BLOCK=B, R=R, num_warps=nw)
        name = f"rms_bwd BLOCK={B} R={R}"
    torch.cuda.synchronize()
    return {"name": name, "n_regs": k.n_regs, "n_spills": k.n_spills, "shared": k.metadata.shared}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, help="tl-sample-rmsnorm")
    ap.add_argument("--out", default=".")
    ap.add_argument("--target", default="sm_90")
    a = ap.parse_args()
    rows = []
    for M, N in SHAPES:
        for b in tl_reports(a.tl, a.target, M, N):
            t = triton_report(b, M, N)
            rows.append({"shape": f"{M}x{N}", "tl": b, "triton": t})
            print(f"{M}x{N} {b['kernel']}: tl regs {b.get('regs')} spill stores {b.get('spill_store_bytes')} B "
                  f"local {b.get('local_bytes')} B | triton {t['name']}: n_regs {t['n_regs']} n_spills {t['n_spills']}",
                  flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "nvidia_report.json"), "w") as f:
        json.dump(rows, f, indent=1)
    gpu = torch.cuda.get_device_name()
    lines = [f"# NVIDIA resource reports, RMSNorm bf16: tl against Triton {triton.__version__} ({gpu})", "",
             "tl: `tl-sample-rmsnorm --target sm_90 --report` (the driver's attributes and ptxas's JIT log after "
             "loading). Triton: its twin from run_gpu_bench.py at tl's configuration; n_spills is Triton's "
             "(local memory / 4). tl's spills column is spill stores / 4 and local memory / 4 "
             "(the latter is Triton's definition).", "",
             "| shape | tl kernel | BLOCK | R | warps | tl regs | tl spills (stores/4, local/4) | tl shared (static+dyn) "
             "| Triton kernel | Triton n_regs | Triton n_spills | Triton shared |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        b, t = r["tl"], r["triton"]
        q = lambda k: "-" if b.get(k) is None else b[k] // 4
        lines.append(f"| {r['shape']} | {b['kernel']} | {b['block']} | {b['rows_per_pid']} | {b['num_warps']} | "
                     f"{b.get('regs', '-')} | {q('spill_store_bytes')}, {q('local_bytes')} | "
                     f"{b.get('static_shared_bytes', '-')}+{b.get('dynamic_shared_bytes', '-')} | {t['name']} | "
                     f"{t['n_regs']} | {t['n_spills']} | {t['shared']} |")
    with open(os.path.join(a.out, "nvidia_report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

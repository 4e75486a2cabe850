#!/usr/bin/env python3
"""MoE top-k routing over [32768 tokens, E experts] f32 logits, E = 64 and 128, k = 8: tl
and Triton in one run (issue 41).

Per token: the k largest logits, largest first, their expert ids (equal logits: the smaller
id first), and the softmax of the kept k (tl.exp) as routing weights. Both sides run
BLOCK_T = 2048 / E tokens a program at 4 warps (bench/moe_topk_bench.cpp,
tl-bench-moe-topk, whose JSON says its block and warps).

Triton's tl.topk gives values only, so its kernel does what Triton users do for the ids:
each logit's order-preserving 32-bit key and (E - 1 - expert) packed into an int64, the
packed keys through tl.topk, both unpacked (exact: the logits come back bit for bit).
tl's is tl::topk(x, k, tl::return_indices): the same bitonic top-k as Triton's tl.topk
(chunks of k sorted, then halved with a max each step), (logit, expert) packed into one
64-bit key by tl's lowering, the logits loaded with a thread's registers along the experts.

The inputs are the tl benchmark's (a 32-bit hash of the index, to [-8, 8) in steps of
2^-10, so rows have ties); each result is checked against torch (a stable sort of each row,
the softmax in float64) before it is timed. GB/s counts 4 E + 8 k bytes a token; CUDA-event
medians (triton.testing.do_bench, return_mode="median"; tl: CUDA events around batches).

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_moe_topk_bench.py --tl /tmp/tl/bin/tl-bench-moe-topk --out $OUT
Writes moe_topk.csv, moe_topk.md and tl_moe_topk.json to --out. Without --tl, only Triton
runs.
"""
import argparse, csv, json, os, subprocess, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

TOKENS, K = 32768, 8
EXPERTS = (64, 128)
LOGITS_PER_PROGRAM, NUM_WARPS = 2048, 4


@triton.jit
def moe_topk_route(logits_ptr, weights_ptr, ids_ptr, T, E: tl.constexpr, K: tl.constexpr, BLOCK_T: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.arange(0, E)
    x = tl.load(logits_ptr + rows[:, None] * E + cols[None, :], mask=rows[:, None] < T, other=float("-inf"))
    # order-preserving int32 of the float (negative floats: the magnitude bits flipped),
    # the expert in the low half so that equal logits keep the smaller id first
    b = x.to(tl.int32, bitcast=True)
    key = tl.where(b >= 0, b, b ^ 0x7FFFFFFF).to(tl.int64)
    packed = (key << 32) | (E - 1 - cols[None, :]).to(tl.int64)
    top = tl.topk(packed, K)  # [BLOCK_T, K], largest first
    expert = (E - 1 - (top & 0xFFFFFFFF)).to(tl.int32)
    hi = (top >> 32).to(tl.int32)
    v = tl.where(hi >= 0, hi, hi ^ 0x7FFFFFFF).to(tl.float32, bitcast=True)
    e = tl.exp(v - tl.max(v, 1, keep_dims=True))
    w = e / tl.sum(e, 1, keep_dims=True)
    out = rows[:, None] * K + tl.arange(0, K)[None, :]
    tl.store(weights_ptr + out, w, mask=rows[:, None] < T)
    tl.store(ids_ptr + out, expert, mask=rows[:, None] < T)


def hashed_logits(n):
    # bench/moe_topk_bench.cpp's logits(): tlbench::hash32 of i, (h >> 18) - 2^13, times 2^-10
    x = torch.arange(n, device="cuda", dtype=torch.int64) & 0xFFFFFFFF
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x = x ^ (x >> 15)
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x = x ^ (x >> 16)
    return ((x >> 18) - (1 << 13)).float() * 2.0 ** -10


def check(w, ids, x, E, name):
    order = torch.sort(x.double(), dim=1, descending=True, stable=True)
    want_ids = order.indices[:, :K].to(torch.int32)
    v = order.values[:, :K]
    e = torch.exp(v - v[:, :1])
    want_w = e / e.sum(1, keepdim=True)
    bad_ids = (ids != want_ids).sum().item()
    bad_w = ((w.double() - want_w).abs() > want_w * 2.0 ** -17).sum().item()
    assert bad_ids == 0 and bad_w == 0, (name, E, bad_ids, bad_w)


def triton_side():
    res = {}
    for E in EXPERTS:
        block_t = LOGITS_PER_PROGRAM // E
        x = hashed_logits(TOKENS * E).view(TOKENS, E)
        w = torch.full((TOKENS, K), float("nan"), device="cuda")
        ids = torch.full((TOKENS, K), -7, device="cuda", dtype=torch.int32)
        grid = (triton.cdiv(TOKENS, block_t),)
        fn = lambda: moe_topk_route[grid](x, w, ids, TOKENS, E=E, K=K, BLOCK_T=block_t, num_warps=NUM_WARPS)
        fn()
        torch.cuda.synchronize()
        check(w, ids, x, E, "triton")
        ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
        nbytes = TOKENS * (4 * E + 8 * K)
        name = f"topk{K}_of_{E}"
        res[name] = {"ms": ms, "gbs": nbytes / ms / 1e6}
        print(f"triton {name:<14} {ms:8.4f} ms {nbytes / ms / 1e6:7.0f} GB/s  ok", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-moe-topk (else Triton only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    tlr = {}
    if a.tl:
        tl_json = os.path.join(a.out, "tl_moe_topk.json")
        subprocess.run([a.tl, "--json", tl_json, "--repeats", str(a.repeats), "--tokens", str(TOKENS), "--k", str(K),
                        "--experts", ",".join(map(str, EXPERTS))], check=True)
        tlj = json.load(open(tl_json))
        assert tlj["logits_per_program"] == LOGITS_PER_PROGRAM and tlj["num_warps"] == NUM_WARPS, tlj
        tlr = {k["name"]: k for k in tlj["kernels"]}
    tri = triton_side()
    lines = [f"# MoE top-{K} routing, {TOKENS} tokens, f32 logits: {props.name}, {time.strftime('%Y-%m-%d')}", "",
             f"{LOGITS_PER_PROGRAM} logits a program (BLOCK_T = {LOGITS_PER_PROGRAM} / E), {NUM_WARPS} warps, both "
             f"sides; GB/s of 4 E + 8 k bytes a token, CUDA-event medians. tl: tl::topk with return_indices "
             "(bitonic top-k, packed by the lowering); Triton: tl.topk of (logit, expert) packed in int64.", "",
             "| kernel | tl GB/s | Triton GB/s | tl / Triton | tl ms | Triton ms | tl checked |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    with open(os.path.join(a.out, "moe_topk.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["kernel", "tl_gbs", "triton_gbs", "tl_over_triton", "tl_ms", "triton_ms", "tl_ok"])
        for name, r in tri.items():
            t = tlr.get(name, {})
            nan = float("nan")
            ratio = t.get("gbs", nan) / r["gbs"]
            wr.writerow([name, round(t.get("gbs", nan)), round(r["gbs"]), round(ratio, 3), t.get("ms", ""), r["ms"],
                         t.get("ok", "")])
            lines.append(f"| {name} | {t.get('gbs', nan):.0f} | {r['gbs']:.0f} | {ratio:.2f} | {t.get('ms', nan):.4f} | "
                         f"{r['ms']:.4f} | {t.get('ok', '-')} |")
    open(os.path.join(a.out, "moe_topk.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

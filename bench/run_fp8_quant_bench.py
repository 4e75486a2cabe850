#!/usr/bin/env python3
"""FP8 row-wise quantization with a transpose (seed 000): tl, Triton and torch in one run.

W bf16 [E, K, N] -> FP8 W^T [E, N, K] (e4m3fn) and f32 scales [E, N], scale = amax over
K of |W| / 448, on the MoE shapes (16, 5120, 8192), (64, 2048, 1408), (1, 8192, 8192).

  tl      samples/fp8_quant through bench/fp8_quant_bench.cpp (tl-bench-fp8-quant)
  Triton  the same algorithm written in Triton below: the same three launches (zero the
          [E, N] workspace, amax by i32 atomic_max on the bits of |w|, cast + transpose),
          the same tiles and warps as tl's (its JSON says which: [64, 64], 4 warps),
          sem="relaxed" and sem="acq_rel"; and, relaxed, with torchao's [128, 128] tiles,
          Triton's best of the two on the H100
  torch   eager: amax, divide, cast, transpose (w.abs().amax(1), w / scale, .to(fp8),
          .transpose(1, 2).contiguous())

Every result is checked against a float64 reference first (scales bit for bit, values
within FP8 rounding); times are CUDA-event medians (triton.testing.do_bench,
return_mode="median"; the tl side times batches with CUDA events, also medians).
GB/s counts the same bytes for all three: W read twice (by both kernels), the FP8
values and the scales written, (2 + 2 + 1) * E*K*N + 4 * E*N.

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_fp8_quant_bench.py --tl /tmp/tl/bin/tl-bench-fp8-quant --out $OUT
Writes fp8_quant.csv, fp8_quant.md and tl_fp8_quant.json to --out. Without --tl, only
Triton and torch run.
"""
import argparse, csv, json, os, subprocess, sys, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

SHAPES = [(16, 5120, 8192), (64, 2048, 1408), (1, 8192, 8192)]
# samples/fp8_quant/fp8_quant.hpp Config (taken from tl's JSON when --tl is given);
# Triton also runs torchao's [128, 128] tiles, its own best case on the H100
TILES = {"tl": (64, 64, 4), "torchao": (128, 128, 4)}
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
FLOOR_BITS, FLT_MAX_BITS, INF_BITS = 0x2B8CBCCC, 0x7F7FFFFF, 0x7F800000  # 1e-12f, FLT_MAX, +inf

@triton.jit
def fp8_amax_zero(A, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(A + i, tl.zeros([BLOCK], dtype=tl.int32), mask=i < n)


@triton.jit
def fp8_rowwise_amax(W, A, K, N, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr, SEM: tl.constexpr):
    # tl's fp8_rowwise_amax: a [BLOCK_K, BLOCK_N] tile's column maxima of |w|, as the
    # bits of non-negative f32 (they order like the floats; NaN above inf), folded into
    # the [E, N] workspace with an i32 atomic max
    e = tl.program_id(2).to(tl.int64)
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    nm = n < N
    m = (k < K)[:, None] & nm[None, :]
    x = tl.load(W + e * K * N + (k[:, None] * N + n[None, :]), mask=m, other=0.0)
    bits = tl.abs(x.to(tl.float32)).to(tl.int32, bitcast=True)
    tl.atomic_max(A + e * N + n, tl.max(bits, 0), mask=nm, sem=SEM)


@triton.jit
def fp8_rowwise_cast_transpose(W, A, Q, S, K, N, FP8_MAX: tl.constexpr, BLOCK_K: tl.constexpr,
                               BLOCK_N: tl.constexpr):
    # tl's fp8_rowwise_cast_transpose: clamp the amax bits (inf -> FLT_MAX, below the
    # floor -> floor, NaN kept), scale, convert, transpose, store along K
    e = tl.program_id(2).to(tl.int64)
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    nm = n < N
    km = k < K
    bits = tl.load(A + e * N + n, mask=nm, other=0)
    bits = tl.where(bits == 0x7F800000, 0x7F7FFFFF, tl.maximum(bits, 0x2B8CBCCC))
    a = bits.to(tl.float32, bitcast=True)
    # IEEE divisions, as tl's (Triton's `/` on f32 is the approximate div.full.f32)
    inv = tl.math.div_rn(tl.full([BLOCK_N], FP8_MAX, tl.float32), a)
    tl.store(S + e * N + n, tl.math.div_rn(a, tl.full([BLOCK_N], FP8_MAX, tl.float32)),
             mask=nm & (tl.program_id(1) == 0))
    m = km[:, None] & nm[None, :]
    x = tl.load(W + e * K * N + (k[:, None] * N + n[None, :]), mask=m, other=0.0)
    v = (x.to(tl.float32) * inv[None, :]).to(Q.dtype.element_ty)
    tl.store(Q + e * N * K + (n[:, None] * K + k[None, :]), tl.trans(v), mask=nm[:, None] & km[None, :])


def triton_zero_amax(w, amax, sem, tiles):
    E, K, N = w.shape
    BK, BN, warps = tiles
    fp8_amax_zero[(triton.cdiv(E * N, 1024),)](amax, E * N, BLOCK=1024, num_warps=4)
    grid = (triton.cdiv(N, BN), triton.cdiv(K, BK), E)
    fp8_rowwise_amax[grid](w, amax, K, N, BLOCK_K=BK, BLOCK_N=BN, SEM=sem, num_warps=warps)


def triton_cast(w, amax, q, s, tiles):
    E, K, N = w.shape
    BK, BN, warps = tiles
    grid = (triton.cdiv(N, BN), triton.cdiv(K, BK), E)
    fp8_rowwise_cast_transpose[grid](w, amax, q, s, K, N, FP8_MAX=FP8_MAX, BLOCK_K=BK, BLOCK_N=BN, num_warps=warps)


def triton_quant(w, amax, q, s, sem, tiles):
    triton_zero_amax(w, amax, sem, tiles)
    triton_cast(w, amax, q, s, tiles)


def torch_quant(w):
    # the textbook way: amax over K, divide, cast (torch's cast to FP8 is not saturating:
    # clamp first), transpose
    amax = w.abs().amax(dim=1).float().clamp(min=1e-12)
    scale = amax / FP8_MAX
    q = (w.float() / scale[:, None, :]).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    return q.transpose(1, 2).contiguous(), scale


def weights(E, K, N):
    # tl's benchmark's W, element for element (bench/fp8_quant_bench.cpp: weights): a
    # 32-bit hash of the index, in int64 without overflow, to [-1, 1), times 2^-6 .. 2^6
    # by column
    w = torch.empty(E, K, N, device="cuda", dtype=torch.bfloat16)
    m = 0xFFFFFFFF
    n = torch.arange(N, device="cuda")
    for e in range(E):
        x = (torch.arange(e * K * N, (e + 1) * K * N, device="cuda", dtype=torch.int64) & m).view(K, N)
        x = x ^ (x >> 16)
        x = (x * 0x7FEB352D) & m
        x = x ^ (x >> 15)
        x = (x * 0x2C1B3C6D) & m
        x = x ^ (x >> 16)
        u = ((x >> 8) - (1 << 23)).float() * 2.0 ** -23
        w[e] = (u * torch.exp2(((n * 7 + e) % 13 - 6).float())[None, :]).to(torch.bfloat16)
    return w


def check(w, q, s, name, exact_scales=True):
    # scales bit for bit against the float64 reference (the correctly rounded f32 of the
    # quotient; within an f32 rounding for torch, whose division by a scalar multiplies by
    # its reciprocal); values within FP8 rounding of the exact quotient (e4m3: half a step
    # is 2^-4 relative; subnormal steps 2^-9), with room for the f32 roundings
    E, K, N = w.shape
    amax = w.abs().amax(dim=1).double().clamp(min=float(torch.tensor(1e-12, dtype=torch.float32)))
    want_s = (amax / FP8_MAX).float()
    if exact_scales:
        assert torch.equal(s, want_s), (name, (s != want_s).sum().item())
    else:
        assert torch.allclose(s, want_s, rtol=2.0 ** -22, atol=0), (name, (s != want_s).sum().item())
    inv = FP8_MAX / amax
    for e in range(E):  # an expert at a time: float64 copies of a whole W would not fit
        x = (w[e].double() * inv[e][None, :]).t()  # [N, K]
        got = q[e].double()
        tol = (x.abs() * 2.0 ** -4 * (1 + 2.0 ** -20)).clamp(min=2.0 ** -10 * (1 + 2.0 ** -10))
        bad = ((got - x).abs() > tol).sum().item()
        assert bad == 0, (name, e, bad)


def checksum(t):
    # sum of byte_i * (i mod 65521 + 1), as tl's benchmark (bench/fp8_quant_bench.cpp)
    b = t.contiguous().view(torch.uint8).reshape(-1)
    total, step = 0, 1 << 26
    for i in range(0, b.numel(), step):
        c = b[i:i + step].to(torch.int64)
        idx = torch.arange(i, i + c.numel(), device=b.device, dtype=torch.int64)
        total += int((c * (idx % 65521 + 1)).sum().item())
    return total % (1 << 64)


def gbs(nbytes, ms):
    return nbytes / ms / 1e6


def bench(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")


def triton_torch_side(shapes):
    rows = []
    for E, K, N in shapes:
        w = weights(E, K, N)
        nbytes = (2 + 2 + 1) * E * K * N + 4 * E * N
        amax = torch.empty(E, N, device="cuda", dtype=torch.int32)
        q = torch.empty(E, N, K, device="cuda", dtype=FP8)
        s = torch.empty(E, N, device="cuda", dtype=torch.float32)
        res = {"E": E, "K": K, "N": N, "bytes": nbytes, "checksum_w": checksum(w)}
        for sem in ("relaxed", "acq_rel"):
            q.view(torch.uint8).fill_(0xAB)
            s.fill_(float("nan"))
            triton_quant(w, amax, q, s, sem, TILES["tl"])
            torch.cuda.synchronize()
            check(w, q, s, f"triton {sem}")
            if sem == "relaxed":
                res["triton_checksum_q"], res["triton_checksum_s"] = checksum(q), checksum(s)
            res[f"triton_{sem}"] = gbs(nbytes, bench(lambda: triton_quant(w, amax, q, s, sem, TILES["tl"])))
            res[f"triton_{sem}_amax_ms"] = bench(lambda: triton_zero_amax(w, amax, sem, TILES["tl"]))
        res["triton_cast_ms"] = bench(lambda: triton_cast(w, amax, q, s, TILES["tl"]))
        # torchao's tiles, relaxed
        q.view(torch.uint8).fill_(0xAB)
        triton_quant(w, amax, q, s, "relaxed", TILES["torchao"])
        torch.cuda.synchronize()
        check(w, q, s, "triton, torchao's tiles")
        res["triton_torchao_tiles"] = gbs(nbytes, bench(lambda: triton_quant(w, amax, q, s, "relaxed", TILES["torchao"])))
        del q, s, amax
        tq, ts = torch_quant(w)
        torch.cuda.synchronize()
        check(w, tq, ts, "torch", exact_scales=False)
        del tq, ts
        res["torch"] = gbs(nbytes, bench(lambda: torch_quant(w)))
        rows.append(res)
        print(f"triton/torch E={E:<3} K={K:<5} N={N:<5} triton relaxed {res['triton_relaxed']:6.0f}  "
              f"acq_rel {res['triton_acq_rel']:6.0f}  torchao's tiles {res['triton_torchao_tiles']:6.0f}  "
              f"torch {res['torch']:6.0f} GB/s", flush=True)
        del w
        torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-fp8-quant (else Triton and torch only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--shape", action="append", help="E,K,N (repeatable; default: the three MoE shapes)")
    a = ap.parse_args()
    shapes = [tuple(int(v) for v in x.split(",")) for x in a.shape] if a.shape else SHAPES
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    tlr = None
    if a.tl:
        tl_json = os.path.join(a.out, "tl_fp8_quant.json")
        args = [a.tl, "--json", tl_json, "--repeats", str(a.repeats)]
        for E, K, N in shapes:
            args += ["--shape", f"{E},{K},{N}"]
        subprocess.run(args, check=True)
        tlj = json.load(open(tl_json))
        tlr = {(t["E"], t["K"], t["N"]): t for t in tlj["shapes"]}
        c = tlj["config"]
        TILES["tl"] = (c["block_k"], c["block_n"], c["num_warps"])
    tri = triton_torch_side(shapes)
    write_tables(a.out, tri, tlr, props.name)


def write_tables(out, tri, tlr, device_name):
    nan = float("nan")

    def num(v, nd=0):  # a missing figure (no --tl) stays empty in the CSV
        return "" if v != v else round(v, nd) if nd else round(v)

    head = ["E", "K", "N", "tl_relaxed_gbs", "tl_acq_rel_gbs", "triton_relaxed_gbs", "triton_acq_rel_gbs", "torch_gbs",
            "triton_torchao_tiles_gbs", "tl_over_triton_relaxed", "tl_amax_ms_relaxed", "tl_amax_ms_acq_rel", "tl_cast_ms",
            "triton_amax_ms_relaxed", "triton_amax_ms_acq_rel", "triton_cast_ms", "same_bytes_as_triton", "tl_ok"]
    lines = ["| E, K, N | tl relaxed | tl acq_rel | Triton relaxed | Triton acq_rel | torch | Triton, torchao's tiles | "
             "tl / Triton (relaxed) | "
             "amax kernel ms, tl relaxed / acq_rel | Triton | cast kernel ms, tl / Triton | same bytes as Triton |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with open(os.path.join(out, "fp8_quant.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(head)
        for r in tri:
            t = tlr.get((r["E"], r["K"], r["N"])) if tlr else None
            tr, ta = (t["relaxed"], t["acq_rel"]) if t else ({}, {})
            # the same inputs (W), then the same outputs: values, scales
            same = "" if t is None else "W differs" if t["checksum_w"] != r["checksum_w"] else ", ".join(
                [what for what in ("q", "s") if t[f"checksum_{what}"] != r[f"triton_checksum_{what}"]])
            same = "yes" if t is not None and not same else f"no ({same})" if same else "-"
            g = lambda d, k: d.get(k, nan)
            ratio = g(tr, "gbs") / r["triton_relaxed"]
            wr.writerow([r["E"], r["K"], r["N"], num(g(tr, "gbs")), num(g(ta, "gbs")), num(r["triton_relaxed"]),
                         num(r["triton_acq_rel"]), num(r["torch"]), num(r["triton_torchao_tiles"]), num(ratio, 3), num(g(tr, "amax_ms"), 4),
                         num(g(ta, "amax_ms"), 4), num(g(tr, "cast_ms"), 4), num(r["triton_relaxed_amax_ms"], 4),
                         num(r["triton_acq_rel_amax_ms"], 4), num(r["triton_cast_ms"], 4), same,
                         bool(t) and tr["ok"] and ta["ok"]])
            lines.append(f"| {r['E']}, {r['K']}, {r['N']} | {g(tr, 'gbs'):.0f} | {g(ta, 'gbs'):.0f} | "
                         f"{r['triton_relaxed']:.0f} | {r['triton_acq_rel']:.0f} | {r['torch']:.0f} | "
                         f"{r['triton_torchao_tiles']:.0f} | {ratio:.2f} | "
                         f"{g(tr, 'amax_ms'):.3f} / {g(ta, 'amax_ms'):.3f} | "
                         f"{r['triton_relaxed_amax_ms']:.3f} / {r['triton_acq_rel_amax_ms']:.3f} | "
                         f"{g(tr, 'cast_ms'):.3f} / {r['triton_cast_ms']:.3f} | {same} |")
    summary = [f"# FP8 row-wise quantization with a transpose: {device_name}, {time.strftime('%Y-%m-%d')}", "",
               "W bf16 [E, K, N] -> e4m3fn W^T [E, N, K] + f32 scales [E, N]. GB/s of (2 + 2 + 1) * E*K*N + 4 * E*N "
               "bytes (W read by both kernels, FP8 and scales written), CUDA-event medians; the amax kernel's "
               "times include the workspace fill. tl and Triton: [BLOCK_K, BLOCK_N] = "
               f"{list(TILES['tl'][:2])}, {TILES['tl'][2]} warps; \"torchao's tiles\": Triton with [128, 128].", ""]
    summary += lines
    open(os.path.join(out, "fp8_quant.md"), "w").write("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()

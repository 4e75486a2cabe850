#!/usr/bin/env python3
"""FP8 split-K decode attention: tl's samples/fp8_decode beside the anchor's Triton kernel
and torch's bf16 SDPA, against the bandwidth floor.

Shapes (B, S, Hq, Hkv, D): the issue's four, (1, 32768, 64, 8, 128), (16, 8192, 64, 8, 128),
(16, 16384, 32, 8, 128), (64, 4096, 32, 8, 128), and a ragged batch of 16 sequences of
(i * 7919) % 16385 tokens (0 to 16384) at S_max 16384, Hq 32, Hkv 8, D 128.

  tl      bench/fp8_decode_bench.cpp (tl-bench-fp8-decode): the sample's configuration and
          split count for the device, checked against its float64 reference, timed as
          do_bench times (L2 flushed before each call, CUDA events around it, median)
  The flush (--flush, every side alike): a 256 MiB read by default; "write" is do_bench's
          own zeroing, which leaves ~50 MB of dirty lines in the H100's L2 for the timed
          call to write back (4.5-7.4 us on the H100, charged to whichever kernel runs next).
  Triton  ../shared/anchors/fp8_decode_anchor.py's kernels (bench/fp8_decode_triton.py: best
          of its five configurations, its split count); the four shapes run the anchor's
          kernel as it is, the ragged batch loads each batch's length from a seq_lens tensor.
          Its combine divides 0 by 0 for an empty sequence, so the ragged batch's error
          leaves out batch 0 (length 0).
  torch   scaled_dot_product_attention on the dequantized cache in bf16 (enable_gqa), the
          anchor's comparison; not on the ragged batch (SDPA has no per-batch lengths)

The floor: bytes of K, V, their scales (of the tokens attended) and Q and the output over
the device-to-device copy bandwidth (torch's copy_ of 1 GiB, bytes read + written, the
anchor's measure). Writes fp8_decode.json, fp8_decode.md and fp8_decode.png to --out.

    python3 bench/run_fp8_decode_bench.py --tl /tmp/tl/bin/tl-bench-fp8-decode --out $OUT
"""
import argparse, json, math, os, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = [(1, 32768, 64, 8, 128), (16, 8192, 64, 8, 128), (16, 16384, 32, 8, 128), (64, 4096, 32, 8, 128)]
RAGGED = (16, 16384, 32, 8, 128)
RAGGED_LENS = [(i * 7919) % 16385 for i in range(16)]
ANCHOR_CFGS = [(64, 4), (64, 2), (128, 4), (32, 4), (64, 1)]  # BLOCK_N, num_warps


def run_tl(path, extra):
    p = subprocess.run([path] + extra, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"tl-bench-fp8-decode failed ({p.returncode})")
    return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


def timer(flush):
    """Median microseconds of fn() as do_bench times it (warm-up, CUDA events around each
    call alone), the L2 flushed before each call by reading 256 MiB (flush "read") or by
    writing it as do_bench does ("write": the L2 is then full of dirty lines that the timed
    call writes back as its reads evict them)."""
    import torch
    buf = torch.ones(1 << 26, dtype=torch.int32, device="cuda")

    def run(fn, reps=200, warmup=25):
        for _ in range(warmup):
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for s, e in ev:
            if flush == "write":
                buf.zero_()
            else:
                buf.sum()
            s.record(); fn(); e.record()
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in ev)
        return 1e3 * t[len(t) // 2]
    return run


def run_torch_side(rows, flush):
    import torch, triton
    from triton.testing import do_bench
    torch.manual_seed(0)
    dev = "cuda"
    timed = timer(flush)

    from fp8_decode_triton import decode_partial, decode_combine

    a = torch.empty(1 << 30, dtype=torch.uint8, device=dev); bb = torch.empty_like(a)
    copy = 2 * a.numel() / do_bench(lambda: bb.copy_(a), warmup=50, rep=300, return_mode="median") / 1e6
    del a, bb
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out_rows = []
    cases = [(s, None) for s in SHAPES] + [(RAGGED, RAGGED_LENS)]
    for (B, S, HQ, HKV, D), lens in cases:
        G = HQ // HKV; BM = max(16, triton.next_power_of_2(G))
        lens_t = torch.tensor(lens if lens else [S] * B, dtype=torch.int32, device=dev)
        q = torch.randn(B, HQ, D, device=dev, dtype=torch.bfloat16)
        kf = torch.randn(B, S, HKV, D, device=dev); vf = torch.randn(B, S, HKV, D, device=dev)
        ks = kf.abs().amax(-1) / 448.0; vs = vf.abs().amax(-1) / 448.0
        k = (kf / ks[..., None]).to(torch.float8_e4m3fn); v = (vf / vs[..., None]).to(torch.float8_e4m3fn)
        del kf, vf
        kd = k.float() * ks[..., None]; vd = v.float() * vs[..., None]
        # float32 reference, batch by batch over each batch's own length
        ref = torch.zeros(B, HQ, D, device=dev)
        for b in range(B):
            L = int(lens_t[b])
            if L == 0:
                continue
            kr = kd[b, :L].permute(1, 0, 2).repeat_interleave(G, 0); vr = vd[b, :L].permute(1, 0, 2).repeat_interleave(G, 0)
            ref[b] = (torch.softmax((q[b].float()[:, None, :] @ kr.transpose(-1, -2)) / math.sqrt(D), -1) @ vr)[:, 0, :]
        SPLIT = triton.next_power_of_2(max(1, math.ceil(2 * sms / (B * HKV))))
        SPLIT = max(1, min(SPLIT, S // 256))
        out = torch.empty(B, HQ, D, device=dev, dtype=torch.bfloat16)
        bufs = [torch.empty(B * HKV * SPLIT * BM * D, device=dev), torch.empty(B * HKV * SPLIT * BM, device=dev),
                torch.empty(B * HKV * SPLIT * BM, device=dev)]
        def run(BN, nw):
            decode_partial[(B * HKV, SPLIT)](q, k, v, ks, vs, lens_t, *bufs, S, HKV, G, D, SPLIT, BM, BN, 1 / math.sqrt(D),
                                             lens is not None, num_warps=nw)
            decode_combine[(B * HKV, G)](*bufs, out, HKV, G, D, SPLIT, BM, num_warps=1)
        keep = lens_t > 0
        best = None
        for BN, nw in ANCHOR_CFGS:
            out.fill_(float("nan"))
            run(BN, nw); torch.cuda.synchronize()
            err = ((out.float()[keep] - ref[keep]).norm() / ref[keep].norm()).item()
            assert err < 2e-2, (BN, nw, err)
            t = timed(lambda: run(BN, nw))
            if best is None or t < best[0]:
                best = (t, f"BN{BN} w{nw} split{SPLIT}", err)
        nbytes = float(lens_t.sum().item()) * HKV * (2 * D + 8) + 2 * 2 * B * HQ * D
        row = {"B": B, "S": S, "Hq": HQ, "Hkv": HKV, "D": D, "ragged": lens is not None, "copy_gbps": copy,
               "bytes": nbytes, "floor_us": nbytes / (copy * 1e3), "triton_us": best[0], "triton_cfg": best[1],
               "triton_rel_err": best[2]}
        if lens is None:
            kb = kd.to(torch.bfloat16).permute(0, 2, 1, 3).contiguous(); vb = vd.to(torch.bfloat16).permute(0, 2, 1, 3).contiguous()
            qq = q[:, :, None, :]
            row["torch_sdpa_bf16_us"] = timed(
                lambda: torch.nn.functional.scaled_dot_product_attention(qq, kb, vb, enable_gqa=True))
            del kb, vb
        del k, v, kd, vd
        torch.cuda.empty_cache()
        out_rows.append(row)
        print(json.dumps(row), flush=True)
    return out_rows, copy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tl-args", default="", help="extra arguments for tl-bench-fp8-decode")
    ap.add_argument("--flush", default="read", choices=["read", "write"],
                    help="how the L2 is flushed before each timed call, for every side (see timer())")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tl_rows = run_tl(a.tl, ["--json", os.path.join(a.out, "tl_fp8_decode.json"), "--flush", a.flush] + a.tl_args.split())
    other, copy = run_torch_side(tl_rows, a.flush)
    table = []
    for t, o in zip(tl_rows, other):
        floor = o["bytes"] / (copy * 1e3)
        table.append({**o, "tl_us": t["us"], "tl_cfg": f"BN{t['block_n']} s{t['num_stages']} w{t['num_warps']} split{t['split']}",
                      "tl_ok": t["ok"], "tl_rel_err": t["rel_err"], "tl_pct_floor": 100 * floor / t["us"],
                      "triton_pct_floor": 100 * floor / o["triton_us"]})
    json.dump({"copy_gbps": copy, "flush": a.flush, "rows": table, "tl": tl_rows}, open(os.path.join(a.out, "fp8_decode.json"), "w"), indent=1)
    lines = [f"device-to-device copy: {copy:.0f} GB/s (bytes read + written); times are medians in microseconds, "
             f"the L2 flushed before each call by a 256 MiB {a.flush}", "",
             "| B, S, Hq, Hkv, D | floor | tl | tl % floor | tl config | Triton | Triton % floor | Triton config | torch SDPA bf16 | tl speed / Triton's |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in table:
        name = f"{r['B']}, {r['S']}, {r['Hq']}, {r['Hkv']}, {r['D']}" + (" ragged" if r["ragged"] else "")
        sd = f"{r['torch_sdpa_bf16_us']:.1f}" if "torch_sdpa_bf16_us" in r else "-"
        lines.append(f"| {name} | {r['floor_us']:.1f} | {r['tl_us']:.1f} | {r['tl_pct_floor']:.0f} % | {r['tl_cfg']} | "
                     f"{r['triton_us']:.1f} | {r['triton_pct_floor']:.0f} % | {r['triton_cfg']} | {sd} | "
                     f"{r['triton_us'] / r['tl_us']:.2f}x |")
    open(os.path.join(a.out, "fp8_decode.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 4))
        xs = range(len(table))
        ax.bar([x - 0.2 for x in xs], [r["tl_pct_floor"] for r in table], 0.4, label="tl")
        ax.bar([x + 0.2 for x in xs], [r["triton_pct_floor"] for r in table], 0.4, label="Triton (anchor kernel)")
        ax.axhline(80, color="k", ls="--", lw=1, label="80 % of the floor")
        ax.set_xticks(list(xs), [f"{r['B']}x{r['S']}\nHq{r['Hq']}" + (" ragged" if r["ragged"] else "") for r in table])
        ax.set_ylabel("% of the bandwidth floor"); ax.legend(); ax.set_title("FP8 split-K decode attention")
        fig.tight_layout(); fig.savefig(os.path.join(a.out, "fp8_decode.png"), dpi=120)
    except ImportError:
        print("matplotlib missing: no plot")


if __name__ == "__main__":
    main()

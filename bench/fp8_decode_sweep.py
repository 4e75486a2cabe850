#!/usr/bin/env python3
"""Configurations of samples/fp8_decode on the GPU (tl-bench-fp8-decode --config), on the
smallest and a large shape of the benchmark, then split counts around the chosen one
for the best configuration: how samples/fp8_decode/decode.hpp's NVIDIA defaults were
picked. Prints a table; writes fp8_decode_sweep.json to --out.

    python3 bench/fp8_decode_sweep.py --tl /tmp/tl/bin/tl-bench-fp8-decode --out $OUT \
        --configs 64,2,4,0 64,3,4,1 ...
"""
import argparse, json, os, subprocess

SHAPES = ["1,32768,64,8,128", "16,16384,32,8,128"]


def run(tl, cfg, split=None, repeats=30):
    cmd = [tl, "--config", cfg, "--repeats", str(repeats)]
    for s in SHAPES:
        cmd += ["--shape", s]
    if split:
        cmd += ["--split", str(split)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return {"cfg": cfg, "split": split, "error": p.stderr.strip()[-300:]}
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return {"cfg": cfg, "split": split, "rows": rows}


def line(r):
    if "error" in r:
        return f"{r['cfg']:>12} split {r['split'] or 'auto':>4}: {r['error']}"
    cells = [f"{x['us']:8.1f} us (split {x['split']}, {x['report'].get('regs', '?')} regs, ok {x['ok']})" for x in r["rows"]]
    return f"{r['cfg']:>12} split {r['split'] or 'auto':>4}: " + " | ".join(cells)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", nargs="+", required=True)
    ap.add_argument("--splits", nargs="*", type=float, default=[0.5, 2, 4], help="multiples of the chosen split")
    a = ap.parse_args()
    res = []
    print("shapes:", " / ".join(SHAPES), flush=True)
    for c in a.configs:
        r = run(a.tl, c)
        res.append(r)
        print(line(r), flush=True)
    ok = [r for r in res if "rows" in r]
    if ok:
        best = min(ok, key=lambda r: sum(x["us"] for x in r["rows"]))
        print("best:", best["cfg"], flush=True)
        base = [x["split"] for x in best["rows"]]
        for m in a.splits:
            # one split for both shapes: the multiple of the first shape's chosen split, then of the second's
            for i, b in enumerate(base):
                s = max(1, min(64, int(round(b * m))))
                r = run(a.tl, best["cfg"], s)
                r["for_shape"] = SHAPES[i]
                res.append(r)
                print(line(r), flush=True)
    json.dump(res, open(os.path.join(a.out, "fp8_decode_sweep.json"), "w"), indent=1)


if __name__ == "__main__":
    main()

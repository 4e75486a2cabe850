#!/usr/bin/env python3
"""FP8 decode attention on AMD without an AMD GPU: for every benchmark shape, the
configuration samples/fp8_decode chooses for gfx942 and gfx950 (its guardrail's
verdicts, VGPRs, spills, LDS, occupancy: `tl-sample-fp8_decode --target T --report`)
beside Triton's compile of the anchor kernel (../shared/anchors/fp8_decode_amd_static.py's
decode_partial, the 16-byte launch specialization) at the same BLOCK_M, BLOCK_N,
num_stages and num_warps, and at seed 002's tuple (16, 64, 2, 1).

    python3 bench/fp8_decode_amd_static.py --tl build/samples/tl-sample-fp8_decode --out DIR
    python3 bench/fp8_decode_amd_static.py --tl-json DIR/fp8_decode_amd.json --out DIR2   # Triton elsewhere

Writes fp8_decode_amd.md and fp8_decode_amd.json to --out. Without Triton (or without
its AMD backend) the Triton columns say so.
"""
import argparse, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPES = [(1, 32768, 64, 8, 128), (16, 8192, 64, 8, 128), (16, 16384, 32, 8, 128), (64, 4096, 32, 8, 128),
          (16, 8192, 64, 8, 64), (16, 8192, 64, 8, 256)]
SEED = (64, 2, 1)  # BLOCK_N, num_stages, num_warps (BLOCK_M 16)


def tl_report(tl, target, B, S, HQ, HKV, D):
    out = subprocess.run([tl, "--target", target, "--report", "--b", str(B), "--s", str(S), "--hq", str(HQ),
                          "--hkv", str(HKV), "--d", str(D)], capture_output=True, text=True, check=True).stdout
    verdicts = [l[len("guardrail: "):] for l in out.splitlines() if l.startswith("guardrail: ")]
    m = re.search(r"kernel fp8_decode_partial, BLOCK_M=(\d+) BLOCK_N=(\d+) num_stages=(\d+) num_warps=(\d+)", out)
    part = out[m.end():out.index("kernel fp8_decode_combine")]
    field = lambda k: int(re.search(rf"^  {k}: (\d+)$", part, re.M).group(1))
    return {"block_m": int(m.group(1)), "block_n": int(m.group(2)), "num_stages": int(m.group(3)),
            "num_warps": int(m.group(4)), "vgpr": field("vgpr"), "agpr": field("agpr"), "spill": field("spill_vgpr"),
            "lds": field("lds_bytes"), "occupancy": field("occupancy"), "verdicts": verdicts}


def triton_compile(arch, G, D, BM, BN, ST, W):
    import triton
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget

    from fp8_decode_triton import decode_partial

    f8 = "fp8e4b8" if arch == "gfx942" else "fp8e4nv"
    sig = {"Q": "*bf16", "K": "*" + f8, "V": "*" + f8, "KS": "*fp32", "VS": "*fp32", "SEQ": "*i32", "Op": "*fp32",
           "Mp": "*fp32", "Lp": "*fp32", "S": "i32", "HKV": "constexpr", "G": "constexpr", "D": "constexpr",
           "SPLIT": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "sm_scale": "fp32",
           "SEQ_LENS": "constexpr"}
    consts = {"HKV": 8, "G": G, "D": D, "SPLIT": 16, "BLOCK_M": BM, "BLOCK_N": BN, "SEQ_LENS": False}
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(sig) if sig[n].startswith("*") or n == "S"}
    k = triton.compile(ASTSource(fn=decode_partial, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("hip", arch, 64), options={"num_warps": W, "num_stages": ST})
    asm = k.asm["amdgcn"]
    field = lambda name: int((re.findall(r"\." + name + r":\s+(\d+)", asm) or [-1])[0])
    return {"vgpr": field("vgpr_count"), "agpr": field("agpr_count"), "spill": field("vgpr_spill_count"),
            "lds": k.metadata.shared, "version": triton.__version__}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="tl-sample-fp8_decode, to compile tl's side")
    ap.add_argument("--tl-json", help="or tl's side from an earlier run's fp8_decode_amd.json (a machine without comgr)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    earlier = {}
    if a.tl_json:
        for r in json.load(open(a.tl_json)):
            earlier[(r["arch"], tuple(r["shape"]))] = r["tl"]
    lines = ["VGPRs are the code object's totals (AGPRs included); occupancy: waves per SIMD from tl's report", "",
             "| arch | B, S, Hq, Hkv, D | tl config (BM, BN, stages, warps) | tl VGPR / spill / LDS / occupancy | "
             "Triton same config VGPR (AGPR) / spill / LDS | Triton seed tuple 16, 64, 2, 1 VGPR (AGPR) / spill | "
             "guardrail |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for arch in ["gfx942", "gfx950"]:
        for (B, S, HQ, HKV, D) in SHAPES:
            G = HQ // HKV
            t = earlier[(arch, (B, S, HQ, HKV, D))] if a.tl_json else tl_report(a.tl, arch, B, S, HQ, HKV, D)
            row = {"arch": arch, "shape": [B, S, HQ, HKV, D], "tl": t}
            for key, cfg in [("triton_same", (t["block_n"], t["num_stages"], t["num_warps"])), ("triton_seed", SEED)]:
                try:
                    row[key] = triton_compile(arch, G, D, t["block_m"], *cfg)
                except Exception as e:  # no Triton, or a configuration it cannot compile
                    row[key] = {"error": str(e).splitlines()[0][:120] if str(e) else type(e).__name__}
            rows.append(row)
            tr = lambda r: (f"{r['vgpr']} ({r['agpr']}) / {r['spill']} / {r['lds']}" if "vgpr" in r else r["error"])
            lines.append(f"| {arch} | {B}, {S}, {HQ}, {HKV}, {D} | {t['block_m']}, {t['block_n']}, {t['num_stages']}, "
                         f"{t['num_warps']} | {t['vgpr']} / {t['spill']} / {t['lds']} / {t['occupancy']} | "
                         f"{tr(row['triton_same'])} | {tr(row['triton_seed'])} | {'; '.join(t['verdicts'])} |")
            print(lines[-1], flush=True)
    json.dump(rows, open(os.path.join(a.out, "fp8_decode_amd.json"), "w"), indent=1)
    open(os.path.join(a.out, "fp8_decode_amd.md"), "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

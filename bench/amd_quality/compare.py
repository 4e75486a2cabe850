#!/usr/bin/env python3
"""tl beside Triton on the AMD code-quality suite, from code objects (no AMD GPU).

Reads tl's records (tl-amd-quality --target gfx942 --target gfx950 --out tl.json),
compiles each case's Triton twin (triton_kernels.py) for the same target with the same
configuration and launch-time specialization, counts instructions in both with one
function, and writes table.md, table.json and plot.png to --out.

  python3 bench/amd_quality/compare.py --tl tl.json --out bench/results/amd-quality-DATE
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ["TRITON_ALWAYS_COMPILE"] = "1"  # compile times are measured
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-amd-quality-"))

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_kernels as tk  # noqa: E402
from isa import instructions  # noqa: E402

MEMORY = ("global_", "buffer_", "flat_", "scratch_")


def counts(text):
    ins = instructions(text)
    vmem = [i for i in ins if i.startswith(MEMORY)]
    lds = [i for i in ins if i.startswith("ds_")]
    return {
        "instructions": len(ins),
        "valu": sum(i.startswith("v_") for i in ins),
        "salu": sum(i.startswith("s_") and not i.startswith(("s_load", "s_buffer_load", "s_store")) for i in ins),
        "smem": sum(i.startswith(("s_load", "s_buffer_load")) for i in ins),
        "vmem_load": sum("_load" in i for i in vmem),
        "vmem_store": sum("_store" in i for i in vmem),
        "vmem_atomic": sum("_atomic" in i for i in vmem),
        "vmem_128": sum(bool(re.search(r"(dwordx4|b128)", i)) for i in vmem),
        "lds": len(lds),
        "lds_128": sum(bool(re.search(r"(b128|read2st64_b64|write2st64_b64)", i)) and "b128" in i for i in lds),
        "waitcnt": sum(i == "s_waitcnt" for i in ins),
        "barriers": sum(i == "s_barrier" for i in ins),
    }


def field(asm, name):
    m = re.findall(r"\." + name + r":\s+(-?\d+)", asm)
    return int(m[0]) if m else 0


LDS_PER_CU = {"gfx942": 64 * 1024, "gfx950": 160 * 1024}


def occupancy(arch, vgpr, agpr, sgpr, lds, waves_per_wg):
    """tl's rule (codegen/amdgpu/code_object.cpp), applied to Triton's numbers too."""
    round_up = lambda x, m: (x + m - 1) // m * m
    total = round_up(vgpr, 4) + agpr if agpr > 0 else vgpr
    alloc = round_up(max(total, 1), 8)
    waves_vgpr = 0 if alloc > 512 else min(8, 512 // alloc)
    wg = 4 * waves_vgpr // waves_per_wg
    if lds > 0:
        wg = min(wg, LDS_PER_CU[arch] // lds)
    w = min((wg * waves_per_wg + 3) // 4, 8)
    if sgpr > 100:
        w = min(w, 7)
    return w


def triton_compile(rec):
    arch, p = rec["target"], rec["params"]
    fn, sig, consts, ints = tk.signature(rec["family"], p, arch)
    t0 = time.perf_counter()
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=tk.specialization(sig, ints)),
                       target=GPUTarget("hip", arch, 64), options={"num_warps": rec["num_warps"]})
    ms = (time.perf_counter() - t0) * 1e3
    asm = k.asm["amdgcn"]
    r = {"vgpr": field(asm, "vgpr_count"), "agpr": field(asm, "agpr_count"), "sgpr": field(asm, "sgpr_count"),
         "spill_vgpr": field(asm, "vgpr_spill_count"), "spill_sgpr": field(asm, "sgpr_spill_count"),
         # Triton's AMD kernels take LDS dynamically (metadata.shared): count both.
         "lds_bytes": max(field(asm, "group_segment_fixed_size"), int(k.metadata.shared)),
         "scratch_bytes": field(asm, "private_segment_fixed_size"), "compile_ms": ms}
    # .vgpr_count is already the unified count (AGPRs in) on gfx90a+, as tl's report is:
    # AGPRs are not added again (tl's own rule is called with 0 for them).
    r["occupancy"] = occupancy(arch, r["vgpr"], 0, r["sgpr"], r["lds_bytes"], rec["num_warps"])
    r["counts"] = counts(asm)
    return r, asm


def tl_side(rec):
    rep = rec["report"]
    r = {k: int(rep.get(k, 0)) for k in ("vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes",
                                         "scratch_bytes", "occupancy")}
    r["compile_ms"] = rec["compile_ms"]
    r["counts"] = counts(rec["isa"])
    return r


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    archs = sorted({r["target"] for r in rows})
    fig, axes = plt.subplots(len(archs), 1, figsize=(15, 4.5 * len(archs)), squeeze=False)
    for ax, arch in zip(axes[:, 0], archs):
        rs = [r for r in rows if r["target"] == arch]
        xs = range(len(rs))
        ax.bar([x - 0.2 for x in xs], [r["tl"]["vgpr"] for r in rs], 0.4, label="tl")
        ax.bar([x + 0.2 for x in xs], [r["triton"]["vgpr"] for r in rs], 0.4, label=f"Triton {triton.__version__}")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["name"] for r in rs], rotation=75, fontsize=7)
        ax.set_ylabel("VGPRs")
        ax.set_title(f"{arch}: VGPRs per kernel, same configuration (lower is better)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, help="tl-amd-quality's JSON (both targets)")
    ap.add_argument("--out", required=True, help="folder for table.md, table.json, plot.png")
    ap.add_argument("--isa", action="store_true", help="also write each side's listing to OUT/isa/")
    args = ap.parse_args()
    recs = json.load(open(args.tl))
    os.makedirs(args.out, exist_ok=True)
    # Warm-up: Triton's first compile pays for imports and set-up.
    triton_compile({"target": "gfx942", "family": "cumsum", "num_warps": 1,
                    "params": {"cols": 16, "BLOCK": 16}})
    rows, md, flags = [], [], []
    for rec in recs:
        tr, asm = triton_compile(rec)
        tv = tl_side(rec)
        row = {"name": rec["name"], "family": rec["family"], "target": rec["target"], "num_warps": rec["num_warps"],
               "params": rec["params"], "problem": rec["problem"], "tl": tv, "triton": tr}
        rows.append(row)
        if args.isa:
            os.makedirs(f"{args.out}/isa", exist_ok=True)
            open(f"{args.out}/isa/{rec['target']}.{rec['name']}.tl.s", "w").write(rec["isa"])
            open(f"{args.out}/isa/{rec['target']}.{rec['name']}.triton.s", "w").write(asm)
        flag = []
        if tv["spill_vgpr"] + tv["spill_sgpr"] + tv["scratch_bytes"] > 0:
            flag.append("**tl spills**")
        more = tv["vgpr"] - tr["vgpr"]  # both unified counts, AGPRs included
        if more > 0:
            flag.append(f"**tl +{more} VGPRs**")
        if tv["occupancy"] < tr["occupancy"]:
            flag.append("**tl lower occupancy**")
        if tv["counts"]["barriers"] > tr["counts"]["barriers"]:
            flag.append("**tl more barriers**")
        if tr["spill_vgpr"] + tr["spill_sgpr"] > 0:
            flag.append("Triton spills")
        if flag:
            flags.append(f"{rec['target']} {rec['name']}: " + ", ".join(flag))
        tc, rc = tv["counts"], tr["counts"]
        md.append(f"| {rec['target']} | {rec['name']} | w{rec['num_warps']} | {tv['vgpr']} / {tr['vgpr']} | "
                  f"{tv['agpr']} / {tr['agpr']} | {tv['sgpr']} / {tr['sgpr']} | "
                  f"{tv['spill_vgpr']}+{tv['spill_sgpr']} / {tr['spill_vgpr']}+{tr['spill_sgpr']} | "
                  f"{tv['lds_bytes']} / {tr['lds_bytes']} | {tv['occupancy']} / {tr['occupancy']} | "
                  f"{tc['valu']} / {rc['valu']} | {tc['vmem_load']}+{tc['vmem_store']}+{tc['vmem_atomic']} / "
                  f"{rc['vmem_load']}+{rc['vmem_store']}+{rc['vmem_atomic']} | {tc['vmem_128']} / {rc['vmem_128']} | "
                  f"{tc['lds']} / {rc['lds']} | {tc['barriers']} / {rc['barriers']} | "
                  f"{tc['instructions']} / {rc['instructions']} | "
                  f"{tv['compile_ms']:.0f} / {tr['compile_ms']:.0f} | {', '.join(flag)} |")
        print(md[-1], flush=True)
    json.dump({"triton": triton.__version__, "rows": rows}, open(f"{args.out}/table.json", "w"), indent=1)
    plot(rows, f"{args.out}/plot.png")
    above = [r for r in rows if r["tl"]["vgpr"] > r["triton"]["vgpr"]]
    lines = [
        f"# AMD code quality: tl beside Triton {triton.__version__}, from code objects",
        "",
        "No AMD GPU: both compilers cross-compiled every kernel of `bench/amd_quality/` for gfx942 "
        "(MI300X) and gfx950 (MI355X) on an x86 host; nothing ran. Same algorithm (kernels.hpp / "
        "triton_kernels.py), same num_warps and tile sizes, same launch-time specialization (16-byte "
        "aligned pointers, integers divisible by 16 marked so, as tl's key does); the benchmark "
        "problem of each case (cases.hpp) gives the integers.",
        "",
        f"Each cell is **tl / Triton**. VGPR is the code object's `.vgpr_count` (unified total on "
        "gfx90a+), AGPR `.agpr_count`. Occupancy: waves per SIMD by tl's rule "
        "(`codegen/amdgpu/code_object.cpp`) for both. Instruction counts are static (code, not "
        "executed), counted by one function on tl's disassembly and Triton's amdgcn: VALU = v_*, "
        "VMEM = global/buffer loads + stores + atomics, 128-bit = dwordx4/b128 VMEM, LDS = ds_*, "
        "barriers = s_barrier. "
        "Compile ms: tl trace-to-code-object / `triton.compile`, on a shared 2-core host.",
        "",
        f"tl at or under Triton's VGPRs: {len(rows) - len(above)} of {len(rows)} rows; "
        f"tl spills: {sum(1 for r in rows if r['tl']['spill_vgpr'] > 0)}; "
        f"tl lower occupancy: {sum(1 for r in rows if r['tl']['occupancy'] < r['triton']['occupancy'])}.",
        "",
        "| arch | case | warps | VGPR | AGPR | SGPR | spills v+s | LDS B | occupancy | VALU | VMEM l+s+a | "
        "128-bit VMEM | LDS ops | barriers | instructions | compile ms | flag |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *md,
        "",
        "## Rows where tl is worse",
        "",
        *([f"- {f}" for f in flags] or ["- none"]),
        "",
    ]
    open(f"{args.out}/table.md", "w").write("\n".join(lines))
    print(f"wrote {args.out}/table.md, table.json, plot.png")


if __name__ == "__main__":
    main()

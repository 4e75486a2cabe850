#!/usr/bin/env python3
"""samples/attention's backward kernels beside Triton's on AMD, from code objects (no GPU).

For each tl record of the attention cases (tl-amd-quality --only attention_bwd_dkdv,
attention_bwd_dq, attention_fwd), compiles with the pip-installed Triton for the same
target and num_warps:
  - the case's Triton twin (triton_kernels.py: the same algorithm statement for statement);
  - for the backward, Triton's tutorial-06 kernel `_attn_bwd` itself at its tiles
    (BLOCK_M1 32, BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR 2, 4 warps) and
    the record's num_stages and D: its dK/dV half alone, its dQ half alone, and whole.
Writes attention_bwd.md / attention_bwd.json to --out: per kernel VGPRs (unified count,
AGPRs included), AGPRs, spills, LDS bytes, occupancy, s_barrier (in loops / all), and the
LDS traffic of the loops: 1- and 2-byte reads (ds_read_u8/i8/u16/i16/b16 and their _d16
forms), all reads, all writes.

  bash bench/amd_quality/attention_bwd.sh   # builds, runs tl-amd-quality, then this
"""
import argparse
import json
import os
import re
import sys
import tempfile

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-attention-bwd-"))

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton_kernels as tk  # noqa: E402
from compare import field, occupancy  # noqa: E402

SMALL_READ = re.compile(r"^ds_read_(u8|i8|u16|i16|b16|u8_d16|u8_d16_hi|i8_d16|i8_d16_hi|u16_d16|u16_d16_hi|b16_d16)$")
INSN = re.compile(r"^\s+((?:v|s|ds|global|buffer|flat|scratch)_[a-z0-9_]+)(.*)$")
ADDR = re.compile(r"//\s*([0-9A-Fa-f]{12,16}):")


def loops_of(text):
    """The instructions of a listing, each with whether it lies in a loop: a range from a
    backward branch's target to the branch. tl's disassembly gives addresses (the branch's
    operand is the signed dword offset from the next instruction); Triton's listing gives
    labels."""
    text = text.split(".amdgpu_metadata")[0]
    ins, labels, branches = [], {}, []
    for line in text.splitlines():
        lab = re.match(r"^(\.?[A-Za-z_][\w.$]*):", line)
        if lab:
            labels[lab.group(1)] = len(ins)
            continue
        m = INSN.match(line)
        if not m or m.group(1) == "s_code_end":
            continue
        op, rest = m.group(1), m.group(2)
        a = ADDR.search(rest)
        ins.append((op, int(a.group(1), 16) if a else None))
        if op.startswith(("s_branch", "s_cbranch")):
            branches.append((len(ins) - 1, rest.split("//")[0].split(";")[0].strip()))
    at_addr = {addr: i for i, (_, addr) in enumerate(ins) if addr is not None}
    inside = [False] * len(ins)
    for i, target in branches:
        if target in labels:
            t = labels[target]
        elif re.fullmatch(r"-?\d+", target) and ins[i][1] is not None:
            off = int(target)
            off = off - 65536 if off >= 32768 else off
            t = at_addr.get(ins[i][1] + 4 + 4 * off)
        else:
            continue
        if t is not None and t <= i:
            for j in range(t, i + 1):
                inside[j] = True
    return [(op, inside[i]) for i, (op, _) in enumerate(ins)]


def lds_counts(text):
    ins = loops_of(text)
    loop = [op for op, inside in ins if inside]
    return {
        "barriers": sum(op == "s_barrier" for op, _ in ins),
        "loop_barriers": loop.count("s_barrier"),
        "loop_small_reads": sum(bool(SMALL_READ.match(op)) for op in loop),
        "small_reads": sum(bool(SMALL_READ.match(op)) for op, _ in ins),
        "loop_reads": sum(op.startswith("ds_read") for op in loop),
        "loop_writes": sum(op.startswith("ds_write") for op in loop),
        "loop_mfma": sum(op.startswith("v_mfma") for op in loop),
    }


def triton_side(fn, sig, consts, ints, arch, num_warps, num_stages=None):
    opts = {"num_warps": num_warps}
    if num_stages is not None:
        opts["num_stages"] = num_stages
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=tk.specialization(sig, ints)),
                       target=GPUTarget("hip", arch, 64), options=opts)
    asm = k.asm["amdgcn"]
    r = {"vgpr": field(asm, "vgpr_count"), "agpr": field(asm, "agpr_count"), "sgpr": field(asm, "sgpr_count"),
         "spill_vgpr": field(asm, "vgpr_spill_count"), "spill_sgpr": field(asm, "sgpr_spill_count"),
         "lds_bytes": max(field(asm, "group_segment_fixed_size"), int(k.metadata.shared))}
    r["occupancy"] = occupancy(arch, r["vgpr"], 0, r["sgpr"], r["lds_bytes"], num_warps)  # .vgpr_count: unified
    r.update(lds_counts(asm))
    return r, asm


def tl_side(rec):
    rep = rec["report"]
    r = {k: int(rep.get(k, 0)) for k in ("vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes",
                                         "occupancy")}
    r.update(lds_counts(rec["isa"]))
    return r


def cells(r):
    return (f"{r['vgpr']} | {r['agpr']} | {r['spill_vgpr']}+{r['spill_sgpr']} | {r['lds_bytes']} | {r['occupancy']} | "
            f"{r['loop_barriers']} / {r['barriers']} | {r['loop_small_reads']} | {r['loop_reads']} | {r['loop_writes']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", required=True, nargs="+", help="tl-amd-quality JSON files (attention cases)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--isa", action="store_true", help="also write every listing to OUT/isa/")
    args = ap.parse_args()
    recs = [r for f in args.tl for r in json.load(open(f)) if r["family"].startswith("attention_")]
    os.makedirs(args.out, exist_ok=True)
    rows, md = [], []

    def add(arch, kernel, who, r, asm):
        rows.append({"target": arch, "kernel": kernel, "compiler": who, **r})
        md.append(f"| {arch} | {kernel} | {who} | {cells(r)} |")
        print(md[-1], flush=True)
        if args.isa:
            os.makedirs(f"{args.out}/isa", exist_ok=True)
            slug = re.sub(r"[^\w.]+", "_", f"{arch}.{kernel}.{who}")
            open(f"{args.out}/isa/{slug}.s", "w").write(asm)

    tutorial_done = set()
    for rec in recs:
        arch, p, w = rec["target"], rec["params"], rec["num_warps"]
        add(arch, rec["name"], "tl", tl_side(rec), rec["isa"])
        fn, sig, consts, ints = tk.signature(rec["family"], p, arch)
        r, asm = triton_side(fn, sig, consts, ints, arch, w)
        add(arch, rec["name"], f"Triton {triton.__version__} twin", r, asm)
        if rec["family"] == "attention_fwd":
            continue
        key = (arch, p["D"], p["STAGES"], rec["family"])
        if key in tutorial_done:
            continue
        tutorial_done.add(key)
        # The tutorial's half that does this kernel's work, then the whole kernel (once per D).
        halves = [1 if rec["family"] == "attention_bwd_dkdv" else 2]
        if rec["family"] == "attention_bwd_dq":
            halves.append(3)
        for phases in halves:
            tp = {"BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32, "BLK_SLICE_FACTOR": 2,
                  "D": p["D"], "PHASES": phases, "S": p["S"]}
            fn, sig, consts, ints = tk.signature("tutorial_attn_bwd", tp, arch)
            r, asm = triton_side(fn, sig, consts, ints, arch, 4, p["STAGES"])
            what = {1: "dK/dV half", 2: "dQ half", 3: "whole _attn_bwd"}[phases]
            add(arch, f"tutorial _attn_bwd D{p['D']} s{p['STAGES']} w4", f"Triton {triton.__version__} {what}", r, asm)
    json.dump({"triton": triton.__version__, "rows": rows}, open(f"{args.out}/attention_bwd.json", "w"), indent=1)
    lines = [
        f"# samples/attention on AMD beside Triton {triton.__version__}, from code objects",
        "",
        "No AMD GPU: cross-compiled for gfx942 (MI300X) and gfx950 (MI355X) on an x86 host. tl: the "
        "sample's kernels (samples/attention/attention.hpp) through bench/amd_quality's cases; Triton "
        "twin: the same algorithm statement for statement (bench/amd_quality/triton_kernels.py); "
        "Triton tutorial: `_attn_bwd` of python/tutorials/06-fused-attention.py (causal, K pre-scaled, "
        "S a multiple of the tiles) at its tiles (dK/dV 32 rows x 128 keys, dQ 128 rows x 32 keys, "
        "BLK_SLICE_FACTOR 2, 4 warps), each half compiled alone and the whole kernel. Both sides bf16, "
        "the same num_stages (1: the tutorial's HIP configurations; its CUDA backward uses 5).",
        "",
        "VGPR: `.vgpr_count` (unified, AGPRs included); occupancy: waves a SIMD by tl's rule for both. "
        "Loops: the ranges from a backward branch's target to the branch. Small reads: "
        "ds_read_u8/i8/u16/i16/b16 and their _d16 forms.",
        "",
        "| arch | kernel | compiler | VGPR | AGPR | spills v+s | LDS B | occupancy | s_barrier loop / all | "
        "1-2 B LDS reads in loops | LDS reads in loops | LDS writes in loops |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *md,
        "",
    ]
    open(f"{args.out}/attention_bwd.md", "w").write("\n".join(lines))
    print(f"wrote {args.out}/attention_bwd.md, attention_bwd.json")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Triton 3.6's tl.dot_scaled kernel compiled for gfx950 and gfx942 without a GPU: the
kernel tl's dot_scaled_test compiles (tutorial 10's block_scaled_matmul_kernel with pointer
loads and plain [rows, K / 32] scales, tests/dsl/dot_scaled_test.cpp's scaled_kernel), at
the same configuration (BLOCK 64x64x128, 4 warps, 2 stages), for MXFP4, MXFP8 and e5m2 x
e4m3, at Triton's default MFMA size and at 16x16. Its VGPRs (the code object's
.vgpr_count, AGPRs included, as tl's report), AGPRs, spills, LDS and MFMAs are the figures
DotScaled.Gfx950RunsOnTheScaledMfma holds tl to.

    python3 bench/dot_scaled_amd_static.py --out bench/results/dot_scaled_amd-2026-11-28
"""
import argparse, json, os, re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def block_scaled_matmul_kernel(a_ptr, a_scale, b_ptr, b_scale, c_ptr, M, N, K, FA: tl.constexpr, FB: tl.constexpr,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               NUM_STAGES: tl.constexpr):
    PA: tl.constexpr = 2 if FA == "e2m1" else 1
    PB: tl.constexpr = 2 if FB == "e2m1" else 1
    rm = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
    rn = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N))[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        ka = (k0 // PA + tl.arange(0, BLOCK_K // PA))[None, :]
        kb = (k0 // PB + tl.arange(0, BLOCK_K // PB))[None, :]
        ks = (k0 // 32 + tl.arange(0, BLOCK_K // 32))[None, :]
        x = tl.load(a_ptr + rm * (K // PA) + ka, mask=rm < M, other=0)
        y = tl.load(b_ptr + rn * (K // PB) + kb, mask=rn < N, other=0)
        sa = tl.load(a_scale + rm * (K // 32) + ks, mask=rm < M, other=127)
        sb = tl.load(b_scale + rn * (K // 32) + ks, mask=rn < N, other=127)
        acc = tl.dot_scaled(x, sa, FA, y.T, sb, FB, acc)
    out = rm * N + (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
    tl.store(c_ptr + out, acc, mask=(rm < M) & ((tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N))[None, :] < N))


def compile_one(arch, fa, fb, nonkdim, BM=64, BN=64, BK=128, W=4, S=2):
    sig = {"a_ptr": "*u8", "a_scale": "*u8", "b_ptr": "*u8", "b_scale": "*u8", "c_ptr": "*fp32", "M": "i32",
           "N": "i32", "K": "i32", "FA": "constexpr", "FB": "constexpr", "BLOCK_M": "constexpr",
           "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "NUM_STAGES": "constexpr"}
    consts = dict(FA=fa, FB=fb, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, NUM_STAGES=S)
    attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(sig) if sig[n] != "constexpr"}
    options = {"num_warps": W, "num_stages": S}
    if nonkdim:
        options["matrix_instr_nonkdim"] = nonkdim
    try:
        k = triton.compile(ASTSource(fn=block_scaled_matmul_kernel, signature=sig, constexprs=consts, attrs=attrs),
                           target=GPUTarget("hip", arch, 64), options=options)
    except Exception as e:  # gfx942: Triton 3.6's AMD backend refuses some pairs
        return {"error": str(e).splitlines()[-1][:200]}
    asm = k.asm["amdgcn"]
    field = lambda name: int((re.findall(r"\." + name + r":\s+(\d+)", asm) or [-1])[0])
    return {"vgpr": field("vgpr_count"), "agpr": field("agpr_count"), "spill": field("vgpr_spill_count"),
            "lds": k.metadata.shared, "mfma": sorted(set(re.findall(r"v_mfma\w+", asm))),
            "scale_lds_reads": sorted(set(re.findall(r"ds_read_u8|ds_read_u16|ds_read_b32", asm)))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for arch in ["gfx950", "gfx942"]:
        for name, fa, fb in [("mxfp4", "e2m1", "e2m1"), ("mxfp8", "e4m3", "e4m3"), ("e5m2 x e4m3", "e5m2", "e4m3")]:
            for nonkdim in [0, 16]:
                rows.append({"arch": arch, "case": name, "nonkdim": nonkdim, "triton": compile_one(arch, fa, fb, nonkdim),
                             "triton_version": triton.__version__})
    json.dump(rows, open(os.path.join(a.out, "dot_scaled_amd.json"), "w"), indent=1)
    lines = [f"Triton {triton.__version__}, tutorial 10's kernel as tl's dot_scaled_test writes it, BLOCK 64x64x128, "
             "4 warps, 2 stages (VGPRs: .vgpr_count, AGPRs included)", "",
             "| arch | case | MFMA size | VGPR | AGPR | spills | LDS | MFMAs | narrow LDS reads |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t = r["triton"]
        size = r["nonkdim"] or "default"
        if "error" in t:
            lines.append(f"| {r['arch']} | {r['case']} | {size} | - | - | - | - | {t['error']} | |")
        else:
            lines.append(f"| {r['arch']} | {r['case']} | {size} | {t['vgpr']} | {t['agpr']} | {t['spill']} | {t['lds']} | "
                         f"{', '.join(t['mfma'])} | {', '.join(t['scale_lds_reads'])} |")
    open(os.path.join(a.out, "dot_scaled_amd.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

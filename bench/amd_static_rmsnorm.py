#!/usr/bin/env python3
"""Static AMD comparison of the RMSNorm sample: tl vs Triton, from code objects.

No AMD GPU exists here, so nothing runs: both compilers build the same algorithm
(samples/rmsnorm/rmsnorm.hpp: forward one-row or row-packed, persistent backward) for
gfx942 (MI300X, 304 CUs) and gfx950 (MI355X, 256 CUs) with the SAME launch
configuration, the one tl's heuristic (rmsnorm::choose) picks, and we compare what the
code objects say: VGPRs, AGPRs, SGPRs, spills, scratch, LDS, occupancy, memory
instructions.

  tl:     tl-sample-rmsnorm --target gfxNNN --report --rows R --cols C   (both directions;
          its block / rows_per_pid / num_warps lines are the configuration Triton gets),
          then tl-cache isa KEY for the memory instructions.
  Triton: triton.compile(ASTSource(...)) for GPUTarget("hip", gfxNNN, 64) with the
          launch-time specialization Triton's JIT would apply (16-byte aligned pointers,
          integer arguments divisible by 16: tt.divisibility 16), resources read from its
          amdgcn (.vgpr_count etc. and LLVM's "; Occupancy:" comment).

Occupancy is also recomputed for Triton with tl's formula (codegen/amdgpu/code_object.cpp:
VGPR granule 8 of a 512-register file, whole workgroups, LDS 64 KiB per CU on gfx942 and
160 KiB on gfx950, one wave less above 100 SGPRs), so that both columns use one rule.

  python3 bench/amd_static_rmsnorm.py [--build /tmp/lead/build] [--out bench/results/rmsnorm_amd_static.md]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import json
import tempfile
import time

# Triton 3.9 warns that its default FP fusion (enabled, as in 3.6) will change; keep it.
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
# Compile times are measured: no reuse of Triton's on-disk or in-process cache.
os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-amd-static-"))

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SHAPES = [(32768, 128), (65536, 128), (8192, 4096), (4096, 8192), (16384, 2048), (2048, 16384), (1024, 32768)]
ARCHS = [("gfx942", 304), ("gfx950", 256)]


# ---------------------------------------------------------------------------------------
# Triton kernels: the algorithm of samples/rmsnorm/rmsnorm.hpp, statement for statement.

@triton.jit
def rmsnorm_fwd(X, Y, W, RSTD, cols, eps, BLOCK: tl.constexpr, ROWS_PER_PID: tl.constexpr,
                ZERO_CENTERED: tl.constexpr, OFFSETS64: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < cols
    n = cols.to(tl.float32)
    if ROWS_PER_PID == 1:
        # One row per program, a 1-D tile; gamma loaded after the reduction.
        row = tl.program_id(0)
        if OFFSETS64:
            base = row.to(tl.int64) * cols.to(tl.int64)
        else:
            base = row * cols
        v = tl.load(X + base + c, mask=m, other=0.0).to(tl.float32)
        inv = tl.rsqrt(tl.sum(v * v, 0) / n + eps)
        g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
        if ZERO_CENTERED:
            g = g + 1.0
        tl.store(Y + base + c, (v * inv * g).to(Y.dtype.element_ty), mask=m)
        tl.store(RSTD + row, inv)
    else:
        # ROWS_PER_PID rows (which divide the rows: no row mask) as one 2-D tile.
        g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
        if ZERO_CENTERED:
            g = g + 1.0
        rows = tl.program_id(0) * ROWS_PER_PID + tl.arange(0, ROWS_PER_PID)
        m2 = tl.broadcast_to(m[None, :], (ROWS_PER_PID, BLOCK))
        offs = block_offsets(rows, cols, c, OFFSETS64)
        v = tl.load(X + offs, mask=m2, other=0.0).to(tl.float32)
        inv = tl.rsqrt(tl.sum(v * v, 1) / n + eps)
        tl.store(Y + offs, (v * inv[:, None] * g[None, :]).to(Y.dtype.element_ty), mask=m2)
        tl.store(RSTD + rows, inv)


@triton.jit
def block_offsets(r_idx, cols, c, OFFSETS64: tl.constexpr):
    # The [R, BLOCK] element offsets of rows r_idx (tl's offsets_of), 64-bit if asked.
    if OFFSETS64:
        return (r_idx.to(tl.int64) * cols.to(tl.int64))[:, None] + c[None, :]
    else:
        return (r_idx * cols)[:, None] + c[None, :]


@triton.jit
def rmsnorm_bwd(X, DY, W, RSTD, DX, DW_PARTIAL, rows, cols, BLOCK: tl.constexpr, ROWS_PER_PID: tl.constexpr,
                ZERO_CENTERED: tl.constexpr, OFFSETS64: tl.constexpr, PREFETCH: tl.constexpr):
    # Persistent: blocks of ROWS_PER_PID rows with a stride of the grid; partial dgamma
    # in registers, one row of partials per program. PREFETCH loads the next block
    # before computing the current one.
    R: tl.constexpr = ROWS_PER_PID
    c = tl.arange(0, BLOCK)
    m = c < cols
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    if ZERO_CENTERED:
        g = g + 1.0
    g2 = g[None, :]
    n = cols.to(tl.float32)
    dg = tl.zeros([ROWS_PER_PID, BLOCK], dtype=tl.float32)
    pid = tl.program_id(0)
    step = tl.num_programs(0) * R
    if PREFETCH:
        rn = pid * R + tl.arange(0, R)
        on = block_offsets(rn, cols, c, OFFSETS64)
        mn = (rn < rows)[:, None] & m[None, :]
        x_next = tl.load(X + on, mask=mn, other=0.0)
        dy_next = tl.load(DY + on, mask=mn, other=0.0)
        rstd_next = tl.load(RSTD + rn, mask=rn < rows, other=0.0)
    for first in range(pid * R, rows, step):
        r_idx = first + tl.arange(0, R)
        rm = r_idx < rows
        m2 = rm[:, None] & m[None, :]
        offs = block_offsets(r_idx, cols, c, OFFSETS64)
        if PREFETCH:
            xe = x_next
            ge = dy_next
            r = rstd_next
            rn = r_idx + step
            on = block_offsets(rn, cols, c, OFFSETS64)
            mn = (rn < rows)[:, None] & m[None, :]
            x_next = tl.load(X + on, mask=mn, other=0.0)
            dy_next = tl.load(DY + on, mask=mn, other=0.0)
            rstd_next = tl.load(RSTD + rn, mask=rn < rows, other=0.0)
        else:
            xe = tl.load(X + offs, mask=m2, other=0.0)
            ge = tl.load(DY + offs, mask=m2, other=0.0)
            r = tl.load(RSTD + r_idx, mask=rm, other=0.0)
        xv = xe.to(tl.float32)
        gv = ge.to(tl.float32)
        dot = tl.sum(gv * g2 * xv, 1) / n
        d = r[:, None] * g2 * gv - xv * (r * r * r * dot)[:, None]
        tl.store(DX + offs, d.to(DX.dtype.element_ty), mask=m2)
        dg = dg + gv * xv * r[:, None]
    tl.store(DW_PARTIAL + pid * cols + c, tl.sum(dg, 0), mask=m)


@triton.jit
def rmsnorm_bwd_chunked(X, DY, W, RSTD, DX, DW_PARTIAL, rows, cols, CHUNK: tl.constexpr,
                        ZERO_CENTERED: tl.constexpr, OFFSETS64: tl.constexpr):
    # Very wide rows: per row, one pass over column chunks for sum(dy*g*x), a second that
    # writes dx and updates the program's partial dgamma row in DW_PARTIAL.
    c = tl.arange(0, CHUNK)
    n = cols.to(tl.float32)
    pid = tl.program_id(0)
    partial = DW_PARTIAL + pid.to(tl.int64) * cols.to(tl.int64)
    for c0 in range(0, cols, CHUNK):
        tl.store(partial + c0 + c, tl.zeros([CHUNK], dtype=tl.float32), mask=c0 + c < cols)
    for row in range(pid, rows, tl.num_programs(0)):
        if OFFSETS64:
            base = row.to(tl.int64) * cols.to(tl.int64)
        else:
            base = row * cols
        r = tl.load(RSTD + row)
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        for c0 in range(0, cols, CHUNK):
            cc = c0 + c
            m = cc < cols
            xv = tl.load(X + base + cc, mask=m, other=0.0).to(tl.float32)
            gv = tl.load(DY + base + cc, mask=m, other=0.0).to(tl.float32)
            g = tl.load(W + cc, mask=m, other=0.0).to(tl.float32)
            if ZERO_CENTERED:
                g = g + 1.0
            acc = acc + gv * g * xv
        k3 = r * r * r * (tl.sum(acc, 0) / n)
        for c0 in range(0, cols, CHUNK):
            cc = c0 + c
            m = cc < cols
            xv = tl.load(X + base + cc, mask=m, other=0.0).to(tl.float32)
            gv = tl.load(DY + base + cc, mask=m, other=0.0).to(tl.float32)
            g = tl.load(W + cc, mask=m, other=0.0).to(tl.float32)
            if ZERO_CENTERED:
                g = g + 1.0
            tl.store(DX + base + cc, (r * g * gv - xv * k3).to(DX.dtype.element_ty), mask=m)
            tl.store(partial + cc, tl.load(partial + cc, mask=m, other=0.0) + gv * xv * r, mask=m)


def specialization(sig, values):
    """Triton's launch-time specialization: pointers 16-byte aligned (device allocations
    are), integers whose value is divisible by 16."""
    attrs = {}
    for i, (name, ty) in enumerate(sig.items()):
        if ty.startswith("*") or (ty == "i32" and values.get(name, 1) % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
    return attrs


def field(asm, name):
    m = re.findall(r"\." + name + r":\s+(-?\d+)", asm)
    return int(m[0]) if m else None


def mem_ops(text):
    """Counts of vector memory instructions by kind and width (global_/buffer_)."""
    ops = re.findall(r"\b(?:global|buffer)_(load|store)_"
                     r"(dwordx4|dwordx3|dwordx2|dword|ushort|short|ubyte|byte|b128|b64|b32|b16)\b", text)
    width_name = {"dwordx4": "x4", "b128": "x4", "dwordx2": "x2", "b64": "x2", "dword": "1", "b32": "1",
                  "ushort": "16b", "short": "16b", "b16": "16b"}
    out = {}
    for kind, width in ops:
        key = kind[0] + width_name.get(width, width)
        out[key] = out.get(key, 0) + 1
    return out


def fmt_ops(d):
    order = ["lx4", "lx2", "l1", "l16b", "sx4", "sx2", "s1", "s16b"]
    keys = [k for k in order if k in d] + sorted(k for k in d if k not in order)
    return " ".join(f"{k}:{d[k]}" for k in keys) or "-"


# tl's occupancy rule (codegen/amdgpu/code_object.cpp), applied to Triton's numbers too.
LIMITS = {"gfx942": dict(lds=64 * 1024), "gfx950": dict(lds=160 * 1024)}


def occupancy(arch, vgpr, agpr, sgpr, lds, waves_per_wg):
    round_up = lambda x, m: (x + m - 1) // m * m
    total = round_up(vgpr, 4) + agpr if agpr > 0 else vgpr
    alloc = round_up(max(total, 1), 8)
    waves_vgpr = 0 if alloc > 512 else min(8, 512 // alloc)
    wg = 4 * waves_vgpr // waves_per_wg
    if lds > 0:
        wg = min(wg, LIMITS[arch]["lds"] // lds)
    w = min((wg * waves_per_wg + 3) // 4, 8)
    if sgpr > 100:
        w = min(w, 7)
    return w


# ---------------------------------------------------------------------------------------
# tl: the sample's --report, and the disassembly from the cache it fills.

def run(cmd, env=None):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def tl_report(build, arch, rows, cols):
    """Both directions' report blocks, plus memory-op counts from tl-cache isa."""
    with tempfile.TemporaryDirectory(prefix="tl-amd-static-") as cache:
        env = dict(os.environ, TL_CACHE_DIR=cache, TL_ALWAYS_COMPILE="1")
        out = run([f"{build}/samples/tl-sample-rmsnorm", "--target", arch, "--report", "--rows", str(rows),
                   "--cols", str(cols)], env)
        blocks = {}
        for chunk in out.strip().split("\n\n"):
            kv = dict(line.split(": ", 1) for line in chunk.strip().splitlines() if ": " in line)
            blocks[kv["kernel"]] = kv
        listing = run([f"{build}/tools/tl-cache", "list"], env)
        for line in listing.splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in blocks and parts[2] == arch:
                isa = run([f"{build}/tools/tl-cache", "isa", parts[0]], env)
                blocks[parts[1]]["ops"] = mem_ops(isa)
        return out, blocks


# ---------------------------------------------------------------------------------------
# Triton: the same kernels, the same configuration.

def triton_compile(arch, kernel, rows, cols, block, rpp, warps, offsets64, prefetch, chunk=0, dtype="bf16"):
    if kernel == "rmsnorm_fwd":
        fn = rmsnorm_fwd
        sig = {"X": f"*{dtype}", "Y": f"*{dtype}", "W": f"*{dtype}", "RSTD": "*fp32", "cols": "i32", "eps": "fp32",
               "BLOCK": "constexpr", "ROWS_PER_PID": "constexpr", "ZERO_CENTERED": "constexpr",
               "OFFSETS64": "constexpr"}
        values = {"cols": cols}
    else:
        fn = rmsnorm_bwd
        sig = {"X": f"*{dtype}", "DY": f"*{dtype}", "W": f"*{dtype}", "RSTD": "*fp32", "DX": f"*{dtype}",
               "DW_PARTIAL": "*fp32", "rows": "i32", "cols": "i32", "BLOCK": "constexpr", "ROWS_PER_PID": "constexpr",
               "ZERO_CENTERED": "constexpr", "OFFSETS64": "constexpr", "PREFETCH": "constexpr"}
        values = {"rows": rows, "cols": cols}
    consts = {"BLOCK": block, "ROWS_PER_PID": rpp, "ZERO_CENTERED": False, "OFFSETS64": offsets64}
    if kernel != "rmsnorm_fwd":
        consts["PREFETCH"] = prefetch
    if chunk:
        fn = rmsnorm_bwd_chunked
        for k in ("BLOCK", "ROWS_PER_PID", "PREFETCH"):
            del sig[k], consts[k]
        sig["CHUNK"] = "constexpr"
        consts["CHUNK"] = chunk
    t0 = time.perf_counter()
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=specialization(sig, values)),
                       target=GPUTarget("hip", arch, 64), options={"num_warps": warps})
    ms = (time.perf_counter() - t0) * 1e3
    asm = k.asm["amdgcn"]
    occ = re.findall(r";\s*Occupancy:\s*(\d+)", asm)
    r = {
        "vgpr": field(asm, "vgpr_count"), "agpr": field(asm, "agpr_count") or 0, "sgpr": field(asm, "sgpr_count"),
        "spill_vgpr": field(asm, "vgpr_spill_count"), "spill_sgpr": field(asm, "sgpr_spill_count"),
        # Triton's AMD kernels take their shared memory dynamically (the launch passes
        # metadata.shared), so the descriptor's fixed LDS size is 0: count both.
        "lds_bytes": max(field(asm, "group_segment_fixed_size") or 0, int(k.metadata.shared)),
        "scratch_bytes": field(asm, "private_segment_fixed_size"),
        "llvm_occupancy": int(occ[0]) if occ else None, "ops": mem_ops(asm), "compile_ms": ms,
    }
    r["occupancy"] = occupancy(arch, r["vgpr"], r["agpr"], r["sgpr"], r["lds_bytes"], warps)
    return r


def triton_all(configs):
    """Triton's results for [(arch, kernel, rows, cols, block, rpp, warps, offsets64)]."""
    triton_compile("gfx942", "rmsnorm_fwd", 16, 16, 16, 1, 1, False, False)  # warm-up: imports, first-use set-up
    return [triton_compile(*c) for c in configs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="/tmp/lead/build", help="tl build folder (samples/, tools/)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "rmsnorm_amd_static.md"))
    ap.add_argument("--also-python", help="a Python with another Triton (e.g. a venv with triton==3.6.0): "
                                          "its results are added as a second table")
    ap.add_argument("--triton-json", action="store_true", help=argparse.SUPPRESS)  # the --also-python child
    args = ap.parse_args()
    if args.triton_json:
        configs = [tuple(c) for c in json.load(sys.stdin)]
        json.dump({"version": triton.__version__, "results": triton_all(configs)}, sys.stdout)
        return

    # tl first: its reports give the configurations.
    cmds, tl_rows, configs = [], [], []
    for arch, cus in ARCHS:
        for rows, cols in SHAPES:
            cmds.append(f"{args.build}/samples/tl-sample-rmsnorm --target {arch} --report --rows {rows} --cols {cols}")
            _, blocks = tl_report(args.build, arch, rows, cols)
            for kernel in blocks:  # the forward's, then the backward's (plain or chunked)
                t = blocks[kernel]
                off64 = rows * cols >= 2 ** 31  # rmsnorm::choose's rule; false for all 7 shapes
                configs.append((arch, kernel, rows, cols, int(t["block"]), int(t["rows_per_pid"]),
                                int(t["num_warps"]), off64, t.get("num_stages", "1") == "2", int(t.get("chunk", "0"))))
                tl_rows.append(t)
    results = triton_all(configs)
    other = None
    if args.also_python:
        p = subprocess.run([args.also_python, os.path.abspath(__file__), "--triton-json"], input=json.dumps(configs),
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"--also-python failed:\n{p.stderr}")
        other = json.loads(p.stdout)

    rows_md, flags, rows2_md = [], [], []
    for i, (arch, kernel, rows, cols, block, rpp, warps, off64, prefetch, chunk) in enumerate(configs):
        t, tr = tl_rows[i], results[i]
        tv = {k: int(t[k]) for k in ("vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes",
                                     "scratch_bytes", "occupancy")}
        cfg = f"B{block} R{rpp} w{warps}" + (" prefetch" if prefetch else "") + (f" chunk{chunk}" if chunk else "")
        flag = []
        if tv["spill_vgpr"] + tv["spill_sgpr"] > 0 or tv["scratch_bytes"] > 0:
            flag.append("**tl SPILLS**")
        more = tv["vgpr"] + tv["agpr"] - tr["vgpr"] - tr["agpr"]
        if more > 0:
            flag.append(f"tl +{more} VGPRs")
        if tv["occupancy"] < tr["occupancy"]:
            flag.append("tl lower occupancy")
        if tr["spill_vgpr"] + tr["spill_sgpr"] > 0:
            flag.append("Triton spills too")
        if flag:
            flags.append(f"{arch} {kernel[8:]} {rows}x{cols} ({cfg}): " + ", ".join(flag))
        rows_md.append(
            f"| {arch} | {kernel[8:]} | {rows}x{cols} | {cfg} | {tv['vgpr']} / {tr['vgpr']} | "
            f"{tv['agpr']} / {tr['agpr']} | {tv['sgpr']} / {tr['sgpr']} | "
            f"{tv['spill_vgpr']}+{tv['spill_sgpr']} / {tr['spill_vgpr']}+{tr['spill_sgpr']} | "
            f"{tv['scratch_bytes']} / {tr['scratch_bytes']} | {tv['lds_bytes']} / {tr['lds_bytes']} | "
            f"{tv['occupancy']} / {tr['occupancy']} ({tr['llvm_occupancy']}) | "
            f"{fmt_ops(t.get('ops', {}))} | {fmt_ops(tr['ops'])} | {float(t['compile_ms']):.0f} / "
            f"{tr['compile_ms']:.0f} | {', '.join(flag)} |")
        print(rows_md[-1], flush=True)
        if other:
            o = other["results"][i]
            rows2_md.append(
                f"| {arch} | {kernel[8:]} | {rows}x{cols} | {cfg} | {tv['vgpr']} / {tr['vgpr']} / {o['vgpr']} | "
                f"{tv['spill_vgpr']} / {tr['spill_vgpr']} / {o['spill_vgpr']} | "
                f"{tv['scratch_bytes']} / {tr['scratch_bytes']} / {o['scratch_bytes']} | "
                f"{tv['lds_bytes']} / {tr['lds_bytes']} / {o['lds_bytes']} | "
                f"{tv['occupancy']} / {tr['occupancy']} / {o['occupancy']} | {fmt_ops(o['ops'])} |")

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    v = triton.__version__
    lines = [
        "# RMSNorm on AMD, tl vs Triton: static comparison from code objects",
        "",
        f"Date: {now}. **No AMD GPU: static comparison from code objects** (nothing ran; both compilers "
        f"cross-compiled on an x86 host). Triton {v} (what `pip install triton` gave"
        + (f"; Triton {other['version']} in a second table" if other else "") + f"); tl from `{args.build}`.",
        "",
        "Both compile the same algorithm (`samples/rmsnorm/rmsnorm.hpp`; the Triton kernels in "
        "`bench/amd_static_rmsnorm.py` mirror it statement for statement: forward one-row (R1) or "
        "row-packed as one [R, BLOCK] tile, backward persistent over blocks of R rows with a partial "
        "dgamma row per program, loading the next block before computing the current one where the "
        "config says prefetch, or, for rows wider than 16384, two passes over column chunks of `chunk` "
        "columns (`rmsnorm_bwd_chunked`); the small dgamma reduction kernel is not compared), bf16, "
        "zero-centered gamma off, for the configuration tl's heuristic "
        "`rmsnorm::choose` picks with 304 CUs (gfx942, MI300X) and 256 CUs (gfx950, MI355X): "
        "B = BLOCK, R = ROWS_PER_PID, w = num_warps (waves of 64). 64-bit offsets are off for all "
        "7 shapes (rows x cols < 2^31). Triton gets its launch-time specialization: 16-byte-aligned "
        "pointers and `tt.divisibility 16` on the integer arguments (all divisible by 16), as tl's "
        "own key does.",
        "",
        f"Each cell is **tl / Triton {v}**. Occupancy is waves per SIMD by tl's rule "
        "(`codegen/amdgpu/code_object.cpp`: VGPR granule 8 of 512, whole workgroups, LDS per CU "
        "64 KiB gfx942 / 160 KiB gfx950, one wave less above 100 SGPRs) for both; in brackets "
        "LLVM's own `; Occupancy:` comment from Triton's amdgcn, which counts neither whole "
        "workgroups nor Triton's dynamic LDS. Triton's LDS is `metadata.shared` (its kernels "
        "take LDS dynamically; the descriptor says 0). Memory ops: vector global/buffer "
        "instructions in the code (static count, not executed): l/s = load/store, x4 = 128-bit, "
        "x2 = 64-bit, 1 = 32-bit, 16b = 16-bit. Compile ms: tl's `compile_ms` (trace to code "
        "object, TL_ALWAYS_COMPILE=1) / Triton's `triton.compile` wall time (TRITON_ALWAYS_COMPILE=1), "
        "on a shared 2-core host.",
        "",
        "| arch | dir | shape | config | VGPR | AGPR | SGPR | spills v+s | scratch B | LDS B | occupancy | "
        "tl memory ops | Triton memory ops | compile ms | flag |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows_md,
        "",
        "## Flags: tl spills, uses more VGPRs, or has lower occupancy than Triton",
        "",
        *([f"- {f}" for f in flags] or ["- none"]),
        "",
    ]
    # Where anything spills: would twice the warps (half the row per lane) avoid it in Triton?
    probes = []
    for i, (arch, kernel, rows, cols, block, rpp, warps, off64, prefetch, chunk) in enumerate(configs):
        t, tr = tl_rows[i], results[i]
        if int(t["spill_vgpr"]) + tr["spill_vgpr"] > 0 and warps < 16:
            p2 = triton_compile(arch, kernel, rows, cols, block, rpp, 2 * warps, off64, prefetch, chunk)
            probes.append(f"- {arch} {kernel[8:]} {rows}x{cols} B{block} R{rpp}: Triton {v} with w{2 * warps}: "
                          f"{p2['vgpr']} VGPRs, {p2['spill_vgpr']} VGPR spills, {p2['scratch_bytes']} B scratch, "
                          f"occupancy {p2['occupancy']} (at w{warps}: {tr['vgpr']} VGPRs, {tr['spill_vgpr']} spills)")
    if probes:
        lines += ["## Spilling configurations with twice the warps (Triton)", "", *probes, ""]
    if other:
        lines += [
            f"## tl / Triton {v} / Triton {other['version']}",
            "",
            "| arch | dir | shape | config | VGPR | VGPR spills | scratch B | LDS B | occupancy | "
            f"Triton {other['version']} memory ops |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows2_md,
            "",
        ]
    lines += [
        "## Commands",
        "",
        "```",
        f"pip install triton                      # gave {v}",
        *([f"python3 -m venv /tmp/triton36 && /tmp/triton36/bin/pip install triton=={other['version']}"]
          if other else []),
        f"python3 bench/amd_static_rmsnorm.py --build {args.build}"
        + (f" --also-python {args.also_python}" if other else ""),
        "# which runs, for each arch and shape (TL_CACHE_DIR a fresh folder, TL_ALWAYS_COMPILE=1):",
        *cmds,
        f"{args.build}/tools/tl-cache list; {args.build}/tools/tl-cache isa KEY   # tl's memory ops",
        "```",
        "",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

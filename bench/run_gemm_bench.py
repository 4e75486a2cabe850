#!/usr/bin/env python3
"""GEMM: tl's samples/gemm beside Triton's tutorial matmul and torch, bf16 and FP8 e4m3.

C = A.B at 4096^3 and 8192^3 (TFLOP/s = 2*M*N*K / time):

  tl      samples/gemm through bench/gemm_bench.cpp (tl-bench-gemm): gemm::choose's
          configuration for the device (its JSON says which), tl::dot on wgmma (sm_90) or
          mma.sync, the K loop pipelined through shared memory (cp.async); FP8 with row and
          column scales
  tl tutorial  bench/matmul_tutorial.hpp (tl-bench-gemm --kernel tutorial), bf16: the
          anchor's kernel transcribed as Triton users write it (carried pointers, plain
          loads, no tl::shared), at the same configuration as the sample; the compiler
          stages and pipelines its loads
  Triton  the kernel of ../shared/anchors/gemm_anchor.py (the tutorial matmul: grouped
          order, GROUP_SIZE_M 8, `tl.range(..., num_stages=STAGES)`), with tl's tiles,
          stages and warps ("tl's config"), and the best of the anchor's four
          configurations; once with DISABLE_MMA_V3=1 (mma.sync, the instruction class tl
          uses) and once without (wgmma on Hopper), each in its own process and
          TRITON_CACHE_DIR. The anchor's FP8 kernel has no scales (unit scales).
  torch   torch.matmul (cuBLAS) for bf16; torch._scaled_mm with row-wise scales (one per
          row of A, one per column of B; tensor-wise where row-wise is not supported) for FP8

Inputs: uniform in [-1, 1) (bf16) and [-4, 4) (FP8) for all three, B column-major for
FP8 (B^T [N, K] contiguous, as tl's gemm_fp8 and torch._scaled_mm take it). Every result
is checked before it is timed: tl against its float64 host reference on sampled rows
(tl-bench-gemm), Triton and torch by the relative Frobenius error against an f32 matmul
of the same (scaled) operands (< 1e-2, the anchor's measure). Times: CUDA-event medians
(triton.testing.do_bench, warmup 25, rep 200, return_mode="median", the L2 flushed by a
256 MiB write before each call; tl-bench-gemm times each call the same way).

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh; bench/run_on_gpu.sh
with TL_BENCHES=gemm runs this):
    python3 bench/run_gemm_bench.py --tl /tmp/tl/bin/tl-bench-gemm --out $OUT
Writes gemm.json (every run), gemm.md (the table), gemm.png and tl_gemm.json to --out.
--dry-run needs no GPU and no torch: it compiles the Triton kernel for sm_90 at every
configuration (where Triton is installed), runs tl-bench-gemm if --tl is given (at
--sizes, on whatever device it finds) and writes the tables and plot with tl's runs only
(nothing is made up for the columns it did not measure).
"""
import argparse, json, os, subprocess, sys, time

SIZES = [4096, 8192]
GROUP = 8
# The anchor's configurations: BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps
ANCHOR_CFGS = [(128, 128, 64, 4, 8), (128, 256, 64, 3, 8), (64, 128, 64, 4, 4), (128, 128, 128, 3, 8)]
# samples/gemm/gemm.hpp choose() on NVIDIA, for when there is no tl JSON
TL_NVIDIA = {"bf16": (128, 128, 64, 3, 4), "fp8": (128, 128, 64, 3, 8)}
MODES = {"mma.sync": "1", "wgmma": "0"}  # DISABLE_MMA_V3

try:
    import triton
    import triton.language as tl
except ImportError:  # --dry-run without Triton
    triton = None

if triton is not None:

    @triton.jit
    def matmul(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, STAGES: tl.constexpr):
        # ../shared/anchors/gemm_anchor.py's kernel, statement for statement
        pid = tl.program_id(0)
        npm = tl.cdiv(M, BM); npn = tl.cdiv(N, BN)
        gid = pid // (GROUP * npn); first = gid * GROUP; gs = min(npm - first, GROUP)
        pm = first + (pid % (GROUP * npn)) % gs; pn = (pid % (GROUP * npn)) // gs
        rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
        a = A + rm[:, None] * sam + rk[None, :] * sak
        b = B + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), tl.float32)
        for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
            acc += tl.dot(tl.load(a, mask=rk[None, :] < K - k * BK, other=0.),
                          tl.load(b, mask=rk[:, None] < K - k * BK, other=0.))
            a += BK * sak; b += BK * sbk
        c = C + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def cfg_str(c):
    return f"{c[0]}x{c[1]}x{c[2]} s{c[3]} w{c[4]}"


def tl_cfg_of(run):
    c = run["config"]
    return (c["block_m"], c["block_n"], c["block_k"], c["num_stages"], c["num_warps"])


# ---------------------------------------------------------------- GPU work (torch)

def inputs(dtype, S):
    import torch
    g = torch.Generator(device="cuda").manual_seed(S + (1 if dtype == "fp8" else 0))
    if dtype == "bf16":
        a = (torch.rand(S, S, device="cuda", generator=g) * 2 - 1).bfloat16()
        b = (torch.rand(S, S, device="cuda", generator=g) * 2 - 1).bfloat16()
        return a, b
    a = (torch.rand(S, S, device="cuda", generator=g) * 8 - 4).to(torch.float8_e4m3fn)
    bt = (torch.rand(S, S, device="cuda", generator=g) * 8 - 4).to(torch.float8_e4m3fn)  # B^T [N, K]
    return a, bt.t()  # B [K, N], column-major


def rel_err(c, ref):
    return ((c.float() - ref).norm() / ref.norm()).item()


def triton_worker(mode, sizes, tl_cfgs, out):
    """Runs in a process of its own, DISABLE_MMA_V3 set by the parent."""
    import torch
    from triton.testing import do_bench
    rows = []
    for dtype in ("bf16", "fp8"):
        for S in sizes:
            a, b = inputs(dtype, S)
            ref = a.float() @ b.float()
            c = torch.empty(S, S, device="cuda", dtype=torch.bfloat16)
            ours = tuple(tl_cfgs.get(f"{dtype} {S}", TL_NVIDIA[dtype]))
            cfgs = [("tl's config", ours)] + [("anchor", x) for x in ANCHOR_CFGS if tuple(x) != ours]
            for which, (BM, BN, BK, ST, W) in cfgs:
                f = lambda: matmul[(triton.cdiv(S, BM) * triton.cdiv(S, BN),)](
                    a, b, c, S, S, S, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                    BM, BN, BK, GROUP, ST, num_warps=W)
                row = {"impl": f"triton {mode}", "which": which, "dtype": dtype, "M": S, "N": S, "K": S,
                       "config": [BM, BN, BK, ST, W]}
                try:
                    c.fill_(float("nan"))
                    f()
                    torch.cuda.synchronize()
                except Exception as e:  # out of shared memory, say
                    row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:200]}")
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    continue
                err = rel_err(c, ref)
                ms = do_bench(f, warmup=25, rep=200, return_mode="median")
                row.update(ms=ms, tflops=2.0 * S ** 3 / ms / 1e9, rel_norm_error=err, ok=bool(err < 1e-2))
                rows.append(row)
                print(json.dumps(row), flush=True)
            del a, b, ref, c
            torch.cuda.empty_cache()
    with open(out, "w") as fh:
        json.dump({"triton": triton.__version__, "rows": rows}, fh, indent=1)


def torch_side(sizes):
    import torch
    from triton.testing import do_bench
    rows = []
    for dtype in ("bf16", "fp8"):
        for S in sizes:
            a, b = inputs(dtype, S)
            row = {"impl": "torch", "dtype": dtype, "M": S, "N": S, "K": S}
            if dtype == "bf16":
                f = lambda: a @ b
                row["op"] = "torch.matmul"
                ref = a.float() @ b.float()
            else:
                g = torch.Generator(device="cuda").manual_seed(7 + S)
                sa = torch.exp2(torch.rand(S, 1, device="cuda", generator=g) * 4 - 2)  # [0.25, 4), as tl's
                sb = torch.exp2(torch.rand(1, S, device="cuda", generator=g) * 4 - 2)
                try:
                    torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                    row["op"] = "torch._scaled_mm, row-wise scales"
                except Exception:
                    sa = sb = torch.ones((), device="cuda")
                    row["op"] = "torch._scaled_mm, tensor-wise scales"
                f = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                ref = (a.float() @ b.float()) * sa * sb
            c = f()
            torch.cuda.synchronize()
            err = rel_err(c, ref)
            ms = do_bench(f, warmup=25, rep=200, return_mode="median")
            row.update(ms=ms, tflops=2.0 * S ** 3 / ms / 1e9, rel_norm_error=err, ok=bool(err < 1e-2))
            rows.append(row)
            print(json.dumps(row), flush=True)
            del a, b, c, ref
            torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------- dry run

def static_compile_check():
    """The Triton kernel compiled for sm_90 at every configuration, bf16 and FP8 (no GPU)."""
    if triton is None:
        print("(Triton not installed: no static compile check)")
        return
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    sig = {"A": "*bf16", "B": "*bf16", "C": "*bf16", "M": "i32", "N": "i32", "K": "i32", "sam": "i32",
           "sak": "constexpr", "sbk": "i32", "sbn": "i32", "scm": "i32", "scn": "constexpr",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "GROUP": "constexpr", "STAGES": "constexpr"}
    for dt, ty in (("bf16", "*bf16"), ("fp8", "*fp8e4nv")):
        for BM, BN, BK, ST, W in sorted({TL_NVIDIA[dt], *ANCHOR_CFGS}):
            s = dict(sig); s["A"] = s["B"] = ty
            # the unit strides Triton's launcher specializes: B row-major for bf16,
            # column-major (stride 1 along K) for FP8
            unit = "sbn" if dt == "bf16" else "sbk"
            s[unit] = "constexpr"
            consts = {"sak": 1, "scn": 1, unit: 1, "BM": BM, "BN": BN, "BK": BK, "GROUP": GROUP, "STAGES": ST}
            t0 = time.perf_counter()
            try:
                k = triton.compile(ASTSource(fn=matmul, signature=s, constexprs=consts),
                                   target=GPUTarget("cuda", 90, 32), options={"num_warps": W, "num_stages": ST})
                n = k.asm["ptx"].count("mma.sync") + k.asm["ptx"].count("wgmma.mma_async")
                print(f"triton sm_90 {dt} {cfg_str((BM, BN, BK, ST, W))}: compiled, {n} mma instructions in the PTX, "
                      f"{(time.perf_counter() - t0) * 1e3:.0f} ms")
            except Exception as e:
                print(f"triton sm_90 {dt} {cfg_str((BM, BN, BK, ST, W))}: {type(e).__name__} {str(e)[:120]}")


# ---------------------------------------------------------------- tables

def write_tables(out, sizes, tl_runs, rows, device_name, versions):
    def pick(impl, dtype, S, which=None):
        c = [r for r in rows if r["impl"] == impl and r["dtype"] == dtype and r["M"] == S and r.get("ok")
             and (which is None or r.get("which") == which)]
        return max(c, key=lambda r: r["tflops"]) if c else None

    def cell(r, with_cfg=False):
        if r is None:
            return "-"
        s = f"{r['tflops']:.3g}"
        if with_cfg:
            s += f" ({cfg_str(r['config'])})"
        return s

    lines = [f"# GEMM: {device_name}, {time.strftime('%Y-%m-%d')}", "",
             "TFLOP/s (2*M*N*K / median time; CUDA-event medians, the L2 flushed before each call on every side). "
             "tl: samples/gemm (tl::dot on wgmma where sm_90 allows it, else mma.sync; K loop "
             "pipelined through shared memory), with gemm::choose's configuration; Triton: the anchor's tutorial "
             "matmul at tl's configuration and the best of the anchor's four, with mma.sync (DISABLE_MMA_V3=1) and "
             "wgmma; torch: torch.matmul / torch._scaled_mm. FP8: e4m3, B column-major; tl and torch apply row and "
             "column scales, the anchor's Triton kernel none. Configurations: BLOCK_M x BLOCK_N x BLOCK_K, "
             "num_stages, num_warps; GROUP_SIZE_M 8.", "",
             f"Versions: {versions}", "",
             "| case | tl (config) | tl tutorial transcription | Triton mma.sync, tl's config | "
             "Triton mma.sync, best of anchor's | Triton wgmma, tl's config | Triton wgmma, best of anchor's | torch | "
             "tl / Triton mma.sync (same config) | tl / Triton wgmma (same config) | tutorial / tl sample | "
             "tutorial / Triton wgmma (same config) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    table = []
    for dtype in ("bf16", "fp8"):
        for S in sizes:
            t = next((r for r in tl_runs if r["dtype"] == dtype and r["M"] == S and r.get("kernel", "sample") == "sample"),
                     None)
            tu = next((r for r in tl_runs if r["dtype"] == dtype and r["M"] == S and r.get("kernel") == "tutorial"), None)
            tr = dict(t, config=tl_cfg_of(t)) if t else None
            ms_same, ms_best = pick("triton mma.sync", dtype, S, "tl's config"), pick("triton mma.sync", dtype, S)
            wg_same, wg_best = pick("triton wgmma", dtype, S, "tl's config"), pick("triton wgmma", dtype, S)
            th = pick("torch", dtype, S)
            ratio = f"{t['tflops'] / ms_same['tflops']:.2f}" if t and t.get("ok") and ms_same else "-"
            ratio_wg = f"{t['tflops'] / wg_same['tflops']:.2f}" if t and t.get("ok") and wg_same else "-"
            wrong = " WRONG" if t and not t.get("ok") else ""
            tu_ok = tu is not None and tu.get("ok")
            tu_cell = "-" if tu is None else f"{tu['tflops']:.3g}" + ("" if tu_ok else " WRONG")
            tu_sample = f"{tu['tflops'] / t['tflops']:.2f}" if tu_ok and t and t.get("ok") else "-"
            tu_triton = f"{tu['tflops'] / wg_same['tflops']:.2f}" if tu_ok and wg_same else "-"
            lines.append(f"| {dtype} {S}^3 | {cell(tr, True)}{wrong} | {tu_cell} | {cell(ms_same)} | "
                         f"{cell(ms_best, True)} | {cell(wg_same)} | {cell(wg_best, True)} | {cell(th)} | {ratio} | "
                         f"{ratio_wg} | {tu_sample} | {tu_triton} |")
            table.append({"dtype": dtype, "size": S, "tl": t and t["tflops"], "tl_ok": t and t["ok"],
                          "tl_tutorial": tu and tu["tflops"], "tl_tutorial_ok": tu and tu["ok"],
                          "triton_mma_sync_tl_config": ms_same and ms_same["tflops"],
                          "triton_mma_sync_best": ms_best and ms_best["tflops"],
                          "triton_wgmma_tl_config": wg_same and wg_same["tflops"],
                          "triton_wgmma_best": wg_best and wg_best["tflops"], "torch": th and th["tflops"]})
    bad = [r for r in rows if not r.get("ok")] + [r for r in tl_runs if not r.get("ok")]
    for r in bad:
        lines.append(f"- failed: {r['impl']} {r['dtype']} {r['M']}^3 {r.get('config', '')}: "
                     f"{r.get('error', 'error %s' % r.get('rel_norm_error', r.get('worst_over_bound')))}")
    md = "\n".join(lines) + "\n"
    open(os.path.join(out, "gemm.md"), "w").write(md)
    print(md)
    with open(os.path.join(out, "gemm.json"), "w") as fh:
        json.dump({"device": device_name, "versions": versions, "table": table, "tl": tl_runs, "rows": rows}, fh,
                  indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib missing: no plot)")
        return
    series = [("tl", "tl"), ("tl tutorial transcription", "tl_tutorial"),
              ("Triton mma.sync (tl's config)", "triton_mma_sync_tl_config"),
              ("Triton mma.sync (best)", "triton_mma_sync_best"),
              ("Triton wgmma (tl's config)", "triton_wgmma_tl_config"), ("Triton wgmma (best)", "triton_wgmma_best"),
              ("torch", "torch")]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(series)
    for i, (label, key) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(table))]
        ax.bar(xs, [(r[key] or 0) for r in table], width, label=label)
    ax.set_xticks(range(len(table)))
    ax.set_xticklabels([f"{r['dtype']} {r['size']}^3" for r in table])
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"GEMM, {device_name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "gemm.png"), dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-gemm (else Triton and torch only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated M=N=K")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch (see the module's docstring)")
    ap.add_argument("--triton-worker", choices=list(MODES), help=argparse.SUPPRESS)
    ap.add_argument("--tl-configs", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.triton_worker:
        triton_worker(a.triton_worker, sizes, json.loads(a.tl_configs), a.worker_out)
        return
    os.makedirs(a.out, exist_ok=True)
    tl_runs = []
    if a.tl:
        js = os.path.join(a.out, "tl_gemm.json")
        cmd = [a.tl, "--json", js, "--repeats", str(a.repeats)] + sum((["--size", str(s)] for s in sizes), [])
        print("+ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=False)  # a wrong result still writes its JSON (ok: false)
        tl_runs = json.load(open(js))["runs"]
        jt = os.path.join(a.out, "tl_gemm_tutorial.json")
        cmd = [a.tl, "--kernel", "tutorial", "--dtype", "bf16", "--json", jt, "--repeats", str(a.repeats)] + sum(
            (["--size", str(s)] for s in sizes), [])
        print("+ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=False)
        if os.path.exists(jt):
            tl_runs += json.load(open(jt))["runs"]
    tl_cfgs = {f"{r['dtype']} {r['M']}": tl_cfg_of(r) for r in tl_runs if r.get("kernel", "sample") == "sample"}
    rows = []
    if a.dry_run:
        static_compile_check()
        for mode, v in MODES.items():
            print(f"+ DISABLE_MMA_V3={v} TRITON_CACHE_DIR=/tmp/triton-cache-gemm-{mode} {sys.executable} {__file__} "
                  f"--triton-worker {mode} --sizes {a.sizes} --tl-configs '{json.dumps(tl_cfgs)}' --worker-out ...")
        rows = []  # nothing measured: the tables show tl's runs only
        device_name, versions = "no GPU", f"triton {triton.__version__ if triton else 'not installed'}"
    else:
        import torch
        device_name = torch.cuda.get_device_properties(0).name
        for mode, v in MODES.items():
            wout = os.path.join(a.out, f"triton_{mode}.json")
            env = dict(os.environ, DISABLE_MMA_V3=v, TRITON_CACHE_DIR=f"/tmp/triton-cache-gemm-{mode}",
                       PYTHONUNBUFFERED="1")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--triton-worker", mode, "--sizes", a.sizes,
                            "--tl-configs", json.dumps(tl_cfgs), "--worker-out", wout], env=env, check=True)
            rows += json.load(open(wout))["rows"]
        rows += torch_side(sizes)
        versions = f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}"
    write_tables(a.out, sizes, tl_runs, rows, device_name, versions)
    if tl_runs and not all(r["ok"] for r in tl_runs):
        raise SystemExit("a tl result was wrong")


if __name__ == "__main__":
    main()

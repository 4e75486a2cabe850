#!/usr/bin/env python3
"""Fused attention forward: Triton's tutorial 06 transcribed into tl, beside Triton's own and
torch's SDPA, bf16 Q, K, V, O of [BH, S, D], f32 accumulation.

Shapes (BH, S, D, causal): (32, 4096, 128) non-causal and causal, (64, 2048, 64) non-causal.
Configurations (BLOCK_M x BLOCK_N, num_warps, num_stages): 128x64 w4 s2, 64x64 w4 s2,
128x128 w8 s2. TFLOP/s = 4*BH*S^2*D / time (half the flops when causal).

  tl      bench/attention_tutorial.hpp through bench/attention_bench.cpp (tl-bench-attention):
          the tutorial's kernel statement for statement (tl::dot on mma.sync, the key loop
          `tl::range(..., tl::num_stages(STAGES))`, K^T and V loaded from pointers computed from
          the induction variable, online softmax in exp2); checked against its float64 host
          reference on sampled rows; registers and spills from its compile report (the driver's)
  Triton  the same algorithm (../shared/anchors/attention_anchor.py's attn_fwd, rewritten below
          so that this script stands alone) at the same configurations; once with
          DISABLE_MMA_V3=1 (mma.sync, the instruction class tl uses) and once by default (wgmma
          on Hopper), each in its own process and TRITON_CACHE_DIR (the variable is read at
          import); registers and spills from the CompiledKernel (n_regs, n_spills)
  torch   torch.nn.functional.scaled_dot_product_attention on bf16 [1, BH, S, D], is_causal
          (whatever backend torch picks: flash attention on the H100)

Inputs: Q and K uniform in [-2, 2), V in [-1, 1) (tl's test and bench use the same ranges),
sm_scale 1/sqrt(D). Triton and torch are checked against an f32 softmax(Q.K^T * scale) V of
three batch*heads (first, middle, last): |err| <= 1e-2 + 1e-2 * |ref| everywhere (tl's bound).
Times: the median of triton.testing.do_bench (warmup 25, rep 200, return_mode="median": the
L2 flushed before every call, CUDA events around it); tl-bench-attention times the same way
(bench/timing.hpp, time_ms_flushed: a 256 MiB write before every call, CUDA events, median).

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh; bench/run_on_gpu.sh with
TL_BENCHES=attention runs this):
    python3 bench/run_attention_bench.py --tl /tmp/tl/bin/tl-bench-attention --out $OUT
Writes attention.json (every run), attention.md (the table), attention.png and
tl_attention.json to --out.
--dry-run needs no GPU, no torch and no Triton: it compiles the Triton kernel for sm_90 at every
configuration where Triton is installed, runs tl-bench-attention --smoke if --tl is given (tiny
shapes on whatever device it finds: the CPU here) and writes the tables and plot with tl's runs
only (nothing is made up for the columns it did not measure).
"""
import argparse, json, math, os, subprocess, sys, time

SHAPES = [(32, 4096, 128, False), (32, 4096, 128, True), (64, 2048, 64, False)]
CONFIGS = [(128, 64, 4, 2), (64, 64, 4, 2), (128, 128, 8, 2)]  # BLOCK_M, BLOCK_N, num_warps, num_stages
MODES = {"mma.sync": "1", "default": "0"}  # DISABLE_MMA_V3
ATOL = RTOL = 1e-2

try:
    import triton
    import triton.language as tl
except ImportError:  # --dry-run without Triton
    triton = None

if triton is not None:

    @triton.jit
    def attn_fwd(Q, K, V, O, S, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
                 CAUSAL: tl.constexpr, STAGES: tl.constexpr):
        # Tutorial 06's forward as ../shared/anchors/attention_anchor.py writes it: the Q block
        # once, K^T and V from pointers of the loop's induction variable, online softmax in exp2.
        start_m = tl.program_id(0)
        bh = tl.program_id(1)
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, D)
        base = bh * S * D
        row_ok = (offs_m < S)[:, None]
        q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=row_ok, other=0.0)
        m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, D], tl.float32)
        qk_scale = sm_scale * 1.44269504  # log2(e): exp2 below
        hi = S
        if CAUSAL:
            hi = tl.minimum((start_m + 1) * BLOCK_M, S)
        for n in tl.range(0, hi, BLOCK_N, num_stages=STAGES):
            kn = n + offs_n
            kt = tl.load(K + base + kn[None, :] * D + offs_d[:, None], mask=(kn < S)[None, :], other=0.0)
            qk = tl.dot(q, kt) * qk_scale
            keep = (kn < S)[None, :]
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= kn[None, :])
            qk = tl.where(keep, qk, -float("inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(V + base + kn[:, None] * D + offs_d[None, :], mask=(kn < S)[:, None], other=0.0)
            acc = tl.dot(p.to(tl.bfloat16), v, acc)
            m_i = m_ij
        acc = acc / l_i[:, None]
        tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.bfloat16), mask=row_ok)


def flops(BH, S, D, causal):
    return 4.0 * BH * S * S * D * (0.5 if causal else 1.0)


def cfg_str(c):
    return f"{c[0]}x{c[1]} w{c[2]} s{c[3]}"


def shape_str(s):
    return f"BH={s[0]} S={s[1]} D={s[2]}"


def tl_cfg_of(run):
    c = run["config"]
    return (c["block_m"], c["block_n"], c["num_warps"], c["num_stages"])


def key_of(r):
    """(BH, S, D, causal, config) of a row, tl's or the Python side's."""
    cfg = tl_cfg_of(r) if isinstance(r.get("config"), dict) else tuple(r["config"]) if r.get("config") else None
    return (r["BH"], r["S"], r["D"], bool(r["causal"]), cfg)


# ---------------------------------------------------------------- GPU work (torch)

def inputs(BH, S, D, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = ((torch.rand(BH, S, D, device="cuda", generator=g) * 2 - 1) * 2).bfloat16()
    k = ((torch.rand(BH, S, D, device="cuda", generator=g) * 2 - 1) * 2).bfloat16()
    v = (torch.rand(BH, S, D, device="cuda", generator=g) * 2 - 1).bfloat16()
    return q, k, v


def reference_heads(q, k, v, causal, scale):
    """f32 softmax(Q.K^T * scale) V of three batch*heads, and which."""
    import torch
    BH, S, _ = q.shape
    heads = sorted({0, BH // 2, BH - 1})
    refs = []
    for h in heads:
        s = (q[h].float() @ k[h].float().T) * scale
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        refs.append(torch.softmax(s, dim=-1) @ v[h].float())
    return heads, refs


def check(o, heads, refs):
    """(ok, worst |err| / (ATOL + RTOL |ref|), relative Frobenius error) over the reference heads."""
    worst, num, den = 0.0, 0.0, 0.0
    for h, ref in zip(heads, refs):
        got = o[h].float()
        err = (got - ref).abs()
        w = (err / (ATOL + RTOL * ref.abs())).max().item()
        worst = max(worst, w) if not math.isnan(w) else float("nan")
        num += (err * err).sum().item()
        den += (ref * ref).sum().item()
    rel = math.sqrt(num / den) if den > 0 else float("nan")
    return bool(worst <= 1.0), worst, rel


def triton_worker(mode, shapes, configs, out):
    """Runs in a process of its own, DISABLE_MMA_V3 set by the parent."""
    import torch
    from triton.testing import do_bench
    rows = []
    for BH, S, D, causal in shapes:
        q, k, v = inputs(BH, S, D, seed=S + D + int(causal))
        scale = 1.0 / math.sqrt(D)
        heads, refs = reference_heads(q, k, v, causal, scale)
        o = torch.empty_like(q)
        for BM, BN, W, ST in configs:
            f = lambda: attn_fwd[(triton.cdiv(S, BM), BH)](q, k, v, o, S, scale, BLOCK_M=BM, BLOCK_N=BN, D=D,
                                                            CAUSAL=causal, STAGES=ST, num_warps=W)
            row = {"impl": f"triton {mode}", "BH": BH, "S": S, "D": D, "causal": causal, "config": [BM, BN, W, ST]}
            try:
                o.fill_(float("nan"))
                compiled = f()
                torch.cuda.synchronize()
            except Exception as e:  # out of shared memory or registers, say
                row.update(ok=False, skipped=True, error=f"{type(e).__name__}: {str(e)[:300]}")
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            ok, worst, rel = check(o, heads, refs)
            ms = do_bench(f, warmup=25, rep=200, return_mode="median")
            row.update(ms=ms, tflops=flops(BH, S, D, causal) / ms / 1e9, ok=ok, worst_over_bound=worst,
                       rel_norm_error=rel, registers=getattr(compiled, "n_regs", None),
                       spills=getattr(compiled, "n_spills", None))
            rows.append(row)
            print(json.dumps(row), flush=True)
        q = k = v = o = refs = None  # free the GPU memory before the next shape
        torch.cuda.empty_cache()
    with open(out, "w") as fh:
        json.dump({"triton": triton.__version__, "rows": rows}, fh, indent=1)


def torch_side(shapes):
    import torch
    from triton.testing import do_bench
    F = torch.nn.functional
    rows = []
    for BH, S, D, causal in shapes:
        q, k, v = inputs(BH, S, D, seed=S + D + int(causal))
        scale = 1.0 / math.sqrt(D)
        heads, refs = reference_heads(q, k, v, causal, scale)
        q4, k4, v4 = (x.view(1, BH, S, D) for x in (q, k, v))
        f = lambda: F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal, scale=scale)
        o = f().view(BH, S, D)
        torch.cuda.synchronize()
        ok, worst, rel = check(o, heads, refs)
        ms = do_bench(f, warmup=25, rep=200, return_mode="median")
        row = {"impl": "torch", "op": "scaled_dot_product_attention", "BH": BH, "S": S, "D": D, "causal": causal,
               "config": None, "ms": ms, "tflops": flops(BH, S, D, causal) / ms / 1e9, "ok": ok,
               "worst_over_bound": worst, "rel_norm_error": rel}
        rows.append(row)
        print(json.dumps(row), flush=True)
        q = k = v = o = refs = None  # free the GPU memory before the next shape
        torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------- dry run

def static_compile_check(shapes, configs):
    """The Triton kernel compiled for sm_90 at every shape's D and causality and configuration (no GPU)."""
    if triton is None:
        print("(Triton not installed: no static compile check)")
        return
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    sig = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "S": "i32", "sm_scale": "fp32",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "D": "constexpr", "CAUSAL": "constexpr",
           "STAGES": "constexpr"}
    for D, causal in sorted({(s[2], s[3]) for s in shapes}):
        for BM, BN, W, ST in configs:
            consts = {"BLOCK_M": BM, "BLOCK_N": BN, "D": D, "CAUSAL": causal, "STAGES": ST}
            name = f"triton sm_90 D={D} causal={int(causal)} {cfg_str((BM, BN, W, ST))}"
            t0 = time.perf_counter()
            try:
                k = triton.compile(ASTSource(fn=attn_fwd, signature=sig, constexprs=consts),
                                   target=GPUTarget("cuda", 90, 32), options={"num_warps": W, "num_stages": ST})
                ptx = k.asm["ptx"]
                print(f"{name}: compiled, {ptx.count('mma.sync')} mma.sync and {ptx.count('wgmma.mma_async')} "
                      f"wgmma in the PTX, {(time.perf_counter() - t0) * 1e3:.0f} ms")
            except Exception as e:
                print(f"{name}: {type(e).__name__} {str(e)[:160]}")


# ---------------------------------------------------------------- tables

def write_tables(out, tl_runs, rows, device_name, versions):
    everything = tl_runs + rows
    keys = []  # (BH, S, D, causal, config) in the order measured, tl's first
    for r in everything:
        k = key_of(r)
        if k[4] is not None and k not in keys:
            keys.append(k)

    def pick(impl, key):
        return next((r for r in everything if r["impl"] == impl and key_of(r) == key), None)

    def torch_of(key):
        return next((r for r in rows if r["impl"] == "torch" and key_of(r)[:4] == key[:4]), None)

    def val(r):
        return r["tflops"] if r and r.get("ok") and r.get("tflops") else None

    def cell(r):
        if r is None:
            return "-"
        if r.get("skipped"):
            return "skipped"
        if not r.get("ok"):
            return f"{r['tflops']:.3g} WRONG" if r.get("tflops") else "WRONG"
        return f"{r['tflops']:.3g}"

    def ratio(a, b):
        return f"{val(a) / val(b):.2f}" if val(a) and val(b) else "-"

    def res(r):
        if r is None or r.get("registers") in (None, -1):
            return "-"
        s = r.get("spills")
        return f"{r['registers']} / {s if s not in (None, -1) else '?'}"

    lines = [f"# Fused attention forward (Triton tutorial 06): {device_name}, {time.strftime('%Y-%m-%d')}", "",
             "TFLOP/s (4*BH*S^2*D / median time, half the flops when causal; triton.testing.do_bench's method: "
             "L2 flushed before each call, CUDA events, median). bf16 Q, K, V, O [BH, S, D], f32 accumulation, "
             "sm_scale 1/sqrt(D). tl: bench/attention_tutorial.hpp, the tutorial's kernel transcribed (tl::dot on "
             "mma.sync); Triton: the same kernel with mma.sync (DISABLE_MMA_V3=1) and by default (wgmma on Hopper); "
             "torch: scaled_dot_product_attention (its own kernel, one number per shape). Configurations: BLOCK_M x "
             "BLOCK_N, num_warps, num_stages. Registers / spills: per thread, from the driver (tl) and the "
             "CompiledKernel (Triton).", "",
             f"Versions: {versions}", "",
             "| shape | causal | config | tl | Triton mma.sync | Triton default | torch SDPA | tl / Triton mma.sync | "
             "tl / Triton default | tl / torch | tl regs / spills | Triton mma.sync regs / spills |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    table = []
    for key in keys:
        t, ms, df, th = pick("tl", key), pick("triton mma.sync", key), pick("triton default", key), torch_of(key)
        lines.append(f"| {shape_str(key)} | {'yes' if key[3] else 'no'} | {cfg_str(key[4])} | {cell(t)} | {cell(ms)} | "
                     f"{cell(df)} | {cell(th)} | {ratio(t, ms)} | {ratio(t, df)} | {ratio(t, th)} | {res(t)} | "
                     f"{res(ms)} |")
        table.append({"BH": key[0], "S": key[1], "D": key[2], "causal": key[3], "config": list(key[4]),
                      "tl": val(t), "tl_ok": t and t.get("ok"), "triton_mma_sync": val(ms), "triton_default": val(df),
                      "torch": val(th), "tl_registers": t and t.get("registers"), "tl_spills": t and t.get("spills"),
                      "triton_mma_sync_registers": ms and ms.get("registers"),
                      "triton_mma_sync_spills": ms and ms.get("spills")})
    for r in everything:
        if r.get("skipped"):
            lines.append(f"- skipped: {r['impl']} {shape_str(key_of(r))} causal={int(bool(r['causal']))} "
                         f"{cfg_str(key_of(r)[4])}: {r.get('error', '')[:300]}")
        elif not r.get("ok"):
            lines.append(f"- wrong: {r['impl']} {shape_str(key_of(r))} causal={int(bool(r['causal']))} "
                         f"{cfg_str(key_of(r)[4]) if key_of(r)[4] else ''}: worst |err| / bound "
                         f"{r.get('worst_over_bound')}")
    md = "\n".join(lines) + "\n"
    open(os.path.join(out, "attention.md"), "w").write(md)
    print(md)
    with open(os.path.join(out, "attention.json"), "w") as fh:
        json.dump({"device": device_name, "versions": versions, "table": table, "tl": tl_runs, "rows": rows}, fh,
                  indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib missing: no plot)")
        return
    series = [("tl", "tl"), ("Triton mma.sync", "triton_mma_sync"), ("Triton default", "triton_default"),
              ("torch SDPA", "torch")]
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(table)), 5))
    width = 0.8 / len(series)
    for i, (label, k) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(table))]
        ax.bar(xs, [(r[k] or 0) for r in table], width, label=label)
    ax.set_xticks(range(len(table)))
    ax.set_xticklabels([f"BH{r['BH']} S{r['S']} D{r['D']}\n{'causal' if r['causal'] else 'non-causal'}\n"
                        f"{cfg_str(r['config'])}" for r in table], fontsize=7)
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"Fused attention forward, {device_name}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "attention.png"), dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-attention (else Triton and torch only)")
    ap.add_argument("--tl-args", default="", help="extra tl-bench-attention arguments")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=100, help="tl-bench-attention's timed calls")
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch (see the module's docstring)")
    ap.add_argument("--triton-worker", choices=list(MODES), help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.triton_worker:
        triton_worker(a.triton_worker, SHAPES, CONFIGS, a.worker_out)
        return
    os.makedirs(a.out, exist_ok=True)
    tl_runs = []
    if a.tl:
        js = os.path.join(a.out, "tl_attention.json")
        cmd = [a.tl, "--json", js, "--repeats", str(a.repeats)] + (["--smoke"] if a.dry_run else []) + a.tl_args.split()
        print("+ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, check=False)  # a wrong result still writes its JSON (ok: false)
        if p.returncode not in (0, 1):
            raise SystemExit(f"tl-bench-attention failed ({p.returncode})")
        tl_runs = json.load(open(js))["runs"]
    rows = []
    if a.dry_run:
        static_compile_check(SHAPES, CONFIGS)
        for mode, v in MODES.items():
            print(f"+ DISABLE_MMA_V3={v} TRITON_CACHE_DIR=/tmp/triton-cache-attention-{mode} {sys.executable} "
                  f"{__file__} --triton-worker {mode} --worker-out ...")
        device_name, versions = "no GPU", f"triton {triton.__version__ if triton else 'not installed'}"
    else:
        import torch
        device_name = torch.cuda.get_device_properties(0).name
        for mode, v in MODES.items():
            wout = os.path.join(a.out, f"triton_attention_{mode}.json")
            env = dict(os.environ, DISABLE_MMA_V3=v, TRITON_CACHE_DIR=f"/tmp/triton-cache-attention-{mode}",
                       PYTHONUNBUFFERED="1")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--triton-worker", mode, "--worker-out", wout],
                           env=env, check=True)
            rows += json.load(open(wout))["rows"]
        rows += torch_side(SHAPES)
        versions = f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}"
    write_tables(a.out, tl_runs, rows, device_name, versions)
    if tl_runs and not all(r["ok"] or r.get("skipped") for r in tl_runs):
        raise SystemExit("a tl result was wrong")


if __name__ == "__main__":
    main()

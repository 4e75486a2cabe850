#!/usr/bin/env python3
"""MLP activations over [16384, 8192] bf16: tl and Triton in one run (issue 40).

  GELU-tanh  y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  SwiGLU     y = silu(a) b = a sigmoid(a) b

Both computed in f32 from bf16 and stored as bf16, written as a Triton user writes them:
Liger Kernel's geglu / swiglu math (libdevice tanh, tl.sigmoid) over the flattened
tensor, tutorial 01's programs of BLOCK_SIZE = 1024 at 4 warps, the same as tl's
(bench/activation_bench.cpp, tl-bench-activation, whose JSON says its block and warps).

The inputs are the tl benchmark's (a 32-bit hash of the index, to [-6, 6)); each result is
checked against a float64 torch reference (within a bf16 rounding) before it is timed.
GB/s counts GELU 2 + 2 bytes an element, SwiGLU 2 + 2 + 2; CUDA-event medians
(triton.testing.do_bench, return_mode="median"; tl: CUDA events around batches, medians).

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_activation_bench.py --tl /tmp/tl/bin/tl-bench-activation --out $OUT
Writes activation.csv, activation.md and tl_activation.json to --out. Without --tl, only
Triton runs.
"""
import argparse, csv, json, os, subprocess, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

try:  # Triton 3.x
    from triton.language.extra.libdevice import tanh
except ImportError:  # older layouts
    from triton.language.extra.cuda.libdevice import tanh

ROWS, COLS = 16384, 8192
BLOCK_SIZE, NUM_WARPS = 1024, 4


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sqrt_2_over_pi = 0.7978845608028654
    inner = sqrt_2_over_pi * (a + 0.044715 * a * a * a)
    g = 0.5 * a * (1 + tanh(inner))
    tl.store(y_ptr + offs, g.to(tl.bfloat16), mask=mask)


@triton.jit
def swiglu_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    c = a * tl.sigmoid(a) * b
    tl.store(c_ptr + offs, c.to(tl.bfloat16), mask=mask)


def hashed(n, salt):
    # bench/activation_bench.cpp's inputs(): tlbench::hash32 of (i + salt) mod 2^32, to
    # [-6, 6) (exact in f32, then rounded to bf16), in chunks (int64 temporaries)
    out = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    m, step = 0xFFFFFFFF, 1 << 26
    for s in range(0, n, step):
        x = (torch.arange(s, min(n, s + step), device="cuda", dtype=torch.int64) + salt) & m
        x = x ^ (x >> 16)
        x = (x * 0x7FEB352D) & m
        x = x ^ (x >> 15)
        x = (x * 0x2C1B3C6D) & m
        x = x ^ (x >> 16)
        out[s:s + x.numel()] = (((x >> 8) - (1 << 23)).float() * 2.0 ** -23 * 6.0).to(torch.bfloat16)
    return out


def check(got, want, name, slack=0.0):
    # within a bf16 rounding of the float64 value (2^-8 relative) and the f32 error below it;
    # `slack` for GELU's 1 + tanh(...), which cancels for negative x in any f32 evaluation
    bad = ((got.double() - want).abs() > want.abs() * 2.0 ** -8 * (1 + 2.0 ** -10) + slack + 2.0 ** -126).sum().item()
    assert bad == 0, (name, bad)


def triton_side(rows, cols):
    n = rows * cols
    x, b = hashed(n, 0), hashed(n, 0x5BD1E995)
    y = torch.empty_like(x)
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    res = {}
    gelu = lambda: gelu_tanh_kernel[grid](x, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    swiglu = lambda: swiglu_kernel[grid](x, b, y, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    refs = {  # float64, a chunk at a time
        "gelu_tanh": lambda xc, bc: 0.5 * xc * (1 + torch.tanh(0.7978845608028654 * (xc + 0.044715 * xc ** 3))),
        "swiglu": lambda xc, bc: xc * torch.sigmoid(xc) * bc,
    }
    for name, fn, nbytes in (("gelu_tanh", gelu, 4 * n), ("swiglu", swiglu, 6 * n)):
        y.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        for s in range(0, n, 1 << 25):
            e = min(n, s + (1 << 25))
            xc = x[s:e].double()
            check(y[s:e], refs[name](xc, b[s:e].double()), f"triton {name}",
                  xc.abs() * 2.0 ** -21 if name == "gelu_tanh" else 0.0)
        ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
        res[name] = {"ms": ms, "gbs": nbytes / ms / 1e6}
        print(f"triton {name:<10} {ms:8.3f} ms {nbytes / ms / 1e6:7.0f} GB/s  ok", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-activation (else Triton only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    tlr = {}
    if a.tl:
        tl_json = os.path.join(a.out, "tl_activation.json")
        subprocess.run([a.tl, "--json", tl_json, "--repeats", str(a.repeats), "--rows", str(ROWS), "--cols", str(COLS)],
                       check=True)
        tlj = json.load(open(tl_json))
        assert tlj["block_size"] == BLOCK_SIZE and tlj["num_warps"] == NUM_WARPS, tlj
        tlr = {k["name"]: k for k in tlj["kernels"]}
    tri = triton_side(ROWS, COLS)
    lines = [f"# MLP activations, [{ROWS}, {COLS}] bf16: {props.name}, {time.strftime('%Y-%m-%d')}", "",
             f"Elementwise in f32, BLOCK_SIZE {BLOCK_SIZE}, {NUM_WARPS} warps, both sides; GB/s of the bytes moved "
             "(GELU 4 an element, SwiGLU 6), CUDA-event medians.", "",
             "| kernel | tl GB/s | Triton GB/s | tl / Triton | tl ms | Triton ms | tl checked |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    with open(os.path.join(a.out, "activation.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["kernel", "tl_gbs", "triton_gbs", "tl_over_triton", "tl_ms", "triton_ms", "tl_ok"])
        for name, r in tri.items():
            t = tlr.get(name, {})
            nan = float("nan")
            ratio = t.get("gbs", nan) / r["gbs"]
            wr.writerow([name, round(t.get("gbs", nan)), round(r["gbs"]), round(ratio, 3), t.get("ms", ""), r["ms"],
                         t.get("ok", "")])
            lines.append(f"| {name} | {t.get('gbs', nan):.0f} | {r['gbs']:.0f} | {ratio:.2f} | {t.get('ms', nan):.3f} | "
                         f"{r['ms']:.3f} | {t.get('ok', '-')} |")
    open(os.path.join(a.out, "activation.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

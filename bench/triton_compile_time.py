#!/usr/bin/env python3
"""Triton's cold compile time for the kernels of bench/compile_bench.cpp, on this machine.

The kernels tl-bench-compile times, compiled by Triton with the launch-time
specialization Triton's JIT applies (16-byte-aligned pointers, integers divisible by 16,
unit strides the constant 1), in a warm process, with nothing cached: each compile is a
fresh specialization (TRITON_ALWAYS_COMPILE=1, a private cache folder):
  rmsnorm    the RMSNorm-size kernel (one bf16 row of 4096 per program, 4 warps)
  matmul     tutorial 03 (bf16 128x128x64, GROUP_M 8, 3 stages, 4 warps; M = N = K = 4096)
  attention  tutorial 06 forward (128x64, D=128, not causal, 2 stages, 4 warps; S = 4096)
Prints the median of --repeats compiles per kernel and target, in the format of
bench/results/compile_*.txt.

Needs `pip install triton` (no GPU: Triton compiles for AMD and NVIDIA without one).
Never part of the build or of CI.

  python3 bench/triton_compile_time.py [--repeats 7] [--kernels rmsnorm,matmul,attention]
                                       [--targets gfx942,gfx950,sm_90]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-compile-time-"))

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

# Tutorial 03's matmul as bench/amd_quality compares it (the twin of bench/matmul_tutorial.hpp).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "amd_quality"))
from triton_kernels import matmul_tutorial  # noqa: E402


@triton.jit
def rmsnorm_bench(X, Y, W, cols, eps, BLOCK: tl.constexpr):
    # Statement for statement the kernel of bench/compile_bench.cpp.
    c = tl.arange(0, BLOCK)
    m = c < cols
    row = tl.program_id(0)
    v = tl.load(X + row * cols + c, mask=m, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(v * v, 0) / cols.to(tl.float32) + eps)
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + row * cols + c, (v * inv * g).to(tl.bfloat16), mask=m)


@triton.jit
def attn_fwd(Q, K, V, O, S, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
             CAUSAL: tl.constexpr, STAGES: tl.constexpr):
    # Statement for statement bench/attention_tutorial.hpp (Triton's tutorial 06 forward).
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    base = bh * S * D
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=(offs_m < S)[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = S
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    for n in tl.range(0, hi, BLOCK_N, num_stages=STAGES):
        kn = n + offs_n
        kt = tl.load(K + base + kn[None, :] * D + offs_d[:, None], mask=(kn < S)[None, :], other=0.0)
        qk = tl.dot(q, kt) * qk_scale
        valid = (kn < S)[None, :]
        if CAUSAL:
            valid = valid & (offs_m[:, None] >= kn[None, :])
        qk = tl.where(valid, qk, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + base + kn[:, None] * D + offs_d[None, :], mask=(kn < S)[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.bfloat16), mask=(offs_m < S)[:, None])


SIG = {"X": "*bf16", "Y": "*bf16", "W": "*bf16", "cols": "i32", "eps": "fp32", "BLOCK": "constexpr"}
# Triton's JIT specialization at launch: aligned pointers, cols = 4096 divisible by 16.
ATTRS = {(i,): [["tt.divisibility", 16]] for i in range(4)}
MM_SIG = {"A": "*bf16", "B": "*bf16", "C": "*bf16", "M": "i32", "N": "i32", "K": "i32", "sam": "i32",
          "sak": "constexpr", "sbk": "i32", "sbn": "constexpr", "scm": "i32", "scn": "constexpr", "BM": "constexpr",
          "BN": "constexpr", "BK": "constexpr", "GROUP": "constexpr", "STAGES": "constexpr"}
# Pointers and M, N, K, and the row strides (4096) divisible by 16; the unit strides constants.
MM_ATTRS = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}
MM_CONST = {"sak": 1, "sbn": 1, "scn": 1, "BM": 128, "BN": 128, "BK": 64, "GROUP": 8, "STAGES": 3}
AT_SIG = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "S": "i32", "sm_scale": "fp32",
          "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "D": "constexpr", "CAUSAL": "constexpr",
          "STAGES": "constexpr"}
AT_ATTRS = {(i,): [["tt.divisibility", 16]] for i in range(5)}
AT_CONST = {"BLOCK_M": 128, "BLOCK_N": 64, "D": 128, "CAUSAL": False, "STAGES": 2}
KERNELS = {
    "rmsnorm": (rmsnorm_bench, SIG, {"BLOCK": 4096}, ATTRS),
    "matmul": (matmul_tutorial, MM_SIG, MM_CONST, MM_ATTRS),
    "attention": (attn_fwd, AT_SIG, AT_CONST, AT_ATTRS),
}
TARGETS = [("gfx942", GPUTarget("hip", "gfx942", 64)), ("gfx950", GPUTarget("hip", "gfx950", 64)),
           ("sm_90", GPUTarget("cuda", 90, 32))]


def cpu_ms():
    """CPU time of this process's threads and its reaped children (the AMD backend's ld.lld), ms:
    what holds on a loaded machine, as tl-bench-compile's "cpu" counter."""
    t = os.times()
    return (t.user + t.system + t.children_user + t.children_system) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--kernels", default="rmsnorm", help="comma-separated: " + ",".join(KERNELS))
    ap.add_argument("--targets", default=",".join(n for n, _ in TARGETS))
    args = ap.parse_args()
    print(f"# Triton {triton.__version__}, cold compiles, 4 warps, warm process")
    targets = dict(TARGETS)
    for kname in args.kernels.split(","):
        fn, sig, const, attrs = KERNELS[kname]
        for name in args.targets.split(","):
            times, cpu = [], []
            try:
                for _ in range(args.repeats + 1):  # the first compile also loads the backend: dropped
                    t0, c0 = time.perf_counter(), cpu_ms()
                    triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs),
                                   target=targets[name], options={"num_warps": 4})
                    times.append((time.perf_counter() - t0) * 1e3)
                    cpu.append(cpu_ms() - c0)
            except Exception as e:  # e.g. no ptxas in this Triton wheel for sm_90
                print(f"triton_compile/{kname}/{name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
                continue
            t = times[1:]
            print(f"triton_compile/{kname}/{name}_median {statistics.median(t):8.1f} ms  (min {min(t):.1f}, "
                  f"max {max(t):.1f}, {len(t)} compiles; cpu median {statistics.median(cpu[1:]):.1f} ms)", flush=True)


if __name__ == "__main__":
    main()

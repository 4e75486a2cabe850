#!/usr/bin/env python3
"""Triton's cold compile time for the kernel of bench/compile_bench.cpp, on this machine.

The same RMSNorm-size kernel (one bf16 row of 4096 per program, 4 warps) that
tl-bench-compile times, compiled by Triton for gfx942, gfx950 and sm_90 with the
launch-time specialization Triton's JIT applies (16-byte-aligned pointers, cols
divisible by 16), in a warm process, with nothing cached: each compile is a fresh
specialization (TRITON_ALWAYS_COMPILE=1, a private cache folder). Prints the median of
--repeats compiles per target, in the format of bench/results/compile_*.txt.

Needs `pip install triton` (no GPU: Triton compiles for AMD and NVIDIA without one).
Never part of the build or of CI.

  python3 bench/triton_compile_time.py [--repeats 7]
"""
import argparse
import os
import statistics
import tempfile
import time

os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-compile-time-"))

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


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


SIG = {"X": "*bf16", "Y": "*bf16", "W": "*bf16", "cols": "i32", "eps": "fp32", "BLOCK": "constexpr"}
# Triton's JIT specialization at launch: aligned pointers, cols = 4096 divisible by 16.
ATTRS = {(i,): [["tt.divisibility", 16]] for i in range(4)}
TARGETS = [("gfx942", GPUTarget("hip", "gfx942", 64)), ("gfx950", GPUTarget("hip", "gfx950", 64)),
           ("sm_90", GPUTarget("cuda", 90, 32))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    print(f"# Triton {triton.__version__}, cold compile of rmsnorm_bench (BLOCK=4096, 4 warps), warm process")
    for name, target in TARGETS:
        times = []
        try:
            for _ in range(args.repeats + 1):  # the first compile also loads the backend: dropped
                t0 = time.perf_counter()
                triton.compile(ASTSource(fn=rmsnorm_bench, signature=SIG, constexprs={"BLOCK": 4096}, attrs=ATTRS),
                               target=target, options={"num_warps": 4})
                times.append((time.perf_counter() - t0) * 1e3)
        except Exception as e:  # e.g. no ptxas in this Triton wheel for sm_90
            print(f"triton_compile/{name}: failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        t = times[1:]
        print(f"triton_compile/{name}_median {statistics.median(t):8.1f} ms  (min {min(t):.1f}, max {max(t):.1f}, "
              f"{len(t)} compiles)")


if __name__ == "__main__":
    main()

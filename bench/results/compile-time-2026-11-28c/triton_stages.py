#!/usr/bin/env python3
"""CPU ms of each stage of Triton 3.6's AMD compile (ttir, ttgir, llir = LLVM IR and O3,
amdgcn = llc, hsaco = ld.lld), median over the compiles after the first, for the kernels of
bench/triton_compile_time.py:  python3 triton_stages.py gfx942 rmsnorm,matmul,attention 4"""
import os, sys, time, tempfile, collections, statistics
os.environ["TRITON_ALWAYS_COMPILE"]="1"
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp())
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
import triton_compile_time as T
import triton
from triton.backends.amd.compiler import HIPBackend
from triton.compiler import ASTSource
acc = collections.defaultdict(list)
orig = HIPBackend.add_stages
def add_stages(self, stages, options, language=None):
    orig(self, stages, options, language) if language is not None else orig(self, stages, options)
    for k, f in list(stages.items()):
        def w(src, md, f=f, k=k):
            t0 = time.process_time(); r = f(src, md); acc[k].append((time.process_time()-t0)*1e3); return r
        stages[k] = w
HIPBackend.add_stages = add_stages
for kname in sys.argv[2].split(","):
    fn, sig, const, attrs = T.KERNELS[kname]
    acc.clear()
    for i in range(int(sys.argv[3])):
        triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs), target=dict(T.TARGETS)[sys.argv[1]], options={"num_warps": 4})
    print(kname, sys.argv[1], {k: round(statistics.median(v[1:]),1) for k, v in acc.items()})

#!/usr/bin/env python3
"""Why does tl's unpipelined TMA load fault (CUDA_ERROR_ILLEGAL_INSTRUCTION) on the H200 where
its pipelined one runs? tl's own PTX of TmaDescriptor.NanFill's kernel (box_orig.ptx: an f32
[16, 32] box of a [50, 70] tensor, rows 72 floats apart, 128-byte swizzle, NaN fill) and
variants of it, launched through the CUDA driver by ctypes with a tensor map encoded as tl's
runtime encodes it (runtime/tensor_map.cpp), one program a box, each (variant, corner) in a
process of its own (a fault ends the context).

    python3 tma_probe.py            (on the GPU machine, from this folder; run 1)
    PROBE=2 python3 tma_probe.py    (run 2: the sign or the alignment of the corner)

Kernel parameters (box_orig.ptx): 0 u64 base, 1-2 u32 shape, 3-4 u64 strides (the
descriptor's fields, unread by the TMA path), 5 the 128-byte map (by value, 64-aligned),
6 u64 out, 7 u64 offs (the box's corner: row, col).
"""
import ctypes as C, math, os, struct, subprocess, sys

ROWS, COLS, PITCH, BM, BN = 50, 70, 72, 16, 32


def run(ptx_path, row, col):
    cu = C.CDLL("libcuda.so.1")
    def ck(r, what):
        if r != 0:
            name = C.c_char_p()
            cu.cuGetErrorName(r, C.byref(name))
            raise RuntimeError(f"{what}: {name.value.decode()} ({r})")
    ck(cu.cuInit(0), "cuInit")
    dev = C.c_int()
    ck(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
    ctx = C.c_void_p()
    ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "retain")
    ck(cu.cuCtxSetCurrent(ctx), "set ctx")
    mod = C.c_void_p()
    ptx = open(ptx_path, "rb").read() + b"\0"
    ck(cu.cuModuleLoadData(C.byref(mod), ptx), "cuModuleLoadData")
    fn = C.c_void_p()
    ck(cu.cuModuleGetFunction(C.byref(fn), mod, b"tma_box"), "get function")
    n = ROWS * PITCH
    host = [float((i * 37) % 2001 - 1000) / 8 for i in range(n)]
    din, dout, doffs = C.c_uint64(), C.c_uint64(), C.c_uint64()
    ck(cu.cuMemAlloc_v2(C.byref(din), n * 4), "alloc in")
    ck(cu.cuMemAlloc_v2(C.byref(dout), BM * BN * 4), "alloc out")
    ck(cu.cuMemAlloc_v2(C.byref(doffs), 8), "alloc offs")
    hb = (C.c_float * n)(*host)
    ck(cu.cuMemcpyHtoD_v2(din, hb, n * 4), "upload")
    ob = (C.c_int32 * 2)(row, col)
    ck(cu.cuMemcpyHtoD_v2(doffs, ob, 8), "upload offs")
    ck(cu.cuMemsetD32_v2(dout, 0xABABABAB, BM * BN), "poison")
    tmap = (C.c_uint8 * 128)()
    gdim = (C.c_uint64 * 2)(COLS, ROWS)
    gstride = (C.c_uint64 * 1)(PITCH * 4)
    box = (C.c_uint32 * 2)(BN, BM)
    estr = (C.c_uint32 * 2)(1, 1)
    # FLOAT32 = 7, INTERLEAVE_NONE = 0, SWIZZLE_128B = 3, L2_PROMOTION_NONE = 0, OOB NAN = 1
    ck(cu.cuTensorMapEncodeTiled(tmap, 7, 2, C.c_void_p(din.value), gdim, gstride, box, estr, 0, 3, 0, 1),
       "cuTensorMapEncodeTiled")
    base, s0, s1, st0, st1 = C.c_uint64(din.value), C.c_uint32(ROWS), C.c_uint32(COLS), C.c_uint64(PITCH), C.c_uint64(1)
    args = [base, s0, s1, st0, st1, tmap, dout, doffs]
    params = (C.c_void_p * len(args))(*[C.cast(C.byref(a), C.c_void_p) for a in args])
    ck(cu.cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, None, params, None), "launch")
    ck(cu.cuCtxSynchronize(), "synchronize")
    got = (C.c_float * (BM * BN))()
    ck(cu.cuMemcpyDtoH_v2(got, dout, BM * BN * 4), "download")
    bad = 0
    for i in range(BM):
        for j in range(BN):
            r, c = row + i, col + j
            want = host[r * PITCH + c] if 0 <= r < ROWS and 0 <= c < COLS else float("nan")
            g = got[i * BN + j]
            if not ((math.isnan(want) and math.isnan(g)) or g == want):
                bad += 1
    return f"ok, {bad} wrong of {BM * BN}"


if __name__ == "__main__":
    if len(sys.argv) == 4:
        try:
            print(run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
        except Exception as e:
            print(f"error: {e}")
        sys.exit(0)
    here = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get("PROBE") == "2":
        # run 2: is it the sign or the alignment? negative 16-byte-aligned innermost
        # coordinates, a negative row, and unaligned positive ones
        plan = [("box_orig", [(0, -8), (-16, -32), (-5, 0), (0, 1), (33, 1), (0, 4)])]
    else:
        corners = [(0, 0), (16, 32), (48, 64), (-5, -7), (100, 0)]
        plan = [(v, corners if v == "box_orig" else [(0, 0), (48, 64)])
                for v in ["box_orig", "box_sm90a", "box_nobar", "box_noinval"]]
    for v, vc in plan:
        for r, c in vc:
            out = subprocess.run([sys.executable, __file__, os.path.join(here, v + ".ptx"), str(r), str(c)],
                                 capture_output=True, text=True, timeout=60)
            print(f"{v:12s} corner ({r:4d}, {c:4d}): {(out.stdout + out.stderr).strip()}", flush=True)

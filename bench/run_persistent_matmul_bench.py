#!/usr/bin/env python3
"""Triton's tutorial 09 (persistent matmul): tl's transcription beside Triton 3.6's same
kernels, f16 in and out with f32 accumulation, in one run (issue 41).

Kernels, both sides (bench/persistent_matmul_tutorial.hpp is tl's transcription):
  persistent                     `matmul_kernel_persistent`: NUM_SMS programs striding over
                                 the output tiles, pointer tiles, B [K, N], K-tail masks
  descriptor_persistent          `matmul_kernel_descriptor_persistent`: the same loop with
                                 A, B ([N, K], b.T in the dot) and C through device-side
                                 tensor descriptors (Triton: TMA on Hopper, its descriptors
                                 made on the device in memory from triton.set_allocator)
  descriptor_persistent_subtile  the same with EPILOGUE_SUBTILE (the accumulator reshaped to
                                 [BM, 2, BN / 2], permuted and split, two half-width stores;
                                 tl: tl::split)
  tma_persistent                 `matmul_kernel_tma_persistent`: the descriptor kernel with the
                                 descriptors made on the host (Triton's TensorDescriptor, the
                                 CUtensorMap made by its launcher; tl: tl::TensorDescriptor)
  tma_persistent_tma             tl only: tma_persistent launched with launch_options::tma (A and B
                                 loaded by TMA copies, one at a time: not pipelined yet), beside
                                 Triton's tma_persistent
Both sides run the same fixed configurations from the tutorial's autotuning space
(BLOCK_M x BLOCK_N x BLOCK_K, num_stages, num_warps; GROUP_SIZE_M 8; WARP_SPECIALIZE off,
Hopper has none) instead of the tutorial's @triton.autotune, so each row compares one
configuration; `flatten=True` stays on Triton's tile loop, as the tutorial writes it (tl
has no flatten: it pipelines the K loop).

Inputs: f16 uniform in [-1, 1); every result is checked before it is timed (tl against a
float64 host reference on 16 rows, tl-bench-persistent-matmul; Triton against
torch.matmul: max |error| <= 1e-2 max(1, sqrt(K) / 8), above half an f16 ulp of the
largest |C| (the tutorial checks atol 1)). Times:
triton.testing.do_bench medians (warmup 25, rep 200, the L2 flushed by a 256 MiB write
before each call); tl-bench-persistent-matmul times each call the same way. TFLOP/s = 2 M N
K / t; GB/s counts A, B and C once.

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh; bench/gpu_persistent_matmul.sh runs this):
    python3 bench/run_persistent_matmul_bench.py --tl /tmp/tl/bin/tl-bench-persistent-matmul --out $OUT
Writes persistent_matmul.csv, persistent_matmul.md and tl_persistent_matmul.json to --out.
Without --tl, only Triton runs.
"""
import argparse, csv, json, os, subprocess, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench
from triton.tools.tensor_descriptor import TensorDescriptor

SIZES = [(8192, 8192, 1024), (8192, 8192, 4096)]
if os.environ.get("TL_PM_SIZES"):  # e.g. 8192x8192x4096: a session with little device time
    SIZES = [tuple(map(int, s.split("x"))) for s in os.environ["TL_PM_SIZES"].split(",")]
# BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps (the tutorial's space: BM 128, BN 128 or
# 256, BK 64 or 128, stages 2-4, warps 4 or 8)
CONFIGS = [(128, 128, 64, 3, 8), (128, 256, 64, 3, 8)]
GROUP_M = 8
KERNELS = ("persistent", "descriptor_persistent", "descriptor_persistent_subtile", "tma_persistent", "tma_persistent_tma")
# tl's tma_persistent launched with launch_options::tma (its loads TMA copies): beside Triton's tma_persistent.
SAME_TRITON_KERNEL = {"tma_persistent_tma": "tma_persistent"}


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                             stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                             BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS  # the tutorial's duplicated counter for the epilogue
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, accumulator.to(tl.float16), mask=c_mask)


@triton.jit
def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                        BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                                        GROUP_SIZE_M: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                                        NUM_SMS: tl.constexpr):
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N // 2 if EPILOGUE_SUBTILE else BLOCK_SIZE_N])
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N
        if EPILOGUE_SUBTILE:
            acc = tl.permute(tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c_desc.store([offs_cm, offs_cn], acc0.to(dtype))
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], acc1.to(dtype))
        else:
            c_desc.store([offs_cm, offs_cn], accumulator.to(dtype))


@triton.jit
def matmul_kernel_tma_persistent(a_desc, b_desc, c_desc, M, N, K, BLOCK_SIZE_M: tl.constexpr,
                                 BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                 EPILOGUE_SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr):
    dtype = tl.float16
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am_c = pid_m * BLOCK_SIZE_M
        offs_bn_c = pid_n * BLOCK_SIZE_N
        if EPILOGUE_SUBTILE:
            acc = tl.permute(tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c_desc.store([offs_am_c, offs_bn_c], acc0.to(dtype))
            c_desc.store([offs_am_c, offs_bn_c + BLOCK_SIZE_N // 2], acc1.to(dtype))
        else:
            c_desc.store([offs_am_c, offs_bn_c], accumulator.to(dtype))


def triton_side(num_sms):
    # device-side descriptors live in global scratch the launch allocates (the tutorial's way)
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    res = {}
    for M, N, K in SIZES:
        torch.manual_seed(0)
        a = torch.rand((M, K), device="cuda", dtype=torch.float16) * 2 - 1
        b = torch.rand((K, N), device="cuda", dtype=torch.float16) * 2 - 1
        bt = b.T.contiguous()  # [N, K] for the descriptor kernel
        want = torch.matmul(a.float(), b.float())
        flops, nbytes = 2.0 * M * N * K, 2.0 * (M * K + N * K + M * N)
        for bm, bn, bk, stages, warps in CONFIGS:
            grid = (min(num_sms, triton.cdiv(M, bm) * triton.cdiv(N, bn)), )
            for name in KERNELS:
                c = torch.full((M, N), -1250.0, device="cuda", dtype=torch.float16)  # poisoned
                if name == "persistent":
                    fn = lambda: matmul_kernel_persistent[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                                                b.stride(1), c.stride(0), c.stride(1), bm, bn, bk, GROUP_M,
                                                                num_sms, num_stages=stages, num_warps=warps)
                elif name == "tma_persistent":
                    # (the tutorial's host descriptors, block shapes as its grid function sets them)
                    a_d = TensorDescriptor.from_tensor(a, [bm, bk])
                    b_d = TensorDescriptor.from_tensor(bt, [bn, bk])
                    c_d = TensorDescriptor.from_tensor(c, [bm, bn])
                    fn = lambda: matmul_kernel_tma_persistent[grid](a_d, b_d, c_d, M, N, K, bm, bn, bk, GROUP_M, False,
                                                                    num_sms, num_stages=stages, num_warps=warps)
                else:
                    sub = name.endswith("subtile")
                    fn = lambda: matmul_kernel_descriptor_persistent[grid](a, bt, c, M, N, K, bm, bn, bk, GROUP_M, sub,
                                                                           num_sms, num_stages=stages, num_warps=warps)
                try:
                    fn()
                    torch.cuda.synchronize()
                except Exception as e:  # (a configuration Triton cannot compile: out of shared memory)
                    print(f"triton {name} {M}x{N}x{K} {bm}x{bn}x{bk} s{stages} w{warps}: {type(e).__name__}: {e}",
                          flush=True)
                    continue
                err = (c.float() - want).abs().max().item()
                assert err <= 1e-2 * max(1.0, K ** 0.5 / 8), (name, M, N, K, err)
                ms = do_bench(fn, warmup=25, rep=200, return_mode="median")
                key = (name, M, N, K, bm, bn, bk, stages, warps)
                res[key] = {"ms": ms, "tflops": flops / ms / 1e9, "gbs": nbytes / ms / 1e6}
                print(f"triton {name:<30} {M}x{N}x{K} {bm}x{bn}x{bk} s{stages} w{warps} {ms:8.4f} ms "
                      f"{flops / ms / 1e9:7.1f} TFLOP/s  ok", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-persistent-matmul (else Triton only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=50)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    num_sms = props.multi_processor_count
    tlr = {}
    if a.tl:
        tl_json = os.path.join(a.out, "tl_persistent_matmul.json")
        sizes = ",".join(f"{M}x{N}x{K}" for M, N, K in SIZES)
        configs = ",".join("x".join(map(str, c)) for c in CONFIGS)
        r = subprocess.run([a.tl, "--json", tl_json, "--repeats", str(a.repeats), "--sizes", sizes, "--configs", configs])
        if r.returncode != 0:
            print(f"tl-bench-persistent-matmul exit {r.returncode}", flush=True)
        if os.path.exists(tl_json):
            tlj = json.load(open(tl_json))
            assert tlj["num_sms"] == num_sms and tlj["group_m"] == GROUP_M, tlj
            for k in tlj.get("runs", []):
                tlr[(k["kernel"], k["M"], k["N"], k["K"], k["block_m"], k["block_n"], k["block_k"], k["num_stages"],
                     k["num_warps"])] = k
    tri = triton_side(num_sms)
    nan = float("nan")
    lines = [f"# Tutorial 09 persistent matmul, f16: {props.name} ({num_sms} SMs), {time.strftime('%Y-%m-%d')}", "",
             f"Fixed configurations on both sides (GROUP_SIZE_M {GROUP_M}, NUM_SMS programs); TFLOP/s = 2MNK / t, "
             "do_bench medians with the L2 flushed. tl: bench/persistent_matmul_tutorial.hpp; Triton "
             f"{triton.__version__}: the tutorial's kernels (flatten=True, no warp specialization).", "",
             "| kernel | M x N x K | BM x BN x BK, stages, warps | tl TFLOP/s | Triton TFLOP/s | tl / Triton | tl ms | "
             "Triton ms | tl checked |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    keys = sorted(set(tri) | set(tlr), key=lambda k: (k[1:4], k[4:], KERNELS.index(k[0])))
    with open(os.path.join(a.out, "persistent_matmul.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["kernel", "M", "N", "K", "block_m", "block_n", "block_k", "num_stages", "num_warps", "tl_tflops",
                     "triton_tflops", "tl_over_triton", "tl_ms", "triton_ms", "tl_ok"])
        for k in keys:
            t, r = tlr.get(k, {}), tri.get((SAME_TRITON_KERNEL.get(k[0], k[0]),) + tuple(k[1:]), {})
            ratio = t.get("tflops", nan) / r.get("tflops", nan)
            wr.writerow(list(k) + [t.get("tflops", ""), r.get("tflops", ""), round(ratio, 3), t.get("ms", ""),
                                   r.get("ms", ""), t.get("ok", "")])
            lines.append(f"| {k[0]} | {k[1]}x{k[2]}x{k[3]} | {k[4]}x{k[5]}x{k[6]} s{k[7]} w{k[8]} | "
                         f"{t.get('tflops', nan):.1f} | {r.get('tflops', nan):.1f} | {ratio:.2f} | "
                         f"{t.get('ms', nan):.4f} | {r.get('ms', nan):.4f} | {t.get('ok', '-')} |")
    open(os.path.join(a.out, "persistent_matmul.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

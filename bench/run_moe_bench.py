#!/usr/bin/env python3
"""MXFP4 mixture of experts and tutorial 10's block-scaled matmul: tl and Triton in one run
(issue 43). On Hopper neither has a scaled matrix instruction: Triton's tl.dot_scaled
upcasts the MXFP4 operand to bf16 in registers (DecomposeScaledBlocked) and runs a bf16
dot, as tl::dot_scaled does.

1. The grouped GEMMs of samples/moe's layer (gpt-oss-20b: H = I = 2880, 32 experts, top 4;
   4096 and 256 tokens): gate/up with SwiGLU in the epilogue (two accumulators), then down,
   over tokens sorted by expert and padded to BLOCK_M a segment. Triton's kernel is vLLM's
   fused_moe_kernel as its users write it (sorted_token_ids, expert_ids,
   num_tokens_post_padded, grouped program order, A rows gathered as token // top_k), with
   the expert weights as MXFP4 (uint8 e2m1 pairs [E, N, K / 2] and uint8 e8m0 scales
   [E, N, K / 32]) through tl.dot_scaled(a, None, "bf16", b.T, b_scale, "e2m1", acc) (the
   form triton_kernels' matmul_ogs takes for MXFP4 weights), and the same kernel on bf16
   weights with tl.dot: the bf16 grouped GEMM. The gate and up rows are two accumulators of
   one program with silu(gate) * up in the epilogue, as tl's sample does (vLLM runs
   silu_and_mul as a separate kernel; triton_kernels fuses it). The routing and the
   alignment are torch on the Triton side and not timed; tl's whole layer (routing, plan,
   scatter, the GEMMs, combine, all tl kernels) is reported beside.
   Both sides take the best of the same configuration list (CONFIGS, tl's NVIDIA
   candidates in samples/moe/tune.hpp; tl picks through tl::autotune).
2. Tutorial 10's kernel, mxfp4 x mxfp4 with e8m0 scales per 32 along K, f32 out, at 4096^3
   and 8192^3, pointer loads (the tutorial's tensor descriptors and 5-D scale layout feed
   Blackwell's tensor memory; Hopper takes the scales [rows, K / 32] as tl's
   tests/conformance transcription does), each configuration of TUTORIAL_CONFIGS on both.

Each Triton result is checked against a float64 torch reference (sampled tokens / rows)
before it is timed; tl checks its own against samples/moe/reference.hpp. Times: Triton
triton.testing.do_bench medians (L2 flushed between calls); tl CUDA events around batches
(the weights, 0.27 GB MXFP4 / 1.06 GB bf16, are far over the L2 either way).

On the GPU machine, from the unpacked bundle (bench/make_bundle.sh):
    python3 bench/run_moe_bench.py --tl /tmp/tl/bin/tl-bench-moe --out $OUT
Writes moe.csv, moe.md and tl_moe.json to --out. Without --tl, only Triton runs.
"""
import argparse, csv, json, os, subprocess, time

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

H, I, E, TOP_K = 2880, 2880, 32, 4
TOKENS = (4096, 256)
# BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_stages, num_warps (samples/moe/tune.hpp, NVIDIA)
CONFIGS = [(64, 128, 128, 8, 3, 4), (32, 128, 128, 8, 3, 4), (16, 128, 256, 8, 2, 4), (128, 128, 128, 8, 3, 8),
           (64, 64, 256, 8, 2, 4), (128, 256, 128, 8, 3, 8), (16, 64, 128, 1, 3, 4)]
# BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages (bench/moe_bench.cpp: kTutorialConfigs)
TUTORIAL_CONFIGS = [(128, 128, 128, 4, 3), (128, 128, 128, 8, 3), (128, 256, 128, 8, 3), (64, 128, 256, 4, 3),
                    (128, 128, 256, 8, 2)]
TUTORIAL_SIZES = (4096, 8192)


@triton.jit
def fused_moe_kernel(a_ptr, b_ptr, b_scale_ptr, c_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                     num_tokens_post_padded_ptr, N, K, EM, num_valid_tokens, stride_am, stride_be, stride_bn,
                     stride_bse, stride_bsn, stride_cm, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                     BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, top_k: tl.constexpr,
                     MXFP4: tl.constexpr, GATE_UP: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    num_tokens_post_padded = tl.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded:
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens
    off_experts = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am + offs_k[None, :])
    if MXFP4:
        offs_kb = tl.arange(0, BLOCK_SIZE_K // 2)
        offs_ks = tl.arange(0, BLOCK_SIZE_K // 32)
        b_ptrs = b_ptr + off_experts * stride_be + offs_bn[:, None] * stride_bn + offs_kb[None, :]
        bs_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bn[:, None] * stride_bsn + offs_ks[None, :]
    else:
        b_ptrs = b_ptr + off_experts * stride_be + offs_bn[:, None] * stride_bn + offs_k[None, :]
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < k_left), other=0.0)
        if MXFP4:
            b = tl.load(b_ptrs, mask=offs_kb[None, :] < k_left // 2, other=0)
            bs = tl.load(bs_ptrs, mask=offs_ks[None, :] < k_left // 32, other=127)
            accumulator = tl.dot_scaled(a, None, "bf16", b.T, bs, "e2m1", accumulator)
            if GATE_UP:
                bu = tl.load(b_ptrs + N * stride_bn, mask=offs_kb[None, :] < k_left // 2, other=0)
                bus = tl.load(bs_ptrs + N * stride_bsn, mask=offs_ks[None, :] < k_left // 32, other=127)
                acc_up = tl.dot_scaled(a, None, "bf16", bu.T, bus, "e2m1", acc_up)
            b_ptrs += BLOCK_SIZE_K // 2
            bs_ptrs += BLOCK_SIZE_K // 32
        else:
            b = tl.load(b_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            accumulator = tl.dot(a, b.T, accumulator)
            if GATE_UP:
                bu = tl.load(b_ptrs + N * stride_bn, mask=offs_k[None, :] < k_left, other=0.0)
                acc_up = tl.dot(a, bu.T, acc_up)
            b_ptrs += BLOCK_SIZE_K
        a_ptrs += BLOCK_SIZE_K
    if GATE_UP:
        accumulator = accumulator * tl.sigmoid(accumulator) * acc_up
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + offs_cn[None, :]
    tl.store(c_ptrs, accumulator.to(tl.bfloat16), mask=token_mask[:, None] & (offs_cn[None, :] < N))


@triton.jit
def block_scaled_matmul_kernel(a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_kb = tl.arange(0, BLOCK_K // 2)
    offs_ks = tl.arange(0, BLOCK_K // 32)
    a_ptrs = a_ptr + offs_m[:, None] * (K // 2) + offs_kb[None, :]
    b_ptrs = b_ptr + offs_n[:, None] * (K // 2) + offs_kb[None, :]
    as_ptrs = a_scale_ptr + offs_m[:, None] * (K // 32) + offs_ks[None, :]
    bs_ptrs = b_scale_ptr + offs_n[:, None] * (K // 32) + offs_ks[None, :]
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        scale_a = tl.load(as_ptrs)
        scale_b = tl.load(bs_ptrs)
        accumulator = tl.dot_scaled(a, scale_a, "e2m1", b.T, scale_b, "e2m1", accumulator)
        a_ptrs += BLOCK_K // 2
        b_ptrs += BLOCK_K // 2
        as_ptrs += BLOCK_K // 32
        bs_ptrs += BLOCK_K // 32
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], accumulator)


E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float64)


def dequant(q, s):
    """uint8 pairs [..., K / 2] and e8m0 codes [..., K / 32] as float64 [..., K]."""
    lut = E2M1.to(q.device)
    v = torch.stack([lut[(q & 15).long()], lut[(q >> 4).long()]], dim=-1).flatten(-2)
    return v * torch.pow(2.0, s.double() - 127).repeat_interleave(32, dim=-1)


def moe_align_block_size(ids, block_m):
    """vLLM's moe_align_block_size in torch: pair ids sorted by expert, each expert's
    segment padded to a multiple of block_m with num_valid (T * top_k), the expert of each
    block, and the padded total."""
    flat = ids.flatten()
    P = flat.numel()
    counts = torch.bincount(flat, minlength=E)
    padded = (counts + block_m - 1) // block_m * block_m
    starts = torch.cumsum(padded, 0) - padded
    order = torch.argsort(flat, stable=True)
    first = torch.cumsum(counts, 0) - counts
    e = flat[order]
    rank = torch.arange(P, device=ids.device) - first[e]
    em = P + E * (block_m - 1)
    sorted_ids = torch.full((em,), P, dtype=torch.int32, device=ids.device)
    sorted_ids[starts[e] + rank] = order.to(torch.int32)
    expert_ids = torch.repeat_interleave(torch.arange(E, device=ids.device, dtype=torch.int32), padded // block_m)
    expert_ids = torch.cat([expert_ids, torch.zeros(triton.cdiv(em, block_m) - expert_ids.numel(),
                                                    dtype=torch.int32, device=ids.device)])
    return sorted_ids, expert_ids, padded.sum().to(torch.int32).reshape(1), em


def triton_moe_side(results):
    torch.manual_seed(0)
    dev = "cuda"
    T_max = max(TOKENS)
    x_all = (torch.rand(T_max, H, device=dev) * 2 - 1).to(torch.bfloat16)
    logits_all = torch.randn(T_max, E, device=dev)
    # MXFP4 weights: random e2m1 pairs, scales 2^-9 .. 2^-5 (values about 1 / sqrt(K))
    w1q = torch.randint(0, 256, (E, 2 * I, H // 2), dtype=torch.uint8, device=dev)
    w1s = torch.randint(127 - 9, 127 - 4, (E, 2 * I, H // 32), dtype=torch.uint8, device=dev)
    w2q = torch.randint(0, 256, (E, H, I // 2), dtype=torch.uint8, device=dev)
    w2s = torch.randint(127 - 9, 127 - 4, (E, H, I // 32), dtype=torch.uint8, device=dev)
    w1d, w2d = dequant(w1q, w1s), dequant(w2q, w2s)
    w1b, w2b = w1d.to(torch.bfloat16), w2d.to(torch.bfloat16)  # the bf16 GEMM's weights (exact)
    for T in TOKENS:
        x, logits = x_all[:T].contiguous(), logits_all[:T].contiguous()
        top, ids = torch.topk(logits, TOP_K, dim=1)
        weights = torch.softmax(top, dim=1)
        P = T * TOP_K
        check_tokens = torch.linspace(0, T - 1, 8, device=dev).long()
        for fmt in ("mxfp4", "bf16"):
            best = None
            for (bm, bn, bk, gm, st, w) in CONFIGS:
                sorted_ids, expert_ids, ntp, em = moe_align_block_size(ids, bm)
                h = torch.empty(P, I, dtype=torch.bfloat16, device=dev)
                down = torch.empty(P, H, dtype=torch.bfloat16, device=dev)

                def gemm(a, wq, ws, out, N, K, top_k, gate_up):
                    grid = (triton.cdiv(em, bm) * triton.cdiv(N, bn),)
                    if fmt == "mxfp4":
                        fused_moe_kernel[grid](a, wq, ws, out, sorted_ids, expert_ids, ntp, N, K, em, P, a.stride(0),
                                               wq.stride(0), wq.stride(1), ws.stride(0), ws.stride(1), out.stride(0),
                                               BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=gm,
                                               top_k=top_k, MXFP4=True, GATE_UP=gate_up, num_warps=w, num_stages=st)
                    else:
                        fused_moe_kernel[grid](a, wq, wq, out, sorted_ids, expert_ids, ntp, N, K, em, P, a.stride(0),
                                               wq.stride(0), wq.stride(1), 0, 0, out.stride(0), BLOCK_SIZE_M=bm,
                                               BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=gm, top_k=top_k,
                                               MXFP4=False, GATE_UP=gate_up, num_warps=w, num_stages=st)

                def run():
                    if fmt == "mxfp4":
                        gemm(x, w1q, w1s, h, I, H, TOP_K, True)
                        gemm(h, w2q, w2s, down, H, I, 1, False)
                    else:
                        gemm(x, w1b, None, h, I, H, TOP_K, True)
                        gemm(h, w2b, None, down, H, I, 1, False)
                try:
                    h.fill_(float("nan")), down.fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                except Exception as e:  # a configuration Triton cannot compile (shared memory, ...)
                    print(f"triton moe {fmt} T={T} {(bm, bn, bk, gm, st, w)}: {type(e).__name__}", flush=True)
                    continue
                # reference of the sampled tokens, float64, h rounded to bf16 as both sides store it
                y = (down.view(T, TOP_K, H).float() * weights[..., None]).sum(1)
                for t in check_tokens.tolist():
                    want = torch.zeros(H, dtype=torch.float64, device=dev)
                    for j in range(TOP_K):
                        e = ids[t, j].item()
                        xt = x[t].double()
                        g, u = w1d[e, :I] @ xt, w1d[e, I:] @ xt
                        hh = (g * torch.sigmoid(g) * u).to(torch.bfloat16).double()
                        want += weights[t, j].double() * (w2d[e] @ hh)
                    err = (y[t].double() - want).norm() / want.norm()
                    assert err < 2e-2, (fmt, T, t, err.item())
                ms = do_bench(run, warmup=10, rep=100, return_mode="median")
                tflops = 6.0 * P * H * I / ms / 1e9
                print(f"triton moe {fmt} T={T} {(bm, bn, bk, gm, st, w)} {ms:8.3f} ms {tflops:7.1f} TFLOP/s", flush=True)
                if best is None or ms < best["ms"]:
                    best = {"ms": ms, "tflops": tflops, "config": f"{bm}x{bn}x{bk} g{gm} s{st} w{w}"}
            results[("moe", T, fmt)] = best


def triton_tutorial_side(results):
    torch.manual_seed(1)
    for S in TUTORIAL_SIZES:
        a = torch.randint(0, 256, (S, S // 2), dtype=torch.uint8, device="cuda")
        b = torch.randint(0, 256, (S, S // 2), dtype=torch.uint8, device="cuda")
        sa = torch.randint(124, 131, (S, S // 32), dtype=torch.uint8, device="cuda")
        sb = torch.randint(124, 131, (S, S // 32), dtype=torch.uint8, device="cuda")
        rows = torch.arange(0, S, S // 8 - 1, device="cuda")
        want = dequant(a[rows], sa[rows]) @ dequant(b, sb).T
        best = None
        for (bm, bn, bk, w, st) in TUTORIAL_CONFIGS:
            c = torch.full((S, S), float("nan"), device="cuda")
            grid = (triton.cdiv(S, bm) * triton.cdiv(S, bn),)
            fn = lambda: block_scaled_matmul_kernel[grid](a, sa, b, sb, c, S, S, S, BLOCK_M=bm, BLOCK_N=bn,
                                                          BLOCK_K=bk, NUM_STAGES=st, num_warps=w)
            try:
                fn()
                torch.cuda.synchronize()
            except Exception as e:
                print(f"triton tutorial10 {S} {(bm, bn, bk, w, st)}: {type(e).__name__}", flush=True)
                continue
            err = (c[rows].double() - want).abs().max() / want.abs().max()
            assert err < 1e-3, (S, err.item())  # f32 sums of 8192 products
            ms = do_bench(fn, warmup=10, rep=100, return_mode="median")
            tflops = 2.0 * S ** 3 / ms / 1e9
            print(f"triton tutorial10 mxfp4 {S}^3 {bm}x{bn}x{bk} w{w} s{st} {ms:8.3f} ms {tflops:7.1f} TFLOP/s", flush=True)
            if best is None or ms < best["ms"]:
                best = {"ms": ms, "tflops": tflops, "config": f"{bm}x{bn}x{bk} w{w} s{st}"}
        results[("tutorial10", S, "mxfp4")] = best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tl", help="path to tl-bench-moe (else Triton only)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    props = torch.cuda.get_device_properties(0)
    tlj = {}
    if a.tl:
        tl_json = os.path.join(a.out, "tl_moe.json")
        subprocess.run([a.tl, "--json", tl_json, "--repeats", str(a.repeats),
                        "--tokens", ",".join(map(str, TOKENS))], check=True)
        tlj = json.load(open(tl_json))
        assert [tuple(c) for c in tlj["tutorial_configs"]] == TUTORIAL_CONFIGS, tlj["tutorial_configs"]
    tri = {}
    triton_moe_side(tri)
    triton_tutorial_side(tri)
    rows = []
    for m in tlj.get("moe", []):
        rows.append((f"moe T={m['tokens']} {m['format']} (2 grouped GEMMs)", m, tri.get(("moe", m["tokens"], m["format"])),
                     m["gemm_tflops"], m["gemm_ms"], f"layer {m['layer_ms']:.3f} ms"))
    t10 = {}
    for r in tlj.get("tutorial10", []):
        if r["ok"] and (r["size"] not in t10 or r["ms"] < t10[r["size"]]["ms"]):
            t10[r["size"]] = r
    for S, r in sorted(t10.items()):
        rows.append((f"tutorial10 mxfp4 {S}^3", r, tri.get(("tutorial10", S, "mxfp4")), r["tflops"], r["ms"], ""))
    lines = [f"# MXFP4 MoE and tutorial 10: {props.name}, {time.strftime('%Y-%m-%d')}", "",
             f"MoE: H = I = {H}, {E} experts, top {TOP_K}, gate/up with SwiGLU then down; TFLOP/s of "
             "6 T top_k H I. Tutorial 10: 2 S^3. Best configuration each side (tl: tl::autotune for the MoE).", "",
             "| case | tl TFLOP/s | Triton TFLOP/s | tl / Triton | tl ms | Triton ms | tl config | Triton config | tl ok | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    with open(os.path.join(a.out, "moe.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["case", "tl_tflops", "triton_tflops", "tl_over_triton", "tl_ms", "triton_ms", "tl_config",
                     "triton_config", "tl_ok"])
        for name, t, r, tflops, ms, note in rows:
            r = r or {"tflops": float("nan"), "ms": float("nan"), "config": "-"}
            ratio = tflops / r["tflops"]
            wr.writerow([name, round(tflops, 1), round(r["tflops"], 1), round(ratio, 3), ms, r["ms"], t["config"],
                         r["config"], t["ok"]])
            lines.append(f"| {name} | {tflops:.1f} | {r['tflops']:.1f} | {ratio:.2f} | {ms:.3f} | {r['ms']:.3f} | "
                         f"{t['config']} | {r['config']} | {t['ok']} | {note} |")
    if not rows:  # Triton only
        for k, r in tri.items():
            if r:
                lines.append(f"| {k} | - | {r['tflops']:.1f} | - | - | {r['ms']:.3f} | - | {r['config']} | - | |")
    open(os.path.join(a.out, "moe.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

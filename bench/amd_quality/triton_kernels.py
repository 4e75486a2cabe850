"""The Triton twins of bench/amd_quality/kernels.hpp: the same algorithm, statement for
statement, compiled (or launched) with the same configuration (each case's `params`).

`SIGNATURES[family](params, arch)` gives the Triton signature (argument name -> type),
the constexprs, and the run-time integer values (for the launch-time divisibility-by-16
specialization tl's key makes too). `args(family, params, t, torch)` (bench only) builds
torch tensors and the argument tuple.
"""
import triton
import triton.language as tl


@triton.jit
def softmax(X, Y, cols, stride, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < cols
    row = tl.program_id(0)
    v = tl.load(X + row * stride + c, mask=m, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, 0))
    tl.store(Y + row * stride + c, (e / tl.sum(e, 0)).to(Y.dtype.element_ty), mask=m)


@triton.jit
def layernorm_fwd(X, Y, W, B, MEAN, RSTD, cols, eps, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < cols
    row = tl.program_id(0)
    n = cols.to(tl.float32)
    v = tl.load(X + row * cols + c, mask=m, other=0.0).to(tl.float32)
    mu = tl.sum(v, 0) / n
    d = tl.where(m, v - mu, 0.0)
    r = tl.rsqrt(tl.sum(d * d, 0) / n + eps)
    g = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    bb = tl.load(B + c, mask=m, other=0.0).to(tl.float32)
    tl.store(Y + row * cols + c, (d * r * g + bb).to(Y.dtype.element_ty), mask=m)
    tl.store(MEAN + row, mu)
    tl.store(RSTD + row, r)


@triton.jit
def layernorm_bwd(X, DY, W, MEAN, RSTD, DX, cols, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < cols
    row = tl.program_id(0)
    n = cols.to(tl.float32)
    v = tl.load(X + row * cols + c, mask=m, other=0.0).to(tl.float32)
    g = tl.load(DY + row * cols + c, mask=m, other=0.0).to(tl.float32)
    ww = tl.load(W + c, mask=m, other=0.0).to(tl.float32)
    mu = tl.load(MEAN + row)
    r = tl.load(RSTD + row)
    xhat = tl.where(m, (v - mu) * r, 0.0)
    wdy = ww * g
    c1 = tl.sum(xhat * wdy, 0) / n
    c2 = tl.sum(wdy, 0) / n
    tl.store(DX + row * cols + c, ((wdy - (xhat * c1 + c2)) * r).to(DX.dtype.element_ty), mask=m)


@triton.jit
def cross_entropy_fwd(LOGITS, TARGET, LOSS, vocab, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < vocab
    row = tl.program_id(0)
    base = LOGITS + row * vocab
    v = tl.load(base + c, mask=m, other=-float("inf")).to(tl.float32)
    mx = tl.max(v, 0)
    lse = tl.log(tl.sum(tl.exp(v - mx), 0)) + mx
    t = tl.load(TARGET + row)
    xt = tl.load(base + t).to(tl.float32)
    tl.store(LOSS + row, lse - xt)


@triton.jit
def rotary(X, COS, SIN, Y, H: tl.constexpr, D: tl.constexpr):
    HALF: tl.constexpr = D // 2
    t = tl.program_id(0)
    h = tl.arange(0, H)
    d = tl.arange(0, HALF)
    offs = t * (H * D) + (h * D)[:, None] + d[None, :]
    x1 = tl.load(X + offs).to(tl.float32)
    x2 = tl.load(X + offs + HALF).to(tl.float32)
    cs = tl.load(COS + t * HALF + d)[None, :]
    sn = tl.load(SIN + t * HALF + d)[None, :]
    tl.store(Y + offs, (x1 * cs - x2 * sn).to(tl.bfloat16))
    tl.store(Y + offs + HALF, (x2 * cs + x1 * sn).to(tl.bfloat16))


@triton.jit
def swiglu(A, OUT, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = col < n
    g = tl.load(A + row * n * 2 + col, mask=m, other=0.0).to(tl.float32)
    u = tl.load(A + row * n * 2 + n + col, mask=m, other=0.0).to(tl.float32)
    s = g / (1.0 + tl.exp(-g))
    tl.store(OUT + row * n + col, (s * u).to(tl.bfloat16), mask=m)


@triton.jit
def sum_argmax(X, SUMS, IDX, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.program_id(0) * BM + tl.arange(0, BM)
    c = tl.arange(0, BN)
    rm = r < rows
    m = rm[:, None] & (c < cols)[None, :]
    v = tl.load(X + (r * cols)[:, None] + c[None, :], mask=m, other=-float("inf"))
    tl.store(SUMS + r, tl.sum(tl.where(m, v, 0.0), 1), mask=rm)
    tl.store(IDX + r, tl.argmax(v, 1), mask=rm)


@triton.jit
def cumsum(X, Y, cols, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    m = c < cols
    row = tl.program_id(0)
    v = tl.load(X + row * cols + c, mask=m, other=0.0)
    tl.store(Y + row * cols + c, tl.cumsum(v, 0), mask=m)


@triton.jit
def transpose(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm < M)[:, None] & (cn < N)[None, :]
    v = tl.load(X + (rm * N)[:, None] + cn[None, :], mask=m, other=0.0)
    mt = (cn < N)[:, None] & (rm < M)[None, :]
    tl.store(Y + (cn * M)[:, None] + rm[None, :], tl.trans(v), mask=mt)


@triton.jit
def embedding(IDS, TABLE, OUT, D, BT: tl.constexpr, BD: tl.constexpr):
    t = tl.program_id(0) * BT + tl.arange(0, BT)
    d = tl.arange(0, BD)
    m = tl.broadcast_to((d < D)[None, :], (BT, BD))
    i = tl.load(IDS + t)
    v = tl.load(TABLE + (i * D)[:, None] + d[None, :], mask=m, other=0.0)
    tl.store(OUT + (t * D)[:, None] + d[None, :], v, mask=m)


@triton.jit
def histogram(X, HIST, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    b = tl.load(X + i, mask=m, other=0)
    tl.atomic_add(HIST + b, tl.full([BLOCK], 1, tl.int32), mask=m, sem="relaxed", scope="gpu")


@triton.jit
def fp8_dequant(Q, SCALE, OUT, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < cols
    s = tl.load(SCALE + row)
    v = tl.load(Q + row * cols + c, mask=m, other=0.0).to(tl.float32) * s
    tl.store(OUT + row * cols + c, v.to(tl.bfloat16), mask=m)


@triton.jit
def lse_stream(X, OUT, cols, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    row = tl.program_id(0)
    mx = tl.full([BLOCK], -1e30, tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for k in range(0, cols, BLOCK):
        v = tl.load(X + row * cols + k + c, mask=k + c < cols, other=-float("inf"))
        nm = tl.maximum(mx, v)
        s = s * tl.exp(mx - nm) + tl.exp(v - nm)
        mx = nm
    M = tl.max(mx, 0)
    tl.store(OUT + row, tl.log(tl.sum(s * tl.exp(mx - M), 0)) + M)


@triton.jit
def segment_sum(VALUES, OFFSETS, OUT, BLOCK: tl.constexpr):
    seg = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    start = tl.load(OFFSETS + seg)
    end = tl.load(OFFSETS + seg + 1)
    acc = tl.zeros([BLOCK], tl.float32)
    for k in range(start, end, BLOCK):
        i = k + c
        acc += tl.load(VALUES + i, mask=i < end, other=0.0)
    tl.store(OUT + seg, tl.sum(acc, 0))


@triton.jit
def attention_fwd(Q, K, V, O, LSE, S, G, sm_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, D: tl.constexpr,
                  CAUSAL: tl.constexpr, STAGES: tl.constexpr):
    # Triton's tutorial-06 forward (the anchor's attn_fwd) with the LSE stored and K/V's head
    # divided by G: the algorithm of samples/attention's forward.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    base = bh * S * D
    kv_base = (bh // G) * S * D
    row_ok = (offs_m < S)[:, None]
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :], mask=row_ok, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * 1.44269504
    hi = S
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, S)
    for n in tl.range(0, hi, BLOCK_N, num_stages=STAGES):
        kn = n + offs_n
        kt = tl.load(K + kv_base + kn[None, :] * D + offs_d[:, None], mask=(kn < S)[None, :], other=0.0)
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
        v = tl.load(V + kv_base + kn[:, None] * D + offs_d[None, :], mask=(kn < S)[:, None], other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.bfloat16), mask=row_ok)
    tl.store(LSE + bh * S + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=offs_m < S)


@triton.jit
def matmul_tutorial(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, GROUP: tl.constexpr, STAGES: tl.constexpr):
    # Triton's tutorial 03 matmul (the anchor's `matmul`, ../shared/anchors/gemm_anchor.py):
    # bench/matmul_tutorial.hpp is its tl transcription.
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM)
    npn = tl.cdiv(N, BN)
    gid = pid // (GROUP * npn)
    first = gid * GROUP
    gs = tl.minimum(npm - first, GROUP)
    pm = first + (pid % (GROUP * npn)) % gs
    pn = (pid % (GROUP * npn)) // gs
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = A + rm[:, None] * sam + rk[None, :] * sak
    b = B + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
        acc += tl.dot(tl.load(a, mask=rk[None, :] < K - k * BK, other=0.),
                      tl.load(b, mask=rk[:, None] < K - k * BK, other=0.))
        a += BK * sak
        b += BK * sbk
    c = C + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _dkdv_rows(dk, dv, k, v, Q, DO, LSE, Delta, bh, q_base, offs_n, offs_d, S_q, shift, qk_scale, lo, hi,
               BLOCK_M: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr, STAGES: tl.constexpr):
    # One run of query blocks of attention_bwd_dkdv (samples/attention's `rows`).
    offs_mb = tl.arange(0, BLOCK_M)
    for m in tl.range(lo, hi, BLOCK_M, num_stages=STAGES):
        offs_m = m + offs_mb
        m_ok = offs_m < S_q
        qT = tl.load(Q + q_base + offs_m[None, :] * D + offs_d[:, None], mask=m_ok[None, :], other=0.0)
        lse2 = tl.load(LSE + bh * S_q + offs_m, mask=m_ok, other=0.0) * 1.4426950408889634
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT * qk_scale - lse2[None, :])
        if MASKED:
            pT = tl.where((offs_m + shift)[None, :] >= offs_n[:, None], pT, 0.0)
        d_o = tl.load(DO + q_base + offs_m[:, None] * D + offs_d[None, :], mask=m_ok[:, None], other=0.0)
        dv = tl.dot(pT.to(d_o.dtype), d_o, dv)
        delta = tl.load(Delta + bh * S_q + offs_m, mask=m_ok, other=0.0)
        dpT = tl.dot(v, tl.trans(d_o))
        dsT = pT * (dpT - delta[None, :])
        dk = tl.dot(dsT.to(d_o.dtype), tl.trans(qT), dk)
    return dk, dv


@triton.jit
def attention_bwd_dkdv(Q, K, V, DO, LSE, Delta, DK, DV, S_q, S_k, G, sm_scale, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, STAGES: tl.constexpr):
    # samples/attention's dK/dV kernel (bwd_dkdv_body) statement for statement: Triton's
    # tutorial-06 dK/dV loop (K, V and both accumulators in registers, Q^T and dO a block of
    # rows an iteration) with the sample's GQA loop over the group's query heads, ragged
    # rows and bottom-right causal masking.
    n0 = tl.program_id(0) * BLOCK_N
    bhkv = tl.program_id(1)
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    kv_base = bhkv * S_k * D
    kv_at = offs_n[:, None] * D + offs_d[None, :]
    key_ok = (offs_n < S_k)[:, None]
    k = tl.load(K + kv_base + kv_at, mask=key_ok, other=0.0)
    v = tl.load(V + kv_base + kv_at, mask=key_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    shift = S_k - S_q
    rows_end = tl.cdiv(S_q, BLOCK_M) * BLOCK_M
    m_lo = 0
    m_mid = 0
    if CAUSAL:
        m_lo = tl.minimum(tl.maximum(n0 - shift, 0) // BLOCK_M * BLOCK_M, rows_end)
        m_mid = tl.minimum(m_lo + tl.cdiv(tl.maximum(n0 + BLOCK_N - shift - m_lo, 0), BLOCK_M) * BLOCK_M, rows_end)
    for g in tl.range(0, G, 1, num_stages=1):
        bh = bhkv * G + g
        q_base = bh * S_q * D
        if CAUSAL:
            dk, dv = _dkdv_rows(dk, dv, k, v, Q, DO, LSE, Delta, bh, q_base, offs_n, offs_d, S_q, shift, qk_scale,
                                m_lo, m_mid, BLOCK_M, D, True, STAGES)
        dk, dv = _dkdv_rows(dk, dv, k, v, Q, DO, LSE, Delta, bh, q_base, offs_n, offs_d, S_q, shift, qk_scale,
                            m_mid, rows_end, BLOCK_M, D, False, STAGES)
    dk = dk * sm_scale
    tl.store(DK + kv_base + kv_at, dk.to(DK.dtype.element_ty), mask=key_ok)
    tl.store(DV + kv_base + kv_at, dv.to(DV.dtype.element_ty), mask=key_ok)


@triton.jit
def _dq_keys(dq, q, d_o, lse2, delta, K, V, kv_base, offs_m, offs_d, S_k, shift, qk_scale, lo, hi,
             BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, MASKED: tl.constexpr,
             STAGES: tl.constexpr):
    # One run of key blocks of attention_bwd_dq (samples/attention's `keys`).
    offs_n = tl.arange(0, BLOCK_N)
    for n in tl.range(lo, hi, BLOCK_N, num_stages=STAGES):
        kn = n + offs_n
        t_at = kn[None, :] * D + offs_d[:, None]
        if MASKED:
            kT = tl.load(K + kv_base + t_at, mask=(kn < S_k)[None, :], other=0.0)
            vT = tl.load(V + kv_base + t_at, mask=(kn < S_k)[None, :], other=0.0)
        else:
            kT = tl.load(K + kv_base + t_at)
            vT = tl.load(V + kv_base + t_at)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk * qk_scale - lse2[:, None])
        if MASKED:
            keep = (kn < S_k)[None, :]
            if CAUSAL:
                keep = keep & ((offs_m + shift)[:, None] >= kn[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(d_o, vT)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(q.dtype), tl.trans(kT), dq)
    return dq


@triton.jit
def attention_bwd_dq(Q, K, V, DO, LSE, Delta, DQ, S_q, S_k, G, sm_scale, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, D: tl.constexpr, CAUSAL: tl.constexpr, STAGES: tl.constexpr):
    # samples/attention's dQ kernel (bwd_dq_body) statement for statement: the tutorial's dQ
    # loop (Q, dO and dQ in registers, K^T and V^T a block of keys an iteration) with the
    # forward's two key ranges (unmasked, then the diagonal and ragged blocks).
    m0 = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q_base = bh * S_q * D
    kv_base = bh // G * S_k * D
    m_ok = offs_m < S_q
    q_at = offs_m[:, None] * D + offs_d[None, :]
    q = tl.load(Q + q_base + q_at, mask=m_ok[:, None], other=0.0)
    d_o = tl.load(DO + q_base + q_at, mask=m_ok[:, None], other=0.0)
    lse2 = tl.load(LSE + bh * S_q + offs_m, mask=m_ok, other=0.0) * 1.4426950408889634
    delta = tl.load(Delta + bh * S_q + offs_m, mask=m_ok, other=0.0)
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    shift = S_k - S_q
    full = S_k // BLOCK_N * BLOCK_N
    lo = full
    hi = S_k
    if CAUSAL:
        lo = tl.minimum(tl.maximum(m0 + shift, 0) // BLOCK_N * BLOCK_N, full)
        hi = tl.minimum(tl.maximum(m0 + BLOCK_M + shift, 0), S_k)
    dq = _dq_keys(dq, q, d_o, lse2, delta, K, V, kv_base, offs_m, offs_d, S_k, shift, qk_scale, 0, lo, BLOCK_N, D,
                  CAUSAL, False, STAGES)
    dq = _dq_keys(dq, q, d_o, lse2, delta, K, V, kv_base, offs_m, offs_d, S_k, shift, qk_scale, lo, hi, BLOCK_N, D,
                  CAUSAL, True, STAGES)
    dq = dq * sm_scale
    tl.store(DQ + q_base + q_at, dq.to(DQ.dtype.element_ty), mask=m_ok[:, None])


# Triton's tutorial-06 backward itself (python/tutorials/06-fused-attention.py, `_attn_bwd`):
# one program computes dK/dV for BLOCK_N1 keys (the diagonal in BLOCK_M1 / BLK_SLICE_FACTOR
# row steps, masked, then the rows below unmasked) and then dQ for BLOCK_M2 rows (the
# diagonal in BLOCK_N2 / BLK_SLICE_FACTOR key steps, then the keys before it). Causal, S a
# multiple of the blocks, K pre-scaled by sm_scale / ln 2 by the host and M the LSE in log2
# units, so neither loop scales the scores. Written here from the tutorial's algorithm, with
# the rows of the launch's two kernels of samples/attention beside it as the reference for
# tl's dK/dV (the first half) and dQ (the second).
@triton.jit
def _tutorial_dkdv(dk, dv, Q, k, v, DO, M, Dl, offs_n, offs_d, start_m, steps, D: tl.constexpr,
                   BLOCK_M1: tl.constexpr, MASK: tl.constexpr):
    for i in range(steps):
        offs_m = start_m + i * BLOCK_M1 + tl.arange(0, BLOCK_M1)
        qT = tl.load(Q + offs_m[None, :] * D + offs_d[:, None])
        lse = tl.load(M + offs_m)
        pT = tl.math.exp2(tl.dot(k, qT) - lse[None, :])
        if MASK:
            pT = tl.where(offs_m[None, :] >= offs_n[:, None], pT, 0.0)
        d_o = tl.load(DO + offs_m[:, None] * D + offs_d[None, :])
        dv += tl.dot(pT.to(d_o.dtype), d_o)
        delta = tl.load(Dl + offs_m)
        dsT = pT * (tl.dot(v, tl.trans(d_o)) - delta[None, :])
        dk += tl.dot(dsT.to(d_o.dtype), tl.trans(qT))
    return dk, dv


@triton.jit
def _tutorial_dq(dq, q, d_o, lse, delta, K, V, offs_m, offs_d, start_n, steps, D: tl.constexpr,
                 BLOCK_N2: tl.constexpr, MASK: tl.constexpr):
    for i in range(steps):
        offs_n = start_n + i * BLOCK_N2 + tl.arange(0, BLOCK_N2)
        kT = tl.load(K + offs_n[None, :] * D + offs_d[:, None])
        vT = tl.load(V + offs_n[None, :] * D + offs_d[:, None])
        p = tl.math.exp2(tl.dot(q, kT) - lse)
        if MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        ds = p * (tl.dot(d_o, vT) - delta[:, None])
        dq += tl.dot(ds.to(q.dtype), tl.trans(kT))
    return dq


@triton.jit
def tutorial_attn_bwd(Q, K, V, sm_scale, DO, DQ, DK, DV, M, Dl, S, BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr,
                      BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, BLK_SLICE_FACTOR: tl.constexpr,
                      D: tl.constexpr, PHASES: tl.constexpr):
    # PHASES: 3 the tutorial's kernel (dK/dV then dQ), 1 its dK/dV half alone, 2 its dQ half.
    pid = tl.program_id(0)
    bh = tl.program_id(2)
    base = (bh * S * D).to(tl.int64)
    Q += base
    K += base
    V += base
    DO += base
    DQ += base
    DK += base
    DV += base
    M += (bh * S).to(tl.int64)
    Dl += (bh * S).to(tl.int64)
    offs_d = tl.arange(0, D)
    if PHASES & 1:
        start_n = pid * BLOCK_N1
        offs_n = start_n + tl.arange(0, BLOCK_N1)
        kv_at = offs_n[:, None] * D + offs_d[None, :]
        k = tl.load(K + kv_at)
        v = tl.load(V + kv_at)
        dk = tl.zeros([BLOCK_N1, D], tl.float32)
        dv = tl.zeros([BLOCK_N1, D], tl.float32)
        SLICE_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
        steps = BLOCK_N1 // SLICE_M1
        dk, dv = _tutorial_dkdv(dk, dv, Q, k, v, DO, M, Dl, offs_n, offs_d, start_n, steps, D, SLICE_M1, True)
        start_m = start_n + steps * SLICE_M1
        dk, dv = _tutorial_dkdv(dk, dv, Q, k, v, DO, M, Dl, offs_n, offs_d, start_m, (S - start_m) // BLOCK_M1, D,
                                BLOCK_M1, False)
        tl.store(DV + kv_at, dv.to(DV.dtype.element_ty))
        tl.store(DK + kv_at, (dk * sm_scale).to(DK.dtype.element_ty))
    if PHASES & 2:
        start_m = pid * BLOCK_M2
        offs_m = start_m + tl.arange(0, BLOCK_M2)
        q_at = offs_m[:, None] * D + offs_d[None, :]
        q = tl.load(Q + q_at)
        d_o = tl.load(DO + q_at)
        lse = tl.load(M + offs_m)[:, None]
        delta = tl.load(Dl + offs_m)
        dq = tl.zeros([BLOCK_M2, D], tl.float32)
        SLICE_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
        steps = BLOCK_M2 // SLICE_N2
        end_n = start_m + BLOCK_M2 - steps * SLICE_N2
        dq = _tutorial_dq(dq, q, d_o, lse, delta, K, V, offs_m, offs_d, end_n, steps, D, SLICE_N2, True)
        steps = end_n // BLOCK_N2
        dq = _tutorial_dq(dq, q, d_o, lse, delta, K, V, offs_m, offs_d, end_n - steps * BLOCK_N2, steps, D,
                          BLOCK_N2, False)
        tl.store(DQ + q_at, (dq * 0.6931471824645996).to(DQ.dtype.element_ty))


def fp8_type(arch):
    """e4m3 as each target has it: gfx942's fnuz (fp8e4b8), the OCP format elsewhere."""
    return "fp8e4b8" if arch == "gfx942" else "fp8e4nv"


def signature(family, p, arch):
    """(kernel, signature {name: type}, constexprs, run-time integer values) of a case."""
    dt = p.get("dtype", "fp32")
    if family.startswith("softmax"):
        return (softmax, {"X": f"*{dt}", "Y": f"*{dt}", "cols": "i32", "stride": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"cols": p["cols"], "stride": p["stride"]})
    if family == "layernorm_fwd":
        return (layernorm_fwd, {"X": "*bf16", "Y": "*bf16", "W": "*bf16", "B": "*bf16", "MEAN": "*fp32",
                                "RSTD": "*fp32", "cols": "i32", "eps": "fp32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"cols": p["cols"]})
    if family == "layernorm_bwd":
        return (layernorm_bwd, {"X": "*bf16", "DY": "*bf16", "W": "*bf16", "MEAN": "*fp32", "RSTD": "*fp32",
                                "DX": "*bf16", "cols": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"cols": p["cols"]})
    if family == "cross_entropy_fwd":
        return (cross_entropy_fwd, {"LOGITS": "*bf16", "TARGET": "*i64", "LOSS": "*fp32", "vocab": "i32",
                                    "BLOCK": "constexpr"}, {"BLOCK": p["BLOCK"]}, {"vocab": p["vocab"]})
    if family == "rotary":
        return (rotary, {"X": "*bf16", "COS": "*fp32", "SIN": "*fp32", "Y": "*bf16", "H": "constexpr",
                         "D": "constexpr"}, {"H": p["H"], "D": p["D"]}, {})
    if family == "swiglu":
        return (swiglu, {"A": "*bf16", "OUT": "*bf16", "n": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"n": p["n"]})
    if family == "sum_argmax":
        return (sum_argmax, {"X": "*fp32", "SUMS": "*fp32", "IDX": "*i32", "rows": "i32", "cols": "i32",
                             "BM": "constexpr", "BN": "constexpr"}, {"BM": p["BM"], "BN": p["BN"]},
                {"rows": p["rows"], "cols": p["cols"]})
    if family == "cumsum":
        return (cumsum, {"X": "*fp32", "Y": "*fp32", "cols": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"cols": p["cols"]})
    if family == "transpose":
        return (transpose, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "BM": "constexpr", "BN": "constexpr"},
                {"BM": p["BM"], "BN": p["BN"]}, {"M": p["M"], "N": p["N"]})
    if family == "embedding":
        return (embedding, {"IDS": "*i32", "TABLE": "*bf16", "OUT": "*bf16", "D": "i32", "BT": "constexpr",
                            "BD": "constexpr"}, {"BT": p["BT"], "BD": p["BD"]}, {"D": p["D"]})
    if family == "histogram":
        return (histogram, {"X": "*i32", "HIST": "*i32", "n": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"n": p["n"]})
    if family == "fp8_dequant":
        return (fp8_dequant, {"Q": f"*{fp8_type(arch)}", "SCALE": "*fp32", "OUT": "*bf16", "cols": "i32",
                              "BLOCK": "constexpr"}, {"BLOCK": p["BLOCK"]}, {"cols": p["cols"]})
    if family == "lse_stream":
        return (lse_stream, {"X": "*fp32", "OUT": "*fp32", "cols": "i32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {"cols": p["cols"]})
    if family == "segment_sum":
        return (segment_sum, {"VALUES": "*fp32", "OFFSETS": "*i32", "OUT": "*fp32", "BLOCK": "constexpr"},
                {"BLOCK": p["BLOCK"]}, {})
    if family in ("attention_fwd", "attention_fwd_causal"):
        return (attention_fwd, {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "LSE": "*fp32", "S": "i32",
                                "G": "i32", "sm_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                                "D": "constexpr", "CAUSAL": "constexpr", "STAGES": "constexpr"},
                {"BLOCK_M": p["BLOCK_M"], "BLOCK_N": p["BLOCK_N"], "D": p["D"], "CAUSAL": bool(p.get("CAUSAL", 0)),
                 "STAGES": p["STAGES"]}, {"S": p["S"], "G": p["G"]})
    if family == "matmul_tutorial":
        # strides of row-major A [M, K], B [K, N], C [M, N]: the unit ones specialize to 1
        # in both compilers
        return (matmul_tutorial, {"A": "*bf16", "B": "*bf16", "C": "*bf16", "M": "i32", "N": "i32", "K": "i32",
                                  "sam": "i32", "sak": "constexpr", "sbk": "i32", "sbn": "constexpr", "scm": "i32",
                                  "scn": "constexpr", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr",
                                  "GROUP": "constexpr", "STAGES": "constexpr"},
                {"sak": 1, "sbn": 1, "scn": 1, **{k: p[k] for k in ("BM", "BN", "BK", "GROUP", "STAGES")}},
                {"M": p["M"], "N": p["N"], "K": p["K"], "sam": p["K"], "sbk": p["N"], "scm": p["N"]})
    bwd = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "DO": "*bf16", "LSE": "*fp32", "Delta": "*fp32"}
    if family == "attention_bwd_dkdv":
        return (attention_bwd_dkdv, {**bwd, "DK": "*bf16", "DV": "*bf16", "S_q": "i32", "S_k": "i32", "G": "i32",
                                     "sm_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                                     "D": "constexpr", "CAUSAL": "constexpr", "STAGES": "constexpr"},
                {"BLOCK_M": p["BLOCK_M"], "BLOCK_N": p["BLOCK_N"], "D": p["D"], "CAUSAL": bool(p["CAUSAL"]),
                 "STAGES": p["STAGES"]}, {"S_q": p["S"], "S_k": p["S"], "G": p["G"]})
    if family == "attention_bwd_dq":
        return (attention_bwd_dq, {**bwd, "DQ": "*bf16", "S_q": "i32", "S_k": "i32", "G": "i32",
                                   "sm_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                                   "D": "constexpr", "CAUSAL": "constexpr", "STAGES": "constexpr"},
                {"BLOCK_M": p["BLOCK_M"], "BLOCK_N": p["BLOCK_N"], "D": p["D"], "CAUSAL": bool(p["CAUSAL"]),
                 "STAGES": p["STAGES"]}, {"S_q": p["S"], "S_k": p["S"], "G": p["G"]})
    if family == "tutorial_attn_bwd":
        return (tutorial_attn_bwd, {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "sm_scale": "fp32", "DO": "*bf16",
                                    "DQ": "*bf16", "DK": "*bf16", "DV": "*bf16", "M": "*fp32", "Dl": "*fp32",
                                    "S": "i32", "BLOCK_M1": "constexpr", "BLOCK_N1": "constexpr",
                                    "BLOCK_M2": "constexpr", "BLOCK_N2": "constexpr", "BLK_SLICE_FACTOR": "constexpr",
                                    "D": "constexpr", "PHASES": "constexpr"},
                {k: p[k] for k in ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "BLK_SLICE_FACTOR", "D",
                                   "PHASES")}, {"S": p["S"]})
    raise KeyError(family)


def specialization(sig, ints):
    """Triton's launch-time specialization, as tl's key makes it: pointers 16-byte aligned
    (device allocations are), integers whose value is divisible by 16."""
    attrs = {}
    for i, (name, ty) in enumerate(sig.items()):
        if ty.startswith("*") or (ty == "i32" and ints.get(name, 1) % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
    return attrs

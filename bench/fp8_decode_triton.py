"""The anchor's Triton kernels for FP8 split-K decode attention
(../shared/anchors/fp8_decode_anchor.py: decode_partial + decode_combine), shared by
bench/run_fp8_decode_bench.py (timed on the GPU) and bench/fp8_decode_amd_static.py
(compiled for gfx942 / gfx950). One addition: with SEQ_LENS set, each batch's length is
loaded from SEQ (a ragged batch); without it the kernel is the anchor's, statement for
statement (the constexpr branch compiles away).
"""
import triton
import triton.language as tl


@triton.jit
def decode_partial(Q, K, V, KS, VS, SEQ, Op, Mp, Lp, S, HKV: tl.constexpr, G: tl.constexpr, D: tl.constexpr,
                   SPLIT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, sm_scale,
                   SEQ_LENS: tl.constexpr):
    bh = tl.program_id(0); sp = tl.program_id(1)
    b = bh // HKV; hk = bh % HKV
    if SEQ_LENS:
        L = tl.load(SEQ + b)
    else:
        L = S
    m = tl.arange(0, BLOCK_M); d = tl.arange(0, D); qm = m < G
    # Q: [B, HKV*G, D] bf16; K, V: [B, S, HKV, D] fp8; KS, VS: [B, S, HKV] f32
    q = tl.load(Q + (b * HKV * G + hk * G + m)[:, None] * D + d[None, :], mask=qm[:, None], other=0.)
    chunk = tl.cdiv(tl.cdiv(L, SPLIT), BLOCK_N) * BLOCK_N
    start = sp * chunk; end = tl.minimum(start + chunk, L)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32); l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for n0 in tl.range(start, end, BLOCK_N, num_stages=2):
        n = n0 + tl.arange(0, BLOCK_N); nm = n < end
        row = (b * S + n) * HKV + hk
        k = tl.load(K + row[:, None] * D + d[None, :], mask=nm[:, None], other=0.)
        ks = tl.load(KS + row, mask=nm, other=0.)
        qk = tl.dot(q, tl.trans(k.to(tl.bfloat16))) * (ks * sm_scale)[None, :]
        qk = tl.where(nm[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None]); alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + row[:, None] * D + d[None, :], mask=nm[:, None], other=0.)
        vs = tl.load(VS + row, mask=nm, other=0.)
        acc = acc * alpha[:, None] + tl.dot((p * vs[None, :]).to(tl.bfloat16), v.to(tl.bfloat16))
        m_i = m_new
    o = (bh * SPLIT + sp) * BLOCK_M + m
    tl.store(Op + o[:, None] * D + d[None, :], acc)
    tl.store(Mp + o, m_i); tl.store(Lp + o, l_i)


@triton.jit
def decode_combine(Op, Mp, Lp, Out, HKV: tl.constexpr, G: tl.constexpr, D: tl.constexpr, SPLIT: tl.constexpr,
                   BLOCK_M: tl.constexpr):
    bh = tl.program_id(0); g = tl.program_id(1)
    s = tl.arange(0, SPLIT); d = tl.arange(0, D)
    o = (bh * SPLIT + s) * BLOCK_M + g
    mp = tl.load(Mp + o); lp = tl.load(Lp + o)
    mx = tl.max(mp, 0); w = tl.exp(mp - mx); w = tl.where(mp == float("-inf"), 0., w)
    acc = tl.sum(tl.load(Op + o[:, None] * D + d[None, :]) * w[:, None], 0)
    tl.store(Out + ((bh // HKV) * HKV * G + (bh % HKV) * G + g) * D + d, (acc / tl.sum(lp * w, 0)).to(tl.bfloat16))

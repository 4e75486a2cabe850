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
    if family == "attention_fwd":
        return (attention_fwd, {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "LSE": "*fp32", "S": "i32",
                                "G": "i32", "sm_scale": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
                                "D": "constexpr", "CAUSAL": "constexpr", "STAGES": "constexpr"},
                {"BLOCK_M": p["BLOCK_M"], "BLOCK_N": p["BLOCK_N"], "D": p["D"], "CAUSAL": False,
                 "STAGES": p["STAGES"]}, {"S": p["S"], "G": p["G"]})
    raise KeyError(family)


def specialization(sig, ints):
    """Triton's launch-time specialization, as tl's key makes it: pointers 16-byte aligned
    (device allocations are), integers whose value is divisible by 16."""
    attrs = {}
    for i, (name, ty) in enumerate(sig.items()):
        if ty.startswith("*") or (ty == "i32" and ints.get(name, 1) % 16 == 0):
            attrs[(i,)] = [["tt.divisibility", 16]]
    return attrs

"""Reference values for tl's random numbers, made by Triton's own functions.

Runs Triton's tl.randint4x, tl.randint, tl.rand, tl.rand4x and tl.randn on a GPU (Triton
3.6 and torch; the device tool's machine) for a few seeds (int32, negative, int64),
offset tiles (int32 with negatives and values near 2**31, int64 with high bits) and round
counts, and writes every result as JSON: integers as unsigned 32-bit values, floats as
their f32 bit patterns (so the test can ask for bit equality).

    python3 tests/data/philox_reference.py OUT.json     (checked in: philox_triton_3.6.json)
"""
import json
import sys

import torch
import triton
import triton.language as tl

N = 64


@triton.jit
def philox_kernel(seed, offs_ptr, int4x_ptr, randint_ptr, rand_ptr, rand4x_ptr, randn_ptr, N: tl.constexpr,
                  ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    offs = tl.load(offs_ptr + i)
    a, b, c, d = tl.randint4x(seed, offs, ROUNDS)
    tl.store(int4x_ptr + 0 * N + i, a.to(tl.int32, bitcast=True))
    tl.store(int4x_ptr + 1 * N + i, b.to(tl.int32, bitcast=True))
    tl.store(int4x_ptr + 2 * N + i, c.to(tl.int32, bitcast=True))
    tl.store(int4x_ptr + 3 * N + i, d.to(tl.int32, bitcast=True))
    tl.store(randint_ptr + i, tl.randint(seed, offs, ROUNDS).to(tl.int32, bitcast=True))
    tl.store(rand_ptr + i, tl.rand(seed, offs, ROUNDS))
    u1, u2, u3, u4 = tl.rand4x(seed, offs, ROUNDS)
    tl.store(rand4x_ptr + 0 * N + i, u1)
    tl.store(rand4x_ptr + 1 * N + i, u2)
    tl.store(rand4x_ptr + 2 * N + i, u3)
    tl.store(rand4x_ptr + 3 * N + i, u4)
    tl.store(randn_ptr + i, tl.randn(seed, offs, ROUNDS))


def u32(t):
    return [int(v) & 0xFFFFFFFF for v in t.cpu().tolist()]


def f32_bits(t):
    return u32(t.contiguous().view(torch.int32))


def main(out):
    g = torch.Generator().manual_seed(38)
    offsets = {
        "i32": torch.cat([torch.arange(0, 32, dtype=torch.int32),
                          torch.randint(-2**31, 2**31 - 1, (28,), generator=g, dtype=torch.int32),
                          torch.tensor([2**31 - 1, -2**31, -1, 2**30], dtype=torch.int32)]),
        "i64": torch.cat([torch.arange(2**32 - 16, 2**32 + 16, dtype=torch.int64),
                          torch.randint(-2**62, 2**62, (28,), generator=g, dtype=torch.int64),
                          torch.tensor([2**63 - 1, -2**63, -1, 2**40 + 3], dtype=torch.int64)]),
    }
    cases = []
    for seed in (0, 1, 42, 123456789, -1, -2**31, 2**33 + 5, -(2**40) - 7):
        for odt, o in offsets.items():
            for rounds in (10, 7):
                if rounds != 10 and seed not in (42, 2**33 + 5):
                    continue
                d = o.cuda()
                int4x = torch.empty(4 * N, dtype=torch.int32, device="cuda")
                ri = torch.empty(N, dtype=torch.int32, device="cuda")
                r = torch.empty(N, dtype=torch.float32, device="cuda")
                r4 = torch.empty(4 * N, dtype=torch.float32, device="cuda")
                rn = torch.empty(N, dtype=torch.float32, device="cuda")
                philox_kernel[(1, )](seed, d, int4x, ri, r, r4, rn, N=N, ROUNDS=rounds)
                torch.cuda.synchronize()
                cases.append({
                    "seed": seed, "offsets_dtype": odt, "offsets": o.tolist(), "n_rounds": rounds,
                    "randint4x": [u32(int4x[k * N:(k + 1) * N]) for k in range(4)],
                    "randint": u32(ri), "rand": f32_bits(r),
                    "rand4x": [f32_bits(r4[k * N:(k + 1) * N]) for k in range(4)],
                    "randn": f32_bits(rn),
                })
    meta = {"triton": triton.__version__, "torch": torch.__version__, "device": torch.cuda.get_device_name(),
            "script": "tests/data/philox_reference.py", "n": N}
    with open(out, "w") as f:
        json.dump({"meta": meta, "cases": cases}, f)
    print(f"{len(cases)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1])

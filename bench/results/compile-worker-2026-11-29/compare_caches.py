#!/usr/bin/env python3
"""The cache entries of two tl builds side by side, matched by kernel, target, options,
signature and constants (the keys differ: they hold each build's compiler identity).
Every artifact (code, tile IR, LLVM IR, ...) must be byte-identical, and the metadata too,
but for what names the build or the moment: compiler, created, last_used, compile_ms,
phases_ms (timings), hits.

  python3 compare_caches.py OLD_CACHE_DIR NEW_CACHE_DIR
"""
import json
import pathlib
import struct
import sys

VOLATILE = {"compiler", "created", "last_used", "compile_ms", "phases_ms", "hits"}


def read(path):
    b = path.read_bytes()
    assert b[:8] == b"TLCACHE1", path
    payload = b[72:]
    (n,) = struct.unpack_from("<I", payload, 0)
    meta = json.loads(payload[4:4 + n])
    at = 4 + n
    (count,) = struct.unpack_from("<I", payload, at)
    at += 4
    artifacts = {}
    for _ in range(count):
        (ln,) = struct.unpack_from("<I", payload, at)
        name = payload[at + 4:at + 4 + ln].decode()
        at += 4 + ln
        (dl,) = struct.unpack_from("<Q", payload, at)
        artifacts[name] = payload[at + 8:at + 8 + dl]
        at += 8 + dl
    return meta, artifacts


def entries(d):
    out = {}
    for p in pathlib.Path(d).rglob("*.tlc"):
        meta, arts = read(p)
        ident = json.dumps([meta.get(k) for k in ("kernel", "target_full", "options", "signature", "constants_hex")],
                           sort_keys=True)
        assert ident not in out, ident
        out[ident] = ({k: v for k, v in meta.items() if k not in VOLATILE}, arts)
    return out


old, new = entries(sys.argv[1]), entries(sys.argv[2])
bad = 0
if old.keys() != new.keys():
    print("different kernels:", sorted(old.keys() ^ new.keys()))
    bad += 1
for ident in sorted(old.keys() & new.keys()):
    (mo, ao), (mn, an) = old[ident], new[ident]
    if mo != mn:
        bad += 1
        print("metadata differs:", ident, {k for k in mo.keys() | mn.keys() if mo.get(k) != mn.get(k)})
    if ao != an:
        bad += 1
        print("artifacts differ:", ident, {k for k in ao.keys() | an.keys() if ao.get(k) != an.get(k)})
print(f"{len(old.keys() & new.keys())} entries in both, {bad} differences")
sys.exit(1 if bad else 0)

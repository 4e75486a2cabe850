#!/usr/bin/env python3
"""The tables of README.md from timing/: per kernel and target, each round's wall / CPU
median (Triton: its medians; tl: tl-bench-compile's real_time median and its cpu counter),
in the order the rounds ran; then the phases of each tl variant (ms a compile, the mean of
its two rounds' medians).   python3 tables.py timing/"""
import re
import sys
from pathlib import Path

d = Path(sys.argv[1])
rounds = []  # (name, time, {(kernel, target): (wall, cpu, phases)})


def parse(name, text):
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        t = head.split()[1]
        res = {}
        for line in body.splitlines():
            m = re.match(r"triton_compile/(\w+)/(\w+)_median\s+([\d.]+) ms .*cpu median ([\d.]+) ms", line)
            if m:
                res[(m[1], m[2])] = (float(m[3]), float(m[4]), {})
            m = re.match(r"phases_(\w+)/(\w+)/min_time:[\d.]+/real_time_median\s+([\d.]+) ms\s+[\d.]+ ms\s+\d+ (.*)", line)
            if m:
                ph = dict((k, float(v)) for k, v in re.findall(r"([a-z ]+?)=([\d.]+)", m[4]))
                ph = {k.strip(): v for k, v in ph.items()}
                res[(m[1], m[2])] = (float(m[3]), ph.get("cpu", 0.0), ph)
        rounds.append((name, t, res))


for f in sorted(d.glob("*.txt")):
    parse(f.stem.replace("tl_", ""), f.read_text())
rounds.sort(key=lambda r: r[1])
kernels = [(k, t) for t in ("gfx942", "gfx950") for k in ("rmsnorm", "matmul", "attention")]
print("| kernel | " + " | ".join(f"{n} {t[:5]}" for n, t, _ in rounds) + " |")
print("| --- | " + " | ".join("---:" for _ in rounds) + " |")
for k in kernels:
    cells = []
    for _, _, res in rounds:
        w, c, _ = res.get(k, (0, 0, {}))
        cells.append(f"{w:.0f} / {c:.0f}")
    print(f"| {k[0]} {k[1]} | " + " | ".join(cells) + " |")
print()
print("CPU ms a compile, mean of each variant's rounds; Triton / tl:")
print("| kernel | Triton | old | new | in process | Triton / old | Triton / new | Triton / in process |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for k in kernels:
    cpu = {}
    for name in ("triton", "old", "new", "inproc"):
        v = [res[k][1] for n, _, res in rounds if n == name and k in res]
        cpu[name] = sum(v) / len(v) if v else float("nan")
    print(f"| {k[0]} {k[1]} | {cpu['triton']:.0f} | {cpu['old']:.1f} | {cpu['new']:.1f} | {cpu['inproc']:.1f} | "
          f"{cpu['triton'] / cpu['old']:.2f}x | {cpu['triton'] / cpu['new']:.2f}x | {cpu['triton'] / cpu['inproc']:.2f}x |")
print()
phases = ["trace", "tile passes", "gpu planning", "lowering", "llvm middle end", "backend codegen", "link"]
print("Phases, ms a compile (wall clock of each phase, mean of the two rounds' medians):")
print("| kernel | variant | " + " | ".join(phases) + " |")
print("| --- | --- | " + " | ".join("---:" for _ in phases) + " |")
for k in kernels:
    for name in ("old", "new", "inproc"):
        rs = [res[k][2] for n, _, res in rounds if n == name and k in res]
        print(f"| {k[0]} {k[1]} | {name} | " + " | ".join(f"{sum(r.get(p, 0) for r in rs) / len(rs):.2f}" for p in phases) + " |")

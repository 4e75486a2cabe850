#!/usr/bin/env python3
"""The same sitting's table from same_sitting.sh's raw output: per round (in the order run),
wall ms (median) / CPU ms (median) of each kernel and target, and Triton / tl in CPU time
for each tl round against the mean of the Triton rounds around it.
    python3 table.py OUT_DIR"""
import re, sys, os
out = sys.argv[1]
rounds = []  # (label, time, load, {key: (wall, cpu)})
for name in ("triton", "tl_old", "tl_new"):
    cur = None
    for line in open(os.path.join(out, name + ".txt")):
        m = re.match(r"## (\S+) (\S+) load (\S+)", line)
        if m:
            cur = (m.group(1), m.group(2), m.group(3), {}); rounds.append(cur); continue
        m = re.match(r"triton_compile/(\w+)/(\w+)_median\s+([\d.]+) ms .*cpu median ([\d.]+) ms", line)
        if m and cur: cur[3][(m.group(1), m.group(2))] = (float(m.group(3)), float(m.group(4))); continue
        m = re.match(r"phases_(\w+)/(\w+)/min_time:[\d.]+/real_time_median\s+([\d.]+) ms .*cpu=([\d.]+)", line)
        if m and cur: cur[3][(m.group(1), m.group(2))] = (float(m.group(3)), float(m.group(4)))
rounds.sort(key=lambda r: r[1])
keys = [(k, t) for k in ("rmsnorm", "matmul", "attention") for t in ("gfx942", "gfx950")]
print("| kernel | " + " | ".join(f"{r[0]} {r[1]} (load {r[2]})" for r in rounds) + " |")
print("| --- |" + " ---: |" * len(rounds))
for k in keys:
    cells = [f"{r[3][k][0]:.0f} / {r[3][k][1]:.0f}" if k in r[3] else "-" for r in rounds]
    print(f"| {k[0]} {k[1]} | " + " | ".join(cells) + " |")
print()
print("Triton / tl, CPU time (each tl round against the mean of the Triton rounds before and after it):")
print()
tl_rounds = [i for i, r in enumerate(rounds) if r[0] != "triton"]
print("| kernel | " + " | ".join(f"{rounds[i][0]} {rounds[i][1]}" for i in tl_rounds) + " |")
print("| --- |" + " ---: |" * len(tl_rounds))
for k in keys:
    cells = []
    for i in tl_rounds:
        before = [r for r in rounds[:i] if r[0] == "triton" and k in r[3]][-1:]
        after = [r for r in rounds[i + 1:] if r[0] == "triton" and k in r[3]][:1]
        tri = [r[3][k][1] for r in before + after]
        cells.append(f"{sum(tri) / len(tri) / rounds[i][3][k][1]:.2f}x" if tri and k in rounds[i][3] else "-")
    print(f"| {k[0]} {k[1]} | " + " | ".join(cells) + " |")

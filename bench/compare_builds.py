#!/usr/bin/env python3
"""The AMD code two tl builds make, side by side (bench/compare_builds.sh runs it).

  compare_builds.py collect BUILD OUT [--archs gfx90a,gfx942,gfx950]
      compiles (no GPU needed) every kernel of tl-amd-quality's cases, the RMSNorm sample
      at bench/isa_snapshot.sh's 7 shapes, the GEMM sample (its chosen configurations at
      4096^3 and 512^3, and the four anchor configurations at 4096^3, bf16 and FP8) and
      the FP8 decode sample's --report at D = 64, 128, 256 (with its guardrail lines),
      each command in a fresh TL_CACHE_DIR with TL_ALWAYS_COMPILE=1; reads every kernel's
      report (VGPRs, AGPRs, spills, LDS, ...) from the cache entry and counts s_barrier,
      ds_read*/ds_load* and ds_write*/ds_store* in its disassembly (tl-cache isa).
      Writes OUT/kernels.json, OUT/guardrail.json, OUT/commands.txt, OUT/failures.json,
      OUT/logs/ (each command's stdout/stderr) and OUT/isa/ (each kernel's listing).
  compare_builds.py compile-time OLD_BUILD NEW_BUILD OUT [--rounds 3]
      the same sitting, old and new alternating: tl-bench-compile (compile benchmarks, its
      per-repetition times) and the GEMM / FP8 decode samples' compile_ms for gfx942;
      writes OUT/compile_time.json.
  compare_builds.py compare OLD_DIR NEW_DIR OUT_MD [--compile-time FILE]
      one row per (tool, kernel, arch), and the summary of what went up.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "amd_quality"))
from isa import instructions  # noqa: E402 (bench/amd_quality/isa.py: one definition for both comparisons)

RMSNORM_SHAPES = [(32768, 128), (65536, 128), (8192, 4096), (4096, 8192), (16384, 2048), (2048, 16384),
                  (1024, 32768)]
# bench/results/amd-gemm-2026-11-23: the anchor's four configurations (block M, N, K, warps), 2 stages.
GEMM_ANCHORS = [(128, 128, 64, 4), (256, 256, 64, 8), (64, 64, 64, 4), (128, 128, 128, 4)]
GEMM_SHAPES = [4096, 512]  # the sample's --report shapes (M = N = K)
DECODE_DS = [64, 128, 256]
DECODE_SHAPE = ["--b", "16", "--s", "8192", "--hq", "64", "--hkv", "8"]  # the sample's --report problem

METRICS = ["vgpr", "agpr", "sgpr", "spill_vgpr", "spill_sgpr", "lds_bytes", "scratch_bytes", "occupancy"]
COUNTS = ["s_barrier", "ds_read", "ds_write", "ds", "instructions"]


# ----------------------------------------------------------------------------- collect

def isa_counts(text):
    ins = instructions(text)
    return {
        "s_barrier": sum(i == "s_barrier" for i in ins),
        "ds_read": sum(i.startswith(("ds_read", "ds_load")) for i in ins),
        "ds_write": sum(i.startswith(("ds_write", "ds_store")) for i in ins),
        "ds": sum(i.startswith("ds_") for i in ins),
        "instructions": len(ins),
    }


def clean_isa(text):
    """The listing without the line naming the temporary file it was read from."""
    return "\n".join(l for l in text.splitlines() if "file format" not in l) + "\n"


def constants(hexs):
    """The constexpr values of a cache entry: 32-bit little-endian integers where the bytes
    divide so (they do for every kernel here but the RMSNorm backward), else the hex."""
    if hexs and len(hexs) % 8 == 0:
        return ",".join(str(int.from_bytes(bytes.fromhex(hexs[i:i + 8]), "little", signed=True))
                        for i in range(0, len(hexs), 8))
    return hexs or "-"


def schedule_of(remarks):
    for r in remarks or []:
        if r.startswith("schedule: "):
            return r[len("schedule: "):].split(" ")[0]
    return ""


class Collector:
    def __init__(self, build, out, archs):
        self.build = os.path.abspath(build)
        self.out = out
        self.archs = archs
        self.kernels = []
        self.guardrail = []
        self.failures = []
        self.commands = []
        self.n = 0
        for d in ("logs", "isa"):
            os.makedirs(os.path.join(out, d), exist_ok=True)

    def exe(self, rel):
        p = os.path.join(self.build, rel)
        return p if os.access(p, os.X_OK) else None

    def tool(self, rel, tool, arch):
        """The executable `rel` of the build, or None with the failure recorded (a missing
        tool is reported, not fatal)."""
        p = self.exe(rel)
        if not p:
            self.failures.append({"tool": tool, "label": "-", "arch": arch, "command": "-", "rc": -1,
                                  "error": f"no {rel} in this build"})
        return p

    def run(self, tool, label, arch, argv, timeout=900):
        """Runs argv in a fresh cache; returns (rc, stdout, cache_dir). Logged, failures recorded."""
        self.n += 1
        cache = tempfile.mkdtemp(prefix="tl-compare-")
        env = dict(os.environ, TL_CACHE_DIR=cache, TL_ALWAYS_COMPILE="1")
        for v in ("TL_TARGET", "TL_AMDGPU_SCHEDULE", "TL_DUMP_IR", "TL_DEBUG"):
            env.pop(v, None)
        cmd = "TL_CACHE_DIR=$(mktemp -d) TL_ALWAYS_COMPILE=1 " + " ".join(argv)
        self.commands.append(cmd)
        t0 = time.time()
        try:
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
            rc, so, se = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, so, se = 124, e.stdout or "", (e.stderr or "") + f"\n(timed out after {timeout} s)"
            so = so.decode() if isinstance(so, bytes) else so
            se = se.decode() if isinstance(se, bytes) else se
        wall = time.time() - t0
        base = f"{self.n:03d}.{tool}.{arch}.{re.sub(r'[^A-Za-z0-9_.=-]+', '_', label)}"
        open(os.path.join(self.out, "logs", base + ".out"), "w").write(so)
        open(os.path.join(self.out, "logs", base + ".err"), "w").write(se)
        print(f"  [{wall:6.1f} s] rc={rc} {cmd}", flush=True)
        if rc != 0:
            tail = "\n".join((se.strip() or so.strip()).splitlines()[-6:])
            self.failures.append({"tool": tool, "label": label, "arch": arch, "command": cmd, "rc": rc,
                                  "error": tail})
        return rc, so, cache

    def entries(self, tool, label, arch, cache):
        """Every kernel the command left in its cache."""
        tlc = self.exe("tools/tl-cache")
        p = subprocess.run([tlc, "--dir", cache, "list", "--json"], capture_output=True, text=True)
        try:
            listed = json.loads(p.stdout)
        except json.JSONDecodeError:
            self.failures.append({"tool": tool, "label": label, "arch": arch, "command": "tl-cache list --json",
                                  "rc": p.returncode, "error": p.stderr.strip()[-500:]})
            listed = []
        for e in listed:
            m = e.get("meta", {})
            if not str(m.get("target", "")).startswith("gfx"):
                continue
            isa = subprocess.run([tlc, "--dir", cache, "isa", e["key"]], capture_output=True, text=True).stdout
            opts = m.get("options", {})
            spec = f"w{opts.get('num_warps', '?')} s{opts.get('num_stages', '?')} c={constants(m.get('constants_hex', ''))}"
            sig = hashlib.md5(json.dumps(m.get("signature", [])).encode()).hexdigest()[:6]
            self.add(tool, label, arch, m.get("kernel", e.get("kernel", "?")), spec, m.get("report", {}),
                     m.get("remarks", []), m.get("compile_ms", 0.0), isa,
                     extra={"constants_hex": m.get("constants_hex", ""), "signature": m.get("signature", []),
                            "options": opts, "compiler": m.get("compiler", ""), "signature_hash": sig})
        shutil.rmtree(cache, ignore_errors=True)

    def add(self, tool, label, arch, kernel, spec, report, remarks, compile_ms, isa, extra=None):
        isa = clean_isa(isa)
        md5 = hashlib.md5(isa.encode()).hexdigest()
        name = f"{arch}.{tool}.{label}.{kernel}.{spec}" if label != kernel else f"{arch}.{tool}.{kernel}.{spec}"
        name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name) + ".s"
        open(os.path.join(self.out, "isa", name), "w").write(isa)
        rec = {"tool": tool, "label": label, "arch": arch, "kernel": kernel, "spec": spec,
               "report": {k: report.get(k) for k in METRICS if k in report}, "counts": isa_counts(isa),
               "isa_md5": md5, "isa_file": "isa/" + name, "compile_ms": compile_ms,
               "schedule": schedule_of(remarks), "remarks": remarks}
        rec.update(extra or {})
        self.kernels.append(rec)

    # --- the tools

    def amd_quality(self, arch):
        q = self.tool("bench/tl-amd-quality", "amd_quality", arch)
        if not q:
            return
        def take(path):
            for r in json.load(open(path)):
                self.add("amd_quality", r["name"], arch, r["name"], f"w{r['num_warps']}", r.get("report", {}),
                         r.get("remarks", []), r.get("compile_ms", 0.0), r.get("isa", ""))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "q.json")
            rc, _, cache = self.run("amd_quality", "all", arch, [q, "--target", arch, "--out", out])
            shutil.rmtree(cache, ignore_errors=True)
            if rc == 0:
                take(out)
                return
            # One case failed and stopped the run: the others one at a time.
            names = [c["name"] for c in json.loads(subprocess.run([q, "--list"], capture_output=True,
                                                                  text=True).stdout)]
            for n in names:
                rc, _, cache = self.run("amd_quality", n, arch, [q, "--target", arch, "--only", n, "--out", out])
                shutil.rmtree(cache, ignore_errors=True)
                if rc == 0:
                    take(out)

    def rmsnorm(self, arch):
        s = self.tool("samples/tl-sample-rmsnorm", "rmsnorm", arch)
        if not s:
            return
        for rows, cols in RMSNORM_SHAPES:
            label = f"{rows}x{cols}"
            rc, _, cache = self.run("rmsnorm", label, arch,
                                    [s, "--target", arch, "--report", "--rows", str(rows), "--cols", str(cols)])
            self.entries("rmsnorm", label, arch, cache)

    def gemm(self, arch):
        s = self.tool("samples/tl-sample-gemm", "gemm", arch)
        if not s:
            return
        for dt in ("bf16", "fp8"):
            for n in GEMM_SHAPES:
                label = f"{dt} {n}^3 chosen"
                rc, out, cache = self.run("gemm", label, arch, [s, "--target", arch, "--report", "--dtype", dt,
                                                                "--m", str(n), "--n", str(n), "--k", str(n)])
                self.entries("gemm", label, arch, cache)
            for bm, bn, bk, w in GEMM_ANCHORS:
                label = f"{dt} 4096^3 {bm}x{bn}x{bk}s2w{w}"
                rc, out, cache = self.run("gemm", label, arch, [
                    s, "--target", arch, "--report", "--dtype", dt, "--m", "4096", "--n", "4096", "--k", "4096",
                    "--block-m", str(bm), "--block-n", str(bn), "--block-k", str(bk), "--stages", "2",
                    "--warps", str(w)])
                self.entries("gemm", label, arch, cache)

    def fp8_decode(self, arch):
        s = self.tool("samples/tl-sample-fp8_decode", "fp8_decode", arch)
        if not s:
            return
        for d in DECODE_DS:
            label = f"D={d}"
            rc, out, cache = self.run("fp8_decode", label, arch,
                                      [s, "--target", arch, "--report"] + DECODE_SHAPE + ["--d", str(d)])
            self.entries("fp8_decode", label, arch, cache)
            for line in out.splitlines():
                if line.startswith(("guardrail:", "split:", "kernel fp8_decode_partial")):
                    self.guardrail.append({"arch": arch, "label": label, "line": line})

    def collect(self):
        for arch in self.archs:
            print(f"{arch}:", flush=True)
            self.amd_quality(arch)
            self.rmsnorm(arch)
            self.gemm(arch)
            self.fp8_decode(arch)
        info = build_info(self.build)
        json.dump(info, open(os.path.join(self.out, "build.json"), "w"), indent=1)
        json.dump(self.kernels, open(os.path.join(self.out, "kernels.json"), "w"), indent=1)
        json.dump(self.guardrail, open(os.path.join(self.out, "guardrail.json"), "w"), indent=1)
        json.dump(self.failures, open(os.path.join(self.out, "failures.json"), "w"), indent=1)
        open(os.path.join(self.out, "commands.txt"), "w").write("\n".join(self.commands) + "\n")
        print(f"{len(self.kernels)} kernels, {len(self.failures)} failed commands", flush=True)


def build_info(build):
    info = {"build": os.path.abspath(build)}
    try:
        src = [l.split("=", 1)[1].strip() for l in open(os.path.join(build, "CMakeCache.txt"))
               if l.startswith("CMAKE_HOME_DIRECTORY")][0]
        info["source"] = src
        g = lambda *a: subprocess.run(["git", "-C", src] + list(a), capture_output=True, text=True).stdout.strip()
        info["commit"] = g("rev-parse", "HEAD")
        info["subject"] = g("log", "-1", "--format=%s")[:120]
        info["dirty"] = bool(g("status", "--porcelain", "--untracked-files=no"))
    except (OSError, IndexError):
        pass
    return info


# ------------------------------------------------------------------------- compile time

def bench_compile(exe, reps):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "b.json")
        env = dict(os.environ, TL_CACHE_DIR=tmp)
        subprocess.run([exe, "--benchmark_filter=compile|first_launch", f"--benchmark_repetitions={reps}",
                        f"--benchmark_out={out}", "--benchmark_out_format=json"], env=env, capture_output=True,
                       text=True, check=True)
        res = {}
        for b in json.load(open(out))["benchmarks"]:
            if b.get("run_type") != "iteration":
                continue
            unit = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b.get("time_unit", "ms")]
            res.setdefault(b["run_name"], []).append(b["real_time"] * unit)
            res.setdefault(b["run_name"] + " (CPU time)", []).append(b["cpu_time"] * unit)
        return res


def sample_compile_ms(build):
    """compile_ms of each kernel the GEMM (4096^3, both dtypes) and FP8 decode (D=128) reports compile."""
    res = {}
    cmds = [("gemm", [os.path.join(build, "samples/tl-sample-gemm"), "--target", "gfx942", "--report", "--m", "4096",
                      "--n", "4096", "--k", "4096"]),
            ("fp8_decode", [os.path.join(build, "samples/tl-sample-fp8_decode"), "--target", "gfx942", "--report"]
             + DECODE_SHAPE + ["--d", "128"])]
    for tool, argv in cmds:
        if not os.access(argv[0], os.X_OK):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, TL_CACHE_DIR=tmp, TL_ALWAYS_COMPILE="1")
            t0 = time.perf_counter()
            p = subprocess.run(argv, env=env, capture_output=True, text=True)
            res[f"{tool} --report (wall, whole process)"] = (time.perf_counter() - t0) * 1e3
            kernel = None
            for line in p.stdout.splitlines():
                m = re.match(r"^(?:kernel:? )(\S+)", line.strip())
                if m:
                    kernel = m.group(1).rstrip(",:")
                m = re.match(r"^compile_ms: ([\d.]+)", line.strip())
                if m and kernel:
                    res[f"{tool} {kernel}"] = float(m.group(1))
    return res


def compile_time(old, new, out, rounds, reps):
    data = {"rounds": rounds, "repetitions": reps, "loadavg_before": os.getloadavg(), "old": {}, "new": {}}
    for r in range(rounds):
        for side, build in (("old", old), ("new", new)):
            exe = os.path.join(build, "bench/tl-bench-compile")
            if os.access(exe, os.X_OK):
                for k, v in bench_compile(exe, reps).items():
                    data[side].setdefault("tl-bench-compile " + k, []).extend(v)
            for k, v in sample_compile_ms(build).items():
                data[side].setdefault(k, []).append(v)
            print(f"  round {r + 1} {side} done", flush=True)
    data["loadavg_after"] = os.getloadavg()
    json.dump(data, open(out, "w"), indent=1)


# ------------------------------------------------------------------------------ compare

def match(old, new):
    """Pairs of (old, new) records: by (tool, label, arch, kernel, spec); then, where one
    record of a (tool, label, arch, kernel) is left on each side, those two."""
    key = lambda r: (r["tool"], r["label"], r["arch"], r["kernel"], r["spec"], r.get("signature_hash", ""))
    grp = lambda r: key(r)[:4]
    o = {}
    for r in old:
        o.setdefault(key(r), []).append(r)
    pairs, left_new = [], []
    for r in new:
        if o.get(key(r)):
            pairs.append((o[key(r)].pop(0), r))
        else:
            left_new.append(r)
    left_old = [r for v in o.values() for r in v]
    lo, ln = {}, {}
    for r in left_old:
        lo.setdefault(grp(r), []).append(r)
    for r in left_new:
        ln.setdefault(grp(r), []).append(r)
    only_old, only_new = [], []
    for g in set(lo) | set(ln):
        a, b = lo.get(g, []), ln.get(g, [])
        if len(a) == 1 and len(b) == 1:
            pairs.append((a[0], b[0]))
        else:
            only_old += a
            only_new += b
    return pairs, only_old, only_new


def val(r, k):
    if k in COUNTS:
        return r["counts"].get(k)
    if k == "spills":
        return (r["report"].get("spill_vgpr") or 0) + (r["report"].get("spill_sgpr") or 0)
    return r["report"].get(k)


def cell(a, b):
    if a == b:
        return f"{a}"
    return f"**{a} → {b}**"


TOOL_ORDER = {"amd_quality": 0, "rmsnorm": 1, "gemm": 2, "fp8_decode": 3}


def sort_key(p):
    o, n = p
    return (TOOL_ORDER.get(n["tool"], 9), n["arch"], n["label"], n["kernel"], n["spec"])


def fmt_ms(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f})" if v else "-"


def row_cells(r):
    return [r["tool"], r["label"] if r["label"] != r["kernel"] else "", r["kernel"], r["spec"], r["arch"]]


def title(r):
    return " ".join(x for x in row_cells(r) if x)


def bare(listing):
    """A listing without addresses and encodings (the `// addr: bytes` comments), for diffs."""
    return [re.sub(r"\s*//\s*[0-9A-Fa-f]+:.*$", "", l).rstrip() for l in listing.splitlines()]


def isa_diffs(old_dir, new_dir, pairs, out_dir):
    """For each pair whose code differs: a unified diff of the bare listings in
    OUT/isa-diff/, and both full listings in OUT/isa-diff/listings.tar.xz."""
    import difflib
    import tarfile
    d = os.path.join(out_dir, "isa-diff")
    shutil.rmtree(d, ignore_errors=True)
    diffs = [(o, n) for o, n in pairs if o["isa_md5"] != n["isa_md5"]]
    if not diffs:
        return 0
    os.makedirs(d)
    files = []
    for o, n in diffs:
        po, pn = os.path.join(old_dir, o["isa_file"]), os.path.join(new_dir, n["isa_file"])
        if not (os.path.exists(po) and os.path.exists(pn)):
            continue
        name = os.path.basename(n["isa_file"])[:-2] + ".diff"
        lines = difflib.unified_diff(bare(open(po).read()), bare(open(pn).read()), "old/" + o["isa_file"],
                                     "new/" + n["isa_file"], lineterm="", n=2)
        text = "\n".join(lines) + "\n"
        tmp = os.path.join(d, name)
        open(tmp, "w").write(text)
        files += [(po, "old/" + o["isa_file"]), (pn, "new/" + n["isa_file"]), (tmp, "diff/" + name)]
    if files:
        # Everything in one archive; the diffs under 64 KB also as plain files beside it.
        with tarfile.open(os.path.join(d, "isa-diff.tar.xz"), "w:xz") as t:
            for path, arc in files:
                t.add(path, arcname=arc)
        for path, arc in files:
            if arc.startswith("diff/") and os.path.getsize(path) > 64 * 1024:
                os.remove(path)
    return len(diffs)


def compare(old_dir, new_dir, out_md, ct_file):
    ld = lambda d, f, dflt: json.load(open(os.path.join(d, f))) if os.path.exists(os.path.join(d, f)) else dflt
    old, new = ld(old_dir, "kernels.json", []), ld(new_dir, "kernels.json", [])
    bo, bn = ld(old_dir, "build.json", {}), ld(new_dir, "build.json", {})
    pairs, only_old, only_new = match(old, new)
    pairs.sort(key=sort_key)
    up_cols = [("vgpr", "VGPRs"), ("spills", "spills"), ("lds_bytes", "LDS")]
    regressions, improvements, other, identical = [], [], [], 0
    rows = []
    for o, n in pairs:
        ups = [(lbl, val(o, k), val(n, k)) for k, lbl in up_cols
               if val(o, k) is not None and val(n, k) is not None and val(n, k) > val(o, k)]
        downs = [(lbl, val(o, k), val(n, k)) for k, lbl in up_cols
                 if val(o, k) is not None and val(n, k) is not None and val(n, k) < val(o, k)]
        changed_other = [(k, val(o, k), val(n, k)) for k in ("agpr", "sgpr", "occupancy", "scratch_bytes")
                         + tuple(COUNTS) if val(o, k) != val(n, k)]
        if ups:
            regressions.append((ups, o, n))
        if downs:
            improvements.append((n, downs))
        if not ups and not downs and (changed_other or o["isa_md5"] != n["isa_md5"]):
            other.append((n, changed_other))
        same = o["isa_md5"] == n["isa_md5"]
        identical += same
        rows.append("| " + " | ".join(row_cells(n)) + " | " + " | ".join(
            cell(val(o, k), val(n, k)) for k in ("vgpr", "agpr", "spills", "lds_bytes", "occupancy", "s_barrier",
                                                 "ds_read", "ds_write", "instructions"))
            + f" | {cell(o['schedule'], n['schedule'])} | {'same' if same else '**differs**'} |")
    desc = lambda b: (f"`{b.get('build', '?')}` ({b.get('commit', '?')[:12]}{' + uncommitted changes' if b.get('dirty') else ''}"
                      f": {b.get('subject', '')[:90]})")
    archs = sorted({r["arch"] for r in old + new})
    L = ["# tl's AMD code, two builds side by side", "",
         f"- old: {desc(bo)}", f"- new: {desc(bn)}", f"- targets: {', '.join(archs)}", "",
         "No GPU: every kernel cross-compiled (TL_ALWAYS_COMPILE=1, a fresh TL_CACHE_DIR per command; "
         "the commands are in `old/commands.txt` / `new/commands.txt`, their output in `*/logs/`). VGPR is the "
         "report's `vgpr` (the code object's `.vgpr_count`: on gfx90a+ the unified total, AGPRs included), "
         "AGPR `.agpr_count`, spills VGPR + SGPR spills, LDS the group segment in bytes, occupancy waves "
         "per SIMD by tl's rule; s_barrier, ds_read (ds_read*/ds_load*), ds_write (ds_write*/ds_store*) "
         "and instructions are static counts in the disassembly (`tl-cache isa KEY`); code: whether the "
         "two listings are byte-identical (the bare diff of those that are not: `isa-diff/`). Cells show "
         "`old → new` where they differ. Spec: num_warps, num_stages and the kernel's constexpr values "
         "(c=..., in the order the kernel declares them; the GEMM's: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, "
         "stages). fp8_decode's rows include the guardrail's refused candidates (each is compiled "
         "and judged by its report).", ""]
    L += ["## Summary", "",
          f"{len(pairs)} kernels compared ({identical} with byte-identical code, {len(pairs) - identical} "
          f"different); {len(only_old)} only in old, {len(only_new)} only in new.", ""]
    L += ["### VGPRs, spills or LDS up (regressions)", ""]
    if regressions:
        L += ["| tool | label | kernel | spec | arch | what went up (old → new) | VGPR | spills | LDS | occupancy |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for ups, o, n in regressions:
            L.append("| " + " | ".join(row_cells(n)) + f" | {', '.join(f'{l} {a} → {b}' for l, a, b in ups)} | "
                     + " | ".join(f"{val(o, k)} → {val(n, k)}" for k in ("vgpr", "spills", "lds_bytes", "occupancy"))
                     + " |")
    else:
        L.append("none")
    L += ["", "### VGPRs, spills or LDS down", ""]
    L += [f"- {title(n)}: {', '.join(f'{l} {a} → {b}' for l, a, b in d)}" for n, d in improvements] or ["none"]
    L += ["", "### Code differs, VGPRs, spills and LDS unchanged", ""]
    L += [f"- {title(n)}: {', '.join(f'{k} {a} → {b}' for k, a, b in d) or 'same counts'}" for n, d in other] \
        or ["none"]
    if only_old or only_new:
        L += ["", "### Kernels in one build only", ""]
        L += [f"- old only: {title(r)} (VGPRs {val(r, 'vgpr')}, spills {val(r, 'spills')})" for r in only_old]
        L += [f"- new only: {title(r)} (VGPRs {val(r, 'vgpr')}, spills {val(r, 'spills')})" for r in only_new]
    # Guardrail lines.
    go, gn = ld(old_dir, "guardrail.json", []), ld(new_dir, "guardrail.json", [])
    if go or gn:
        L += ["", "## fp8_decode's guardrail (`--report` lines)", ""]
        keys = []
        for g in go + gn:
            if (g["arch"], g["label"]) not in keys:
                keys.append((g["arch"], g["label"]))
        for arch, label in keys:
            a = [g["line"] for g in go if (g["arch"], g["label"]) == (arch, label)]
            b = [g["line"] for g in gn if (g["arch"], g["label"]) == (arch, label)]
            L.append(f"- {arch} {label}: {'same in both' if a == b else '**differs**'}")
            for i in range(max(len(a), len(b))):
                x, y = a[i] if i < len(a) else "(none)", b[i] if i < len(b) else "(none)"
                L.append(f"  - `{x}`" if x == y else f"  - old: `{x}`<br>new: `{y}`")
    # Compile time.
    if ct_file and os.path.exists(ct_file):
        ct = json.load(open(ct_file))
        L += ["", "## Compile time (same sitting, old and new alternating)", "",
              f"{ct['rounds']} rounds, old then new; tl-bench-compile (`--benchmark_filter=compile|first_launch "
              f"--benchmark_repetitions={ct['repetitions']}`, the RMSNorm-size kernel; median over all rounds' "
              f"repetitions); the GEMM (4096^3) and FP8 decode (D=128) samples' --report for gfx942: each "
              f"kernel's compile_ms and the process's wall time, median over the rounds. "
              f"Load average before {ct['loadavg_before'][0]:.2f}, after {ct['loadavg_after'][0]:.2f} "
              f"(a shared VM: a few percent is noise).", "",
              "| measurement, ms: median (min) | old | new | new / old (medians) |", "| --- | --- | --- | --- |"]
        for k in sorted(set(ct["old"]) | set(ct["new"])):
            a, b = ct["old"].get(k, []), ct["new"].get(k, [])
            ratio = f"{statistics.median(b) / statistics.median(a):.3f}" if a and b else "-"
            L.append(f"| {k} | {fmt_ms(a)} | {fmt_ms(b)} | {ratio} |")
    tot = lambda ks: sum(r.get("compile_ms", 0.0) for r in ks)
    L += ["", f"Sum of the reports' compile_ms over the compared kernels (one compile each, during the collection): "
          f"old {tot(o for o, _ in pairs) / 1e3:.1f} s, new {tot(n for _, n in pairs) / 1e3:.1f} s.", ""]
    # Failures.
    fo, fn = ld(old_dir, "failures.json", []), ld(new_dir, "failures.json", [])
    L += ["## Commands that failed", ""]
    if fo or fn:
        for side, fs in (("old", fo), ("new", fn)):
            for f in fs:
                L.append(f"- {side}: `{f['command']}` (rc {f['rc']}): `{' / '.join(f['error'].splitlines())}`")
    else:
        L.append("none")
    L += ["", "## Every kernel", "",
          "| tool | label | kernel | spec | arch | VGPR | AGPR | spills | LDS | occupancy | s_barrier | ds_read | "
          "ds_write | instructions | schedule | code |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    L += rows
    open(out_md, "w").write("\n".join(L) + "\n")
    isa_diffs(old_dir, new_dir, pairs, os.path.dirname(os.path.abspath(out_md)))
    print(f"{len(pairs)} kernels compared, {identical} identical; regressions: {len(regressions)}")
    for ups, o, n in regressions:
        print(f"  UP: {title(n)}: {', '.join(f'{l} {a} -> {b}' for l, a, b in ups)}")
    return len(regressions)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("build")
    c.add_argument("out")
    c.add_argument("--archs", default="gfx90a,gfx942,gfx950")
    t = sub.add_parser("compile-time")
    t.add_argument("old")
    t.add_argument("new")
    t.add_argument("out")
    t.add_argument("--rounds", type=int, default=5)
    t.add_argument("--repetitions", type=int, default=3)
    m = sub.add_parser("compare")
    m.add_argument("old_dir")
    m.add_argument("new_dir")
    m.add_argument("out_md")
    m.add_argument("--compile-time")
    a = ap.parse_args()
    if a.cmd == "collect":
        os.makedirs(a.out, exist_ok=True)
        Collector(a.build, a.out, [x for x in a.archs.split(",") if x]).collect()
    elif a.cmd == "compile-time":
        compile_time(os.path.abspath(a.old), os.path.abspath(a.new), a.out, a.rounds, a.repetitions)
    else:
        n = compare(a.old_dir, a.new_dir, a.out_md, a.compile_time)
        sys.exit(3 if n and os.environ.get("FAIL_ON_REGRESSION") == "1" else 0)


if __name__ == "__main__":
    main()

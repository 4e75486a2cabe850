#!/usr/bin/env python3
"""Of the cache entries whose LLVM IR text differs between the two builds (caches.txt),
whether anything but the numeric suffixes of value names differs: LLVM numbers a name
that is taken ("%.not" -> "%.not7", "%.reass256.reass") from a counter of the function's symbol table, which
counts the names the passes made and dropped too; a module read back from bitcode starts
that counter afresh.   python3 llvm_ir_names.py caches/"""
import re
import sys
from pathlib import Path

src = (Path(__file__).parent / "compare_caches.py").read_text().split("\nold, new = entries")[0]
exec(src)
root = Path(sys.argv[1])
name = re.compile(r"%[A-Za-z_.$][\w.$]*")  # a named value; its digits dropped below
differ = same_but_names = 0


def strip(text):
    return name.sub(lambda m: re.sub(r"\d+", "", m.group()), text)


for o in sorted((root / "old").iterdir(), key=lambda p: int(p.name)):
    old, new = entries(o), entries(root / "new" / o.name)
    for k in old.keys() & new.keys():
        a, b = old[k][1]["llvm_ir"].decode(), new[k][1]["llvm_ir"].decode()
        if a == b:
            continue
        differ += 1
        if strip(a) == strip(b):
            same_but_names += 1
        else:
            print("differs beyond names:", o.name, k[:80])
print(f"{differ} LLVM IR texts differ; {same_but_names} of them only in value names' numeric suffixes")

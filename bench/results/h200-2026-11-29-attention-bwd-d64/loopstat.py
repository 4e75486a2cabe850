import re, sys, collections
# SASS from cuobjdump: find the innermost loop(s): backward branches; print instruction class counts in the largest loop body
for f in sys.argv[1:]:
    lines = [l for l in open(f)]
    ins = []
    for l in lines:
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", l)
        if m: ins.append((int(m.group(1), 16), m.group(2).strip()))
    addr_idx = {a: i for i, (a, _) in enumerate(ins)}
    loops = []
    for i, (a, t) in enumerate(ins):
        m = re.search(r"BRA\s+(?:`?\(?\.L_x_\d+\)?|0x([0-9a-f]+))", t)
        m2 = re.search(r"BRA .*?0x([0-9a-f]+)", t)
        if m2:
            tgt = int(m2.group(1), 16)
            if tgt <= a and tgt in addr_idx: loops.append((addr_idx[tgt], i))
    loops.sort(key=lambda x: x[1] - x[0], reverse=True)
    print("==", f, "loops (start,end,len):", [(s, e, e - s + 1) for s, e in loops[:4]])
    for s, e in loops[:2]:
        c = collections.Counter()
        for _, t in ins[s:e + 1]:
            op = re.sub(r"^@!?U?P\w+\s+", "", t).split()[0]
            c[op.split(".")[0]] += 1
        print("  loop", s, e, "n=", e - s + 1, dict(c.most_common(40)))

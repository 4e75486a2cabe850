# PTX experiment: within each wgmma.fence ... wgmma.commit_group region, move every instruction that is not
# a wgmma inline-asm block above the fence (the A fragments' cvt and descriptor math), as Triton orders them.
import sys, re
src = open(sys.argv[1]).read().split("\n")
out, i, n = [], 0, 0
while i < len(src):
    l = src[i]
    if l.strip() == "wgmma.fence.sync.aligned;":
        j = i + 1
        region = []
        while j < len(src) and "wgmma.commit_group" not in src[j]:
            region.append(src[j]); j += 1
        if j == len(src): out.append(l); i += 1; continue
        hoisted, asm, k = [], [], 0
        while k < len(region):
            r = region[k]
            if r.strip() == "// begin inline asm":
                blk = []
                while True:
                    blk.append(region[k]);
                    if region[k].strip() == "// end inline asm": break
                    k += 1
                asm += blk
            else:
                hoisted.append(r)
            k += 1
        if any(re.search(r"wgmma\.mma_async", a) for a in asm):
            n += 1
            out += hoisted + [l] + asm
        else:
            out += [l] + region
        i = j
        continue
    out.append(l); i += 1
open(sys.argv[2], "w").write("\n".join(out))
print(sys.argv[1], "regions hoisted:", n, file=sys.stderr)

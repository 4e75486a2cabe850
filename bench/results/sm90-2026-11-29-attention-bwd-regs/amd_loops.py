# Instruction counts of the loops (backward branches) of AMD ISA as tl writes it (objdump form).
import re,sys
# objdump-style AMD ISA: backward s_cbranch/s_branch (simm16, words): loop bodies' instruction counts
for f in sys.argv[1:]:
    ins=[]
    for l in open(f):
        m=re.match(r'\s+(\w+)\s*(.*?)\s*//\s*([0-9A-F]+):',l)
        if m: ins.append((int(m.group(3),16),m.group(1),m.group(2)))
    idx={a:i for i,(a,_,_) in enumerate(ins)}
    loops=[]
    for i,(a,op,args) in enumerate(ins):
        if op.startswith('s_cbranch') or op=='s_branch':
            s=int(args.split()[0]); s= s-65536 if s>=32768 else s
            if s<0:
                t=a+4+4*s
                if t in idx: loops.append((idx[t],i,i-idx[t]+1))
    loops.sort(key=lambda x:-x[2]); print(f.split('/')[-1], [(e) for s,_,e in loops[:8]])

# Usage: python3 sass_hist.py A.sass B.sass (nvdisasm -c K.cubin > K.sass): the opcode counts of the innermost loop
# around the HGMMAs (as sass_loop.py finds it) of two kernels side by side.
import re,sys,collections
def loop(path):
    s=open(path).read().splitlines()
    ins=[];labels={};pend=[]
    for line in s:
        l=re.match(r'^(\.L_x_\d+):',line.strip())
        if l: pend.append(l.group(1)); continue
        m=re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);',line)
        if m:
            a=int(m.group(1),16); ins.append((a,m.group(2)))
            for p in pend: labels[p]=a
            pend=[]
    idx={a:i for i,(a,_) in enumerate(ins)}
    best=None
    for i,(a,t) in enumerate(ins):
        m=re.search(r'BRA.*\((\.L_x_\d+)\)',t)
        if m and m.group(1) in labels:
            tgt=labels[m.group(1)]
            if tgt<a and tgt in idx:
                body=ins[idx[tgt]:i+1]
                if any('HGMMA' in x for _,x in body):
                    if best is None or len(body)<len(best): best=body
    return [x for _,x in best]
def op(x):
    t=x.split()
    if t[0].startswith('@'): t=t[1:]
    return t[0]
A=collections.Counter(op(x) for x in loop(sys.argv[1])); B=collections.Counter(op(x) for x in loop(sys.argv[2]))
print(sum(A.values()), sum(B.values()))
for k in sorted(set(A)|set(B), key=lambda k:-(A[k]+B[k])): print(f'{k:28s} {A[k]:5d} {B[k]:5d}')

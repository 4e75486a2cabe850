# Usage: python3 sass_loop.py PTXAS_BIN_DIR KERNEL.cubin (ptxas -arch=sm_90a K.ptx -o K.cubin).
# SASS of a cubin: the instructions of the innermost loop that holds the wgmma (the backward branch around HGMMA).
import re,subprocess,sys

def hgmma_loop(lines):
    """The (address, instruction) pairs of the innermost loop holding a wgmma (HGMMA) in nvdisasm -c text."""
    ins=[];labels={};pend=[]
    for line in lines:
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
    return best


if __name__ == '__main__':
    P=sys.argv[1]; cub=sys.argv[2]
    s=subprocess.run([P+'/nvdisasm','-c',cub],capture_output=True,text=True).stdout
    best=hgmma_loop(s.splitlines())
    if best is None: print('no loop'); sys.exit()
    ops=[x.split()[0] if not x.startswith('@') else x.split()[1] for _,x in best]
    import collections
    c=collections.Counter(o.split('.')[0] for o in ops)
    waits=[(k,x) for k,(_,x) in enumerate(best) if 'WARPGROUP' in x or 'HGMMA' in x and k==0]
    print('loop instrs',len(best),'HGMMA',c['HGMMA'],'BAR',c['BAR'],'WARPSYNC',c['WARPSYNC'],'LDS',c['LDS'],'LDGSTS',c['LDGSTS'])
    for k,(_,x) in enumerate(best):
        if 'WARPGROUP' in x or 'HGMMA' in x or x.startswith('BAR') or 'DEPBAR' in x or 'LDGDEPBAR' in x: print(' ',k,x[:90])

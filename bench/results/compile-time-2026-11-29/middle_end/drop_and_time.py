# Inputs (made on the 2-core VM, 2026-11-29): /tmp/h43-pipe.txt = o3_pipeline_gfx942.txt here
# (opt-22 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -passes='default<O3>' -print-pipeline-passes);
# /tmp/h43-{mm,attention,rmsnorm}-pre.ll = the "LLVM IR after lowering" that TL_DUMP_IR=1 prints for
# tl-bench-compile's phases_{matmul,attention,rmsnorm}/gfx942 kernels.
import subprocess,re,time,resource
pipe=open('/tmp/h43-pipe.txt').read().strip()
O=["opt-22","-mtriple=amdgcn-amd-amdhsa","-mcpu=gfx942"]
irs=['/tmp/h43-mm-pre.ll','/tmp/h43-attention-pre.ll','/tmp/h43-rmsnorm-pre.ll']
IC="instcombine<max-iterations=1;no-verify-fixpoint>"
def drop(p,name,idxs):
    occ=[m.start() for m in re.finditer(re.escape(name)+r'(?=[,)])',p)]
    for at in sorted([occ[i] for i in idxs],reverse=True):
        p=p[:at]+p[at+len(name):]
    while ',,' in p or '(,' in p or ',)' in p: p=p.replace(',,',',').replace('(,','(').replace(',)',')')
    return p
def run(p,ir):
    return subprocess.run(O+["-passes="+p,ir,"-S","-o","-"],capture_output=True,text=True).stdout
def cpu(p,ir,n=5):
    ts=[]
    for _ in range(n):
        r0=resource.getrusage(resource.RUSAGE_CHILDREN); subprocess.run(O+["-passes="+p,ir,"-disable-output"]); r1=resource.getrusage(resource.RUSAGE_CHILDREN)
        ts.append((r1.ru_utime-r0.ru_utime+r1.ru_stime-r0.ru_stime)*1e3)
    return sorted(ts)[n//2]
variants={'cvp':drop(pipe,'correlated-propagation',[0,1]),
 'cvp+ic356':drop(drop(pipe,'correlated-propagation',[0,1]),IC,[3,5,6])}
for k,p in variants.items():
    print(k,[run(p,ir)==run(pipe,ir) for ir in irs])
    open('/tmp/h43-pipe-'+k+'.txt','w').write(p)
for ir in irs:
    print(ir, 'O3 %.0f'%cpu(pipe,ir), ' '.join('%s %.0f'%(k,cpu(p,ir)) for k,p in variants.items()))

# Splits a TL_DUMP_IR file's "LLVM IR after LLVM optimization" sections, llc-22 -> PTX, ptxas -v.
import re,subprocess,sys,os
d=open(sys.argv[1]).read()
parts=d.split('// ----- LLVM IR after LLVM optimization -----\n')[1:]
ptxas='/root/.local/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas'
for i,p in enumerate(parts):
    ir=p.split('// -----')[0]
    ir=ir.split('\nkernel: ')[0]
    name=re.search(r'define .*@(\w+)\(',ir).group(1)
    f=f'/tmp/h27/{name}_{i}.ll'; open(f,'w').write(ir)
    r=subprocess.run(['llc-22','-mtriple=nvptx64-nvidia-cuda','-mcpu=sm_90a','-mattr=+ptx80',f,'-o',f[:-3]+'.ptx'],capture_output=True,text=True)
    if r.returncode: print(name,'llc failed',r.stderr[:500]); continue
    r=subprocess.run([ptxas,'-arch=sm_90a','-v',f[:-3]+'.ptx','-o','/dev/null'],capture_output=True,text=True)
    out=r.stdout+r.stderr
    m=re.findall(r'(Used \d+ registers.*|\d+ bytes spill stores, \d+ bytes spill loads)',out)
    ptx=open(f[:-3]+'.ptx').read()
    print(name, m, 'mma.sync',ptx.count('mma.sync'),'wgmma',ptx.count('wgmma.mma_async'),'ld.shared',len(re.findall(r'ld\.shared',ptx)),'st.shared',len(re.findall(r'st\.shared',ptx)),'ldmatrix',ptx.count('ldmatrix'),'cp.async',ptx.count('cp.async.'),'lines',ptx.count('\n'))

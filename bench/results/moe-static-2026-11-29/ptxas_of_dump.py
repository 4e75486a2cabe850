# Splits a TL_DUMP_IR file's "LLVM IR after LLVM optimization" sections, llc-22 -> PTX, ptxas -v, opcode counts.
import re,subprocess,sys,os,collections
import triton
d=open(sys.argv[1]).read()
outdir=sys.argv[2] if len(sys.argv)>2 else '/tmp/moe_static'
os.makedirs(outdir,exist_ok=True)
parts=d.split('// ----- LLVM IR after LLVM optimization -----\n')[1:]
ptxas=os.path.join(os.path.dirname(triton.__file__),'backends/nvidia/bin/ptxas')
tag=os.path.basename(sys.argv[1]).split('.')[0]
for i,p in enumerate(parts):
    ir=p.split('// -----')[0]
    ir=ir.split('\nkernel: ')[0]
    name=re.search(r'define .*@(\w+)\(',ir).group(1)
    f=f'{outdir}/{tag}_{name}_{i}.ll'; open(f,'w').write(ir)
    r=subprocess.run(['llc-22','-mtriple=nvptx64-nvidia-cuda','-mcpu=sm_90a','-mattr=+ptx80',f,'-o',f[:-3]+'.ptx'],capture_output=True,text=True)
    if r.returncode: print(name,'llc failed',r.stderr[:500]); continue
    r=subprocess.run([ptxas,'-arch=sm_90a','-v',f[:-3]+'.ptx','-o',f[:-3]+'.cubin'],capture_output=True,text=True)
    out=r.stdout+r.stderr
    m=re.findall(r'(Used \d+ registers|\d+ bytes spill stores)',out)
    ptx=open(f[:-3]+'.ptx').read()
    print(name, m, 'wgmma',ptx.count('wgmma.mma_async'),'mma.sync',ptx.count('mma.sync'),'ld.shared',len(re.findall(r'ld\.shared',ptx)),'st.shared',len(re.findall(r'st\.shared',ptx)),'ldmatrix',ptx.count('ldmatrix'),'cp.async',ptx.count('cp.async.c'),'bar',ptx.count('bar.sync')+ptx.count('barrier.sync'),'lines',ptx.count('\n'))

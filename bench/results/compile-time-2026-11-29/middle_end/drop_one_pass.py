# Inputs (made on the 2-core VM, 2026-11-29): /tmp/h43-pipe.txt = o3_pipeline_gfx942.txt here
# (opt-22 -mtriple=amdgcn-amd-amdhsa -mcpu=gfx942 -passes='default<O3>' -print-pipeline-passes);
# /tmp/h43-{mm,attention,rmsnorm}-pre.ll = the "LLVM IR after lowering" that TL_DUMP_IR=1 prints for
# tl-bench-compile's phases_{matmul,attention,rmsnorm}/gfx942 kernels.
import subprocess,sys,re
pipe=open('/tmp/h43-pipe.txt').read().strip()
O=["opt-22","-mtriple=amdgcn-amd-amdhsa","-mcpu=gfx942"]
irs=['/tmp/h43-mm-pre.ll','/tmp/h43-attention-pre.ll','/tmp/h43-rmsnorm-pre.ll']
def run(p,ir):
    return subprocess.run(O+["-passes="+p,ir,"-S","-o","-"],capture_output=True,text=True).stdout
ref={ir:run(pipe,ir) for ir in irs}
# each occurrence of a pass name removed alone
names=sys.argv[1:]
for name in names:
    occ=[m.start() for m in re.finditer(re.escape(name)+r'(?=[,)])',pipe)]
    for i,at in enumerate(occ):
        p=pipe[:at]+pipe[at+len(name):]
        p=p.replace(',,',',').replace('(,','(').replace(',)',')')
        same=[run(p,ir)==ref[ir] for ir in irs]
        print(name,i,same,flush=True)

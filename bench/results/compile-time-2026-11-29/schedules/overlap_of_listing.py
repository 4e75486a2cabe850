import re,sys
def overlap(path):
    vm=lg=0; o=dict(vm_in=0,vm_w=0,lg_in=0,lg_w=0)
    for line in open(path):
        if not line.startswith('\t') or line.startswith('\t.'): continue
        parts=line[1:].split(None,1); op=parts[0] if parts else ''
        if op.startswith(('global_load','buffer_load','flat_load','scratch_load')):
            vm+=1; o['vm_in']=max(o['vm_in'],vm)
        elif op.startswith(('ds_read','ds_bpermute','ds_permute','ds_swizzle','s_load','s_buffer_load')):
            lg+=1; o['lg_in']=max(o['lg_in'],lg)
        elif op=='s_waitcnt':
            rest=parts[1].split(';')[0] if len(parts)>1 else ''
            m=re.search(r'vmcnt\((\d+)\)',rest)
            if m: o['vm_w']+=1; vm=min(vm,int(m.group(1)))
            m=re.search(r'lgkmcnt\((\d+)\)',rest)
            if m: o['lg_w']+=1; lg=min(lg,int(m.group(1)))
    return o
for p in sys.argv[1:]: print(p, overlap(p))

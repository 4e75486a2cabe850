# Usage: python3 sass_hist.py A.sass B.sass (nvdisasm -c K.cubin > K.sass): the opcode counts of the innermost loop
# around the HGMMAs (as sass_loop.py finds it) of two kernels side by side.
import os,sys,collections
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_loop import hgmma_loop
def loop(path):
    return [x for _,x in hgmma_loop(open(path).read().splitlines())]
def op(x):
    t=x.split()
    if t[0].startswith('@'): t=t[1:]
    return t[0]
if __name__ == '__main__':
  A=collections.Counter(op(x) for x in loop(sys.argv[1])); B=collections.Counter(op(x) for x in loop(sys.argv[2]))
  print(sum(A.values()), sum(B.values()))
  for k in sorted(set(A)|set(B), key=lambda k:-(A[k]+B[k])): print(f'{k:28s} {A[k]:5d} {B[k]:5d}')

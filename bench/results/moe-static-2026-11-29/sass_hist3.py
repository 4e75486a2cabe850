# Usage: python3 sass_hist3.py A.sass B.sass C.sass ...: sass_hist.py's loop opcode counts for any number of kernels side by side.
import sys,collections
import os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_hist import loop, op
C=[collections.Counter(op(x) for x in loop(p)) for p in sys.argv[1:]]
print(f"{'total':28s}"+''.join(f'{sum(c.values()):>7d}' for c in C))
keys=sorted(set().union(*C), key=lambda k:-sum(c[k] for c in C))
for k in keys: print(f'{k:28s}'+''.join(f'{c[k]:>7d}' for c in C))

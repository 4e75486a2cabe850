#!/bin/bash
# Which kernels' PTX differ between two directories of ptx_all's output, and for those
# ptxas 12.8 (Triton's wheel) -arch=sm_90a -v: registers and spill stores, old -> new.
# usage: bash compare.sh OLD_DIR NEW_DIR
TB=$(python3 -c "import triton,os;print(os.path.dirname(triton.__file__))")/backends/nvidia/bin
same=0; diff=0
for o in "$1"/*.ptx; do
  n="$2/$(basename "$o")"
  if cmp -s "$o" "$n"; then same=$((same + 1)); continue; fi
  diff=$((diff + 1))
  r() { $TB/ptxas -arch=sm_90a -v "$1" -o /dev/null 2>&1 | grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores' | sed 's/Used //;s/ registers//;s/ bytes spill stores/ B/' | paste -sd/; }
  echo "$(basename "$o" .ptx): $(r "$o") -> $(r "$n")"
done
echo "identical: $same, different: $diff"

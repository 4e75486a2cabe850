#!/bin/bash
# tl side: sm_90 PTX of each bench configuration, ptxas -v registers / spill stores
export TL_PTXAS=/root/.local/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas TL_CACHE_DIR=${TL_CACHE_DIR:-/tmp/tl-attn-bwd-static}
for D in 128 64; do for c in 0 1; do
  [ $D = 64 ] && [ $c = 1 ] && continue
  for cfg in "dkdv 32 128 4" "dkdv 64 64 4" "dkdv 32 64 4" "dkdv 64 128 8" "dq 128 32 4" "dq 64 64 4" "dq 128 64 8"; do
    set -- $cfg
    out=$(${TL_DUMP:-/tmp/h26/dump} $1 $2 $3 $4 $D $c 2 2>&1)
    regs=$(echo "$out" | grep -o "Used [0-9]* registers" | head -1 | grep -o "[0-9]*")
    sp=$(echo "$out" | grep -o "[0-9]* bytes spill stores" | head -1 | grep -o "^[0-9]*")
    echo "tl $1 ${2}x${3} w$4 D=$D$([ $c = 1 ] && echo ' causal') s2: $regs regs, $sp B spill stores"
  done
done; done

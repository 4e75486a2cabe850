#!/bin/bash
# One configuration's sm_90 PTX from tl (DUMP: a build of this folder's tl_dump.cpp), ptxas 12.8
# (Triton's wheel) -v, cuobjdump -sass, and the SASS length of the largest loops (loopstat.py).
# usage, from the repository root: DUMP=/tmp/tl_dump bash sass_of.sh OUTDIR dkdv|dq BM BN W D causal stages
set -e
O=$1; shift
mkdir -p $O
TB=$(python3 -c "import triton,os;print(os.path.dirname(triton.__file__))")/backends/nvidia/bin
TL_ALWAYS_COMPILE=1 TL_CACHE_DIR=${TL_CACHE_DIR:-$(mktemp -d)} TL_S=${TL_S:-2048} OUT=$O ${DUMP:-/tmp/tl_dump} "$@" > $O/log.txt 2>&1 || { cat $O/log.txt; exit 1; }
n=$(ls -t $O/*.ptx | head -1); b=${n%.ptx}
$TB/ptxas -arch=sm_90a -v $n -o $b.cubin 2> $b.ptxas
$TB/cuobjdump -sass $b.cubin > $b.sass
echo "$(basename $b): $(grep -o 'Used [0-9]* registers' $b.ptxas) $(grep -o '[0-9]* bytes spill stores' $b.ptxas) loops: $(python3 bench/results/h200-2026-11-29-attention-bwd-d64/loopstat.py $b.sass | head -1 | sed 's/.*len)://')"

#!/bin/bash
# Registers, spill stores and the largest loops' SASS instructions (start, end, length) of the
# backward's sm_90 configurations, D = 64 (S = 2048) and 128 (S = 4096), causal or not, 2 stages.
# usage, from the repository root: DUMP=/tmp/tl_dump bash table.sh OUTDIR > table.txt
O=$1
for D in 64 128; do for c in 0 1; do
 for cfg in "dkdv 32 128 4" "dkdv 64 64 4" "dkdv 32 64 4" "dkdv 64 128 8" "dq 128 32 4" "dq 64 64 4" "dq 128 64 8"; do
  S=2048; [ $D = 128 ] && S=4096
  TL_S=$S bash $(dirname $0)/sass_of.sh $O $cfg $D $c 2
 done; done; done

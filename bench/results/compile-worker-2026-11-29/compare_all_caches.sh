#!/bin/bash
# Every command of compare_builds' collect (compare/old/commands.txt: tl-amd-quality and the
# RMSNorm, GEMM and FP8 decode samples, gfx90a/gfx942/gfx950), plus the three samples for
# sm_90, run by both builds, each command into a cache folder of its own; then
# compare_caches.py on each pair: every entry's code, tile IR and LLVM IR byte for byte, and
# its metadata but the timings.
#   OLD=/work/wt-44old/build NEW=/work/wt-44new/build OUT=dir bash compare_all_caches.sh  (from here)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
O=$(realpath "${OUT:-.}"); rm -rf "$O/caches"; mkdir -p "$O/caches"
cmds=$(sed -e 's|^TL_CACHE_DIR=$(mktemp -d) TL_ALWAYS_COMPILE=1 /work/wt-44old/build/||' -e 's|--out /tmp/[^ ]*|--out /dev/null|' "$HERE/compare/old/commands.txt")
cmds+=$'\n'"samples/tl-sample-rmsnorm --target sm_90 --report"
cmds+=$'\n'"samples/tl-sample-gemm --target sm_90 --report"
cmds+=$'\n'"samples/tl-sample-fp8_decode --target sm_90 --report"
i=0; bad=0
while IFS= read -r c; do
  [[ -z $c ]] && continue
  i=$((i + 1))
  for side in old new; do
    b=$OLD; [[ $side == new ]] && b=$NEW
    TL_CACHE_DIR=$O/caches/$side/$i TL_ALWAYS_COMPILE=1 $b/$c > /dev/null 2>&1 || echo "rc=$? $side: $c"
  done
  r=$(python3 "$HERE/compare_caches.py" "$O/caches/old/$i" "$O/caches/new/$i") || bad=$((bad + 1))
  echo "$i: $r   <- $c"
done <<< "$cmds"
echo "$i commands, $bad with differences"

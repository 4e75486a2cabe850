#!/usr/bin/env bash
# The code of every RMSNorm kernel the sample compiles for the 7 benchmark shapes, for
# gfx942, gfx950 and sm_90, one file per kernel named by the md5 of its disassembly/PTX
# (cache keys change with every build; the code does not unless the compiler changed it).
# Two builds made the same code exactly when their listings are equal:
#   bash bench/isa_snapshot.sh OLD_BUILD /tmp/old; bash bench/isa_snapshot.sh build /tmp/new
#   diff <(ls /tmp/old) <(ls /tmp/new)
B=$1; O=$2; rm -rf $O; mkdir -p $O
for t in gfx942 gfx950 sm_90; do
  export TL_CACHE_DIR=$(mktemp -d)
  for s in "32768 128" "65536 128" "8192 4096" "4096 8192" "16384 2048" "2048 16384" "1024 32768"; do
    set -- $s
    $B/samples/tl-sample-rmsnorm --target $t --report --rows $1 --cols $2 > /dev/null 2>&1 || echo "fail $t $s"
  done
  for k in $($B/tools/tl-cache list --json | python3 -c "import json,sys; [print(e['key']) for e in json.load(sys.stdin)]"); do
    $B/tools/tl-cache isa $k 2>&1 | grep -v "file format" > $O/.cur
    cp $O/.cur $O/$t.$(md5sum < $O/.cur | cut -c1-12).isa
  done
done
rm -f $O/.cur
ls $O | wc -l

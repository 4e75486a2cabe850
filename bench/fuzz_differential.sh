#!/usr/bin/env bash
# The differential tester's long run (tests/fuzz/differential/README.md): many more random
# tile programs than ctest's bounded fuzz.differential, a tenth of them cross-compiled for
# gfx90a, gfx942, gfx950 and sm_90, and on a GPU machine each program also run on the GPU
# and checked against the same reference as the CPU's run.
#   bash bench/fuzz_differential.sh [programs] [first seed]        here: CPU + cross-compiles
#   TL_FUZZ_DEVICE=cuda bash bench/fuzz_differential.sh 2000       with the GPU (the bundle:
#   bash bench/run_on_gpu.sh with TL_BENCHES=fuzz_differential)
# The log (every failing seed with its IR and first wrong element) goes to $OUT.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROGRAMS=${1:-5000}
SEED=${2:-100000}
BIN=${TL_FUZZ_BIN:-}
if [[ -z $BIN ]]; then
  for c in /tmp/tl/bin/tl-fuzz-differential "$ROOT"/build/tests/tl-fuzz-differential; do
    [[ -x $c ]] && BIN=$c && break
  done
fi
[[ -n $BIN ]] || { echo "no tl-fuzz-differential: build it (cmake --build build --target tl-fuzz-differential)"; exit 2; }
SEEDS=$ROOT/tests/fuzz/regressions/differential_seeds.txt
[[ -f $SEEDS ]] || SEEDS=$ROOT/bench/differential_seeds.txt  # the bundle's copy
OUT=${OUT:-$ROOT/bench/results}
mkdir -p "$OUT"
"$BIN" --programs "$PROGRAMS" --seed "$SEED" --compile "${TL_FUZZ_COMPILE:-$((PROGRAMS / 10))}" \
  --device "${TL_FUZZ_DEVICE:-cpu}" --max-failures "${TL_FUZZ_MAX_FAILURES:-50}" --regressions "$SEEDS" \
  ${TL_FUZZ_ARGS:-} > "$OUT/fuzz_differential.log" 2>&1
rc=$?
grep -a -E "^(FAIL|CRASH)|^fuzz.differential" "$OUT/fuzz_differential.log" | cut -c1-300
exit $rc

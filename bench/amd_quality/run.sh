#!/usr/bin/env bash
# The AMD code-quality suite, tl beside Triton, from code objects (no AMD GPU needed):
# builds tl-amd-quality, compiles every case for gfx942 and gfx950, compiles the Triton
# twins the same way, and writes bench/results/amd-quality-<date>/{table.md,table.json,
# plot.png,COMMAND} (--isa: both sides' listings in isa/).
#
#   bash bench/amd_quality/run.sh [--python /work/venv-triton/bin/python] [--build DIR] [--isa]
#
# Triton is not a build or CI dependency: give a Python that has it
# (python3 -m venv /work/venv-triton && /work/venv-triton/bin/pip install triton matplotlib).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${TRITON_PYTHON:-python3}
BUILD=$ROOT/build
ISA=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --python) PY=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --isa) ISA=(--isa); shift ;;
    *) echo "usage: $0 [--python PY] [--build DIR] [--isa]" >&2; exit 2 ;;
  esac
done
OUT=$ROOT/bench/results/amd-quality-$(date -u +%Y-%m-%d)
mkdir -p "$OUT"
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j"${JOBS:-2}" --target tl-amd-quality >/dev/null
# A fresh cache, always compiling: compile times are measured, and the disassembly is
# read back from the entry each compile writes.
export TL_CACHE_DIR=$(mktemp -d) TL_ALWAYS_COMPILE=1
TLJSON=$TL_CACHE_DIR/tl.json  # with the disassembly: large, not kept
"$BUILD/bench/tl-amd-quality" --target gfx942 --target gfx950 --out "$TLJSON"
"$PY" "$ROOT/bench/amd_quality/compare.py" --tl "$TLJSON" --out "$OUT" "${ISA[@]}"
rm -rf "$TL_CACHE_DIR"
{
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), tl $(git -C "$ROOT" rev-parse --short=12 HEAD), $("$PY" -c 'import triton; print("triton", triton.__version__)')"
  echo "bash bench/amd_quality/run.sh --python $PY ${ISA[*]}"
  echo "# which runs:"
  echo "TL_ALWAYS_COMPILE=1 $BUILD/bench/tl-amd-quality --target gfx942 --target gfx950 --out tl.json"
  echo "$PY bench/amd_quality/compare.py --tl tl.json --out ${OUT#$ROOT/} ${ISA[*]}"
} > "$OUT/COMMAND"
echo "wrote $OUT"

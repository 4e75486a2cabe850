#!/usr/bin/env bash
# samples/attention's backward (and forward) kernels beside Triton's on AMD, from code
# objects (no AMD GPU): builds tl-amd-quality, compiles its attention cases for gfx942 and
# gfx950, then bench/amd_quality/attention_bwd.py compiles Triton's twins and Triton's
# tutorial-06 backward (`_attn_bwd`, each half alone and whole) the same way and writes
# bench/results/amd-<date>-attention-bwd/{attention_bwd.md,attention_bwd.json,COMMAND}
# (--isa: every listing in isa/).
#
#   bash bench/amd_quality/attention_bwd.sh [--python PY] [--build DIR] [--isa]
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
OUT=$ROOT/bench/results/amd-$(date -u +%Y-%m-%d)-attention-bwd
mkdir -p "$OUT"
cmake --build "$BUILD" -j"${JOBS:-2}" --target tl-amd-quality >/dev/null
export TL_CACHE_DIR=$(mktemp -d) TL_ALWAYS_COMPILE=1
JSONS=()
for family in attention_bwd_dkdv attention_bwd_dq attention_fwd; do
  "$BUILD/bench/tl-amd-quality" --target gfx942 --target gfx950 --only $family --out "$TL_CACHE_DIR/$family.json"
  JSONS+=("$TL_CACHE_DIR/$family.json")
done
"$PY" "$ROOT/bench/amd_quality/attention_bwd.py" --tl "${JSONS[@]}" --out "$OUT" "${ISA[@]}"
rm -rf "$TL_CACHE_DIR"
{
  echo "# $(date -u +%Y-%m-%dT%H:%MZ), tl $(git -C "$ROOT" rev-parse --short=12 HEAD), $("$PY" -c 'import triton; print("triton", triton.__version__)')"
  echo "bash bench/amd_quality/attention_bwd.sh --python $PY ${ISA[*]}"
  echo "# which runs, for FAMILY in attention_bwd_dkdv attention_bwd_dq attention_fwd:"
  echo "TL_ALWAYS_COMPILE=1 $BUILD/bench/tl-amd-quality --target gfx942 --target gfx950 --only FAMILY --out FAMILY.json"
  echo "$PY bench/amd_quality/attention_bwd.py --tl attention_bwd_dkdv.json attention_bwd_dq.json attention_fwd.json --out ${OUT#$ROOT/} ${ISA[*]}"
} > "$OUT/COMMAND"
echo "wrote $OUT"

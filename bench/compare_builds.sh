#!/usr/bin/env bash
# The AMD code of two tl builds side by side (no GPU needed): every kernel of
# tl-amd-quality's cases, the RMSNorm sample at bench/isa_snapshot.sh's 7 shapes, the GEMM
# sample (chosen configurations at 4096^3 and 512^3, the anchor's four at 4096^3; bf16 and
# FP8) and the FP8 decode sample's --report at D = 64, 128, 256 (and its guardrail lines),
# for gfx90a, gfx942 and gfx950: VGPRs, AGPRs, spills, LDS, occupancy, s_barrier / ds_read /
# ds_write counts, whether the code is identical; and compile time (tl-bench-compile and the
# samples' compile_ms, old and new alternating in the same sitting).
#
#   bash bench/compare_builds.sh OLD_BUILD NEW_BUILD OUT_DIR
#
# Each build needs libtl, tools/tl-cache, bench/tl-amd-quality, bench/tl-bench-compile and
# samples/tl-sample-{rmsnorm,gemm,fp8_decode}; a missing tool is reported, not fatal. E.g.
#   git worktree add /work/wt-old COMMIT
#   TL_BUILD_DIR=/work/wt-old/build TL_BUILD_TARGETS="tl tl-cache tl-amd-quality tl-bench-compile \
#     tl-sample-rmsnorm tl-sample-gemm tl-sample-fp8_decode" bash /work/wt-old/tools/build.sh -DTL_BUILD_TESTS=OFF
#
# Writes OUT_DIR/compare.md (the summary of everything whose VGPRs, spills or LDS went up,
# then one row per tool, kernel and arch), OUT_DIR/{old,new}/ (kernels.json: every report and
# count; guardrail.json; failures.json; commands.txt; logs/; isa/: every listing),
# OUT_DIR/compile_time.json and OUT_DIR/COMMAND.
# OUT_DIR/isa-diff/ has the listings of the kernels whose code differs (isa-diff.tar.xz) and
# their diffs without addresses (the small ones also as plain files).
#
# Environment: ARCHS (default gfx90a,gfx942,gfx950); ROUNDS (compile-time rounds, default 5;
# 0 skips them); KEEP_ISA=1 keeps every listing (old/isa/, new/isa/: some 6 MB a target and
# build); FAIL_ON_REGRESSION=1 exits 3 when a kernel's VGPRs, spills or LDS went up.
set -euo pipefail
[[ $# -eq 3 ]] || { sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); OUT=$3
ARCHS=${ARCHS:-gfx90a,gfx942,gfx950}
ROUNDS=${ROUNDS:-5}
rm -rf "$OUT/old" "$OUT/new"; mkdir -p "$OUT"
{
  echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
  echo "bash bench/compare_builds.sh $1 $2 $3   # ARCHS=$ARCHS ROUNDS=$ROUNDS"
  echo "# which runs:"
  echo "python3 bench/compare_builds.py collect $OLD $OUT/old --archs $ARCHS"
  echo "python3 bench/compare_builds.py collect $NEW $OUT/new --archs $ARCHS"
  [[ $ROUNDS -gt 0 ]] && echo "python3 bench/compare_builds.py compile-time $OLD $NEW $OUT/compile_time.json --rounds $ROUNDS"
  echo "python3 bench/compare_builds.py compare $OUT/old $OUT/new $OUT/compare.md --compile-time $OUT/compile_time.json"
  echo "# the tools' own command lines: old/commands.txt, new/commands.txt"
} > "$OUT/COMMAND"
echo "old: $OLD"; python3 "$HERE/compare_builds.py" collect "$OLD" "$OUT/old" --archs "$ARCHS"
echo "new: $NEW"; python3 "$HERE/compare_builds.py" collect "$NEW" "$OUT/new" --archs "$ARCHS"
if [[ $ROUNDS -gt 0 ]]; then
  echo "compile time ($ROUNDS rounds)"
  python3 "$HERE/compare_builds.py" compile-time "$OLD" "$NEW" "$OUT/compile_time.json" --rounds "$ROUNDS"
else
  rm -f "$OUT/compile_time.json"
fi
rc=0
python3 "$HERE/compare_builds.py" compare "$OUT/old" "$OUT/new" "$OUT/compare.md" --compile-time "$OUT/compile_time.json" || rc=$?
# Every listing is some 6 MB a target and build; isa-diff/ keeps those whose code differs.
[[ ${KEEP_ISA:-0} == 1 ]] || rm -rf "$OUT/old/isa" "$OUT/new/isa"
echo "wrote $OUT/compare.md"
exit $rc

#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a bounded
# time. Any crash fails the test; the crashing input is kept in $OUT_DIR and must then
# become a regression input in tests/fuzz/regressions/<target>/.
#   run_fuzzers.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
SRC=$1 BUILD=$2 SECONDS_EACH=${3:-20}
CXX=${TL_FUZZ_CXX:-clang++-22}
OUT_DIR=$BUILD/fuzz
mkdir -p "$OUT_DIR"
# llvm-config's flags carry -std=c++17 (which, coming later, would override our c++20) and
# -fno-exceptions (tl reports errors by throwing): drop both.
LLVM_CXXFLAGS=$(llvm-config-22 --cxxflags | sed -e 's/-fno-exceptions//' -e 's/-std=[^ ]*//')
COMMON=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
        -I"$SRC" -I"$SRC/dsl/include" -DTL_VERSION=\"fuzz\")
build() {  # name sources... -- libs...
  local name=$1; shift
  local srcs=() libs=()
  while [[ $# -gt 0 && $1 != -- ]]; do srcs+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  libs=("$@")
  "$CXX" "${COMMON[@]}" $LLVM_CXXFLAGS -fexceptions "${srcs[@]}" -o "$OUT_DIR/$name" "${libs[@]}"
}
build cache_entry_fuzz "$SRC/tests/fuzz/cache_entry_fuzz.cpp" "$SRC"/runtime/cache/*.cpp "$SRC/runtime/kernel_entry.cpp" \
  -- -lfmt -lxxhash
# target.cpp answers capabilities_for(): the per-architecture tables come with it.
build target_name_fuzz "$SRC/tests/fuzz/target_name_fuzz.cpp" "$SRC/codegen/target.cpp" \
  "$SRC"/codegen/amdgpu/arch*.cpp "$SRC/codegen/nvptx/nvptx_capabilities.cpp" -- \
  -L/usr/lib/llvm-22/lib -lLLVM-22 -lfmt
build code_object_fuzz "$SRC/tests/fuzz/code_object_fuzz.cpp" "$SRC/codegen/amdgpu/code_object.cpp" \
  $(ls "$SRC"/codegen/amdgpu/comgr.cpp "$SRC"/codegen/llvm_guard.cpp 2>/dev/null) -- \
  -L/usr/lib/llvm-22/lib -llldELF -llldCommon -lLLVM-22 -lfmt -lz -lzstd -ldl
status=0
for t in cache_entry_fuzz target_name_fuzz code_object_fuzz; do
  corpus="$OUT_DIR/corpus_$t"; mkdir -p "$corpus"
  # regressions/<target>: inputs that once crashed; seeds/<target>: valid inputs that
  # start the fuzzer deep in the format. Both are replayed first and must run clean.
  seeds=()
  for d in "$SRC/tests/fuzz/regressions/$t" "$SRC/tests/fuzz/seeds/$t"; do [[ -d $d ]] && seeds+=("$d"); done
  if ((${#seeds[@]})); then
    if ! "$OUT_DIR/$t" -runs=0 "${seeds[@]}" >"$OUT_DIR/$t.replay.log" 2>&1; then
      echo "$t: a regression or seed input crashes:"; tail -30 "$OUT_DIR/$t.replay.log"; status=1
      continue
    fi
  fi
  if "$OUT_DIR/$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$OUT_DIR/crash-$t-" "$corpus" "${seeds[@]}" >"$OUT_DIR/$t.log" 2>&1; then
    echo "$t: $(grep -oE 'Done [0-9]+ runs' "$OUT_DIR/$t.log" | tail -1), no crash"
  else
    echo "$t: CRASH (see $OUT_DIR/$t.log)"; tail -30 "$OUT_DIR/$t.log"; status=1
  fi
done
exit $status

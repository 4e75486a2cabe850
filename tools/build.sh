#!/usr/bin/env bash
# Configures and builds tl into build/ (or $TL_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${TL_BUILD_DIR:-$ROOT/build}
export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=${TL_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
# TL_BUILD_TARGETS: only these targets (the sanitizer job's TSan build), else everything.
cmake --build "$BUILD" -j"$(nproc)" ${TL_BUILD_TARGETS:+--target $TL_BUILD_TARGETS}

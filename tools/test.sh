#!/usr/bin/env bash
# The test job: install dependencies, build, and run the whole test suite with ctest.
# GPU tests skip (and are counted as skipped) where no such GPU exists.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/tools/install-deps.sh"
"$ROOT/tools/build.sh" -DTL_BUILD_TESTS=ON
BUILD=${TL_BUILD_DIR:-$ROOT/build}
# A private cache per run, so tests never see another run's entries.
export TL_CACHE_DIR=${TL_CACHE_DIR:-$(mktemp -d)/tl-cache}
cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@"

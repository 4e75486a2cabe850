#!/usr/bin/env bash
# The main job: install dependencies, build, and run the samples on the detected
# device (an AMD GPU, else an NVIDIA GPU, else the CPU).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/tools/install-deps.sh"
"$ROOT/tools/build.sh" -DTL_BUILD_TESTS=OFF
BUILD=${TL_BUILD_DIR:-$ROOT/build}
for s in "$BUILD"/samples/tl-sample-*; do
  echo "== $(basename "$s")"
  "$s"
done

#!/usr/bin/env bash
# Builds, on the build machine, the standalone H200 checks of this folder into build/tma_gpu/
# (no libtl, no LLVM at run time: the device machine needs only its driver):
#   tensor_map_test  tests/runtime/tensor_map_test.cpp with runtime/tensor_map.cpp, cuda_api.cpp
#   probe            box_limit_probe.cpp: the largest box cuTensorMapEncodeTiled takes
#   box_test         box_test.cpp: tl's maps used by a real TMA copy (box.ll), every element checked
#   box*.ptx         box.ll through llc-22, and four variants of it (README.md: why)
# Then on the H200, from the repository root (carry build/tma_gpu):
#   build/tma_gpu/tensor_map_test; build/tma_gpu/probe
#   for v in triton_tma_load box box_cta32 box_nofence box_paramaddr box_global; do echo "== $v"; timeout 20 build/tma_gpu/box_test build/tma_gpu/$v.ptx; done
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
HERE=$ROOT/bench/results/sm90-2026-11-28-tma-ptx
OUT=$ROOT/build/tma_gpu
mkdir -p "$OUT"
cd "$ROOT"
CXX="g++ -std=c++20 -O1 -DFMT_HEADER_ONLY -I. -Idsl/include -Itests -static-libstdc++ -static-libgcc"
RT="runtime/tensor_map.cpp runtime/cuda_api.cpp"
$CXX tests/runtime/tensor_map_test.cpp $RT -o "$OUT/tensor_map_test" /usr/lib/x86_64-linux-gnu/libgtest_main.a \
  /usr/lib/x86_64-linux-gnu/libgtest.a -ldl -lpthread
$CXX "$HERE/box_limit_probe.cpp" $RT -o "$OUT/probe" -ldl -lpthread
$CXX "$HERE/box_test.cpp" $RT -o "$OUT/box_test" -ldl -lpthread
LLC="llc-22 -mtriple=nvptx64-nvidia-cuda -mcpu=sm_90 -mattr=+ptx80"
$LLC "$HERE/box.ll" -o "$OUT/box.ptx"
# The map in global memory (the test copies it there for a file named *global*).
sed 's/ptr byval(\[128 x i8\]) align 64 "nvvm.grid_constant" %tmap/ptr addrspace(1) %tmapg/' "$HERE/box.ll" |
  python3 -c "import sys; s = sys.stdin.read(); print(s.replace('entry:\n', 'entry:\n  %tmap = addrspacecast ptr addrspace(1) %tmapg to ptr\n', 1))" > "$OUT/box_global.ll"
$LLC "$OUT/box_global.ll" -o "$OUT/box_global.ptx"
# The map's param-space address itself instead of cvta.param's generic one.
sed 's/cvta.param.u64 \t%rd1, %rd3;/mov.b64 \t%rd1, %rd3;/' "$OUT/box.ptx" > "$OUT/box_paramaddr.ptx"
# Without fence.mbarrier_init (Triton's PTX has none: bar.sync only).
sed 's/^\tfence.mbarrier_init.release.cluster;//' "$OUT/box.ptx" > "$OUT/box_nofence.ptx"
# Triton's form: the destination the 32-bit shared::cta address of the buffer, no fence.
sed 's/complete_tx::bytes \[%rd6\]/complete_tx::bytes [smem]/; s/^\tfence.mbarrier_init.release.cluster;//' "$OUT/box.ptx" > "$OUT/box_cta32.ptx"
# Triton 3.6's kernel for the same load, the control (triton_tma_load.py made it for sm_90).
cp "$HERE/triton_tma_load.ptx" "$OUT/triton_tma_load.ptx"
PTXAS=$(python3 -c "import triton,os;print(os.path.dirname(triton.__file__))")/backends/nvidia/bin/ptxas
for v in box box_global box_paramaddr box_nofence box_cta32; do $PTXAS -arch=sm_90 "$OUT/$v.ptx" -o /dev/null; done
$PTXAS -arch=sm_90a "$OUT/triton_tma_load.ptx" -o /dev/null  # (Triton targets sm_90a)
echo "built $OUT"

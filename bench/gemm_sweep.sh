#!/usr/bin/env bash
# On the GPU machine (after run_on_gpu.sh unpacked the bundle): tl's GEMM at a few
# configurations around gemm::choose's, 8192^3, TFLOP/s medians (tl-bench-gemm --config).
# Output: one line per configuration, for choosing the table in samples/gemm/gemm.hpp.
set -uo pipefail
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda
for dt in bf16 fp8; do
  for cfg in 128x128x64,3,4 128x128x64,4,4 128x128x32,4,4 128x256x64,3,8 128x128x64,3,8 128x128x128,3,8 64x128x64,4,4 128x128x128,3,4; do
    r=$(/tmp/tl/bin/tl-bench-gemm --dtype $dt --size ${GEMM_SWEEP_SIZE:-8192} --config $cfg 2>&1 | tail -1)
    echo "$dt $cfg $(echo "$r" | grep -o '"tflops":[0-9.]*') $(echo "$r" | grep -o '"ok":[a-z]*') $(echo "$r" | grep -o '"regs":[0-9]*') $(echo "$r" | grep -o '"spill_store_bytes":[0-9]*')"
  done
done

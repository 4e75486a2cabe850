#!/usr/bin/env bash
# On the NVIDIA GPU machine: unpack the bundle (bench/make_bundle.sh), run the resource
# report tests on the GPU (driver_test's JIT-log test, nvidia_report_test), then tl's
# RMSNorm reports beside Triton's n_regs/n_spills (bench/nvidia_report.py). Results go
# to $OUT (the device tool's folder) or bench/results.
set -uo pipefail
OUT=${OUT:-bench/results}
mkdir -p /tmp/tl "$OUT" && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache-report TL_DEVICE=cuda
rm -rf "$TL_CACHE_DIR"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
rc=0
/tmp/tl/bin/driver_test --gtest_filter='CudaDriver.*:PtxasInfo.*' --gtest_brief=1 2>&1 | tee "$OUT/nvidia_report_tests.log" | tail -3 || rc=1
/tmp/tl/bin/nvidia_report_test 2>&1 | tee -a "$OUT/nvidia_report_tests.log" | grep -E "measured|OK|FAILED|PASSED" || rc=1
PYTHONUNBUFFERED=1 python3 /tmp/tl/bench/nvidia_report.py --tl /tmp/tl/bin/tl-sample-rmsnorm --out "$OUT" || rc=1
# The cache the report filled, as tl-cache lists it (REGS and SPILLS columns).
/tmp/tl/bin/tl-cache list | tee "$OUT/nvidia_report_cache.txt"
exit $rc

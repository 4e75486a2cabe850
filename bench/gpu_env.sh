# Sourced by the GPU-machine scripts (gpu_language.sh, gpu_math.sh, gpu_sort.sh): unpacks the
# bundle that bench/make_bundle.sh made into /tmp/tl, makes $OUT absolute, points tl at the
# bundle's libraries, cache and test data on the CUDA device, and records the machine.
OUT=${OUT:-bench/results}
mkdir -p /tmp/tl "$OUT" && tar -C /tmp/tl -xJf .bundle/tl.tar.xz
OUT=$(cd "$OUT" && pwd)
export LD_LIBRARY_PATH=/tmp/tl/lib TL_CACHE_DIR=/tmp/tl-cache TL_DEVICE=cuda TL_TEST_DATA_DIR=/tmp/tl/data
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%Y-%m-%dT%H:%MZ; } | tee "$OUT/machine.txt"

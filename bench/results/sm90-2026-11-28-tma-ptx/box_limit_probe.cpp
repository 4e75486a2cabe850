// Probe: the largest box cuTensorMapEncodeTiled takes, per element size.
#include <cstdio>
#include "runtime/cuda_api.hpp"
#include "runtime/tensor_map.hpp"
using namespace tl::cuda;
int main() {
  const Api* api = Api::get();
  if (!api || !api->cuTensorMapEncodeTiled) { printf("no driver\n"); return 1; }
  api->bind(0);
  CUdeviceptr p = 0; api->check(api->cuMemAlloc(&p, 1 << 20), "alloc");
  struct T { int type; int eb; const char* n; } types[] = {{0, 1, "u8"}, {6, 2, "f16"}, {7, 4, "f32"}, {8, 8, "f64"}};
  for (auto t : types) {
    int last_ok = 0, first_bad = 0;
    for (int k = 1; k <= 256; ++k) {
      TensorMap m;
      uint64_t dim[3] = {64, 64, 64};
      uint64_t str[2] = {uint64_t(64 * t.eb), uint64_t(64 * 64 * t.eb)};
      uint32_t box[3] = {uint32_t(64 / 1), 8, uint32_t(k)};  // 64 x 8 x k elements
      if (64 * t.eb > 128) box[0] = 128 / t.eb;
      uint32_t es[3] = {1, 1, 1};
      int r = api->cuTensorMapEncodeTiled(m.bytes.data(), t.type, 3, (void*)p, dim, str, box, es, 0, 0, 2, 0);
      if (r == 0) last_ok = k; else if (!first_bad) first_bad = k;
    }
    int inner = 64 * t.eb > 128 ? 128 / t.eb : 64;
    printf("%s: box [k, 8, %d]: largest k taken %d (%d bytes), first refused %d (%d bytes)\n", t.n, inner, last_ok,
           last_ok * 8 * inner * t.eb, first_bad, first_bad * 8 * inner * t.eb);
  }
  // Swizzled 128B, f16 [k, 8, 64]
  for (int sw = 0; sw <= 3; ++sw) {
    int last_ok = 0;
    for (int k = 1; k <= 256; ++k) {
      TensorMap m;
      uint64_t dim[3] = {64, 64, 64};
      uint64_t str[2] = {128, 128 * 64};
      uint32_t inner = sw == 0 ? 64 : (16u << sw) / 2;  // 32B:16, 64B:32, 128B:64
      uint32_t box[3] = {inner, 8, uint32_t(k)};
      uint32_t es[3] = {1, 1, 1};
      if (api->cuTensorMapEncodeTiled(m.bytes.data(), 6, 3, (void*)p, dim, str, box, es, 0, sw, 2, 0) == 0) last_ok = k;
    }
    printf("f16 swizzle mode %d: largest k of [k, 8, inner] taken %d\n", sw, last_ok);
  }
  // 2-D 256 x 256 u8 and f16 and [256, 256] with dims smaller than the box
  for (auto t : types) {
    TensorMap m;
    uint64_t dim[2] = {16, 4};
    uint64_t str[1] = {256};
    uint32_t box[2] = {uint32_t(std::min(256, 128 / t.eb * 2)), 256};
    uint32_t es[2] = {1, 1};
    int r = api->cuTensorMapEncodeTiled(m.bytes.data(), t.type, 2, (void*)p, dim, str, box, es, 0, 0, 2, 0);
    printf("%s: box [256, %u] over a [4, 16] tensor: %d\n", t.n, box[0], r);
  }
  return 0;
}

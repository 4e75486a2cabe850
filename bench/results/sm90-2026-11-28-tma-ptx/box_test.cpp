// (bench/results/sm90-2026-11-28-tma-ptx; build_box_test.sh builds it.) On an sm_90 GPU: tl's tensor maps (runtime/tensor_map.hpp) used by a real TMA copy.
// box.ptx (box.ll) loads one box with cp.async.bulk.tensor.2d (the map a 128-byte
// grid-constant parameter) and writes shared memory out as it lies; each case compares
// every element with the tensor (0 or NaN outside it) at the place the box's layout puts
// it (row-major, or the 128-byte swizzle: 16-byte unit u of row r at u ^ (r % 8)).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>
#include "runtime/cuda_api.hpp"
#include "runtime/tensor_map.hpp"
using namespace tl::cuda;
using tl::DType;

int main(int argc, char** argv) {
  const Api* api = Api::get();
  if (!api) { printf("no driver\n"); return 1; }
  api->bind(0);
  std::ifstream f(argc > 1 ? argv[1] : "build/tma_gpu/box.ptx");
  std::stringstream ss; ss << f.rdbuf();
  std::string ptx = ss.str();
  std::string log;
  CUmodule mod = api->load_module(ptx.c_str(), &log);
  // triton_tma_load.ptx: Triton 3.6's kernel for the same load (triton_tma_load.py), a control:
  // its map is tl's with the 128-byte swizzle its metadata asks for, it reads the box back
  // through its own layout and stores it row-major. f32 only.
  const bool triton = std::string(argc > 1 ? argv[1] : "").find("triton") != std::string::npos;
  CUfunction fn;
  api->check(api->cuModuleGetFunction(&fn, mod, triton ? "k" : "box"), "get");
  const int M = 37, N = 70, LD = 72;  // rows, cols, row stride (elements)
  int failures = 0, cases = 0;
  for (int eb : {4, 2}) {
    if (triton && eb != 4) continue;
    const DType dt = eb == 4 ? DType::f32 : DType::f16;
    std::vector<uint8_t> host(size_t(M) * LD * eb);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < LD; ++j) {
        uint32_t v = eb == 4 ? uint32_t(i * 1000 + j) : uint32_t(i * 70 + j);  // never a NaN
        std::memcpy(&host[(size_t(i) * LD + j) * eb], &v, eb);
      }
    CUdeviceptr d = 0, out = 0;
    api->check(api->cuMemAlloc(&d, host.size()), "alloc");
    api->check(api->cuMemcpyHtoD(d, host.data(), host.size()), "h2d");
    api->check(api->cuMemAlloc(&out, 16384), "alloc");
    const int rows = 16, cols = 128 / eb;  // a 128-byte inner box: the 128B swizzle's span
    struct Case { int r, c; tl::padding_option pad; int swizzle; };
    const Case cs[] = {{0, 0, tl::padding_option::zero, 0},    {32, 64 - cols / 2, tl::padding_option::zero, 0},
                       {-8, -16, tl::padding_option::zero, 0}, {40, 0, tl::padding_option::zero, 0},
                       {30, 60, tl::padding_option::nan, 0},   {0, 0, tl::padding_option::zero, 128},
                       {29, 50, tl::padding_option::zero, 128}, {-3, -5, tl::padding_option::nan, 128}};
    for (Case k : cs) {
      if (triton) k.swizzle = 128;
      ++cases;
      const std::vector<int64_t> shape{M, N}, strides{LD, 1};
      const std::vector<int> block{rows, cols};
      TensorMapChoice ch = tensor_map_request(dt, d, shape, strides, block, k.pad, k.swizzle);
      if (!ch.request) { printf("refused: %s\n", ch.why_not.c_str()); ++failures; continue; }
      TensorMap map = encode_tensor_map(*api, *ch.request);
      std::vector<uint8_t> poison(16384, 0xAB);
      api->check(api->cuMemcpyHtoD(out, poison.data(), poison.size()), "poison");
      int c0 = k.c, c1 = k.r, bytes = rows * cols * eb;
      const bool global_map = std::string(argc > 1 ? argv[1] : "").find("global") != std::string::npos;
      CUdeviceptr dmap = 0;
      if (global_map) {
        api->check(api->cuMemAlloc(&dmap, sizeof map), "alloc map");
        api->check(api->cuMemcpyHtoD(dmap, map.bytes.data(), sizeof map), "map h2d");
      }
      void* params[] = {global_map ? static_cast<void*>(&dmap) : static_cast<void*>(&map), &out, &c0, &c1, &bytes};
      // Triton's: the map, the shape (i32) and strides (i64) it passes beside it, out, c0, c1,
      // its two scratch pointers; 2056 bytes of dynamic shared memory.
      int shape0 = M, shape1 = N;
      int64_t stride0 = LD, stride1 = 1;
      CUdeviceptr none = 0;
      void* tparams[] = {&map, &shape0, &shape1, &stride0, &stride1, &out, &c0, &c1, &none, &none};
      api->check(api->cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, triton ? 2056 : 0, nullptr, triton ? tparams : params,
                                     nullptr),
                 "launch");
      CUresult sr = api->cuCtxSynchronize();
      if (sr != CUDA_SUCCESS) { printf("launch failed: CUresult %d\n", sr); return 2; }
      if (dmap) api->cuMemFree(dmap);
      std::vector<uint8_t> got(16384);
      api->check(api->cuMemcpyDtoH(got.data(), out, got.size()), "d2h");
      int bad = 0;
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) {
          size_t at = size_t(i) * cols * eb + size_t(j) * eb;
          if (k.swizzle == 128 && !triton) at = size_t(i) * 128 + (((size_t(j) * eb / 16) ^ size_t(i % 8)) * 16) + (size_t(j) * eb % 16);
          uint32_t g = 0;
          std::memcpy(&g, &got[at], eb);
          const int gi = k.r + i, gj = k.c + j;
          const bool in = gi >= 0 && gi < M && gj >= 0 && gj < N;
          bool ok;
          if (in) {
            uint32_t e = 0;
            std::memcpy(&e, &host[(size_t(gi) * LD + gj) * eb], eb);
            ok = g == e;
          } else if (k.pad == tl::padding_option::nan) {
            ok = eb == 4 ? std::isnan([&] { float x; std::memcpy(&x, &g, 4); return x; }())
                         : ((g & 0x7c00) == 0x7c00 && (g & 0x3ff) != 0);
          } else {
            ok = g == 0;
          }
          if (!ok && bad++ < 3) printf("  [%d, %d] (tensor [%d, %d]) got %#x\n", i, j, gi, gj, g);
        }
      printf("%s box [%d, %d] at [%d, %d] %s swizzle %d: %s (%d wrong)\n", eb == 4 ? "f32" : "f16", rows, cols, k.r, k.c,
             k.pad == tl::padding_option::nan ? "nan" : "zero", k.swizzle, bad ? "FAIL" : "ok", bad);
      failures += bad != 0;
    }
    api->cuMemFree(d);
    api->cuMemFree(out);
  }
  printf("%d of %d cases ok\n", cases - failures, cases);
  return failures != 0;
}

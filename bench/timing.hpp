// Timing for the benchmarks that run beside Triton: device events around batches of
// launches on NVIDIA (the host clock around a synchronized batch elsewhere), the median
// over repeats.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/cuda_api.hpp"
#include "tl/tl.hpp"

namespace tlbench {

inline const tl::cuda::Api*& cuda_events() {
  static const tl::cuda::Api* cu = nullptr;  // set when the device is NVIDIA
  return cu;
}
inline void use_device_events(const tl::device& dev) {
  if (dev.kind() == tl::device_kind::cuda) cuda_events() = tl::cuda::Api::get();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds per call of f, measured around `inner` calls, median of `repeats`.
template <class F> double time_ms(tl::device dev, F&& f, int repeats, int inner) {
  const tl::cuda::Api* cu = cuda_events();
  for (int i = 0; i < 3; ++i) f();
  dev.synchronize();
  std::vector<double> t;
  tl::cuda::CUevent a = nullptr, b = nullptr;
  if (cu) {
    cu->check(cu->cuEventCreate(&a, 0), "cuEventCreate");
    cu->check(cu->cuEventCreate(&b, 0), "cuEventCreate");
  }
  for (int r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    if (cu) cu->check(cu->cuEventRecord(a, nullptr), "cuEventRecord");
    for (int i = 0; i < inner; ++i) f();
    if (cu) {
      cu->check(cu->cuEventRecord(b, nullptr), "cuEventRecord");
      cu->check(cu->cuEventSynchronize(b), "cuEventSynchronize");
      float ms = 0;
      cu->check(cu->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
      t.push_back(ms / inner);
    } else {
      dev.synchronize();
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / inner);
    }
  }
  if (cu) cu->cuEventDestroy(a), cu->cuEventDestroy(b);
  return median(t);
}

}  // namespace tlbench

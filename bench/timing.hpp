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

// A pair of CUDA events (when the device is NVIDIA) around what runs between start()
// and stop(); elsewhere the host clock around a synchronized span.
class Span {
 public:
  explicit Span(tl::device dev) : dev_(dev), cu_(cuda_events()) {
    if (cu_) {
      cu_->check(cu_->cuEventCreate(&a_, 0), "cuEventCreate");
      cu_->check(cu_->cuEventCreate(&b_, 0), "cuEventCreate");
    }
  }
  ~Span() {
    if (cu_) cu_->cuEventDestroy(a_), cu_->cuEventDestroy(b_);
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  void start() {
    if (cu_) return cu_->check(cu_->cuEventRecord(a_, nullptr), "cuEventRecord");
    dev_.synchronize();
    t0_ = std::chrono::steady_clock::now();
  }
  double stop_ms() {
    if (!cu_) {
      dev_.synchronize();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
    }
    cu_->check(cu_->cuEventRecord(b_, nullptr), "cuEventRecord");
    cu_->check(cu_->cuEventSynchronize(b_), "cuEventSynchronize");
    float ms = 0;
    cu_->check(cu_->cuEventElapsedTime(&ms, a_, b_), "cuEventElapsedTime");
    return ms;
  }

 private:
  tl::device dev_;
  const tl::cuda::Api* cu_;
  tl::cuda::CUevent a_ = nullptr, b_ = nullptr;
  std::chrono::steady_clock::time_point t0_;
};

// Milliseconds per call of f, measured around `inner` calls, median of `repeats`.
template <class F> double time_ms(tl::device dev, F&& f, int repeats, int inner) {
  for (int i = 0; i < 3; ++i) f();
  dev.synchronize();
  std::vector<double> t;
  Span span(dev);
  for (int r = 0; r < repeats; ++r) {
    span.start();
    for (int i = 0; i < inner; ++i) f();
    t.push_back(span.stop_ms() / inner);
  }
  return median(t);
}

// Milliseconds of one call of f with the L2 flushed before it (flush() runs first,
// outside the span), median of `repeats`: triton.testing.do_bench's method, for kernels
// whose inputs would otherwise stay in the L2 between calls.
template <class F, class Flush> double time_ms_flushed(tl::device dev, F&& f, Flush&& flush, int repeats) {
  for (int i = 0; i < 5; ++i) f();
  dev.synchronize();
  std::vector<double> t;
  Span span(dev);
  for (int r = 0; r < repeats; ++r) {
    flush();
    span.start();
    f();
    t.push_back(span.stop_ms());
  }
  return median(t);
}

}  // namespace tlbench

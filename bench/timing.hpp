// Timing for the benchmarks that run beside Triton: device events around batches of
// launches on NVIDIA (the host clock around a synchronized batch elsewhere), the median
// over repeats.
#pragma once

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
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

// The L2 flush triton.testing.do_bench runs before each timed call, for
// time_ms_flushed: 256 MiB written (do_bench's way: "write"), or read ("read"). Written, it
// leaves the L2 full of dirty lines that the timed call then writes back to HBM as its
// reads evict them, charged to the timed kernel though it is the flush's traffic: on the
// H100 4.5 us at the FP8 decode's 1x32768 and 7.4 at 16x16384
// (bench/results/h100-2026-11-25-fp8-decode/README.md). Read, it leaves the L2 cold and
// clean. Either way the GPU does something else between timed calls, as under do_bench,
// instead of running the timed kernel back to back.
class L2Flush {
 public:
  L2Flush(tl::device dev, const std::string& mode) : dev_(dev), write_(mode == "write") {
    if (mode != "read" && mode != "write") throw std::runtime_error("the L2 flush is read or write, not " + mode);
    n_ = dev.kind() == tl::device_kind::cpu ? (int64_t(1) << 20) : (int64_t(1) << 26);  // 256 MiB
    scratch_ = dev.alloc<tl::i32>(size_t(n_));
    sums_ = dev.alloc<tl::i32>(size_t(tl::cdiv(n_, 4096)));
    fill();
  }
  void operator()() { write_ ? fill() : drain(); }

 private:
  void fill() {
    static auto k = tl::kernel("flush_l2", [](tl::ptr<tl::i32> x, tl::i32 n, int BLOCK) {
      auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      tl::store(x + i, tl::zeros<tl::i32>({BLOCK}), i < n);
    });
    k[tl::grid(tl::cdiv(n_, 4096))].on(dev_).with({.num_warps = 4})(scratch_, int(n_), 4096);
  }
  void drain() {
    static auto k = tl::kernel("flush_l2_read", [](tl::ptr<tl::i32> x, tl::ptr<tl::i32> sums, tl::i32 n, int BLOCK) {
      auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
      tl::store(sums + tl::program_id(0), tl::sum(tl::load(x + i, i < n, 0), 0));
    });
    k[tl::grid(tl::cdiv(n_, 4096))].on(dev_).with({.num_warps = 4})(scratch_, sums_, int(n_), 4096);
  }
  tl::device dev_;
  bool write_ = false;
  int64_t n_ = 0;
  tl::buffer<tl::ty::i32> scratch_, sums_;
};

}  // namespace tlbench

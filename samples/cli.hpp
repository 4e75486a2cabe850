// Command-line helpers the samples share (each sample's main.cpp parses its own options).
#pragma once

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "tl/tl.hpp"

namespace samples {

// Walks argv: `next()` is the next option; `value()` the value after it (an error naming
// the option when there is none).
class Args {
 public:
  Args(int argc, char** argv) : argc_(argc), argv_(argv) {}
  bool next() {
    if (++i_ >= argc_) return false;
    option_ = argv_[i_];
    return true;
  }
  const std::string& option() const { return option_; }
  std::string value() {
    if (i_ + 1 >= argc_) throw std::runtime_error(option_ + " needs a value");
    return argv_[++i_];
  }

 private:
  int argc_, i_ = 0;
  char** argv_;
  std::string option_;
};

// `--device cpu|hip|cuda` made the default device; "" keeps the detected one.
inline void select_device(const std::string& name) {
  if (name == "cpu") tl::set_default_device(tl::cpu_device());
  else if (name == "hip") tl::set_default_device(tl::hip_device());
  else if (name == "cuda") tl::set_default_device(tl::cuda_device());
  else if (!name.empty()) throw std::runtime_error("--device must be cpu, hip or cuda");
}

// Milliseconds per call of `f` on `dev`: the median of `repeats` synchronized calls, host
// clock (a first call, which compiles or takes the kernel from the cache, is the caller's).
template <class F> double median_ms(const tl::device& dev, int repeats, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    dev.synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace samples

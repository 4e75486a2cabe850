// Typed errors. Every error tl raises is a tl::error; the subclasses say which stage
// refused the input, and `file()`/`line()` name the user's source where one is known.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace tl {

class error : public std::runtime_error {
 public:
  error(const std::string& what, std::string file = {}, unsigned line = 0)
      : std::runtime_error(file.empty() ? what : file + ":" + std::to_string(line) + ": " + what),
        file_(std::move(file)), line_(line) {}
  const std::string& file() const { return file_; }
  unsigned line() const { return line_; }

 private:
  std::string file_;
  unsigned line_;
};

// A malformed tile program, found while tracing. Names the user's file and line.
class trace_error : public error {
 public:
  trace_error(const std::string& what, const std::source_location& loc)
      : error(what, loc.file_name(), loc.line()) {}
  trace_error(const std::string& what, std::string file, unsigned line) : error(what, std::move(file), line) {}
};
// A launch that cannot run: wrong arguments, null pointers, empty or oversized grid.
class launch_error : public error { using error::error; };
// The compiler or a code-object tool failed (a tl bug, or a target we cannot build for).
class compile_error : public error { using error::error; };
// The device runtime (HIP, CUDA driver) reported a failure, or no such device exists.
class device_error : public error { using error::error; };
// A kernel's device_assert failed, or bounds checking caught an out-of-range access.
class kernel_fault : public error { using error::error; };

}  // namespace tl

// The CPU's per-program limits (docs/language.md, "Limits"), shared by the compiler and
// the tracer, which refuse a kernel over them, and by the CPU device, which sizes its
// threads by them.
//
// A CPU program runs on one thread and keeps its tiles in stack arrays: every tile that
// is not recomputed where it is read, every loop-carried tile and every tl::shared
// buffer (a CPU program is one thread: its "shared" memory is its own stack). Tile sizes
// are bounded (2^20 elements), but their number is not, so a program's frame is checked
// against the stack it will run on when it is compiled, instead of overflowing that stack
// when it runs (a SIGSEGV that would take the host process down).
#pragma once

#include <cstdint>

namespace tl::codegen::cpu {

// The stack of each thread of the CPU device's pool (runtime/cpu_device.cpp).
inline constexpr int64_t kWorkerStackBytes = int64_t(64) << 20;
// What one program's frame (its tile and shared buffers) may take of it: the rest is left
// to what the kernel calls (printing, the bounds checker) and to the register spills.
inline constexpr int64_t kProgramStackBytes = kWorkerStackBytes - (int64_t(1) << 20);

}  // namespace tl::codegen::cpu

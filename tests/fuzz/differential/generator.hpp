// A generator of random, well-defined tile programs (Csmith's idea for tl): one seed, one
// program, written through tl's public DSL as a user writes a kernel. The program is a
// recipe interpreted while tracing: `generate` draws every decision from
// std::mt19937_64(seed), so the same seed traced twice (once by tl::kernel's launch, once
// straight into IR for the reference and the cross-compiles) is the same program.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tl/tile.hpp"

namespace fuzzdiff {

// The element types a program reads and writes: one input and one output buffer each.
inline constexpr std::array<tl::DType, 10> kDataTypes = {tl::DType::i8,  tl::DType::i16, tl::DType::i32, tl::DType::i64,
                                                         tl::DType::u8,  tl::DType::u32, tl::DType::f16, tl::DType::bf16,
                                                         tl::DType::f32, tl::DType::f64};
inline int data_index(tl::DType t) {
  for (size_t k = 0; k < kDataTypes.size(); ++k)
    if (kDataTypes[k] == t) return int(k);
  return -1;
}
// Every store of a program writes its own region of this many elements per program
// (64 x 64, the largest tile), so stores never overlap; inputs hold one region a program.
inline constexpr int kRegion = 4096;
// The atomic buffers (i32, i64) every program of the grid adds into.
inline constexpr int kAtomElems = 4096;

// tl defects the generator steers around while they are open, so that CI stays green;
// each is a bit of the trace-time constant `avoid`. A run with `--avoid none` (or a
// cleared bit) shows whether one is still there. See known_defects() for the reasons.
enum Avoid : uint32_t {
  kAvoidNone = 0,
  // (none open: the next defect found takes 1u << 0)
};
struct KnownDefect {
  uint32_t bit;
  const char* name;
  const char* why;
};
const std::vector<KnownDefect>& known_defects();
uint32_t default_avoid();

// The program's shape of the launch, decided first from the seed: what the harness needs
// to allocate buffers, launch and check.
struct Plan {
  int grid = 1;       // programs along axis 0
  int num_warps = 4;
  int n = 0;          // run-time i32: elements [0, n) of an input are "valid" for bound-masked loads
  int s = 0;          // run-time i32 scalar the program may compute with
  float x = 0;        // run-time f32 scalar
  std::array<int, kDataTypes.size()> out_slots{};  // stores per output dtype (each a region per program)
  int ops = 0;        // operations generated (for the statistics)
  std::string summary;  // the features drawn, one word each ("dot loop if atomic ...")
};

// The kernel's run-time arguments, as traced values, in kernel signature order:
// in_<dtype> x 10, out_<dtype> x 10, atom_i32, atom_i64, n, s, x.
struct KernelArgs {
  std::array<tl::ir::Value*, kDataTypes.size()> in{}, out{};
  tl::ir::Value* atom32 = nullptr;
  tl::ir::Value* atom64 = nullptr;
  tl::ir::Value* n = nullptr;
  tl::ir::Value* s = nullptr;
  tl::ir::Value* x = nullptr;
};

// Traces one program into the current trace (tl::kernel's or tltest::trace's).
void generate(uint64_t seed, uint32_t avoid, const KernelArgs& args, Plan& plan);

}  // namespace fuzzdiff

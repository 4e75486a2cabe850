// A plain reference evaluator of traced tile IR (ir::Function): plain C++ loops over the
// elements, integers exact and wrapping at their dtype's width, floats in double and
// rounded to the op's dtype. It shares nothing with tl's passes or lowerings.
//
// Floats carry an error bound beside the value: the largest |device - reference| a correct
// compiler may produce (reductions and dots summed in another order, a target's
// approximate exp or sin, a GPU contracting a*b+c into one fma). A value whose bound
// makes it unpredictable (a comparison of two values closer than their bounds, floor of a
// value within its bound of an integer, a float->int cast at a boundary) is "unknown":
// the element, and everything computed from it, is not compared.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace fuzzdiff {

// What the device under test may legitimately do differently from exact rounding.
struct Profile {
  // A GPU: multiplies contracted into fma, subnormals flushed, approximate transcendental
  // instructions (ex2.approx, lg2.approx, sin.approx, rsqrt.approx), TF32 f32 dots. Off: the
  // CPU, where + - * / sqrt and casts must be correctly rounded (bit-exact).
  bool gpu = false;
};

// A buffer as the reference sees it: one entry per element of its dtype.
struct RefBuffer {
  tl::DType dt = tl::DType::i32;
  std::vector<int64_t> i;      // integer dtypes (canonical: see numbers.hpp wrap)
  std::vector<double> f, e;    // float dtypes: value and error bound
  std::vector<uint8_t> unk;    // 1: not predictable, not compared
  std::vector<uint8_t> written;  // 0: the kernel never stores here: it must keep its poison
  std::vector<int> writer;     // the program that stored here last (-1: none)
  size_t size() const { return written.size(); }
  // From host bytes: inputs (written = true: their value is known) or poisoned outputs.
  static RefBuffer from_host(tl::DType dt, const void* bytes, size_t n, bool known);
};

// A kernel argument: a pointer names a buffer (index into the memory), a scalar its value.
struct RefArg {
  int buffer = -1;
  int64_t i = 0;
  double f = 0;
};

// The program is not well defined (division by zero, an out-of-bounds unmasked access, two
// programs storing to one element, ...): the generator's bug, never the compiler's.
struct IllDefined : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs every program of a 1-D grid of `grid` programs in order over `mem`.
void evaluate(const tl::ir::Function& f, const std::vector<RefArg>& args, int grid, std::vector<RefBuffer>& mem,
              const Profile& profile);

}  // namespace fuzzdiff

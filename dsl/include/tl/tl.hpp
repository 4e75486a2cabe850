// tl: a C++ tile language with a runtime JIT for AMD GPUs, NVIDIA GPUs and the CPU.
// Include this one header. docs/language.md lists every operation.
#pragma once

#include "tl/dtype.hpp"
#include "tl/error.hpp"
#include "tl/kernel.hpp"
#include "tl/numeric.hpp"
#include "tl/tile.hpp"
#include "tl/amd.hpp"
#include "tl/random.hpp"
#include "tl/math.hpp"
#include "tl/inline_asm.hpp"
#include "tl/sort.hpp"
#include "tl/descriptor.hpp"

// Which chunk widths a copy of a tile straight into shared memory (AMD's LDS DMA
// global_load_lds_dword[xN], NVIDIA's cp.async) may use: the one answer to "can this load
// be copied", asked by the software pipeliner before layouts exist (whether to stage a
// load as copies) and by plan_copies after them (which width the copy gets). Both ask
// with the axis facts of the pointers and mask; plan_copies knows the stage's swizzle
// vector too, the pipeliner bounds it by 16 bytes (a vector never holds more).
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/passes/axis_analysis.hpp"
#include "codegen/ir/ir.hpp"

namespace tl::passes {

struct DirectCopyQuery {
  const ir::Value* ptr = nullptr;   // the pointer tile
  const ir::Value* mask = nullptr;  // or null
  int dim = -1;                     // the dim the chunks run along (-1: the last)
  std::vector<int> target_widths;   // the target's direct-to-shared widths, in bytes
  int wave_size = 0;
  int vec_elements = 0;             // the stage's swizzle vector in elements (0: 16 bytes' worth)
};

// The admissible chunk widths in bytes, widest first: 4 bytes and up, a power of two (AMD's
// 1- and 2-byte forms fill a whole dword of LDS per lane; 12 bytes is no chunk of a tile),
// a whole number of elements, within the pointers' contiguity and alignment and the mask's
// constancy along `dim` and within one swizzle vector, with a wave's chunks in the tile.
// Empty: the load cannot be copied (it is loaded into registers and stored).
std::vector<int> direct_copy_widths(const AxisAnalysis& axis, const DirectCopyQuery& q);

}  // namespace tl::passes

// A distributed layout as an IR attribute: which thread of a program holds which element
// of a tile (Triton's linear layouts, specialised to one output, the row-major flat
// element index). Every hardware bit (a bit of the register index, of the lane id, of
// the warp id) has an image; the element held at (register r, lane l, warp w) is the XOR
// of the images of the bits set in r, l and w. A zero image means replication.
//
// It lives in the IR because the GPU middle end's passes decide layouts and record them
// on values (codegen/gpu/*: plan_dots, assign_layouts, insert_layout_conversions) and the
// lowering only reads them; the algebra over layouts is codegen/gpu/layout.hpp. The wave
// size is only the number of lane bits, so one representation serves every GPU target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::ir {

struct Layout {
  std::vector<int> shape;        // the tile's shape; empty for scalars
  std::vector<uint32_t> reg;     // image of register-index bit i
  std::vector<uint32_t> lane;    // image of lane-id bit i (log2(wave size) entries)
  std::vector<uint32_t> warp;    // image of warp-id bit i (log2(num_warps) entries)

  int rank() const { return int(shape.size()); }
  int num_regs() const { return 1 << reg.size(); }
  int64_t numel() const;
  // flat index contributed by register r (the thread part is XORed in at run time)
  uint32_t reg_part(uint32_t r) const;
  uint32_t thread_part(uint32_t lane_id, uint32_t warp_id) const;
  // True when some register bit has a zero image: registers that differ in it are copies.
  uint32_t duplicate_reg_mask() const;
  bool operator==(const Layout& o) const = default;
  std::string str() const;
};

}  // namespace tl::ir

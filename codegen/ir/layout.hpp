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

// How a tile lies in shared memory (Triton's shared encodings, as a linear map): the dims
// in `order`, fastest first; along order[0], `vec` contiguous elements move as one unit,
// and a unit's index within its row (a row: order[0]'s extent; the other dims flattened
// above it) is XORed with swizzle[i] for every row-index bit i set. Triton's
// SwizzledSharedEncoding(vec, perPhase, maxPhase) is swizzle[i] = 1 << (i - log2
// perPhase) for the log2 maxPhase bits from log2 perPhase; a general one also serves two
// sides whose conflicting rows differ in other bits (a tile written along one dim and
// read along the other). A pass decides it for each exchange through shared memory
// (codegen/gpu/plan_shared_encodings.cpp) from the layouts that write and read it; the
// algebra is codegen/gpu/shared_encoding.hpp.
//
// `row` (0: order[0]'s whole extent) splits order[0] into rows of that many elements,
// stored one dim further out than every other dim: a [64, 256] bf16 tile with row = 64
// lies as four [64, 64] column blocks one after another, each 128-byte row swizzled on
// its own. That is Triton's NVMMASharedEncoding for a tile wider than its swizzle, the
// form Hopper's wgmma reads through a matrix descriptor (plan_shared_encodings).
//
// `padding` (Triton's PaddedSharedEncoding, AMD): (interval, amount) pairs; after every
// `interval` elements of the offset above, `amount` elements are left unused, so rows
// that would start in one bank start in different ones without an XOR: each register's
// offset stays a constant added to one address (an immediate of ds_read / ds_write)
// where a swizzle XORs register bits into the lane's address, an address register each.
// Offset o lies at o + sum (o >> log2 interval) * amount. Never with a swizzle or `row`
// (the verifier's rule); empty: none.
struct SharedEncoding {
  std::vector<int> order;
  int vec = 1;
  std::vector<uint32_t> swizzle;  // per row-index bit, low first; absent bits: 0
  int row = 0;
  std::vector<std::pair<int, int>> padding;  // (interval, amount), intervals ascending
  bool operator==(const SharedEncoding& o) const = default;
  // "order=[0,1] vec=4 swizzle=[1,2,4,9]" (" row=64" where set, " padding=[64:+4,1024:+4]"
  // where padded: Triton's notation)
  std::string str() const;
};

}  // namespace tl::ir

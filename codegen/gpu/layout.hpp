// Distributed layouts: which thread of a program holds which element of a tile.
//
// The representation is Triton's linear layout, specialised to one output: every
// hardware bit (a bit of the register index, of the lane id, of the warp id) maps to a
// row-major flat element index, and the element held at (register r, lane l, warp w)
// is the XOR of the images of the bits set in r, l and w. Tile dims are powers of two,
// so flat-index bits split cleanly into per-dimension fields and Triton's blocked and
// slice encodings are all of this form. A zero image means replication: the threads
// (or registers) that differ only in that bit hold the same element.
//
// One representation serves every GPU target; the wave size only decides how many lane
// bits there are. Reshape is free (the flat index does not change), transposition
// permutes flat-index bits, a reduction zeroes the bits of the reduced axis, and a
// broadcast reads its source through the projection that clears the broadcast dims.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/ir/layout.hpp"
#include "codegen/ir/op_properties.hpp"

namespace tl::gpu {

// The layout attribute of the IR (codegen/ir/layout.hpp); this file is its algebra.
using Layout = ir::Layout;

// --- flat-index helpers for power-of-two shapes ---
int log2_exact(int64_t n);
// Bit offset of dim d's field in the row-major flat index.
int dim_offset(const std::vector<int>& shape, int d);
// The dim whose field holds flat-index bit `bit`.
int dim_of_bit(const std::vector<int>& shape, int bit);
// Whether a register, lane or warp image of `l` (a flat-index basis) moves along dim
// `axis`: a reduction or scan over that axis combines across it.
bool along_axis(const Layout& l, uint32_t image, int axis);
// Coordinate of `flat` along dim d.
uint32_t coord(const std::vector<int>& shape, uint32_t flat, int d);

// Triton's BlockedEncoding: sizePerThread, threadsPerWarp, warpsPerCTA per dim and an
// order (fastest-varying dim first). Extra elements wrap into more registers; lanes and
// warps beyond the shape hold copies (zero images).
Layout blocked_layout(const std::vector<int>& shape, const std::vector<int>& size_per_thread,
                      const std::vector<int>& threads_per_warp, const std::vector<int>& warps_per_cta,
                      const std::vector<int>& order, int wave_size, int num_warps);

// The default blocked layout of a shape: `vec` contiguous elements per thread along
// order[0] (clamped so every thread still gets work), lanes and then warps filled along
// the order, like Triton's getDefaultBlockedEncoding.
Layout default_layout(const std::vector<int>& shape, const std::vector<int>& order, int vec, int wave_size,
                      int num_warps);

// A scalar seen as a layout: one register, every thread a copy.
Layout scalar_layout(int wave_size, int num_warps);

// Triton's SliceEncoding: the layout of reduce(axis) of a tile held in `in`, after the
// reduction has combined the registers, lanes and warps along `axis` (they become
// copies). Registers along the axis (and duplicate registers) disappear.
Layout reduce_layout(const Layout& in, int axis);
// Which register bits of `in` survive in reduce_layout(in, axis), in order.
std::vector<int> reduce_kept_reg_bits(const Layout& in, int axis);

// The same registers seen with another shape of equal element count.
Layout reshape_layout(const Layout& in, const std::vector<int>& shape);
// The layout of trans(perm) of a tile held in `in`.
Layout trans_layout(const Layout& in, const std::vector<int>& perm);
// The layout in which trans(perm)'s operand must be held so that the result is `out`.
Layout trans_source_layout(const Layout& out, const std::vector<int>& perm);
// Triton's join / split / cat layout rules (its JoinOp and SplitOp layout inference), in
// linear-layout terms. join's new last dim of 2 is flat-index bit 0: join_layout gives it
// the lowest register bit, so each thread holds a and b side by side and nothing moves.
// split moves nothing when that bit is held by one register bit alone (`split_bit`), the
// split's results being that layout with the register bit dropped; any other layout is
// converted first (to join_layout of the result's). cat's new top bit of dim 0 goes to a
// new highest register bit: the registers of a, then those of b, nothing moved.
Layout join_layout(const Layout& in);
// The register bit whose image is exactly flat-index bit `flat_bit`, with no other
// hardware bit touching it; nullopt when there is none.
std::optional<int> sole_register_bit(const Layout& l, uint32_t flat_bit);
// split's result layout from its operand's, given the register bit holding the 2.
Layout split_layout(const Layout& in, int reg_bit);
// The layout split's operand is read in for the result `out`: `src` where it splits to
// `out` in registers, else join_layout(out).
Layout split_source_layout(const Layout& src, const Layout& out);
// The layout join's operands are read in for the result `out` (join_layout's inverse).
Layout join_source_layout(const Layout& out);
Layout cat_layout(const Layout& in);
// The layout cat's operands are read in for the result `out` (cat_layout's inverse).
Layout cat_source_layout(const Layout& out);

// The layout in which broadcast's operand (shape `src_shape`, size-1 dims where it is
// broadcast) must be held so that register i of the result is register i of the
// operand: `out` with the broadcast dims projected away (their images become zero).
Layout broadcast_source_layout(const Layout& out, const std::vector<int>& src_shape);

// For a conversion that needs no data movement between threads: the register of `src`
// holding, in the same thread, the element of each register of `dst`. nullopt when some
// thread of `dst` needs an element that thread does not hold in `src`.
std::optional<std::vector<int>> register_only_conversion(const Layout& src, const Layout& dst);

// The hardware bit that holds each bit of dim `dim`'s coordinate (index k: coordinate bit
// k), where every hardware bit holds either no bit of that dim or exactly one and nothing
// of another dim beside it, and each of its bits has one such holder (blocked layouts
// always; what tl::sort's lowering goes through bit by bit: a register bit is a pair of
// registers, a lane bit an xor shuffle, a warp bit a trip through shared memory). nullopt
// when the layout is not of that form.
struct HardwareBit {
  enum Kind : uint8_t { reg, lane, warp } kind;
  int index;  // the bit of the register index, lane id or warp id
};
std::optional<std::vector<HardwareBit>> dim_bit_holders(const Layout& l, int dim);

// The layout a sort along `dim` wants to work in (its operand is loaded in it where every
// user agrees): a blocked layout with as many of a thread's registers along the dim as the
// tile gives a thread, then lanes, then warps. The low coordinate bits take part in the
// most compare-exchanges, and a register pair costs no data movement where a lane costs a
// shuffle; a top-k's k-chunks and first halvings then stay within a thread.
Layout sort_layout(const std::vector<int>& shape, int dim, int wave_size, int num_warps);
// A top-k's result layout (a sort keeping the first k along `dim`, worked in `in`, which
// dim_bit_holders takes): the dim's coordinate bits from log2 k up are gone; registers
// holding them disappear (their pairs were combined into one), lanes and warps holding
// them become copies (both sides of a combine across them keep the same k), and the bits
// of the dims before `dim` move down in the flat index. The kept registers are those with
// the dropped register bits clear, in order.
Layout topk_layout(const Layout& in, int dim, int k);

// Length of the run of registers 0, 1, 2, ... that hold consecutive elements along
// flat-index stride `stride` (the vectorizable run); a power of two.
int contiguous_run(const Layout& l, uint32_t stride);

// --- the algebra beyond one layout ---

// A linear map over F2 from one index space to another (flat element index -> shared-
// memory offset in elements, say): `image[i]` is where input bit i goes. A swizzle is
// one: offset = index ^ f(index), with f linear.
struct LinearMap {
  std::vector<uint32_t> image;
  uint32_t apply(uint32_t x) const;
};

// The map after the layout: every hardware bit's image sent through `after`, so that
// (register, lane, warp) lands directly in `after`'s output space. Composing a layout
// with a swizzle gives the shared-memory offset each thread's registers live at.
Layout compose(const LinearMap& after, const Layout& l, std::vector<int> out_shape);

// Where the elements of a layout live, the other way round: for each flat-index bit,
// the register, lane and warp bits that hold it (one owner, the one with the fewest
// bits set first; copies are ignored). nullopt when some element is held by no thread.
struct LayoutInverse {
  std::vector<uint32_t> reg, lane, warp;  // per flat-index bit: the hardware bits whose XOR holds it
  // The (register, lane, warp) that holds element `flat`.
  void locate(uint32_t flat, uint32_t& r, uint32_t& l, uint32_t& w) const;
};
std::optional<LayoutInverse> invert(const Layout& l);

// The XOR swizzle that makes a row-major [rows, cols] tile of `elem_bytes` elements free
// of bank conflicts for `vec_elems`-wide accesses (16 bytes: ds_read_b128 / ld.shared.v4):
// the vector index within a row is XORed with the row (modulo the vectors in a row, in
// groups of `per_phase` rows when a row is narrower than the banks), as Triton's
// SwizzledSharedEncoding (vec, perPhase, maxPhase). Output: offsets in elements.
LinearMap xor_swizzle(int rows, int cols, int vec_elems, int elem_bytes, int bank_bytes = 128);

// How one stage of a shared buffer (tl::shared) lies in shared memory, Triton's
// SwizzledSharedEncoding for it: row-major, 16-byte vectors along the last dim (`vec`
// elements, fewer when a row is shorter), XOR-swizzled by xor_swizzle with every
// leading dim counted as rows (a 3-D tile is swizzled as [d0 * d1, d2]; a 1-D tile, one
// row, is not swizzled). A thread holding `vec` contiguous elements of a row reads or
// writes them with one 128-bit access at offsets.apply(flat index of the first).
struct SharedTileLayout {
  LinearMap offsets;  // flat element index -> offset in elements within the stage
  int vec = 1;
};
SharedTileLayout shared_tile_layout(const std::vector<int>& shape, int elem_bytes, int bank_bytes = 128);

// The flat element index each (register, lane, warp) of `l` gets from the index math the
// GPU lowering emits for it, evaluated on constants (the same code, folded by LLVM):
// result[(w * wave + lane) * num_regs + r]. For tests of that emitted code.
std::vector<uint32_t> evaluate_emitted_indices(const Layout& l);

// --- conversions within a warp (Triton's "conversion within a warp", transferWithinWarp) ---

// True when some thread needs, under `dst`, an element that under `src` only threads of
// other warps hold: the conversion cannot be done by exchanging lanes of one warp. (Also
// true when the layouts do not describe the same program: other shapes or thread counts.)
bool crosses_warps(const Layout& src, const Layout& dst);

// How a warp-local conversion runs with indexed lane reads (shuffle_idx). Everything is
// linear over F2, so it is described by images of single bits; "apply(map, x)" is the XOR
// of map[i] over the bits i set in x.
//
// Lane l of warp w wants, in dst register r, the element that src holds in register
// reg(r, l, w) of lane src_lane(r, l, w), both affine in (r, l, w). One shuffle moves one
// value per lane, chosen by the *sending* lane, so:
//  - the part of the source register that is a function of the source lane (and the
//    warp) is selected by the sender before the shuffle (`send_map`, `warp_reg`);
//  - the rest depends on the receiving lane only through lanes that read the same source
//    lane (the kernel of the lane map): one shuffle per value of that part (the span of
//    `recv_basis`), and the receiver selects among them after the shuffle (`recv_map`).
// That is the fewest shuffles one-shuffle-per-dst-register can do: lanes that read the
// same source lane but need different source registers need different shuffles.
// A dst register whose lanes all read themselves (`local`) needs no shuffle at all, only
// the sender-side select.
struct WarpShufflePlan {
  int num_dst_regs = 0;
  // src_lane(r, l, w) = lane_base[r] ^ apply(lane_map, l) ^ apply(warp_lane, w)
  std::vector<uint32_t> lane_base;  // per dst register
  std::vector<uint32_t> lane_map;   // per lane bit: a lane id
  std::vector<uint32_t> warp_lane;  // per warp bit: a lane id
  // register that lane s of warp w sends in shuffle k of dst register r:
  //   reg_base[r] ^ combine(recv_basis, k) ^ apply(send_map, s) ^ apply(warp_reg, w)
  std::vector<uint32_t> reg_base;   // per dst register
  std::vector<uint32_t> send_map;   // per lane bit: register-index bits
  std::vector<uint32_t> warp_reg;   // per warp bit: register-index bits
  // The runtime part apply(send_map, s) ^ apply(warp_reg, w) lies in the span of
  // `send_basis` (reduced echelon form: basis i alone has bit send_pivot[i]), so the
  // sender selects with a tree over those bits.
  std::vector<uint32_t> send_basis, send_pivot;
  // The receiver of lane l takes shuffle k = decompose(recv_basis, apply(recv_map, l)).
  std::vector<uint32_t> recv_map;   // per lane bit: register-index bits
  std::vector<uint32_t> recv_basis, recv_pivot;
  std::vector<bool> local;          // per dst register: every lane reads its own registers

  int shuffles_per_reg() const { return 1 << recv_basis.size(); }
  uint32_t src_lane(int r, uint32_t lane, uint32_t warp) const;
  // Register lane `lane` (the sender) sends in shuffle k of dst register r.
  uint32_t send_reg(int r, int k, uint32_t lane, uint32_t warp) const;
  // Which of the shuffles of a dst register lane `lane` (the receiver) keeps.
  int recv_index(uint32_t lane) const;
  // Shuffles the lowering emits: per non-local dst register, shuffles_per_reg(), less
  // those that repeat one already made (same source lane, same sent register).
  int num_shuffles() const;
};

// XOR of map[i] over the bits i set in x.
uint32_t apply_bits(const std::vector<uint32_t>& map, uint32_t x);
// XOR of basis[i] over the bits i set in k.
uint32_t combine(const std::vector<uint32_t>& basis, uint32_t k);
// The k with combine(basis, k) == x, for x in the span of a reduced echelon basis.
uint32_t decompose(const std::vector<uint32_t>& pivot, uint32_t x);

// The plan of a conversion that crosses no warps; nullopt when it crosses warps.
std::optional<WarpShufflePlan> warp_shuffle_plan(const Layout& src, const Layout& dst);

// How a conversion from `src` to `dst` (same shape) moves data, the first that applies:
// registers (each thread holds what it needs), warp shuffles (nothing crosses warps, and
// the shuffles are no more than a shared-memory round trip's accesses: distinct elements
// written plus read per thread; the two barriers are the gain), else shared memory. The
// one rule plan_conversion_paths records and the lowering emits.
// `in_loop`: the conversion runs in a loop, where each address register a shuffle needs
// is computed before the loop and live throughout it (it counts against the shuffles).
ir::ConvertPath conversion_path(const Layout& src, const Layout& dst, bool in_loop = false);

}  // namespace tl::gpu

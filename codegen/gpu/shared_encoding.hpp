// Shared-memory encodings (ir::SharedEncoding, Triton's SwizzledSharedEncoding): where
// each element of a tile lies in shared memory, how wide a thread holding the tile in a
// given layout can write or read it there, what those accesses cost in bank conflicts,
// and the one rule that picks the encoding of an exchange through shared memory (a
// convert_layout's path=shared): the order and swizzle under which both the writing and
// the reading layout move the most bytes per instruction with the fewest conflicts.
// Triton's generic swizzling (optimalSwizzling in its linear-layout conversions) is the
// reference; this searches Triton's own encoding family rather than all linear maps.
#pragma once

#include <optional>
#include <vector>

#include "codegen/gpu/layout.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/ir/layout.hpp"

namespace tl::gpu {

// A target's shared-memory banks (TargetCapabilities::shared_banks, shared_bank_bytes).
// The model: a warp's access is served in phases of as many lanes as one pass over the
// banks holds (with 32 banks of 4 bytes: 8 lanes of 16-byte accesses, 16 of 8, 32 of up
// to 4); within a phase, lanes touching distinct words of one bank are serialized (the
// same word is broadcast). NVIDIA documents it so; for AMD's LDS it is the model
// Triton's AMD backend swizzles for.
struct BankModel {
  int banks = 32, bank_bytes = 4;
};

// The encoding as a map: row-major flat element index -> offset in elements. A padded
// encoding's map is its offsets before the padding (padded_offset).
LinearMap shared_offsets(const std::vector<int>& shape, const ir::SharedEncoding& e);

// A padded encoding's padding (ir::SharedEncoding::padding): `amount` elements after
// every `interval` (a power of two), for each pair; none where empty.
using Padding = std::vector<std::pair<int, int>>;
// Where linear offset `o` lies: o + the sum of (o / interval) * amount. For offsets with
// no bit in common, padded(a | b) = padded(a) + padded(b): a register's part of an offset
// that no lane or warp sets is a constant added to the thread's padded offset.
inline uint32_t padded_offset(uint32_t o, const Padding& p) {
  uint32_t out = o;
  for (auto [interval, amount] : p) out += (o / uint32_t(interval)) * uint32_t(amount);
  return out;
}
// The elements a tile of `numel` takes in the encoding (its padding included).
int64_t shared_elements(int64_t numel, const ir::SharedEncoding& e);
// What the lowering's padded offsets compute (layout_padded_element_index, index_math.cpp)
// for every (warp, lane, register) of `l` in that order, evaluate_emitted_indices's
// counterpart: `l` is a layout through the encoding's linear map.
std::vector<uint32_t> evaluate_emitted_padded_indices(const Layout& l, const Padding& pad);

// How a stage of a shared buffer (tl::shared) lies in shared memory: the encoding
// plan_shared_encodings recorded on its shared_alloc (a warpgroup dot's operand), else
// shared_tile_layout's swizzled row-major form for these banks. `allocs`: the
// allocations the buffer value may be (passes::SharedBuffers), whose encodings must
// agree. The one answer the copy planning and the lowering's stage accesses share.
SharedTileLayout stage_tile_layout(const std::vector<int>& shape, const std::vector<const ir::Operation*>& allocs,
                                   int elem_bytes, const BankModel& banks);

// Triton's SwizzledSharedEncoding(perPhase, maxPhase) as a swizzle (ir::SharedEncoding).
std::vector<uint32_t> phase_swizzle(int per_phase, int max_phase);

// The registers a thread holding layout `l` moves per access of the encoding: a run of
// registers holding consecutive elements along order[0], within one unit, 16 bytes at
// most (ds_read_b128, ld.shared.v4).
int shared_access_group(const Layout& l, const ir::SharedEncoding& e, int elem_bytes);

struct SharedAccessCost {
  int accesses = 0;    // access instructions each thread issues
  int wavefronts = 0;  // phases one warp's accesses take, bank conflicts included
  int worst_ways = 0;  // the conflict degree of every phase (1: conflict-free)
  int addresses = 0;   // distinct address registers (register constants XORed in, not added)
};
// What moving `l`'s registers, `group` at a time, to or from the offsets costs (copies
// of a register are not moved). Exact under the bank model: without padding every phase
// of every access has the conflicts of the first (the map is linear); with it, each
// phase of each access of warp 0 is counted.
SharedAccessCost shared_access_cost(const Layout& l, const LinearMap& offsets, int group, int elem_bytes,
                                    const BankModel& banks, const Padding& pad = {});

// gfx950's ds_read_b64_tr_b16 / _b8 reading a 16- or 8-bit tile into layout `dst` (wave
// 64) from `offsets`: the layout whose lanes give the addresses and whose first registers
// are the slots each read returns (transposed_read_slots: 4 or 8 consecutive elements;
// the rest of its registers are dst's, a read's worth at a time). nullopt where the
// instruction cannot produce `dst` from there (slots not contiguous, addresses not 8-byte
// aligned, another element width, not wave 64).
int transposed_read_slots(int elem_bytes);
std::optional<Layout> transposed_read_layout(const Layout& dst, const LinearMap& offsets, int elem_bytes);

// The encoding of a conversion from `src` to `dst` through shared memory: the dim stored
// fastest, the unit width and the XOR swizzle (Triton's phases, or one built for both
// sides' lanes) that minimize both sides' access instructions plus wavefronts (plus the
// packing of reads narrower than a register); with `transposed_reads` (capabilities: a
// transposing LDS read of this element width), whether `dst` is read by it. With
// `max_padding` (elements; capabilities: padded_shared), also unswizzled encodings padded
// after power-of-two intervals by at most that many elements in all and an eighth of the
// tile (Triton's PaddedSharedEncoding), taken only where strictly cheaper, the least
// padding first. The one rule plan_shared_encodings records and the
// lowering of any other exchange (global_load_to_shared's pointers) asks.
struct ExchangePlan {
  ir::SharedEncoding encoding;
  bool transposed_read = false;
};
ExchangePlan exchange_encoding(const Layout& src, const Layout& dst, int elem_bytes, const BankModel& banks,
                               bool transposed_reads, int64_t max_padding = 0);

}  // namespace tl::gpu

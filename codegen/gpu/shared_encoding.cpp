// Shared-memory encodings: the map, the access width and cost of a layout on it, and the
// encoding search for exchanges (shared_encoding.hpp).
//
// Everything here is linear over F2: a lane's offset is the XOR of its bits' images, so
// two lanes of one access share a bank exactly when their difference does, whatever the
// register and the phase. One phase of one access therefore tells the conflicts of all.
#include "codegen/gpu/shared_encoding.hpp"

#include <algorithm>

#include "tl/error.hpp"

namespace tl::gpu {

namespace {
int64_t numel_of(const std::vector<int>& shape) {
  int64_t n = 1;
  for (int d : shape) n *= d;
  return n;
}

// order[0]'s elements are consecutive in the row-major flat index at this stride.
uint32_t fastest_stride(const std::vector<int>& shape, const ir::SharedEncoding& e) {
  return e.order.empty() ? 1u : 1u << dim_offset(shape, e.order[0]);
}

// Bits of a stored row: order[0]'s, or the encoding's row width where it splits it.
int col_bits_of(const std::vector<int>& shape, const ir::SharedEncoding& e) {
  if (e.order.empty()) return 0;
  const int all = log2_exact(shape[size_t(e.order[0])]);
  return e.row ? std::min(all, log2_exact(e.row)) : all;
}

// Gaussian elimination over F2: a set of vectors and whether another is independent.
struct F2Span {
  std::vector<uint32_t> rows;  // distinct leading bits
  uint32_t reduce(uint32_t v) const {
    for (uint32_t r : rows)
      if (v & (1u << (31 - __builtin_clz(r)))) v ^= r;
    return v;
  }
  bool add(uint32_t v) {
    v = reduce(v);
    if (!v) return false;
    rows.push_back(v);
    std::sort(rows.begin(), rows.end(), [](uint32_t a, uint32_t b) { return a > b; });
    return true;
  }
};

int lanes_per_phase(int access_bytes, int wave, const BankModel& banks) {
  return std::clamp(banks.banks * banks.bank_bytes / std::max(access_bytes, banks.bank_bytes), 1, wave);
}
}  // namespace

SharedTileLayout stage_tile_layout(const std::vector<int>& shape, const std::vector<const ir::Operation*>& allocs,
                                   int elem_bytes, const BankModel& banks) {
  const ir::SharedEncoding* enc = nullptr;
  for (size_t i = 0; i < allocs.size(); ++i) {
    const ir::SharedEncoding* e = allocs[i]->shared ? &*allocs[i]->shared : nullptr;
    if (i > 0 && !(e == enc || (e && enc && *e == *enc)))
      throw compile_error("gpu planning: one value may be shared buffers of different encodings (a tl bug)");
    enc = e;
  }
  // (padding is planned for exchanges only: a stage's accesses use the linear map)
  if (enc && !enc->padding.empty())
    throw compile_error("gpu planning: a shared buffer with a padded encoding (a tl bug)");
  if (enc) return SharedTileLayout{shared_offsets(shape, *enc), enc->vec};
  return shared_tile_layout(shape, elem_bytes, banks.banks * banks.bank_bytes);
}

LinearMap shared_offsets(const std::vector<int>& shape, const ir::SharedEncoding& e) {
  const int rank = int(shape.size());
  const int col_bits = col_bits_of(shape, e), vec_bits = log2_exact(e.vec);
  // Where each dim's field starts in the stored index: order[0]'s first col_bits lowest,
  // the other dims in order above them, then what is left of order[0] (its column
  // blocks, where the encoding splits it into rows).
  std::vector<int> stored_at(size_t(rank), 0);
  int at = 0;
  for (size_t i = 0; i < e.order.size(); ++i) {
    const int d = e.order[i];
    stored_at[size_t(d)] = at;
    at += i == 0 ? col_bits : log2_exact(shape[size_t(d)]);
  }
  const int high_at = at;
  LinearMap m;
  const int bits = log2_exact(numel_of(shape));
  for (int b = 0; b < bits; ++b) {
    const int d = dim_of_bit(shape, b);
    const int within = b - dim_offset(shape, d);
    const bool high = !e.order.empty() && d == e.order[0] && within >= col_bits;
    const int s = high ? high_at + within - col_bits : stored_at[size_t(d)] + within;
    uint32_t img = 1u << s;
    // A row bit also flips unit-index bits.
    if (s >= col_bits && size_t(s - col_bits) < e.swizzle.size()) img ^= e.swizzle[size_t(s - col_bits)] << vec_bits;
    m.image.push_back(img);
  }
  return m;
}

int64_t shared_elements(int64_t numel, const ir::SharedEncoding& e) {
  // The last element's padded offset, plus one: no padding after the tile's end.
  return numel > 0 ? int64_t(padded_offset(uint32_t(numel - 1), e.padding)) + 1 : numel;
}

std::vector<uint32_t> phase_swizzle(int per_phase, int max_phase) {
  std::vector<uint32_t> s(size_t(log2_exact(per_phase)), 0);
  for (int k = 0; k < log2_exact(max_phase); ++k) s.push_back(1u << k);
  return s;
}

int shared_access_group(const Layout& l, const ir::SharedEncoding& e, int elem_bytes) {
  const int run = contiguous_run(l, fastest_stride(l.shape, e));
  return std::max(1, std::min({run, e.vec, std::max(1, 16 / elem_bytes), l.num_regs()}));
}

namespace {
// The conflict degree of one phase: the most distinct words of one bank its lanes touch,
// each lane `bytes` from its start (in bytes). `words`: scratch, reused across calls.
int phase_ways(const std::vector<int64_t>& starts, int bytes, const BankModel& banks, std::vector<int64_t>& words) {
  words.clear();  // bank << 40 | word
  for (int64_t start : starts)
    for (int64_t w = start / banks.bank_bytes; w <= (start + bytes - 1) / banks.bank_bytes; ++w)
      words.push_back(int64_t(w % banks.banks) << 40 | w);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  int ways = 0;
  for (size_t i = 0; i < words.size();) {
    size_t j = i;
    while (j < words.size() && words[j] >> 40 == words[i] >> 40) ++j;
    ways = std::max(ways, int(j - i));
    i = j;
  }
  return ways;
}
}  // namespace

SharedAccessCost shared_access_cost(const Layout& l, const LinearMap& offsets, int group, int elem_bytes,
                                    const BankModel& banks, const Padding& pad) {
  SharedAccessCost c;
  const int wave = 1 << l.lane.size();
  const int bytes = group * elem_bytes;
  const int phase_lanes = lanes_per_phase(bytes, wave, banks);
  const uint32_t dup = l.duplicate_reg_mask();
  // The offset bits a thread's part of the address may set: a register's constant that
  // shares some is XORed in (an address register of its own), the rest is an immediate.
  uint32_t thread_bits = 0;
  for (uint32_t x : l.lane) thread_bits |= offsets.apply(x);
  for (uint32_t x : l.warp) thread_bits |= offsets.apply(x);
  std::vector<uint32_t> xors;
  for (int r = 0; r < l.num_regs(); r += group)
    if (!(r & dup)) {
      ++c.accesses;
      xors.push_back(offsets.apply(l.reg_part(uint32_t(r))) & thread_bits);
    }
  std::sort(xors.begin(), xors.end());
  c.addresses = int(std::unique(xors.begin(), xors.end()) - xors.begin());
  // Warp 0's lanes' offsets (the map is linear: a register's part is XORed in).
  std::vector<uint32_t> lane_offsets(static_cast<size_t>(wave));
  for (int lane = 0; lane < wave; ++lane) lane_offsets[size_t(lane)] = offsets.apply(l.thread_part(uint32_t(lane), 0));
  std::vector<int64_t> starts, words;
  auto ways_of = [&](uint32_t reg_offset, int first_lane) {
    starts.clear();
    for (int lane = first_lane; lane < first_lane + phase_lanes; ++lane)
      starts.push_back(int64_t(padded_offset(lane_offsets[size_t(lane)] ^ reg_offset, pad)) * elem_bytes);
    return phase_ways(starts, bytes, banks, words);
  };
  if (pad.empty()) {
    // One phase of the first access: the lanes 0 .. phase_lanes-1 of warp 0.
    c.worst_ways = ways_of(0, 0);
    c.wavefronts = c.accesses * (wave / phase_lanes) * c.worst_ways;
    return c;
  }
  // Padding is not linear: every phase of every access of warp 0. A register's offset with
  // no bit in common with the lanes' shifts each lane's padded offset by its own padded
  // offset (padded_offset); a shift by whole bank words only renumbers the banks, so such
  // accesses have the conflicts of the first, shifted by the rest (in bytes) of a word.
  const int phases = wave / phase_lanes;
  std::vector<std::vector<int>> by_rest(size_t(banks.bank_bytes));  // ways a phase, by the shift's rest
  auto shifted_ways = [&](int rest, int first_lane) {
    starts.clear();
    for (int lane = first_lane; lane < first_lane + phase_lanes; ++lane)
      starts.push_back(int64_t(padded_offset(lane_offsets[size_t(lane)], pad)) * elem_bytes + rest);
    return phase_ways(starts, bytes, banks, words);
  };
  for (int r = 0; r < l.num_regs(); r += group) {
    if (r & dup) continue;
    const uint32_t reg_offset = offsets.apply(l.reg_part(uint32_t(r)));
    std::vector<int> exact;
    const std::vector<int>* ways = nullptr;
    if (reg_offset & thread_bits) {
      for (int p = 0; p < phases; ++p) exact.push_back(ways_of(reg_offset, p * phase_lanes));
      ways = &exact;
    } else {
      const int rest = int(int64_t(padded_offset(reg_offset, pad)) * elem_bytes % banks.bank_bytes);
      std::vector<int>& w = by_rest[size_t(rest)];
      if (w.empty())
        for (int p = 0; p < phases; ++p) w.push_back(shifted_ways(rest, p * phase_lanes));
      ways = &w;
    }
    for (int x : *ways) c.worst_ways = std::max(c.worst_ways, x), c.wavefronts += x;
  }
  return c;
}

int transposed_read_slots(int elem_bytes) { return 8 / elem_bytes; }

std::optional<Layout> transposed_read_layout(const Layout& dst, const LinearMap& offsets, int elem_bytes) {
  // ds_read_b64_tr_b16 / _b8: in each group of 16 lanes, lane l receives slot l % s of the
  // 8 bytes lane (16 / s) i + l / s of the group read (s = 4 or 8 slots), as its element
  // i. So the s registers a lane receives (the dot layout's first log2 s register bits)
  // come from lanes (address-lane bits log2(16 / s) ..3), and the s slots a lane reads are
  // the elements of the dot layout's first log2 s lane bits, which must lie contiguous:
  // Triton's rotation of the register and lane bases (chooseDsReadB64TrLayout).
  if ((elem_bytes != 1 && elem_bytes != 2) || dst.lane.size() != 6) return std::nullopt;
  const size_t k = size_t(log2_exact(transposed_read_slots(elem_bytes)));  // 2 or 3
  if (dst.reg.size() < k) return std::nullopt;
  Layout a;
  a.shape = dst.shape;
  a.reg.assign(dst.lane.begin(), dst.lane.begin() + long(k));
  a.reg.insert(a.reg.end(), dst.reg.begin() + long(k), dst.reg.end());
  a.lane.assign(dst.lane.begin() + long(k), dst.lane.begin() + 4);
  a.lane.insert(a.lane.end(), dst.reg.begin(), dst.reg.begin() + long(k));
  a.lane.insert(a.lane.end(), dst.lane.begin() + 4, dst.lane.end());
  a.warp = dst.warp;
  // The slots: the elements right after the lane's address; every address 8-byte aligned.
  for (size_t j = 0; j < k; ++j)
    if (offsets.apply(a.reg[j]) != 1u << j) return std::nullopt;
  const uint32_t slot_bits = (1u << k) - 1;
  auto aligned = [&](const std::vector<uint32_t>& images) {
    return std::all_of(images.begin(), images.end(), [&](uint32_t x) { return (offsets.apply(x) & slot_bits) == 0; });
  };
  if (!aligned({a.reg.begin() + long(k), a.reg.end()}) || !aligned(a.lane) || !aligned(a.warp)) return std::nullopt;
  return a;
}

namespace {
// One side of an exchange: the layout whose lanes address shared memory, `group`
// elements an access.
struct Side {
  Layout access;
  int group = 1;
};

// The swizzle that makes each side's phase lanes hit distinct banks where a row-bit
// XOR can: the sides in turn, their phase lanes in order; a lane whose bank bits depend
// on the lanes before it gets, on a row bit of its own not yet given a value, the unit
// bit that makes them independent. Triton's generic swizzling works the same way on
// the same basis vectors.
std::vector<uint32_t> two_sided_swizzle(const std::vector<Side>& sides, const ir::SharedEncoding& e, int elem_bytes,
                                        const BankModel& banks, bool address_free) {
  const std::vector<int>& shape = sides[0].access.shape;
  const int col_bits = col_bits_of(shape, e), vec_bits = log2_exact(e.vec), eb_bits = log2_exact(elem_bytes);
  const int row_bits = log2_exact(numel_of(shape)) - col_bits, unit_bits = col_bits - vec_bits;
  const LinearMap plain = shared_offsets(shape, {e.order, e.vec, {}});
  std::vector<uint32_t> swz(size_t(row_bits), 0);
  std::vector<bool> fixed(size_t(row_bits), false);
  // Address-free: a register's offset must stay an immediate (added, not XORed), so no
  // row bit a register sets is swizzled and no unit bit a register sets is flipped.
  uint32_t register_bits = 0;
  if (address_free)
    for (const Side& s : sides)
      for (uint32_t x : s.access.reg) register_bits |= plain.apply(x);
  for (int r = 0; r < row_bits; ++r)
    if (register_bits >> (col_bits + r) & 1) fixed[size_t(r)] = true;
  const int bank_hi = log2_exact(banks.banks * banks.bank_bytes);
  for (const Side& s : sides) {
    const int wave = 1 << s.access.lane.size();
    const int bytes = s.group * elem_bytes;
    const int phase_bits = log2_exact(lanes_per_phase(bytes, wave, banks));
    const int bank_lo = log2_exact(std::max(bytes, banks.bank_bytes));
    const uint32_t bank_mask = ((1u << bank_hi) - 1) & ~((1u << bank_lo) - 1);
    auto bank_bits = [&](uint32_t v) {  // v: an offset before the swizzle
      uint32_t sv = v;
      for (int i = 0; i < row_bits; ++i)
        if (v >> (col_bits + i) & 1) sv ^= swz[size_t(i)] << vec_bits;
      return (sv << eb_bits) & bank_mask;
    };
    F2Span span;
    for (int i = 0; i < phase_bits && i < int(s.access.lane.size()); ++i) {
      const uint32_t v = plain.apply(s.access.lane[size_t(i)]);
      if (!v || (v << eb_bits) >> bank_lo == 0) continue;  // a copy, or within one access
      if (!span.add(bank_bits(v)))
        for (int r = 0; r < row_bits; ++r) {
          if (!(v >> (col_bits + r) & 1) || fixed[size_t(r)]) continue;
          bool done = false;
          for (int u = 0; u < unit_bits && !done; ++u) {
            const uint32_t flip = (1u << (vec_bits + u)) << eb_bits;
            if (!(flip & bank_mask) || (register_bits >> (vec_bits + u) & 1)) continue;
            swz[size_t(r)] ^= 1u << u;
            done = span.add(bank_bits(v));
            if (!done) swz[size_t(r)] ^= 1u << u;
          }
          if (done) break;
        }
      for (int r = 0; r < row_bits; ++r)
        if (v >> (col_bits + r) & 1) fixed[size_t(r)] = true;
    }
  }
  while (!swz.empty() && swz.back() == 0) swz.pop_back();
  return swz;
}
}  // namespace

ExchangePlan exchange_encoding(const Layout& src, const Layout& dst, int elem_bytes, const BankModel& banks,
                               bool transposed_reads, int64_t max_padding) {
  const std::vector<int>& shape = src.shape;
  const int rank = int(shape.size());
  const int widest = std::max(1, 16 / elem_bytes);
  ExchangePlan best;  // row-major, unswizzled: a single element's
  for (int d = rank - 1; d >= 0; --d) best.encoding.order.push_back(d);
  // A transposing read gathers, into a lane's registers, consecutive elements along the
  // dim that dst's lanes walk first.
  auto transposes_along = [&](uint32_t stride) {
    return transposed_reads && dst.lane.size() > 1 && dst.lane[0] == stride;
  };
  // The dims worth storing fastest: where either side holds consecutive elements in
  // consecutive registers, or a transposing read gathers them; the last dim (row-major)
  // when none does.
  std::vector<int> dims;
  for (int d = rank - 1; d >= 0; --d) {
    if (shape[size_t(d)] == 1) continue;
    const uint32_t stride = 1u << dim_offset(shape, d);
    if (contiguous_run(src, stride) > 1 || contiguous_run(dst, stride) > 1 || transposes_along(stride) ||
        dims.empty())
      dims.push_back(d);
  }
  if (dims.empty()) return best;
  int64_t best_cost = -1;
  // An access is an instruction plus its wavefronts; a read narrower than a register
  // also costs the instruction that packs its result with its neighbour's (a 16-bit
  // dot operand lives two to a register); each distinct address a swizzle makes is a
  // register (LLVM hoists them out of loops: live throughout), weighed as 2 accesses.
  // Heavier weights trade them for bank conflicts or 2-byte reads: at 8, tutorial-06
  // attention at 64x64 on gfx942 takes 146 VGPRs instead of 160 but attention's K^T
  // reads become 2-way at D = 64; at 32, 128x64 on 8 waves takes 169 instead of 236,
  // with 2- to 4-way reads. Conflict-free reads win here until a GPU says otherwise.
  constexpr int64_t kAddressWeight = 2;
  // A padded encoding must beat the best swizzle by this much: saving a few address
  // registers, it cost more SGPRs than it saved VGPRs (gfx942's attention dQ at D = 64: 85
  // to 106 SGPRs, 10 spilled, for a 64:+4 padding of K^T); attention's V at 8 waves
  // saves 30 addresses (242 VGPRs to 172).
  constexpr int64_t kPaddingMargin = 8 * kAddressWeight;
  auto consider = [&](const ir::SharedEncoding& e) {
    const LinearMap off = shared_offsets(shape, e);
    auto cost = [&](const Layout& l, int group, bool read) {
      SharedAccessCost c = shared_access_cost(l, off, group, elem_bytes, banks, e.padding);
      const bool packs = read && group * elem_bytes < 4;
      return int64_t(c.accesses) * (packs ? 2 : 1) + c.wavefronts + kAddressWeight * int64_t(c.addresses);
    };
    const int64_t write = cost(src, shared_access_group(src, e, elem_bytes), false);
    if (best_cost >= 0 && write + (e.padding.empty() ? 0 : kPaddingMargin) >= best_cost) return;  // cannot win
    const int64_t read = cost(dst, shared_access_group(dst, e, elem_bytes), true);
    std::optional<Layout> tr = transposed_reads ? transposed_read_layout(dst, off, elem_bytes) : std::nullopt;
    const int64_t tr_read = tr ? cost(*tr, transposed_read_slots(elem_bytes), true) : -1;
    const bool use_tr = tr && tr_read < read;
    const int64_t total = write + (use_tr ? tr_read : read) + (e.padding.empty() ? 0 : kPaddingMargin);
    if (best_cost < 0 || total < best_cost) best_cost = total, best = {e, use_tr};
  };
  for (int d : dims) {
    ir::SharedEncoding e;
    e.order.push_back(d);
    for (int o = rank - 1; o >= 0; --o)
      if (o != d) e.order.push_back(o);
    const int cols = shape[size_t(d)], rows = int(numel_of(shape) / cols);
    const uint32_t stride = 1u << dim_offset(shape, d);
    const int ws = std::min({contiguous_run(src, stride), widest, cols});
    int wd = std::min({contiguous_run(dst, stride), widest, cols});
    if (transposes_along(stride)) wd = std::max(wd, std::min(transposed_read_slots(elem_bytes), cols));
    std::vector<int> vecs = {std::max(ws, wd)};
    if (ws != wd) vecs.push_back(std::min(ws, wd));
    for (int vec : vecs) {
      e.vec = vec;
      e.swizzle.clear();
      consider(e);
      // Triton's phases: rows narrower than a pass over the banks share one.
      for (int per_phase = 1; per_phase <= rows; per_phase *= 2)
        for (int max_phase = 2; max_phase <= cols / vec && int64_t(per_phase) * max_phase <= rows; max_phase *= 2) {
          e.swizzle = phase_swizzle(per_phase, max_phase);
          consider(e);
        }
      // Built for both sides, each side's lanes first in turn.
      std::vector<Side> sides = {{dst, shared_access_group(dst, e, elem_bytes)},
                                 {src, shared_access_group(src, e, elem_bytes)}};
      // Also restricted to swizzles whose addresses stay one register and immediates.
      for (bool address_free : {false, true})
        for (int turn = 0; turn < 2; ++turn, std::swap(sides[0], sides[1])) {
          e.swizzle = two_sided_swizzle(sides, e, elem_bytes, banks, address_free);
          consider(e);
          // The transposing read addresses through other lanes than the layout's own.
          if (transposed_reads)
            if (auto tr = transposed_read_layout(dst, shared_offsets(shape, {e.order, e.vec, {}}), elem_bytes)) {
              std::vector<Side> t = {{*tr, transposed_read_slots(elem_bytes)},
                                     {src, shared_access_group(src, e, elem_bytes)}};
              if (turn) std::swap(t[0], t[1]);
              e.swizzle = two_sided_swizzle(t, e, elem_bytes, banks, address_free);
              consider(e);
            }
        }
      // Padded, unswizzled (Triton's PaddedSharedEncoding): rows that would share banks
      // shifted apart by the padding instead of XORed, so every register's offset is an
      // immediate of one address (a swizzle XORing register bits into the lane's address
      // costs an address register each: 32 for attention's V read at 8 waves on gfx942).
      // Whole units of padding (a transposing read's 8 bytes included) keep every access
      // aligned. One interval, or two (Triton's list of them): a tile written along one
      // dim and read along the other needs its columns shifted apart by the first and its
      // groups of columns by the second (attention's V at 8 waves on gfx942: 64:+4 and
      // 1024:+4). At most an eighth of the tile more and max_padding; the least first.
      //
      // Which intervals (Triton's rule for its LDS layouts): the first a stored row, or a
      // pass over the banks where rows are shorter (rows starting on one bank are what
      // conflict); the second where the first's shifts have gone once round the banks, or
      // half of that. Searched only where padding could win: each side at one address,
      // conflict-free, still costs more than the best so far otherwise.
      const int unit = std::max(vec, transposed_reads ? transposed_read_slots(elem_bytes) : 1);
      const int64_t numel = numel_of(shape);
      const int pass = banks.banks * banks.bank_bytes / elem_bytes;  // elements
      auto floor_cost = [&](const Layout& l, int group, bool read) {
        const SharedAccessCost c = shared_access_cost(l, shared_offsets(shape, {e.order, e.vec, {}}), group, elem_bytes,
                                                      banks);
        const int wave = 1 << l.lane.size(), lanes = lanes_per_phase(group * elem_bytes, wave, banks);
        return int64_t(c.accesses) * (read && group * elem_bytes < 4 ? 2 : 1) + c.accesses * (wave / lanes) +
               kAddressWeight;
      };
      if (max_padding > 0 && best_cost > kPaddingMargin +
                                             floor_cost(src, shared_access_group(src, e, elem_bytes), false) +
                                             floor_cost(dst, shared_access_group(dst, e, elem_bytes), true)) {
        std::vector<Padding> pads;
        std::vector<int64_t> firsts = {std::max(cols, pass)};
        if (cols != pass) firsts.push_back(std::min(cols, pass));
        for (int a1 = unit; a1 <= 2 * unit; a1 *= 2)
          for (int64_t i1 : firsts) {
            if (i1 < 8 * int64_t(a1) || i1 >= numel) continue;
            pads.push_back({{int(i1), a1}});
            const int64_t round = i1 * std::max<int64_t>(1, pass / a1);  // shifts once round the banks
            for (int a2 = unit; a2 <= 2 * unit; a2 *= 2)
              for (int64_t i2 : {round / 2, round})
                if (i2 > i1 && i2 < numel && double(a1) / double(i1) + double(a2) / double(i2) <= 0.125)
                  pads.push_back({{int(i1), a1}, {int(i2), a2}});
          }
        auto fraction = [](const Padding& p) {
          double f = 0;
          for (auto [interval, amount] : p) f += double(amount) / double(interval);
          return f;
        };
        std::stable_sort(pads.begin(), pads.end(),
                         [&](const Padding& a, const Padding& b) { return fraction(a) < fraction(b); });
        e.swizzle.clear();
        for (const Padding& p : pads) {
          e.padding = p;
          if (shared_elements(numel, e) - numel <= max_padding) consider(e);
        }
        e.padding.clear();
      }
    }
  }
  return best;
}

}  // namespace tl::gpu

// Distributed layouts as linear maps from hardware bits to flat element indices (see
// layout.hpp). Everything here is host-side bookkeeping; no LLVM.
#include "codegen/gpu/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <set>

#include "tl/error.hpp"

namespace tl::gpu {

int log2_exact(int64_t n) {
  int k = 0;
  while ((int64_t(1) << k) < n) ++k;
  if ((int64_t(1) << k) != n) throw compile_error(fmt::format("gpu layout: {} is not a power of two", n));
  return k;
}

int dim_offset(const std::vector<int>& shape, int d) {
  int off = 0;
  for (int e = int(shape.size()) - 1; e > d; --e) off += log2_exact(shape[e]);
  return off;
}

std::optional<std::vector<HardwareBit>> dim_bit_holders(const Layout& l, int dim) {
  const int off = dim_offset(l.shape, dim);
  const int bits = log2_exact(l.shape[size_t(dim)]);
  const uint32_t dim_mask = ((1u << bits) - 1) << off;
  std::vector<std::optional<HardwareBit>> holder(static_cast<size_t>(bits));
  auto claim = [&](HardwareBit::Kind kind, const std::vector<uint32_t>& images) {
    for (size_t i = 0; i < images.size(); ++i) {
      if (!(images[i] & dim_mask)) continue;
      if (std::popcount(images[i]) != 1) return false;  // a bit of the dim mixed with another
      auto& h = holder[size_t(std::countr_zero(images[i]) - off)];
      if (h) return false;  // two hardware bits for one coordinate bit
      h = HardwareBit{kind, int(i)};
    }
    return true;
  };
  if (!claim(HardwareBit::reg, l.reg) || !claim(HardwareBit::lane, l.lane) || !claim(HardwareBit::warp, l.warp))
    return std::nullopt;
  std::vector<HardwareBit> out;
  for (auto& h : holder) {
    if (!h) return std::nullopt;
    out.push_back(*h);
  }
  return out;
}

bool along_axis(const Layout& l, uint32_t image, int axis) {
  for (int bit = 0; (image >> bit) != 0; ++bit)
    if ((image >> bit & 1) && dim_of_bit(l.shape, bit) == axis) return true;
  return false;
}

int dim_of_bit(const std::vector<int>& shape, int bit) {
  int off = 0;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    int w = log2_exact(shape[d]);
    if (bit < off + w) return d;
    off += w;
  }
  throw compile_error(fmt::format("gpu layout: flat-index bit {} is outside the tile", bit));
}

uint32_t coord(const std::vector<int>& shape, uint32_t flat, int d) {
  return (flat >> dim_offset(shape, d)) & uint32_t(shape[d] - 1);
}

namespace {

// Applies a map defined on single flat-index bits to every basis (linear over F2).
template <class F> uint32_t map_bits(uint32_t b, F&& f) {
  uint32_t r = 0;
  for (int bit = 0; b; ++bit, b >>= 1)
    if (b & 1) r ^= f(bit);
  return r;
}

template <class F> Layout map_layout(const Layout& in, std::vector<int> shape, F&& f) {
  Layout out;
  out.shape = std::move(shape);
  auto m = [&](uint32_t b) { return map_bits(b, f); };
  for (uint32_t b : in.reg) out.reg.push_back(m(b));
  for (uint32_t b : in.lane) out.lane.push_back(m(b));
  for (uint32_t b : in.warp) out.warp.push_back(m(b));
  return out;
}

}  // namespace

Layout blocked_layout(const std::vector<int>& shape, const std::vector<int>& spt, const std::vector<int>& tpw,
                      const std::vector<int>& wpc, const std::vector<int>& order, int wave_size, int num_warps) {
  int r = int(shape.size());
  Layout l;
  l.shape = shape;
  std::vector<int> next(r, 0);  // next coordinate bit to hand out, per dim
  auto push = [&](std::vector<uint32_t>& list, int d) {
    if ((1 << next[d]) < shape[d]) {
      list.push_back(uint32_t(1) << (dim_offset(shape, d) + next[d]));
      ++next[d];
    } else {
      list.push_back(0);  // beyond the tile: a copy
    }
  };
  for (int d : order)
    for (int i = 0; i < log2_exact(spt[d]); ++i) push(l.reg, d);
  for (int d : order)
    for (int i = 0; i < log2_exact(tpw[d]); ++i) push(l.lane, d);
  for (int d : order)
    for (int i = 0; i < log2_exact(wpc[d]); ++i) push(l.warp, d);
  if (int(l.lane.size()) != log2_exact(wave_size) || int(l.warp.size()) != log2_exact(num_warps))
    throw compile_error("gpu layout: threads_per_warp/warps_per_cta do not cover the program");
  // repetitions: what the CTA tile does not cover wraps into more registers
  for (int d : order)
    while ((1 << next[d]) < shape[d]) push(l.reg, d);
  return l;
}

Layout scalar_layout(int wave_size, int num_warps) {
  Layout l;
  l.lane.assign(log2_exact(wave_size), 0);
  l.warp.assign(log2_exact(num_warps), 0);
  return l;
}

Layout default_layout(const std::vector<int>& shape, const std::vector<int>& order, int vec, int wave_size,
                      int num_warps) {
  int rank = int(shape.size());
  if (rank == 0) return scalar_layout(wave_size, num_warps);
  int64_t numel = 1;
  for (int d : shape) numel *= d;
  int threads = wave_size * num_warps;
  std::vector<int> spt(rank, 1), tpw(rank, 1), wpc(rank, 1);
  int fast = order[0];
  int64_t per_thread = std::max<int64_t>(1, numel / threads);
  spt[fast] = int(std::clamp<int64_t>(std::min<int64_t>(vec, per_thread), 1, shape[fast]));
  int lanes = wave_size, warps = num_warps, remaining = threads, prev_lanes = 1, prev_warps = 1;
  for (int k = 0; k < rank - 1; ++k) {
    int i = order[k];
    int per_cta = std::clamp(remaining, 1, std::max(1, shape[i] / spt[i]));
    tpw[i] = std::clamp(per_cta, 1, lanes);
    wpc[i] = std::clamp(per_cta / tpw[i], 1, warps);
    warps /= wpc[i];
    lanes /= tpw[i];
    remaining /= per_cta;
    prev_lanes *= tpw[i];
    prev_warps *= wpc[i];
  }
  tpw[order[rank - 1]] = wave_size / prev_lanes;
  wpc[order[rank - 1]] = num_warps / prev_warps;
  return blocked_layout(shape, spt, tpw, wpc, order, wave_size, num_warps);
}

std::vector<int> reduce_kept_reg_bits(const Layout& in, int axis) {
  std::vector<int> kept;
  for (size_t i = 0; i < in.reg.size(); ++i) {
    uint32_t b = in.reg[i];
    if (b == 0) continue;  // a duplicate register: combining it would count twice
    bool along = false;
    for (int bit = 0; (b >> bit) != 0; ++bit)
      if ((b >> bit & 1) && dim_of_bit(in.shape, bit) == axis) along = true;
    if (!along) kept.push_back(int(i));
  }
  return kept;
}

Layout reduce_layout(const Layout& in, int axis) {
  std::vector<int> shape = in.shape;
  shape.erase(shape.begin() + axis);
  auto f = [&](int bit) -> uint32_t {
    int d = dim_of_bit(in.shape, bit);
    if (d == axis) return 0;
    int c = bit - dim_offset(in.shape, d);
    int nd = d < axis ? d : d - 1;
    return uint32_t(1) << (dim_offset(shape, nd) + c);
  };
  Layout out = map_layout(in, shape, f);
  out.reg.clear();
  for (int i : reduce_kept_reg_bits(in, axis)) out.reg.push_back(map_bits(in.reg[i], f));
  return out;
}

Layout sort_layout(const std::vector<int>& shape, int dim, int wave_size, int num_warps) {
  std::vector<int> order = {dim};
  for (int d = int(shape.size()) - 1; d >= 0; --d)
    if (d != dim) order.push_back(d);
  // (default_layout gives order[0] min(vec, elements a thread) registers.)
  return default_layout(shape, order, std::numeric_limits<int>::max(), wave_size, num_warps);
}

Layout topk_layout(const Layout& in, int dim, int k) {
  const int off = dim_offset(in.shape, dim), kb = log2_exact(k), nb = log2_exact(in.shape[size_t(dim)]);
  std::vector<int> shape = in.shape;
  shape[size_t(dim)] = k;
  auto f = [&](int bit) -> uint32_t {
    if (bit < off + kb) return uint32_t(1) << bit;
    if (bit < off + nb) return 0;
    return uint32_t(1) << (bit - (nb - kb));
  };
  Layout out = map_layout(in, shape, f);
  out.reg.clear();
  for (uint32_t image : in.reg)
    if (image == 0 || map_bits(image, f) != 0) out.reg.push_back(map_bits(image, f));
  return out;
}

Layout reshape_layout(const Layout& in, const std::vector<int>& shape) {
  Layout out = in;
  out.shape = shape;
  return out;
}

Layout join_layout(const Layout& in) {
  Layout out = in;
  out.shape.push_back(2);
  out.reg = {1};
  for (uint32_t x : in.reg) out.reg.push_back(x << 1);
  for (uint32_t& x : out.lane) x <<= 1;
  for (uint32_t& x : out.warp) x <<= 1;
  return out;
}

std::optional<int> sole_register_bit(const Layout& l, uint32_t flat_bit) {
  std::optional<int> found;
  for (size_t i = 0; i < l.reg.size(); ++i) {
    if (l.reg[i] == flat_bit && !found) found = int(i);
    else if (l.reg[i] & flat_bit) return std::nullopt;  // mixed with other bits, or held twice
  }
  for (uint32_t x : l.lane)
    if (x & flat_bit) return std::nullopt;
  for (uint32_t x : l.warp)
    if (x & flat_bit) return std::nullopt;
  return found;
}

// `in` without register bit i; every image through `f`.
static Layout drop_register_bit(const Layout& in, int i, std::vector<int> shape, uint32_t (*f)(uint32_t)) {
  Layout out = in;
  out.shape = std::move(shape);
  out.reg.clear();
  for (size_t k = 0; k < in.reg.size(); ++k)
    if (int(k) != i) out.reg.push_back(f(in.reg[k]));
  for (uint32_t& x : out.lane) x = f(x);
  for (uint32_t& x : out.warp) x = f(x);
  return out;
}

Layout split_layout(const Layout& in, int reg_bit) {
  std::vector<int> shape(in.shape.begin(), in.shape.end() - 1);
  return drop_register_bit(in, reg_bit, shape, [](uint32_t x) { return x >> 1; });
}

Layout split_source_layout(const Layout& src, const Layout& out) {
  if (auto i = sole_register_bit(src, 1); i && split_layout(src, *i) == out) return src;
  return join_layout(out);
}

Layout join_source_layout(const Layout& out) {
  return drop_register_bit(out, 0, std::vector<int>(out.shape.begin(), out.shape.end() - 1),
                           [](uint32_t x) { return x >> 1; });
}

Layout cat_layout(const Layout& in) {
  Layout out = in;
  out.shape[0] *= 2;
  out.reg.push_back(uint32_t(in.numel()));
  return out;
}

Layout cat_source_layout(const Layout& out) {
  std::vector<int> shape = out.shape;
  shape[0] /= 2;
  return drop_register_bit(out, int(out.reg.size()) - 1, shape, [](uint32_t x) { return x; });
}

Layout trans_layout(const Layout& in, const std::vector<int>& perm) {
  int r = in.rank();
  std::vector<int> shape(r), inv(r);
  for (int i = 0; i < r; ++i) {
    shape[i] = in.shape[perm[i]];
    inv[perm[i]] = i;
  }
  return map_layout(in, shape, [&](int bit) -> uint32_t {
    int d = dim_of_bit(in.shape, bit);
    int c = bit - dim_offset(in.shape, d);
    return uint32_t(1) << (dim_offset(shape, inv[d]) + c);
  });
}

Layout trans_source_layout(const Layout& out, const std::vector<int>& perm) {
  int r = out.rank();
  std::vector<int> shape(r);
  for (int i = 0; i < r; ++i) shape[perm[i]] = out.shape[i];
  return map_layout(out, shape, [&](int bit) -> uint32_t {
    int i = dim_of_bit(out.shape, bit);
    int c = bit - dim_offset(out.shape, i);
    return uint32_t(1) << (dim_offset(shape, perm[i]) + c);
  });
}

Layout broadcast_source_layout(const Layout& out, const std::vector<int>& src_shape) {
  return map_layout(out, src_shape, [&](int bit) -> uint32_t {
    int d = dim_of_bit(out.shape, bit);
    if (src_shape[d] == 1) return 0;
    int c = bit - dim_offset(out.shape, d);
    return uint32_t(1) << (dim_offset(src_shape, d) + c);
  });
}

std::optional<std::vector<int>> register_only_conversion(const Layout& src, const Layout& dst) {
  if (src.lane != dst.lane || src.warp != dst.warp) return std::nullopt;
  // Gaussian elimination over F2: express each dst register image in src's registers.
  struct Row {
    uint32_t image;
    uint32_t regs;  // which src register bits XOR to `image`
  };
  std::vector<Row> basis;
  for (size_t i = 0; i < src.reg.size(); ++i) {
    Row row{src.reg[i], 1u << i};
    for (const Row& b : basis) {
      uint32_t top = 1u << (31 - __builtin_clz(b.image));
      if (row.image & top) row.image ^= b.image, row.regs ^= b.regs;
    }
    if (row.image) {
      basis.push_back(row);
      std::sort(basis.begin(), basis.end(), [](const Row& a, const Row& b) { return a.image > b.image; });
    }
  }
  auto solve = [&](uint32_t image) -> std::optional<uint32_t> {
    uint32_t regs = 0;
    for (const Row& b : basis) {
      uint32_t top = 1u << (31 - __builtin_clz(b.image));
      if (image & top) image ^= b.image, regs ^= b.regs;
    }
    if (image) return std::nullopt;
    return regs;
  };
  std::vector<uint32_t> bit_src(dst.reg.size());
  for (size_t j = 0; j < dst.reg.size(); ++j) {
    auto s = solve(dst.reg[j]);
    if (!s) return std::nullopt;
    bit_src[j] = *s;
  }
  std::vector<int> map(dst.num_regs());
  for (int r = 0; r < dst.num_regs(); ++r) {
    uint32_t s = 0;
    for (size_t j = 0; j < dst.reg.size(); ++j)
      if (r >> j & 1) s ^= bit_src[j];
    map[r] = int(s);
  }
  return map;
}

int contiguous_run(const Layout& l, uint32_t stride) {
  size_t k = 0;
  while (k < l.reg.size() && l.reg[k] == (stride << k)) ++k;
  return 1 << k;
}

// --- conversions within a warp ---

namespace {

uint32_t top_bit(uint32_t x) { return 1u << (31 - __builtin_clz(x)); }

// Gaussian elimination over F2. Each row carries a tag, XORed along with its image: a
// set of variables (which hardware bits make the image) or any value linear in them.
struct F2Basis {
  struct Row {
    uint32_t image;
    uint64_t tag;
  };
  std::vector<Row> rows;         // distinct leading bits, highest first
  std::vector<uint64_t> kernel;  // tags of combinations whose image is zero

  Row reduce(Row r) const {
    for (const Row& b : rows)
      if (r.image & top_bit(b.image)) r.image ^= b.image, r.tag ^= b.tag;
    return r;
  }
  bool independent(uint32_t image) const { return reduce({image, 0}).image != 0; }
  void add(uint32_t image, uint64_t tag) {
    Row r = reduce({image, tag});
    if (!r.image) {
      kernel.push_back(r.tag);
      return;
    }
    auto at = std::find_if(rows.begin(), rows.end(), [&](const Row& b) { return b.image < r.image; });
    rows.insert(at, r);
  }
  std::optional<uint64_t> solve(uint32_t image) const {
    Row r = reduce({image, 0});
    if (r.image) return std::nullopt;
    return r.tag;
  }
};

// A basis of span(vecs) in reduced echelon form: basis[i] is the only vector with bit
// pivot[i], so an element x of the span is the combination of the basis[i] whose pivot
// bits x has (decompose).
void reduced_echelon(const std::vector<uint32_t>& vecs, std::vector<uint32_t>& basis, std::vector<uint32_t>& pivot) {
  F2Basis e;
  for (uint32_t v : vecs) e.add(v, 0);
  auto& rows = e.rows;
  // lowest pivot first: a row XORed into the rows above it already lacks the pivots below
  for (int i = int(rows.size()) - 1; i >= 0; --i)
    for (int j = 0; j < i; ++j)
      if (rows[j].image & top_bit(rows[i].image)) rows[j].image ^= rows[i].image;
  basis.clear();
  pivot.clear();
  for (const auto& r : rows) {
    basis.push_back(r.image);
    pivot.push_back(uint32_t(31 - __builtin_clz(r.image)));
  }
}

constexpr int kLaneTag = 32;  // a tag's bits: src register bits from 0, src lane bits from 32
uint32_t tag_regs(uint64_t t) { return uint32_t(t); }
uint32_t tag_lanes(uint64_t t) { return uint32_t(t >> kLaneTag); }

}  // namespace

uint32_t apply_bits(const std::vector<uint32_t>& map, uint32_t x) {
  uint32_t r = 0;
  for (size_t i = 0; i < map.size(); ++i)
    if (x >> i & 1) r ^= map[i];
  return r;
}

uint32_t combine(const std::vector<uint32_t>& basis, uint32_t k) { return apply_bits(basis, k); }

uint32_t decompose(const std::vector<uint32_t>& pivot, uint32_t x) {
  uint32_t k = 0;
  for (size_t i = 0; i < pivot.size(); ++i) k |= (x >> pivot[i] & 1) << i;
  return k;
}

uint32_t WarpShufflePlan::src_lane(int r, uint32_t l, uint32_t w) const {
  return lane_base[r] ^ apply_bits(lane_map, l) ^ apply_bits(warp_lane, w);
}

uint32_t WarpShufflePlan::send_reg(int r, int k, uint32_t l, uint32_t w) const {
  return reg_base[r] ^ combine(recv_basis, uint32_t(k)) ^ apply_bits(send_map, l) ^ apply_bits(warp_reg, w);
}

int WarpShufflePlan::recv_index(uint32_t l) const { return int(decompose(recv_pivot, apply_bits(recv_map, l))); }

int WarpShufflePlan::num_shuffles() const {
  std::vector<std::pair<uint32_t, uint32_t>> made;  // (source lane base, sent register base)
  for (int r = 0; r < num_dst_regs; ++r) {
    if (local[r]) continue;
    for (int k = 0; k < shuffles_per_reg(); ++k) {
      std::pair<uint32_t, uint32_t> key{lane_base[r], reg_base[r] ^ combine(recv_basis, uint32_t(k))};
      if (std::find(made.begin(), made.end(), key) == made.end()) made.push_back(key);
    }
  }
  return int(made.size());
}

std::optional<WarpShufflePlan> warp_shuffle_plan(const Layout& src, const Layout& dst) {
  if (src.shape != dst.shape || src.lane.size() != dst.lane.size() || src.warp.size() != dst.warp.size())
    return std::nullopt;
  // What one warp holds under src, relative to its warp part: the span of the register
  // and lane images. dst's register and lane images must lie in it, and so must the
  // difference of the two warp parts, for each warp to find all it needs at home.
  F2Basis held;
  for (size_t i = 0; i < src.reg.size(); ++i) held.add(src.reg[i], uint64_t(1) << i);
  for (size_t i = 0; i < src.lane.size(); ++i) held.add(src.lane[i], uint64_t(1) << (kLaneTag + i));
  std::vector<uint64_t> dreg, dlane, dwarp;
  for (uint32_t img : dst.reg) {
    auto s = held.solve(img);
    if (!s) return std::nullopt;
    dreg.push_back(*s);
  }
  for (uint32_t img : dst.lane) {
    auto s = held.solve(img);
    if (!s) return std::nullopt;
    dlane.push_back(*s);
  }
  for (size_t k = 0; k < dst.warp.size(); ++k) {
    auto s = held.solve(dst.warp[k] ^ src.warp[k]);
    if (!s) return std::nullopt;
    dwarp.push_back(*s);
  }
  // Where src repeats elements (lanes or registers with zero or dependent images), the
  // solutions are not unique. Keep the lane map injective where the kernel allows: lanes
  // that read distinct source lanes can be served by one shuffle each, selected by the
  // sender; lanes that read the same one need a shuffle per register they want.
  F2Basis used;
  for (uint64_t& s : dlane) {
    if (!used.independent(tag_lanes(s)))
      for (uint64_t k : held.kernel)
        if (used.independent(tag_lanes(s ^ k))) {
          s ^= k;
          break;
        }
    used.add(tag_lanes(s), 0);
  }

  WarpShufflePlan p;
  int nl = int(dst.lane.size());
  p.num_dst_regs = dst.num_regs();
  for (uint64_t s : dlane) p.lane_map.push_back(tag_lanes(s));
  for (uint64_t s : dwarp) p.warp_lane.push_back(tag_lanes(s));
  // F: source lane -> register bits, the part of the source register the sender can
  // pick from its own lane id. Defined on the images of the lane map (where lane bit i
  // reads source lane lane_map[i], it wants register bits Rl[i]), zero elsewhere.
  F2Basis f;
  for (int i = 0; i < nl; ++i) f.add(p.lane_map[i], tag_regs(dlane[i]));
  for (int i = 0; i < nl; ++i) f.add(1u << i, 0);  // complete to the whole lane space
  for (int i = 0; i < nl; ++i) p.send_map.push_back(uint32_t(*f.solve(1u << i)));
  // G = Rl ^ F(lane_map): what the sender cannot know, left to the receiver.
  for (int i = 0; i < nl; ++i) p.recv_map.push_back(tag_regs(dlane[i]) ^ apply_bits(p.send_map, p.lane_map[i]));
  for (size_t k = 0; k < dwarp.size(); ++k)
    p.warp_reg.push_back(tag_regs(dwarp[k]) ^ apply_bits(p.send_map, p.warp_lane[k]));
  bool lanes_stay = std::all_of(p.warp_lane.begin(), p.warp_lane.end(), [](uint32_t x) { return x == 0; });
  for (int i = 0; i < nl; ++i) lanes_stay = lanes_stay && p.lane_map[i] == (1u << i);
  for (int r = 0; r < p.num_dst_regs; ++r) {
    uint32_t lr = 0, rr = 0;
    for (size_t j = 0; j < dreg.size(); ++j)
      if (r >> j & 1) lr ^= tag_lanes(dreg[j]), rr ^= tag_regs(dreg[j]);
    p.lane_base.push_back(lr);
    p.reg_base.push_back(rr ^ apply_bits(p.send_map, lr));
    p.local.push_back(lanes_stay && lr == 0);
  }
  std::vector<uint32_t> sent = p.send_map;
  sent.insert(sent.end(), p.warp_reg.begin(), p.warp_reg.end());
  reduced_echelon(sent, p.send_basis, p.send_pivot);
  reduced_echelon(p.recv_map, p.recv_basis, p.recv_pivot);
  return p;
}

bool crosses_warps(const Layout& src, const Layout& dst) { return !warp_shuffle_plan(src, dst); }

}  // namespace tl::gpu

namespace tl::gpu {

uint32_t LinearMap::apply(uint32_t x) const {
  uint32_t r = 0;
  for (size_t i = 0; i < image.size() && x; ++i, x >>= 1)
    if (x & 1) r ^= image[i];
  return r;
}

Layout compose(const LinearMap& after, const Layout& l, std::vector<int> out_shape) {
  Layout out;
  out.shape = std::move(out_shape);
  for (uint32_t b : l.reg) out.reg.push_back(after.apply(b));
  for (uint32_t b : l.lane) out.lane.push_back(after.apply(b));
  for (uint32_t b : l.warp) out.warp.push_back(after.apply(b));
  return out;
}

namespace {
// Hardware bits packed in one word for the elimination: registers, then lanes, then warps.
constexpr int kLaneShift = 32, kWarpShift = 48;
}  // namespace

void LayoutInverse::locate(uint32_t flat, uint32_t& r, uint32_t& l, uint32_t& w) const {
  r = l = w = 0;
  for (size_t k = 0; k < reg.size(); ++k)
    if (flat >> k & 1) r ^= reg[k], l ^= lane[k], w ^= warp[k];
}

std::optional<LayoutInverse> invert(const Layout& l) {
  int bits = log2_exact(std::max<int64_t>(1, l.numel()));
  // Gaussian elimination over F2: rows are (image, hardware bits). Registers come first,
  // so an element held in a register of the thread that owns it is found there.
  struct Row {
    uint32_t image;
    uint64_t hw;
  };
  std::vector<Row> rows;
  auto add = [&](uint32_t image, uint64_t hw) {
    for (const Row& b : rows) {
      uint32_t top = 1u << (31 - __builtin_clz(b.image));
      if (image & top) image ^= b.image, hw ^= b.hw;
    }
    if (!image) return;  // a copy of what earlier bits already reach
    rows.push_back({image, hw});
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.image > b.image; });
  };
  for (size_t i = 0; i < l.reg.size(); ++i) add(l.reg[i], uint64_t(1) << i);
  for (size_t i = 0; i < l.lane.size(); ++i) add(l.lane[i], uint64_t(1) << (kLaneShift + i));
  for (size_t i = 0; i < l.warp.size(); ++i) add(l.warp[i], uint64_t(1) << (kWarpShift + i));
  LayoutInverse inv;
  for (int k = 0; k < bits; ++k) {
    uint32_t image = 1u << k;
    uint64_t hw = 0;
    for (const Row& b : rows) {
      uint32_t top = 1u << (31 - __builtin_clz(b.image));
      if (image & top) image ^= b.image, hw ^= b.hw;
    }
    if (image) return std::nullopt;  // element bit k is reached by no combination
    inv.reg.push_back(uint32_t(hw & 0xffffffffu));
    inv.lane.push_back(uint32_t((hw >> kLaneShift) & 0xffffu));
    inv.warp.push_back(uint32_t(hw >> kWarpShift));
  }
  return inv;
}

LinearMap xor_swizzle(int rows, int cols, int vec_elems, int elem_bytes, int bank_bytes) {
  int col_bits = log2_exact(cols), row_bits = log2_exact(rows), vec_bits = log2_exact(vec_elems);
  int vectors_per_row = std::max(1, cols / vec_elems);
  // Rows narrower than one pass over the banks share a phase: per_phase rows at a time.
  int per_phase = std::max(1, bank_bytes / (cols * elem_bytes));
  // As many phases as a pass over the banks holds vectors, and no more than a row has.
  int max_phase = std::max(1, std::min(vectors_per_row, bank_bytes / (vec_elems * elem_bytes)));
  int phase_shift = log2_exact(per_phase), phase_bits = log2_exact(max_phase);
  LinearMap m;
  for (int b = 0; b < col_bits; ++b) m.image.push_back(1u << b);
  for (int j = 0; j < row_bits; ++j) {
    uint32_t img = 1u << (col_bits + j);
    int k = j - phase_shift;  // which phase bit this row bit is
    if (k >= 0 && k < phase_bits) img |= 1u << (vec_bits + k);
    m.image.push_back(img);
  }
  return m;
}

SharedTileLayout shared_tile_layout(const std::vector<int>& shape, int elem_bytes, int bank_bytes) {
  int64_t numel = 1;
  for (int d : shape) numel *= d;
  int cols = shape.empty() ? 1 : shape.back();
  SharedTileLayout s;
  s.vec = std::max(1, std::min(cols, 16 / std::max(1, elem_bytes)));
  s.offsets = xor_swizzle(int(numel / cols), cols, s.vec, elem_bytes, bank_bytes);
  return s;
}

ir::ConvertPath conversion_path(const Layout& src, const Layout& dst, bool in_loop) {
  if (register_only_conversion(src, dst)) return ir::ConvertPath::registers;
  // A shuffle costs about one shared-memory access (ds_bpermute goes through the LDS
  // crossbar, shfl through the shared-memory pipe); an all-to-all inside a warp (a 32x32
  // transpose held by one warp) needs a shuffle per (register, source register) pair and
  // stays in shared memory. In a loop, each source-lane offset a register adds to the
  // lane's own is one more address register that LLVM computes once, before the loop, and
  // keeps live throughout: a vector gathered into many registers there (a per-column scale
  // broadcast over an MFMA accumulator's 16 columns a lane: 16 shuffles from 16 lanes, 15
  // address VGPRs) costs them on top of its shuffles, where shared memory reads the
  // registers back a vector at a time from one address.
  if (auto plan = warp_shuffle_plan(src, dst)) {
    auto distinct = [](const Layout& l) { return l.num_regs() >> __builtin_popcount(l.duplicate_reg_mask()); };
    std::set<uint32_t> offsets;
    for (int r = 0; in_loop && r < plan->num_dst_regs; ++r)
      if (!plan->local[size_t(r)] && plan->lane_base[size_t(r)]) offsets.insert(plan->lane_base[size_t(r)]);
    if (plan->num_shuffles() + int(offsets.size()) <= distinct(src) + distinct(dst)) return ir::ConvertPath::warp_shuffle;
  }
  return ir::ConvertPath::shared;
}

}  // namespace tl::gpu

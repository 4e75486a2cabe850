// tl::reduce and tl::associative_scan on GPUs: the steps of lower_reduce.cpp's built-in
// reductions and scans, over N operands at once, with the op's combine region (the user's
// function, traced once) inlined at every combining point. Nothing here assumes an
// identity element or commutativity:
//  - a reduction folds a thread's registers, then the lanes along the axis (butterfly
//    shuffles, each pair combined as (lower lane, upper lane) on both sides, so the copies
//    stay bitwise equal), then the warps (partials through shared memory, folded by every
//    thread in warp order);
//  - a scan keeps operands in coordinate order everywhere (an associative combine need not
//    commute): in registers when a thread holds whole lines, else bit by bit of the axis
//    (lower_reduce.cpp's scan_by_bits, where a "no carry yet" flag stands in for the
//    identity a user's combine does not have), else Hillis-Steele through shared memory.
#include <llvm/IR/Constants.h>

#include <algorithm>
#include <bit>
#include <map>

#include "codegen/gpu/lower_context.hpp"

namespace tl::gpu {
namespace {

using Tuple = std::vector<llvm::Value*>;  // one value per operand
using CombineFn = std::function<Tuple(const Tuple&, const Tuple&)>;

Tuple select(llvm::IRBuilderBase& b, llvm::Value* c, const Tuple& x, const Tuple& y) {
  Tuple r(x.size());
  for (size_t k = 0; k < x.size(); ++k) r[k] = b.CreateSelect(c, x[k], y[k]);
  return r;
}

// Where each operand's part of a shared-memory exchange of `slots` elements starts, in
// bytes (each aligned to its element size), and the total.
struct SharedParts {
  std::vector<llvm::Type*> types;
  std::vector<unsigned> bytes;
  std::vector<int64_t> base;
  int64_t total = 0;
};
SharedParts shared_parts(Lowerer& L, const std::vector<DType>& dtypes, int64_t slots) {
  SharedParts p;
  for (DType d : dtypes) {
    llvm::Type* ty = L.reg_type(d);
    unsigned eb = unsigned(L.m_.getDataLayout().getTypeStoreSize(ty));
    p.total = (p.total + eb - 1) / eb * eb;
    p.types.push_back(ty);
    p.bytes.push_back(eb);
    p.base.push_back(p.total);
    p.total += slots * eb;
  }
  return p;
}

// Operand k's element at `slot` of the exchange.
llvm::Value* part_ptr(Lowerer& L, const SharedParts& p, size_t k, llvm::Value* slot) {
  auto& b = L.b;
  return L.smem_ptr(b.CreateAdd(b.CreateMul(slot, b.getInt32(p.bytes[k])), b.getInt32(uint32_t(p.base[k]))));
}

// lower_reduce.cpp's scan_by_bits over tuples (see there for the scheme). Returns false
// when the layout does not fit it.
bool scan_tuple_by_bits(Lowerer& L, const Layout& l, int axis, const std::vector<DType>& dtypes, const CombineFn& add,
                        std::vector<Tuple>& vals) {
  auto& b = L.b;
  int off = dim_offset(l.shape, axis);
  uint32_t n_axis = uint32_t(l.shape[axis]);
  // owner[k]: which hardware bit holds axis bit k (kind 0 register, 1 lane, 2 warp).
  const std::optional<std::vector<HardwareBit>> holders = dim_bit_holders(l, axis);
  if (!holders) return false;
  std::vector<std::pair<int, int>> owner;
  for (const HardwareBit& h : *holders) owner.push_back({int(h.kind), h.index});
  const int64_t numel = l.numel();
  SharedParts parts;
  for (size_t k = 0; k < owner.size(); ++k)
    if (owner[k].first == 2) {
      parts = shared_parts(L, dtypes, numel >> k);
      L.smem_check_scratch(parts.total);
      break;
    }
  std::vector<Tuple> P = vals, T = vals;
  // What the lane and warp levels add to every prefix of a block, with whether there is
  // anything yet (the lowest block of a level has nothing before it).
  struct Carry {
    Tuple v;
    llvm::Value* valid;
  };
  std::map<uint32_t, Carry> carry;
  uint32_t carry_mask = 0;
  auto flush = [&] {
    for (int r = 0; r < l.num_regs(); ++r)
      if (auto it = carry.find(l.reg_part(uint32_t(r)) & carry_mask); it != carry.end())
        P[size_t(r)] = select(b, it->second.valid, add(it->second.v, P[size_t(r)]), P[size_t(r)]);
    carry.clear();
  };
  for (size_t k = 0; k < owner.size(); ++k) {
    auto [kind, i] = owner[k];
    if (kind == 0) {
      flush();
      for (int r = 0; r < l.num_regs(); ++r) {
        if (r >> i & 1) continue;
        int hi = r | 1 << i;
        Tuple t = add(T[size_t(r)], T[size_t(hi)]);
        P[size_t(hi)] = add(T[size_t(r)], P[size_t(hi)]);
        T[size_t(r)] = T[size_t(hi)] = t;
      }
      continue;
    }
    auto block_of = [&](int r) { return l.reg_part(uint32_t(r)) & ~(((1u << k) - 1) << off); };
    llvm::Value* is_hi = kind == 1 ? b.CreateAnd(L.lane_id(), b.getInt32(1u << i))
                                   : b.CreateAnd(L.warp_id(), b.getInt32(1u << i));
    is_hi = b.CreateICmpNE(is_hi, b.getInt32(0));
    // The partner's total, and the joined block's: (lower block, upper block) on both sides.
    std::map<uint32_t, std::pair<Tuple, Tuple>> joined;
    auto join = [&](const Tuple& t, const Tuple& other) {
      return std::make_pair(other, add(select(b, is_hi, other, t), select(b, is_hi, t, other)));
    };
    if (kind == 1) {
      for (int r = 0; r < l.num_regs(); ++r)
        if (!joined.count(block_of(r))) {
          const Tuple& t = T[size_t(r)];
          Tuple other;
          for (llvm::Value* x : t) other.push_back(shuffle_any(L, x, 1 << i));
          joined[block_of(r)] = join(t, other);
        }
    } else {
      uint32_t blocks = n_axis >> k;
      auto slot_of = [&](llvm::Value* idx, bool partner) {
        llvm::Value* blk = b.CreateLShr(b.CreateAnd(b.CreateLShr(idx, uint64_t(off)), n_axis - 1), uint64_t(k));
        if (partner) blk = b.CreateXor(blk, 1);
        llvm::Value* low = b.CreateAnd(idx, b.getInt32((1u << off) - 1));
        llvm::Value* high = b.CreateLShr(idx, uint64_t(off + std::countr_zero(n_axis)));
        llvm::Value* rest = b.CreateOr(b.CreateShl(high, uint64_t(off)), low);
        return b.CreateAdd(b.CreateMul(rest, b.getInt32(blocks)), blk);
      };
      std::map<uint32_t, int> rep;
      for (int r = 0; r < l.num_regs(); ++r) rep.emplace(block_of(r), r);
      L.scratch_write_begins();
      std::map<uint32_t, llvm::Value*> idx;
      for (auto [blk, r] : rep) {
        idx[blk] = L.element_index(l, r);
        llvm::Value* slot = slot_of(idx[blk], false);
        for (size_t c = 0; c < dtypes.size(); ++c)
          L.smem_store(T[size_t(r)][c], part_ptr(L, parts, c, slot), parts.bytes[c]);
      }
      L.barrier();
      for (auto [blk, r] : rep) {
        llvm::Value* slot = slot_of(idx[blk], true);
        Tuple other;
        for (size_t c = 0; c < dtypes.size(); ++c)
          other.push_back(L.smem_load(parts.types[c], part_ptr(L, parts, c, slot), parts.bytes[c]));
        joined[blk] = join(T[size_t(r)], other);
      }
    }
    carry_mask = ~(((1u << k) - 1) << off);
    std::map<uint32_t, Carry> grown;
    for (auto& [blk, j] : joined) {
      const Carry* c = nullptr;
      for (auto& [old_blk, v] : carry)
        if ((old_blk & carry_mask) == blk) c = &v;
      if (!c) {
        grown[blk] = {j.first, is_hi};
        continue;
      }
      Tuple up = select(b, c->valid, add(j.first, c->v), j.first);
      grown[blk] = {select(b, is_hi, up, c->v), b.CreateOr(is_hi, c->valid)};
    }
    carry = std::move(grown);
    for (int r = 0; r < l.num_regs(); ++r) T[size_t(r)] = joined[block_of(r)].second;
  }
  flush();
  vals = P;
  return true;
}

}  // namespace

Values Lowerer::inline_combine(const ir::Block& region, const Values& lhs, const Values& rhs) {
  // The region computes scalars: lowered again at each combining point, its values are
  // rebound there, as a call inlined there would be.
  for (size_t i = 0; i < lhs.size(); ++i) {
    set_scalar(region.args[i].get(), lhs[i]);
    set_scalar(region.args[lhs.size() + i].get(), rhs[i]);
  }
  lower_block(region);
  Values out;
  for (const ir::Value* v : region.terminator()->operands) out.push_back(scalar(v));
  return out;
}

void Lowerer::lower_combine_reduce(const ir::Operation& op) {
  const size_t n = op.operands.size();
  const ir::Block& region = *op.regions[0];
  const int axis = int(op.i0);
  const CombineFn combine = [&](const Tuple& a, const Tuple& c) { return inline_combine(region, a, c); };
  const Layout in_l = preferred_layout(op.operands[0]);
  std::vector<Values> in;
  std::vector<DType> dtypes;
  for (const ir::Value* v : op.operands) in.push_back(get(v, in_l)), dtypes.push_back(v->type.dtype);
  const Layout out_l = reduce_layout(in_l, axis);
  const std::vector<int> kept = reduce_kept_reg_bits(in_l, axis);
  std::vector<int> along;
  for (size_t i = 0; i < in_l.reg.size(); ++i)
    if (along_axis(in_l, in_l.reg[i], axis)) along.push_back(int(i));
  // 1. within the thread
  std::vector<Tuple> acc;
  for (int j = 0; j < (1 << kept.size()); ++j) {
    int base = 0;
    for (size_t k = 0; k < kept.size(); ++k)
      if (j >> k & 1) base |= 1 << kept[k];
    Tuple a;
    for (int c = 0; c < (1 << along.size()); ++c) {
      int r = base;
      for (size_t k = 0; k < along.size(); ++k)
        if (c >> k & 1) r |= 1 << along[k];
      Tuple e;
      for (size_t k = 0; k < n; ++k) e.push_back(in[k][size_t(r)]);
      a = a.empty() ? e : combine(a, e);
    }
    acc.push_back(a);
  }
  // 2. across lanes: both lanes of a pair combine (lower lane's, upper lane's)
  for (size_t i = 0; i < in_l.lane.size(); ++i) {
    if (!along_axis(in_l, in_l.lane[i], axis)) continue;
    llvm::Value* is_hi = b.CreateICmpNE(b.CreateAnd(lane_id(), b.getInt32(1u << i)), b.getInt32(0));
    for (Tuple& a : acc) {
      Tuple o;
      for (llvm::Value* x : a) o.push_back(shuffle_any(*this, x, 1 << i));
      a = combine(select(b, is_hi, o, a), select(b, is_hi, a, o));
    }
  }
  // 3. across warps, through shared memory: every thread folds the partials in warp order
  std::vector<int> warp_bits;
  for (size_t i = 0; i < in_l.warp.size(); ++i)
    if (along_axis(in_l, in_l.warp[i], axis)) warp_bits.push_back(int(i));
  if (!warp_bits.empty()) {
    const int W = 1 << warp_bits.size();
    const int64_t n_out = std::max<int64_t>(1, out_l.numel());
    const SharedParts parts = shared_parts(*this, dtypes, W * n_out);
    smem_check_scratch(parts.total);
    llvm::Value* wk = nullptr;
    for (size_t k = 0; k < warp_bits.size(); ++k) {
      llvm::Value* bit = b.CreateAnd(b.CreateLShr(warp_id(), uint64_t(warp_bits[k])), 1);
      if (k) bit = b.CreateShl(bit, uint64_t(k));
      wk = wk ? b.CreateOr(wk, bit) : bit;
    }
    llvm::Value* slot_base = b.CreateMul(wk, b.getInt32(uint32_t(n_out)));
    scratch_write_begins();
    if_then(owner_predicate(out_l, /*ignore_warp_copies=*/true), [&] {
      for (size_t j = 0; j < acc.size(); ++j) {
        llvm::Value* slot = b.CreateAdd(slot_base, element_index(out_l, int(j)));
        for (size_t k = 0; k < n; ++k) smem_store(acc[j][k], part_ptr(*this, parts, k, slot), parts.bytes[k]);
      }
    });
    barrier();
    for (size_t j = 0; j < acc.size(); ++j) {
      Tuple a;
      for (int w = 0; w < W; ++w) {
        llvm::Value* slot = b.CreateAdd(element_index(out_l, int(j)), b.getInt32(uint32_t(w * n_out)));
        Tuple e;
        for (size_t k = 0; k < n; ++k)
          e.push_back(smem_load(parts.types[k], part_ptr(*this, parts, k, slot), parts.bytes[k]));
        a = a.empty() ? e : combine(a, e);
      }
      acc[j] = a;
    }
  }
  for (size_t k = 0; k < n; ++k) {
    Values out;
    for (Tuple& a : acc) out.push_back(a[k]);
    if (op.result(int(k))->type.is_scalar()) set_scalar(op.result(int(k)), out[0]);
    else set_natural(op.result(int(k)), Regs{out_l, std::move(out)});
  }
}

void Lowerer::lower_combine_scan(const ir::Operation& op) {
  const size_t n = op.operands.size();
  const ir::Block& region = *op.regions[0];
  const int axis = int(op.i0);
  const CombineFn combine = [&](const Tuple& a, const Tuple& c) { return inline_combine(region, a, c); };
  const Layout l = preferred_layout(op.operands[0]);
  std::vector<DType> dtypes;
  std::vector<Tuple> vals(size_t(l.num_regs()));
  for (const ir::Value* v : op.operands) {
    Values x = get(v, l);
    for (int r = 0; r < l.num_regs(); ++r) vals[size_t(r)].push_back(x[size_t(r)]);
    dtypes.push_back(v->type.dtype);
  }
  const int off = dim_offset(l.shape, axis);
  const uint32_t n_axis = uint32_t(l.shape[axis]);

  bool in_registers = true;
  for (uint32_t img : l.lane) in_registers &= !along_axis(l, img, axis);
  for (uint32_t img : l.warp) in_registers &= !along_axis(l, img, axis);
  if (in_registers) {
    // Each thread holds whole lines along the axis: a left fold per line, in order.
    std::map<uint32_t, std::vector<std::pair<uint32_t, int>>> lines;
    const uint32_t axis_mask = (n_axis - 1) << off;
    for (int r = 0; r < l.num_regs(); ++r) {
      uint32_t e = l.reg_part(uint32_t(r));
      lines[e & ~axis_mask].push_back({(e & axis_mask) >> off, r});
    }
    std::vector<Tuple> out(vals.size());
    for (auto& [rest, line] : lines) {
      std::stable_sort(line.begin(), line.end());
      Tuple run;
      uint32_t prev = ~0u;
      for (auto& [c, r] : line) {
        if (c == prev) {  // a duplicate register
          out[size_t(r)] = run;
          continue;
        }
        run = run.empty() ? vals[size_t(r)] : combine(run, vals[size_t(r)]);
        out[size_t(r)] = run;
        prev = c;
      }
    }
    vals = out;
  } else if (!scan_tuple_by_bits(*this, l, axis, dtypes, combine, vals)) {
    // Hillis-Steele: step d combines the element d before (earlier, on the left) with
    // this one, through two shared-memory copies of the tile.
    const int64_t numel = l.numel();
    const SharedParts parts = shared_parts(*this, dtypes, 2 * numel);
    smem_check_scratch(parts.total);
    auto store_all = [&](int64_t half) {
      for (size_t k = 0; k < n; ++k) {
        Values x;
        for (const Tuple& t : vals) x.push_back(t[k]);
        smem_store_tile(x, l, parts.types[k], parts.base[k] / parts.bytes[k] + half * numel);
      }
    };
    scratch_write_begins();
    store_all(0);
    barrier();
    int cur = 0;
    for (uint32_t d = 1; d < n_axis; d <<= 1) {
      std::vector<Tuple> next(vals.size());
      for (int r = 0; r < l.num_regs(); ++r) {
        llvm::Value* idx = element_index(l, r);
        llvm::Value* c = b.CreateAnd(b.CreateLShr(idx, uint64_t(off)), n_axis - 1);
        llvm::Value* has = b.CreateICmpUGE(c, b.getInt32(d));
        llvm::Value* from = b.CreateSelect(has, b.CreateSub(idx, b.getInt32(d << off)), idx);
        llvm::Value* slot = b.CreateAdd(from, b.getInt32(uint32_t(cur * numel)));
        Tuple x;
        for (size_t k = 0; k < n; ++k) x.push_back(smem_load(parts.types[k], part_ptr(*this, parts, k, slot), parts.bytes[k]));
        next[size_t(r)] = select(b, has, combine(x, vals[size_t(r)]), vals[size_t(r)]);
      }
      vals = next;
      cur = 1 - cur;
      store_all(cur);
      barrier();
    }
  }
  for (size_t k = 0; k < n; ++k) {
    Values out;
    for (Tuple& t : vals) out.push_back(t[k]);
    set_natural(op.result(int(k)), Regs{l, std::move(out)});
  }
}

}  // namespace tl::gpu

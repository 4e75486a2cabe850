// Axis analysis (see axis_analysis.hpp). One forward walk over the function: tile IR
// is SSA with structured regions, so every operand is known before its user; loop-
// carried values start conservative (no fixed point is needed for what the GPU
// lowering asks: addresses are built from arguments, program ids and aranges).
#include "codegen/passes/axis_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace tl::passes {
namespace {

constexpr int64_t kMaxDivisibility = int64_t(1) << 30;

int64_t pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  int64_t d = 1;
  while (d < kMaxDivisibility && v % (d * 2) == 0) d *= 2;
  return d;
}

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }

int dims(const ir::Value* v) { return std::max(1, v->type.rank()); }
int64_t extent(const ir::Value* v, int d) { return v->type.is_scalar() ? 1 : v->type.shape[d]; }

AxisInfo conservative(const ir::Value* v) {
  int n = dims(v);
  return AxisInfo{std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), {}};
}

// Every element the same value: constancy is the whole extent.
AxisInfo uniform(const ir::Value* v, int64_t divisibility, std::optional<int64_t> value) {
  int n = dims(v);
  AxisInfo a{std::vector<int64_t>(n, 1), std::vector<int64_t>(n, divisibility), {}, value};
  for (int d = 0; d < n; ++d) a.constancy.push_back(extent(v, d));
  return a;
}

bool is_unit(const AxisInfo& a) { return a.constant && *a.constant == 1; }

}  // namespace

std::string AxisInfo::str() const {
  return fmt::format("contiguity=[{}] divisibility=[{}] constancy=[{}]", fmt::join(contiguity, ","),
                     fmt::join(divisibility, ","), fmt::join(constancy, ","));
}

AxisAnalysis::AxisAnalysis(const ir::Function& f) : f_(f) {
  for (size_t i = 0; i < f.body.args.size(); ++i) {
    const ir::Value* a = f.body.args[i].get();
    bool div16 = i < f.arg_info.size() && f.arg_info[i].divisible_by_16;
    int64_t div = 1;
    if (a->type.is_ptr()) div = div16 ? 16 : byte_width(a->type.pointee);  // pointers are element-aligned
    else if (is_int(a->type.dtype)) div = div16 ? 16 : 1;
    set(a, uniform(a, div, std::nullopt));
  }
  block(f.body);
}

const AxisInfo& AxisAnalysis::get(const ir::Value* v) const {
  auto it = info_.find(v);
  if (it != info_.end()) return it->second;
  static thread_local AxisInfo none;
  none = conservative(v);
  return none;
}

AxisInfo& AxisAnalysis::set(const ir::Value* v, AxisInfo info) {
  for (size_t d = 0; d < info.contiguity.size(); ++d) {
    int64_t e = extent(v, int(d));
    info.contiguity[d] = std::clamp<int64_t>(info.contiguity[d], 1, e);
    info.constancy[d] = std::clamp<int64_t>(info.constancy[d], 1, e);
    info.divisibility[d] = std::clamp<int64_t>(info.divisibility[d], 1, kMaxDivisibility);
  }
  return info_[v] = std::move(info);
}

void AxisAnalysis::block(const ir::Block& b) {
  for (auto& a : b.args)
    if (!info_.count(a.get())) set(a.get(), conservative(a.get()));
  for (auto& o : b.ops) op(*o);
}

void AxisAnalysis::op(const ir::Operation& o) {
  if (o.op == Op::for_) {
    // iv: lb + k*step; carried values: unknown
    const ir::Block& body = *o.regions[0];
    const AxisInfo& lb = get(o.operands[0]);
    const AxisInfo& step = get(o.operands[2]);
    set(body.args[0].get(), uniform(body.args[0].get(), gcd(lb.divisibility[0], step.divisibility[0]), std::nullopt));
    block(body);
    for (auto& r : o.results) set(r.get(), conservative(r.get()));
    return;
  }
  if (o.op == Op::if_) {
    for (auto& r : o.regions) block(*r);
    const ir::Operation* yt = o.regions[0]->terminator();
    const ir::Operation* ye = o.regions[1]->terminator();
    for (size_t i = 0; i < o.results.size(); ++i) {
      const AxisInfo& a = get(yt->operands[i]);
      const AxisInfo& b = get(ye->operands[i]);
      AxisInfo r = conservative(o.result(int(i)));
      for (size_t d = 0; d < r.contiguity.size(); ++d) {
        r.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
        r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      }
      set(o.result(int(i)), r);
    }
    return;
  }
  for (auto& r : o.regions) block(*r);
  if (o.results.empty()) return;
  const ir::Value* res = o.result();
  int n = dims(res);
  auto opnd = [&](int i) -> const AxisInfo& { return get(o.operands[i]); };
  AxisInfo r = conservative(res);
  switch (o.op) {
    case Op::constant: {
      int64_t v = is_float(res->type.dtype) ? 0 : o.i0;
      r = uniform(res, is_float(res->type.dtype) ? 1 : pow2_divisor(v), is_float(res->type.dtype) ? std::nullopt : std::optional<int64_t>(v));
      break;
    }
    case Op::arange:
      r.contiguity[0] = o.i1 - o.i0;
      r.divisibility[0] = pow2_divisor(o.i0);
      break;
    case Op::splat:
      r = uniform(res, opnd(0).divisibility[0], opnd(0).constant);
      break;
    case Op::broadcast: {
      const AxisInfo& a = opnd(0);
      for (int d = 0; d < n; ++d) {
        bool bcast = o.operands[0]->type.shape[d] == 1 && res->type.shape[d] != 1;
        r.contiguity[d] = bcast ? 1 : a.contiguity[d];
        r.divisibility[d] = a.divisibility[d];
        r.constancy[d] = bcast ? res->type.shape[d] : a.constancy[d];
      }
      r.constant = a.constant;
      break;
    }
    case Op::reshape: case Op::expand_dims: {
      // Only size-1 dims inserted or removed keeps per-dim facts; anything else is
      // conservative (the divisibility every element shares still holds).
      const auto& s = o.operands[0]->type.shape;
      const auto& t = res->type.shape;
      std::vector<int> sd, td;
      for (int d = 0; d < int(s.size()); ++d) if (s[d] != 1) sd.push_back(d);
      for (int d = 0; d < int(t.size()); ++d) if (t[d] != 1) td.push_back(d);
      const AxisInfo& a = opnd(0);
      int64_t all_div = kMaxDivisibility;
      for (int64_t x : a.divisibility) all_div = gcd(all_div, x);
      bool same = sd.size() == td.size();
      for (size_t k = 0; same && k < sd.size(); ++k) same = s[sd[k]] == t[td[k]];
      for (int d = 0; d < n; ++d) r.divisibility[d] = all_div;
      if (same)
        for (size_t k = 0; k < td.size(); ++k) {
          r.contiguity[td[k]] = a.contiguity[sd[k]];
          r.divisibility[td[k]] = a.divisibility[sd[k]];
          r.constancy[td[k]] = a.constancy[sd[k]];
        }
      r.constant = a.constant;
      break;
    }
    case Op::trans: {
      const AxisInfo& a = opnd(0);
      for (int d = 0; d < n; ++d) {
        r.contiguity[d] = a.contiguity[o.ints[d]];
        r.divisibility[d] = a.divisibility[o.ints[d]];
        r.constancy[d] = a.constancy[o.ints[d]];
      }
      r.constant = a.constant;
      break;
    }
    case Op::add: case Op::sub: case Op::addptr: {
      if (!is_int(res->type.dtype) && !res->type.is_ptr()) break;
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      int64_t scale = o.op == Op::addptr ? byte_width(res->type.pointee) : 1;
      for (int d = 0; d < n; ++d) {
        int64_t c1 = gcd(a.contiguity[d], b.constancy[d]);
        int64_t c2 = o.op == Op::sub ? 1 : gcd(a.constancy[d], b.contiguity[d]);
        r.contiguity[d] = std::max(c1, c2);
        r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d] * scale);
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      }
      if (a.constant && b.constant && o.op != Op::addptr)
        r.constant = o.op == Op::add ? *a.constant + *b.constant : *a.constant - *b.constant;
      break;
    }
    case Op::mul: case Op::shl: {
      if (!is_int(res->type.dtype)) break;
      const AxisInfo& a = opnd(0);
      AxisInfo b = opnd(1);
      if (o.op == Op::shl) {  // x << k is x * 2^k when k is known
        if (!b.constant || *b.constant < 0 || *b.constant > 30) break;
        int64_t m = int64_t(1) << *b.constant;
        b.constant = m;
        std::fill(b.divisibility.begin(), b.divisibility.end(), m);
      }
      for (int d = 0; d < n; ++d) {
        r.contiguity[d] = is_unit(b) ? a.contiguity[d] : is_unit(a) ? b.contiguity[d] : 1;
        r.divisibility[d] = std::min(kMaxDivisibility, a.divisibility[d] * b.divisibility[d]);
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      }
      if (a.constant && b.constant) r.constant = *a.constant * *b.constant;
      break;
    }
    case Op::div: case Op::shr: {
      if (!is_int(res->type.dtype)) break;
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      std::optional<int64_t> c = b.constant;
      if (o.op == Op::shr && c) c = (*c >= 0 && *c <= 30) ? std::optional<int64_t>(int64_t(1) << *c) : std::nullopt;
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        // a contiguous run divided by c: runs of c equal values when runs start at multiples of c
        if (c && *c > 0 && (*c & (*c - 1)) == 0 && a.divisibility[d] % *c == 0)
          r.constancy[d] = std::max(r.constancy[d], gcd(a.contiguity[d], *c));
        if (c && *c > 0 && (*c & (*c - 1)) == 0) r.divisibility[d] = std::max<int64_t>(1, a.divisibility[d] / *c);
      }
      if (a.constant && c && *c != 0) r.constant = *a.constant / *c;
      break;
    }
    case Op::rem: {
      if (!is_int(res->type.dtype)) break;
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        if (b.constant && *b.constant > 0 && (*b.constant & (*b.constant - 1)) == 0) {
          r.contiguity[d] = gcd(a.contiguity[d], *b.constant);
          r.divisibility[d] = gcd(a.divisibility[d], *b.constant);
        }
      }
      break;
    }
    case Op::cmp: {
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      auto p = CmpPred(o.i0);
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        // arange < n: constant over aligned runs where both sides share the alignment
        if ((p == CmpPred::lt || p == CmpPred::ge) && b.constancy[d] >= extent(res, d) && a.contiguity[d] > 1)
          r.constancy[d] = std::max(r.constancy[d], gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])));
        if ((p == CmpPred::gt || p == CmpPred::le) && a.constancy[d] >= extent(res, d) && b.contiguity[d] > 1)
          r.constancy[d] = std::max(r.constancy[d], gcd(b.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])));
      }
      break;
    }
    case Op::select: {
      const AxisInfo& c = opnd(0);
      const AxisInfo& a = opnd(1);
      const AxisInfo& b = opnd(2);
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(c.constancy[d], gcd(a.constancy[d], b.constancy[d]));
        r.contiguity[d] = gcd(c.constancy[d], std::min(a.contiguity[d], b.contiguity[d]));
        r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
      }
      break;
    }
    case Op::cast: {
      const AxisInfo& a = opnd(0);
      for (int d = 0; d < n; ++d) r.constancy[d] = a.constancy[d];
      if (is_int(res->type.dtype) && is_int(o.operands[0]->type.dtype) &&
          bit_width(res->type.dtype) >= bit_width(o.operands[0]->type.dtype)) {
        r.contiguity = a.contiguity;
        r.divisibility = a.divisibility;
        r.constant = a.constant;
      }
      break;
    }
    case Op::band: case Op::bor: case Op::bxor: case Op::min: case Op::max: case Op::neg: case Op::bnot:
    case Op::abs: case Op::bitcast: {
      for (int d = 0; d < n; ++d) {
        int64_t c = opnd(0).constancy[d];
        for (size_t i = 1; i < o.operands.size(); ++i) c = gcd(c, opnd(int(i)).constancy[d]);
        r.constancy[d] = c;
      }
      break;
    }
    default:
      break;
  }
  set(res, std::move(r));
  for (size_t i = 1; i < o.results.size(); ++i) set(o.result(int(i)), conservative(o.result(int(i))));
}

int AxisAnalysis::vector_width(const ir::Value* ptr, int dim, int max_bytes) const {
  const AxisInfo& a = get(ptr);
  int eb = byte_width(ptr->type.pointee);
  int64_t align_elems = std::max<int64_t>(1, a.divisibility[dim] / eb);
  int64_t w = std::min<int64_t>({a.contiguity[dim], align_elems, std::max(1, max_bytes / eb)});
  int v = 1;
  while (v * 2 <= w) v *= 2;
  return v;
}

int64_t AxisAnalysis::mask_constancy(const ir::Value* mask, int dim) const { return get(mask).constancy[dim]; }

}  // namespace tl::passes

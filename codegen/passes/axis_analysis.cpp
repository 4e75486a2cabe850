// Axis analysis (see axis_analysis.hpp). A forward walk over the function: tile IR is
// SSA with structured regions, so outside loops every operand is known before its user.
// Loops need a fixed point: a loop-carried value (a block argument of the `for` body
// after the induction variable) is its init in the first iteration and the previous
// iteration's yield afterwards, and that yield is computed from the argument itself.
// Triton's K-loop idiom is exactly this: a pointer tile carried through the loop and
// advanced with `p += BLOCK`; without facts about it, every load through it is scalar.
// So the arguments start optimistic, as their inits' facts, the body is analysed, each
// argument is met with its yield (the facts both satisfy), and that repeats until
// nothing changes. It terminates because the meet only lowers facts (gcds shrink, a
// constant is dropped, ranges grow and are widened to unknown after a few rounds).
// Every round recomputes every body value from the arguments' current facts, so facts
// from an earlier, more optimistic round never survive; a nested loop runs its own
// fixed point inside each round of the outer one.
#include "codegen/passes/axis_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
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

// The divisibility of x's elements at the starts of runs of `run` elements along d
// (run a power of two). Divisibility speaks of the first element of each of x's
// contiguity runs; a result whose runs are shorter than x's starts runs inside x's,
// at x's run start + k*run, where only gcd(divisibility, run) is known. Triton treats
// a contiguous [2^n, 2^n+1, ...] as divisibility 1 for the same reason.
int64_t divisibility_at(const AxisInfo& x, int d, int64_t run) {
  return run % x.contiguity[d] == 0 ? x.divisibility[d] : gcd(x.divisibility[d], run);
}

// The dtype's value of an exact integer: integer arithmetic wraps (two's complement) on
// every target, and folding a constant must wrap the same way (in int64 it would be
// undefined behaviour in the compiler itself).
int64_t wrap_to(DType t, __int128 v) {
  int w = t == DType::i1 ? 1 : bit_width(t);
  uint64_t bits = uint64_t(v);
  if (w >= 64) return int64_t(bits);
  bits &= (uint64_t(1) << w) - 1;
  if (is_signed(t) && (bits >> (w - 1)) & 1) bits |= ~((uint64_t(1) << w) - 1);
  return int64_t(bits);
}

// --- value ranges ---
// Ranges are int64 intervals; the arithmetic on them is done in __int128 so that it
// cannot overflow itself. A result outside the dtype's range (a wrap at run time)
// becomes unknown, except for signed add/sub/mul: integer arithmetic wraps on every
// target (docs/language.md), but like Triton's, this analysis assumes that the index
// arithmetic it reasons about (offsets and masks of memory accesses) does not wrap, so
// the interval is clipped to the dtype. That is what makes `program_id(0) * BLOCK +
// arange(0, BLOCK)` a non-negative i32, while `program_id(0) * cols` with a run-time
// `cols` stays unknown. Contiguity rests on the same assumption: `arange + INT_MAX`
// is contiguous only where it does not wrap.
using i128 = __int128;

bool has_range(DType t) { return is_int(t) && t != DType::u64; }

// The dtype's full range: what "unknown" means for it.
ValueRange bounds(DType t) {
  if (!has_range(t) || t == DType::i64) return ValueRange{};
  if (t == DType::i1) return {0, 1};
  int w = bit_width(t);
  if (is_unsigned(t)) return {0, (int64_t(1) << w) - 1};
  return {-(int64_t(1) << (w - 1)), (int64_t(1) << (w - 1)) - 1};
}

ValueRange fit(i128 lo, i128 hi, DType t) {
  ValueRange b = bounds(t);
  if (lo > hi || lo < b.lo || hi > b.hi) return b;
  return {int64_t(lo), int64_t(hi)};
}

// add/sub/mul: clipped to a signed dtype (see above), unknown when wrapping an unsigned one.
ValueRange fit_arith(i128 lo, i128 hi, DType t) {
  ValueRange b = bounds(t);
  if (!is_signed(t) || lo > b.hi || hi < b.lo) return fit(lo, hi, t);  // (nothing in range: every run overflows)
  return fit(std::max<i128>(lo, b.lo), std::min<i128>(hi, b.hi), t);
}

bool nonnegative(const ValueRange& r) { return r.lo >= 0; }

// Every value in r (of dtype `from`) is a value of `to`. u64 has no range: its values
// fit only u64; any unsigned or non-negative value fits u64.
bool fits(const ValueRange& r, DType from, DType to) {
  if (from == to) return true;
  if (from == DType::u64) return false;
  if (to == DType::u64) return !is_signed(from) || nonnegative(r);
  ValueRange b = bounds(to);
  return r.lo >= b.lo && r.hi <= b.hi;
}

// The smallest 2^k - 1 >= v (v >= 0): a bound of x | y and x ^ y for x, y in [0, v].
int64_t all_ones_above(int64_t v) {
  int64_t m = 0;
  while (m < v) m = m * 2 + 1;
  return m;
}

// Facts that hold for a value that is either `a` or `b`: a branch's two yields, a
// loop-carried value's init and yield.
AxisInfo meet(const AxisInfo& a, const AxisInfo& b) {
  AxisInfo r = a;
  for (size_t d = 0; d < r.contiguity.size(); ++d) {
    r.contiguity[d] = gcd(a.contiguity[d], b.contiguity[d]);
    r.divisibility[d] = gcd(a.divisibility[d], b.divisibility[d]);
    r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
  }
  if (a.constant != b.constant) r.constant.reset();
  r.range = {std::min(a.range.lo, b.range.lo), std::max(a.range.hi, b.range.hi)};
  return r;
}

}  // namespace

std::string AxisInfo::str() const {
  std::string r = range == ValueRange{} ? "?" : fmt::format("[{},{}]", range.lo, range.hi);
  return fmt::format("contiguity=[{}] divisibility=[{}] constancy=[{}] range={}", fmt::join(contiguity, ","),
                     fmt::join(divisibility, ","), fmt::join(constancy, ","), r);
}

AxisAnalysis::AxisAnalysis(const ir::Function& f) : f_(f) {
  collect_assumptions(f.body);
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
  // What tl::assume promises about v holds wherever v is used (collect_assumptions).
  if (auto it = assumed_.find(v); it != assumed_.end()) {
    const Assumed& a = it->second;
    const ValueRange all = bounds(v->type.dtype);  // (unknown may be int64's whole range)
    info.range = {std::max({info.range.lo, a.range.lo, all.lo}), std::min({info.range.hi, a.range.hi, all.hi})};
    for (auto& d : info.divisibility) d = std::max(d, a.divisibility);
    if (a.constant) info.constant = a.constant;
  }
  for (size_t d = 0; d < info.contiguity.size(); ++d) {
    int64_t e = extent(v, int(d));
    info.contiguity[d] = std::clamp<int64_t>(info.contiguity[d], 1, e);
    info.constancy[d] = std::clamp<int64_t>(info.constancy[d], 1, e);
    info.divisibility[d] = std::clamp<int64_t>(info.divisibility[d], 1, kMaxDivisibility);
  }
  // A rule never claims more than the dtype can hold (and non-integers have no range).
  info.range = fit(info.range.lo, info.range.hi, v->type.dtype);
  return info_[v] = std::move(info);
}

void AxisAnalysis::block(const ir::Block& b) {
  for (auto& a : b.args)
    if (!info_.count(a.get())) set(a.get(), conservative(a.get()));
  for (auto& o : b.ops) op(*o);
}

void AxisAnalysis::op(const ir::Operation& o) {
  if (o.op == Op::for_) return loop(o);
  if (o.op == Op::while_) return while_loop(o);
  if (o.op == Op::if_) {
    for (auto& r : o.regions) block(*r);
    const ir::Operation* yt = o.regions[0]->terminator();
    const ir::Operation* ye = o.regions[1]->terminator();
    for (size_t i = 0; i < o.results.size(); ++i) set(o.result(int(i)), meet(get(yt->operands[i]), get(ye->operands[i])));
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
      int64_t v = is_float(res->type.dtype) ? 0 : wrap_to(res->type.dtype, o.i0);  // (u32 -1 is 4294967295)
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
    case Op::convert_layout:  // the same elements at the same indices, held by other threads: every fact holds
      r = opnd(0);
      break;
    case Op::hint: {
      // tl::multiple_of / max_contiguous / max_constancy: the user's fact is taken as
      // given (Triton's AxisInfo does too), on top of what the operand already has. Kept
      // as the largest power of two dividing it: runs of 6 aligned at multiples of 6
      // contain aligned runs of 2, not of 4. Raising contiguity keeps divisibility true:
      // the starts of the longer runs are among the starts of the shorter ones.
      r = opnd(0);
      for (int d = 0; d < n && d < int(o.ints.size()); ++d) {
        int64_t k = pow2_divisor(o.ints[size_t(d)]);
        switch (HintKind(o.i0)) {
          case HintKind::multiple_of: r.divisibility[d] = std::max(r.divisibility[d], k); break;
          case HintKind::max_contiguous: r.contiguity[d] = std::max(r.contiguity[d], k); break;
          case HintKind::max_constancy: r.constancy[d] = std::max(r.constancy[d], k); break;
        }
      }
      break;
    }
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
      // What every element is a multiple of: along a dim of runs, only the run starts
      // are known to be multiples of its divisibility.
      int64_t all_div = kMaxDivisibility;
      for (int d = 0; d < int(a.divisibility.size()); ++d) all_div = gcd(all_div, divisibility_at(a, d, 1));
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
        // Within a run of one operand's contiguity where the other is constant, the sum
        // steps by one (sub: only the left may be the contiguous one).
        int64_t c1 = gcd(a.contiguity[d], b.constancy[d]);
        int64_t c2 = o.op == Op::sub ? 1 : gcd(a.constancy[d], b.contiguity[d]);
        int64_t run = r.contiguity[d] = std::max(c1, c2);
        // A sum (difference) of multiples of 2^k is one: at the result's run starts.
        r.divisibility[d] = gcd(divisibility_at(a, d, run), divisibility_at(b, d, run) * scale);
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      }
      if (a.constant && b.constant && o.op != Op::addptr)
        r.constant = wrap_to(res->type.dtype, o.op == Op::add ? i128(*a.constant) + *b.constant
                                                              : i128(*a.constant) - *b.constant);
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
        int64_t run = r.contiguity[d] = is_unit(b) ? a.contiguity[d] : is_unit(a) ? b.contiguity[d] : 1;
        // A product of multiples of 2^j and 2^k is a multiple of 2^(j+k), wrapped or not.
        r.divisibility[d] = std::min(kMaxDivisibility, divisibility_at(a, d, run) * divisibility_at(b, d, run));
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
      }
      if (a.constant && b.constant) r.constant = wrap_to(res->type.dtype, i128(*a.constant) * *b.constant);
      break;
    }
    case Op::div: case Op::shr: {
      if (!is_int(res->type.dtype)) break;
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      std::optional<int64_t> c = b.constant;
      if (o.op == Op::shr && c) c = (*c >= 0 && *c <= 30) ? std::optional<int64_t>(int64_t(1) << *c) : std::nullopt;
      bool pow2 = c && *c > 0 && (*c & (*c - 1)) == 0;
      // x >> k rounds toward -inf and x / c toward zero: runs [m*c, m*c + c) of x give
      // one quotient each for every sign with >>, only for x >= 0 with / (-7..-4 all
      // divide by 4 to -1, across the run boundary at -8, -4).
      bool rounds_down = o.op == Op::shr || get(o.operands[0]).range.lo >= 0;
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        // a contiguous run divided by c: runs of c equal values when runs start at multiples of c
        if (pow2 && rounds_down && a.divisibility[d] % *c == 0)
          r.constancy[d] = std::max(r.constancy[d], gcd(a.contiguity[d], *c));
        // Exact division of a multiple of c*2^k (any sign) is a multiple of 2^k; the
        // result has no contiguity, so the facts of every element count.
        int64_t every = divisibility_at(a, d, 1);
        if (pow2 && every % *c == 0) r.divisibility[d] = every / *c;
      }
      if (a.constant && c && *c != 0)
        r.constant = o.op != Op::shr ? *a.constant / *c
                     : is_signed(res->type.dtype) ? *a.constant >> std::countr_zero(uint64_t(*c))
                                                  : int64_t(uint64_t(*a.constant) >> std::countr_zero(uint64_t(*c)));
      break;
    }
    case Op::rem: {
      if (!is_int(res->type.dtype)) break;
      const AxisInfo& a = opnd(0);
      const AxisInfo& b = opnd(1);
      bool pow2 = b.constant && *b.constant > 0 && (*b.constant & (*b.constant - 1)) == 0;
      for (int d = 0; d < n; ++d) {
        r.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        if (!pow2) {
          // x % N, N the same along d and a multiple of 2^k (a run-time size, Triton's
          // tutorial `(pid_n * BLOCK_N + arange(0, BLOCK_N)) % N`), x >= 0: x % N is
          // x % |N|, and no multiple of |N| falls inside a run of x that starts at a
          // multiple of r = min(contiguity, run-start divisibility, 2^k) and is r long, so
          // those runs stay contiguous. This takes N != 0 (x % 0 is 0, constant): like
          // wrapping (see above), dividing an offset or a mask by zero is left undefined
          // (docs/language.md), which is what lets a run-time N count.
          if (get(o.operands[0]).range.lo < 0 || b.constancy[d] < extent(res, d)) continue;
          int64_t run = std::min({a.contiguity[d], divisibility_at(a, d, a.contiguity[d]), b.divisibility[d]});
          if (run <= 1) continue;
          r.contiguity[d] = run;
          r.divisibility[d] = gcd(divisibility_at(a, d, run), b.divisibility[d]);
          continue;
        }
        int64_t c = *b.constant;
        // x % c for x >= 0 whose runs start at multiples of c restarts at 0 every c
        // elements: contiguous over aligned runs of gcd(contiguity, c). A negative x
        // gives 0, -3, -2, -1 from -8: no such runs.
        int64_t run = 1;
        if (get(o.operands[0]).range.lo >= 0 && a.divisibility[d] % c == 0) run = gcd(a.contiguity[d], c);
        r.contiguity[d] = run;
        // x - c*q is a multiple of gcd(2^k, c) when x is a multiple of 2^k, any sign.
        r.divisibility[d] = gcd(divisibility_at(a, d, run), c);
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
        int64_t run = r.contiguity[d] = gcd(c.constancy[d], std::min(a.contiguity[d], b.contiguity[d]));
        r.divisibility[d] = gcd(divisibility_at(a, d, run), divisibility_at(b, d, run));
      }
      break;
    }
    case Op::cast: {
      const AxisInfo& a = opnd(0);
      DType from = o.operands[0]->type.dtype, to = res->type.dtype;
      for (int d = 0; d < n; ++d) r.constancy[d] = a.constancy[d];
      if (from == DType::ptr || to == DType::ptr) {
        // int-to-pointer, pointer-to-int (64-bit: the same number) and pointer to pointer:
        // the address keeps its divisibility (both count bytes), but a pointer's
        // contiguity counts elements where an integer's counts ones.
        const int from_step = from == DType::ptr ? byte_width(o.operands[0]->type.pointee) : 1;
        const int to_step = to == DType::ptr ? byte_width(res->type.pointee) : 1;
        r.divisibility = a.divisibility;
        if (from_step == to_step) r.contiguity = a.contiguity;
        break;
      }
      if (!is_int(to) || !is_int(from) || from == DType::i1 || to == DType::i1) break;
      // Extension and truncation keep the low bits, so a multiple of 2^k stays one
      // (a multiple of 2^width truncates to 0, a multiple of anything). Values, and so
      // contiguity and the constant, survive only where every value fits the result:
      // -1, 0 cast to u32 is 4294967295, 0.
      if (fits(get(o.operands[0]).range, from, to)) {
        r.contiguity = a.contiguity;
        r.divisibility = a.divisibility;
        r.constant = a.constant;
      } else {
        for (int d = 0; d < n; ++d) r.divisibility[d] = divisibility_at(a, d, 1);
        if (a.constant) r.constant = wrap_to(to, *a.constant);
      }
      break;
    }
    case Op::load:
      // A pointer loaded from memory is element-aligned, like a pointer argument.
      if (res->type.is_ptr())
        for (int d = 0; d < n; ++d) r.divisibility[d] = byte_width(res->type.pointee);
      break;
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
  r.range = range_of(o);
  set(res, std::move(r));
  for (size_t i = 1; i < o.results.size(); ++i) set(o.result(int(i)), conservative(o.result(int(i))));
}

// Rounds after which a loop-carried range that still grows is widened to unknown: a
// counter advanced by a constant would otherwise take as many rounds as it has values.
constexpr int kWidenAfter = 3;

// A loop-carried argument's facts joined with what the back edge brings (`yielded`), in
// round `round` of its loop's fixpoint; whether they changed. A range still growing after
// kWidenAfter rounds is widened to the dtype's.
bool AxisAnalysis::join_back_edge(const ir::Value* arg, const ir::Value* yielded, int round) {
  const AxisInfo& old = get(arg);
  AxisInfo m = meet(old, get(yielded));
  if (round >= kWidenAfter) {
    ValueRange all = bounds(arg->type.dtype);
    if (m.range.lo < old.range.lo) m.range.lo = all.lo;
    if (m.range.hi > old.range.hi) m.range.hi = all.hi;
  }
  if (m == old) return false;
  set(arg, std::move(m));
  return true;
}

void AxisAnalysis::loop(const ir::Operation& o) {
  const ir::Block& body = *o.regions[0];
  const ir::Operation* yield = body.terminator();
  const ir::Value* iv = body.args[0].get();
  const AxisInfo lb = get(o.operands[0]), ub = get(o.operands[1]), step = get(o.operands[2]);
  // iv = lb + k*step, and the body runs only while iv is between lb and ub: lb <= iv <
  // ub for a positive step, ub < iv <= lb for a negative one (docs/language.md), so
  // whatever the step's sign, iv is in [min(lb, ub + 1), max(lb, ub - 1)]. (The lowering
  // counts trips, so iv itself never wraps.)
  AxisInfo ivi = uniform(iv, gcd(lb.divisibility[0], step.divisibility[0]), std::nullopt);
  i128 lo = std::min<i128>(lb.range.lo, i128(ub.range.lo) + 1);
  i128 hi = std::max<i128>(lb.range.hi, i128(ub.range.hi) - 1);
  if (step.range.lo > 0) {
    lo = lb.range.lo;
    hi = std::max<i128>(lo, hi);
    if (lb.constant && step.constant && hi >= *lb.constant)  // the last lb + k*step below ub
      hi = *lb.constant + (hi - *lb.constant) / *step.constant * *step.constant;
  } else if (step.range.hi < 0) {
    hi = lb.range.hi;
    lo = std::min<i128>(lo, hi);
  }
  ivi.range = fit(lo, hi, iv->type.dtype);
  set(iv, std::move(ivi));

  size_t n = o.results.size();
  for (size_t i = 0; i < n; ++i) set(body.args[1 + i].get(), get(o.operands[3 + i]));
  for (int round = 0;; ++round) {
    block(body);
    bool changed = false;
    for (size_t i = 0; i < n; ++i) changed |= join_back_edge(body.args[1 + i].get(), yield->operands[i], round);
    // The body's facts now come from the arguments' final facts: the last round saw them.
    if (!changed) break;
  }
  // A result is the init (no iteration ran) or the last yield.
  for (size_t i = 0; i < n; ++i) set(o.result(int(i)), meet(get(o.operands[3 + i]), get(yield->operands[i])));
}

// A while loop: the condition region runs on the inits or on the body's last yield, the
// body on what the condition region passed on, and the loop ends with the condition
// region's values. The same fixpoint as a for loop's, around both regions.
void AxisAnalysis::while_loop(const ir::Operation& o) {
  const ir::Block& before = *o.regions[0];
  const ir::Block& after = *o.regions[1];
  const ir::Operation* cond = before.terminator();
  const ir::Operation* next = after.terminator();
  size_t n = o.results.size();
  for (size_t i = 0; i < n; ++i) set(before.args[i].get(), get(o.operands[i]));
  for (int round = 0;; ++round) {
    block(before);
    for (size_t i = 0; i < n; ++i) set(after.args[i].get(), get(cond->operands[1 + i]));
    block(after);
    bool changed = false;
    for (size_t i = 0; i < n; ++i) changed |= join_back_edge(before.args[i].get(), next->operands[i], round);
    if (!changed) break;
  }
  for (size_t i = 0; i < n; ++i) set(o.result(int(i)), get(cond->operands[1 + i]));
}

// The range of `o`'s (first) result from its operands' ranges.
ValueRange AxisAnalysis::range_of(const ir::Operation& o) const {
  const ir::Value* res = o.result();
  DType t = res->type.dtype;
  ValueRange unknown = bounds(t);
  if (!has_range(t)) return unknown;
  auto in = [&](int i) { return get(o.operands[i]).range; };
  switch (o.op) {
    case Op::constant: return fit(wrap_to(t, o.i0), wrap_to(t, o.i0), t);
    case Op::arange: return fit(o.i0, i128(o.i1) - 1, t);
    case Op::program_id: return fit(0, std::numeric_limits<int32_t>::max(), t);
    case Op::num_programs: return fit(1, std::numeric_limits<int32_t>::max(), t);
    case Op::splat: case Op::broadcast: case Op::reshape: case Op::expand_dims: case Op::trans:
    case Op::convert_layout:
      return in(0);
    // The elements of one tile or two, moved: their values are their operands'.
    case Op::split: case Op::flip: case Op::gather: case Op::sort: return in(0);  // (sort: its keys)
    case Op::histogram: return fit(0, o.operands[0]->type.numel(), t);  // counts of the elements
    case Op::join: case Op::cat: return fit(std::min(in(0).lo, in(1).lo), std::max(in(0).hi, in(1).hi), t);
    case Op::hint: return in(0);
    case Op::add: return fit_arith(i128(in(0).lo) + in(1).lo, i128(in(0).hi) + in(1).hi, t);
    case Op::sub: return fit_arith(i128(in(0).lo) - in(1).hi, i128(in(0).hi) - in(1).lo, t);
    case Op::mul: {
      ValueRange a = in(0), b = in(1);
      i128 c[] = {i128(a.lo) * b.lo, i128(a.lo) * b.hi, i128(a.hi) * b.lo, i128(a.hi) * b.hi};
      return fit_arith(*std::min_element(c, c + 4), *std::max_element(c, c + 4), t);
    }
    case Op::shl: {  // x << k is x * 2^k when k is known and nothing is shifted out
      ValueRange a = in(0), k = in(1);
      if (k.lo != k.hi || k.lo < 0 || k.lo >= bit_width(t) || k.lo > 62) return unknown;
      return fit(i128(a.lo) << k.lo, i128(a.hi) << k.lo, t);
    }
    case Op::div: {  // truncating division is monotone in both operands for a positive divisor
      ValueRange a = in(0), b = in(1);
      if (b.lo <= 0) return unknown;
      i128 c[] = {i128(a.lo) / b.lo, i128(a.lo) / b.hi, i128(a.hi) / b.lo, i128(a.hi) / b.hi};
      return fit(*std::min_element(c, c + 4), *std::max_element(c, c + 4), t);
    }
    case Op::rem: {  // |x % d| < d, with the dividend's sign, and |x % d| <= |x|
      ValueRange a = in(0), b = in(1);
      if (b.lo <= 0) {  // any divisor (x % 0 is 0): the dividend's sign and |x % d| <= |x|
        if (a.lo >= 0) return fit(0, a.hi, t);  // Triton's `(pid_m * BLOCK + arange) % M`
        if (a.hi <= 0) return fit(a.lo, 0, t);
        return unknown;
      }
      int64_t m = b.hi - 1;
      return fit(a.lo >= 0 ? 0 : std::max(a.lo, -m), a.hi <= 0 ? 0 : std::min(a.hi, m), t);
    }
    case Op::min: return fit(std::min(in(0).lo, in(1).lo), std::min(in(0).hi, in(1).hi), t);
    case Op::max: return fit(std::max(in(0).lo, in(1).lo), std::max(in(0).hi, in(1).hi), t);
    case Op::band: {  // a non-negative operand bounds the result: its zero bits stay zero
      ValueRange a = in(0), b = in(1);
      if (nonnegative(a) && nonnegative(b)) return fit(0, std::min(a.hi, b.hi), t);
      if (nonnegative(a) || nonnegative(b)) return fit(0, nonnegative(a) ? a.hi : b.hi, t);
      return unknown;
    }
    case Op::bor: case Op::bxor: {
      ValueRange a = in(0), b = in(1);
      if (!nonnegative(a) || !nonnegative(b)) return unknown;
      return fit(0, all_ones_above(std::max(a.hi, b.hi)), t);
    }
    case Op::shr: {  // of a non-negative value: no sign bits shifted in, arithmetic or logical
      ValueRange a = in(0), k = in(1);
      if (!nonnegative(a) || k.lo < 0 || k.hi >= bit_width(t)) return unknown;
      return fit(a.lo >> k.hi, a.hi >> k.lo, t);
    }
    case Op::neg: return fit(-i128(in(0).hi), -i128(in(0).lo), t);
    case Op::abs: {
      ValueRange a = in(0);
      if (a.lo >= 0) return a;
      if (a.hi <= 0) return fit(-i128(a.hi), -i128(a.lo), t);
      return fit(0, std::max<i128>(-i128(a.lo), a.hi), t);
    }
    case Op::select: return fit(std::min(in(1).lo, in(2).lo), std::max(in(1).hi, in(2).hi), t);
    case Op::cast: {
      // Sign- or zero-extension and truncation keep every value the result dtype can
      // hold; a cast to i1 is `!= 0`, which keeps 0 and 1 too.
      DType from = o.operands[0]->type.dtype;
      if (!has_range(from)) return unknown;
      return fit(in(0).lo, in(0).hi, t);
    }
    case Op::reduce:
      switch (ReduceKind(o.i1)) {
        case ReduceKind::max: case ReduceKind::min: return in(0);
        case ReduceKind::argmax: case ReduceKind::argmin: return fit(0, o.operands[0]->type.shape[o.i0] - 1, t);
        default: return unknown;
      }
    default: return unknown;
  }
}

// tl::assume(cond): facts about scalars read from cond (`x > c`, `x >= c`, `x < c`,
// `x <= c`, `x == c` with c a constant, either side; `x % n == 0` with n a positive
// constant; `a & b` of such conditions). Like Triton, which applies an assume to the SSA
// value, a fact holds for every use of x, before the assume in program order too, but
// only where the assume runs whenever x is defined: in the block that defines x (a
// kernel argument's is the function's body). An assume inside a branch or a loop body
// says nothing about a value defined outside it (the branch may not run).
void AxisAnalysis::collect_assumptions(const ir::Block& b) {
  for (auto& o : b.ops) {
    for (auto& r : o->regions) collect_assumptions(*r);
    if (o->op == Op::assume) assume_fact(o->operands[0], b);
  }
}

namespace {
std::optional<int64_t> int_constant(const ir::Value* v) {
  if (!v->def || v->def->op != Op::constant || !v->type.is_scalar() || !is_int(v->type.dtype)) return std::nullopt;
  return wrap_to(v->type.dtype, v->def->i0);
}

CmpPred mirrored(CmpPred p) {
  switch (p) {
    case CmpPred::lt: return CmpPred::gt;
    case CmpPred::le: return CmpPred::ge;
    case CmpPred::gt: return CmpPred::lt;
    case CmpPred::ge: return CmpPred::le;
    default: return p;
  }
}
}  // namespace

void AxisAnalysis::assume_fact(const ir::Value* cond, const ir::Block& where) {
  const ir::Operation* d = cond->def;
  if (!d) return;
  if (d->op == Op::band) {
    assume_fact(d->operands[0], where);
    assume_fact(d->operands[1], where);
    return;
  }
  if (d->op != Op::cmp) return;
  const ir::Value* x = d->operands[0];
  auto p = CmpPred(d->i0);
  std::optional<int64_t> c = int_constant(d->operands[1]);
  if (!c) {
    x = d->operands[1];
    c = int_constant(d->operands[0]);
    p = mirrored(p);
  }
  if (!c || !has_range(x->type.dtype)) return;
  auto fact_for = [&](const ir::Value* v) -> Assumed* {
    const ir::Block* defined_in = v->def ? v->def->parent : v->owner;
    if (defined_in != &where) return nullptr;
    auto [it, added] = assumed_.try_emplace(v);
    return &it->second;
  };
  // x % n == 0: x is a multiple of n (any sign), so of n's largest power-of-two divisor.
  if (p == CmpPred::eq && *c == 0 && x->def && x->def->op == Op::rem) {
    std::optional<int64_t> n = int_constant(x->def->operands[1]);
    if (n && *n > 0)
      if (Assumed* a = fact_for(x->def->operands[0])) a->divisibility = std::max(a->divisibility, pow2_divisor(*n));
    return;
  }
  Assumed* a = fact_for(x);
  if (!a) return;
  ValueRange& r = a->range;
  const i128 k = *c;
  auto at_least = [&](i128 lo) { if (lo > r.lo) r.lo = int64_t(std::min<i128>(lo, std::numeric_limits<int64_t>::max())); };
  auto at_most = [&](i128 hi) { if (hi < r.hi) r.hi = int64_t(std::max<i128>(hi, std::numeric_limits<int64_t>::min())); };
  switch (p) {
    case CmpPred::gt: at_least(k + 1); break;
    case CmpPred::ge: at_least(k); break;
    case CmpPred::lt: at_most(k - 1); break;
    case CmpPred::le: at_most(k); break;
    case CmpPred::eq:
      at_least(k), at_most(k);
      a->constant = *c;
      a->divisibility = std::max(a->divisibility, pow2_divisor(*c));
      break;
    case CmpPred::ne: break;
  }
}

bool AxisAnalysis::fits_nonnegative_i32(const ir::Value* v) const {
  const ValueRange& r = get(v).range;
  return has_range(v->type.dtype) && r.lo >= 0 && r.hi <= std::numeric_limits<int32_t>::max();
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

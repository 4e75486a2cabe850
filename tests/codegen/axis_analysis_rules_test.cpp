// Every rule of the axis analysis (codegen/passes/axis_analysis.*) checked by brute force:
// random small programs of integer index arithmetic (aranges with any start, constants of
// both signs, kernel arguments, splats, broadcasts, add/sub/mul, / and % and shifts by
// powers of two and by other values, and/or/xor, min/max, neg/abs, comparisons, selects,
// casts between integer widths and signedness, pointer offsets) are evaluated here with
// plain C++ integers, and every fact the analysis claims about every value -- contiguity,
// divisibility, constancy, the constant and the range, per dimension, in the sense
// axis_analysis.hpp states them -- is checked against the values.
//
// The one assumption the analysis makes (as Triton's does, docs/language.md): index
// arithmetic does not wrap. Values whose computation wrapped are not checked.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/passes/axis_analysis.hpp"

namespace {

using namespace tl;
using passes::AxisAnalysis;
using passes::AxisInfo;
using i128 = __int128;

// A tile's exact values, row-major, and whether a wrap happened anywhere in its making.
struct Tile {
  std::vector<int> shape;
  std::vector<int64_t> v;
  bool wrapped = false;
};

int64_t wrap(DType t, i128 x) {
  if (t == DType::ptr || t == DType::i64 || t == DType::u64) return int64_t(uint64_t(x));
  int w = t == DType::i1 ? 1 : bit_width(t);
  uint64_t bits = uint64_t(x) & ((uint64_t(1) << w) - 1);
  if (is_signed(t) && (bits >> (w - 1)) & 1) bits |= ~((uint64_t(1) << w) - 1);
  return int64_t(bits);
}

// The evaluator: the meaning of each op, written from the language's definition (C's
// truncating / and %, arithmetic >> for signed, wrapping add/sub/mul), not from tl's code.
class Evaluator {
 public:
  explicit Evaluator(const std::map<const ir::Value*, int64_t>& args) {
    for (auto& [v, x] : args) vals_[v] = Tile{{}, {x}, false};
  }
  const Tile& operator[](const ir::Value* v) const { return vals_.at(v); }

  void run(const ir::Block& b) {
    for (auto& op : b.ops) eval(*op);
  }

 private:
  static int64_t numel(const std::vector<int>& s) {
    int64_t n = 1;
    for (int d : s) n *= d;
    return n;
  }
  // Row-major index -> per-dim index and back.
  static std::vector<int> unflat(const std::vector<int>& s, int64_t f) {
    std::vector<int> idx(s.size());
    for (int d = int(s.size()) - 1; d >= 0; --d) {
      idx[d] = int(f % s[d]);
      f /= s[d];
    }
    return idx;
  }
  static int64_t flat(const std::vector<int>& s, const std::vector<int>& idx) {
    int64_t f = 0;
    for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
    return f;
  }

  void eval(const ir::Operation& o) {
    if (o.op == Op::assume) return;  // (the programs assume only what holds)
    const ir::Value* r = o.result();
    DType t = r->type.dtype;
    Tile out{r->type.shape, {}, false};
    int64_t n = numel(out.shape);
    auto in = [&](int i) -> const Tile& { return vals_.at(o.operands[i]); };
    for (size_t i = 0; i < o.operands.size(); ++i) out.wrapped |= in(int(i)).wrapped;
    // Elementwise operands are the same shape here (the programs broadcast explicitly).
    auto elem = [&](int i, int64_t k) { return in(i).v.size() == 1 ? in(i).v[0] : in(i).v[size_t(k)]; };
    DType ot = o.operands.empty() ? t : o.operands[0]->type.dtype;
    bool sg = is_signed(ot);
    auto note_wrap = [&](i128 exact) {
      int64_t w = wrap(t, exact);
      if (i128(w) != exact && !(is_unsigned(t) && i128(uint64_t(w)) == exact)) out.wrapped = true;
      return w;
    };
    switch (o.op) {
      case Op::constant: out.v = {wrap(t, o.i0)}; break;
      case Op::arange:
        for (int64_t k = 0; k < n; ++k) out.v.push_back(o.i0 + k);
        break;
      case Op::splat: out.v.assign(size_t(n), in(0).v[0]); break;
      case Op::broadcast: case Op::expand_dims: case Op::reshape: {
        const Tile& a = in(0);
        for (int64_t k = 0; k < n; ++k) {
          if (o.op != Op::broadcast) { out.v.push_back(a.v[size_t(k)]); continue; }
          std::vector<int> idx = unflat(out.shape, k);
          for (size_t d = 0; d < idx.size(); ++d)
            if (a.shape[d] == 1) idx[d] = 0;
          out.v.push_back(a.v[size_t(flat(a.shape, idx))]);
        }
        break;
      }
      case Op::trans: {
        const Tile& a = in(0);
        for (int64_t k = 0; k < n; ++k) {
          std::vector<int> idx = unflat(out.shape, k), src(idx.size());
          for (size_t d = 0; d < idx.size(); ++d) src[size_t(o.ints[d])] = idx[d];
          out.v.push_back(a.v[size_t(flat(a.shape, src))]);
        }
        break;
      }
      default:
        for (int64_t k = 0; k < n; ++k) out.v.push_back(element(o, t, ot, sg, elem, k, note_wrap));
    }
    vals_[r] = std::move(out);
  }

  template <class Elem, class Wrap>
  static int64_t element(const ir::Operation& o, DType t, DType ot, bool sg, Elem&& elem, int64_t k, Wrap&& note_wrap) {
    i128 a = elem(0, k), b = o.operands.size() > 1 ? elem(1, k) : 0;
    // Unsigned operands are held as their non-negative values already.
    switch (o.op) {
      case Op::add: return note_wrap(a + b);
      case Op::addptr: return note_wrap(a + b * byte_width(o.result()->type.pointee));
      case Op::sub: return note_wrap(a - b);
      case Op::mul: return note_wrap(a * b);
      case Op::div: return wrap(t, a / b);  // the programs never divide by 0 or INT_MIN by -1
      case Op::rem: return wrap(t, a % b);
      case Op::shl: return note_wrap(a << int(b));
      case Op::shr: {
        // Arithmetic for signed (rounds toward -inf), logical for unsigned.
        i128 q = a >> int(b);
        return wrap(t, q);
      }
      case Op::band: return wrap(t, a & b);
      case Op::bor: return wrap(t, a | b);
      case Op::bxor: return wrap(t, a ^ b);
      case Op::min: return int64_t(a < b ? a : b);
      case Op::max: return int64_t(a > b ? a : b);
      case Op::neg: return note_wrap(-a);
      case Op::abs: return note_wrap(a < 0 ? -a : a);
      case Op::cmp:
        switch (CmpPred(o.i0)) {
          case CmpPred::lt: return a < b;
          case CmpPred::le: return a <= b;
          case CmpPred::gt: return a > b;
          case CmpPred::ge: return a >= b;
          case CmpPred::eq: return a == b;
          case CmpPred::ne: return a != b;
        }
        return 0;
      case Op::select: return elem(0, k) ? elem(1, k) : elem(2, k);
      case Op::hint: return elem(0, k);  // the value itself
      case Op::cast: {
        // Integer casts keep the low bits (sign- or zero-extended by the source's sign);
        // a cast to i1 is `!= 0`.
        if (t == DType::i1) return a != 0;
        (void)ot;
        (void)sg;
        return wrap(t, a);
      }
      default: throw std::runtime_error(fmt::format("evaluator: no rule for {}", op_name(o.op)));
    }
  }

  std::map<const ir::Value*, Tile> vals_;
};

// Whether `info` holds for `tile`; the first broken fact otherwise.
std::string broken_fact(const AxisInfo& info, const Tile& tile, const ir::Type& type) {
  const auto& s = tile.shape;
  int rank = int(s.size());
  auto at = [&](std::vector<int> idx) {
    int64_t f = 0;
    for (int d = 0; d < rank; ++d) f = f * s[d] + idx[d];
    return tile.v[size_t(f)];
  };
  int64_t n = int64_t(tile.v.size());
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int> idx(rank);
    int64_t f = k;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = int(f % s[d]);
      f /= s[d];
    }
    int64_t x = tile.v[size_t(k)];
    if (info.constant && *info.constant != x) return fmt::format("constant {} but element {} is {}", *info.constant, k, x);
    bool has_range = is_int(type.dtype) && type.dtype != DType::u64;
    if (has_range && (x < info.range.lo || x > info.range.hi))
      return fmt::format("range [{}, {}] but element {} is {}", info.range.lo, info.range.hi, k, x);
    for (int d = 0; d < std::max(rank, 1); ++d) {
      if (rank == 0) {
        if (x % info.divisibility[0] != 0) return fmt::format("divisibility {} but the scalar is {}", info.divisibility[0], x);
        continue;
      }
      int i = idx[d];
      int64_t c = info.contiguity[d], q = info.constancy[d], v = info.divisibility[d];
      std::vector<int> next = idx;
      ++next[d];
      int64_t step = type.is_ptr() ? byte_width(type.pointee) : 1;
      if (i % c < c - 1 && at(next) != x + step)
        return fmt::format("contiguity {} along dim {} but elements {} and the next are {}, {}", c, d, k, x, at(next));
      if (i % q < q - 1 && at(next) != x)
        return fmt::format("constancy {} along dim {} but elements {} and the next are {}, {}", q, d, k, x, at(next));
      if (i % c == 0 && x % v != 0)
        return fmt::format("divisibility {} along dim {} but run start {} is {}", v, d, k, x);
    }
  }
  return "";
}

// One random program: leaves, then `ops` random operations over them, all in one shape
// (a 1-D [8] or a 2-D [4, 8]), checked value by value.
struct Program {
  ir::Function f;
  std::map<const ir::Value*, int64_t> args;
  std::vector<ir::Value*> values;
};

constexpr ir::SrcLoc kHere{__FILE__, __LINE__};

ir::Value* leaf(ir::Builder& b, std::mt19937& rng, const std::vector<int>& shape, Program& p) {
  auto pick = [&](std::initializer_list<int64_t> xs) { return *(xs.begin() + rng() % xs.size()); };
  ir::Type i32{DType::i32, DType::i32, {}};
  auto spread = [&](ir::Value* v) {
    // A 1-D value of the last dim's length, made 2-D along either dim, or a scalar splat.
    if (v->type.is_scalar()) return b.create1(Op::splat, {v}, i32.with_shape(shape), kHere);
    if (shape.size() == 1) return v;
    int axis = int(rng() % 2);  // [1, n] rows or [n, 1] columns
    ir::Value* e = v;
    if (axis == 1) {
      // A column needs the first dim's length: make it again with that length.
      e = b.create1(Op::arange, {}, i32.with_shape({shape[0]}), kHere);
      e->def->i0 = v->def->i0;
      e->def->i1 = v->def->i0 + shape[0];
    }
    std::vector<int> ex = axis == 0 ? std::vector<int>{1, e->type.shape[0]} : std::vector<int>{e->type.shape[0], 1};
    ir::Value* x = b.create1(Op::expand_dims, {e}, i32.with_shape(ex), kHere);
    x->def->i0 = axis;
    return b.create1(Op::broadcast, {x}, i32.with_shape(shape), kHere);
  };
  switch (rng() % 4) {
    case 0: {
      int64_t start = pick({0, 0, 1, 2, 3, 4, 8, 16, -16, -8, -5, -4, 128, -128});
      ir::Value* a = b.create1(Op::arange, {}, i32.with_shape({shape.back()}), kHere);
      a->def->i0 = start;
      a->def->i1 = start + shape.back();
      return spread(a);
    }
    case 1: {
      int64_t c = pick({0, 1, 2, 3, 4, 5, 7, 8, 16, 24, 64, -1, -2, -3, -4, -8, -16, -17, 2147483644, -2147483645});
      return spread(b.constant(DType::i32, c, kHere));
    }
    default: {
      // A kernel argument: its value is unknown to the analysis but for divisibility by 16.
      int64_t v = pick({0, 3, 16, 48, -16, -32, -5, 100, 4096});
      ir::Value* a = p.f.body.add_arg(i32);
      p.f.arg_info.push_back({fmt::format("a{}", p.f.arg_info.size()), v % 16 == 0});
      p.args[a] = v;
      return spread(a);
    }
  }
}

ir::Value* random_op(ir::Builder& b, std::mt19937& rng, Program& p) {
  auto any = [&] { return p.values[rng() % p.values.size()]; };
  ir::Value* x = any();
  const ir::Type& t = x->type;
  auto same = [&] {  // another value of x's type (made by a cast if needed)
    for (int tries = 0; tries < 8; ++tries) {
      ir::Value* y = any();
      if (y->type == t) return y;
    }
    return x;
  };
  auto pow2 = [&](std::initializer_list<int64_t> xs) {
    int64_t c = *(xs.begin() + rng() % xs.size());
    return b.create1(Op::splat, {b.constant(t.dtype, c, kHere)}, t, kHere);
  };
  static const Op binary[] = {Op::add, Op::add, Op::sub, Op::mul, Op::band, Op::bor, Op::bxor, Op::min, Op::max};
  switch (rng() % 9) {
    case 0: case 1: return b.create1(binary[rng() % 9], {x, same()}, t, kHere);
    case 2: {
      if (rng() % 3 == 0 && t.dtype == DType::i32) {
        // by a run-time divisor (a kernel argument; never 0: docs/language.md)
        const int64_t v = std::initializer_list<int64_t>{16, 48, -32, 3, 64, 8}.begin()[rng() % 6];
        ir::Value* a = p.f.body.add_arg(ir::Type{DType::i32, DType::i32, {}});
        p.f.arg_info.push_back({fmt::format("n{}", p.f.arg_info.size()), v % 16 == 0});
        p.args[a] = v;
        return b.create1(Op::rem, {x, b.create1(Op::splat, {a}, t, kHere)}, t, kHere);
      }
      return b.create1(rng() % 2 ? Op::div : Op::rem, {x, pow2({1, 2, 4, 8, 3, 16})}, t, kHere);
    }
    case 3: return b.create1(rng() % 2 ? Op::shl : Op::shr, {x, pow2({0, 1, 2, 3, 4})}, t, kHere);
    case 4: return b.create1(rng() % 2 ? Op::neg : Op::abs, {x}, t, kHere);
    case 5: return b.create1(Op::mul, {x, pow2({1, 2, 4, 16, 3, -1})}, t, kHere);
    case 6: {
      ir::Value* c = b.create1(Op::cmp, {x, same()}, t.with_dtype(DType::i1), kHere);
      c->def->i0 = int64_t(rng() % 6);
      return b.create1(Op::select, {c, same(), same()}, t, kHere);
    }
    case 7: {
      // (Not to u64: the evaluator holds values as int64.)
      static const DType to[] = {DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u16, DType::u32};
      return b.create1(Op::cast, {x}, t.with_dtype(to[rng() % 7]), kHere);
    }
    default: {
      // A pointer offset: what vector widths are decided from.
      if (!is_int(t.dtype) || t.dtype == DType::i1) return x;
      ir::Value* base = p.f.body.add_arg(ir::Type{DType::ptr, DType::f32, {}});
      int64_t addr = rng() % 2 ? 4096 : 4100;
      p.f.arg_info.push_back({fmt::format("p{}", p.f.arg_info.size()), addr % 16 == 0});
      p.args[base] = addr;
      ir::Value* bs = b.create1(Op::splat, {base}, ir::Type{DType::ptr, DType::f32, t.shape}, kHere);
      return b.create1(Op::addptr, {bs, x}, bs->type, kHere);
    }
  }
}

void check_program(uint32_t seed, const std::vector<int>& shape) {
  std::mt19937 rng(seed);
  Program p;
  p.f.name = "rules";
  ir::Builder b(p.f.body);
  for (int i = 0; i < 3; ++i) p.values.push_back(leaf(b, rng, shape, p));
  for (int i = 0; i < 8; ++i) {
    ir::Value* v = random_op(b, rng, p);
    if (!v->type.is_ptr()) p.values.push_back(v);
  }
  AxisAnalysis axis(p.f);
  Evaluator ev(p.args);
  ev.run(p.f.body);
  for (auto& op : p.f.body.ops) {
    if (op->results.empty()) continue;
    const ir::Value* v = op->result();
    const Tile& tile = ev[v];
    if (tile.wrapped) continue;
    std::string broken = broken_fact(axis.get(v), tile, v->type);
    ASSERT_EQ(broken, "") << "seed " << seed << ": %" << op_name(op->op) << " " << v->type.str() << ": "
                          << axis.get(v).str() << "\nvalues: " << fmt::format("{}", fmt::join(tile.v, " "))
                          << "\n" << p.f.str();
  }
}

// Hints and assumes (tl::multiple_of / max_contiguous / max_constancy, tl::assume) are
// promises the analysis takes as given: with promises that hold, every fact it then
// claims, about the hinted values and about everything computed from them, must hold.
// Each program: random values, then a hint on one of them with the largest value of its
// kind that is true of the values the program computes (by brute force, against the
// runs the analysis claims), then more random operations over all of them; and scalar
// arguments with assumes that hold (`a >= lo`, `a <= hi`, `a % n == 0`, `a == v`).
int64_t largest_true_hint(HintKind kind, const Tile& x, const AxisInfo& info, int d) {
  const auto& s = x.shape;
  const int rank = int(s.size());
  auto value = [&](std::vector<int> idx) {
    int64_t f = 0;
    for (int e = 0; e < rank; ++e) f = f * s[e] + idx[e];
    return x.v[size_t(f)];
  };
  auto holds = [&](int64_t k) {
    for (int64_t f = 0; f < int64_t(x.v.size()); ++f) {
      std::vector<int> idx(rank);
      int64_t g = f;
      for (int e = rank - 1; e >= 0; --e) idx[e] = int(g % s[e]), g /= s[e];
      const int i = rank ? idx[d] : 0;
      std::vector<int> next = idx;
      if (rank) ++next[d];
      switch (kind) {
        case HintKind::multiple_of:
          if (i % info.contiguity[d] == 0 && value(idx) % k != 0) return false;
          break;
        case HintKind::max_contiguous:
          if (i % k < k - 1 && value(next) != value(idx) + 1) return false;
          break;
        case HintKind::max_constancy:
          if (i % k < k - 1 && value(next) != value(idx)) return false;
          break;
      }
    }
    return true;
  };
  const int64_t extent = rank ? s[d] : 1;
  int64_t k = 1;
  while (k < (kind == HintKind::multiple_of ? (int64_t(1) << 20) : extent) && holds(k * 2)) k *= 2;
  return k;
}

void check_hinted_program(uint32_t seed, const std::vector<int>& shape) {
  std::mt19937 rng(seed);
  Program p;
  p.f.name = "hints";
  ir::Builder b(p.f.body);
  for (int i = 0; i < 3; ++i) p.values.push_back(leaf(b, rng, shape, p));
  // A scalar argument with true assumes, used as a splat.
  {
    const ir::Type i32{DType::i32, DType::i32, {}};
    const int64_t v = std::initializer_list<int64_t>{0, 16, 48, 96, 4096, 5, -32}.begin()[rng() % 7];
    ir::Value* a = p.f.body.add_arg(i32);
    p.f.arg_info.push_back({"assumed", false});
    p.args[a] = v;
    auto assume = [&](CmpPred pred, ir::Value* x, int64_t c) {
      ir::Value* cmp = b.create1(Op::cmp, {x, b.constant(DType::i32, c, kHere)}, i32.with_dtype(DType::i1), kHere);
      cmp->def->i0 = int64_t(pred);
      b.create(Op::assume, {cmp}, {}, kHere);
    };
    assume(CmpPred::ge, a, v - int64_t(rng() % 3));
    if (rng() % 2) assume(CmpPred::le, a, v + int64_t(rng() % 3));
    if (rng() % 4 == 0) assume(CmpPred::eq, a, v);
    if (v % 16 == 0) {
      ir::Value* r = b.create1(Op::rem, {a, b.constant(DType::i32, 16, kHere)}, i32, kHere);
      assume(CmpPred::eq, r, 0);
    }
    p.values.push_back(b.create1(Op::splat, {a}, i32.with_shape(shape), kHere));
  }
  for (int i = 0; i < 4; ++i) {
    ir::Value* v = random_op(b, rng, p);
    if (!v->type.is_ptr()) p.values.push_back(v);
  }
  // The hint: its value from what the program computes so far.
  {
    ir::Value* x = p.values[rng() % p.values.size()];
    AxisAnalysis before(p.f);
    Evaluator ev(p.args);
    ev.run(p.f.body);
    if (!ev[x].wrapped && (is_int(x->type.dtype) && x->type.dtype != DType::i1)) {
      const auto kind = HintKind(rng() % 3);
      ir::Value* h = b.create1(Op::hint, {x}, x->type, kHere);
      h->def->i0 = int64_t(kind);
      for (int d = 0; d < std::max(1, x->type.rank()); ++d)
        h->def->ints.push_back(int(largest_true_hint(kind, ev[x], before.get(x), d)));
      for (int i = 0; i < 3; ++i) p.values.push_back(h);  // (more likely picked below)
    }
  }
  for (int i = 0; i < 6; ++i) {
    ir::Value* v = random_op(b, rng, p);
    if (!v->type.is_ptr()) p.values.push_back(v);
  }
  AxisAnalysis axis(p.f);
  Evaluator ev(p.args);
  ev.run(p.f.body);
  for (auto& op : p.f.body.ops) {
    if (op->results.empty()) continue;
    const ir::Value* v = op->result();
    const Tile& tile = ev[v];
    if (tile.wrapped) continue;
    std::string broken = broken_fact(axis.get(v), tile, v->type);
    ASSERT_EQ(broken, "") << "seed " << seed << ": %" << op_name(op->op) << " " << v->type.str() << ": "
                          << axis.get(v).str() << "\nvalues: " << fmt::format("{}", fmt::join(tile.v, " "))
                          << "\n" << p.f.str();
  }
  // (the assumed argument's own facts: its range and divisibility)
  for (auto& [a, value] : p.args)
    ASSERT_EQ(broken_fact(axis.get(a), Tile{{}, {value}, false}, a->type), "") << "seed " << seed << "\n" << p.f.str();
}

TEST(AxisAnalysisRules, HintsAndAssumesThatHoldKeepEveryClaimedFactTrue) {
  for (uint32_t seed = 1; seed <= 1500; ++seed) {
    check_hinted_program(seed, {8});
    if (HasFatalFailure()) return;
    check_hinted_program(seed, {4, 8});
    if (HasFatalFailure()) return;
  }
}

TEST(AxisAnalysisRules, EveryClaimedFactHoldsOnOneDimensionalPrograms) {
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    check_program(seed, {8});
    if (HasFatalFailure()) return;
  }
}

TEST(AxisAnalysisRules, EveryClaimedFactHoldsOnTwoDimensionalPrograms) {
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    check_program(seed, {4, 8});
    if (HasFatalFailure()) return;
  }
}

}  // namespace

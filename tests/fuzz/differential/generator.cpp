// The random program generator (generator.hpp). Programs are built from a pool of live
// tiles ("variables", each a real tl tile object, so that reassigning one inside a
// tl::range body makes the tracer carry it as a user's tile would be). Each step draws an
// operation and its operands from the pool and adds the result to it; loops and branches
// nest steps and reassign outer tiles. Stores send a sample of the pool to the outputs.
//
// Well-definedness is by construction, as a careful user writes it: divisors made nonzero
// with tl::where (and MIN / -1 avoided), shift amounts masked below the width, floats
// converted to integers only where they fit, loads in bounds or masked, every store to
// its own region, shared outputs only through integer atomics whose result does not
// depend on their order. The reference evaluator checks all of this again (IllDefined).
#include "fuzz/differential/generator.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <variant>

#include "tl/tl.hpp"

namespace fuzzdiff {

using tl::DType;
using tl::Op;
namespace ty = tl::ty;
template <class E> using tile = tl::tile<E>;

const std::vector<KnownDefect>& known_defects() {
  // None open. Fixed and kept as regression seeds: f16/bf16 `x % 3.0` on a uniform x aborted
  // the AMD compile (seed 1001; codegen/gpu/lower_elementwise.cpp says why).
  static const std::vector<KnownDefect> list = {};
  return list;
}
uint32_t default_avoid() {
  uint32_t a = 0;
  for (const auto& d : known_defects()) a |= d.bit;
  return a;
}

namespace {

using AnyTile = std::variant<tl::i1, tl::i8, tl::i16, tl::i32, tl::i64, tl::u8, tl::u32, tl::f16, tl::bf16, tl::f32, tl::f64>;
using Shape = std::vector<int>;

// Calls f with the element tag of dtype d (f(ty::f32{})): the bridge from the run-time
// dtype the generator draws to the C++ element type the DSL wants.
template <class F> void with_elem(DType d, F&& f) {
  switch (d) {
    case DType::i1: f(ty::i1{}); return;
    case DType::i8: f(ty::i8{}); return;
    case DType::i16: f(ty::i16{}); return;
    case DType::i32: f(ty::i32{}); return;
    case DType::i64: f(ty::i64{}); return;
    case DType::u8: f(ty::u8{}); return;
    case DType::u32: f(ty::u32{}); return;
    case DType::f16: f(ty::f16{}); return;
    case DType::bf16: f(ty::bf16{}); return;
    case DType::f32: f(ty::f32{}); return;
    case DType::f64: f(ty::f64{}); return;
    default: throw std::logic_error("fuzz generator: dtype it does not draw");
  }
}
template <class E> constexpr bool is_float_v = tl::is_float(E::dtype);
template <class E> constexpr bool is_i1_v = E::dtype == DType::i1;

// A live tile of the program. Its dtype and shape never change (a loop-carried tile keeps
// its type); `depth` is the loop/branch nesting it was made in, and it leaves the pool
// when that body ends (the tracer refuses a tile used after its body).
struct Var {
  DType dt;
  Shape shape;
  int depth;
  AnyTile t;
  template <class E> tile<E>& as() { return std::get<tile<E>>(t); }
};

// x converted to F as a careful user does: a float becomes an integer only where it fits
// (NaN, infinities and out-of-range values are replaced by 0 first).
template <class F, class E> tile<F> cast_to(const tile<E>& x) {
  if constexpr (std::is_same_v<E, F>) {
    return x;
  } else if constexpr (is_float_v<E> && tl::is_int(F::dtype) && !is_i1_v<F>) {
    constexpr int w = tl::bit_width(F::dtype);
    if constexpr (tl::is_signed(F::dtype)) {
      return tl::where(tl::abs(x) < std::ldexp(1.0, w - 1), x, 0.0).template to<F>();
    } else {
      return tl::where((x > -1.0) & (x < std::ldexp(1.0, w)), x, 0.0).template to<F>();
    }
  } else {
    return x.template to<F>();
  }
}

class Gen {
 public:
  Gen(uint64_t seed, uint32_t avoid, const KernelArgs& a, Plan& plan) : rng_(seed), avoid_(avoid), args_(a), plan_(plan) {}

  void run() {
    // The launch first: the harness reads these from the plan.
    plan_.grid = uni(1, 3);
    plan_.num_warps = 1 << uni(0, 3);
    if (chance(0.35)) S_ = {1 << uni(0, 10)};
    else {
      S_ = {1 << uni(0, 6), 1 << uni(0, 6)};
      if (chance(0.3)) S_ = {16 << uni(0, 2), 16 << uni(0, 2)};  // room for tl::dot
    }
    numel_ = 1;
    for (int d : S_) numel_ *= d;
    plan_.n = uni(0, plan_.grid * numel_);
    plan_.s = chance(0.5) ? uni(-8, 8) : int(rng_());
    plan_.x = float(std::uniform_real_distribution<double>(-4, 4)(rng_));

    atomic_kind_[0] = uni(0, 5), atomic_kind_[1] = uni(0, 5);
    pid_.emplace(tl::program_id(0));
    add(*pid_);
    add(tile<ty::i32>(args_.s));
    add(tile<ty::f32>(args_.x));
    n_.emplace(args_.n);
    int loads = uni(2, 4);
    for (int k = 0; k < loads; ++k) load_new(pick_dtype(), S_);
    if (chance(0.5)) add(perm(S_, 0) + *pid_ * numel_);  // the global element index

    int steps = uni(6, 24);
    for (int k = 0; k < steps; ++k) step();
    // Results: the newest tiles (the end of the longest chains) and a few others.
    int stores = uni(2, 5);
    for (int k = 0; k < stores && !pool_.empty(); ++k) {
      size_t i = k < 2 ? pool_.size() - 1 - size_t(k) : size_t(uni(0, int(pool_.size()) - 1));
      if (i < pool_.size()) store(pool_[i].get());
    }
  }

 private:
  std::mt19937_64 rng_;
  uint32_t avoid_;
  const KernelArgs& args_;
  Plan& plan_;
  Shape S_;
  int numel_ = 1;
  int depth_ = 0;
  std::optional<tl::i32> pid_, n_;
  std::vector<std::unique_ptr<Var>> pool_;
  int atomic_kind_[2] = {0, 0};  // per atomic buffer (i32, i64): add max min and or xor

  int uni(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <class T> T one_of(std::initializer_list<T> l) { return *(l.begin() + uni(0, int(l.size()) - 1)); }
  void note(const char* what) {
    if (plan_.summary.find(what) == std::string::npos) plan_.summary += std::string(plan_.summary.empty() ? "" : " ") + what;
  }
  bool avoiding(uint32_t bit) const { return (avoid_ & bit) != 0; }

  DType pick_dtype() { return kDataTypes[size_t(uni(0, int(kDataTypes.size()) - 1))]; }

  template <class E> Var* add(const tile<E>& x) {
    pool_.push_back(std::unique_ptr<Var>(new Var{E::dtype, x.shape(), depth_, AnyTile(std::in_place_type<tile<E>>, x)}));
    ++plan_.ops;
    return pool_.back().get();
  }
  // Leaving a body: its tiles go (destroying them tells the tracer).
  void drop_above(int depth) {
    while (!pool_.empty() && pool_.back()->depth > depth) pool_.pop_back();
  }

  // A variable satisfying `ok`, biased towards recent ones (longer dependence chains).
  template <class P> Var* pick(P&& ok) {
    std::vector<Var*> c;
    for (auto& v : pool_)
      if (ok(*v)) c.push_back(v.get());
    if (c.empty()) return nullptr;
    int i = std::max(uni(0, int(c.size()) - 1), uni(0, int(c.size()) - 1));
    return c[size_t(i)];
  }
  template <class F> tile<F> convert(Var* v) {
    std::optional<tile<F>> out;
    with_elem(v->dt, [&]<class E>(E) { out.emplace(cast_to<F>(v->as<E>())); });
    return *out;
  }

  // --- literals: values of the dtype (tl refuses an integer literal that does not fit) ---
  int64_t int_lit(DType t) {
    int64_t lo = tl::is_signed(t) ? -(int64_t(1) << (tl::bit_width(t) - 1)) : 0;
    int64_t hi = tl::is_signed(t) ? (int64_t(1) << (tl::bit_width(t) - 1)) - 1
                                  : (tl::bit_width(t) == 64 ? INT64_MAX : (int64_t(1) << tl::bit_width(t)) - 1);
    switch (uni(0, 5)) {
      case 0: return lo;
      case 1: return hi;
      case 2: return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
      default: return std::clamp<int64_t>(uni(-9, 9), lo, hi);
    }
  }
  double float_lit() {
    return one_of<double>({0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -0.25, 1000.0, 1e-3, 7.5, -65504.0,
                           std::uniform_real_distribution<double>(-8, 8)(rng_)});
  }

  // A permutation of [0, numel) in the shape: row-major (0), reversed (1), column-major (2).
  tl::i32 perm(const Shape& T, int kind) {
    if (T.empty()) return tl::i32(0);
    if (T.size() == 1) {
      tl::i32 a = tl::arange(0, T[0]);
      return kind == 1 ? (T[0] - 1) - a : a;
    }
    tl::i32 r = tl::expand_dims(tl::arange(0, T[0]), 1);
    tl::i32 c = tl::expand_dims(tl::arange(0, T[1]), 0);
    if (kind == 2) return c * T[0] + r;
    tl::i32 lin = r * T[1] + c;
    return kind == 1 ? (T[0] * T[1] - 1) - lin : lin;
  }
  // Offsets in [0, numel) for a load: a permutation, or with repeats (broadcast rows, i/2).
  tl::i32 load_offsets(const Shape& T) {
    int k = uni(0, 5);
    if (k <= 2 || T.empty()) return perm(T, k);
    if (k == 3 && T.size() == 2) return tl::broadcast_to(tl::expand_dims(tl::arange(0, T[0]), 1) * T[1], T);
    return perm(T, 0) / 2;
  }
  static int numel(const Shape& T) {
    int n = 1;
    for (int d : T) n *= d;
    return n;
  }

  // --- memory ---
  Var* load_new(DType d, const Shape& T) {
    note("load");
    Var* out = nullptr;
    int total = numel(T);
    tl::i32 offs = load_offsets(T) + *pid_ * total;
    int mode = uni(0, 4);
    with_elem(d, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        auto p = tile<ty::ptr<E>>(args_.in[size_t(data_index(d))]);
        auto other = [&]() { if constexpr (is_float_v<E>) return float_lit(); else return int_lit(E::dtype); };
        if (mode <= 1) {
          out = add(tl::load(p + offs));
        } else if (mode == 2) {  // the bound check: elements [n, ...) are past the valid data
          note("masked-load");
          out = add(tl::load(p + offs, offs < *n_, other()));
        } else if (mode == 3) {  // shifted past the end, masked by the bound (masked-off lanes are out of bounds)
          note("masked-load");
          tl::i32 shifted = offs + uni(1, total);
          out = add(tl::load(p + shifted, shifted < *n_, other()));
        } else {  // a pattern mask, `other` a tile of the program
          note("masked-load");
          tl::i1 m = (perm(T, 0) % uni(2, 5)) != 0;
          Var* o = pick([&](Var& v) { return v.shape == T && v.dt != DType::i1; });
          if (o) out = add(tl::load(p + offs, m, convert<E>(o)));
          else out = add(tl::load(p + offs, m));
        }
      }
    });
    return out;
  }

  void store(Var* v) {
    if (v->dt == DType::i1) {  // no i1 buffers: as a user would, store it as u8
      Var* u = add(v->as<ty::i1>().to<ty::u8>());
      v = u;
    }
    int di = data_index(v->dt);
    int slot = plan_.out_slots[size_t(di)]++;
    const Shape T = v->shape;
    tl::i32 offs = perm(T, uni(0, T.size() == 2 ? 2 : 1)) + (*pid_ + slot * plan_.grid) * kRegion;
    bool masked = !T.empty() && chance(0.3);
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        auto p = tile<ty::ptr<E>>(args_.out[size_t(di)]) + offs;
        if (masked) {
          note("masked-store");
          tl::store(p, v->as<E>(), (perm(T, 0) % 3) != 1);
        } else {
          tl::store(p, v->as<E>());
        }
      }
    });
  }

  // Integer atomics into buffers every program shares: add, max, min, and, or, xor each
  // commute with themselves, so with one kind a buffer (atomic_kind_) the final memory is
  // the same in every order of lanes and programs (the old values returned are not, and
  // are not used). Two kinds do not commute: min then or is not or then min.
  void atomic() {
    Var* v = pick([&](Var& x) { return tl::is_int(x.dt) && x.dt != DType::i1; });
    if (!v) return;
    note("atomic");
    const Shape T = v->shape;
    tl::i32 offs = T.empty() ? tl::i32(uni(0, kAtomElems - 1)) : perm(T, uni(0, 1)) % (chance(0.5) ? 64 : kAtomElems);
    bool wide = chance(0.5);
    int kind = atomic_kind_[wide ? 1 : 0];
    auto sem = one_of({tl::sem::relaxed, tl::sem::acq_rel});
    auto go = [&]<class A>(A) {
      auto p = tile<ty::ptr<A>>(A::dtype == DType::i32 ? args_.atom32 : args_.atom64) + offs;
      tile<A> x = convert<A>(v);
      auto rmw = [&](auto&&... mask) {
        switch (kind) {
          case 0: tl::atomic_add(p, x, mask..., sem); break;
          case 1: tl::atomic_max(p, x, mask..., sem); break;
          case 2: tl::atomic_min(p, x, mask..., sem); break;
          case 3: tl::atomic_and(p, x, mask..., sem); break;
          case 4: tl::atomic_or(p, x, mask..., sem); break;
          default: tl::atomic_xor(p, x, mask..., sem); break;
        }
      };
      if (!T.empty() && chance(0.4)) rmw((perm(T, 0) % 2) == 0);
      else rmw();
    };
    if (wide) go(ty::i64{});
    else go(ty::i32{});
  }

  // --- arithmetic ---
  // x op literal (or literal op x): the literal typed by the tile, as Triton's weak typing.
  template <class E> tile<E> arith_lit(Op op, const tile<E>& x) {
    if constexpr (is_float_v<E>) {
      double c = float_lit();
      bool first = chance(0.3);
      switch (op) {
        case Op::add: return first ? c + x : x + c;
        case Op::sub: return first ? c - x : x - c;
        case Op::mul: return first ? c * x : x * c;
        case Op::div: return first ? c / x : x / c;
        case Op::rem: return x % c;
        case Op::min: return tl::minimum(x, c);
        default: return tl::maximum(x, c);
      }
    } else {
      int64_t c = int_lit(E::dtype);
      int w = tl::bit_width(E::dtype);
      switch (op) {
        case Op::add: return x + c;
        case Op::sub: return chance(0.3) ? c - x : x - c;
        case Op::mul: return x * c;
        case Op::div: case Op::rem: {
          if (c == 0 || c == -1) c = 3;
          return op == Op::div ? x / c : x % c;
        }
        case Op::min: return tl::minimum(x, c);
        case Op::max: return tl::maximum(x, c);
        case Op::band: return x & c;
        case Op::bor: return x | c;
        case Op::bxor: return x ^ c;
        case Op::shl: return x << int64_t(uni(0, w - 1));
        default: return x >> int64_t(uni(0, w - 1));
      }
    }
  }

  // The second operand of a binary op on v: a tile of the same shape, a scalar, a
  // reduction broadcast back along its axis, or a run-time scalar; converted to E.
  template <class E> std::optional<tile<E>> operand_for(Var* v) {
    int k = uni(0, 9);
    Var* o = nullptr;
    if (k <= 4) o = pick([&](Var& x) { return x.shape == v->shape && x.dt != DType::i1 && &x != v; });
    else if (k <= 6) o = pick([&](Var& x) { return x.shape.empty() && x.dt != DType::i1; });
    else if (k <= 8 && v->shape.size() == 2) {
      int axis = uni(0, 1);  // the dim kept: a [M] (from reducing axis 1) as [M, 1], or [N] as [1, N]
      Shape want = {v->shape[size_t(axis)]};
      if (Var* r = pick([&](Var& x) { return x.shape == want && x.dt != DType::i1; })) {
        note("broadcast");
        std::optional<tile<E>> out;
        out.emplace(tl::expand_dims(convert<E>(r), 1 - axis));
        return out;
      }
    }
    if (!o) return std::nullopt;
    std::optional<tile<E>> out;
    out.emplace(convert<E>(o));
    return out;
  }

  void binary() {
    Var* v = pick([](Var& x) { return x.dt != DType::i1; });
    if (!v) return;
    bool fl = tl::is_float(v->dt);
    Op op = fl ? one_of({Op::add, Op::sub, Op::mul, Op::div, Op::rem, Op::min, Op::max, Op::add, Op::mul})
               : one_of({Op::add, Op::sub, Op::mul, Op::div, Op::rem, Op::min, Op::max, Op::band, Op::bor, Op::bxor,
                         Op::shl, Op::shr, Op::add, Op::mul});
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        std::optional<tile<E>> y = chance(0.7) ? operand_for<E>(v) : std::nullopt;
        if (y) add(arith_checked<E>(op, v->as<E>(), *y));
        else add(arith_lit<E>(op, v->as<E>()));
      }
    });
  }
  template <class E> tile<E> arith_checked(Op op, tile<E> x, tile<E> y) {
    if constexpr (!is_float_v<E>) {
      if (op == Op::div || op == Op::rem) {
        y = tl::where(y == 0, 1, y);
        if constexpr (tl::is_signed(E::dtype)) {
          int64_t mn = -(int64_t(1) << (tl::bit_width(E::dtype) - 1));
          x = tl::where((x == mn) & (y == -1), 0, x);
        }
      }
      if (op == Op::shl || op == Op::shr) y = y & int64_t(tl::bit_width(E::dtype) - 1);
      switch (op) {
        case Op::band: return x & y;
        case Op::bor: return x | y;
        case Op::bxor: return x ^ y;
        case Op::shl: return x << y;
        case Op::shr: return x >> y;
        default: break;
      }
    }
    switch (op) {
      case Op::add: return x + y;
      case Op::sub: return x - y;
      case Op::mul: return x * y;
      case Op::div: return x / y;
      case Op::rem: return x % y;
      case Op::min: return tl::minimum(x, y);
      default: return tl::maximum(x, y);
    }
  }

  // Two tiles of different dtypes: the tracer promotes (Triton's rules) and casts.
  void mixed() {
    Var* a = pick([](Var& x) { return x.dt != DType::i1; });
    if (!a) return;
    Var* b = pick([&](Var& x) { return x.dt != DType::i1 && x.dt != a->dt && (x.shape == a->shape || x.shape.empty()); });
    if (!b) return;
    note("promote");
    int k = uni(0, 3);
    with_elem(a->dt, [&]<class A>(A) {
      with_elem(b->dt, [&]<class B>(B) {
        if constexpr (!is_i1_v<A> && !is_i1_v<B>) {
          const tile<A>& x = a->as<A>();
          const tile<B>& y = b->as<B>();
          if (k == 0) add(x + y);
          else if (k == 1) add(x - y);
          else if (k == 2) add(x * y);
          else add(x < y);
        }
      });
    });
  }

  void unary() {
    Var* v = pick([](Var& x) { return x.dt != DType::i1; });
    if (!v) return;
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        const tile<E>& x = v->as<E>();
        if constexpr (!is_float_v<E>) {
          int k = uni(0, 2);
          add(k == 0 ? -x : k == 1 ? ~x : tl::abs(x));
        } else {
          // f64 transcendentals have no GPU math library yet (a compile error there): only
          // sqrt, rsqrt, floor, ceil, neg and abs on f64.
          bool f64 = E::dtype == DType::f64;
          // exp, log, sin and cos are the IR's own ops (the reference's) only in their fast
          // forms: tl::exp/log/log2/sin/cos are compositions of many ops (dsl/src/math.cpp,
          // tested against their own references in math_test), which the reference does
          // not interpret.
          Op op = f64 ? one_of({Op::neg, Op::abs, Op::sqrt, Op::rsqrt, Op::floor, Op::ceil})
                      : one_of({Op::neg, Op::abs, Op::exp, Op::exp2, Op::log, Op::sqrt, Op::rsqrt, Op::sin, Op::cos,
                                Op::erf, Op::floor, Op::ceil});
          tile<E> in = x;
          if ((op == Op::log || op == Op::sqrt || op == Op::rsqrt) && chance(0.6)) in = tl::abs(x) + 1.0;
          if (op != Op::neg && op != Op::abs && op != Op::floor && op != Op::ceil) note("math");
          switch (op) {
            case Op::neg: add(-in); break;
            case Op::abs: add(tl::abs(in)); break;
            case Op::exp: add(tl::fast_expf(in)); break;
            case Op::exp2: add(tl::exp2(in)); break;
            case Op::log: add(tl::fast_logf(in)); break;
            case Op::sqrt: add(tl::sqrt(in)); break;
            case Op::rsqrt: add(tl::rsqrt(in)); break;
            case Op::sin: add(tl::fast_sinf(in)); break;
            case Op::cos: add(tl::fast_cosf(in)); break;
            case Op::erf: add(tl::erf(in)); break;
            case Op::floor: add(tl::floor(in)); break;
            default: add(tl::ceil(in)); break;
          }
        }
      }
    });
  }

  void fma() {
    Var* a = pick([](Var& x) { return tl::is_float(x.dt); });
    if (!a) return;
    note("fma");
    with_elem(a->dt, [&]<class E>(E) {
      if constexpr (is_float_v<E>) {
        Var* b = pick([&](Var& x) { return x.shape == a->shape && x.dt != DType::i1; });
        Var* c = pick([&](Var& x) { return x.shape == a->shape && x.dt != DType::i1; });
        if (b && c) add(tl::fma(a->as<E>(), convert<E>(b), convert<E>(c)));
      }
    });
  }

  // A comparison, kept as an i1 tile and used by tl::where (and i1 logic).
  void compare_where() {
    Var* a = pick([](Var& x) { return x.dt != DType::i1; });
    if (!a) return;
    note("where");
    std::optional<tl::i1> c;
    int pred = uni(0, 5);
    with_elem(a->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        const tile<E>& x = a->as<E>();
        std::optional<tile<E>> y = operand_for<E>(a);
        if (!y) {
          if constexpr (is_float_v<E>) y.emplace(tl::full<E>(a->shape, float_lit()));
          else y.emplace(tl::full<E>(a->shape, double(std::clamp<int64_t>(int_lit(E::dtype), -(1 << 20), 1 << 20))));
        }
        switch (pred) {
          case 0: c.emplace(x < *y); break;
          case 1: c.emplace(x <= *y); break;
          case 2: c.emplace(x > *y); break;
          case 3: c.emplace(x >= *y); break;
          case 4: c.emplace(x == *y); break;
          default: c.emplace(x != *y); break;
        }
      }
    });
    if (!c) return;
    if (Var* other = pick([&](Var& x) { return x.dt == DType::i1 && x.shape == a->shape; }); other && chance(0.3))
      c.emplace(one_of({0, 1, 2}) == 0 ? (*c & other->as<ty::i1>()) : chance(0.5) ? (*c | other->as<ty::i1>()) : (*c ^ other->as<ty::i1>()));
    if (chance(0.2)) c.emplace(!*c);
    add(*c);
    // where(c, a, b): b of a's shape (or a literal), promoted as Triton does
    Var* b = pick([&](Var& x) { return x.shape == a->shape && x.dt != DType::i1 && &x != a; });
    with_elem(a->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        const tile<E>& x = a->as<E>();
        if (b && chance(0.7)) {
          with_elem(b->dt, [&]<class B>(B) {
            if constexpr (!is_i1_v<B>) add(chance(0.5) ? tl::where(*c, x, b->as<B>()) : tl::where(*c, b->as<B>(), x));
          });
        } else if constexpr (is_float_v<E>) {
          add(tl::where(*c, x, float_lit()));
        } else {
          add(tl::where(*c, int_lit(E::dtype), x));
        }
      }
    });
  }

  void cast() {
    Var* v = pick([](Var&) { return true; });
    if (!v) return;
    DType to = pick_dtype();
    note("cast");
    with_elem(to, [&]<class F>(F) { add(convert<F>(v)); });
  }

  void reduce() {
    Var* v = pick([](Var& x) { return !x.shape.empty() && x.dt != DType::i1; });
    if (!v) return;
    note("reduce");
    int axis = uni(0, int(v->shape.size()) - 1);
    int k = uni(0, 4);
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) {
        const tile<E>& x = v->as<E>();
        switch (k) {
          case 0: add(tl::sum(x, axis)); break;
          case 1: add(tl::max(x, axis)); break;
          case 2: add(tl::min(x, axis)); break;
          case 3: note("argmax"); add(tl::argmax(x, axis)); break;
          default: note("argmax"); add(tl::argmin(x, axis)); break;
        }
      }
    });
  }

  void cumsum() {
    Var* v = pick([](Var& x) { return !x.shape.empty() && x.dt != DType::i1; });
    if (!v) return;
    note("cumsum");
    int axis = uni(0, int(v->shape.size()) - 1);
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (!is_i1_v<E>) add(tl::cumsum(v->as<E>(), axis));
    });
  }

  // tl::dot [M, K] x [K, N] (+ acc) with M, N the program's 2-D shape: f32, f16, bf16
  // (f32 accumulator) or i8 (i32). Operands are loaded or converted from the pool.
  void dot() {
    if (S_.size() != 2 || S_[0] < 16 || S_[1] < 16) return;
    note("dot");
    int M = S_[0], N = S_[1];
    DType in = one_of({DType::f16, DType::bf16, DType::f32, DType::i8});
    int K = in == DType::i8 ? 32 : one_of({16, 32});
    with_elem(in, [&]<class E>(E) {
      if constexpr (E::dtype == DType::f16 || E::dtype == DType::bf16 || E::dtype == DType::f32 || E::dtype == DType::i8) {
        auto operand = [&](const Shape& T) -> tile<E> {
          if (Var* v = pick([&](Var& x) { return x.shape == T && x.dt != DType::i1; }); v && chance(0.5))
            return convert<E>(v);
          return load_new(E::dtype, T)->template as<E>();
        };
        tile<E> a = operand({M, K});
        tile<E> b = chance(0.3) ? tile<E>(tl::trans(operand({N, K}))) : operand({K, N});
        using Acc = tl::dot_acc_t<E>;
        Var* acc = pick([&](Var& x) { return x.shape == S_ && x.dt == Acc::dtype; });
        if (acc && chance(0.6)) add(tl::dot(a, b, acc->as<Acc>()));
        else add(tl::dot(a, b));
      }
    });
  }

  // Reassign v from the pool, keeping its dtype and shape (what makes it loop-carried).
  void reassign(Var* v) {
    with_elem(v->dt, [&]<class E>(E) {
      if constexpr (is_i1_v<E>) {
        v->as<E>() = !v->as<E>();
      } else {
        std::optional<tile<E>> y = operand_for<E>(v);
        Op op = tl::is_float(E::dtype) ? one_of({Op::add, Op::mul, Op::sub, Op::max, Op::min})
                                       : one_of({Op::add, Op::mul, Op::sub, Op::bxor, Op::max, Op::shl});
        tile<E> r = y ? arith_checked<E>(op, v->as<E>(), *y) : arith_lit<E>(op, v->as<E>());
        if (r.shape() == v->shape) v->as<E>() = r;
        else v->as<E>() = tl::broadcast_to(r, v->shape).template to<E>();
      }
    });
  }
  std::vector<Var*> pick_carried() {
    std::vector<Var*> c;
    int k = uni(1, 3);
    for (int q = 0; q < k; ++q)
      if (Var* v = pick([&](Var& x) { return std::find(c.begin(), c.end(), &x) == c.end(); })) c.push_back(v);
    return c;
  }
  void body(int steps, const std::vector<Var*>& carried) {
    for (int k = 0; k < steps; ++k) step();
    for (Var* v : carried) reassign(v);
    if (chance(0.3)) store(pool_.back().get());
  }

  // for k in range(lb, ub, step): a few steps, then the chosen tiles reassigned.
  void loop() {
    if (depth_ >= 2) return;
    note("loop");
    tl::i32 lb = chance(0.6) ? tl::i32(uni(0, 2)) : *pid_;
    tl::i32 ub = chance(0.6) ? lb + uni(0, 4) : (*n_ & 3) + uni(0, 1);
    int stepv = uni(1, 2);
    if (chance(0.25)) {  // counting down: range(hi, lo, -step)
      note("down-loop");
      std::swap(lb, ub);
      stepv = -stepv;
    }
    std::vector<Var*> carried = pick_carried();
    int steps = uni(1, 4);
    ++depth_;
    for (auto k : tl::range(lb, ub, tl::i32(stepv))) {
      add(k);
      body(steps, carried);
      drop_above(depth_ - 1);
    }
    --depth_;
  }

  // if_(cond) { ... } else { ... }: cond a scalar from the program's integers.
  void branch() {
    Var* s = pick([](Var& x) { return x.shape.empty() && tl::is_int(x.dt) && x.dt != DType::i1; });
    if (!s || depth_ >= 2) return;
    note("if");
    std::optional<tl::i1> c;
    with_elem(s->dt, [&]<class E>(E) {
      if constexpr (tl::is_int(E::dtype) && !is_i1_v<E>) {
        int64_t lit = std::clamp<int64_t>(uni(-3, 3), tl::is_signed(E::dtype) ? -3 : 0, 3);
        c.emplace(chance(0.5) ? s->as<E>() > lit : s->as<E>() == lit);
      }
    });
    std::vector<Var*> carried = pick_carried();
    ++depth_;
    bool with_else = chance(0.6);
    if (with_else) {
      tl::if_(*c, [&] { body(uni(0, 3), carried); drop_above(depth_ - 1); }).else_([&] {
        body(uni(0, 3), carried);
        drop_above(depth_ - 1);
      });
    } else {
      tl::if_(*c, [&] { body(uni(0, 3), carried); drop_above(depth_ - 1); });
    }
    --depth_;
  }

  void step() {
    int k = uni(0, 99);
    if (k < 24) binary();
    else if (k < 32) unary();
    else if (k < 42) compare_where();
    else if (k < 52) cast();
    else if (k < 58) mixed();
    else if (k < 64) reduce();
    else if (k < 67) cumsum();
    else if (k < 70) fma();
    else if (k < 75) load_new(pick_dtype(), chance(0.8) ? S_ : Shape{});
    else if (k < 80) dot();
    else if (k < 86) loop();
    else if (k < 91) branch();
    else if (k < 95) atomic();
    else if (!pool_.empty()) store(pick([](Var&) { return true; }));
  }
};

}  // namespace

void generate(uint64_t seed, uint32_t avoid, const KernelArgs& args, Plan& plan) {
  plan = Plan{};
  Gen(seed, avoid, args, plan).run();
}

}  // namespace fuzzdiff

// The reference evaluator (reference.hpp): an interpreter of the tile IR over the ops the
// generator produces, element by element. docs/ir.md is the specification it follows.
#include "fuzz/differential/reference.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

#include "fuzz/differential/numbers.hpp"

namespace fuzzdiff {

using tl::DType;
using tl::Op;
namespace ir = tl::ir;

RefBuffer RefBuffer::from_host(DType dt, const void* bytes, size_t n, bool known) {
  RefBuffer b;
  b.dt = dt;
  b.unk.assign(n, 0);
  b.written.assign(n, known ? 1 : 0);
  b.writer.assign(n, -1);
  if (tl::is_float(dt)) {
    b.f.resize(n);
    b.e.assign(n, 0.0);
    for (size_t k = 0; k < n; ++k) b.f[k] = read_float(bytes, k, dt);
  } else {
    b.i.resize(n);
    for (size_t k = 0; k < n; ++k) b.i[k] = read_int(bytes, k, dt);
  }
  return b;
}

namespace {

// One IR value: per element an integer (ints, i1, pointer offsets) or a float and its
// error bound, an unknown flag, and for pointers the buffer pointed into.
struct Val {
  ir::Type type;
  std::vector<int64_t> i;
  std::vector<double> f, e;
  std::vector<uint8_t> u;
  std::vector<int> buf;

  size_t n() const { return u.size(); }
  bool is_f() const { return tl::is_float(type.dtype); }
  static Val of(const ir::Type& t) {
    Val v;
    v.type = t;
    size_t n = size_t(t.numel());
    v.u.assign(n, 0);
    if (tl::is_float(t.dtype)) v.f.assign(n, 0.0), v.e.assign(n, 0.0);
    else v.i.assign(n, 0);
    if (t.is_ptr()) v.buf.assign(n, -1);
    return v;
  }
};

[[noreturn]] void ill(const ir::Operation& o, const std::string& what) {
  throw IllDefined(fmt::format("{} at line {}: {}", tl::op_name(o.op), o.loc.line, what));
}

std::vector<int64_t> strides_of(const std::vector<int>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

double ulp_rel(DType t) { return std::ldexp(1.0, -format_of(t).mant); }
double smallest_subnormal(DType t) { return std::ldexp(1.0, 1 - format_of(t).bias - format_of(t).mant); }

class Interp {
 public:
  Interp(std::vector<RefBuffer>& mem, const Profile& p) : mem_(mem), p_(p) {
    stamp_.resize(mem.size());
    for (size_t b = 0; b < mem.size(); ++b) stamp_[b].assign(mem[b].size(), 0);
  }

  void run(const ir::Function& f, const std::vector<RefArg>& args, int grid) {
    nprog_ = grid;
    for (pid_ = 0; pid_ < grid; ++pid_) {
      env_.clear();
      for (size_t a = 0; a < f.body.args.size(); ++a) {
        const ir::Value* v = f.body.args[a].get();
        Val x = Val::of(v->type);
        if (v->type.is_ptr()) x.buf[0] = args.at(a).buffer, x.i[0] = 0;
        else if (x.is_f()) x.f[0] = round_d(args.at(a).f, v->type.dtype);
        else x.i[0] = wrap(v->type.dtype, uint64_t(args.at(a).i));
        env_[v] = std::move(x);
      }
      block(f.body);
    }
  }

 private:
  std::vector<RefBuffer>& mem_;
  const Profile& p_;
  std::unordered_map<const ir::Value*, Val> env_;
  std::vector<std::vector<uint64_t>> stamp_;
  uint64_t exec_ = 0;
  int pid_ = 0, nprog_ = 1;

  const Val& get(const ir::Value* v) {
    auto it = env_.find(v);
    if (it == env_.end()) throw std::logic_error("reference: value used before it is defined");
    return it->second;
  }

  // Runs a block; returns the values its yield passes on (none for the body).
  std::vector<Val> block(const ir::Block& b) {
    for (const auto& o : b.ops) {
      if (o->op == Op::yield) {
        std::vector<Val> out;
        for (const ir::Value* v : o->operands) out.push_back(get(v));
        return out;
      }
      op(*o);
    }
    return {};
  }

  // A rounding's worth of slack at w: what two correct computations of nearby values may
  // differ by after rounding to t (one ulp, the subnormal spacing; on a GPU a flushed
  // subnormal too).
  double allowance(double w, DType t) const {
    if (!std::isfinite(w)) return 0;
    return std::fabs(w) * ulp_rel(t) + smallest_subnormal(t) + (p_.gpu ? min_normal(t) : 0.0);
  }
  // The error bound of a float result: the propagated one, plus a rounding's slack
  // unless the op is correctly rounded here from exact inputs (`exact`). A value whose
  // interval reaches past the largest finite value cannot be told from infinity.
  void finish(Val& r, size_t k, double w, double prop, bool exact) {
    DType t = r.type.dtype;
    r.f[k] = w;
    double e = prop;
    if (!(exact && prop == 0 && !p_.gpu)) e += allowance(w, t);
    if (e > 0 && (std::isnan(w) || std::isinf(w) || std::fabs(w) + e > fuzzdiff::max_finite(t))) r.u[k] = 1;
    if (std::isnan(e)) r.u[k] = 1;
    r.e[k] = e;
  }

  void op(const ir::Operation& o) {
    if (o.op == Op::for_) return loop(o);
    if (o.op == Op::if_) return branch(o);
    if (o.op == Op::store) return store(o);
    if (o.op == Op::atomic_rmw) return atomic(o);
    const ir::Type& rt = o.result()->type;
    Val r = Val::of(rt);
    switch (o.op) {
      case Op::constant:
        if (r.is_f()) r.f[0] = round_d(o.f, rt.dtype);
        else r.i[0] = wrap(rt.dtype, uint64_t(o.i0));
        break;
      case Op::program_id: r.i[0] = o.i0 == 0 ? pid_ : 0; break;
      case Op::num_programs: r.i[0] = o.i0 == 0 ? nprog_ : 1; break;
      case Op::arange:
        for (size_t k = 0; k < r.n(); ++k) r.i[k] = o.i0 + int64_t(k);
        break;
      case Op::splat: case Op::broadcast: case Op::reshape: case Op::expand_dims: case Op::trans:
        reshape(o, r);
        break;
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::min: case Op::max:
      case Op::band: case Op::bor: case Op::bxor: case Op::shl: case Op::shr:
        binary(o, r);
        break;
      case Op::neg: case Op::bnot: case Op::abs: case Op::exp: case Op::exp2: case Op::log: case Op::log2:
      case Op::sqrt: case Op::rsqrt: case Op::sin: case Op::cos: case Op::erf: case Op::floor: case Op::ceil:
        unary(o, r);
        break;
      case Op::fma: fma(o, r); break;
      case Op::cmp: compare(o, r); break;
      case Op::select: {
        const Val &c = get(o.operands[0]), &a = get(o.operands[1]), &b = get(o.operands[2]);
        for (size_t k = 0; k < r.n(); ++k) {
          const Val& s = c.i[k] ? a : b;
          if (c.u[k] || s.u[k]) { r.u[k] = 1; continue; }
          if (r.is_f()) r.f[k] = s.f[k], r.e[k] = s.e[k];
          else r.i[k] = s.i[k];
          if (!r.buf.empty()) r.buf[k] = s.buf[k];
        }
        break;
      }
      case Op::cast: cast(o, r); break;
      case Op::addptr: {
        const Val &p = get(o.operands[0]), &off = get(o.operands[1]);
        for (size_t k = 0; k < r.n(); ++k) {
          r.u[k] = p.u[k] | off.u[k];
          r.buf[k] = p.buf[k];
          r.i[k] = p.i[k] + off.i[k];
        }
        break;
      }
      case Op::load: load(o, r); break;
      case Op::reduce: reduce(o, r); break;
      case Op::scan: scan(o, r); break;
      case Op::dot: dot(o, r); break;
      default:
        throw std::logic_error(fmt::format("reference: op '{}' is not one the generator makes", tl::op_name(o.op)));
    }
    env_[o.result()] = std::move(r);
  }

  // splat, broadcast, reshape, expand_dims, trans: every result element is one source element.
  void reshape(const ir::Operation& o, Val& r) {
    const Val& a = get(o.operands[0]);
    const auto& rs = r.type.shape;
    const auto& as = a.type.shape;
    auto rstr = strides_of(rs), astr = strides_of(as);
    for (size_t k = 0; k < r.n(); ++k) {
      size_t src = 0;
      if (o.op == Op::splat || a.type.is_scalar()) src = 0;
      else if (o.op == Op::reshape || o.op == Op::expand_dims) src = k;
      else {
        std::vector<int64_t> idx(rs.size());
        for (size_t d = 0; d < rs.size(); ++d) idx[d] = (int64_t(k) / rstr[d]) % rs[d];
        for (size_t d = 0; d < rs.size(); ++d) {
          if (o.op == Op::broadcast) src += size_t((as[d] == 1 ? 0 : idx[d]) * astr[d]);
          else src += size_t(idx[d] * astr[o.ints[d]]);  // trans: result dim d is source dim perm[d]
        }
      }
      r.u[k] = a.u[src];
      if (r.is_f()) r.f[k] = a.f[src], r.e[k] = a.e[src];
      else r.i[k] = a.i[src];
      if (!r.buf.empty()) r.buf[k] = a.buf[src];
    }
  }

  void binary(const ir::Operation& o, Val& r) {
    const Val &a = get(o.operands[0]), &b = get(o.operands[1]);
    DType t = r.type.dtype;
    for (size_t k = 0; k < r.n(); ++k) {
      if (a.u[k] || b.u[k]) { r.u[k] = 1; continue; }
      if (r.is_f()) float_binary(o, r, k, a.f[k], a.e[k], b.f[k], b.e[k]);
      else r.i[k] = int_binary(o, t, a.i[k], b.i[k]);
    }
  }

  int64_t int_binary(const ir::Operation& o, DType t, int64_t x, int64_t y) {
    uint64_t ux = uint64_t(x), uy = uint64_t(y);
    bool s = tl::is_signed(t);
    int w = tl::bit_width(t);
    switch (o.op) {
      case Op::add: return wrap(t, ux + uy);
      case Op::sub: return wrap(t, ux - uy);
      case Op::mul: return wrap(t, ux * uy);
      case Op::div: case Op::rem: {
        if (y == 0) ill(o, "integer division by zero");
        if (s && y == -1 && x == int_min(t)) ill(o, "signed division overflow (MIN / -1)");
        if (!s && t == DType::u64) return wrap(t, o.op == Op::div ? ux / uy : ux % uy);
        return wrap(t, uint64_t(o.op == Op::div ? x / y : x % y));  // C: truncating, remainder has the dividend's sign
      }
      case Op::min: case Op::max: {
        bool less = t == DType::u64 ? ux < uy : x < y;
        return (o.op == Op::min) == less ? x : y;
      }
      case Op::band: return wrap(t, ux & uy);
      case Op::bor: return wrap(t, ux | uy);
      case Op::bxor: return wrap(t, ux ^ uy);
      case Op::shl: case Op::shr: {
        uint64_t amount = t == DType::i1 ? uint64_t(y) : uint64_t(y) & (w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1);
        if (amount >= uint64_t(w)) ill(o, fmt::format("shift by {} of a {}-bit value", y, w));
        if (o.op == Op::shl) return wrap(t, ux << amount);
        if (s) return wrap(t, uint64_t(x >> amount));  // arithmetic
        uint64_t m = w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
        return wrap(t, (ux & m) >> amount);
      }
      default: throw std::logic_error("int_binary");
    }
  }

  void float_binary(const ir::Operation& o, Val& r, size_t k, double a, double ea, double b, double eb) {
    DType t = r.type.dtype;
    auto rnd = [&](double x) { return t == DType::f64 ? x : round_d(x, t); };
    switch (o.op) {
      case Op::add: return finish(r, k, rnd(a + b), ea + eb, true);
      case Op::sub: return finish(r, k, rnd(a - b), ea + eb, true);
      case Op::mul: return finish(r, k, rnd(a * b), std::fabs(a) * eb + std::fabs(b) * ea + ea * eb, true);
      case Op::div: {
        if (eb > 0 && eb >= std::fabs(b)) { r.u[k] = 1; return; }
        double q = a / b;
        double prop = (ea > 0 || eb > 0) ? (ea + std::fabs(q) * eb) / (std::fabs(b) - eb) : 0.0;
        return finish(r, k, rnd(q), prop, true);
      }
      case Op::rem:  // fmod: exact, but it jumps where a crosses a multiple of b
        if (ea > 0 || eb > 0) { r.u[k] = 1; return; }
        return finish(r, k, rnd(std::fmod(a, b)), 0.0, true);
      case Op::min: case Op::max: {  // minnum / maxnum: a NaN operand gives the other
        double w = std::isnan(a) ? b : std::isnan(b) ? a : (o.op == Op::min ? std::min(a, b) : std::max(a, b));
        return finish(r, k, w, std::max(ea, eb), true);
      }
      default: throw std::logic_error("float_binary");
    }
  }

  // Transcendentals: f in long double, then what the targets' implementations may be off
  // by (absolute, at input x and true result y): libm's few ulp on the CPU; on a GPU the
  // hardware approximations (ex2.approx's 2 ulp and exp's x*log2(e) rounding, lg2.approx's
  // 2^-22 absolute, sin.approx's 2^-20.9 absolute in [-100 pi, 100 pi]).
  double approx_error(Op op, double x, double y, DType t) const {
    double ay = std::fabs(y);
    double f32_ulp = std::ldexp(1.0, -23);
    if (t == DType::f64) return ay * std::ldexp(1.0, -50) + 1e-300;
    if (!p_.gpu) return ay * 4 * f32_ulp + 1e-37;
    switch (op) {
      case Op::exp: return ay * (std::ldexp(1.0, -20) + std::fabs(x) * std::ldexp(1.0, -22)) + 1e-37;
      case Op::exp2: return ay * std::ldexp(1.0, -20) + 1e-37;
      case Op::log: case Op::log2: return ay * std::ldexp(1.0, -20) + std::ldexp(1.0, -20);
      case Op::sin: case Op::cos: return std::ldexp(1.0, -19) * (1 + std::fabs(x) / 64);
      case Op::erf: return std::ldexp(1.0, -17);
      default: return ay * std::ldexp(1.0, -20) + 1e-37;  // sqrt, rsqrt
    }
  }

  void unary(const ir::Operation& o, Val& r) {
    const Val& a = get(o.operands[0]);
    DType t = r.type.dtype;
    for (size_t k = 0; k < r.n(); ++k) {
      if (a.u[k]) { r.u[k] = 1; continue; }
      if (!r.is_f()) {
        uint64_t x = uint64_t(a.i[k]);
        if (o.op == Op::neg) r.i[k] = wrap(t, ~x + 1);
        else if (o.op == Op::bnot) r.i[k] = wrap(t, ~x);
        else if (o.op == Op::abs) r.i[k] = tl::is_signed(t) && a.i[k] < 0 ? wrap(t, ~x + 1) : a.i[k];
        else throw std::logic_error("reference: math on an integer");
        continue;
      }
      double x = a.f[k], ex = a.e[k];
      switch (o.op) {
        case Op::neg: finish(r, k, -x, ex, true); continue;
        case Op::abs: finish(r, k, std::fabs(x), ex, true); continue;
        case Op::floor: case Op::ceil: {
          auto fn = [&](double v) { return o.op == Op::floor ? std::floor(v) : std::ceil(v); };
          if (ex > 0 && fn(x - ex) != fn(x + ex)) { r.u[k] = 1; continue; }
          finish(r, k, fn(x), 0.0, true);
          continue;
        }
        default: break;
      }
      std::function<long double(long double)> fn;
      long double lo_domain = -INFINITY;  // where fn stops being defined (or continuous)
      switch (o.op) {
        case Op::exp: fn = [](long double v) { return std::exp(v); }; break;
        case Op::exp2: fn = [](long double v) { return std::exp2(v); }; break;
        case Op::log: fn = [](long double v) { return std::log(v); }; lo_domain = 0; break;
        case Op::log2: fn = [](long double v) { return std::log2(v); }; lo_domain = 0; break;
        case Op::sqrt: fn = [](long double v) { return std::sqrt(v); }; lo_domain = 0; break;
        case Op::rsqrt: fn = [](long double v) { return 1 / std::sqrt(v); }; lo_domain = 0; break;
        case Op::sin: fn = [](long double v) { return std::sin(v); }; break;
        case Op::cos: fn = [](long double v) { return std::cos(v); }; break;
        case Op::erf: fn = [](long double v) { return std::erf(v); }; break;
        default: throw std::logic_error("unary");
      }
      if ((o.op == Op::sin || o.op == Op::cos) && p_.gpu && std::fabs(x) > 100 * M_PI) { r.u[k] = 1; continue; }
      // sqrt is held exact: the double's own sqrt, correctly rounded (sqrtl rounded to a
      // double rounds twice and was off by an ulp for sqrt(19713), seed 7301317; f32 from
      // the double's sqrt is exact too, 53 >= 2 * 24 + 2 bits)
      long double y = o.op == Op::sqrt ? (long double)std::sqrt(x) : fn(x);
      double prop = 0;
      if (ex > 0) {
        if (x - ex <= lo_domain && x + ex >= lo_domain) { r.u[k] = 1; continue; }
        // monotone functions move at most to their value at an end of [x - ex, x + ex];
        // sin and cos are not monotone there but move at most |dx| (and at most 2)
        if (o.op == Op::sin || o.op == Op::cos) prop = std::min(ex, 2.0);
        else prop = double(std::max(std::fabs(fn(x + ex) - y), std::fabs(fn(x - ex) - y)));
      }
      double w = round_d(double(y), t);
      bool exact_op = o.op == Op::sqrt && !p_.gpu;  // IEEE sqrt is correctly rounded
      if (std::isfinite(x) && !exact_op && std::isfinite(double(y))) prop += approx_error(o.op, x, double(y), t);
      finish(r, k, w, prop, exact_op || !std::isfinite(x) || !std::isfinite(double(y)));
    }
  }

  void fma(const ir::Operation& o, Val& r) {
    const Val &a = get(o.operands[0]), &b = get(o.operands[1]), &c = get(o.operands[2]);
    DType t = r.type.dtype;
    for (size_t k = 0; k < r.n(); ++k) {
      if (a.u[k] || b.u[k] || c.u[k]) { r.u[k] = 1; continue; }
      double x = a.f[k], y = b.f[k], z = c.f[k];
      double w = t == DType::f64 ? std::fma(x, y, z) : round_d(double((long double)x * y + z), t);
      double prop = std::fabs(x) * b.e[k] + std::fabs(y) * a.e[k] + a.e[k] * b.e[k] + c.e[k];
      finish(r, k, w, prop, t == DType::f64);
    }
  }

  void compare(const ir::Operation& o, Val& r) {
    const Val &a = get(o.operands[0]), &b = get(o.operands[1]);
    auto pred = tl::CmpPred(o.i0);
    bool fl = a.is_f();
    DType t = a.type.dtype;
    for (size_t k = 0; k < r.n(); ++k) {
      if (a.u[k] || b.u[k]) { r.u[k] = 1; continue; }
      int c;  // -1, 0, 1, or 2 for unordered
      if (fl) {
        double x = a.f[k], y = b.f[k];
        if (std::isnan(x) || std::isnan(y)) c = 2;
        else {
          double slack = a.e[k] + b.e[k];
          if (slack > 0 && std::fabs(x - y) <= slack) { r.u[k] = 1; continue; }
          c = x < y ? -1 : x > y ? 1 : 0;
        }
      } else if (t == DType::u64 || t == DType::ptr) {
        uint64_t x = uint64_t(a.i[k]), y = uint64_t(b.i[k]);
        c = x < y ? -1 : x > y ? 1 : 0;
      } else {
        c = a.i[k] < b.i[k] ? -1 : a.i[k] > b.i[k] ? 1 : 0;
      }
      bool v = false;
      switch (pred) {
        case tl::CmpPred::lt: v = c == -1; break;
        case tl::CmpPred::le: v = c == -1 || c == 0; break;
        case tl::CmpPred::gt: v = c == 1; break;
        case tl::CmpPred::ge: v = c == 1 || c == 0; break;
        case tl::CmpPred::eq: v = c == 0; break;
        case tl::CmpPred::ne: v = c != 0; break;  // true with a NaN
      }
      r.i[k] = v;
    }
  }

  void cast(const ir::Operation& o, Val& r) {
    const Val& a = get(o.operands[0]);
    DType from = a.type.dtype, to = r.type.dtype;
    for (size_t k = 0; k < r.n(); ++k) {
      if (a.u[k]) { r.u[k] = 1; continue; }
      if (!a.is_f()) {
        int64_t x = a.i[k];
        if (to == DType::i1) r.i[k] = x != 0;
        else if (tl::is_int(to)) r.i[k] = wrap(to, uint64_t(x));
        else {
          long double v = from == DType::u64 ? (long double)uint64_t(x) : (long double)x;  // exact for 64-bit ints
          finish(r, k, double(round_to(v, to)), 0.0, true);
        }
        continue;
      }
      double x = a.f[k], ex = a.e[k];
      if (to == DType::i1) {  // x != 0 (true for NaN)
        if (ex > 0 && std::fabs(x) <= ex) { r.u[k] = 1; continue; }
        r.i[k] = x != 0;
        continue;
      }
      if (tl::is_int(to)) {  // truncation toward zero, saturating, NaN gives 0
        auto conv = [&](double v) -> int64_t {
          if (std::isnan(v)) return 0;
          double tv = std::trunc(v);
          if (tv <= double(int_min(to))) return int_min(to);
          if (tv >= double(int_max_u(to))) return int64_t(int_max_u(to));  // 2^w-1 rounds up in double: saturate
          return int64_t(tv);
        };
        if (ex > 0 && (std::isnan(x) || conv(x - ex) != conv(x + ex))) { r.u[k] = 1; continue; }
        r.i[k] = wrap(to, uint64_t(conv(x)));
        continue;
      }
      finish(r, k, round_d(x, to), ex, true);
    }
  }

  void load(const ir::Operation& o, Val& r) {
    const Val& p = get(o.operands[0]);
    const Val* mask = o.operands.size() > 1 ? &get(o.operands[1]) : nullptr;
    const Val* other = o.operands.size() > 2 ? &get(o.operands[2]) : nullptr;
    for (size_t k = 0; k < r.n(); ++k) {
      if (mask && mask->u[k]) { r.u[k] = 1; continue; }
      if (mask && !mask->i[k]) {  // masked off: `other`, else 0
        if (other) {
          r.u[k] = other->u[k];
          if (r.is_f()) r.f[k] = other->f[k], r.e[k] = other->e[k];
          else r.i[k] = other->i[k];
        }
        continue;
      }
      if (p.u[k]) { r.u[k] = 1; continue; }
      const RefBuffer& m = buffer(o, p.buf[k], p.i[k]);
      size_t at = size_t(p.i[k]);
      if (!m.written[at]) ill(o, "load of an element nothing wrote (an output's poison)");
      r.u[k] = m.unk[at];
      if (r.is_f()) r.f[k] = m.f[at], r.e[k] = m.e[at];
      else r.i[k] = m.i[at];
    }
  }

  RefBuffer& buffer(const ir::Operation& o, int b, int64_t off) {
    if (b < 0 || size_t(b) >= mem_.size()) ill(o, "access through a pointer into no buffer");
    RefBuffer& m = mem_[size_t(b)];
    if (off < 0 || size_t(off) >= m.size())
      ill(o, fmt::format("unmasked access at element {} of a buffer of {}", off, m.size()));
    return m;
  }

  // Stores and atomics: one execution id per op execution, so that two lanes of one store
  // writing one element (a race between threads) is caught.
  void store(const ir::Operation& o) {
    const Val &p = get(o.operands[0]), &v = get(o.operands[1]);
    const Val* mask = o.operands.size() > 2 ? &get(o.operands[2]) : nullptr;
    ++exec_;
    for (size_t k = 0; k < p.n(); ++k) {
      if (mask && !mask->u[k] && !mask->i[k]) continue;
      if (p.u[k]) ill(o, "store through an unpredictable pointer");
      RefBuffer& m = buffer(o, p.buf[k], p.i[k]);
      size_t at = size_t(p.i[k]);
      if (stamp_[size_t(p.buf[k])][at] == exec_) ill(o, fmt::format("two lanes store to element {}", at));
      if (m.writer[at] >= 0 && m.writer[at] != pid_) ill(o, fmt::format("programs {} and {} store to element {}", m.writer[at], pid_, at));
      stamp_[size_t(p.buf[k])][at] = exec_;
      m.writer[at] = pid_;
      m.written[at] = 1;
      // A store under an unknown mask may or may not have happened.
      m.unk[at] = (mask && mask->u[k]) || v.u[k];
      if (v.is_f()) m.f[at] = v.f[k], m.e[at] = v.e[k];
      else m.i[at] = v.i[k];
    }
  }

  // Integer atomics whose combine commutes (add, max, min, and, or, xor): the final memory
  // does not depend on the order of lanes or programs. The old values returned do, so they
  // are unknown.
  void atomic(const ir::Operation& o) {
    const Val &p = get(o.operands[0]), &v = get(o.operands[1]);
    const Val* mask = o.operands.size() > 2 ? &get(o.operands[2]) : nullptr;
    Val r = Val::of(o.result()->type);
    auto kind = tl::AtomicKind(o.i0);
    for (size_t k = 0; k < p.n(); ++k) {
      if (mask && !mask->u[k] && !mask->i[k]) continue;  // masked off: 0, nothing done
      r.u[k] = 1;
      if (p.u[k]) ill(o, "atomic through an unpredictable pointer");
      RefBuffer& m = buffer(o, p.buf[k], p.i[k]);
      size_t at = size_t(p.i[k]);
      if ((mask && mask->u[k]) || v.u[k] || tl::is_float(m.dt) || kind == tl::AtomicKind::xchg) { m.unk[at] = 1; continue; }
      DType t = m.dt;
      uint64_t x = uint64_t(m.i[at]), y = uint64_t(v.i[k]);
      bool less = t == DType::u64 ? x < y : m.i[at] < v.i[k];
      switch (kind) {
        case tl::AtomicKind::add: m.i[at] = wrap(t, x + y); break;
        case tl::AtomicKind::max: m.i[at] = less ? v.i[k] : m.i[at]; break;
        case tl::AtomicKind::min: m.i[at] = less ? m.i[at] : v.i[k]; break;
        case tl::AtomicKind::band: m.i[at] = wrap(t, x & y); break;
        case tl::AtomicKind::bor: m.i[at] = wrap(t, x | y); break;
        case tl::AtomicKind::bxor: m.i[at] = wrap(t, x ^ y); break;
        default: break;
      }
      m.written[at] = 1;
    }
    env_[o.result()] = std::move(r);
  }

  // Reductions along one axis: an outer x axis x inner walk over the reduced elements.
  template <class F> void over_axis(const Val& a, int axis, Val& r, F&& fn) {
    const auto& s = a.type.shape;
    int64_t len = s[size_t(axis)];
    int64_t inner = 1;
    for (size_t d = size_t(axis) + 1; d < s.size(); ++d) inner *= s[d];
    std::vector<size_t> idx(static_cast<size_t>(len));
    for (size_t k = 0; k < r.n(); ++k) {
      int64_t outer = int64_t(k) / inner, in = int64_t(k) % inner;
      for (int64_t j = 0; j < len; ++j) idx[size_t(j)] = size_t((outer * len + j) * inner + in);
      fn(k, idx);
    }
  }

  void reduce(const ir::Operation& o, Val& r) {
    const Val& a = get(o.operands[0]);
    auto kind = tl::ReduceKind(o.i1);
    DType t = a.type.dtype;
    over_axis(a, int(o.i0), r, [&](size_t k, const std::vector<size_t>& idx) {
      for (size_t j : idx)
        if (a.u[j]) { r.u[k] = 1; return; }
      if (kind == tl::ReduceKind::argmax || kind == tl::ReduceKind::argmin) return arg_extreme(a, idx, kind, r, k);
      if (!a.is_f()) {
        int64_t acc = a.i[idx[0]];
        for (size_t q = 1; q < idx.size(); ++q) {
          int64_t x = a.i[idx[q]];
          bool less = t == DType::u64 ? uint64_t(x) < uint64_t(acc) : x < acc;
          if (kind == tl::ReduceKind::sum) acc = wrap(t, uint64_t(acc) + uint64_t(x));
          else if (kind == tl::ReduceKind::max) acc = less ? acc : x;
          else acc = less ? x : acc;
        }
        r.i[k] = acc;
        return;
      }
      if (kind == tl::ReduceKind::sum) return float_sum(a, idx, idx.size(), r, k);
      // max/min ignore NaN (maxnum); all NaN gives NaN
      double w = NAN, e = 0;
      for (size_t j : idx) {
        e = std::max(e, a.e[j]);
        double x = a.f[j];
        if (std::isnan(x)) continue;
        if (std::isnan(w) || (kind == tl::ReduceKind::max ? x > w : x < w)) w = x;
      }
      finish(r, k, w, e, true);
    });
  }

  // The first extreme's index; unknown when another element is within the bounds of it or
  // a NaN is there (docs/ir.md leaves argmax over NaN open).
  void arg_extreme(const Val& a, const std::vector<size_t>& idx, tl::ReduceKind kind, Val& r, size_t k) {
    bool mx = kind == tl::ReduceKind::argmax;
    size_t best = 0;
    for (size_t q = 0; q < idx.size(); ++q) {
      if (a.is_f()) {
        if (std::isnan(a.f[idx[q]])) { r.u[k] = 1; return; }
        if (mx ? a.f[idx[q]] > a.f[idx[best]] : a.f[idx[q]] < a.f[idx[best]]) best = q;
      } else {
        int64_t x = a.i[idx[q]], y = a.i[idx[best]];
        bool gt = a.type.dtype == DType::u64 ? uint64_t(x) > uint64_t(y) : x > y;
        bool lt = a.type.dtype == DType::u64 ? uint64_t(x) < uint64_t(y) : x < y;
        if (mx ? gt : lt) best = q;
      }
    }
    if (a.is_f()) {
      double b = a.f[idx[best]], eb = a.e[idx[best]];
      for (size_t q = 0; q < idx.size(); ++q) {
        if (q == best) continue;
        double x = a.f[idx[q]], s = a.e[idx[q]] + eb;
        if (s > 0 && std::fabs(x - b) <= s) { r.u[k] = 1; return; }
      }
    }
    r.i[k] = int64_t(best);
  }

  // A sum of floats in any order: the exact sum rounded, within (n-1) roundings of the
  // largest partial sum, sum |x|, of it. Infinities and NaN give the same result in every
  // order; a sum whose partial sums may overflow is unknown.
  void float_sum(const Val& a, const std::vector<size_t>& idx, size_t count, Val& r, size_t k) {
    DType t = r.type.dtype;
    long double s = 0, mag = 0;
    double prop = 0;
    bool nonfinite = false;
    for (size_t q = 0; q < count; ++q) {
      double x = a.f[idx[q]];
      s += x;
      if (std::isfinite(x)) mag += std::fabs(x);
      else nonfinite = true;
      prop += a.e[idx[q]];
    }
    if (mag > fuzzdiff::max_finite(t)) { r.u[k] = 1; return; }
    if (nonfinite) return finish(r, k, double(s), 0.0, true);
    prop += double(count > 1 ? (count - 1) : 0) * double(mag) * ulp_rel(t);
    finish(r, k, round_d(double(s), t), prop, count <= 1);
  }

  void scan(const ir::Operation& o, Val& r) {
    const Val& a = get(o.operands[0]);
    int axis = int(o.i0);
    // each prefix is a reduction of the first j+1 elements along the axis
    const auto& s = a.type.shape;
    int64_t len = s[size_t(axis)];
    int64_t inner = 1;
    for (size_t d = size_t(axis) + 1; d < s.size(); ++d) inner *= s[d];
    int64_t outer_n = int64_t(a.n()) / (len * inner);
    for (int64_t outer = 0; outer < outer_n; ++outer)
      for (int64_t in = 0; in < inner; ++in) {
        std::vector<size_t> idx;
        bool unk = false;
        int64_t acc = 0;
        for (int64_t j = 0; j < len; ++j) {
          size_t at = size_t((outer * len + j) * inner + in);
          idx.push_back(at);
          unk = unk || a.u[at];
          if (unk) { r.u[at] = 1; continue; }
          if (a.is_f()) float_sum(a, idx, idx.size(), r, at);
          else r.i[at] = acc = wrap(a.type.dtype, uint64_t(acc) + uint64_t(a.i[at]));
        }
      }
  }

  // acc + a.b: products exact, summed in the accumulator's type in any order; on a GPU
  // f32 operands go through TF32 (10-bit mantissas: products to about 2^-10).
  void dot(const ir::Operation& o, Val& r) {
    const Val &a = get(o.operands[0]), &b = get(o.operands[1]), &c = get(o.operands[2]);
    int M = a.type.shape[0], K = a.type.shape[1], N = b.type.shape[1];
    DType in = a.type.dtype, t = r.type.dtype;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        size_t k = size_t(m) * N + n;
        bool unk = c.u[k];
        for (int q = 0; q < K && !unk; ++q) unk = a.u[size_t(m) * K + q] || b.u[size_t(q) * N + n];
        if (unk) { r.u[k] = 1; continue; }
        if (!r.is_f()) {
          uint64_t acc = uint64_t(c.i[k]);
          for (int q = 0; q < K; ++q) acc += uint64_t(a.i[size_t(m) * K + q] * b.i[size_t(q) * N + n]);
          r.i[k] = wrap(t, acc);
          continue;
        }
        long double s = c.f[k], mag = std::fabs(c.f[k]);
        double prop = c.e[k];
        bool nonfinite = !std::isfinite(c.f[k]);
        for (int q = 0; q < K; ++q) {
          size_t ia = size_t(m) * K + q, ib = size_t(q) * N + n;
          long double x = a.f[ia], y = b.f[ib];
          long double xy = x * y;
          s += xy;
          if (std::isfinite(double(xy))) mag += std::fabs(xy);
          else nonfinite = true;
          prop += double(std::fabs(x) * b.e[ib] + std::fabs(y) * a.e[ia] + a.e[ia] * b.e[ib]);
        }
        if (mag > fuzzdiff::max_finite(t)) { r.u[k] = 1; continue; }
        if (nonfinite) { finish(r, k, double(s), 0.0, true); continue; }
        prop += double(K) * double(mag) * ulp_rel(t);
        if (p_.gpu && in == DType::f32) prop += double(mag) * std::ldexp(1.0, -9);
        finish(r, k, round_d(double(s), t), prop, false);
      }
  }

  void loop(const ir::Operation& o) {
    const Val &lb = get(o.operands[0]), &ub = get(o.operands[1]), &st = get(o.operands[2]);
    if (lb.u[0] || ub.u[0] || st.u[0]) ill(o, "loop bounds the reference cannot predict");
    // iv = lb, lb + step, ... while below ub (above it for a negative step); the trip
    // count is exact (64-bit), so a bound near INT32_MAX does not wrap the iv.
    const int64_t lo = lb.i[0], hi = ub.i[0], step = st.i[0];
    if (step == 0) ill(o, "a loop step of zero");
    const ir::Block& body = *o.regions[0];
    std::vector<Val> carried;
    for (size_t q = 3; q < o.operands.size(); ++q) carried.push_back(get(o.operands[q]));
    int trips = 0;
    for (int64_t iv = lo; step > 0 ? iv < hi : iv > hi; iv += step) {
      if (++trips > 4096) ill(o, "more than 4096 iterations");
      Val ivv = Val::of(body.args[0]->type);
      ivv.i[0] = iv;
      env_[body.args[0].get()] = std::move(ivv);
      for (size_t q = 0; q < carried.size(); ++q) env_[body.args[q + 1].get()] = carried[q];
      carried = block(body);
    }
    for (size_t q = 0; q < carried.size(); ++q) env_[o.results[q].get()] = std::move(carried[q]);
  }

  void branch(const ir::Operation& o) {
    const Val& c = get(o.operands[0]);
    if (!c.u[0]) {
      std::vector<Val> out = block(*o.regions[c.i[0] ? 0 : 1]);
      for (size_t q = 0; q < out.size(); ++q) env_[o.results[q].get()] = std::move(out[q]);
      return;
    }
    // Either branch may run: run both from the same memory and keep what they agree on.
    std::vector<RefBuffer> before = mem_;
    std::vector<Val> then_out = block(*o.regions[0]);
    std::vector<RefBuffer> after_then = mem_;
    mem_ = before;
    std::vector<Val> out = block(*o.regions[1]);
    for (size_t b = 0; b < mem_.size(); ++b)
      for (size_t k = 0; k < mem_[b].size(); ++k) {
        RefBuffer &x = mem_[b], &y = after_then[b];
        bool same = x.written[k] == y.written[k] && x.unk[k] == y.unk[k] &&
                    (tl::is_float(x.dt) ? (x.f[k] == y.f[k] || (std::isnan(x.f[k]) && std::isnan(y.f[k]))) : x.i[k] == y.i[k]);
        if (!same) x.unk[k] = 1, x.written[k] = 1;
      }
    for (size_t q = 0; q < out.size(); ++q) {
      for (size_t k = 0; k < out[q].n(); ++k) {
        bool same = out[q].is_f() ? out[q].f[k] == then_out[q].f[k] : out[q].i[k] == then_out[q].i[k];
        if (!same || then_out[q].u[k]) out[q].u[k] = 1;
        if (out[q].is_f()) out[q].e[k] = std::max(out[q].e[k], then_out[q].e[k]);
      }
      env_[o.results[q].get()] = std::move(out[q]);
    }
  }
};

}  // namespace

void evaluate(const ir::Function& f, const std::vector<RefArg>& args, int grid, std::vector<RefBuffer>& mem,
              const Profile& profile) {
  Interp(mem, profile).run(f, args, grid);
}

}  // namespace fuzzdiff

// Triton's language tests (python/test/unit/language/test_core.py), the elementwise part,
// transcribed: each kernel is test_core's `kernel(Z, X, Y, SIZE)` shape (load X and Y
// whole, compute, store Z), one kernel per dtype holding every operator of the tests
// that take that dtype (test_bin_op, test_bitwise_op, test_shift_op, test_compare_op,
// test_unary_op, test_abs, test_maximum_minimum), plus promotion across dtypes (test_bin_op
// with two dtypes), literal (weak) typing, test_math_op, test_where, test_where_broadcast,
// test_cast (and bitcast), against double references written as plain C++.
//
// Spelling: Triton's `x / y` of integers is a float division (tl: `x.to<f32>() / y`),
// Triton's `x // y` is C's division (tl's `/`), `%` is C's remainder (fmod for floats).
#include <algorithm>
#include <bit>
#include <limits>

#include "conformance/common.hpp"

namespace {
using namespace conformance;
namespace ty = tl::ty;

constexpr int SIZE = 128;

// The C semantics of an integer operation in type H: + - * << wrap (computed in 64 bits and
// truncated), / and % truncate, >> of a signed value fills with the sign.
template <class H> H int_op(char op, H x, H y) {
  switch (op) {
    case '+': return H(uint64_t(x) + uint64_t(y));
    case '-': return H(uint64_t(x) - uint64_t(y));
    case '*': return H(uint64_t(x) * uint64_t(y));
    case '/': return H(x / y);
    case '%': return H(x % y);
    case '&': return H(x & y);
    case '|': return H(x | y);
    case '^': return H(x ^ y);
    case '<': return H(uint64_t(x) << y);
    case '>': return H(x >> y);
  }
  return 0;
}

// test_bin_op / test_bitwise_op / test_shift_op / test_compare_op / test_unary_op /
// test_abs / test_maximum_minimum for one dtype T: Z[op][i] = x[i] op y[i].
enum Op { ADD, SUB, MUL, DIV, MOD, MAXIMUM, MINIMUM, NEG, ABS, WHERE, AND, OR, XOR, SHL, SHR, INVERT, NUM_OPS };
enum Cmp { LT, LE, GT, GE, EQ, NE, NUM_CMPS };

template <class T> auto& binary_kernel() {
  static auto k = tl::kernel(std::string("test_bin_op_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> Z, tl::ptr<tl::i1> C, tl::ptr<T> X, tl::ptr<T> Y, tl::ptr<T> S, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto y = tl::load(Y + off);
    auto z = [&](Op op) { return Z + op * SIZE + off; };
    tl::store(z(ADD), x + y);
    tl::store(z(SUB), x - y);
    tl::store(z(MUL), x * y);
    tl::store(z(DIV), x / y);
    tl::store(z(MOD), x % y);
    tl::store(z(MAXIMUM), tl::maximum(x, y));
    tl::store(z(MINIMUM), tl::minimum(x, y));
    tl::store(z(NEG), -x);
    tl::store(z(ABS), tl::abs(x));
    tl::store(z(WHERE), tl::where(x > y, x - y, y));  // test_where over this dtype
    if constexpr (tl::is_int(T::dtype)) {
      tl::store(z(AND), x & y);
      tl::store(z(OR), x | y);
      tl::store(z(XOR), x ^ y);
      auto s = tl::load(S + off);  // test_shift_op: shift amounts in [0, bitwidth)
      tl::store(z(SHL), x << s);
      tl::store(z(SHR), x >> s);
      tl::store(z(INVERT), ~x);
    }
    auto c = [&](Cmp op) { return C + op * SIZE + off; };
    tl::store(c(LT), x < y);
    tl::store(c(LE), x <= y);
    tl::store(c(GT), x > y);
    tl::store(c(GE), x >= y);
    tl::store(c(EQ), x == y);
    tl::store(c(NE), x != y);
  });
  return k;
}

template <class T> void test_binary(double lo, double hi) {
  using H = host_t<T>;
  constexpr bool integral = tl::is_int(T::dtype);
  const std::string dt(tl::name(T::dtype));
  auto hx = random_values<T>(SIZE, lo, hi), hy = random_values<T>(SIZE, lo, hi);
  // equal elements for == and !=, no zero divisors
  for (int i = 0; i < SIZE; i += 7) hy[size_t(i)] = hx[size_t(i)];
  for (auto& v : hy)
    if (to_double(v) == 0) v = from_double<T>(1);
  std::vector<H> hs(SIZE);
  std::uniform_int_distribution<int> sh(0, tl::bit_width(T::dtype) - 1);
  for (auto& v : hs) v = integral ? from_double<T>(sh(rng())) : from_double<T>(0);
  auto X = upload<T>(hx), Y = upload<T>(hy), S = upload<T>(hs);
  auto Z = output<T>(size_t(NUM_OPS) * SIZE);
  auto C = bool_output(size_t(NUM_CMPS) * SIZE);
  binary_kernel<T>()[tl::grid(1)](Z, C, X, Y, S, SIZE);
  auto z = Z.download();
  auto c = download_bools(C);
  for (int op = 0; op < (integral ? int(NUM_OPS) : int(AND)); ++op) {
    std::vector<double> want(SIZE);
    std::vector<H> want_bits(SIZE);
    for (int i = 0; i < SIZE; ++i) {
      double x = to_double(hx[size_t(i)]), y = to_double(hy[size_t(i)]);
      if constexpr (integral) {
        H a = hx[size_t(i)], b = hy[size_t(i)], s = hs[size_t(i)], r = 0;
        switch (op) {
          case ADD: r = int_op<H>('+', a, b); break;
          case SUB: r = int_op<H>('-', a, b); break;
          case MUL: r = int_op<H>('*', a, b); break;
          case DIV: r = int_op<H>('/', a, b); break;
          case MOD: r = int_op<H>('%', a, b); break;
          case MAXIMUM: r = std::max(a, b); break;
          case MINIMUM: r = std::min(a, b); break;
          case NEG: r = int_op<H>('-', H(0), a); break;
          case ABS: r = a < 0 ? int_op<H>('-', H(0), a) : a; break;
          case WHERE: r = a > b ? int_op<H>('-', a, b) : b; break;
          case AND: r = int_op<H>('&', a, b); break;
          case OR: r = int_op<H>('|', a, b); break;
          case XOR: r = int_op<H>('^', a, b); break;
          case SHL: r = int_op<H>('<', a, s); break;
          case SHR: r = int_op<H>('>', a, s); break;
          case INVERT: r = H(~a); break;
        }
        want_bits[size_t(i)] = r;
        (void)x, (void)y;
      } else {
        // one rounding to T of the exact result (double holds every sum, product and
        // quotient of these closely enough that rounding it again to T is exact)
        double r = op == ADD ? x + y : op == SUB ? x - y : op == MUL ? x * y : op == DIV ? x / y
                 : op == MOD ? std::fmod(x, y) : op == MAXIMUM ? std::max(x, y) : op == MINIMUM ? std::min(x, y)
                 : op == NEG ? -x : op == ABS ? std::fabs(x) : x > y ? x - y : y;
        want[size_t(i)] = to_double(from_double<T>(r));
      }
    }
    std::vector<H> got(z.begin() + op * SIZE, z.begin() + (op + 1) * SIZE);
    // Correctly rounded on the CPU. GPUs divide 32-bit and narrower floats approximately
    // as Triton does (div.full.f32: 2 ulp), and expand fmod through such a division.
    double rtol = 0, atol = 0;
    if (tltest::on_gpu() && T::dtype != tl::DType::f64 && (op == DIV || op == MOD)) {
      rtol = 4 * std::max(epsilon_of(T::dtype), 0x1p-24);
      if (op == MOD) atol = rtol * hi;
    }
    if constexpr (integral) EXPECT_TRUE(same(got, want_bits, dt + " op " + std::to_string(op)));
    else EXPECT_TRUE(close(got, want, rtol, atol, dt + " op " + std::to_string(op)));
  }
  for (int op = 0; op < NUM_CMPS; ++op) {
    std::vector<bool> want(SIZE);
    for (int i = 0; i < SIZE; ++i) {
      double x = to_double(hx[size_t(i)]), y = to_double(hy[size_t(i)]);
      want[size_t(i)] = op == LT ? x < y : op == LE ? x <= y : op == GT ? x > y : op == GE ? x >= y : op == EQ ? x == y : x != y;
    }
    int bad = 0;
    for (int i = 0; i < SIZE; ++i) bad += c[size_t(op * SIZE + i)] != want[size_t(i)];
    EXPECT_EQ(bad, 0) << dt << " comparison " << op;
  }
}

TEST(Core, BinOpBitwiseShiftCompareUnary) {
  test_binary<ty::i8>(-100, 100);
  test_binary<ty::i16>(-30000, 30000);
  test_binary<ty::i32>(-1e9, 1e9);
  test_binary<ty::i64>(-4e18, 4e18);
  test_binary<ty::u8>(0, 255);
  test_binary<ty::u16>(0, 65535);
  test_binary<ty::u32>(0, 4e9);
  test_binary<ty::u64>(0, 9e18);
  test_binary<ty::f16>(-100, 100);
  test_binary<ty::bf16>(-100, 100);
  test_binary<ty::f32>(-100, 100);
  test_binary<ty::f64>(-100, 100);
}

// test_bin_op with two dtypes: Triton's promotion, checked at compile time on the result
// type and at run time on the values.
template <class A, class B, class R> void test_promotion() {
  static auto k = tl::kernel(std::string("test_promotion_") + std::string(tl::name(A::dtype)) + "_" +
                                 std::string(tl::name(B::dtype)),
                             [](tl::ptr<R> Z, tl::ptr<A> X, tl::ptr<B> Y, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto y = tl::load(Y + off);
    auto z = x * y + x;
    static_assert(std::is_same_v<decltype(z), tl::tile<R>>, "Triton's promotion");
    tl::store(Z + off, z);
  });
  auto hx = random_values<A>(SIZE, 0, 100);
  auto hy = random_values<B>(SIZE, 0, 100);
  auto X = upload<A>(hx);
  auto Y = upload<B>(hy);
  auto Z = output<R>(SIZE);
  // each operation rounded on its own (x * y + x would be one fma under Triton's default
  // enable_fp_fusion; numpy, which Triton's test compares with, rounds twice)
  k[tl::grid(1)].with({.enable_fp_fusion = false})(Z, X, Y, SIZE);
  std::vector<double> want(SIZE);
  for (int i = 0; i < SIZE; ++i) {
    // each operation rounded to R
    double p = to_double(from_double<R>(to_double(hx[size_t(i)]) * to_double(hy[size_t(i)])));
    want[size_t(i)] = to_double(from_double<R>(p + to_double(hx[size_t(i)])));
  }
  EXPECT_TRUE(close(Z.download(), want, 0, 0, std::string(tl::name(A::dtype)) + " with " + std::string(tl::name(B::dtype))));
}

TEST(Core, BinOpPromotion) {
  test_promotion<ty::i8, ty::i32, ty::i32>();
  test_promotion<ty::u8, ty::i8, ty::u8>();   // equal widths: unsigned wins
  test_promotion<ty::i32, ty::f16, ty::f16>();  // a float beats an int
  test_promotion<ty::f16, ty::f32, ty::f32>();
  test_promotion<ty::f16, ty::bf16, ty::f32>();  // f16 with bf16 meet at f32
  test_promotion<ty::i64, ty::f64, ty::f64>();
}

// Python numbers next to tiles are weakly typed: `x + 1` keeps an i8 tile i8, `x * 0.5` of
// an int tile is f32, `x + 2` of an f16 tile stays f16; Triton's `x / y` of ints is float.
TEST(Core, LiteralTypingAndTrueDivision) {
  conformance::note_partial("int `/`");
  static auto k = tl::kernel("test_literals", [](tl::ptr<tl::i8> Zi, tl::ptr<tl::f32> Zf, tl::ptr<tl::f16> Zh,
                                                 tl::ptr<tl::f32> Zd, tl::ptr<tl::i8> X, tl::ptr<tl::f16> H, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto h = tl::load(H + off);
    auto xi = x + 1;
    auto xf = x * 0.5;
    auto hh = h + 2;
    static_assert(std::is_same_v<decltype(xi), tl::i8> && std::is_same_v<decltype(xf), tl::f32> &&
                  std::is_same_v<decltype(hh), tl::f16>);
    tl::store(Zi + off, xi);
    tl::store(Zf + off, xf);
    tl::store(Zh + off, hh);
    tl::store(Zd + off, x.to<tl::f32>() / (x + 3).to<tl::f32>());  // Triton: x / (x + 3)
  });
  auto hx = random_values<ty::i8>(SIZE, -100, 100);
  auto hh = random_values<ty::f16>(SIZE, -100, 100);
  for (auto& v : hx)
    if (v == -3) v = 0;
  auto X = upload<ty::i8>(hx);
  auto H = upload<ty::f16>(hh);
  auto Zi = output<ty::i8>(SIZE);
  auto Zf = output<ty::f32>(SIZE), Zd = output<ty::f32>(SIZE);
  auto Zh = output<ty::f16>(SIZE);
  k[tl::grid(1)](Zi, Zf, Zh, Zd, X, H, SIZE);
  std::vector<double> wi(SIZE), wf(SIZE), wh(SIZE), wd(SIZE);
  for (int i = 0; i < SIZE; ++i) {
    wi[size_t(i)] = int8_t(hx[size_t(i)] + 1);
    wf[size_t(i)] = hx[size_t(i)] * 0.5;
    wh[size_t(i)] = to_double(tl::to_f16(to_double(hh[size_t(i)]) + 2));
    wd[size_t(i)] = float(double(hx[size_t(i)]) / double(int8_t(hx[size_t(i)] + 3)));
  }
  EXPECT_TRUE(close(Zi.download(), wi, 0, 0, "x + 1"));
  EXPECT_TRUE(close(Zf.download(), wf, 0, 0, "x * 0.5"));
  EXPECT_TRUE(close(Zh.download(), wh, 0, 0, "h + 2"));
  EXPECT_TRUE(close(Zd.download(), wd, tltest::on_gpu() ? 0x1p-22 : 0, 0, "x / (x + 3)"));  // approximate on GPUs
}

// test_math_op: exp log cos sin exp2 log2 sqrt rsqrt floor ceil abs erf.
template <class T> void test_math(double rtol) {
  enum { EXP, LOG, COS, SIN, EXP2, LOG2, SQRT, RSQRT, FLOOR, CEIL, ABS, ERF, N };
  static auto k = tl::kernel(std::string("test_math_op_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> Z, tl::ptr<T> X, tl::ptr<T> P, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto p = tl::load(P + off);  // positive, for log, sqrt, rsqrt
    auto z = [&](int op) { return Z + op * SIZE + off; };
    tl::store(z(EXP), tl::exp(x));
    tl::store(z(LOG), tl::log(p));
    tl::store(z(COS), tl::cos(x));
    tl::store(z(SIN), tl::sin(x));
    tl::store(z(EXP2), tl::exp2(x));
    tl::store(z(LOG2), tl::log2(p));
    tl::store(z(SQRT), tl::sqrt(p));
    tl::store(z(RSQRT), tl::rsqrt(p));
    tl::store(z(FLOOR), tl::floor(x));
    tl::store(z(CEIL), tl::ceil(x));
    tl::store(z(ABS), tl::abs(x));
    tl::store(z(ERF), tl::erf(x));
  });
  auto hx = random_values<T>(SIZE, -5, 5), hp = random_values<T>(SIZE, 0.01, 20);
  auto X = upload<T>(hx), P = upload<T>(hp);
  auto Z = output<T>(size_t(N) * SIZE);
  k[tl::grid(1)](Z, X, P, SIZE);
  auto z = Z.download();
  double (*fns[N])(double) = {[](double v) { return std::exp(v); },  [](double v) { return std::log(v); },
                              [](double v) { return std::cos(v); },  [](double v) { return std::sin(v); },
                              [](double v) { return std::exp2(v); }, [](double v) { return std::log2(v); },
                              [](double v) { return std::sqrt(v); }, [](double v) { return 1 / std::sqrt(v); },
                              [](double v) { return std::floor(v); }, [](double v) { return std::ceil(v); },
                              [](double v) { return std::fabs(v); }, [](double v) { return std::erf(v); }};
  const char* names[N] = {"exp", "log", "cos", "sin", "exp2", "log2", "sqrt", "rsqrt", "floor", "ceil", "abs", "erf"};
  for (int op = 0; op < N; ++op) {
    bool positive = op == LOG || op == LOG2 || op == SQRT || op == RSQRT;
    std::vector<double> want(SIZE);
    for (int i = 0; i < SIZE; ++i) want[size_t(i)] = fns[op](to_double(positive ? hp[size_t(i)] : hx[size_t(i)]));
    std::vector<host_t<T>> got(z.begin() + op * SIZE, z.begin() + (op + 1) * SIZE);
    // cos and sin near their zeros: an absolute bound of the argument's rounding
    EXPECT_TRUE(close(got, want, rtol, rtol * 8, std::string(names[op]) + " " + std::string(tl::name(T::dtype))));
  }
}

TEST(Core, MathOp) {
  test_math<ty::f32>(2e-6);
  test_math<ty::f64>(1e-12);  // (tl's own f64 code on every target: math_f64_test bounds it in ulp)
  test_math<ty::f16>(0x1p-10);
  test_math<ty::bf16>(0x1p-7);
}

// test_where: z = where(cond, x, y) with the condition loaded from memory (bool), and
// test_where_broadcast: a [BLOCK, 1] condition with a [1, BLOCK] value, and a scalar one.
TEST(Core, WhereAndWhereBroadcast) {
  static auto where_kernel = tl::kernel("test_where", [](tl::ptr<tl::f32> Z, tl::ptr<tl::i1> Cond, tl::ptr<tl::f32> X,
                                                        tl::ptr<tl::f32> Y, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto cond = tl::load(Cond + off);
    auto x = tl::load(X + off);
    auto y = tl::load(Y + off);
    tl::store(Z + off, tl::where(cond, x, y));
  });
  static auto where_broadcast = tl::kernel("where_kernel", [](tl::ptr<tl::i1> cond_ptr, tl::ptr<tl::f32> a_ptr,
                                                              tl::ptr<tl::f32> out_ptr, tl::ptr<tl::f32> out2_ptr,
                                                              int BLOCK_SIZE) {
    auto xoffsets = tl::expand_dims(tl::arange(0, BLOCK_SIZE), 1);
    auto yoffsets = tl::expand_dims(tl::arange(0, BLOCK_SIZE), 0);
    auto mask = tl::load(cond_ptr + yoffsets);
    auto vals = tl::load(a_ptr + yoffsets + BLOCK_SIZE * xoffsets);
    auto res = tl::where(mask, vals, 0.);
    tl::store(out_ptr + yoffsets + BLOCK_SIZE * xoffsets, res);
    // test_where_broadcast's where_scalar_condition: `mask = False`, a Python constant
    bool scalar_mask = false;
    tl::store(out2_ptr + yoffsets + BLOCK_SIZE * xoffsets, tl::where(scalar_mask, vals, 0.));
  });
  std::vector<uint8_t> hc(SIZE);
  for (auto& c : hc) c = uint8_t(std::uniform_int_distribution<int>(0, 1)(rng()));
  auto Cond = upload_bools(hc);
  auto hx = random_values<ty::f32>(SIZE, -5, 5), hy = random_values<ty::f32>(SIZE, -5, 5);
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy);
  auto Z = output<ty::f32>(SIZE);
  where_kernel[tl::grid(1)](Z, Cond, X, Y, SIZE);
  std::vector<double> want(SIZE);
  for (int i = 0; i < SIZE; ++i) want[size_t(i)] = hc[size_t(i)] ? hx[size_t(i)] : hy[size_t(i)];
  EXPECT_TRUE(close(Z.download(), want, 0, 0, "where"));

  const int B = 16;
  auto ha = random_values<ty::f32>(B * B, -5, 5);
  auto A = upload<ty::f32>(ha);
  auto O = output<ty::f32>(B * B), O2 = output<ty::f32>(B * B);
  where_broadcast[tl::grid(1)](Cond, A, O, O2, B);
  std::vector<double> w1(B * B), w2(B * B);
  for (int r = 0; r < B; ++r)
    for (int c = 0; c < B; ++c) {
      w1[size_t(r * B + c)] = hc[size_t(c)] ? ha[size_t(r * B + c)] : 0.0;
      w2[size_t(r * B + c)] = 0.0;
    }
  EXPECT_TRUE(close(O.download(), w1, 0, 0, "where broadcast"));
  EXPECT_TRUE(close(O2.download(), w2, 0, 0, "where scalar condition"));
}

// test_cast: x.to(dst) for the dtypes test_core casts between (values each destination
// holds: casts of out-of-range values are undefined in Triton), and bitcasts.
template <class S> void test_cast_from(double lo, double hi) {
  static auto k = tl::kernel(std::string("test_cast_") + std::string(tl::name(S::dtype)),
                             [](tl::ptr<S> X, tl::ptr<tl::i8> Zi8, tl::ptr<tl::i32> Zi32, tl::ptr<tl::i64> Zi64,
                                tl::ptr<tl::f16> Zf16, tl::ptr<tl::bf16> Zbf16, tl::ptr<tl::f32> Zf32,
                                tl::ptr<tl::f64> Zf64, tl::ptr<tl::f8e4m3fn> Ze4, tl::ptr<tl::f8e5m2> Ze5, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    tl::store(Zi8 + off, x.template to<tl::i8>());
    tl::store(Zi32 + off, x.template to<tl::i32>());
    tl::store(Zi64 + off, x.template to<tl::i64>());
    tl::store(Zf16 + off, x.template to<tl::f16>());
    tl::store(Zbf16 + off, x.template to<tl::bf16>());
    tl::store(Zf32 + off, x.template to<tl::f32>());
    tl::store(Zf64 + off, x.template to<tl::f64>());
    tl::store(Ze4 + off, x.template to<tl::f8e4m3fn>());
    tl::store(Ze5 + off, x.template to<tl::f8e5m2>());
  });
  auto hx = random_values<S>(SIZE, lo, hi);
  auto X = upload<S>(hx);
  auto Zi8 = output<ty::i8>(SIZE);
  auto Zi32 = output<ty::i32>(SIZE);
  auto Zi64 = output<ty::i64>(SIZE);
  auto Zf16 = output<ty::f16>(SIZE);
  auto Zbf16 = output<ty::bf16>(SIZE);
  auto Zf32 = output<ty::f32>(SIZE);
  auto Zf64 = output<ty::f64>(SIZE);
  auto Ze4 = output<ty::f8e4m3fn>(SIZE);
  auto Ze5 = output<ty::f8e5m2>(SIZE);
  k[tl::grid(1)](X, Zi8, Zi32, Zi64, Zf16, Zbf16, Zf32, Zf64, Ze4, Ze5, SIZE);
  const std::string src(tl::name(S::dtype));
  auto want = [&](auto dst_tag) {
    using D = decltype(dst_tag);
    std::vector<double> w(SIZE);
    for (int i = 0; i < SIZE; ++i) {
      double v = to_double(hx[size_t(i)]);
      if constexpr (tl::is_int(D::dtype)) w[size_t(i)] = double(host_t<D>(int64_t(std::trunc(v))));  // toward zero, ints wrap
      else w[size_t(i)] = to_double(from_double<D>(v));                                     // nearest even
    }
    return w;
  };
  EXPECT_TRUE(close(Zi8.download(), want(ty::i8{}), 0, 0, src + " to i8"));
  EXPECT_TRUE(close(Zi32.download(), want(ty::i32{}), 0, 0, src + " to i32"));
  EXPECT_TRUE(close(Zi64.download(), want(ty::i64{}), 0, 0, src + " to i64"));
  EXPECT_TRUE(close(Zf16.download(), want(ty::f16{}), 0, 0, src + " to f16"));
  EXPECT_TRUE(close(Zbf16.download(), want(ty::bf16{}), 0, 0, src + " to bf16"));
  EXPECT_TRUE(close(Zf32.download(), want(ty::f32{}), 0, 0, src + " to f32"));
  EXPECT_TRUE(close(Zf64.download(), want(ty::f64{}), 0, 0, src + " to f64"));
  EXPECT_TRUE(close(Ze4.download(), want(ty::f8e4m3fn{}), 0, 0, src + " to f8e4m3fn"));
  EXPECT_TRUE(close(Ze5.download(), want(ty::f8e5m2{}), 0, 0, src + " to f8e5m2"));
}

TEST(Core, Cast) {
  test_cast_from<ty::i8>(-100, 100);
  test_cast_from<ty::u8>(0, 255);  // i8 of values past 127 wraps, as Triton's truncation
  test_cast_from<ty::f8e4m3fn>(-100, 100);
  test_cast_from<ty::f8e5m2>(-100, 100);
  test_cast_from<ty::i32>(-120, 120);
  test_cast_from<ty::i64>(-120, 120);
  test_cast_from<ty::f16>(-120, 120);
  test_cast_from<ty::bf16>(-120, 120);
  test_cast_from<ty::f32>(-120, 120);
  test_cast_from<ty::f64>(-120, 120);
}

// test_convert_float16_to_float32 and test_cast's special values: +-0, subnormals, +-inf,
// NaN, the largest finite values and values past them (to inf: f16 and bf16 have one),
// f32 -> f16 / bf16 -> f32 and f16 -> f32, each result's bits against the host's
// conversion (any NaN for a NaN).
TEST(Core, CastSpecialValues) {
  static auto k = tl::kernel("test_cast_special", [](tl::ptr<tl::f32> X, tl::ptr<tl::f16> Zh, tl::ptr<tl::bf16> Zb,
                                                     tl::ptr<tl::f32> Zhf, tl::ptr<tl::f32> Zbf, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto h = x.to<tl::f16>();
    auto b = x.to<tl::bf16>();
    tl::store(Zh + off, h);
    tl::store(Zb + off, b);
    tl::store(Zhf + off, h.to<tl::f32>());
    tl::store(Zbf + off, b.to<tl::f32>());
  });
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> hx = {0.0f, -0.0f, 1e-40f, -1e-40f, 6e-8f, 3e-5f, 65504.0f, 65519.0f, 65520.0f, -7e4f,
                           3.3895e38f, std::numeric_limits<float>::max(), inf, -inf, nan, 1.0f + 0x1p-11f};
  hx.resize(16, 0.5f);
  const int n = int(hx.size());
  auto X = upload<ty::f32>(hx);
  auto Zh = output<ty::f16>(n);
  auto Zb = output<ty::bf16>(n);
  auto Zhf = output<ty::f32>(n), Zbf = output<ty::f32>(n);
  k[tl::grid(1)](X, Zh, Zb, Zhf, Zbf, n);
  auto zh = Zh.download();
  auto zb = Zb.download();
  auto zhf = Zhf.download(), zbf = Zbf.download();
  for (int i = 0; i < n; ++i) {
    float x = hx[size_t(i)];
    tl::half wh = tl::to_f16(x);
    tl::bfloat16 wb = tl::to_bf16(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(tl::to_float(zh[size_t(i)])) && std::isnan(tl::to_float(zb[size_t(i)])) &&
                  std::isnan(zhf[size_t(i)]) && std::isnan(zbf[size_t(i)]))
          << "NaN stays NaN";
      continue;
    }
    EXPECT_EQ(zh[size_t(i)].bits, wh.bits) << x << " to f16";
    EXPECT_EQ(zb[size_t(i)].bits, wb.bits) << x << " to bf16";
    EXPECT_EQ(std::bit_cast<uint32_t>(zhf[size_t(i)]), std::bit_cast<uint32_t>(tl::to_float(wh))) << x << " f16 to f32";
    EXPECT_EQ(std::bit_cast<uint32_t>(zbf[size_t(i)]), std::bit_cast<uint32_t>(tl::to_float(wb))) << x << " bf16 to f32";
  }
}

// test_cast with bitcast=True: the bits kept.
TEST(Core, Bitcast) {
  static auto k = tl::kernel("test_bitcast", [](tl::ptr<tl::f32> X, tl::ptr<tl::i32> Zi, tl::ptr<tl::f16> H,
                                                tl::ptr<tl::i16> Zh, tl::ptr<tl::f32> Zback, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);
    auto bits = x.bitcast<tl::i32>();
    tl::store(Zi + off, bits);
    tl::store(Zh + off, tl::load(H + off).bitcast<tl::i16>());
    tl::store(Zback + off, (bits ^ int32_t(0x80000000u)).bitcast<tl::f32>());  // flips the sign
  });
  auto hx = random_values<ty::f32>(SIZE, -5, 5);
  auto hh = random_values<ty::f16>(SIZE, -5, 5);
  auto X = upload<ty::f32>(hx);
  auto H = upload<ty::f16>(hh);
  auto Zi = output<ty::i32>(SIZE);
  auto Zback = output<ty::f32>(SIZE);
  auto Zh = output<ty::i16>(SIZE);
  k[tl::grid(1)](X, Zi, H, Zh, Zback, SIZE);
  std::vector<int32_t> wi(SIZE);
  std::vector<int16_t> wh(SIZE);
  std::vector<double> wb(SIZE);
  for (int i = 0; i < SIZE; ++i) {
    wi[size_t(i)] = std::bit_cast<int32_t>(hx[size_t(i)]);
    wh[size_t(i)] = int16_t(hh[size_t(i)].bits);
    wb[size_t(i)] = -double(hx[size_t(i)]);
  }
  EXPECT_TRUE(same(Zi.download(), wi, "f32 bits"));
  EXPECT_TRUE(same(Zh.download(), wh, "f16 bits"));
  EXPECT_TRUE(close(Zback.download(), wb, 0, 0, "sign flipped through the bits"));
}

// test_umulhi: the high 32 bits of the 64-bit product (non-negative int32 as Triton's test
// draws them, and u32 over its whole range).
TEST(Core, Umulhi) {
  static auto kernel = tl::kernel("test_umulhi", [](tl::ptr<tl::i32> X, tl::ptr<tl::i32> Y, tl::ptr<tl::i32> Z,
                                                    tl::ptr<tl::u32> XU, tl::ptr<tl::u32> YU, tl::ptr<tl::u32> ZU,
                                                    int N) {
    auto offs = tl::arange(0, N);
    auto x = tl::load(X + offs);
    auto y = tl::load(Y + offs);
    auto z = tl::umulhi(x, y);
    tl::store(Z + tl::arange(0, N), z);
    tl::store(ZU + offs, tl::umulhi(tl::load(XU + offs), tl::load(YU + offs)));
  });
  auto hx = random_values<ty::i32>(SIZE, 0, 2147483647), hy = random_values<ty::i32>(SIZE, 0, 2147483647);
  auto hxu = random_values<ty::u32>(SIZE, 0, 4294967295.0), hyu = random_values<ty::u32>(SIZE, 0, 4294967295.0);
  auto X = upload<ty::i32>(hx), Y = upload<ty::i32>(hy);
  auto XU = upload<ty::u32>(hxu), YU = upload<ty::u32>(hyu);
  auto Z = output<ty::i32>(SIZE);
  auto ZU = output<ty::u32>(SIZE);
  kernel[tl::grid(1)](X, Y, Z, XU, YU, ZU, SIZE);
  std::vector<int32_t> want(SIZE);
  std::vector<uint32_t> want_u(SIZE);
  for (int i = 0; i < SIZE; ++i) {
    want[size_t(i)] = int32_t((int64_t(hx[size_t(i)]) * int64_t(hy[size_t(i)])) >> 32);
    want_u[size_t(i)] = uint32_t((uint64_t(hxu[size_t(i)]) * uint64_t(hyu[size_t(i)])) >> 32);
  }
  EXPECT_TRUE(same(Z.download(), want, "umulhi i32"));
  EXPECT_TRUE(same(ZU.download(), want_u, "umulhi u32"));
}

// test_math_op's libdevice functions that tl has (tl/math.hpp): tanh sigmoid log1p expm1
// sinh cosh tan atan asin acos cbrt erfc, atan2 and pow, in f32 over domains where each
// is well conditioned, against <cmath> in double.
TEST(Core, MathOpLibdevice) {
  enum { TANH, SIGMOID, LOG1P, EXPM1, SINH, COSH, TAN, ATAN, ASIN, ACOS, CBRT, ERFC, ATAN2, POW, N };
  static auto k = tl::kernel("test_math_op_libdevice", [](tl::ptr<tl::f32> Z, tl::ptr<tl::f32> X, tl::ptr<tl::f32> U,
                                                          tl::ptr<tl::f32> P, tl::ptr<tl::f32> Y, int SIZE) {
    auto off = tl::arange(0, SIZE);
    auto x = tl::load(X + off);  // [-3, 3]
    auto u = tl::load(U + off);  // (-1, 1)
    auto p = tl::load(P + off);  // [0.1, 4]
    auto y = tl::load(Y + off);  // [-3, 3]
    auto z = [&](int op) { return Z + op * SIZE + off; };
    tl::store(z(TANH), tl::tanh(x));
    tl::store(z(SIGMOID), tl::sigmoid(x));
    tl::store(z(LOG1P), tl::log1p(p));
    tl::store(z(EXPM1), tl::expm1(u));
    tl::store(z(SINH), tl::sinh(x));
    tl::store(z(COSH), tl::cosh(x));
    tl::store(z(TAN), tl::tan(u));
    tl::store(z(ATAN), tl::atan(x));
    tl::store(z(ASIN), tl::asin(u));
    tl::store(z(ACOS), tl::acos(u));
    tl::store(z(CBRT), tl::cbrt(x));
    tl::store(z(ERFC), tl::erfc(u));
    tl::store(z(ATAN2), tl::atan2(y, x));
    tl::store(z(POW), tl::pow(p, y));
  });
  auto hx = random_values<ty::f32>(SIZE, -3, 3), hu = random_values<ty::f32>(SIZE, -0.99, 0.99);
  auto hp = random_values<ty::f32>(SIZE, 0.1, 4), hy = random_values<ty::f32>(SIZE, -3, 3);
  auto X = upload<ty::f32>(hx), U = upload<ty::f32>(hu), P = upload<ty::f32>(hp), Y = upload<ty::f32>(hy);
  auto Z = output<ty::f32>(size_t(N) * SIZE);
  k[tl::grid(1)](Z, X, U, P, Y, SIZE);
  auto z = Z.download();
  const char* names[N] = {"tanh", "sigmoid", "log1p", "expm1", "sinh", "cosh", "tan",
                          "atan", "asin",    "acos",  "cbrt",  "erfc", "atan2", "pow"};
  for (int op = 0; op < N; ++op) {
    std::vector<double> want(SIZE);
    for (int i = 0; i < SIZE; ++i) {
      double x = hx[size_t(i)], u = hu[size_t(i)], p = hp[size_t(i)], y = hy[size_t(i)];
      double r[N] = {std::tanh(x), 1 / (1 + std::exp(-x)), std::log1p(p), std::expm1(u), std::sinh(x), std::cosh(x),
                     std::tan(u),  std::atan(x), std::asin(u), std::acos(u), std::cbrt(x), std::erfc(u),
                     std::atan2(y, x), std::pow(p, y)};
      want[size_t(i)] = r[op];
    }
    std::vector<float> got(z.begin() + op * SIZE, z.begin() + (op + 1) * SIZE);
    EXPECT_TRUE(close(got, want, 2e-6, 1e-7, names[op]));
  }
}

// test_clamp (f16, bf16, f32): tl.clamp(x, min, max) against tl.minimum(tl.maximum(x, min),
// max) in the kernel and min(max(x, lo), hi) on the host; test_clamp_symmetric's
// tl.clamp(x, -limit, limit); propagate_nan=ALL keeps a NaN.
template <class T> void test_clamp() {
  static auto kernel = tl::kernel(std::string("test_clamp_") + std::string(tl::name(T::dtype)),
                                  [](tl::ptr<T> x_ptr, tl::ptr<T> min_ptr, tl::ptr<T> max_ptr, tl::ptr<T> out_ptr,
                                     tl::ptr<T> ref_ptr, tl::ptr<T> sym_ptr, tl::ptr<T> nan_ptr, tl::i32 N,
                                     int BLOCK_SIZE) {
    auto off = tl::arange(0, BLOCK_SIZE);
    auto mask = off < N;
    auto x = tl::load(x_ptr + off, mask);
    auto min = tl::load(min_ptr + off, mask);
    auto max = tl::load(max_ptr + off, mask);
    auto out = out_ptr + off;
    auto ref = ref_ptr + off;
    tl::store(out, tl::clamp(x, min, max), mask);
    auto ref_val = tl::minimum(tl::maximum(x, min), max);
    tl::store(ref, ref_val, mask);
    tl::store(sym_ptr + off, tl::clamp(x, -0.5, 0.5), mask);  // test_clamp_symmetric, limit 0.5
    tl::store(nan_ptr + off, tl::clamp((x - x) / (x - x), min, max, tl::propagate_nan::all), mask);  // 0/0: NaN
  });
  const int size = 128;
  std::normal_distribution<double> randn;
  std::vector<host_t<T>> hx(size), lo(size), hi(size);
  for (int i = 0; i < size; ++i) {
    double a = randn(rng()), b = randn(rng());
    hx[size_t(i)] = from_double<T>(randn(rng()));
    lo[size_t(i)] = from_double<T>(std::min(a, b));
    hi[size_t(i)] = from_double<T>(std::max(a, b));
  }
  auto X = upload<T>(hx), Lo = upload<T>(lo), Hi = upload<T>(hi);
  auto Out = output<T>(size), Ref = output<T>(size), Sym = output<T>(size), Nan = output<T>(size);
  kernel[tl::grid(1)](X, Lo, Hi, Out, Ref, Sym, Nan, size, 128);
  std::vector<double> want(size), sym(size), nan(size, std::numeric_limits<double>::quiet_NaN());
  for (int i = 0; i < size; ++i) {
    double x = to_double(hx[size_t(i)]);
    want[size_t(i)] = std::min(std::max(x, to_double(lo[size_t(i)])), to_double(hi[size_t(i)]));
    sym[size_t(i)] = std::min(std::max(x, to_double(from_double<T>(-0.5))), to_double(from_double<T>(0.5)));
  }
  const std::string dt(tl::name(T::dtype));
  EXPECT_TRUE(close(Out.download(), want, 0, 0, dt + " clamp"));
  EXPECT_TRUE(close(Ref.download(), want, 0, 0, dt + " minimum(maximum)"));
  EXPECT_TRUE(close(Sym.download(), sym, 0, 0, dt + " clamp symmetric"));
  EXPECT_TRUE(close(Nan.download(), nan, 0, 0, dt + " clamp of NaN, propagate_nan=ALL"));
}

TEST(Core, Clamp) {
  test_clamp<ty::f16>();
  test_clamp<ty::bf16>();
  test_clamp<ty::f32>();
}

// Gaps of test_core's elementwise tests: each a skip naming its entry of gaps.cpp.
TEST(Core, MaximumMinimumPropagateNan) { CONFORMANCE_GAP("propagate_nan"); }
// test_precise_math: tl.math.div_rn, tl.math.sqrt_rn and tl.fdiv(ieee_rounding=True) against
// the quotient and root computed in f64 and rounded to f32 (which rounds them correctly:
// f64 carries more than twice f32's precision), bit for bit, on random and edge operands.
TEST(Core, PreciseMath) {
  constexpr int BLOCK = 256;
  static auto kernel = tl::kernel("test_precise_math", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> Y, tl::ptr<tl::f32> Div,
                                                          tl::ptr<tl::f32> Sqrt, tl::ptr<tl::f32> Fdiv) {
    auto off = tl::arange(0, BLOCK);
    auto x = tl::load(X + off);
    auto y = tl::load(Y + off);
    tl::store(Div + off, tl::div_rn(x, y));
    tl::store(Sqrt + off, tl::sqrt_rn(x));
    tl::store(Fdiv + off, tl::fdiv(x, y, /*ieee_rounding=*/true));
  });
  std::vector<float> hx(BLOCK), hy(BLOCK);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-60, 60);
  for (int i = 0; i < BLOCK; ++i) {
    hx[size_t(i)] = std::ldexp(mant(tltest::rng()), ex(tltest::rng()));
    hy[size_t(i)] = std::ldexp(mant(tltest::rng()), ex(tltest::rng())) * (i % 3 == 0 ? -1.0f : 1.0f);
  }
  hx[0] = 0.0f, hy[0] = 3.0f;
  hx[1] = 1.0f, hy[1] = 3.0f;
  hx[2] = 0x1p-149f, hy[2] = 0.5f;  // a subnormal quotient
  auto X = upload<ty::f32>(hx), Y = upload<ty::f32>(hy);
  auto Div = output<ty::f32>(BLOCK), Sqrt = output<ty::f32>(BLOCK), Fdiv = output<ty::f32>(BLOCK);
  kernel[tl::grid(1)](X, Y, Div, Sqrt, Fdiv);
  std::vector<double> wd(BLOCK), ws(BLOCK);
  for (int i = 0; i < BLOCK; ++i) {
    wd[size_t(i)] = float(double(hx[size_t(i)]) / double(hy[size_t(i)]));
    ws[size_t(i)] = float(std::sqrt(double(hx[size_t(i)])));
  }
  EXPECT_TRUE(close(Div.download(), wd, 0, 0, "div_rn"));
  EXPECT_TRUE(close(Sqrt.download(), ws, 0, 0, "sqrt_rn"));
  EXPECT_TRUE(close(Fdiv.download(), wd, 0, 0, "fdiv(ieee_rounding=True)"));
}
TEST(Core, MathOpMoreLibdevice) { CONFORMANCE_GAP("libdevice functions"); }
// test_inline_asm (shf.l.wrap: y:x funnel-shifted left by s, pack 1) and
// test_inline_asm_packed (four u8 a register: `and` then `shl` by 3, pack 4). On the CPU
// the fallback lambdas run; on an NVIDIA GPU the PTX (AMD has no device here).
TEST(Core, InlineAsm) {
  if (tltest::test_device().kind() == tl::device_kind::hip) GTEST_SKIP() << "PTX assembly";
  constexpr int BLOCK = 128;
  static auto kernel = tl::kernel("test_inline_asm", [](tl::ptr<tl::u32> X, tl::ptr<tl::u32> Y, tl::ptr<tl::u32> S,
                                                        tl::ptr<tl::u32> Z, tl::ptr<tl::u8> B, tl::ptr<tl::u8> C) {
    auto off = tl::arange(0, BLOCK);
    auto x = tl::load(X + off), y = tl::load(Y + off), s = tl::load(S + off);
    tl::store(Z + off, tl::inline_asm_elementwise<tl::u32>("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", {x, y, s},
                                                           true, 1, [&] { return (y << s) | (x >> (32u - s)); }));
    auto b = tl::load(B + off);
    tl::store(C + off, tl::inline_asm_elementwise<tl::u8>("and.b32 $0, $1, 0x1F1F1F1F; \n shl.b32 $0, $0, 3;", "=r,r",
                                                          {b}, true, 4, [&] { return (b & 0x1F) << 3; }));
  });
  std::vector<uint32_t> hx(BLOCK), hy(BLOCK), hs(BLOCK);
  std::vector<uint8_t> hb(BLOCK);
  std::uniform_int_distribution<uint32_t> word, shift(1, 31);
  for (int i = 0; i < BLOCK; ++i) {
    hx[size_t(i)] = word(tltest::rng()), hy[size_t(i)] = word(tltest::rng()), hs[size_t(i)] = shift(tltest::rng());
    hb[size_t(i)] = uint8_t(word(tltest::rng()));
  }
  auto X = upload<ty::u32>(hx), Y = upload<ty::u32>(hy), S = upload<ty::u32>(hs);
  auto B = upload<ty::u8>(hb);
  auto Z = output<ty::u32>(BLOCK);
  auto C = output<ty::u8>(BLOCK);
  kernel[tl::grid(1)](X, Y, S, Z, B, C);
  auto z = Z.download();
  auto c = C.download();
  for (int i = 0; i < BLOCK; ++i) {
    const uint32_t sh = hs[size_t(i)];
    EXPECT_EQ(z[size_t(i)], (hy[size_t(i)] << sh) | (hx[size_t(i)] >> (32 - sh))) << i;
    EXPECT_EQ(c[size_t(i)], uint8_t((hb[size_t(i)] & 0x1F) << 3)) << i;
  }
}
TEST(Core, CastRoundingRtz) { CONFORMANCE_GAP("cast rounding"); }
TEST(Core, Float8e4b15) { CONFORMANCE_GAP("float8e4b15 / float8e4nv names"); }
TEST(Core, Softmax) { CONFORMANCE_GAP("tl.softmax"); }

}  // namespace

// Random numbers, Triton's API and sequence (triton/language/random.py): counter-based
// Philox 4x32 keyed by a seed, one draw per offset, so a kernel's numbers depend only on
// (seed, offset, n_rounds), never on the program or thread that draws them. The same
// seed and offsets give the bits Triton 3.6 gives (tests/dsl/random_test.cpp checks them
// against values Triton itself made, tests/data/philox_triton_3.6.json), on every target.
//
// Written in tile operations (no op of its own): every target lowers the same integer
// arithmetic, which is what keeps the sequence identical.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "tl/tile.hpp"

namespace tl {

// Triton's default round count (N_ROUNDS_DEFAULT).
inline constexpr int philox_default_rounds = 10;

// The high 32 bits of the 64-bit product of two 32-bit integers, taken as unsigned
// (Triton's tl.math.umulhi; CUDA's __umulhi). Signed tiles give the same bits as their
// unsigned reading.
template <class E> tile<E> umulhi(const tile<E>& a, const tile<E>& b, Loc loc = Loc::current()) {
  static_assert(E::dtype == DType::i32 || E::dtype == DType::u32, "tl::umulhi takes 32-bit integer tiles");
  auto wide = [&](const tile<E>& x) {
    if constexpr (E::dtype == DType::u32) return x.template to<ty::u64>(loc);
    else return x.template bitcast<ty::u32>(loc).template to<ty::u64>(loc);
  };
  auto hi = ((wide(a) * wide(b)) >> 32).template to<ty::u32>(loc);
  if constexpr (E::dtype == DType::u32) return hi;
  else return hi.template bitcast<E>(loc);
}
template <class E, Arith S> tile<E> umulhi(S a, const tile<E>& b, Loc loc = Loc::current()) {
  return umulhi(tile<E>(detail::literal_constant(E::dtype, a, loc)), b, loc);
}

namespace detail {
template <class T> constexpr bool is_integer_tile = requires { T::elem::dtype; } && is_int(T::elem::dtype);

inline void check_rounds(int n_rounds, const char* who, const Loc& loc) {
  if (n_rounds <= 0) fail(std::string(who) + ": n_rounds must be positive, got " + std::to_string(n_rounds), loc);
}

// The seed as Triton takes it: an integer scalar (tile or C++ integer) converted to u64
// (sign-extended from a signed type), split into the two 32-bit key words.
template <class S> std::array<tile<ty::u32>, 2> philox_key(const S& seed, const Loc& loc) {
  tile<ty::u64> s;
  if constexpr (std::is_integral_v<S>) {
    // (sign-extended, as Triton converts a negative Python int seed; u64 takes the bits)
    s = tile<ty::u64>(constant(DType::u64, double(int64_t(seed)), int64_t(seed), loc));
  } else {
    static_assert(is_integer_tile<S>, "tl random numbers: the seed must be an integer (a C++ integer or an integer tl tile)");
    if (!seed.shape(loc).empty()) fail("tl random numbers: the seed must be a scalar", loc);
    s = seed.template to<ty::u64>(loc);
  }
  return {(s & uint64_t(0xffffffff)).template to<ty::u32>(loc), ((s >> 32) & uint64_t(0xffffffff)).template to<ty::u32>(loc)};
}
}  // namespace detail

// n_rounds of Philox 4x32 on the counters (c0, c1, c2, c3), key (k0, k1): Triton's
// philox_impl for 32-bit counters.
inline std::array<tile<ty::u32>, 4> philox_rounds(tile<ty::u32> c0, tile<ty::u32> c1, tile<ty::u32> c2,
                                                  tile<ty::u32> c3, tile<ty::u32> k0, tile<ty::u32> k1,
                                                  int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  detail::check_rounds(n_rounds, "tl::philox", loc);
  constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;      // the key schedule's increments
  constexpr uint32_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u;  // the round multipliers
  for (int r = 0; r < n_rounds; ++r) {
    tile<ty::u32> prev_c0 = c0, prev_c2 = c2;
    c0 = umulhi(kRoundB, prev_c2, loc) ^ c1 ^ k0;
    c2 = umulhi(kRoundA, prev_c0, loc) ^ c3 ^ k1;
    c1 = prev_c2 * kRoundB;
    c3 = prev_c0 * kRoundA;
    k0 = k0 + kKeyA;
    k1 = k1 + kKeyB;
  }
  return {c0, c1, c2, c3};
}

// Triton's tl.philox(seed, c0, c1, c2, c3, n_rounds) for 32-bit counters (any 32-bit
// integer tiles, taken as their bits).
template <class S, class C>
std::array<tile<ty::u32>, 4> philox(const S& seed, const C& c0, const C& c1, const C& c2, const C& c3,
                                    int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  static_assert(bit_width(C::elem::dtype) == 32 && is_int(C::elem::dtype),
                "tl::philox: the counters must be 32-bit integer tiles (64-bit counters are not in tl yet)");
  auto [k0, k1] = detail::philox_key(seed, loc);
  auto bits = [&](const C& c) {
    if constexpr (C::elem::dtype == DType::u32) return c;
    else return c.template bitcast<ty::u32>(loc);
  };
  return philox_rounds(bits(c0), bits(c1), bits(c2), bits(c3), k0, k1, n_rounds, loc);
}

// Four blocks of random u32 for `offsets` (an i32, u32, i64 or u64 tile; a 64-bit offset's
// high word is the second counter).
template <class S, class O>
std::array<tile<ty::u32>, 4> randint4x(const S& seed, const O& offsets, int n_rounds = philox_default_rounds,
                                       Loc loc = Loc::current()) {
  static_assert(detail::is_integer_tile<O>, "tl random numbers: the offsets must be an integer tile");
  detail::check_rounds(n_rounds, "tl::randint4x", loc);
  tile<ty::u32> lo = offsets.template to<ty::u32>(loc);
  tile<ty::u32> zero = lo * 0u;
  tile<ty::u32> hi = zero;
  if constexpr (bit_width(O::elem::dtype) > 32) hi = (offsets >> 32).template to<ty::u32>(loc);
  auto [k0, k1] = detail::philox_key(seed, loc);
  return philox_rounds(lo, hi, zero, zero, k0, k1, n_rounds, loc);
}

// One block of random u32 (the first of randint4x's four).
template <class S, class O>
tile<ty::u32> randint(const S& seed, const O& offsets, int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  return randint4x(seed, offsets, n_rounds, loc)[0];
}

// A random u32 to an f32 in [0, 1) (Triton's uint_to_uniform_float): the bits read as a
// signed integer, folded onto the non-negatives, scaled so that the largest stays below 1.
inline tile<ty::f32> uint_to_uniform_float(const tile<ty::u32>& x, Loc loc = Loc::current()) {
  tile<ty::i32> v = x.bitcast<ty::i32>(loc);
  v = where(v < 0, -v - 1, v, loc);
  // (Triton's scale is a Python float rounded to f32 where it meets the f32 tile.)
  return v.to<ty::f32>(loc) * float(4.6566127342e-10);
}

// Uniform f32 in [0, 1).
template <class S, class O>
tile<ty::f32> rand(const S& seed, const O& offsets, int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  return uint_to_uniform_float(randint(seed, offsets, n_rounds, loc), loc);
}
template <class S, class O>
std::array<tile<ty::f32>, 4> rand4x(const S& seed, const O& offsets, int n_rounds = philox_default_rounds,
                                    Loc loc = Loc::current()) {
  auto i = randint4x(seed, offsets, n_rounds, loc);
  return {uint_to_uniform_float(i[0], loc), uint_to_uniform_float(i[1], loc), uint_to_uniform_float(i[2], loc),
          uint_to_uniform_float(i[3], loc)};
}

// Box-Muller: two uniforms to two standard normals (Triton's pair_uniform_to_normal).
inline std::array<tile<ty::f32>, 2> pair_uniform_to_normal(const tile<ty::f32>& u1, const tile<ty::f32>& u2,
                                                           Loc loc = Loc::current()) {
  tile<ty::f32> u = maximum(u1, float(1.0e-7), loc);
  tile<ty::f32> th = u2 * float(6.283185307179586);
  tile<ty::f32> r = sqrt(log(u, loc) * -2.0f, loc);
  return {r * cos(th, loc), r * sin(th, loc)};
}

// Standard normal f32 (the first of a Box-Muller pair, as Triton's tl.randn). Its bits
// follow the target's log, sqrt, cos and sin (docs/language.md, "Random numbers").
template <class S, class O>
tile<ty::f32> randn(const S& seed, const O& offsets, int n_rounds = philox_default_rounds, Loc loc = Loc::current()) {
  auto i = randint4x(seed, offsets, n_rounds, loc);
  return pair_uniform_to_normal(uint_to_uniform_float(i[0], loc), uint_to_uniform_float(i[1], loc), loc)[0];
}
template <class S, class O>
std::array<tile<ty::f32>, 4> randn4x(const S& seed, const O& offsets, int n_rounds = philox_default_rounds,
                                     Loc loc = Loc::current()) {
  auto u = rand4x(seed, offsets, n_rounds, loc);
  auto a = pair_uniform_to_normal(u[0], u[1], loc);
  auto b = pair_uniform_to_normal(u[2], u[3], loc);
  return {a[0], a[1], b[0], b[1]};
}

}  // namespace tl

// Element types of tl tiles, their host representations, and Triton's promotion rules.
// This header is shared by the tracer (run-time dtype values) and the C++ front end
// (compile-time element tags), so that the two can never disagree on a promotion.
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace tl {

enum class DType : uint8_t {
  i1, i8, i16, i32, i64, u8, u16, u32, u64,
  f16, bf16, f32, f64,
  f8e4m3fn,    // OCP FP8 (gfx950, sm_89+): max 448, NaN only at 0x7f/0xff, no inf
  f8e5m2,      // OCP FP8: IEEE-like with inf and NaN, max 57344
  f8e4m3fnuz,  // gfx942 FP8: bias 8, max 240, single NaN at 0x80, no -0
  f8e5m2fnuz,  // gfx942 FP8: bias 16, max 57344, single NaN at 0x80, no -0
  // OCP MX storage types (docs/language.md, "Block-scaled formats"): bytes that only load,
  // store, move and convert; arithmetic on them is a trace error.
  f4e2m1,      // two FP4 e2m1 values a byte (element 2i in the low nibble), packed along the last dim
  e8m0,        // an MX scale: 2^(code - 127), code 255 NaN; no sign, no zero
  ptr,         // a global-memory pointer; the pointee is carried beside the dtype
};

constexpr bool is_float(DType t) { return t >= DType::f16 && t <= DType::f8e5m2fnuz; }
constexpr bool is_fp8(DType t) { return t >= DType::f8e4m3fn && t <= DType::f8e5m2fnuz; }
constexpr bool is_int(DType t) { return t <= DType::u64; }
// The OCP MX storage types: a tile of them is bytes (an f4e2m1 tile of [M, K / 2] holds
// M x K FP4 values).
constexpr bool is_mx(DType t) { return t == DType::f4e2m1 || t == DType::e8m0; }
constexpr bool is_signed(DType t) { return t >= DType::i8 && t <= DType::i64; }
constexpr bool is_unsigned(DType t) { return t >= DType::u8 && t <= DType::u64; }

constexpr int bit_width(DType t) {
  switch (t) {
    case DType::i1: return 1;
    case DType::i8: case DType::u8: return 8;
    case DType::f8e4m3fn: case DType::f8e5m2: case DType::f8e4m3fnuz: case DType::f8e5m2fnuz: return 8;
    case DType::f4e2m1: case DType::e8m0: return 8;  // a packed pair, a scale: a byte each
    case DType::i16: case DType::u16: case DType::f16: case DType::bf16: return 16;
    case DType::i32: case DType::u32: case DType::f32: return 32;
    case DType::i64: case DType::u64: case DType::f64: case DType::ptr: return 64;
  }
  return 0;
}
constexpr int byte_width(DType t) { return t == DType::i1 ? 1 : bit_width(t) / 8; }

constexpr std::string_view name(DType t) {
  switch (t) {
    case DType::i1: return "i1"; case DType::i8: return "i8"; case DType::i16: return "i16";
    case DType::i32: return "i32"; case DType::i64: return "i64"; case DType::u8: return "u8";
    case DType::u16: return "u16"; case DType::u32: return "u32"; case DType::u64: return "u64";
    case DType::f16: return "f16"; case DType::bf16: return "bf16"; case DType::f32: return "f32";
    case DType::f64: return "f64"; case DType::f8e4m3fn: return "f8e4m3fn";
    case DType::f8e5m2: return "f8e5m2"; case DType::f8e4m3fnuz: return "f8e4m3fnuz";
    case DType::f8e5m2fnuz: return "f8e5m2fnuz"; case DType::f4e2m1: return "f4e2m1";
    case DType::e8m0: return "e8m0"; case DType::ptr: return "ptr";
  }
  return "?";
}

// Triton's binary promotion: a float beats an int; between floats the wider wins, and
// f16 with bf16 (or an FP8 with another FP8) meets at f32; between ints the wider wins
// and at equal width unsigned wins; i1 is the narrowest int. Pointers do not promote.
constexpr DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_float(a) && !is_float(b)) return a;
  if (is_float(b) && !is_float(a)) return b;
  if (is_float(a) && is_float(b)) {
    if (is_fp8(a) && is_fp8(b)) return DType::f32;
    if (is_fp8(a)) return b;
    if (is_fp8(b)) return a;
    if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
    return DType::f32;  // f16 with bf16
  }
  if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
  return is_unsigned(a) ? a : b;
}

// Host-side storage types for the 16- and 8-bit floats. They only carry bits; the
// conversion functions live in tl/numeric.hpp.
struct bfloat16 { uint16_t bits = 0; };
struct half { uint16_t bits = 0; };
template <DType D> struct float8 { uint8_t bits = 0; };
// The MX storage types' bytes: two e2m1 codes (element 2i in bits 0-3, 2i + 1 in bits 4-7,
// as OCP MX and PyTorch's float4_e2m1fn_x2 store them) and one e8m0 scale code.
struct float4_e2m1x2 { uint8_t bits = 0; };
struct float8_e8m0 { uint8_t bits = 0; };

// Element tags: the compile-time element type of a tile, `tl::tile<ty::f32>`.
namespace ty {
template <DType D, class Host> struct elem {
  static constexpr DType dtype = D;
  using host = Host;
};
struct i1 : elem<DType::i1, bool> {};
struct i8 : elem<DType::i8, int8_t> {};
struct i16 : elem<DType::i16, int16_t> {};
struct i32 : elem<DType::i32, int32_t> {};
struct i64 : elem<DType::i64, int64_t> {};
struct u8 : elem<DType::u8, uint8_t> {};
struct u16 : elem<DType::u16, uint16_t> {};
struct u32 : elem<DType::u32, uint32_t> {};
struct u64 : elem<DType::u64, uint64_t> {};
struct f16 : elem<DType::f16, half> {};
struct bf16 : elem<DType::bf16, bfloat16> {};
struct f32 : elem<DType::f32, float> {};
struct f64 : elem<DType::f64, double> {};
struct f8e4m3fn : elem<DType::f8e4m3fn, float8<DType::f8e4m3fn>> {};
struct f8e5m2 : elem<DType::f8e5m2, float8<DType::f8e5m2>> {};
struct f8e4m3fnuz : elem<DType::f8e4m3fnuz, float8<DType::f8e4m3fnuz>> {};
struct f8e5m2fnuz : elem<DType::f8e5m2fnuz, float8<DType::f8e5m2fnuz>> {};
struct f4e2m1 : elem<DType::f4e2m1, float4_e2m1x2> {};
struct e8m0 : elem<DType::e8m0, float8_e8m0> {};
template <class E> struct ptr {
  static constexpr DType dtype = DType::ptr;
  using pointee = E;
  using host = typename E::host*;
};

template <DType D> struct from_dtype;
template <> struct from_dtype<DType::i1> { using type = i1; };
template <> struct from_dtype<DType::i8> { using type = i8; };
template <> struct from_dtype<DType::i16> { using type = i16; };
template <> struct from_dtype<DType::i32> { using type = i32; };
template <> struct from_dtype<DType::i64> { using type = i64; };
template <> struct from_dtype<DType::u8> { using type = u8; };
template <> struct from_dtype<DType::u16> { using type = u16; };
template <> struct from_dtype<DType::u32> { using type = u32; };
template <> struct from_dtype<DType::u64> { using type = u64; };
template <> struct from_dtype<DType::f16> { using type = f16; };
template <> struct from_dtype<DType::bf16> { using type = bf16; };
template <> struct from_dtype<DType::f32> { using type = f32; };
template <> struct from_dtype<DType::f64> { using type = f64; };
template <> struct from_dtype<DType::f8e4m3fn> { using type = f8e4m3fn; };
template <> struct from_dtype<DType::f8e5m2> { using type = f8e5m2; };
template <> struct from_dtype<DType::f8e4m3fnuz> { using type = f8e4m3fnuz; };
template <> struct from_dtype<DType::f8e5m2fnuz> { using type = f8e5m2fnuz; };
template <> struct from_dtype<DType::f4e2m1> { using type = f4e2m1; };
template <> struct from_dtype<DType::e8m0> { using type = e8m0; };

template <class A, class B>
using promote_t = typename from_dtype<promote(A::dtype, B::dtype)>::type;
}  // namespace ty

// The C++ arithmetic type that a trace-time literal of element type E is written as.
template <class T> constexpr DType dtype_of_host() {
  if constexpr (std::is_same_v<T, bool>) return DType::i1;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::i16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, long long>) return DType::i64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::u8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::u16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, unsigned long long>) return DType::u64;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, half>) return DType::f16;
  else if constexpr (std::is_same_v<T, bfloat16>) return DType::bf16;
  else return DType::ptr;
}

}  // namespace tl

// expect: a pointer parameter takes a tl::buffer of the same element type
// A KV cache of the other FP8 format than the one the decode is instantiated for does not compile.
#include <vector>
#include "samples/fp8_decode/decode.hpp"
void f(const fp8_decode::Workspace& w, const tl::buffer<tl::ty::bf16>& q, const tl::buffer<tl::ty::f8e4m3fnuz>& k,
       const tl::buffer<tl::ty::f8e4m3fn>& v, const tl::buffer<tl::ty::f32>& s, const tl::buffer<tl::ty::bf16>& o) {
  fp8_decode::decode<tl::f8e4m3fn>(w, q, k, v, s, s, o);
}

// The catalogue of malformed programs and misuses: each one must end in a typed tl
// error that names the user's line, never in a crash. Each case is written on one
// line so that __LINE__ is the line the error must name. Misuses that C++ rejects
// at compile time (argument count and types) are in tests/compile_fail.
#include <functional>

#include "support/reference.hpp"
#include "tl/autotune.hpp"

namespace {

using F32 = tl::ptr<tl::f32>;
using I32 = tl::ptr<tl::i32>;
enum Kind { Trace, Launch, Compile, Device };

struct Case {
  const char* name;
  std::function<void()> run;
  unsigned line;
  const char* what;
  Kind kind;
};

tl::buffer<tl::ty::f32> X() { return tltest::test_device().alloc<tl::f32>(1 << 16); }
tl::buffer<tl::ty::i32> XI() { return tltest::test_device().alloc<tl::i32>(1 << 16); }
template <class K> void go(K& k) { k[tl::grid(1)](X()); }
template <class K> void go_i(K& k) { k[tl::grid(1)](XI()); }

// tl::autotune's misuse: a configuration of one field, launched over 64 floats; a block
// that is not a power of two fails to compile.
struct TuneCfg {
  BOOST_HANA_DEFINE_STRUCT(TuneCfg, (int, block));
};
const auto tune_launch = [](tl::tuning& t, const TuneCfg& c, auto& x) {
  static auto k = tl::kernel("tune_misuse", [](F32 x, int B) { tl::store(x + tl::arange(0, B), tl::zeros<tl::f32>({B})); });
  t.launch(k, tl::grid(1), {}, x, c.block);
};

// clang-format off
std::vector<Case> catalogue() {
  std::vector<Case> c;
  // --- shapes ---
  c.push_back({"arange not a power of two", [] { auto k = tl::kernel("m1", [](F32 x) { tl::store(x + tl::arange(0, 3), tl::zeros<tl::f32>({4})); }); go(k); }, __LINE__, "not a power of two", Trace});
  c.push_back({"arange empty", [] { auto k = tl::kernel("m2", [](F32 x) { auto r = tl::arange(8, 8); tl::store(x, r.to<tl::f32>()); }); go(k); }, __LINE__, "end must be greater", Trace});
  c.push_back({"arange reversed", [] { auto k = tl::kernel("m3", [](F32 x) { auto r = tl::arange(16, 0); tl::store(x, r.to<tl::f32>()); }); go(k); }, __LINE__, "end must be greater", Trace});
  c.push_back({"zeros of npot shape", [] { auto k = tl::kernel("m4", [](F32 x) { auto z = tl::zeros<tl::f32>({6}); tl::store(x, tl::sum(z, 0)); }); go(k); }, __LINE__, "power of two", Trace});
  c.push_back({"zeros of rank 6", [] { auto k = tl::kernel("m5", [](F32 x) { auto z = tl::zeros<tl::f32>({2, 2, 2, 2, 2, 2}); tl::store(x, tl::sum(tl::reshape(z, {64}), 0)); }); go(k); }, __LINE__, "at most 5 dimensions", Trace});
  c.push_back({"reshape to rank 6", [] { auto k = tl::kernel("m5b", [](F32 x) { auto z = tl::reshape(tl::zeros<tl::f32>({64}), {2, 2, 2, 2, 2, 2}); tl::store(x, tl::sum(z)); }); go(k); }, __LINE__, "tl::reshape: tiles have at most 5 dimensions (Triton's limit), got [2, 2, 2, 2, 2, 2]", Trace});
  c.push_back({"add of mismatched shapes", [] { auto k = tl::kernel("m6", [](F32 x) { auto a = tl::zeros<tl::f32>({16}) + tl::zeros<tl::f32>({32}); tl::store(x, tl::sum(a, 0)); }); go(k); }, __LINE__, "do not broadcast", Trace});
  c.push_back({"2-D shapes that do not broadcast", [] { auto k = tl::kernel("m7", [](F32 x) { auto a = tl::zeros<tl::f32>({4, 8}) * tl::zeros<tl::f32>({8, 4}); tl::store(x, tl::sum(tl::sum(a, 0), 0)); }); go(k); }, __LINE__, "do not broadcast", Trace});
  c.push_back({"compare of mismatched shapes", [] { auto k = tl::kernel("m8", [](F32 x) { auto m = tl::arange(0, 16) < tl::arange(0, 8); tl::store(x + tl::arange(0, 16), tl::zeros<tl::f32>({16}), m); }); go(k); }, __LINE__, "do not broadcast", Trace});
  c.push_back({"reshape changes element count", [] { auto k = tl::kernel("m9", [](F32 x) { auto r = tl::reshape(tl::arange(0, 16), {4, 8}); tl::store(x, tl::sum(tl::sum(r, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "elements", Trace});
  c.push_back({"reshape to npot", [] { auto k = tl::kernel("m10", [](F32 x) { auto r = tl::reshape(tl::arange(0, 16), {3, 5}); tl::store(x, tl::sum(tl::sum(r, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "power of two", Trace});
  c.push_back({"trans with a bad permutation", [] { auto k = tl::kernel("m11", [](F32 x) { auto t = tl::trans(tl::zeros<tl::f32>({4, 8}), {0, 0}); tl::store(x, tl::sum(tl::sum(t, 0), 0)); }); go(k); }, __LINE__, "not a permutation", Trace});
  c.push_back({"expand_dims axis out of range", [] { auto k = tl::kernel("m12", [](F32 x) { auto e = tl::expand_dims(tl::arange(0, 8), 3); tl::store(x, tl::sum(tl::reshape(e, {8}), 0).to<tl::f32>()); }); go(k); }, __LINE__, "out of range", Trace});
  c.push_back({"broadcast_to an incompatible shape", [] { auto k = tl::kernel("m13", [](F32 x) { auto b = tl::broadcast_to(tl::zeros<tl::f32>({8}), {8, 4}); tl::store(x, tl::sum(tl::sum(b, 0), 0)); }); go(k); }, __LINE__, "cannot broadcast", Trace});
  c.push_back({"broadcast_to a lower rank", [] { auto k = tl::kernel("m14", [](F32 x) { auto b = tl::broadcast_to(tl::zeros<tl::f32>({2, 8}), {8}); tl::store(x, tl::sum(b, 0)); }); go(k); }, __LINE__, "cannot broadcast", Trace});
  // --- limits (docs/language.md, "Limits") ---
  c.push_back({"tile over 2^20 elements", [] { auto k = tl::kernel("t1", [](F32 x) { auto r = tl::arange(0, 1 << 21); tl::store(x, tl::sum(r, 0).to<tl::f32>()); }); go(k); }, __LINE__, "larger than the 1048576 (2^20) a tile may have", Trace});
  c.push_back({"broadcast to over 2^20 elements", [] { auto k = tl::kernel("t2", [](F32 x) { auto a = tl::expand_dims(tl::arange(0, 1024), 1) + tl::expand_dims(tl::arange(0, 2048), 0); tl::store(x, tl::sum(tl::sum(a, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "a tile of 2097152 elements", Trace});
  c.push_back({"tile over the registers of one wave", [] { auto k = tl::kernel("t3", [](F32 x) { tl::store(x + tl::arange(0, 65536), tl::zeros<tl::f32>({65536})); }); auto d = X(); (void)k.compile("gfx942", {.num_warps = 1}, d.data()); }, __LINE__, "1024 32-bit elements per lane at num_warps=1 (64 lanes), more than the 512 registers a lane has on gfx942", Trace});
  c.push_back({"64-bit tile over an NVIDIA lane's registers", [] { auto k = tl::kernel("t4", [](F32 x) { auto v = tl::arange(0, 32768).to<tl::i64>(); tl::store(x, tl::sum(v, 0).to<tl::f32>()); }); auto d = X(); (void)k.compile("sm_90", {.num_warps = 2}, d.data()); }, __LINE__, "512 64-bit elements per lane at num_warps=2 (64 lanes), more than the 512 registers a lane has on sm_90", Trace});
  // --- reductions ---
  c.push_back({"sum axis out of range", [] { auto k = tl::kernel("m15", [](F32 x) { tl::store(x, tl::sum(tl::zeros<tl::f32>({8}), 1)); }); go(k); }, __LINE__, "axis 1 is out of range", Trace});
  c.push_back({"max with a negative axis out of range", [] { auto k = tl::kernel("m16", [](F32 x) { tl::store(x, tl::max(tl::zeros<tl::f32>({8}), -2)); }); go(k); }, __LINE__, "out of range", Trace});
  c.push_back({"reduction of a scalar", [] { auto k = tl::kernel("m17", [](F32 x) { tl::f32 s = 1.0f; tl::store(x, tl::sum(s, 0)); }); go(k); }, __LINE__, "cannot reduce a scalar", Trace});
  c.push_back({"sum of i1", [] { auto k = tl::kernel("m18", [](I32 x) { tl::store(x, tl::sum(tl::arange(0, 8) < 4, 0).to<tl::i32>()); }); go_i(k); }, __LINE__, "cannot reduce i1", Trace});
  c.push_back({"cumsum axis out of range", [] { auto k = tl::kernel("m19", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::cumsum(tl::zeros<tl::f32>({8}), 2)); }); go(k); }, __LINE__, "out of range", Trace});
  c.push_back({"reduction of fp8", [] { auto k = tl::kernel("m20", [](F32 x) { tl::store(x, tl::sum(tl::zeros<tl::f32>({8}).to<tl::f8e4m3fn>(), 0).to<tl::f32>()); }); go(k); }, __LINE__, "cannot reduce f8e4m3fn", Trace});
  c.push_back({"xor_sum of floats", [] { auto k = tl::kernel("shp10", [](F32 x) { tl::store(x, tl::xor_sum(tl::zeros<tl::f32>({8}), 0)); }); go(k); }, __LINE__, "tl::xor_sum: needs an integer tile, got f32", Trace});
  c.push_back({"sum of every axis of a scalar", [] { auto k = tl::kernel("shp11", [](F32 x) { tl::f32 s = 1.0f; tl::store(x, tl::sum(s)); }); go(k); }, __LINE__, "cannot reduce a scalar", Trace});
  c.push_back({"keep_dims with an axis out of range", [] { auto k = tl::kernel("shp12", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::reshape(tl::sum(tl::zeros<tl::f32>({8, 8}), 2, tl::keep_dims), {8})); }); go(k); }, __LINE__, "axis 2 is out of range", Trace});
  c.push_back({"max with indices of a scalar", [] { auto k = tl::kernel("shp13", [](F32 x) { tl::f32 s = 1.0f; auto [m, i] = tl::max(s, 0, tl::return_indices); tl::store(x, m); }); go(k); }, __LINE__, "cannot reduce a scalar", Trace});
  c.push_back({"cumprod of i1", [] { auto k = tl::kernel("shp14", [](I32 x) { auto c = tl::cumprod(tl::arange(0, 8) < 4, 0); tl::store(x + tl::arange(0, 8), c.to<tl::i32>()); }); go_i(k); }, __LINE__, "tl::cumprod: cannot scan i1", Trace});
  c.push_back({"reverse cumsum axis out of range", [] { auto k = tl::kernel("shp15", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::cumsum(tl::zeros<tl::f32>({8}), 1, true)); }); go(k); }, __LINE__, "axis 1 is out of range", Trace});
  // --- join, split, interleave, cat, flip ---
  c.push_back({"split of a last dim that is not 2", [] { auto k = tl::kernel("shp1", [](F32 x) { auto [a, b] = tl::split(tl::zeros<tl::f32>({8, 4})); tl::store(x + tl::arange(0, 8), tl::sum(a + b, 1)); }); go(k); }, __LINE__, "tl::split: the last dim must be 2, the tile is [8, 4]", Trace});
  c.push_back({"split of a scalar", [] { auto k = tl::kernel("shp2", [](F32 x) { tl::f32 s = 1.0f; auto [a, b] = tl::split(s); tl::store(x, a + b); }); go(k); }, __LINE__, "the last dim must be 2, the tile is []", Trace});
  c.push_back({"join of shapes that do not broadcast", [] { auto k = tl::kernel("shp3", [](F32 x) { auto j = tl::join(tl::zeros<tl::f32>({8}), tl::zeros<tl::f32>({4})); tl::store(x + tl::arange(0, 8), tl::sum(j, 1)); }); go(k); }, __LINE__, "tl::join: shapes [8] and [4] do not broadcast", Trace});
  c.push_back({"join past 5 dimensions", [] { auto k = tl::kernel("shp4", [](F32 x) { auto j = tl::join(tl::zeros<tl::f32>({2, 2, 2, 2, 2}), tl::zeros<tl::f32>({2, 2, 2, 2, 2})); tl::store(x, tl::sum(tl::reshape(j, {64}), 0)); }); go(k); }, __LINE__, "tl::join: tiles have at most 5 dimensions", Trace});
  c.push_back({"cat of mismatched shapes", [] { auto k = tl::kernel("shp5", [](F32 x) { auto c = tl::cat(tl::zeros<tl::f32>({8, 4}), tl::zeros<tl::f32>({8, 2})); tl::store(x, tl::sum(tl::sum(c, 1), 0)); }); go(k); }, __LINE__, "tl::cat: the shapes must be equal, got [8, 4] and [8, 2]", Trace});
  c.push_back({"cat of scalars", [] { auto k = tl::kernel("shp6", [](F32 x) { tl::f32 s = 1.0f; auto c = tl::cat(s, s); tl::store(x, c); }); go(k); }, __LINE__, "tl::cat: cannot concatenate scalars", Trace});
  c.push_back({"cat past the element limit", [] { auto k = tl::kernel("shp7", [](F32 x) { auto z = tl::zeros<tl::f32>({1 << 20}); tl::store(x, tl::sum(tl::cat(z, z), 0)); }); go(k); }, __LINE__, "1048576 elements", Trace});  // (a GPU's per-lane register check stops the zeros first: "a tile of 1048576 elements ...")
  c.push_back({"flip dim out of range", [] { auto k = tl::kernel("shp8", [](F32 x) { auto f = tl::flip(tl::zeros<tl::f32>({8, 8}), 2); tl::store(x, tl::sum(tl::sum(f, 1), 0)); }); go(k); }, __LINE__, "tl::flip: dim 2 is out of range for a rank-2 tile", Trace});
  c.push_back({"gather index of the wrong shape", [] { auto k = tl::kernel("shp16", [](F32 x) { auto g = tl::gather(tl::zeros<tl::f32>({8, 4}), tl::zeros<tl::i32>({8, 8}), 0); tl::store(x, tl::sum(g)); }); go(k); }, __LINE__, "tl::gather: the index's shape [8, 8] must be the source's [8, 4] but along axis 0", Trace});
  c.push_back({"gather with a float index", [] { auto k = tl::kernel("shp17", [](F32 x) { auto g = tl::gather(tl::zeros<tl::f32>({8}), tl::zeros<tl::f32>({8}), 0); tl::store(x, tl::sum(g)); }); go(k); }, __LINE__, "tl::gather: the index must be an integer tile, got f32", Trace});
  c.push_back({"gather axis out of range", [] { auto k = tl::kernel("shp18", [](F32 x) { auto g = tl::gather(tl::zeros<tl::f32>({8}), tl::zeros<tl::i32>({8}), 1); tl::store(x, tl::sum(g)); }); go(k); }, __LINE__, "tl::gather: axis 1 is out of range for a rank-1 tile", Trace});
  c.push_back({"sort of a dim that is not a power of two", [] { auto k = tl::kernel("srt1", [](F32 x) { auto s = tl::sort(tl::arange(0, 6)); tl::store(x, tl::sum(s).to<tl::f32>()); }); go(k); }, __LINE__, "tl::arange(0, 6): the length 6 is not a power of two", Trace});
  c.push_back({"sort of FP8", [] { auto k = tl::kernel("srt2", [](F32 x) { auto s = tl::sort(tl::zeros<tl::f8e5m2>({8})); tl::store(x, tl::sum(s.to<tl::f32>())); }); go(k); }, __LINE__, "tl::sort: cannot sort f8e5m2 elements", Trace});
  c.push_back({"sort dim out of range", [] { auto k = tl::kernel("srt3", [](F32 x) { auto s = tl::sort(tl::zeros<tl::f32>({8}), 1); tl::store(x, tl::sum(s)); }); go(k); }, __LINE__, "tl::sort: dim 1 is out of range for a rank-1 tile", Trace});
  c.push_back({"topk with k past the dim", [] { auto k = tl::kernel("srt4", [](F32 x) { auto s = tl::topk(tl::zeros<tl::f32>({8}), 16); tl::store(x, tl::sum(s)); }); go(k); }, __LINE__, "tl::topk: k = 16 must be from 1 to the dim's length 8", Trace});
  c.push_back({"topk with k of 0", [] { auto k = tl::kernel("srt5", [](F32 x) { auto s = tl::topk(tl::zeros<tl::f32>({8}), 0); tl::store(x, tl::sum(s)); }); go(k); }, __LINE__, "tl::topk: k = 0 must be from 1 to the dim's length 8", Trace});
  c.push_back({"topk with k not a power of two", [] { auto k = tl::kernel("srt6", [](F32 x) { auto s = tl::topk(tl::zeros<tl::f32>({8}), 6); tl::store(x, tl::sum(s)); }); go(k); }, __LINE__, "tl::topk: k = 6 is not a power of two", Trace});
  c.push_back({"histogram of a float tile", [] { auto k = tl::kernel("srt7", [](F32 x) { auto h = tl::histogram(tl::zeros<tl::f32>({8}), 8); tl::store(x, tl::sum(h).to<tl::f32>()); }); go(k); }, __LINE__, "tl::histogram: needs an integer tile, got f32", Trace});
  c.push_back({"histogram of no bins", [] { auto k = tl::kernel("srt8", [](F32 x) { auto h = tl::histogram(tl::arange(0, 8), 0); tl::store(x, tl::sum(h).to<tl::f32>()); }); go(k); }, __LINE__, "tl::histogram: num_bins = 0 must be a positive power of two", Trace});
  c.push_back({"histogram of a bin count not a power of two", [] { auto k = tl::kernel("srt9", [](F32 x) { auto h = tl::histogram(tl::arange(0, 8), 10); tl::store(x, tl::sum(h).to<tl::f32>()); }); go(k); }, __LINE__, "tl::histogram: num_bins = 10 must be a positive power of two", Trace});
  // --- tensor descriptors (tl::make_tensor_descriptor) ---
  c.push_back({"descriptor with a last stride not 1", [] { auto k = tl::kernel("dsc1", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 2}, {16, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); go(k); }, __LINE__, "tl::make_tensor_descriptor: the last stride must be 1 (the last dim contiguous), got 2", Trace});
  c.push_back({"descriptor with a run-time last stride", [] { auto k = tl::kernel("dsc2", [](F32 x, tl::i32 s) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, s}, {16, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); k[tl::grid(1)](X(), 2); }, __LINE__, "the last stride must be a C++ 1", Trace});
  c.push_back({"descriptor block not a power of two", [] { auto k = tl::kernel("dsc3", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {12, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); go(k); }, __LINE__, "block_shape [12, 16]: every dim must be a power of two, got 12", Trace});
  c.push_back({"descriptor block under 16 bytes a row", [] { auto k = tl::kernel("dsc4", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 2}); tl::store(x, tl::sum(d.load({0, 0}))); }); go(k); }, __LINE__, "the block's last dim must span at least 16 bytes, got 2 x 4 = 8 bytes", Trace});
  c.push_back({"descriptor of rank 6", [] { auto k = tl::kernel("dsc5", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {2, 2, 2, 2, 2, 64}, {1024, 512, 256, 128, 64, 1}, {2, 2, 2, 2, 2, 16}); tl::store(x, tl::sum(d.load({0, 0, 0, 0, 0, 0}))); }); go(k); }, __LINE__, "the block [2, 2, 2, 2, 2, 16] has 6 dims; descriptors have 1 to 5", Trace});
  c.push_back({"descriptor shape and block of other ranks", [] { auto k = tl::kernel("dsc6", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64}, {64, 1}, {16, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); go(k); }, __LINE__, "1 shape entries and 2 strides for a block of 2 dims", Trace});
  c.push_back({"descriptor stride not a multiple of 16 bytes", [] { auto k = tl::kernel("dsc7", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {65, 1}, {16, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); go(k); }, __LINE__, "strides[0] = 65 is 260 bytes, not a multiple of 16", Trace});
  c.push_back({"descriptor with a float shape", [] { auto k = tl::kernel("dsc8", [](F32 x, tl::f32 n) { auto d = tl::make_tensor_descriptor(x, {n, 64}, {64, 1}, {16, 16}); tl::store(x, tl::sum(d.load({0, 0}))); }); k[tl::grid(1)](X(), 1.f); }, __LINE__, "shape[0] must be a scalar integer or a C++ integer, got f32", Trace});
  c.push_back({"descriptor load with offsets of another rank", [] { auto k = tl::kernel("dsc9", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}); tl::store(x, tl::sum(d.load({0}))); }); go(k); }, __LINE__, "tensor_descriptor::load: 1 offset for a descriptor of 2 dims (block [16, 16])", Trace});
  c.push_back({"descriptor load at a tile offset", [] { auto k = tl::kernel("dsc10", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}); tl::store(x, tl::sum(d.load({tl::arange(0, 2), 0}))); }); go(k); }, __LINE__, "offsets[0] must be a scalar integer or a C++ integer, got tile<2xi32>", Trace});
  c.push_back({"descriptor store of another element type", [] { auto k = tl::kernel("dsc11", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}); d.store({0, 0}, tl::zeros<tl::f16>({16, 16})); }); go(k); }, __LINE__, "tensor_descriptor::store: the value is tile<16x16xf16>, the descriptor's elements are f32", Trace});
  c.push_back({"descriptor store of another shape", [] { auto k = tl::kernel("dsc12", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}); d.store({0, 0}, tl::zeros<tl::f32>({16, 32})); }); go(k); }, __LINE__, "tensor_descriptor::store: the value's shape [16, 32] is not the block's [16, 16]", Trace});
  c.push_back({"descriptor store with offsets of another rank", [] { auto k = tl::kernel("dsc13", [](F32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}); d.store({0, 0, 0}, tl::zeros<tl::f32>({16, 16})); }); go(k); }, __LINE__, "tensor_descriptor::store: 3 offsets for a descriptor of 2 dims", Trace});
  c.push_back({"descriptor NaN padding of integers", [] { auto k = tl::kernel("dsc14", [](I32 x) { auto d = tl::make_tensor_descriptor(x, {64, 64}, {64, 1}, {16, 16}, tl::padding_option::nan); tl::store(x, tl::sum(d.load({0, 0}))); }); go_i(k); }, __LINE__, "tl::make_tensor_descriptor: padding_option::nan for i32 elements", Trace});
  // --- host tensor descriptors (tl::TensorDescriptor, Triton's TensorDescriptor's checks) ---
  c.push_back({"host descriptor stride not a multiple of 16 bytes", [] { auto b = X(); tl::TensorDescriptor<tl::f32> d(b, {64, 64}, {65, 1}, {16, 16}); }, __LINE__, "tl::TensorDescriptor: strides[0] = 65 is 260 bytes, not a multiple of 16", Launch});
  c.push_back({"host descriptor base not 16-byte aligned", [] { auto b = X(); tl::TensorDescriptor<tl::f32> d(b.data() + 1, {64, 64}, {64, 1}, {16, 16}); }, __LINE__, "is not 16-byte aligned", Launch});
  c.push_back({"host descriptor block not a power of two", [] { auto b = X(); tl::TensorDescriptor<tl::f32> d(b, {64, 64}, {64, 1}, {16, 24}); }, __LINE__, "tl::TensorDescriptor: block_shape [16, 24]: every dim must be a power of two, got 24", Launch});
  c.push_back({"host descriptor of another rank than the parameter", [] { auto k = tl::kernel("dsc15", [](tl::tensor_descriptor<tl::f32, 2> d, F32 o) { tl::store(o, tl::sum(d.load({0, 0}))); }); auto b = X(); k[tl::grid(1)](tl::TensorDescriptor<tl::f32>(b, {4096}, {1}, {16}), b); }, __LINE__, "a tl::TensorDescriptor of 1 dim for a kernel parameter tl::tensor_descriptor<T, 2>", Launch});
  // --- tl::reduce / tl::associative_scan with a combine function ---
  c.push_back({"combine returning the wrong arity", [] { auto k = tl::kernel("cmb1", [](F32 x) { auto [v, i] = tl::reduce(std::tuple{tl::zeros<tl::f32>({8}), tl::arange(0, 8)}, 0, [](tl::f32 a, tl::i32 ia, tl::f32 b, tl::i32 ib) { return a + b; }); tl::store(x, v); }); go(k); }, __LINE__, "tl::reduce: the combine function returns 1 value where 2 are needed", Trace});
  c.push_back({"combine returning the wrong type", [] { auto k = tl::kernel("cmb2", [](F32 x) { auto s = tl::associative_scan(tl::arange(0, 8), 0, [](tl::i32 a, tl::i32 b) { return a.to<tl::f32>() + b.to<tl::f32>(); }); tl::store(x + tl::arange(0, 8), s.to<tl::f32>()); }); go(k); }, __LINE__, "tl::associative_scan: the combine function returns f32 as its value 0, whose operand holds i32", Trace});
  c.push_back({"combine that loads", [] { auto k = tl::kernel("cmb3", [](F32 x) { tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [x](tl::f32 a, tl::f32 b) { return a + b * tl::load(x); })); }); go(k); }, __LINE__, "load inside a combine function: a combine must be free of side effects", Trace});
  c.push_back({"combine that stores", [] { auto k = tl::kernel("cmb4", [](F32 x) { tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [x](tl::f32 a, tl::f32 b) { tl::store(x, a); return a + b; })); }); go(k); }, __LINE__, "store inside a combine function", Trace});
  c.push_back({"combine with an atomic", [] { auto k = tl::kernel("cmb5", [](F32 x) { tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [x](tl::f32 a, tl::f32 b) { (void)tl::atomic_add(x, a); return a + b; })); }); go(k); }, __LINE__, "atomic_rmw inside a combine function", Trace});
  c.push_back({"combine with a loop", [] { auto k = tl::kernel("cmb6", [](F32 x) { tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [](tl::f32 a, tl::f32 b) { for (auto i : tl::range(0, 2)) a = a + b; return a; })); }); go(k); }, __LINE__, "a combine function cannot contain tl::range, tl::while_ or tl::if_", Trace});
  c.push_back({"combine reading a tile from outside", [] { auto k = tl::kernel("cmb7", [](F32 x) { auto t = tl::zeros<tl::f32>({8}); tl::store(x, tl::reduce(t, 0, [&t](tl::f32 a, tl::f32 b) { return a + tl::sum(t, 0) + b; })); }); go(k); }, __LINE__, "reduce of a tile<8xf32> inside a combine function, which combines scalars", Trace});
  c.push_back({"combine's value used after it", [] { auto k = tl::kernel("cmb8", [](F32 x) { tl::f32 leak = 0.0f; tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [&leak](tl::f32 a, tl::f32 b) { leak = a; return a + b; })); tl::store(x + 1, leak); }); go(k); }, __LINE__, "reads a value made inside the combine function of the tl::reduce", Trace});
  c.push_back({"combine operands of two shapes", [] { auto k = tl::kernel("cmb9", [](F32 x) { auto [a, b] = tl::reduce(std::tuple{tl::zeros<tl::f32>({8}), tl::zeros<tl::f32>({16})}, 0, [](tl::f32 p, tl::f32 q, tl::f32 r, tl::f32 s) { return std::tuple{p + r, q + s}; }); tl::store(x, a + b); }); go(k); }, __LINE__, "tl::reduce: the operands must have one shape: operand 0 is [8], operand 1 is [16]", Trace});
  c.push_back({"combine scan axis out of range", [] { auto k = tl::kernel("cmb10", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::associative_scan(tl::zeros<tl::f32>({8}), 1, [](tl::f32 a, tl::f32 b) { return a + b; }, true)); }); go(k); }, __LINE__, "tl::associative_scan: axis 1 is out of range for a rank-1 tile", Trace});
  c.push_back({"combine over i1", [] { auto k = tl::kernel("cmb11", [](F32 x) { auto m = tl::reduce(tl::arange(0, 8) < 4, 0, [](tl::i1 a, tl::i1 b) { return a | b; }); tl::store(x, tl::where(m, 1.0f, 0.0f)); }); go(k); }, __LINE__, "tl::reduce: operand 0 holds i1 elements, which a combine cannot take (cast first)", Trace});
  c.push_back({"flip of a scalar", [] { auto k = tl::kernel("shp9", [](F32 x) { tl::f32 s = 1.0f; tl::store(x, tl::flip(s)); }); go(k); }, __LINE__, "tl::flip: cannot flip a scalar", Trace});
  // --- compiler hints (tl::multiple_of, tl::max_contiguous, tl::max_constancy, tl::assume) ---
  c.push_back({"multiple_of with n <= 0", [] { auto k = tl::kernel("h1", [](F32 x) { auto i = tl::multiple_of(tl::arange(0, 8), 0); tl::store(x + i, tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "tl::multiple_of: the values must be positive, got 0", Trace});
  c.push_back({"max_contiguous with a negative value", [] { auto k = tl::kernel("h2", [](F32 x) { auto i = tl::max_contiguous(tl::arange(0, 8), -8); tl::store(x + i, tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "tl::max_contiguous: the values must be positive, got -8", Trace});
  c.push_back({"hint with a value per dim missing", [] { auto k = tl::kernel("h3", [](F32 x) { auto i = tl::expand_dims(tl::arange(0, 8), 0) + tl::expand_dims(tl::arange(0, 8), 1); auto j = tl::max_constancy(i, 4); tl::store(x + j, tl::zeros<tl::f32>({8, 8})); }); go(k); }, __LINE__, "tl::max_constancy: 1 value for a tile of shape [8, 8] (one per dimension)", Trace});
  c.push_back({"multiple_of a float tile", [] { auto k = tl::kernel("h4", [](F32 x) { auto v = tl::multiple_of(tl::zeros<tl::f32>({8}), 16); tl::store(x + tl::arange(0, 8), v); }); go(k); }, __LINE__, "applies to integer and pointer tiles, got tile<8xf32>", Trace});
  c.push_back({"assume of a non-scalar", [] { auto k = tl::kernel("h5", [](F32 x) { tl::assume(tl::arange(0, 8) >= 0); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "tl::assume: the condition must be a scalar i1, got tile<8xi1>", Trace});
  // --- synchronization ---
  c.push_back({"barrier outside a kernel", [] { tl::barrier(); }, __LINE__, "only be used inside a kernel", Trace});
  c.push_back({"gdc_wait outside a kernel", [] { tl::gdc_wait(); }, __LINE__, "only be used inside a kernel", Trace});
  c.push_back({"gdc_launch_dependents outside a kernel", [] { tl::gdc_launch_dependents(); }, __LINE__, "only be used inside a kernel", Trace});
  c.push_back({"gdc_wait inside a combine function", [] { auto k = tl::kernel("gdc1", [](F32 x) { tl::store(x, tl::reduce(tl::zeros<tl::f32>({8}), 0, [](tl::f32 a, tl::f32 b) { tl::gdc_wait(); return a + b; })); }); go(k); }, __LINE__, "gdc_wait inside a combine function", Trace});
  // --- tiles declared without a value (`tl::f32 v;`) ---
  c.push_back({"tile never given a value, read", [] { auto k = tl::kernel("u1", [](F32 x) { tl::f32 v; tl::store(x + tl::arange(0, 8), v + 1.0f); }); go(k); }, __LINE__, "use of a tile that was never given a value", Trace});
  c.push_back({"tile never given a value, as a loop bound", [] { auto k = tl::kernel("u2", [](F32 x) { tl::i32 n; for (auto i : tl::range(0, n)) tl::store(x + i, tl::f32(1.0f)); }); go(k); }, __LINE__, "use of a tile that was never given a value", Trace});
  c.push_back({"tile without a value assigned in a loop", [] { auto k = tl::kernel("u3", [](F32 x) { tl::f32 v; for (auto i : tl::range(0, 4)) v = tl::load(x + i * 8 + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), v); }); go(k); }, __LINE__, "cannot be assigned inside a tl::range loop", Trace});
  c.push_back({"tile without a value assigned in one branch only, read after it", [] { auto k = tl::kernel("u4", [](F32 x) { tl::f32 v; tl::if_(tl::program_id(0) == 0, [&] { v = tl::load(x + tl::arange(0, 8)); }); tl::store(x + tl::arange(0, 8), v); }); go(k); }, __LINE__, "or assigned in one branch of a tl::if_ only", Trace});
  // --- dtypes ---
  c.push_back({"bitwise and on floats", [] { auto k = tl::kernel("m21", [](F32 x) { auto v = tl::zeros<tl::f32>({8}); tl::store(x + tl::arange(0, 8), v & v); }); go(k); }, __LINE__, "needs integer operands", Trace});
  c.push_back({"shift of floats", [] { auto k = tl::kernel("m22", [](F32 x) { auto v = tl::zeros<tl::f32>({8}); tl::store(x + tl::arange(0, 8), v << v); }); go(k); }, __LINE__, "needs integer operands", Trace});
  c.push_back({"exp of an integer tile", [] { auto k = tl::kernel("m23", [](I32 x) { tl::store(x + tl::arange(0, 8), tl::exp(tl::arange(0, 8))); }); go_i(k); }, __LINE__, "floating-point tile", Trace});
  c.push_back({"sqrt of an integer tile", [] { auto k = tl::kernel("m24", [](I32 x) { tl::store(x + tl::arange(0, 8), tl::sqrt(tl::arange(0, 8))); }); go_i(k); }, __LINE__, "floating-point tile", Trace});
  c.push_back({"arithmetic on fp8", [] { auto k = tl::kernel("m25", [](F32 x) { auto q = tl::zeros<tl::f32>({8}).to<tl::f8e5m2>(); tl::store(x + tl::arange(0, 8), (q * q).to<tl::f32>()); }); go(k); }, __LINE__, "FP8 is a storage type", Trace});
  c.push_back({"not of a float", [] { auto k = tl::kernel("m26", [](F32 x) { tl::store(x + tl::arange(0, 8), ~tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "needs an integer tile", Trace});
  c.push_back({"fma of integers", [] { auto k = tl::kernel("m27", [](I32 x) { auto i = tl::arange(0, 8); tl::store(x + i, tl::fma(i, i, i)); }); go_i(k); }, __LINE__, "tl::fma needs", Trace});
  c.push_back({"comparison of fp8", [] { auto k = tl::kernel("m28", [](F32 x) { auto q = tl::zeros<tl::f32>({8}).to<tl::f8e4m3fn>(); tl::store(x + tl::arange(0, 8), tl::zeros<tl::f32>({8}), q < q); }); go(k); }, __LINE__, "comparisons on FP8", Trace});
  c.push_back({"integer literal outside the tile's dtype", [] { auto k = tl::kernel("m30", [](I32 x) { auto v = tl::arange(0, 8).to<tl::i8>(); tl::store(x + tl::arange(0, 8), tl::where(v < 200, 1, 0)); }); go_i(k); }, __LINE__, "the literal 200 does not fit i8", Trace});
  c.push_back({"negative literal with an unsigned tile", [] { auto k = tl::kernel("m31", [](I32 x) { auto v = tl::arange(0, 8).to<tl::u32>(); tl::store(x + tl::arange(0, 8), tl::where(v > -1, 1, 0)); }); go_i(k); }, __LINE__, "the literal -1 does not fit u32", Trace});
  c.push_back({"NaN where an integer is wanted", [] { auto k = tl::kernel("m32", [](I32 x) { tl::store(x + tl::arange(0, 8), tl::full<tl::i32>({8}, NAN)); }); go_i(k); }, __LINE__, "the number nan is not a value of i32", Trace});
  c.push_back({"neg of i1", [] { auto k = tl::kernel("m29", [](I32 x) { auto b = tl::arange(0, 8) < 4; tl::store(x + tl::arange(0, 8), (-b).to<tl::i32>()); }); go_i(k); }, __LINE__, "on i1", Trace});
  // --- masks and memory ---
  c.push_back({"mask of another rank", [] { auto k = tl::kernel("m30", [](F32 x) { auto c = tl::arange(0, 32); auto p = x + tl::expand_dims(tl::arange(0, 4), 1) * 32 + tl::expand_dims(c, 0); tl::store(p, tl::load(p, c < 10)); }); go(k); }, __LINE__, "does not match pointer shape", Trace});
  c.push_back({"mask of the wrong length", [] { auto k = tl::kernel("m31", [](F32 x) { auto p = x + tl::arange(0, 32); tl::store(p, tl::zeros<tl::f32>({32}), tl::arange(0, 16) < 4); }); go(k); }, __LINE__, "does not match pointer shape", Trace});
  c.push_back({"store value of another shape", [] { auto k = tl::kernel("m32", [](F32 x) { tl::store(x + tl::arange(0, 32), tl::zeros<tl::f32>({16})); }); go(k); }, __LINE__, "value shape [16] does not match pointer shape [32]", Trace});
  c.push_back({"other without a mask", [] { auto k = tl::kernel("m33", [](F32 x) { auto p = x + tl::arange(0, 8); tl::store(p, tl::f32(tl::detail::load(p.get(), nullptr, tl::f32(0.0f).get(), std::source_location::current()))); }); go(k); }, __LINE__, "'other' needs a mask", Trace});
  c.push_back({"mask that is not i1", [] { auto k = tl::kernel("m34", [](F32 x) { auto p = x + tl::arange(0, 8); tl::store(p, tl::f32(tl::detail::load(p.get(), tl::arange(0, 8).get(), nullptr, std::source_location::current()))); }); go(k); }, __LINE__, "the mask must be i1", Trace});
  c.push_back({"load through a non-pointer", [] { auto k = tl::kernel("m35", [](F32 x) { auto i = tl::arange(0, 8); tl::store(x + i, tl::f32(tl::detail::load(i.get(), nullptr, nullptr, std::source_location::current()))); }); go(k); }, __LINE__, "expected a pointer tile", Trace});
  c.push_back({"store of a mismatched dtype", [] { auto k = tl::kernel("m36", [](F32 x) { auto p = x + tl::arange(0, 8); tl::detail::store(p.get(), tl::arange(0, 8).get(), nullptr, std::source_location::current()); }); go(k); }, __LINE__, "stored through a pointer to f32", Trace});
  // --- tl::amd buffer accesses ---
  c.push_back({"buffer_load from a pointer tile", [] { auto k = tl::kernel("b1", [](F32 x) { auto i = tl::arange(0, 8); tl::store(x + i, tl::amd::buffer_load(x + i, i)); }); go(k); }, __LINE__, "the base must be a scalar pointer", Trace});
  c.push_back({"buffer_load with i64 offsets", [] { auto k = tl::kernel("b2", [](F32 x) { auto i = tl::arange(0, 8); tl::store(x + i, tl::amd::buffer_load(x, i.to<tl::i64>())); }); go(k); }, __LINE__, "the offsets must be an i32 tile", Trace});
  c.push_back({"buffer_load with a scalar offset", [] { auto k = tl::kernel("b3", [](F32 x) { tl::store(x, tl::sum(tl::amd::buffer_load(x, tl::i32(0)), 0)); }); go(k); }, __LINE__, "the offsets must be a tile", Trace});
  c.push_back({"buffer_load mask of another shape", [] { auto k = tl::kernel("b4", [](F32 x) { auto i = tl::arange(0, 8); tl::store(x + i, tl::amd::buffer_load(x, i, tl::arange(0, 16) < 4)); }); go(k); }, __LINE__, "mask shape [16] does not match offsets shape [8]", Trace});
  c.push_back({"buffer_store value of another shape", [] { auto k = tl::kernel("b5", [](F32 x) { tl::amd::buffer_store(x, tl::arange(0, 8), tl::zeros<tl::f32>({16})); }); go(k); }, __LINE__, "value shape [16] does not match offsets shape [8]", Trace});
  c.push_back({"buffer_store mask of another rank", [] { auto k = tl::kernel("b6", [](F32 x) { auto i = tl::arange(0, 8); tl::amd::buffer_store(x, i, tl::zeros<tl::f32>({8}), tl::expand_dims(i < 4, 0)); }); go(k); }, __LINE__, "mask shape [1, 8] does not match offsets shape [8]", Trace});
  c.push_back({"buffer_store to a pointer tile", [] { auto k = tl::kernel("b7", [](F32 x) { auto i = tl::arange(0, 8); tl::amd::buffer_store(x + i, i, tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "the base must be a scalar pointer", Trace});
  c.push_back({"buffer_store offsets that are floats", [] { auto k = tl::kernel("b8", [](F32 x) { auto i = tl::arange(0, 8); tl::amd::buffer_store(x, i.to<tl::f32>(), tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "the offsets must be an i32 tile", Trace});
  // --- cache modifiers, eviction policies, volatile (tl::load / tl::store's last argument) ---
  c.push_back({"store cache modifier on a load", [] { auto k = tl::kernel("cm1", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::load(x + tl::arange(0, 8), tl::cache_modifier::wt)); }); go(k); }, __LINE__, "tl::load: cache modifier .wt is for stores", Trace});
  c.push_back({"load cache modifier on a store", [] { auto k = tl::kernel("cm2", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::zeros<tl::f32>({8}), tl::cache_modifier::cv); }); go(k); }, __LINE__, "tl::store: cache modifier .cv is for loads", Trace});
  c.push_back({"two cache modifiers", [] { auto k = tl::kernel("cm3", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::load(x + tl::arange(0, 8), tl::cache_modifier::cg | tl::cache_modifier::cs)); }); go(k); }, __LINE__, "two cache modifiers or two eviction policies", Trace});
  c.push_back({"two eviction policies", [] { auto k = tl::kernel("cm4", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::zeros<tl::f32>({8}), tl::evict::first | tl::evict::last); }); go(k); }, __LINE__, "two cache modifiers or two eviction policies", Trace});
  c.push_back({"volatile with a cache modifier", [] { auto k = tl::kernel("cm5", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::load(x + tl::arange(0, 8), tl::volatile_ | tl::cache_modifier::cg)); }); go(k); }, __LINE__, "a volatile access takes no cache modifier or eviction policy", Trace});
  c.push_back({"buffer load with a store modifier", [] { auto k = tl::kernel("cm6", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::amd::buffer_load(x, tl::arange(0, 8), tl::cache_modifier::wb)); }); go(k); }, __LINE__, "cache modifier .wb is for stores", Trace});
  // --- tl::inline_asm_elementwise ---
  c.push_back({"inline asm on the CPU without a fallback", [] { auto k = tl::kernel("ia1", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,r", {v}, true, 1)); }); auto d = XI(); (void)k.compile("cpu", {}, d.data()); }, __LINE__, "the CPU has no assembly to run; pass a fallback lambda", Trace});
  c.push_back({"inline asm constraints of the wrong count", [] { auto k = tl::kernel("ia2", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r", {v}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "the constraints \"=r\" name 1 operands; this call has 2", Trace});
  c.push_back({"inline asm packed operands counted unpacked", [] { auto k = tl::kernel("ia3", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)).to<tl::f16>(); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::f16>("mov.b32 $0, $1;", "=r,=r,r,r", {v}, true, 2).to<tl::i32>()); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "name 4 operands; this call has 2: 1 outputs", Trace});
  c.push_back({"inline asm input before its outputs", [] { auto k = tl::kernel("ia4", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "r,=r", {v}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "should be an output", Trace});
  c.push_back({"inline asm pack not a power of two", [] { auto k = tl::kernel("ia5", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,r,r,r", {v}, true, 3)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "pack must be 1, 2, 4, 8 or 16, got 3", Trace});
  c.push_back({"inline asm pack past the elements", [] { auto k = tl::kernel("ia6", [](I32 x) { auto v = tl::load(x); tl::store(x, tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,=r,r,r", {v}, true, 2)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "pack=2 does not divide the 1 elements", Trace});
  c.push_back({"inline asm of an i1 argument", [] { auto k = tl::kernel("ia7", [](I32 x) { auto m = tl::arange(0, 8) < 4; tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("selp.b32 $0, 1, 0, $1;", "=r,b", {m}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "an i1 argument has no register form", Trace});
  c.push_back({"inline asm without arguments", [] { auto k = tl::kernel("ia8", [](I32 x) { tl::store(x, tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, 7;", "=r", {}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "give at least one argument tile", Trace});
  c.push_back({"inline asm arguments that do not broadcast", [] { auto k = tl::kernel("ia9", [](I32 x) { auto a = tl::arange(0, 8); auto b = tl::arange(0, 4); tl::store(x + a, tl::inline_asm_elementwise<tl::i32>("add.s32 $0, $1, $2;", "=r,r,r", {a, b}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "argument shapes [8] and [4] do not broadcast", Trace});
  c.push_back({"inline asm constraints LLVM cannot parse", [] { auto k = tl::kernel("ia10", [](I32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,1", {v}, true, 1)); }); auto d = XI(); (void)k.compile("sm_90", {}, d.data()); }, __LINE__, "LLVM refuses the constraints", Compile});
  // --- atomics ---
  c.push_back({"atomic and on floats", [] { auto k = tl::kernel("m37", [](F32 x) { tl::atomic_and(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "atomic operation not supported on f32", Trace});
  c.push_back({"implicit conversion of a pointer", [] { auto k = tl::kernel("m38", [](F32 x) { tl::i64 v(tl::detail::cast(x.get(), tl::DType::i64, false, std::source_location::current())); tl::store(x, v.to<tl::f32>()); }); go(k); }, __LINE__, "a ptr<f32> is not converted to i64 implicitly", Trace});
  c.push_back({"atomic value of another shape", [] { auto k = tl::kernel("m39", [](F32 x) { tl::atomic_add(x + tl::arange(0, 8), tl::zeros<tl::f32>({16}), tl::sem::relaxed); }); go(k); }, __LINE__, "does not match pointer shape", Trace});
  c.push_back({"atomic_cas on bf16", [] { auto k = tl::kernel("m40", [](tl::ptr<tl::bf16> x) { tl::atomic_cas(x, tl::bf16(0.0f), tl::bf16(1.0f)); }); auto B = tltest::test_device().alloc<tl::bf16>(8); k[tl::grid(1)](B); }, __LINE__, "atomic_cas on bf16", Trace});
  // --- pointers as values (arrays of pointers, int-to-pointer); a pointer tile of another pointee stored into an array of pointers does not compile (tests/compile_fail) ---
  c.push_back({"int-to-pointer from i32", [] { auto k = tl::kernel("p1", [](F32 x) { auto p = tl::arange(0, 8).to<tl::ptr<tl::f32>>(); tl::store(p, tl::load(x + tl::arange(0, 8))); }); go(k); }, __LINE__, "conversion of i32 to ptr<f32>: a pointer is made only from a 64-bit address (i64 or u64); widen with .to<tl::i64>() first", Trace});
  c.push_back({"int-to-pointer from f32", [] { auto k = tl::kernel("p2", [](F32 x) { auto p = tl::load(x + tl::arange(0, 8)).to<tl::ptr<tl::f32>>(); tl::store(p, tl::zeros<tl::f32>({8})); }); go(k); }, __LINE__, "conversion of f32 to ptr<f32>: a pointer is made only from a 64-bit address", Trace});
  c.push_back({"pointer-to-int to i32", [] { auto k = tl::kernel("p3", [](I32 x) { auto i = tl::arange(0, 8); tl::store(x + i, (x + i).to<tl::i32>()); }); go_i(k); }, __LINE__, "conversion of ptr<i32> to i32: a pointer gives its address only as i64 or u64", Trace});
  c.push_back({"pointer where a number is expected", [] { auto k = tl::kernel("p4", [](I32 x) { auto i = tl::arange(0, 8); tl::atomic_add(x + i, x + i); }); go_i(k); }, __LINE__, "a tile<8xptr<i32>> is not converted to i32 implicitly", Trace});
  c.push_back({"number as the other of a load of pointers", [] { auto k = tl::kernel("p5", [](tl::ptr<tl::ptr<tl::f32>> pp) { auto i = tl::arange(0, 8); tl::ptr<tl::f32> p = tl::load(pp + i, i < 4, 0); tl::store(p, tl::zeros<tl::f32>({8})); }); auto b = tltest::test_device().alloc<tl::ptr<tl::f32>>(8); k[tl::grid(1)](b); }, __LINE__, "a pointer cannot be made from a number", Trace});
  c.push_back({"atomic on an array of pointers", [] { auto k = tl::kernel("p6", [](tl::ptr<tl::ptr<tl::f32>> pp, F32 x) { auto i = tl::arange(0, 8); tl::atomic_xchg(pp + i, x + i); }); auto b = tltest::test_device().alloc<tl::ptr<tl::f32>>(8); k[tl::grid(1)](b, X()); }, __LINE__, "atomics on pointers to pointers are not supported", Trace});
  c.push_back({"buffer_load of pointers", [] { auto k = tl::kernel("p7", [](tl::ptr<tl::ptr<tl::f32>> pp) { auto i = tl::arange(0, 8); tl::store(tl::amd::buffer_load(pp, i), tl::zeros<tl::f32>({8})); }); auto b = tltest::test_device().alloc<tl::ptr<tl::f32>>(8); k[tl::grid(1)](b); }, __LINE__, "ptr<ptr<f32>> points to pointers, which buffer accesses do not move", Trace});
  c.push_back({"stored pointers of another pointee", [] { auto k = tl::kernel("p8", [](tl::ptr<tl::ptr<tl::f32>> pp, I32 x) { tl::detail::store((pp + tl::arange(0, 8)).get(), (x + tl::arange(0, 8)).get(), nullptr, std::source_location::current()); }); auto b = tltest::test_device().alloc<tl::ptr<tl::f32>>(8); k[tl::grid(1)](b, XI()); }, __LINE__, "tl::store: value of type ptr<i32> stored through a pointer to ptr<f32>", Trace});
  // --- control flow and tile cells ---
  c.push_back({"loop-carried tile changes shape", [] { auto k = tl::kernel("m41", [](F32 x) { auto a = tl::zeros<tl::f32>({8}); for (auto i : tl::range(0, 4)) { a = tl::zeros<tl::f32>({16}) + i.to<tl::f32>(); } tl::store(x, tl::sum(a, 0)); }); go(k); }, __LINE__, "loop-carried tile changes", Trace});
  c.push_back({"branch results of different shapes", [] { auto k = tl::kernel("m42", [](F32 x) { auto a = tl::zeros<tl::f32>({8}); tl::if_(tl::program_id(0) == 0, [&] { a = tl::zeros<tl::f32>({16}); }); tl::store(x, tl::sum(a, 0)); }); go(k); }, __LINE__, "after one branch", Trace});
  c.push_back({"if on a tile condition", [] { auto k = tl::kernel("m43", [](F32 x) { tl::i1 c = tl::arange(0, 8) < 4; tl::if_(c, [&] {}); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "must be a scalar i1", Trace});
  c.push_back({"range over a float bound", [] { auto k = tl::kernel("m44", [](F32 x) { tl::i32 e(tl::detail::cast(tl::f32(4.0f).get(), tl::DType::f32, false, std::source_location::current())); for (auto i : tl::range(0, e)) { (void)i; } tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "must be scalar i32", Trace});
  c.push_back({"range with step zero", [] { auto k = tl::kernel("m45", [](F32 x) { for (auto i : tl::range(0, 8, 0)) { (void)i; } tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "step must not be zero", Trace});
  c.push_back({"while on a tile condition", [] { auto k = tl::kernel("m45w", [](F32 x) { auto v = tl::arange(0, 8); tl::while_([&] { return v > 0; }, [&] { v -= 1; }); tl::store(x + tl::arange(0, 8), v.to<tl::f32>()); }); go(k); }, __LINE__, "tl::while_: the condition must be a scalar i1", Trace});
  c.push_back({"while-carried tile changes shape", [] { auto k = tl::kernel("m45x", [](F32 x) { auto a = tl::zeros<tl::f32>({8}); tl::i32 i = 0; tl::while_([&] { return i < 2; }, [&] { a = tl::zeros<tl::f32>({16}); i += 1; }); tl::store(x, tl::sum(a, 0)); }); go(k); }, __LINE__, "tl::while_: a loop-carried tile changes", Trace});
  c.push_back({"random numbers with zero rounds", [] { auto k = tl::kernel("m45r", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::rand(1, tl::arange(0, 8), 0)); }); go(k); }, __LINE__, "tl::randint4x: n_rounds must be positive, got 0", Trace});
  c.push_back({"random numbers with a tile seed", [] { auto k = tl::kernel("m45s", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::rand(tl::arange(0, 8), tl::arange(0, 8))); }); go(k); }, __LINE__, "the seed must be a scalar", Trace});
  c.push_back({"tanh of an integer tile", [] { auto k = tl::kernel("m45t", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::tanh(tl::arange(0, 8)).to<tl::f32>()); }); go(k); }, __LINE__, "tl::tanh needs a floating-point tile (f32, f16 or bf16), got i32", Trace});
  c.push_back({"pow of an f32 base to an f64 exponent", [] { auto k = tl::kernel("m45u", [](F32 x) { auto v = tl::load(x + tl::arange(0, 8)); tl::store(x + tl::arange(0, 8), tl::pow(v, v.to<tl::f64>())); }); go(k); }, __LINE__, "tl::pow: the base is f32 and the exponent f64", Trace});
  c.push_back({"pow of an integer base", [] { auto k = tl::kernel("m45v", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::pow(tl::arange(0, 8), 2.0f).to<tl::f32>()); }); go(k); }, __LINE__, "tl::pow needs a floating-point base", Trace});
  c.push_back({"pow with an i64 exponent", [] { auto k = tl::kernel("m45y", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::pow(tl::load(x + tl::arange(0, 8)), tl::arange(0, 8).to<tl::i64>())); }); go(k); }, __LINE__, "an integer exponent is i32 or narrower", Trace});
  c.push_back({"clamp of an integer tile", [] { auto k = tl::kernel("m45q", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::clamp(tl::arange(0, 8), 0, 4).to<tl::f32>()); }); go(k); }, __LINE__, "tl::clamp needs a floating-point tile", Trace});
  c.push_back({"fast_expf of an integer tile", [] { auto k = tl::kernel("m45f1", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::fast_expf(tl::arange(0, 8)).to<tl::f32>()); }); go(k); }, __LINE__, "tl::fast_expf takes f32, f16 or bf16 (the f32 approximation), got tile<8xi32>", Trace});
  c.push_back({"fast_dividef of f64 tiles", [] { auto k = tl::kernel("m45f2", [](F32 x) { auto v = tl::load(x + tl::arange(0, 8)).to<tl::f64>(); tl::store(x + tl::arange(0, 8), tl::fast_dividef(v, v).to<tl::f32>()); }); go(k); }, __LINE__, "tl::fast_dividef takes f32, f16 or bf16", Trace});
  c.push_back({"sin of an integer tile", [] { auto k = tl::kernel("m45f3", [](F32 x) { tl::store(x + tl::arange(0, 8), tl::sin(tl::arange(0, 8)).to<tl::f32>()); }); go(k); }, __LINE__, "tl::sin needs a floating-point tile, got i32", Trace});
  c.push_back({"program_id axis 3", [] { auto k = tl::kernel("m46", [](F32 x) { tl::store(x, tl::program_id(3).to<tl::f32>()); }); go(k); }, __LINE__, "axis must be 0, 1 or 2", Trace});
  c.push_back({"device_assert on floats", [] { auto k = tl::kernel("m47", [](F32 x) { tl::detail::device_assert(tl::f32(1.0f).get(), "x", std::source_location::current()); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "condition must be i1", Trace});
  // --- shared memory (tl::shared) ---
  c.push_back({"shared tile over the LDS budget", [] { auto k = tl::kernel("s1", [](F32 x) { auto b = tl::shared<tl::f32>({5, 64, 64}); b[0].store(tl::zeros<tl::f32>({64, 64})); tl::store(x + tl::arange(0, 64), tl::sum(b[0].load(), 0)); }); auto d = X(); (void)k.compile("gfx942", {}, d.data()); }, __LINE__, "81920 bytes of shared memory asked", Trace});
  c.push_back({"shared stage out of range", [] { auto k = tl::kernel("s2", [](F32 x) { auto b = tl::shared<tl::f32>({2, 64}); tl::store(x + tl::arange(0, 64), b[2].load()); }); go(k); }, __LINE__, "stage 2 is out of range for a buffer of 2 stages", Trace});
  c.push_back({"shared store of another shape", [] { auto k = tl::kernel("s3", [](F32 x) { auto b = tl::shared<tl::f32>({1, 64}); b[0].store(tl::zeros<tl::f32>({32})); tl::store(x + tl::arange(0, 64), b[0].load()); }); go(k); }, __LINE__, "a tile of shape [32] stored into a buffer of [64] tiles", Trace});
  c.push_back({"shared store of another dtype", [] { auto k = tl::kernel("s4", [](F32 x) { auto b = tl::shared<tl::f32>({1, 64}); tl::detail::shared_store(b.get(), tl::i32(0).get(), tl::arange(0, 64).get(), std::source_location::current()); tl::store(x + tl::arange(0, 64), b[0].load()); }); go(k); }, __LINE__, "stored into a buffer of f32", Trace});
  c.push_back({"shared tile dim not a power of two", [] { auto k = tl::kernel("s5", [](F32 x) { auto b = tl::shared<tl::f32>({2, 48}); (void)b; tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "power of two", Trace});
  c.push_back({"shared tile with zero stages", [] { auto k = tl::kernel("s6", [](F32 x) { auto b = tl::shared<tl::f32>({0, 64}); (void)b; tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "stage count must be positive", Trace});
  // --- tl::amd's copies into shared memory (global_load_to_shared, async_wait) ---
  c.push_back({"8-byte lanes on a 4-byte direct-to-LDS target", [] { auto k = tl::kernel("a1", [](tl::ptr<tl::f64> x) { auto o = tl::expand_dims(tl::arange(0, 32), 1) * 32 + tl::expand_dims(tl::arange(0, 32), 0); auto b = tl::shared<tl::f64>({1, 32, 32}); tl::amd::global_load_to_shared(b[0], x + o); tl::amd::async_wait(0); tl::store(x + o, tl::amd::load_shared_relaxed(b[0])); }); std::vector<double> d(1024); (void)k.compile("gfx942", {}, d.data()); }, __LINE__, "gfx942 copies 1, 2, 4 bytes a lane", Compile});
  c.push_back({"copy destination the ISA cannot write (strided rows)", [] { auto k = tl::kernel("a2", [](tl::ptr<tl::bf16> x) { auto o = tl::expand_dims(tl::arange(0, 64), 1) * 128 + tl::expand_dims(tl::arange(0, 64), 0) * 2; auto b = tl::shared<tl::bf16>({1, 64, 64}); tl::amd::global_load_to_shared(b[0], x + o); tl::amd::async_wait(0); tl::store(x + o, tl::amd::load_shared_relaxed(b[0])); }); std::vector<tl::bfloat16> d(8192); (void)k.compile("gfx950", {}, d.data()); }, __LINE__, "2 contiguous aligned bytes", Compile});
  c.push_back({"copy of a tile smaller than a wave's chunks", [] { auto k = tl::kernel("a3", [](F32 x) { auto o = tl::arange(0, 32); auto b = tl::shared<tl::f32>({1, 32}); tl::amd::global_load_to_shared(b[0], x + o); tl::amd::async_wait(0); tl::store(x + o, tl::amd::load_shared_relaxed(b[0])); }); auto d = X(); (void)k.compile("gfx942", {}, d.data()); }, __LINE__, "needs the tile to hold 64 chunks", Compile});
  c.push_back({"negative async_wait", [] { auto k = tl::kernel("a4", [](F32 x) { tl::amd::async_wait(-1); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "must be >= 0, got -1", Trace});
  c.push_back({"copy through pointers of another dtype", [] { auto k = tl::kernel("a5", [](F32 x) { auto b = tl::shared<tl::i32>({1, 64}); tl::detail::global_load_to_shared(b.get(), tl::i32(0).get(), (x + tl::arange(0, 64)).get(), nullptr, nullptr, std::source_location::current()); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "pointers to f32 copied into a buffer of i32", Trace});
  // --- tl::amd::buffer_load_to_shared ---
  c.push_back({"buffer copy on a target without buffer loads into LDS", [] { auto k = tl::kernel("b1", [](F32 x) { auto o = tl::arange(0, 256); auto b = tl::shared<tl::f32>({1, 256}); tl::amd::buffer_load_to_shared(b[0], x, o); tl::amd::async_wait(0); tl::store(x + o, tl::amd::load_shared_relaxed(b[0])); }); auto d = X(); (void)k.compile("gfx942", {}, d.data()); }, __LINE__, "gfx942 has no buffer loads into LDS", Compile});
  c.push_back({"buffer copy from a pointer tile", [] { auto k = tl::kernel("b2", [](F32 x) { auto o = tl::arange(0, 64); auto b = tl::shared<tl::f32>({1, 64}); tl::amd::buffer_load_to_shared(b[0], x + o, o); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "the base must be a scalar pointer", Trace});
  c.push_back({"buffer copy with 64-bit offsets", [] { auto k = tl::kernel("b3", [](F32 x) { auto o = tl::arange(0, 64).to<tl::i64>(); auto b = tl::shared<tl::f32>({1, 64}); tl::amd::buffer_load_to_shared(b[0], x, o); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "the offsets must be an i32 tile", Trace});
  c.push_back({"buffer copy of another shape than the stage", [] { auto k = tl::kernel("b4", [](F32 x) { auto o = tl::arange(0, 32); auto b = tl::shared<tl::f32>({1, 64}); tl::amd::buffer_load_to_shared(b[0], x, o); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "offsets of shape [32] copied into a buffer of [64] tiles", Trace});
  c.push_back({"buffer copy with a mask of another shape", [] { auto k = tl::kernel("b5", [](F32 x) { auto o = tl::arange(0, 64); auto b = tl::shared<tl::f32>({1, 64}); tl::amd::buffer_load_to_shared(b[0], x, o, tl::arange(0, 32) < 4); tl::store(x, tl::f32(1.0f)); }); go(k); }, __LINE__, "mask shape [32] does not match offsets shape [64]", Trace});
  // --- software pipelining ---
  c.push_back({"tl::range num_stages zero", [] { auto k = tl::kernel("p1", [](F32 x) { for (auto i : tl::range(0, 4, 1, tl::num_stages(0))) tl::store(x + i, tl::f32(1.0f)); }); go(k); }, __LINE__, "num_stages must be 1 to 8, got 0", Trace});
  c.push_back({"tl::range num_stages above 8", [] { auto k = tl::kernel("p2", [](F32 x) { for (auto i : tl::range(0, 4, 1, tl::num_stages(9))) tl::store(x + i, tl::f32(1.0f)); }); go(k); }, __LINE__, "num_stages must be 1 to 8, got 9", Trace});
  // --- tl::dot ---
  c.push_back({"dot with disagreeing K", [] { auto k = tl::kernel("d1", [](F32 x) { auto d = tl::dot(tl::zeros<tl::bf16>({16, 32}), tl::zeros<tl::bf16>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "disagree on K (a is tile<16x32xbf16>, b is tile<16x16xbf16>)", Trace});
  c.push_back({"dot of bf16 with f16", [] { auto k = tl::kernel("d2", [](F32 x) { auto d = tl::dot(tl::zeros<tl::bf16>({16, 16}), tl::zeros<tl::f16>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "unsupported operand types (a is tile<16x16xbf16>, b is tile<16x16xf16>)", Trace});
  c.push_back({"dot of i32 operands", [] { auto k = tl::kernel("d3", [](F32 x) { auto d = tl::dot(tl::zeros<tl::i32>({16, 16}), tl::zeros<tl::i32>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "unsupported operand types (a is tile<16x16xi32>", Trace});
  c.push_back({"dot of OCP with FNUZ FP8", [] { auto k = tl::kernel("d4", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f8e4m3fn>({16, 32}), tl::zeros<tl::f8e5m2fnuz>({32, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "FP8 of one family", Trace});
  c.push_back({"dot with M below 16", [] { auto k = tl::kernel("d5", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f16>({8, 16}), tl::zeros<tl::f16>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "M and N must be at least 16 and K at least 16", Trace});
  c.push_back({"FP8 dot with K below 32", [] { auto k = tl::kernel("d6", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f8e4m3fn>({16, 16}), tl::zeros<tl::f8e4m3fn>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "K at least 32 for f8e4m3fn", Trace});
  c.push_back({"i8 dot with K below 32", [] { auto k = tl::kernel("d6b", [](F32 x) { auto d = tl::dot(tl::zeros<tl::i8>({16, 16}), tl::zeros<tl::i8>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "K at least 32 for i8", Trace});
  c.push_back({"dot of rank-1 tiles", [] { auto k = tl::kernel("d7", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f32>({16}), tl::zeros<tl::f32>({16})); tl::store(x, tl::sum(d, 0)); }); go(k); }, __LINE__, "must be 2-D tiles", Trace});
  c.push_back({"dot with an f16 accumulator", [] { auto k = tl::kernel("d8", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f16>({16, 16}), tl::zeros<tl::f16>({16, 16}), tl::zeros<tl::f16>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "the accumulator must be tile<16x16xf32> for f16 operands, got tile<16x16xf16>", Trace});
  c.push_back({"dot tf32x3 of bf16 operands", [] { auto k = tl::kernel("d9", [](F32 x) { auto d = tl::dot(tl::zeros<tl::bf16>({16, 16}), tl::zeros<tl::bf16>({16, 16}), tl::input_precision::tf32x3); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "input_precision tf32x3 splits f32 operands; a is tile<16x16xbf16>", Trace});
  c.push_back({"dot tf32x3 of i8 operands", [] { auto k = tl::kernel("d10", [](F32 x) { auto d = tl::dot(tl::zeros<tl::i8>({16, 32}), tl::zeros<tl::i8>({32, 16}), tl::input_precision::tf32x3); tl::store(x, tl::sum(tl::sum(d, 0), 0).to<tl::f32>()); }); go(k); }, __LINE__, "input_precision tf32x3 splits f32 operands", Trace});
  c.push_back({"dot ieee with mma_version 3", [] { auto k = tl::kernel("d11", [](F32 x) { auto r = tl::arange(0, 64); auto o = tl::expand_dims(r, 1) * 64 + tl::expand_dims(r, 0); auto a = tl::load(x + o); tl::store(x + o, tl::dot(a, a, tl::input_precision::ieee)); }); auto d = X(); (void)k.compile("sm_90", {.mma_version = 3}, d.data()); }, __LINE__, "input_precision ieee: sm_90 has no warpgroup (wgmma) instruction that multiplies f32 without rounding to TF32", Compile});
  c.push_back({"dot with an accumulator of another shape", [] { auto k = tl::kernel("d9", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f16>({16, 16}), tl::zeros<tl::f16>({16, 32}), tl::zeros<tl::f32>({16, 16})); tl::store(x, tl::sum(tl::sum(d, 0), 0)); }); go(k); }, __LINE__, "the accumulator must be tile<16x32xf32>", Trace});
  c.push_back({"FP8 dot on a chip without FP8 matrix instructions", [] { auto k = tl::kernel("d10", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f8e4m3fnuz>({16, 32}), tl::zeros<tl::f8e4m3fnuz>({32, 16})); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); auto b = X(); (void)k.compile("gfx90a", {}, b.data()); }, __LINE__, "gfx90a has no FP8 matrix instructions", Trace});
  // --- OCP MX: tl::f4e2m1, tl::e8m0, tl::dot_scaled ---
  c.push_back({"arithmetic on f4e2m1", [] { auto k = tl::kernel("mx1", [](F32 x) { auto v = tl::zeros<tl::f4e2m1>({16, 8}); auto w = v * v; tl::store(x + tl::arange(0, 16), tl::sum(w.to<tl::f32>(), 1)); }); go(k); }, __LINE__, "f4e2m1 is a storage type; convert with .to<tl::f32>() first", Trace});
  c.push_back({"f4e2m1 converted to an integer", [] { auto k = tl::kernel("mx2", [](F32 x) { auto v = tl::zeros<tl::f4e2m1>({16, 8}).to<tl::i32>(); tl::store(x + tl::arange(0, 16), tl::sum(v, 1).to<tl::f32>()); }); go(k); }, __LINE__, "f4e2m1 converts only to and from f32, bf16 and f16", Trace});
  c.push_back({"f4e2m1 from an odd last dim", [] { auto k = tl::kernel("mx3", [](F32 x) { auto v = tl::zeros<tl::f32>({16, 1}).to<tl::f4e2m1>(); tl::store(x + tl::arange(0, 16), tl::sum(v.to<tl::f32>(), 1)); }); go(k); }, __LINE__, "two values make a byte, the last dim must be even", Trace});
  c.push_back({"e8m0 compared", [] { auto k = tl::kernel("mx4", [](F32 x) { auto s = tl::full<tl::ty::e8m0>({16}, 127); tl::store(x + tl::arange(0, 16), tl::zeros<tl::f32>({16}), s < s); }); go(k); }, __LINE__, "a comparison on e8m0: e8m0 is a storage type", Trace});
  c.push_back({"dot_scaled with K not a multiple of 32", [] { auto k = tl::kernel("mx5", [](F32 x) { auto d = tl::dot_scaled(tl::zeros<tl::f4e2m1>({16, 8}), nullptr, "e2m1", tl::zeros<tl::f8e4m3fn>({16, 16}), nullptr, "e4m3"); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "K = 16 is not a multiple of 32", Trace});
  c.push_back({"dot_scaled with an unknown format", [] { auto k = tl::kernel("mx6", [](F32 x) { auto d = tl::dot_scaled(tl::zeros<tl::f8e4m3fn>({16, 32}), nullptr, "fp8", tl::zeros<tl::f8e4m3fn>({32, 16}), nullptr, "e4m3"); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "unknown format \"fp8\" for a", Trace});
  c.push_back({"dot_scaled with a scale of the wrong shape", [] { auto k = tl::kernel("mx7", [](F32 x) { auto d = tl::dot_scaled(tl::zeros<tl::f4e2m1>({16, 32}), tl::full<tl::ty::e8m0>({16, 1}, 127), "e2m1", tl::zeros<tl::f4e2m1>({32, 16}), nullptr, "e2m1"); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "a_scale must be e8m0 (or u8) [16, 2]", Trace});
  c.push_back({"dot_scaled of an operand its format does not take", [] { auto k = tl::kernel("mx8", [](F32 x) { auto d = tl::dot_scaled(tl::zeros<tl::f8e5m2>({16, 32}), nullptr, "e4m3", tl::zeros<tl::bf16>({32, 16}), nullptr, "bf16"); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "format \"e4m3\" takes f8e4m3fn (or u8 codes) tiles, a is f8e5m2", Trace});
  c.push_back({"dot_scaled with operands disagreeing on K", [] { auto k = tl::kernel("mx9", [](F32 x) { auto d = tl::dot_scaled(tl::zeros<tl::f4e2m1>({16, 32}), nullptr, "e2m1", tl::zeros<tl::bf16>({32, 16}), nullptr, "bf16"); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "a holds 64 elements along K and b 32", Trace});
  c.push_back({"tl::dot of f4e2m1", [] { auto k = tl::kernel("mx10", [](F32 x) { auto d = tl::dot(tl::zeros<tl::f4e2m1>({16, 32}), tl::zeros<tl::f4e2m1>({32, 16})); tl::store(x + tl::arange(0, 16), tl::sum(d, 0)); }); go(k); }, __LINE__, "multiply them with tl::dot_scaled", Trace});
  // --- launches ---
  c.push_back({"zero grid", [] { auto k = tl::kernel("l1", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(0)](b); }, __LINE__, "grid must be positive", Launch});
  c.push_back({"negative grid", [] { auto k = tl::kernel("l2", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(4, -1)](b); }, __LINE__, "grid must be positive", Launch});
  c.push_back({"oversized grid", [] { auto k = tl::kernel("l3", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1, 70000)](b); }, __LINE__, "above the limit", Launch});
  c.push_back({"null pointer", [] { auto k = tl::kernel("l4", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); k[tl::grid(1)](static_cast<float*>(nullptr)); }, __LINE__, "pointer argument 0 is null", Launch});
  c.push_back({"nullptr literal", [] { auto k = tl::kernel("l5", [](F32 x, I32 y) { tl::store(x, tl::f32(1.0f)); tl::store(y, tl::i32(1)); }); auto b = X(); k[tl::grid(1)](b, nullptr); }, __LINE__, "pointer argument 1 is null", Launch});
  c.push_back({"num_warps not a power of two", [] { auto k = tl::kernel("l6", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.num_warps = 3})(b); }, __LINE__, "num_warps must be a power of two", Launch});
  c.push_back({"num_warps over 1024 threads on wave64", [] { auto k = tl::kernel("l6b", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); (void)k.compile("gfx942", {.num_warps = 32}, b.data()); }, __LINE__, "from 1 to 16 (64 lanes each", Launch});
  c.push_back({"num_stages zero", [] { auto k = tl::kernel("l7", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.num_stages = 0})(b); }, __LINE__, "num_stages must be", Launch});
  c.push_back({"waves_per_eu negative", [] { auto k = tl::kernel("l8", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.waves_per_eu = -1})(b); }, __LINE__, "waves_per_eu must be", Launch});
  c.push_back({"matrix_instr_nonkdim not 0, 16 or 32", [] { auto k = tl::kernel("l9", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.matrix_instr_nonkdim = 8})(b); }, __LINE__, "matrix_instr_nonkdim must be 0 (tl chooses), 16 or 32, got 8", Launch});
  c.push_back({"kpack 4", [] { auto k = tl::kernel("l10", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.kpack = 4})(b); }, __LINE__, "kpack must be 1 or 2, got 4", Launch});
  c.push_back({"mma_version 1", [] { auto k = tl::kernel("l11", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto b = X(); k[tl::grid(1)].with({.mma_version = 1})(b); }, __LINE__, "mma_version must be 0 (tl chooses), 2 (mma.sync) or 3 (wgmma), got 1", Launch});
  c.push_back({"mma_version 3 on a dot wgmma cannot take", [] { auto k = tl::kernel("w1", [](F32 x) { auto r = tl::arange(0, 32); auto o = tl::expand_dims(r, 1) * 32 + tl::expand_dims(r, 0); auto a = tl::load(x + o).to<tl::bf16>(); tl::store(x + o, tl::dot(a, a)); }); auto d = X(); (void)k.compile("sm_90", {.mma_version = 3}, d.data()); }, __LINE__, "mma_version=3 (wgmma) cannot take this dot", Compile});
  c.push_back({"mma_version 3 where there is no wgmma", [] { auto k = tl::kernel("w2", [](F32 x) { auto r = tl::arange(0, 64); auto o = tl::expand_dims(r, 1) * 64 + tl::expand_dims(r, 0); auto a = tl::load(x + o).to<tl::bf16>(); tl::store(x + o, tl::dot(a, a)); }); auto d = X(); (void)k.compile("sm_80", {.mma_version = 3}, d.data()); }, __LINE__, "sm_80 has no wgmma (sm_90a only)", Compile});
  // --- the CPU's limits: a program's tiles and shared buffers live on its stack (codegen/cpu/limits.hpp) ---
  c.push_back({"CPU frame over the program's stack", [] { auto k = tl::kernel("c1", [](tl::ptr<tl::f64> x) { auto c = tl::arange(0, 1 << 20); std::vector<tl::tile<tl::ty::f64>> s{tl::load(x + c)}; for (int i = 0; i < 9; ++i) s.push_back(tl::cumsum(s.back(), 0)); auto t = s[1]; for (int i = 2; i <= 9; ++i) t = t + s[i]; tl::store(x + c, t); }); std::vector<double> d(1 << 20); (void)k.compile("cpu", {}, d.data()); }, __LINE__, "(10 tiles)), more than the 66060288 (63 MiB) a program may use on the CPU", Compile});
  c.push_back({"CPU shared buffer over the program's stack", [] { auto k = tl::kernel("c2", [](F32 x) { auto b = tl::shared<tl::f32>({32, 1024, 1024}); b[0].store(tl::zeros<tl::f32>({1024, 1024})); tl::store(x + tl::arange(0, 1024), tl::sum(b[0].load(), 0)); }); auto d = X(); (void)k.compile("cpu", {}, d.data()); }, __LINE__, "more than the 66060288 a program may use on the CPU (shared buffers live on the program's stack)", Trace});
  // --- GPU shared memory the lowering needs (layout-conversion scratch) ---
  c.push_back({"layout conversion over the LDS budget", [] { auto k = tl::kernel("g1", [](F32 x) { auto r = tl::arange(0, 256); auto o = tl::expand_dims(r, 1) * 256 + tl::expand_dims(r, 0); auto v = tl::load(x + o); tl::store(x + o, tl::trans(v, {1, 0}) + v); }); auto d = X(); (void)k.compile("gfx942", {}, d.data()); }, __LINE__, "bytes of shared memory needed (0 for the shared buffers live where layout conversions and reductions exchange data", Compile});
  // --- control flow the tracer cannot follow ---
  c.push_back({"break out of a tl::range body", [] { auto k = tl::kernel("f1", [](F32 x) { for (auto i : tl::range(0, 4)) { tl::store(x + i, tl::f32(1.0f)); break; } }); go(k); }, __LINE__, "left by break or return", Trace});
  c.push_back({"return from a tl::range body", [] { auto k = tl::kernel("f2", [](F32 x) { for (auto i : tl::range(0, 4)) { tl::store(x + i, tl::f32(1.0f)); return; } }); go(k); }, __LINE__, "left by break or return", Trace});
  c.push_back({"tile kept in a static across traces", [] { auto k = tl::kernel("f3", [](F32 x, int s) { static auto kept = tl::zeros<tl::f32>({16}); tl::store(x + tl::arange(0, 16), kept * float(s)); }); auto b = X(); k[tl::grid(1)](b, 1); k[tl::grid(1)](b, 2); }, __LINE__, "this tile was made by an earlier trace", Trace});
  c.push_back({"kernel launching itself from its own trace", [] { std::function<void()> again; auto b = X(); auto k = tl::kernel("f4", [&](F32 x) { tl::store(x, tl::f32(1.0f)); again(); }); again = [&] { k[tl::grid(1)](b); }; k[tl::grid(1)](b); }, __LINE__, "launched from inside its own trace", Launch});
  // --- buffers and targets ---
  c.push_back({"launch with a freed buffer's pointer", [] { auto k = tl::kernel("u1", [](F32 x) { tl::store(x + tl::arange(0, 16), tl::zeros<tl::f32>({16})); }); float* p = nullptr; { auto b = tl::cpu_device().alloc<tl::f32>(16); p = b.data(); } k[tl::grid(1)].on(tl::cpu_device())(p); }, __LINE__, "pointer argument 0 points into a buffer that was freed", Launch});
  c.push_back({"alloc whose bytes overflow a size_t", [] { (void)tltest::test_device().alloc<tl::f32>(size_t(1) << 62); }, __LINE__, "more bytes than the address space holds", Device});
  c.push_back({"unknown NVIDIA target", [] { auto k = tl::kernel("u2", [](F32 x) { tl::store(x, tl::f32(1.0f)); }); auto d = X(); (void)k.compile("sm_1000", {}, d.data()); }, __LINE__, "unknown NVIDIA target 'sm_1000'", Compile});
  // --- autotuning ---
  c.push_back({"autotune with no configurations", [] { auto t = tl::autotune("t1", std::vector<TuneCfg>{}, {}, tune_launch); (void)t; }, __LINE__, "the configuration list is empty", Launch});
  c.push_back({"autotune key naming no argument", [] { auto t = tl::autotune("t2", std::vector<TuneCfg>{{64}}, {.args = {"x"}, .key = {"n"}}, tune_launch); (void)t; }, __LINE__, "the key names 'n', which is not one of its arguments (x)", Launch});
  c.push_back({"autotune key on a buffer", [] { auto t = tl::autotune("t3", std::vector<TuneCfg>{{64}}, {.args = {"x"}, .key = {"x"}}, tune_launch); auto b = X(); t(b); }, __LINE__, "the key names 'x', which is not a number", Launch});
  c.push_back({"autotune called with other arguments than named", [] { auto t = tl::autotune("t4", std::vector<TuneCfg>{{64}}, {.args = {"x", "n"}, .key = {"n"}}, tune_launch); auto b = X(); t(b); }, __LINE__, "called with 1 arguments, but its argument names list 2", Launch});
  c.push_back({"autotune with every configuration failing", [] { auto t = tl::autotune("t5", std::vector<TuneCfg>{{3}, {5}}, {.args = {"x"}}, tune_launch); auto b = X(); t(b); }, __LINE__, "no configuration can run (2 given, every one dropped)", Launch});
  return c;
}
// clang-format on

}  // namespace

// The budget is the target's: the kernel gfx942 refuses above (80 KiB of LDS) fits in
// gfx950's 160 KiB.
TEST(MisuseCatalogue, SharedBudgetIsTheTargetsOwn) {
  auto k = tl::kernel("s1_ok", [](F32 x) { auto b = tl::shared<tl::f32>({5, 64, 64}); b[0].store(tl::zeros<tl::f32>({64, 64})); tl::store(x + tl::arange(0, 64), tl::sum(b[0].load(), 0)); });
  auto d = X();
  EXPECT_NO_THROW((void)k.compile("gfx950", {}, d.data()));
}

// The register limit is per lane at the requested num_warps: the tile refused above with
// one wave (1024 a lane) is 256 a lane with four and compiles; on the CPU (no register
// file to fit) it runs.
TEST(MisuseCatalogue, RegisterLimitScalesWithNumWarps) {
  auto k = tl::kernel("t3_ok", [](F32 x) { tl::store(x + tl::arange(0, 65536), tl::zeros<tl::f32>({65536})); });
  auto d = X();
  EXPECT_NO_THROW((void)k.compile("gfx942", {.num_warps = 4}, d.data()));
  EXPECT_NO_THROW((void)k.compile("cpu", {.num_warps = 1}, d.data()));
}

TEST(MisuseCatalogue, EveryCaseIsATypedErrorNamingTheUsersLine) {
  auto cases = catalogue();
  EXPECT_GE(cases.size(), 40u);
  for (auto& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      c.run();
      ADD_FAILURE() << "no error for: " << c.name;
    } catch (const tl::trace_error& e) {
      EXPECT_EQ(c.kind, Trace) << e.what();
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(e.file().find("misuse_catalogue_test.cpp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << "message: " << e.what();
    } catch (const tl::launch_error& e) {
      EXPECT_EQ(c.kind, Launch) << e.what();
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(e.file().find("misuse_catalogue_test.cpp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << "message: " << e.what();
    } catch (const tl::compile_error& e) {
      // What only the target's lowering can know (its copy widths) is refused there,
      // still at the user's line.
      EXPECT_EQ(c.kind, Compile) << e.what();
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(e.file().find("misuse_catalogue_test.cpp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << "message: " << e.what();
    } catch (const tl::device_error& e) {
      // What the device refuses (an allocation), at the line that asked.
      EXPECT_EQ(c.kind, Device) << e.what();
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_NE(e.file().find("misuse_catalogue_test.cpp"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << "message: " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "untyped error for " << c.name << ": " << e.what();
    }
  }
}

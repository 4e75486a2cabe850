// THE list of expected gaps (gaps.hpp says how the tests consume it). Ordered: the
// tutorials 01-11, then test_core's operations. docs/conformance.md is rendered from it.
#include "conformance/gaps.hpp"

#include <gtest/gtest-spi.h>

#include <cstdio>
#include <stdexcept>

#include "tl/tl.hpp"

namespace conformance {
namespace probe {
// Each probe asks whether a call as a Triton user writes it would find a tl operation:
// the names are unqualified and the arguments tl tiles, so argument-dependent lookup
// looks in namespace tl when the template is used, and an operation tl does not declare
// makes the requires-expression false instead of an error. (A probe cannot see a launch
// option or a keyword argument: those gaps have none.)
using T = tl::f32;
using I = tl::i32;
using P = tl::ptr<tl::f32>;
template <class X> concept has_log10 = requires(X x) { log10(x); };
template <class X> concept has_softmax = requires(X x) { softmax(x, 0); };
template <class X> concept has_block_ptr = requires(X p, I n) { make_block_ptr(p, n, n, n, n, n); };
template <class X> concept has_zeros_like = requires(X x) { zeros_like(x); };
template <class X> concept has_ravel = requires(X x) { ravel(x); };
template <class X> concept has_swizzle2d = requires(X i) { swizzle2d(i, i, i, i, i); };
}  // namespace probe

namespace {
#define PROBE(concept_, X) [] { return bool(probe::concept_<X>); }
constexpr auto missing = gap_kind::missing;
constexpr auto partial = gap_kind::partial;
constexpr auto known_failure = gap_kind::known_failure;
}  // namespace

const std::vector<gap>& gaps() {
  static const std::vector<gap> table = {
      // ---- tutorials ----
      {"extern_libs", "07 extern functions (the run with `extern_libs={'libdevice': path}`)", missing,
       "no user-supplied device library: `extern_libs`, `tl.extern_elementwise` (tl's math is its own, "
       "tl/math.hpp)",
       "", nullptr},
      {"tensor descriptors", "06 fused attention, 09 persistent matmul (`matmul_kernel_tma*`), "
       "10 block-scaled matmul", partial,
       "descriptors made in the kernel (`tl::make_tensor_descriptor`, `desc.load/store`, `padding_option` "
       "zero or nan) and on the host (`tl::TensorDescriptor`, Triton's `TensorDescriptor` kernel argument) exist, "
       "lowered to buffer accesses on AMD and masked accesses elsewhere; TMA on Hopper (`cp.async.bulk.tensor`) "
       "for host descriptors' loads behind `launch_options::tma`, off by default, unpipelined and not yet run on a "
       "GPU; not yet: `tl._experimental_descriptor_load/store`",
       "09's `matmul_kernel_descriptor_persistent` and `matmul_kernel_tma_persistent` run as written (with and "
       "without EPILOGUE_SUBTILE); 06's kernel loads and stores through pointer tiles at the descriptor's offsets",
       nullptr},
      {"warp_specialize", "06 fused attention, 09 persistent matmul", partial,
       "no warp specialization: `tl.range(..., warp_specialize=True)`",
       "transcribed with warp_specialize=False (the tutorials' default off Blackwell); same results", nullptr},
      {"tl.range flatten", "09 persistent matmul (`matmul_kernel_persistent`)", partial,
       "no `tl.range(..., flatten=True)` (the outer tile loop and the K loop flattened into one pipelined loop)",
       "transcribed without flatten; same results", nullptr},
      {"tl.dot_scaled", "10 block-scaled matmul (`nvfp4`)", partial,
       "`tl.dot_scaled` takes the MX formats (\"e2m1\", \"e4m3\", \"e5m2\", \"bf16\": e8m0 scales over 32 "
       "elements); not nvfp4 (e2m1 with e4m3 scales over 16 elements, Blackwell's), the FP6 formats "
       "(\"e2m3\", \"e3m2\") or \"fp16\"",
       "the mxfp8, mxfp4 and mixed cases run with `tl::dot_scaled`; nvfp4 is skipped", nullptr},
      // ---- spellings the tutorials need (the tutorial runs, spelled otherwise) ----
      {"x[:, None]", "every tutorial (`offs_am[:, None]`, `rk[None, :]`)", partial,
       "no subscript syntax on tiles: `x[:, None]` / `x[None, :]` (C++ has no such slices)",
       "written `tl::expand_dims(x, 1)` / `tl::expand_dims(x, 0)`", nullptr},
      {"implicit cast on store", "05 layer norm (`tl.store(Y + cols, y)`, y f32 into f16)", partial,
       "`tl.store` does not cast the value to the pointee type as Triton's does (a `static_assert`)",
       "`.to<tl::f16>()` written before each such store", nullptr},
      {"tl.where of an integer condition", "04 low-memory dropout (`tl.where(x_keep, ...)`, x_keep int32)", partial,
       "`tl::where` takes an i1 condition only; Triton's takes any integer (non-zero is true)",
       "written `tl::where(x_keep != 0, ...)`", nullptr},
      {"tl.where of mixed literals", "06 fused attention (`tl.where(mask, 0, -1.0e6)`)", partial,
       "`tl::where(mask, 0, -1.0e6)` (an int and a float literal) does not compile: C++ deduces one literal type",
       "written `tl::where(mask, 0.0, -1.0e6)`", nullptr},
      // ---- language (test_core.py) ----
      {"tl.make_block_ptr", "test_core `test_block_ptr`-style loads (old tutorials 06/08)", missing,
       "no block pointers: `tl.make_block_ptr`, `tl.advance`, `boundary_check`, `padding_option`", "",
       PROBE(has_block_ptr, probe::P)},
      {"argmax/argmin options", "test_core `test_reduce1d` (`tie_break_left=False`)", missing,
       "`tl::argmax` / `tl::argmin` and `tl::max` / `tl::min` with `tl::return_indices` always take the first "
       "extreme (no `tie_break_left=False` / `return_indices_tie_break_left=False`)",
       "", nullptr},
      {"propagate_nan", "test_core `test_maximum_minimum`", missing,
       "`tl.maximum` / `tl.minimum` take no `propagate_nan=tl.PropagateNan.ALL` (`tl::clamp` does)", "", nullptr},
      {"libdevice functions", "test_core `test_math_op` and libdevice's other functions", missing,
       "tl's math beyond the IR's (exp exp2 log log2 sqrt rsqrt abs sin cos erf floor ceil fma) is tl/math.hpp's "
       "tanh sigmoid log1p expm1 sinh cosh tan atan atan2 asin acos cbrt erfc pow clamp, in f32, f16 and bf16 "
       "(and every one of them in f64 on every target, sin cos exp exp2 log log2 erf too), and no log10 exp10 "
       "trunc round rint hypot "
       "copysign fdim ldexp frexp lgamma tgamma "
       "erfinv isnan isinf signbit ... (`tl.extra.libdevice`)",
       "", PROBE(has_log10, probe::T)},
      {"tl.softmax", "triton/language/standard.py's `tl.softmax`", missing,
       "no `tl.softmax` (written out in the kernel: max, exp, sum, divide)", "", PROBE(has_softmax, probe::T)},
      {"tl.zeros_like", "test_core `test_zeros_like`-style code", missing,
       "no `tl.zeros_like`, `tl.full_like`; written `tl::zeros<E>(x.shape())`", "", PROBE(has_zeros_like, probe::T)},
      {"tl.ravel", "test_core `test_ravel`", missing, "no `tl.ravel`; written `tl::reshape(x, {n})`", "",
       PROBE(has_ravel, probe::T)},
      {"tl.swizzle2d", "test_core `test_swizzle2d`", missing, "no `tl.swizzle2d`", "", PROBE(has_swizzle2d, probe::I)},
      {"dot options", "test_core `test_dot` (`out_dtype`, `max_num_imprecise_acc`)", missing,
       "`tl.dot` takes no `out_dtype` (f16 accumulation) or `max_num_imprecise_acc` (its `input_precision` is "
       "`tl::input_precision`)",
       "", nullptr},
      {"3-D tl.dot", "test_core `test_dot3d`", missing, "`tl.dot` of 3-D (batched) operands", "", nullptr},
      {"small dot shapes", "test_core `test_dot` (M or N below 16, K below 16)", missing,
       "`tl.dot` needs M, N >= 16 and K >= 16 (32 for 8-bit operands)", "", nullptr},
      {"cast rounding", "test_core `test_cast` (`fp_downcast_rounding=\"rtz\"`)", missing,
       "`.to()` rounds to nearest even only: no `fp_downcast_rounding=\"rtz\"`", "", nullptr},
      {"float8e4b15 / float8e4nv names", "test_core `test_cast`, `test_fp8*`", missing,
       "no `float8e4b15`, `float8e4b8` (tl has the OCP and FNUZ formats: f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz)", "",
       nullptr},
      {"int `/`", "test_core `test_bin_op` (`x / y` of integers)", partial,
       "Triton's `/` of two integers is a float division and `//` C's; tl's `/` of integers is C's (Triton's `//`)",
       "written `x.to<f32>() / y.to<f32>()` for Triton's `/`, `x / y` for `//`", nullptr},
      {"tl.sum dtype", "test_core `test_reduce1d`, `test_reduce` (int8 / int16 inputs)", missing,
       "`tl.sum` of 8- and 16-bit integers sums in (u)int32 in Triton and returns that type; tl's returns the "
       "input type; no `dtype=` argument",
       "", nullptr},
      {"tl.broadcast(x, y)", "test_core `test_broadcast`", partial,
       "no two-operand `tl.broadcast(x, y)` returning both broadcast", "written `tl::broadcast_to(y, x.shape())`",
       nullptr},
      {"tl.range options", "test_core `test_tl_range*` (`loop_unroll_factor`, `disallow_acc_multi_buffer`)", missing,
       "`tl::range` takes `num_stages` only: no `loop_unroll_factor`, `disallow_acc_multi_buffer` (nor `flatten`, "
       "`warp_specialize`: their own gaps)",
       "", nullptr},
      {"tl.map_elementwise", "test_core `test_map_elementwise`", missing,
       "no `tl.map_elementwise` (a scalar function mapped over tiles, with multiple results)", "", nullptr},
      {"return in a branch", "test_core `test_if_return`, `test_nested_if_else_return` (`if c: ...; return`)",
       missing,
       "no early return from a kernel under a run-time condition: a C++ `return` in a `tl::if_` lambda leaves the "
       "lambda only, and the code after the branch still runs",
       "", nullptr},
      {"64-bit loop bounds", "test_core `test_for_iv` (`range(2**35, 2**35 + 20)`)", missing,
       "`tl::range` bounds and step are i32", "", nullptr},
      {"globaltimer / smid", "test_core `test_globaltimer`, `test_smid`", missing,
       "no `tl.extra.cuda.globaltimer()`, `smid()`", "", nullptr},
  };
  return table;
}

namespace {
std::vector<std::string>& named() {
  static std::vector<std::string> v;
  return v;
}
}  // namespace

const std::vector<std::string>& named_gaps() { return named(); }

const gap* find_gap(std::string_view id) {
  for (const gap& g : gaps())
    if (id == g.id) {
      named().emplace_back(id);
      return &g;
    }
  return nullptr;
}

std::string skip_message(const gap& g) {
  return std::string("expected gap '") + g.id + "' (tests/conformance/gaps.cpp): " + g.missing;
}

void note_partial(std::string_view id) {
  const gap* g = find_gap(id);
  if (!g || g->kind != gap_kind::partial) {
    ADD_FAILURE() << "'" << id << "' is not a partial gap in tests/conformance/gaps.cpp";
    return;
  }
  ::testing::Test::RecordProperty("partial_gap", std::string(id));
}

void expect_known_failure(std::string_view id, const std::function<void()>& body) {
  const gap* g = find_gap(id);
  if (!g || g->kind != gap_kind::known_failure) {
    ADD_FAILURE() << "'" << id << "' is not a known failure in tests/conformance/gaps.cpp";
    return;
  }
  run_as_known_failure(*g, body);
}

void run_as_known_failure(const gap& g, const std::function<void()>& body) {
  ::testing::TestPartResultArray results;
  std::string first;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    try {
      body();
    } catch (const std::exception& e) {
      first = std::string("exception: ") + e.what();
    }
  }
  for (int i = 0; first.empty() && i < results.size(); ++i)
    if (results.GetTestPartResult(i).failed()) first = results.GetTestPartResult(i).message();
  if (first.empty()) {
    ADD_FAILURE() << "the known failure '" << g.id << "' passes now: remove it from tests/conformance/gaps.cpp "
                  << "(and regenerate docs/conformance.md)";
    return;
  }
  if (first.size() > 600) first = first.substr(0, 600) + "...";
  GTEST_SKIP() << skip_message(g) << "\n  still failing: " << first;
}

namespace {
std::string cell(const char* s) {
  std::string r;
  for (const char* p = s; *p; ++p) r += *p == '|' ? std::string("\\|") : std::string(1, *p);
  return r;
}
}  // namespace

std::string render_markdown() {
  std::string md =
      "| gap | where | kind | what tl lacks | what the suite does instead |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const gap& g : gaps()) {
    const char* kind = g.kind == gap_kind::missing ? "missing" : g.kind == gap_kind::partial ? "partial" : "known failure";
    // an id holding a backtick (int `/`) goes in a double-backtick code span
    std::string id = std::string(g.id).find('`') == std::string::npos ? "`" + cell(g.id) + "`" : "`` " + cell(g.id) + " ``";
    md += "| " + id + " | " + cell(g.where) + " | " + kind + " | " + cell(g.missing) + " | " +
          (*g.instead ? cell(g.instead) : std::string("skipped")) + " |\n";
  }
  return md;
}

}  // namespace conformance

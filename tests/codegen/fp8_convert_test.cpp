// FP8 conversions two elements an instruction where the hardware has it, checked on the
// code without a GPU: a tile of FP8 loaded, converted to f32 or bf16 and stored, and an
// f32 tile converted to FP8 and stored, compiled for sm_90 (PTX: cvt.rn.f16x2.e4m3x2 /
// cvt.rn.satfinite.e4m3x2.f32 and their e5m2 forms) and gfx942 / gfx950 (disassembly:
// v_cvt_pk_f32_fp8 / v_cvt_pk_fp8_f32 and their bf8 forms), each in both of the FP8
// formats the target converts in hardware. A thread's conversions are counted against its
// elements: at most one instruction per two, and none of the per-element converts left.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::compile_for;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

constexpr int kElements = 1024;  // the tile; 4 warps: 4 a lane on AMD (wave64), 8 on NVIDIA
constexpr int kWarps = 4;

int per_thread(const std::string& arch) { return kElements / (kWarps * (arch.rfind("gfx", 0) == 0 ? 64 : 32)); }

tile<ty::ptr<ty::u8>> fp8_ptr_arg(Trace& t, DType fmt, const char* name) {
  return tile<ty::ptr<ty::u8>>(t.add_argument(ir::Type{DType::ptr, fmt, {}}, name, true));
}

// out[i] = cast<to>(q[i]) for an FP8 q.
std::unique_ptr<ir::Function> decode_kernel(DType fmt, DType to) {
  return trace("fp8_decode_tile", [&](Trace& t) {
    auto q = fp8_ptr_arg(t, fmt, "q");
    auto out = tile<ty::ptr<ty::f32>>(t.add_argument(ir::Type{DType::ptr, to, {}}, "out", true));
    auto offs = tl::arange(0, kElements);
    auto loc = std::source_location::current();
    ir::Value* v = detail::load((q + offs).get(), nullptr, nullptr, loc);
    detail::store((out + offs).get(), detail::cast(v, to, false, loc), nullptr, loc);
  });
}

// q[i] = cast<fmt>(x[i]) for an f32 x.
std::unique_ptr<ir::Function> encode_kernel(DType fmt) {
  return trace("fp8_encode_tile", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto q = fp8_ptr_arg(t, fmt, "q");
    auto offs = tl::arange(0, kElements);
    auto loc = std::source_location::current();
    detail::store((q + offs).get(), detail::cast(tl::load(x + offs).get(), fmt, false, loc), nullptr, loc);
  });
}

std::string code_of(const std::string& arch, ir::Function& f) {
  auto co = compile_for(arch, f, kWarps);
  if (arch.rfind("gfx", 0) == 0) return amd::disassemble(co.binary);
  return std::string(co.binary.begin(), co.binary.end());
}

bool is_e5m2(DType fmt) { return fmt == DType::f8e5m2 || fmt == DType::f8e5m2fnuz; }

struct Target {
  const char* arch;
  DType e4m3, e5m2;  // the formats it converts in hardware
};
const Target kTargets[] = {{"sm_90", DType::f8e4m3fn, DType::f8e5m2},
                           {"gfx942", DType::f8e4m3fnuz, DType::f8e5m2fnuz},
                           {"gfx950", DType::f8e4m3fn, DType::f8e5m2}};

TEST(Fp8Convert, DecodeConvertsPairs) {
  for (const Target& t : kTargets)
    for (DType fmt : {t.e4m3, t.e5m2})
      for (DType to : {DType::f32, DType::bf16, DType::f16}) {
        SCOPED_TRACE(fmt::format("{} {} -> {}", t.arch, name(fmt), name(to)));
        auto f = decode_kernel(fmt, to);
        std::string code = code_of(t.arch, *f);
        const int n = per_thread(t.arch);
        if (std::string(t.arch) == "sm_90") {
          const int pairs = count(code, is_e5m2(fmt) ? "cvt.rn.f16x2.e5m2x2" : "cvt.rn.f16x2.e4m3x2");
          EXPECT_EQ(pairs, n / 2) << code;
        } else {
          const int pairs = count(code, is_e5m2(fmt) ? "v_cvt_pk_f32_bf8" : "v_cvt_pk_f32_fp8");
          EXPECT_EQ(pairs, n / 2) << code;
          EXPECT_EQ(count(code, "v_cvt_f32_fp8") + count(code, "v_cvt_f32_bf8"), 0) << code;
          // Both bytes of a pair are read where they lie in the loaded word: bytes 2-3
          // by the word select (SDWA WORD_1), no byte extracted or shuffled first.
          EXPECT_EQ(count(code, "src0_sel:WORD_1"), n / 4) << code;
          EXPECT_EQ(count(code, "v_bfe_u32") + count(code, "v_lshrrev") + count(code, "0xff,"), 0) << code;
        }
      }
}

TEST(Fp8Convert, EncodeConvertsPairs) {
  for (const Target& t : kTargets)
    for (DType fmt : {t.e4m3, t.e5m2}) {
      SCOPED_TRACE(fmt::format("{} f32 -> {}", t.arch, name(fmt)));
      auto f = encode_kernel(fmt);
      std::string code = code_of(t.arch, *f);
      const int n = per_thread(t.arch);
      const char* pair = std::string(t.arch) == "sm_90"
                             ? (is_e5m2(fmt) ? "cvt.rn.satfinite.e5m2x2.f32" : "cvt.rn.satfinite.e4m3x2.f32")
                             : (is_e5m2(fmt) ? "v_cvt_pk_bf8_f32" : "v_cvt_pk_fp8_f32");
      EXPECT_EQ(count(code, pair), n / 2) << code;
    }
}

// Formats without hardware converts keep the per-element software path: no pair
// instruction appears (FNUZ on NVIDIA and gfx950, OCP on gfx942, anything on gfx90a/sm_80).
TEST(Fp8Convert, SoftwareFormatsStayPerElement) {
  struct Case {
    const char* arch;
    DType fmt;
  } cases[] = {{"sm_90", DType::f8e4m3fnuz}, {"sm_80", DType::f8e4m3fn}, {"gfx942", DType::f8e4m3fn},
               {"gfx950", DType::f8e5m2fnuz}, {"gfx90a", DType::f8e4m3fnuz}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} {}", c.arch, name(c.fmt)));
    std::string dec = code_of(c.arch, *decode_kernel(c.fmt, DType::f32));
    std::string enc = code_of(c.arch, *encode_kernel(c.fmt));
    for (const std::string& code : {dec, enc}) {
      EXPECT_EQ(count(code, "e4m3x2") + count(code, "e5m2x2"), 0);
      EXPECT_EQ(count(code, "v_cvt_pk_") + count(code, "v_cvt_f32_fp8") + count(code, "v_cvt_f32_bf8"), 0);
    }
  }
}

}  // namespace

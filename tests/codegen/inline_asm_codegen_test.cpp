// tl::inline_asm_elementwise compiled for sm_90 and gfx90a/gfx942/gfx950 without running:
// the instruction appears in the PTX or the disassembly once per invocation (a thread's
// elements / pack), packed operands travel as one register, several results come out of
// one asm, an unused pure asm is dropped and one with effects kept; the PTX assembles
// with ptxas where CUDA is installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/traced_kernels.hpp"
#include "tl/inline_asm.hpp"

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

namespace {

using tltest::ptxas_errors;

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }


// 256 i32 over 128 threads (sm_90, 4 warps): 2 elements a thread.
template <class Body> std::unique_ptr<ir::Function> kernel(Body body) {
  return trace("asm", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::i32>(t, "x", true);
    auto y = ptr_arg<ty::i32>(t, "y", true);
    auto f = ptr_arg<ty::f32>(t, "f", true);
    auto h = ptr_arg<ty::f16>(t, "h", true);
    auto offs = tl::arange(0, 256);
    body(tl::load(x + offs), tl::load(f + offs), y + offs, h + offs);
  });
}

}  // namespace

// NVIDIA's prmt (a byte permutation), pack 1: one prmt per element.
TEST(InlineAsmCodegen, NvptxPrmtOncePerElement) {
  auto f = kernel([](const tl::i32& x, const tl::f32&, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>&) {
    tl::store(y, tl::inline_asm_elementwise<tl::i32>("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", {x}, true, 1));
  });
  EXPECT_NE(f->str().find("inline_asm_elementwise \"prmt.b32 $0, $1, 0, 0x0123;\" constraints=\"=r,r\" pack=1 pure"),
            std::string::npos)
      << f->str();
  std::string p = ptx(tltest::compile_for("sm_90", *f));
  EXPECT_EQ(count(p, "prmt.b32"), 2) << p;
  EXPECT_EQ(ptxas_errors(p), "") << p;
}

// cvt.rn.f16x2.f32 with pack 2: two f32 in, one 32-bit register of two f16 out, one
// conversion per pair (and the pair stored as it came out).
TEST(InlineAsmCodegen, NvptxPackedConversionWithPackTwo) {
  auto f = kernel([](const tl::i32&, const tl::f32& v, const tl::ptr<tl::i32>&, const tl::ptr<tl::f16>& h) {
    tl::store(h, tl::inline_asm_elementwise<tl::f16>("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,r,r", {v}, true, 2));
  });
  std::string p = ptx(tltest::compile_for("sm_90", *f));
  EXPECT_EQ(count(p, "cvt.rn.f16x2.f32"), 1) << p;
  EXPECT_EQ(count(p, "cvt.rn.f16.f32"), 0) << p;  // not converted one by one
  EXPECT_EQ(ptxas_errors(p), "") << p;
}

// Two results out of one asm (a tuple): an i32 split into its 16-bit halves.
TEST(InlineAsmCodegen, NvptxTwoResultsFromOneAsm) {
  auto f = kernel([](const tl::i32& x, const tl::f32&, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>&) {
    auto [lo, hi] = tl::inline_asm_elementwise<tl::i16, tl::i16>("mov.b32 {$0, $1}, $2;", "=h,=h,r", {x}, true, 1);
    tl::store(y, lo.to<tl::i32>() * 65536 + hi.to<tl::i32>());
  });
  std::string p = ptx(tltest::compile_for("sm_90", *f));
  EXPECT_EQ(count(p, "mov.b32 {"), 2) << p;
  EXPECT_EQ(ptxas_errors(p), "") << p;
}

// An unused pure asm is dropped; one with effects (is_pure false) is kept.
TEST(InlineAsmCodegen, PureUnusedDroppedImpureKept) {
  for (bool pure : {true, false}) {
    auto f = kernel([&](const tl::i32& x, const tl::f32&, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>&) {
      (void)tl::inline_asm_elementwise<tl::i32>("prmt.b32 $0, $1, 0, 0x3210;", "=r,r", {x}, pure, 1);
      tl::store(y, x);
    });
    std::string p = ptx(tltest::compile_for("sm_90", *f));
    EXPECT_EQ(count(p, "prmt.b32"), pure ? 0 : 2) << (pure ? "pure" : "impure") << "\n" << p;
  }
}

// AMD: v_perm_b32 (three operands and a selector), and v_cvt_pkrtz_f16_f32 with pack 2.
TEST(InlineAsmCodegen, AmdPermAndPackedConversion) {
  auto f = kernel([](const tl::i32& x, const tl::f32& v, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>& h) {
    auto sel = tl::full<tl::i32>({256}, 0x00010203);
    tl::store(y, tl::inline_asm_elementwise<tl::i32>("v_perm_b32 $0, $1, $2, $3", "=v,v,v,v", {x, x, sel}, true, 1));
    tl::store(h, tl::inline_asm_elementwise<tl::f16>("v_cvt_pkrtz_f16_f32 $0, $1, $2", "=v,v,v", {v}, true, 2));
  });
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    auto co = tltest::compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    // 256 elements over 256 lanes: one element a lane, one perm, one packed conversion of
    // the lane's element and the group's poison filler.
    EXPECT_EQ(count(dis, "v_perm_b32"), 1) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "v_cvt_pkrtz_f16_f32"), 1) << arch << "\n" << dis;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
  }
}

// Constraints of the right count that LLVM cannot parse (an input tied to an operand that
// is not an output) fail the compile with the user's line, not inside LLVM.
TEST(InlineAsmCodegen, ConstraintsLlvmRefusesNameTheLine) {
  auto f = kernel([](const tl::i32& x, const tl::f32&, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>&) {
    tl::store(y, tl::inline_asm_elementwise<tl::i32>("mov.b32 $0, $1;", "=r,1", {x}, true, 1));
  });
  try {
    tltest::compile_for("sm_90", *f);
    ADD_FAILURE() << "compiled";
  } catch (const tl::error& e) {
    EXPECT_NE(std::string(e.what()).find("inline_asm_elementwise"), std::string::npos) << e.what();
    EXPECT_NE(e.line(), 0u) << e.what();
  }
}

// Assembly the target does not know is the assembler's error, reported as a tl error
// naming the kernel (LLVM's default would end the process).
TEST(InlineAsmCodegen, UnknownInstructionIsACompileError) {
  auto f = kernel([](const tl::i32& x, const tl::f32&, const tl::ptr<tl::i32>& y, const tl::ptr<tl::f16>&) {
    tl::store(y, tl::inline_asm_elementwise<tl::i32>("v_no_such_instruction $0, $1", "=v,v", {x}, true, 1));
  });
  EXPECT_THROW(tltest::compile_for("gfx942", *f), tl::compile_error);
}

// Triton's test_inline_asm and test_inline_asm_packed as they write them: a constraint
// string with spaces, and four u8 a 32-bit register (pack 4).
TEST(InlineAsmCodegen, NvptxTritonsOwnCases) {
  auto f = trace("asm_triton", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::u32>(t, "x", true);
    auto b = ptr_arg<ty::u8>(t, "b", true);
    auto offs = tl::arange(0, 512);
    auto v = tl::load(x + offs);
    tl::store(x + offs, tl::inline_asm_elementwise<tl::u32>("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", {v, v, v},
                                                            true, 1));
    auto c = tl::load(b + offs);
    tl::store(b + offs, tl::inline_asm_elementwise<tl::u8>("and.b32 $0, $1, 0x1F1F1F1F; \n shl.b32 $0, $0, 3;", "=r,r",
                                                           {c}, true, 4));
  });
  std::string p = ptx(tltest::compile_for("sm_90", *f));
  EXPECT_EQ(count(p, "shf.l.wrap.b32"), 4) << p;  // 512 over 128 threads: 4 a thread
  EXPECT_EQ(count(p, "and.b32 "), 1) << p;        // their 4 bytes, one register
  EXPECT_EQ(ptxas_errors(p), "") << p;
}

// LLVM's error diagnostics on tl's compile paths (codegen/diagnostics.hpp). Without a
// handler, LLVM prints an error diagnostic and calls exit(1): the first test below would
// end the test binary instead of failing. With it, the error is a tl::compile_error naming
// the kernel, and LLVM's warnings keep their own handling (printed, nothing thrown).
#include <gtest/gtest.h>

#include <string>

#include "codegen/diagnostics.hpp"
#include "tl/error.hpp"

namespace {

using namespace tl;

// A CPU kernel whose inline assembly names a register the target does not have: the
// instruction selection reports it as an error diagnostic of the module's context.
TEST(Diagnostics, BackendErrorIsACompileErrorNamingTheKernel) {
  const char* ir = R"(
define void @tl_bad_asm() {
  %x = call i32 asm sideeffect "", "={no_such_register}"()
  ret void
}
)";
  try {
    (void)codegen::emit_cpu_llvm_ir(ir, "bad_asm", ir::SrcLoc{"user.cpp", 12});
    ADD_FAILURE() << "no error for the bad inline assembly";
  } catch (const compile_error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), "user.cpp");
    EXPECT_EQ(e.line(), 12u);
    EXPECT_NE(what.find("kernel 'bad_asm': LLVM reported 1 error"), std::string::npos) << what;
    EXPECT_NE(what.find("no_such_register"), std::string::npos) << what;
  }
}

// A frame over the function's "warn-stack-size" is a warning diagnostic: LLVM prints it,
// and the kernel compiles.
TEST(Diagnostics, WarningsAreLeftToLlvm) {
  const char* ir = R"(
define void @tl_warned(ptr %out) "warn-stack-size"="16" {
  %buf = alloca [64 x i32], align 16
  store volatile i32 1, ptr %buf
  %v = load volatile i32, ptr %buf
  store i32 %v, ptr %out
  ret void
}
)";
  codegen::CodeObject out;
  EXPECT_NO_THROW(out = codegen::emit_cpu_llvm_ir(ir, "warned", ir::SrcLoc{"user.cpp", 7}));
  EXPECT_FALSE(out.binary.empty());
}

TEST(Diagnostics, TextThatDoesNotParseIsACompileError) {
  EXPECT_THROW((void)codegen::emit_cpu_llvm_ir("define nonsense", "garbled", {}), compile_error);
}

}  // namespace

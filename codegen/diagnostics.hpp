// LLVM's diagnostics on tl's compile paths. Without a handler of its own, an LLVMContext
// prints an error-severity diagnostic (an inline-asm error, a backend resource limit, an
// unsupported operation) and calls exit(1): the user's whole process would end inside a
// kernel's first launch. Every context tl compiles a kernel in runs its LLVM steps
// through with_llvm_diagnostics (codegen/pipeline.cpp), which turns the first error into a
// tl::compile_error naming the kernel. Warnings and remarks keep LLVM's own handling.
#pragma once

#include <functional>
#include <string>

#include "codegen/ir/ir.hpp"
#include "codegen/target.hpp"

namespace llvm {
class LLVMContext;
}

namespace tl::codegen {

// Runs `steps` (lowering into, optimizing and emitting modules of `context`) with an
// error handler installed on `context`, and restores the previous one after. An error
// diagnostic LLVM reports meanwhile is kept (nothing is thrown through LLVM's frames), and
// `steps` ends in a tl::compile_error naming `kernel` at `where` (the kernel's line), with
// LLVM's message: as soon as `steps` returns, or, where `steps` throws because of it (a
// backend that goes on with a broken module), instead of that error.
void with_llvm_diagnostics(llvm::LLVMContext& context, const std::string& kernel, const ir::SrcLoc& where,
                           const std::function<void()>& steps);

// Emits `llvm_ir` (the text of a module defining the CPU kernel entry of `kernel`) for the
// host as compile() emits a lowered CPU kernel: the CPU target's optimization and object
// emission, under with_llvm_diagnostics, as kernel `kernel` defined at `where`. For the
// tests of this path (tests link no LLVM of their own) and for tools. Throws
// compile_error for text that does not parse.
CodeObject emit_cpu_llvm_ir(const std::string& llvm_ir, const std::string& kernel, const ir::SrcLoc& where);

}  // namespace tl::codegen

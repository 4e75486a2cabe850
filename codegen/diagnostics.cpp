// LLVM's error diagnostics as tl::compile_error (codegen/diagnostics.hpp).
#include "codegen/diagnostics.hpp"

#include <fmt/format.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>

#include "tl/error.hpp"

namespace tl::codegen {
namespace {

// Keeps the error diagnostics; leaves everything else to LLVM's default handling (the
// context prints a warning, and filters and prints remarks, when a handler declines one).
struct ErrorCollector final : llvm::DiagnosticHandler {
  std::string errors;
  int count = 0;

  bool handleDiagnostics(const llvm::DiagnosticInfo& info) override {
    if (info.getSeverity() != llvm::DS_Error) return false;
    if (++count <= 4) {  // the first few: later ones tend to follow from the first
      llvm::raw_string_ostream os(errors);
      llvm::DiagnosticPrinterRawOStream printer(os);
      if (!errors.empty()) os << "\n";
      info.print(printer);
    }
    return true;  // handled: the context then does not exit
  }
};

}  // namespace

void with_llvm_diagnostics(llvm::LLVMContext& context, const std::string& kernel, const ir::SrcLoc& where,
                           const std::function<void()>& steps) {
  auto owned = std::make_unique<ErrorCollector>();
  ErrorCollector* collector = owned.get();
  std::unique_ptr<llvm::DiagnosticHandler> previous = context.getDiagnosticHandler();
  context.setDiagnosticHandler(std::move(owned), /*RespectFilters=*/false);
  auto fail = [&] {
    std::string what = fmt::format("kernel '{}': LLVM reported {} error{} compiling it (a tl bug, or code the target "
                                   "cannot run):\n{}",
                                   kernel, collector->count, collector->count == 1 ? "" : "s", collector->errors);
    return compile_error(what, where.file ? where.file : "", where.line);
  };
  struct Restore {
    llvm::LLVMContext& context;
    std::unique_ptr<llvm::DiagnosticHandler>& previous;
    ~Restore() { context.setDiagnosticHandler(std::move(previous)); }
  } restore{context, previous};
  try {
    steps();
  } catch (const std::exception&) {
    if (collector->count > 0) throw fail();
    throw;
  }
  if (collector->count > 0) throw fail();
}

CodeObject emit_cpu_llvm_ir(const std::string& llvm_ir, const std::string& kernel, const ir::SrcLoc& where) {
  auto backend = make_cpu_target(host_target());
  CompileOptions opts;
  CodeObject out;
  llvm::LLVMContext context;
  with_llvm_diagnostics(context, kernel, where, [&] {
    // The target's lowering of an empty kernel of that name sets what emission reads (the
    // target machine, the entry's symbol) and gives the module's triple and layout.
    ir::Function f;
    f.name = kernel;
    f.loc = where;
    llvm::Module lowered(kernel, context);
    backend->lower(f, lowered, opts);
    llvm::SMDiagnostic problem;
    std::unique_ptr<llvm::Module> m =
        llvm::parseIR(llvm::MemoryBufferRef(llvm::StringRef(llvm_ir), kernel), problem, context);
    if (!m) {
      std::string msg;
      llvm::raw_string_ostream os(msg);
      problem.print(kernel.c_str(), os, /*ShowColors=*/false);
      throw compile_error("emit_cpu_llvm_ir: the LLVM IR does not parse: " + msg);
    }
    m->setTargetTriple(lowered.getTargetTriple());
    m->setDataLayout(lowered.getDataLayout());
    backend->emit(*m, opts, out);
  });
  return out;
}

}  // namespace tl::codegen

// GPU compiles isolated in a worker process (issue 44), so that LLVM failing fatally
// inside a compile (report_fatal_error, an unreachable, an assertion, a crash in a pass)
// becomes a tl::compile_error naming the kernel and LLVM's message, and the user's process
// goes on launching other kernels. LLVM ends the process on such failures, and no handler
// can safely return from them into LLVM's frames; a separate process is the one boundary
// that holds for a crash as well.
//
// The worker is a long-lived process, forked from this one at the first compile that
// finds none idle, which compiles one job after another: a pool of them, one a compile in
// flight, so that threads compiling at once each have theirs. The application does the
// first half of a compile itself (codegen/target.hpp, lower_to_bitcode: the tile passes,
// the GPU planning and the lowering: tl's own code, whose failures are typed errors, and
// LLVM's IR construction through IRBuilder, whose argument checks are assertions, compiled
// out in the release LLVM tl builds against, and whose result LLVM's verifier checks, a
// compile_error where it refuses it; a user's inline-asm constraints are checked by
// InlineAsm::verify there, its text is assembled in the worker) and sends the LLVM
// module as bitcode, with the target, the options and its environment, to a worker, which
// runs LLVM's middle end, the code generation (every AMD schedule alternative) and the link
// (emit_bitcode), and sends the code object back. What fails fatally or crashes there ends
// that worker only: the compile is a compile_error, and the next compile gets a new worker.
// The code object is compile()'s, byte for byte (the bitcode keeps the module's use-list
// order). What the worker no longer isolates: a crash of tl's own code in the first half
// (a tl bug), which ends the application as one in the tracer would.
//
// Why a persistent worker rather than a fork a compile: a fresh fork's first writes to the
// memory it shares with the application (LLVM's heap, the target machine's tables) are
// copy-on-write faults, some 4k pages a compile, ~13 ms of CPU a compile of RMSNorm
// (bench/results/compile-time-2026-11-29, §3). A worker pays them once.
//
// What the worker writes to stderr (TL_DUMP_IR, LLVM's messages) is passed on to this
// process's stderr after each job, and its last lines go into the error when it dies.
// A job that does not finish in TL_COMPILE_TIMEOUT_S seconds (default 600) kills its
// worker. A worker left idle for TL_COMPILE_WORKER_IDLE_S seconds (default 60) exits: it
// holds the pages of this process as they were when it was forked (copy-on-write), which
// this process's later frees do not return to the system while the worker lives.
//
// A fork while another thread is inside LLVM could leave one of LLVM's locks held in the
// worker for ever: in-process compiles (the CPU's, and every compile with
// TL_COMPILE_IN_PROCESS=1) and the first halves hold a shared guard that fork() takes
// exclusively.
#pragma once

#include "codegen/ir/ir.hpp"
#include "codegen/llvm_guard.hpp"
#include "codegen/target.hpp"

namespace tl::codegen {

// compile(), where the launch path compiles: GPU targets in a worker process unless
// TL_COMPILE_IN_PROCESS=1 (or `in_process`), the CPU in this process. Throws what
// compile() throws, and compile_error for a worker that failed fatally or crashed.
CodeObject compile_guarded(ir::Function& f, const TargetDesc& target, const CompileOptions& opts,
                           bool in_process = false);

// The two ways, for tests and benchmarks.
CodeObject compile_in_process(ir::Function& f, const TargetDesc& target, const CompileOptions& opts);
CodeObject compile_in_worker(ir::Function& f, const TargetDesc& target, const CompileOptions& opts);

// The process ids of the workers idle now (for tests: one killed between jobs must not
// fail the next compile).
std::vector<int> idle_compile_workers();

}  // namespace tl::codegen

// GPU compiles isolated in a worker process (issue 44), so that LLVM failing fatally
// inside a compile (report_fatal_error, an unreachable, an assertion, a crash in a pass)
// becomes a tl::compile_error naming the kernel and LLVM's message, and the user's process
// goes on launching other kernels. LLVM ends the process on such failures, and no handler
// can safely return from them into LLVM's frames; a separate process is the one boundary
// that holds for a crash as well.
//
// The worker is a fork() of this process: the traced program, the target and the options
// are already in its memory, so nothing is serialized on the way in; the code object comes
// back over a pipe. The child compiles on its one thread, writes the result (or the typed
// error it threw, or LLVM's fatal message) and leaves with _exit: no atexit handler, no
// device call, no cache write runs there. What it writes to stderr (TL_DUMP_IR, LLVM's
// messages) is passed on to this process's stderr, and its last lines go into the error
// when it dies.
//
// A fork while another thread is inside LLVM could leave one of LLVM's locks held in the
// child for ever: in-process compiles (the CPU's, and every compile with
// TL_COMPILE_IN_PROCESS=1) hold a shared guard that fork() takes exclusively. A child
// that still hangs is killed after TL_COMPILE_TIMEOUT_S seconds (default 600).
//
// The fork copies the process's page tables: about 11-16 ms a compile for a process
// of this size (bench/results/compile-isolation-2026-11-28), more for one that maps tens of
// GB of host memory; such a process may set TL_COMPILE_IN_PROCESS=1.
#pragma once

#include "codegen/ir/ir.hpp"
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

}  // namespace tl::codegen

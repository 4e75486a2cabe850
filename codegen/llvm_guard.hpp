// The guard between compile workers' fork() and everything in this process that runs
// LLVM, or a library with LLVM inside (comgr): a worker is forked only where no thread is
// inside such work, so that its copy of this process is never caught halfway through it
// (a lock held for ever, a table half made). codegen/compile_worker.cpp takes the
// exclusive side around fork(); compiles, comgr's loading, ISA queries and links, and the
// CPU JIT's making, loading and unloading of kernels hold the shared side.
//
// Why comgr and the JIT too: a pooled worker, forked while another thread was first
// asking comgr for its ISA names outside any compile, inherited comgr's tables half made
// and crashed reading them at its next gfx942 job
// (CompileWorker.ThreadsCompilingAtOnceEachGetTheirCode, 1 run in 3 to 5 on a loaded
// 2-core VM).
#pragma once

#include <shared_mutex>

namespace tl::codegen {

// The shared side, for a scope. A thread may hold it again inside (the second is a
// no-op: std::shared_mutex may not be locked twice by one thread, even shared). In a
// compile worker it takes nothing: a worker never forks, and its copy of the mutex is its
// forker's, held.
class InProcessLlvmGuard {
 public:
  InProcessLlvmGuard();
  ~InProcessLlvmGuard();
  InProcessLlvmGuard(const InProcessLlvmGuard&) = delete;
  InProcessLlvmGuard& operator=(const InProcessLlvmGuard&) = delete;

 private:
  bool owner_ = false;
};

// The mutex itself, whose exclusive side the worker's fork() takes.
std::shared_mutex& fork_guard();
// Called in a new worker, right after its fork.
void mark_compile_worker();

}  // namespace tl::codegen

// The fork guard (llvm_guard.hpp says what it is for).
#include "codegen/llvm_guard.hpp"

namespace tl::codegen {
namespace {
thread_local int t_llvm_guards = 0;  // this thread's InProcessLlvmGuards alive
bool g_is_worker = false;            // this process is a compile worker
}  // namespace

std::shared_mutex& fork_guard() {
  static std::shared_mutex m;
  return m;
}

void mark_compile_worker() { g_is_worker = true; }

InProcessLlvmGuard::InProcessLlvmGuard() {
  if (t_llvm_guards++ == 0 && !g_is_worker) {
    fork_guard().lock_shared();
    owner_ = true;
  }
}

InProcessLlvmGuard::~InProcessLlvmGuard() {
  --t_llvm_guards;
  if (owner_) fork_guard().unlock_shared();
}

}  // namespace tl::codegen

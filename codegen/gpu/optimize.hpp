// LLVM's optimization pipeline for a lowered GPU module, shared by AMDGPU and NVPTX:
// the new pass manager's per-module default pipeline at the requested level, with the
// target's TargetMachine so that its own passes and cost models take part.
#pragma once

#include <string>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace tl::gpu {

void optimize_module(llvm::Module& m, llvm::TargetMachine& tm, int opt_level);
// Runs the IR verifier; throws tl::compile_error with its report (a tl bug).
void verify_module(const llvm::Module& m, const char* stage);
std::string module_text(const llvm::Module& m);

}  // namespace tl::gpu

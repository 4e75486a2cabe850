// The GPU lowering shared by AMDGPU and NVPTX: tile IR -> one LLVM kernel in which a
// program is one workgroup (CTA) of num_warps * wave_size threads.
//
// Kernel ABI: the LLVM kernel's parameters are the tile function's arguments in order,
// pointers in the global address space and scalars by value; the grid is the programs.
#pragma once

#include "codegen/gpu/hooks.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/target.hpp"

namespace llvm {
class Module;
}

namespace tl::gpu {

struct LoweringResult {
  std::string kernel_symbol;
  int block_threads = 0;
  int shared_bytes = 0;          // shared memory (LDS) the kernel uses, static and dynamic
  int dynamic_shared_bytes = 0;  // of which the launch must provide (past the static limit)
  std::vector<std::string> remarks;  // (for the compile's remarks: how shared memory was laid out)
};

// Lowers `f` into `module` (whose triple and data layout the target has already set).
// Throws tl::compile_error naming the op's source line for what a GPU target lacks.
LoweringResult lower_kernel(const ir::Function& f, llvm::Module& module, const codegen::CompileOptions& opts,
                            GpuHooks& hooks);

// A LoweringResult as JSON text and back (what Target::lowering_state carries to the
// compile worker).
std::string lowering_result_json(const LoweringResult& r);
LoweringResult lowering_result_from_json(const std::string& text);

// A symbol the device loaders accept: the kernel's name with anything outside
// [A-Za-z0-9_] replaced.
std::string kernel_symbol(const std::string& name);

}  // namespace tl::gpu

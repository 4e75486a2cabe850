// The small interface every code-generation target implements, and the pipeline's
// inputs and outputs. Targets live one per folder: codegen/cpu, codegen/amdgpu,
// codegen/nvptx (the latter two share codegen/gpu). Only .cpp files see LLVM.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/ir/ir.hpp"

namespace llvm {
class Module;
class LLVMContext;
class TargetMachine;
}  // namespace llvm

namespace tl::codegen {

// What to compile for. `arch` is "gfx942", "sm_90" or the host CPU name; `features`
// are LLVM target features ("+sramecc,-xnack" on AMD).
struct TargetDesc {
  enum Kind { cpu, amdgpu, nvptx } kind = cpu;
  std::string arch;
  std::string features;
  int wave_size = 1;  // lanes per warp/wavefront: 64 on CDNA, 32 on NVIDIA/RDNA, 1 on CPU
  std::string str() const;  // the full name that enters cache keys: "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
  // (Shipped field by field to the compile worker: compile_worker.cpp's target_json.)
};

// Launch-shaping options that change the generated code (and so the cache key).
struct CompileOptions {
  int num_warps = 4;
  int num_stages = 1;
  int waves_per_eu = 0;      // AMD: amdgpu-waves-per-eu lower bound; 0 leaves it to LLVM
  bool bounds_check = false;  // CPU: trap on out-of-bounds unmasked accesses
  int matrix_instr_nonkdim = 0;  // AMD tl::dot: MFMA M/N (16, 32; 0: tl chooses)
  int kpack = 1;                 // AMD tl::dot: operand k-packing (1, 2)
  int mma_version = 0;           // NVIDIA tl::dot: 0 tl chooses, 2 mma.sync, 3 wgmma (sm_90a)
  bool enable_fp_fusion = true;  // a user's float a * b + c may become one fma (Triton's default)
  // Internal (not a launch option, not in the key): whether the pipeliner may give a loop
  // with an asynchronous dot a stage more (compile() plans again without it, a loop at a
  // time, where the program then exceeds the target's shared memory: codegen/pipeline.cpp).
  bool async_dot_stages = true;
  int opt_level = 3;
  std::string key() const;
  // (The compile worker ships every field to its process: a new one goes into
  // compile_worker.cpp's options_json too.)
};

// The compiled kernel and everything the cache and the tools keep about it.
struct CodeObject {
  std::string kernel_symbol;      // the entry the device looks up
  std::string format;             // "elf" (CPU object), "hsaco", "ptx"
  std::vector<uint8_t> binary;
  std::string tile_ir;            // after all passes
  std::string llvm_ir;            // optimized
  // AMD: vgpr, sgpr, spill_vgpr, ..., occupancy; all: shared_bytes; NVIDIA, when the
  // shared buffer is dynamic: dynamic_shared_bytes, which the launch passes.
  std::map<std::string, int64_t> report;
  // What the compiler decided that the user may want to know, a line each
  // (`pipelined: loop at f.cpp:12 num_stages=3: yes (...)`): printed by --report.
  std::vector<std::string> remarks;
  int block_threads = 1;          // threads per program (num_warps * wave_size on GPUs)
  int shared_bytes = 0;           // shared memory (LDS) per program, static and dynamic
  double compile_ms = 0;
  // Where the time went, by phase in pipeline order (codegen/compile_profile.hpp): "tile
  // passes", "gpu planning", ..., "link"; the launch path puts the "trace" first. The
  // phases sum to at most the trace and compile_ms together (the rest is bookkeeping).
  std::vector<std::pair<std::string, double>> phase_ms;
  // How the binary was linked, for the cache entry and `tl-cache show` (AMD: "comgr" with
  // comgr's version, or "lld"; and why that one). Empty where there is no choice.
  std::string linker, linker_version, linker_reason;
};

// A code-generation target: tile IR in, code object out.
class Target {
 public:
  virtual ~Target() = default;
  // Lowers the (already optimized) tile IR into `module`, defining the kernel entry.
  virtual void lower(const ir::Function& f, llvm::Module& module, const CompileOptions& opts) = 0;
  // Optimizes `module` and emits the binary, filling format/binary/report.
  virtual void emit(llvm::Module& module, const CompileOptions& opts, CodeObject& out) = 0;
  virtual const TargetDesc& desc() const = 0;
  // What emit() reads of lower()'s work besides the module (the kernel's symbol, threads,
  // shared memory, the machine it was lowered for), as text; and the same state restored
  // on a new Target of the same description, in another process: the compile worker
  // lowers in the application and emits in the worker (codegen/compile_worker.hpp). GPU
  // targets; the CPU's throw.
  virtual std::string lowering_state() const;
  virtual void restore_lowering_state(const std::string& state, const CompileOptions& opts);
};

// This thread's TargetMachine for `key` (target, features, level), made by `make` the
// first time: machines are costly to build (a large part of a small kernel's compile),
// and one must not run two code generations at once, hence one per thread.
llvm::TargetMachine& thread_machine(const std::string& key,
                                    const std::function<std::unique_ptr<llvm::TargetMachine>()>& make);

std::unique_ptr<Target> make_cpu_target(const TargetDesc& d);
std::unique_ptr<Target> make_amdgpu_target(const TargetDesc& d);
std::unique_ptr<Target> make_nvptx_target(const TargetDesc& d);

// The whole compiler: passes over the tile IR, lowering, LLVM optimization, emission.
// Throws tl::compile_error. `f` is modified by the passes.
CodeObject compile(ir::Function& f, const TargetDesc& target, const CompileOptions& opts);

// compile() in two halves, for the compile worker (codegen/compile_worker.hpp) on GPU
// targets: lower_to_bitcode runs the tile passes, the GPU planning and the lowering here
// and hands the LLVM module on as bitcode (use-list order kept, so that it reads back to
// the same code); emit_bitcode, in the worker, reads it back and runs LLVM's middle end,
// the code generation and the link; join_halves puts the two results together as
// compile() would have made them. The code object, byte for byte, is compile()'s.
struct LoweredKernel {
  CodeObject partial;     // tile_ir and remarks so far; the conversions' report
  std::string module_name;
  std::string bitcode;
  std::string state;      // Target::lowering_state
  // Each defined function's count of the name clashes LLVM numbered so far (pipeline.cpp,
  // name_counters), which bitcode does not keep.
  std::vector<std::pair<std::string, unsigned>> name_counters;
  std::vector<std::pair<std::string, double>> phases;  // of this half
};
LoweredKernel lower_to_bitcode(ir::Function& f, const TargetDesc& target, const CompileOptions& opts);
// `lowered`: module_name, bitcode, state and name_counters. `kernel` and `where` name the
// kernel in LLVM's errors. The result's phase_ms are this half's.
CodeObject emit_bitcode(const TargetDesc& target, const CompileOptions& opts, const LoweredKernel& lowered,
                        const std::string& kernel, const ir::SrcLoc& where);
CodeObject join_halves(LoweredKernel lowered, CodeObject emitted, double compile_ms);
// The program as the lowering for `target` receives it: `f` after the tile passes, and on
// GPU targets a copy after the GPU middle end (layouts, conversions, dot plans in the IR).
// For tests and tools that inspect the decisions; compile() runs the same passes.
std::unique_ptr<ir::Function> planned_program(ir::Function& f, const TargetDesc& target, const CompileOptions& opts);
// TL_DUMP_IR is set: print the IR (and the GPU layout plan) after each step to stderr.
bool dump_ir_enabled();

// What the environment chooses about how code for `d` is built, beyond the target and
// the options (AMD: the linker and the code object version, codegen/amdgpu/link_choice.hpp),
// for the cache key; "" for targets with no such choice. Throws what the choice throws.
std::string build_identity(const TargetDesc& d);

// Parses "gfx942", "gfx950:sramecc+:xnack-", "sm_90", "cpu"/"host" into a target.
TargetDesc parse_target(const std::string& name);
TargetDesc host_target();

}  // namespace tl::codegen

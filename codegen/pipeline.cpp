// The compiler, top to bottom: every pass the tile IR goes through on its way to a
// code object, in order. Set TL_DUMP_IR=1 to print the IR after each step.
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/passes/passes.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace tl::codegen {
namespace {

void dump(const char* after, const ir::Function& f) {
  if (dump_ir_enabled()) std::fprintf(stderr, "// ----- tile IR after %s -----\n%s", after, f.str().c_str());
}

void dump(const char* after, const llvm::Module& m) {
  if (!dump_ir_enabled()) return;
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  std::fprintf(stderr, "// ----- LLVM IR after %s -----\n%s", after, s.c_str());
}

std::unique_ptr<Target> make_target(const TargetDesc& d) {
  switch (d.kind) {
    case TargetDesc::cpu: return make_cpu_target(d);
    case TargetDesc::amdgpu: return make_amdgpu_target(d);
    case TargetDesc::nvptx: return make_nvptx_target(d);
  }
  throw compile_error("unknown target kind");
}

}  // namespace

bool dump_ir_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TL_DUMP_IR");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

CodeObject compile(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  auto start = std::chrono::steady_clock::now();
  dump("tracing", f);
  ir::verify(f);

  passes::eliminate_common_subexpressions(f);
  dump("common-subexpression elimination", f);
  passes::eliminate_dead_code(f);
  dump("dead-code elimination", f);
  // Loads issued num_stages-1 iterations ahead; the address arithmetic it clones for them
  // and what the original loads leave unused go to a second CSE and DCE.
  std::vector<std::string> remarks;
  passes::PipelineOptions pipelining{opts.num_stages, 0};
  if (target.kind != TargetDesc::cpu) {
    const auto caps = capabilities_for(target);
    pipelining.shared_bytes_limit = caps.shared_bytes_per_program;
    pipelining.direct_to_shared_widths = caps.direct_to_shared_widths;
    pipelining.wave_size = target.wave_size;
  }
  if (passes::pipeline_loops(f, pipelining, remarks) > 0) {
    dump("software pipelining", f);
    passes::eliminate_common_subexpressions(f);
    passes::eliminate_dead_code(f);
    dump("common-subexpression and dead-code elimination", f);
  }
  // Last, so that no later pass moves an access across the barriers it places.
  passes::insert_barriers(f);
  dump("barrier insertion", f);
  ir::verify(f);

  CodeObject out;
  out.tile_ir = f.str();
  out.remarks = std::move(remarks);
  auto backend = make_target(target);
  llvm::LLVMContext context;
  llvm::Module module(f.name, context);
  // GPU targets first analyse the IR (axis analysis: contiguity, alignment, ranges),
  // assign every tile value its layout (codegen/gpu/assign_layouts.cpp, printed here
  // with TL_DUMP_IR), place the shared buffers (codegen/gpu/shared_memory.cpp), then
  // lower by those plans (codegen/gpu/lower_kernel.cpp).
  backend->lower(f, module, opts);
  dump("lowering", module);

  backend->emit(module, opts, out);  // LLVM optimization and code emission
  dump("LLVM optimization", module);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tl::codegen

// The compiler, top to bottom: every pass the tile IR goes through on its way to a
// code object, in order. Set TL_DUMP_IR=1 to print the IR after each step.
#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBufferRef.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "codegen/compile_profile.hpp"
#include "codegen/diagnostics.hpp"
#include "codegen/gpu/capabilities.hpp"
#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/shared_memory.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/axis_analysis.hpp"
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

// The program shape a GPU plans for: num_warps a power of two, the threads within the
// target's limit.
gpu::PlanTarget gpu_plan_target(const gpu::TargetCapabilities& caps, const TargetDesc& target,
                                const CompileOptions& opts) {
  const int nw = opts.num_warps;
  if (nw < 1 || (nw & (nw - 1)) != 0 || nw > 32)
    throw compile_error(fmt::format("num_warps must be a power of two in 1..32, got {}", nw));
  if (nw * target.wave_size > caps.max_threads_per_program)
    throw compile_error(fmt::format("{} threads per program exceed {}'s limit of {}", nw * target.wave_size, caps.arch,
                                    caps.max_threads_per_program));
  return gpu::PlanTarget{&caps, target.wave_size, nw, opts.matrix_instr_nonkdim, opts.kpack, opts.mma_version};
}

}  // namespace

bool dump_ir_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("TL_DUMP_IR");
    return e && *e && std::string(e) != "0";
  }();
  return on;
}

namespace {

// The target-independent passes before the pipeliner, in place on `f`.
void run_passes_before_pipelining(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  // (The tracer has put the ops in their canonical order, passes::order_canonically: one
  // order whatever compiler built the user's C++. Trace::finish runs it, so that the cache
  // key is hashed from that order too.)
  dump("tracing", f);
  ir::verify(f);

  // tl::dot_scaled stays a scaled dot only where the target's scaled matrix instructions
  // take its formats and shape (gfx950); elsewhere it is upcast to bf16 and an ordinary dot
  // here, before anything plans the dot's operands.
  const gpu::TargetCapabilities scaled_caps = capabilities_for(target);
  // On sm_90 an upcast B goes through a shared buffer where the dot can be a warpgroup
  // dot (wgmma reads B from shared memory only; mma.sync took it from registers through
  // a layout conversion's scratch, the same trip through shared memory).
  const bool wgmma = target.kind == TargetDesc::nvptx && opts.mma_version != 2 && opts.num_warps % 4 == 0;
  // sm_90 multiplies bf16 natively (mul.rn.bf16x2): the e2m1 upcast in bf16 arithmetic.
  const bool bf16_math = target.kind == TargetDesc::nvptx &&
                         std::any_of(scaled_caps.matrix_instructions.begin(), scaled_caps.matrix_instructions.end(),
                                     [](const auto& m) { return m.family == gpu::MatrixFamily::nvidia_wgmma; });
  auto stage_b = [&](const ir::Operation& dot) {
    return wgmma && gpu::warpgroup_dot_obstacle(scaled_caps, dot, opts.num_warps, /*operands_known=*/false).empty();
  };
  if (passes::decompose_scaled_dots(
          f,
          [&](const ir::Operation& dot) {
            return target.kind == TargetDesc::amdgpu && gpu::scaled_dot_is_native(scaled_caps, dot, opts.num_warps);
          },
          stage_b, /*bf16_math=*/bf16_math) > 0)
    dump("scaled-dot decomposition", f);

  if (passes::combine_dot_accumulate(f) > 0) dump("dot-accumulate combining", f);
  passes::eliminate_common_subexpressions(f);
  dump("common-subexpression elimination", f);
  passes::eliminate_dead_code(f);
  dump("dead-code elimination", f);
  // Pointers and offsets carried through a pipelined loop, read from its induction
  // variable instead, so that the pipeliner can compute them for iterations ahead.
  if (passes::rewrite_carried_inductions(f, opts.num_stages) > 0) dump("carried-induction rewriting", f);
}

// What a plan that did not fit the target's shared memory gave up, for the next one
// (plan_program).
struct PlanLimits {
  std::map<int, passes::PipelineOptions::LoopLimit> loops;  // by loop number
  bool async_dot_stages = true;                             // for every loop
};

// The pipeliner and the target-independent passes after it, in place on `f`. `staged`: the
// loops it staged loads of into shared memory.
void run_pipelining(ir::Function& f, const TargetDesc& target, const CompileOptions& opts, const PlanLimits& limits,
                    std::vector<std::string>& remarks, std::vector<passes::StagedLoop>& staged) {
  // Loads issued num_stages-1 iterations ahead; the address arithmetic it clones for them
  // and what the original loads leave unused go to a second CSE and DCE.
  passes::PipelineOptions pipelining{opts.num_stages, 0};
  pipelining.loop_limits = limits.loops;
  if (target.kind != TargetDesc::cpu) {
    const auto caps = capabilities_for(target);
    pipelining.shared_bytes_limit = caps.shared_bytes_per_program;
    pipelining.direct_to_shared_widths = caps.direct_to_shared_widths;
    pipelining.wave_size = target.wave_size;
    // Reads of a staged buffer across its rows: ldmatrix.trans (16-bit), gfx950's
    // ds_read_b64_tr_b16 / _b8 (read_stage_registers).
    if (caps.load_matrix) pipelining.transposed_dot_read_bits = {16};
    else pipelining.transposed_dot_read_bits = caps.transposed_shared_read_bits;
    // NVIDIA only for now: there it takes K^T out of the registers (the attention sample's
    // forward at 128x64 w4 spilled 1.6 KB with K^T prefetched into registers, 0.9 KB
    // staged). On AMD the second staged operand doubles attention's LDS (gfx950: 96 KB,
    // occupancy 2 -> 1) and gfx942 spilled SGPRs: left to the AMD planning.
    pipelining.copy_transposed = target.kind == TargetDesc::nvptx;
    // A dot that will be a warpgroup dot (sm_90's wgmma, unless the launch forces
    // mma.sync) reads a staged tile both ways through descriptors, and may run
    // asynchronously: its loop's buffers get a stage more.
    if (target.kind == TargetDesc::nvptx && opts.mma_version != 2 && opts.num_warps % 4 == 0)
      pipelining.dot_reads_descriptors = [caps, nw = opts.num_warps](const ir::Operation& dot) {
        return gpu::warpgroup_dot_obstacle(caps, dot, nw, /*operands_known=*/false).empty();
      };
    // Rows broadcast into a warpgroup dot's result only (the pipeliner asks
    // dot_reads_descriptors of the dot; assign_layouts reads the staged row in the
    // accumulator's columns): AMD's pipeliner, as Triton's stream pipeliner, stages dot
    // operands only, its LDS kept for them; mma.sync targets are unmeasured.
    pipelining.stage_broadcast_rows = bool(pipelining.dot_reads_descriptors);
    if (target.kind == TargetDesc::nvptx && opts.async_dot_stages && limits.async_dot_stages &&
        opts.mma_version != 2 && opts.num_warps % 4 == 0)
      pipelining.dot_may_run_async = [caps, nw = opts.num_warps](const ir::Operation& dot) {
        return gpu::warpgroup_dot_obstacle(caps, dot, nw, /*operands_known=*/false).empty();
      };
  }
  if (passes::pipeline_loops(f, pipelining, remarks, &staged) > 0) {
    dump("software pipelining", f);
    passes::eliminate_common_subexpressions(f);
    passes::eliminate_dead_code(f);
    dump("common-subexpression and dead-code elimination", f);
  }
  // Last of the target-independent passes, so that no later pass moves an access across
  // the barriers it places (the GPU passes below insert only pure conversions).
  passes::insert_barriers(f);
  dump("barrier insertion", f);
  // Offsets and masks may not wrap (docs/language.md): their arithmetic is emitted nsw.
  if (passes::mark_index_arithmetic(f) > 0) dump("index-arithmetic marking", f);
  ir::verify(f);
}

// The GPU middle end (codegen/gpu/passes.hpp), on a copy of `f`, so that the traced
// function stays target-independent. Every decision lands in the copy's IR, shared-memory
// offsets included; the lowering (codegen/gpu/lower_kernel.cpp) only emits it. `paths`:
// the conversions left, by ConvertPath; `copied`: `f`'s values -> the copy's. Where the
// program does not fit the target's shared memory, `overflow` says so and the passes
// after the allocation do not run.
std::unique_ptr<ir::Function> run_gpu_passes(const ir::Function& f, const TargetDesc& target,
                                             const CompileOptions& opts, std::vector<std::string>& remarks,
                                             std::vector<int>& paths, ir::ValueMap& copied,
                                             std::optional<gpu::SharedMemoryOverflow>& overflow) {
  const auto caps = capabilities_for(target);
  const gpu::PlanTarget t = gpu_plan_target(caps, target, opts);
  std::unique_ptr<ir::Function> planned = ir::clone_function(f, &copied);
  ir::Function& g = *planned;
  g.num_warps = t.num_warps;  // (what the layouts are made for, and the lowering reads)
  if (gpu::convert_to_buffer_ops(g, passes::AxisAnalysis(g), t) > 0) {
    passes::eliminate_dead_code(g);  // (the global pointer tiles the buffer loads replaced)
    dump("buffer-op conversion", g);
  }
  if (gpu::split_dot_operand_reads(g, t) > 0) {
    passes::eliminate_dead_code(g);  // (the reads and transposes each dot now has its own of)
    dump("dot operand-read splitting", g);
  }
  gpu::plan_dots(g, t, remarks);
  dump("dot planning", g);
  gpu::assign_layouts(g, passes::AxisAnalysis(g), t);
  dump("layout assignment", g);
  gpu::insert_layout_conversions(g, t);
  dump("layout conversion insertion", g);
  gpu::plan_conversion_paths(g, t);
  dump("conversion path planning", g);
  if (gpu::batch_shared_conversions(g, t) > 0) dump("conversion batching", g);
  gpu::plan_dot_operand_sources(g, t);
  dump("dot operand-source planning", g);
  gpu::plan_shared_encodings(g, t);
  dump("shared encoding planning", g);
  gpu::plan_async_dots(g, t, opts.num_stages);
  dump("asynchronous dot planning", g);
  if (gpu::plan_copies(g, passes::AxisAnalysis(g), t) > 0) {
    passes::eliminate_dead_code(g);  // (what a copy's operands were computed from before the copy layout)
    dump("copy planning", g);
    gpu::plan_wait_counts(g, passes::AxisAnalysis(g), t);
    dump("wait-count planning", g);
  }
  overflow = gpu::allocate_shared_memory(g, t, remarks);
  if (overflow) return planned;
  dump("shared-memory allocation", g);
  gpu::insert_shared_barriers(g, t);
  dump("shared-memory barrier insertion", g);
  paths = gpu::conversion_path_counts(g);
  ir::verify(g);
  return planned;
}

// Where the stage more the pipeliner gave a loop for asynchronous dots that read A from
// registers costs programs a multiprocessor (the attention backward's dK/dV at 64x64,
// D = 128: 131 KB, one program, where two fit without it), the programs a multiprocessor
// holds with it and without it: plan_program plans again without it (the dots then wait
// at once).
struct AsyncStageCostsOccupancy {
  int64_t with, without;  // programs a multiprocessor (programs_a_multiprocessor)
};

// The programs an NVIDIA multiprocessor holds: by shared memory, it has the per-program
// limit plus the 1 KiB the driver reserves a program (sm_80 164 KiB, sm_90 228 KiB), and
// each program takes its bytes plus that 1 KiB; by registers, its 64K over the budget a
// thread the kernel states to ptxas (nvptx_target.cpp: min(255, 64K / threads), which a
// kernel with dots reaches), allocated in steps of 8.
int64_t programs_a_multiprocessor(int64_t shared_bytes, int64_t per_program_limit, int threads) {
  const int64_t budget = std::min(255, 65536 / std::max(1, threads) / 8 * 8);
  const int64_t by_registers = 65536 / ((budget + 7) / 8 * 8 * threads);
  return std::min((per_program_limit + 1024) / (shared_bytes + 1024), by_registers);
}

// Where `g` (planned, its shared memory allocated) has loops whose buffers got a stage more
// for asynchronous dots all reading A from registers (the attention backward's dV, dK and
// dQ: Triton keeps its stages there), the programs a multiprocessor holds with it and
// without it (`threads` a program). Loops with a dot reading both operands from the
// stages (a GEMM) keep the stage more as Triton's numBuffers + 1 does: nullopt where there
// are such loops or none.
std::optional<AsyncStageCostsOccupancy> register_a_async_stages(const ir::Function& g,
                                                                const gpu::TargetCapabilities& caps, int threads) {
  int64_t total = 0, more = 0;
  bool any = false, descriptor_a = false;
  std::set<const ir::Operation*> counted;
  ir::walk(const_cast<ir::Function&>(g).body, [&](ir::Operation& op) {
    if (op.smem) total = std::max(total, op.smem->offset + op.smem->bytes);
    if (op.op != Op::for_ || op.i1 != ir::kAsyncDotStage) return;
    for (auto& x : op.regions[0]->ops) {
      if (x->op == Op::dot && x->i1 == ir::kAsyncDot) {
        any = true;
        descriptor_a |= gpu::match_descriptor_operand(x->operands[0], 0).has_value();
      }
      const ir::Operation* alloc = x->op == Op::shared_load ? x->operands[0]->def : nullptr;
      if (alloc && alloc->op == Op::shared_alloc && alloc->smem && alloc->result()->type.stages > 1 &&
          counted.insert(alloc).second)
        more += alloc->smem->bytes / alloc->result()->type.stages;
    }
  });
  if (!any || descriptor_a) return std::nullopt;
  const int64_t limit = caps.shared_bytes_per_program;
  return AsyncStageCostsOccupancy{programs_a_multiprocessor(total, limit, threads),
                                  programs_a_multiprocessor(total - more, limit, threads)};
}

// The error of a program that does not fit at any stage count: the allocator's, with the
// loop it overflows in, the buffers live there and the loops already planned with fewer
// stages, each at the user's line.
[[noreturn]] void throw_overflow(const gpu::SharedMemoryOverflow& o, const std::vector<std::string>& given_up) {
  std::vector<std::string> notes;
  for (const ir::Operation* p = o.at->parent ? o.at->parent->parent : nullptr; p;
       p = p->parent ? p->parent->parent : nullptr)
    if (p->op == Op::for_ || p->op == Op::while_) {
      notes.push_back(fmt::format("in the loop at {}", ir::short_location(p->loc)));
      break;
    }
  std::vector<std::string> live;
  for (const ir::Operation* a : o.live)
    if (a != o.at) live.push_back(fmt::format("{} at {}", a->result()->type.str(), ir::short_location(a->loc)));
  if (!live.empty()) notes.push_back(fmt::format("live there: {}", fmt::join(live, ", ")));
  if (!given_up.empty())
    notes.push_back(fmt::format("already planned with fewer pipeline stages: {}", fmt::join(given_up, ", ")));
  std::string msg = o.message;
  if (!notes.empty()) msg += fmt::format(" ({})", fmt::join(notes, "; "));
  throw compile_error(msg, o.at->loc.file, o.at->loc.line);
}

// Every pass: the target-independent ones in place on `f`, and on a GPU the middle end on a
// copy, which it returns (null on the CPU, where `f` is the program). Where the plan does
// not fit the target's shared memory (the allocator's answer, SharedMemoryOverflow), the
// pipeliner runs again on the program as it was before it, the loop whose buffers hold
// the most bytes where the program overflows given a stage fewer (first the stage more an
// asynchronous dot got), and the passes after it; each step is a remark (issue 39: fewer
// stages planned rather than a failed compile). Where no pipelined loop's buffers are live
// there, the overflow is a compile error at its line. On NVIDIA, the stage more for
// asynchronous dots reading A from registers is given up the same way where it costs
// programs a multiprocessor.
std::unique_ptr<ir::Function> plan_program(ir::Function& f, const TargetDesc& target, const CompileOptions& opts,
                                           std::vector<std::string>& remarks, std::vector<int>& paths) {
  {
    PhaseTimer t(kPhaseTilePasses);
    run_passes_before_pipelining(f, target, opts);
  }
  std::vector<passes::StagedLoop> staged;
  if (target.kind == TargetDesc::cpu) {
    PhaseTimer t(kPhaseTilePasses);
    run_pipelining(f, target, opts, PlanLimits{}, remarks, staged);
    return nullptr;
  }
  // The program before the pipeliner, where it may pipeline a loop (what a plan that did
  // not fit is made again from).
  bool pipelines = false;
  ir::walk(f.body, [&](ir::Operation& op) { pipelines |= op.op == Op::for_ && (op.i0 > 1 || opts.num_stages > 1); });
  std::unique_ptr<ir::Function> before_pipelining = pipelines ? ir::clone_function(f) : nullptr;
  PlanLimits limits;
  std::vector<std::string> steps, given_up;
  ir::Function* attempt = &f;
  std::unique_ptr<ir::Function> again;
  for (;;) {
    std::vector<std::string> r;
    staged.clear();
    {
      PhaseTimer t(kPhaseTilePasses);
      run_pipelining(*attempt, target, opts, limits, r, staged);
    }
    PhaseTimer t(kPhaseGpuPlanning);
    ir::ValueMap copied;
    std::optional<gpu::SharedMemoryOverflow> overflow;
    std::unique_ptr<ir::Function> planned = run_gpu_passes(*attempt, target, opts, r, paths, copied, overflow);
    if (!overflow) {
      std::optional<AsyncStageCostsOccupancy> o;
      if (target.kind == TargetDesc::nvptx && opts.async_dot_stages && limits.async_dot_stages)
        o = register_a_async_stages(*planned, capabilities_for(target), opts.num_warps * 32);
      if (!o || o->with >= o->without || !before_pipelining) {
        remarks.insert(remarks.end(), r.begin(), r.end());
        remarks.insert(remarks.end(), steps.begin(), steps.end());
        return planned;
      }
      steps.push_back(fmt::format("pipelined: the stage more for asynchronous dots reading A from registers would "
                                  "leave {} program{} a multiprocessor where {} fit without it: planned again "
                                  "without it, those dots waited for at once",
                                  o->with, o->with == 1 ? "" : "s", o->without));
      limits.async_dot_stages = false;
    } else {
      // The loop whose buffers hold the most bytes where the program overflows.
      const passes::StagedLoop* loop = nullptr;
      int64_t most = 0;
      for (const passes::StagedLoop& l : staged) {
        int64_t bytes = 0;
        for (const ir::Operation* a : l.allocs) {
          const ir::Operation* c = copied.lookup(a->result())->def;
          if (std::find(overflow->live.begin(), overflow->live.end(), c) != overflow->live.end())
            bytes += gpu::buffer_bytes(*c);
        }
        if (bytes > most) most = bytes, loop = &l;
      }
      if (!loop || !before_pipelining) throw_overflow(*overflow, given_up);
      passes::PipelineOptions::LoopLimit& limit = limits.loops[loop->number];
      const std::string at = ir::short_location(loop->loc);
      if (loop->buffers > loop->stages) {
        limit.async_dot_stage = false;
        steps.push_back(fmt::format("pipelined: loop at {}: the buffer more for its asynchronous dot did not fit the "
                                    "target's shared memory ({}): planned again without it, its dot waited for at once",
                                    at, overflow->message));
      } else {
        limit.max_stages = loop->stages - 1;
        steps.push_back(fmt::format("pipelined: loop at {}: {} stages did not fit the target's shared memory ({}): "
                                    "planned again with {}",
                                    at, loop->stages, overflow->message, loop->stages - 1));
        given_up.push_back(fmt::format("the loop at {} at {} stage{}", at, loop->stages - 1, loop->stages == 2 ? "" : "s"));
      }
    }
    again = ir::clone_function(*before_pipelining);
    attempt = again.get();
  }
}

}  // namespace

std::unique_ptr<ir::Function> planned_program(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  std::vector<std::string> remarks;
  std::vector<int> paths;
  std::unique_ptr<ir::Function> planned = plan_program(f, target, opts, remarks, paths);
  return planned ? std::move(planned) : ir::clone_function(f);
}

namespace {

// The first half of every compile, in process (compile) and for the worker
// (lower_to_bitcode) alike: the program planned (its tile IR and remarks into `out`) and
// lowered into `module`. LLVM's error diagnostics become a compile_error naming the
// kernel, instead of LLVM's default: print them and exit the process
// (codegen/diagnostics.hpp). Returns the target that lowered it, which emits it.
std::unique_ptr<Target> plan_and_lower(ir::Function& f, const TargetDesc& target, const CompileOptions& opts,
                                       llvm::Module& module, CodeObject& out, std::vector<int>& paths) {
  std::unique_ptr<ir::Function> planned = plan_program(f, target, opts, out.remarks, paths);
  ir::Function& lowered = planned ? *planned : f;
  out.tile_ir = lowered.str();
  auto backend = make_target(target);
  with_llvm_diagnostics(module.getContext(), f.name, f.loc, [&] {
    PhaseTimer t(kPhaseLowering);
    backend->lower(lowered, module, opts);
    dump("lowering", module);
  });
  return backend;
}

// The layout conversions that remain, by path: what the GPU planning could not avoid.
void report_conversion_paths(const std::vector<int>& paths, std::map<std::string, int64_t>& report) {
  if (paths.empty()) return;
  for (auto p : {ir::ConvertPath::registers, ir::ConvertPath::warp_shuffle, ir::ConvertPath::shared})
    report[fmt::format("conversions_{}", ir::convert_path_name(p))] = paths[size_t(p)];
}

}  // namespace

CodeObject compile(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  auto start = std::chrono::steady_clock::now();
  PhaseProfile profile;
  std::vector<int> paths;
  CodeObject out;
  llvm::LLVMContext context;
  llvm::Module module(f.name, context);
  auto backend = plan_and_lower(f, target, opts, module, out, paths);
  // LLVM optimization and code emission (the targets time their middle end, code
  // generation and link).
  with_llvm_diagnostics(context, f.name, f.loc, [&] { backend->emit(module, opts, out); });
  report_conversion_paths(paths, out.report);
  dump("LLVM optimization", module);
  out.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  out.phase_ms = profile.times();  // (the plans that did not fit included)
  return out;
}

namespace {

// LLVM names a value whose name is taken by appending a number from a counter of its
// function's symbol table, which counts every such clash in the function's life, those of
// values the lowering made and dropped too. A module read back from bitcode starts the
// counter at 0, so that the middle end would number the names it makes ("%.not7",
// "%.reass256") otherwise than in process: the same code (names do not reach it), another
// LLVM IR text in the cache entry. The counter is read by one clash of a probe block (the
// module is not used after), and wound forward in the worker by as many.
constexpr const char* kNameProbe = "tl.name.probe";

std::vector<std::pair<std::string, unsigned>> name_counters(llvm::Module& m) {
  std::vector<std::pair<std::string, unsigned>> counters;
  for (llvm::Function& fn : m) {
    if (fn.isDeclaration()) continue;
    llvm::BasicBlock* a = llvm::BasicBlock::Create(m.getContext(), kNameProbe, &fn);
    llvm::BasicBlock* b = llvm::BasicBlock::Create(m.getContext(), kNameProbe, &fn);
    const unsigned clash = unsigned(std::stoul(b->getName().substr(std::strlen(kNameProbe)).str()));
    counters.emplace_back(fn.getName().str(), clash - 1);
    b->eraseFromParent();
    a->eraseFromParent();
  }
  return counters;
}

void wind_name_counters(llvm::Module& m, const std::vector<std::pair<std::string, unsigned>>& counters) {
  for (const auto& [name, count] : counters) {
    llvm::Function* fn = m.getFunction(name);
    if (!fn || count == 0) continue;
    std::vector<llvm::BasicBlock*> probes;
    for (unsigned i = 0; i <= count; ++i) probes.push_back(llvm::BasicBlock::Create(m.getContext(), kNameProbe, fn));
    for (llvm::BasicBlock* b : probes) b->eraseFromParent();
  }
}

}  // namespace

LoweredKernel lower_to_bitcode(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  PhaseProfile profile;
  LoweredKernel out;
  std::vector<int> paths;
  llvm::LLVMContext context;
  llvm::Module module(f.name, context);
  auto backend = plan_and_lower(f, target, opts, module, out.partial, paths);
  {
    PhaseTimer t(kPhaseLowering);  // (the bitcode's writing is the lowering's last step)
    llvm::raw_string_ostream os(out.bitcode);
    llvm::WriteBitcodeToFile(module, os, /*ShouldPreserveUseListOrder=*/true);
    out.name_counters = name_counters(module);
  }
  out.module_name = module.getModuleIdentifier();
  out.state = backend->lowering_state();
  report_conversion_paths(paths, out.partial.report);
  out.phases = profile.times();
  return out;
}

CodeObject emit_bitcode(const TargetDesc& target, const CompileOptions& opts, const LoweredKernel& lowered,
                        const std::string& kernel, const ir::SrcLoc& where) {
  PhaseProfile profile;
  CodeObject out;
  auto backend = make_target(target);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  with_llvm_diagnostics(context, kernel, where, [&] {
    {
      // The middle end's first step: the module read back, and the target machine it is
      // emitted with (made here at a worker's first job for the target, as lower() makes
      // it in process).
      PhaseTimer t(kPhaseMiddleEnd);
      auto read = llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(llvm::StringRef(lowered.bitcode), lowered.module_name), context);
      if (!read) throw compile_error("the compile worker cannot read the kernel's bitcode: " + llvm::toString(read.takeError()));
      module = std::move(*read);
      wind_name_counters(*module, lowered.name_counters);
      backend->restore_lowering_state(lowered.state, opts);
    }
    backend->emit(*module, opts, out);
  });
  dump("LLVM optimization", *module);
  out.phase_ms = profile.times();
  return out;
}

CodeObject join_halves(LoweredKernel lowered, CodeObject emitted, double compile_ms) {
  CodeObject out = std::move(emitted);
  out.tile_ir = std::move(lowered.partial.tile_ir);
  std::vector<std::string> remarks = std::move(lowered.partial.remarks);
  remarks.insert(remarks.end(), out.remarks.begin(), out.remarks.end());
  out.remarks = std::move(remarks);
  for (auto& [k, v] : lowered.partial.report) out.report[k] = v;
  PhaseTimes phases = std::move(lowered.phases);
  for (const auto& [phase, ms] : out.phase_ms) add_phase_time(phases, phase, ms);
  out.phase_ms = std::move(phases);
  out.compile_ms = compile_ms;
  return out;
}

}  // namespace tl::codegen

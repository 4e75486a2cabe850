// The machine schedule of an AMD kernel, chosen per kernel by compiling it more than one
// way (codegen/gpu/README.md, "Machine scheduling on AMD").
//
// LLVM's default GCN scheduler trades registers for latency as long as occupancy holds:
// below 64 VGPRs (8 waves a SIMD on gfx9) it freely hoists, e.g., the denormal range
// checks of every exp2 in a row above the first v_exp_f32, two extra VGPRs a value
// (softmax over 4096 f32 columns: 46 VGPRs, Triton 30). LLVM's register-minimizing
// schedulers ("amdgpu-sched-strategy" = "iterative-minreg", "iterative-maxocc") give
// most of that back, but minreg ignores latency and may wait for one global load before
// issuing the next. So each kernel is compiled with the default schedule, then with the
// alternatives in turn, and an alternative is kept only when it is strictly better on
// registers or occupancy, no worse on spills and occupancy, and overlaps memory as much
// as the default (memory_overlap below). Two threads: the first alternative is compiled
// on a second thread (a context and TargetMachine of its own, from bitcode) at once with
// the default, so a kernel whose choice stops there costs one code generation of wall
// time where a core is free; the second alternative follows only where needed. The code
// generation's LLVM IR passes, the same for every schedule, run once: each schedule's
// instruction selection and machine passes start from their result.
// No alternative is compared where the kernel does not spill, its registers are
// architectural VGPRs, and its LDS allows one workgroup a CU, which it has: no schedule
// can change its occupancy, and fewer VGPRs would change nothing at run time (tutorial
// 03's matmul: one code generation where it took three; schedule.cpp,
// alternatives_can_change).
// TL_AMDGPU_SCHEDULES=occupancy compiles the alternatives only where they can change
// the kernel's spills or occupancy (the default spills, or the VGPRs of one more wave a
// SIMD are within reach: schedule.cpp, alternatives_can_pay), then both at once; other
// kernels keep the default from one code generation (more VGPRs at the same occupancy,
// e.g. the softmax row above). "all" (the default) keeps every kernel's choice as it was.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace tl::amd {

// How much memory latency a listing can hide, read in program order (branches ignored:
// a static proxy, the same for every candidate): for the vector memory counter (global,
// buffer, flat and scratch loads) and the LDS/scalar one (LDS reads and permutes, scalar
// loads), the most loads outstanding at once and the number of s_waitcnt on it.
struct MemoryOverlap {
  int vm_in_flight = 0, vm_waits = 0;
  int lgkm_in_flight = 0, lgkm_waits = 0;
};
MemoryOverlap memory_overlap(const std::string& disassembly);
// True when `candidate` keeps at least as many loads in flight on both counters as
// `reference`, with no more waits.
bool overlaps_as_much(const MemoryOverlap& candidate, const MemoryOverlap& reference);

struct ScheduledObject {
  std::vector<uint8_t> object;  // relocatable ELF
  std::string strategy;         // "default" or the "amdgpu-sched-strategy" value it used
  // When a choice was made, for the compile report: "schedule: iterative-minreg (VGPRs:
  // default 46, iterative-maxocc 33, iterative-minreg 32; ...)".
  std::string remark;
};

// Emits `m` (already optimized) as a relocatable object for the kernel `kernel`, launched
// with `workgroup_size` work-items (waves of `wave_size`), with the best schedule by the rule
// above. `declared_lds_bytes`: the LDS the lowering allocated, which only orders the code
// generations (schedule.cpp, default_first). `strategy`: "" to choose, or one strategy to
// force ("default", "iterative-minreg", ...). Consumes m.
ScheduledObject emit_scheduled(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel,
                               int workgroup_size, int wave_size, int declared_lds_bytes,
                               const std::string& strategy);

}  // namespace tl::amd

// See schedule.hpp.
#include "codegen/amdgpu/schedule.hpp"

#include <fmt/format.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>

#include "codegen/amdgpu/code_object.hpp"
#include "tl/error.hpp"

namespace tl::amd {
namespace {

// The alternatives tried after the default, in order, each a code generation (about as
// long as the rest of a compile): the first that is allowed and better is kept.
// "iterative-minreg" schedules every region for the fewest live registers: the most
// registers saved (softmax_long 46 -> 32 VGPRs, layernorm_bwd, fp8_dequant), and its
// code generation is the fastest of the three; where it loses memory overlap (it may
// wait for one global load before issuing the next, or for one ds_read before the
// other), "iterative-maxocc", which reschedules the default's regions that stay above
// the registers of the best occupancy, keeps the loads together (cross_entropy 36 -> 28).
// "max-ilp", "max-memory-clause" and "iterative-ilp" were measured on the amd_quality
// suite too: more registers or less overlap wherever these two gain.
constexpr const char* kAlternatives[] = {"iterative-minreg", "iterative-maxocc"};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// The N of "name(N)" in an s_waitcnt's operands, if that counter is waited for.
std::optional<int> wait_count(const std::string& operands, const char* name) {
  size_t at = operands.find(std::string(name) + "(");
  if (at == std::string::npos) return std::nullopt;
  return std::atoi(operands.c_str() + at + std::string(name).size() + 1);
}

std::vector<uint8_t> emit_object(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw compile_error("the AMDGPU target cannot emit an object file");
  pm.run(m);
  return {buf.begin(), buf.end()};
}

struct Candidate {
  ScheduledObject scheduled;
  ResourceReport report;
  MemoryOverlap overlap;
};

Candidate evaluate(ScheduledObject s, int workgroup_size, const std::string& kernel) {
  Candidate c{std::move(s), {}, {}};
  c.report = read_report(c.scheduled.object, workgroup_size, kernel);
  c.overlap = memory_overlap(disassemble(c.scheduled.object));
  return c;
}

int spills(const ResourceReport& r) { return r.spill_vgpr + r.spill_sgpr + r.scratch_bytes; }

// Fewer spills, then more waves, then fewer registers: smaller is better.
auto rank(const ResourceReport& r) { return std::make_tuple(spills(r), -r.occupancy, r.vgpr + r.agpr); }

}  // namespace

MemoryOverlap memory_overlap(const std::string& disassembly) {
  MemoryOverlap o;
  int vm = 0, lgkm = 0;
  std::istringstream in(disassembly);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '\t') continue;  // instructions only: "\t<mnemonic> <operands> // ..."
    size_t end = line.find_first_of(" \t", 1);
    std::string op = line.substr(1, end == std::string::npos ? std::string::npos : end - 1);
    if (starts_with(op, "global_load") || starts_with(op, "buffer_load") || starts_with(op, "flat_load") ||
        starts_with(op, "scratch_load")) {
      o.vm_in_flight = std::max(o.vm_in_flight, ++vm);
    } else if (starts_with(op, "ds_read") || starts_with(op, "ds_bpermute") || starts_with(op, "ds_permute") ||
               starts_with(op, "ds_swizzle") || starts_with(op, "s_load") || starts_with(op, "s_buffer_load")) {
      o.lgkm_in_flight = std::max(o.lgkm_in_flight, ++lgkm);
    } else if (op == "s_waitcnt") {
      std::string operands = end == std::string::npos ? "" : line.substr(end, line.find("//") - end);
      if (auto n = wait_count(operands, "vmcnt")) {
        ++o.vm_waits;
        vm = std::min(vm, *n);
      }
      if (auto n = wait_count(operands, "lgkmcnt")) {
        ++o.lgkm_waits;
        lgkm = std::min(lgkm, *n);
      }
    }
  }
  return o;
}

bool overlaps_as_much(const MemoryOverlap& c, const MemoryOverlap& r) {
  return c.vm_in_flight >= r.vm_in_flight && c.vm_waits <= r.vm_waits && c.lgkm_in_flight >= r.lgkm_in_flight &&
         c.lgkm_waits <= r.lgkm_waits;
}

ScheduledObject emit_scheduled(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel,
                               int workgroup_size, const std::string& strategy) {
  auto with_strategy = [&](llvm::Module& mod, const std::string& s) {
    if (s == "default") return;
    llvm::Function* fn = mod.getFunction(kernel);
    if (!fn) throw compile_error("AMDGPU scheduling: no kernel '" + kernel + "' in the module");
    fn->addFnAttr("amdgpu-sched-strategy", s);
  };
  if (!strategy.empty()) {
    with_strategy(m, strategy);
    return {emit_object(m, tm), strategy};
  }
  // Code generation rewrites the IR it runs on: an alternative starts from a copy.
  auto copy = llvm::CloneModule(m);
  // A kernel with MFMAs starts with its accumulators in VGPRs ("amdgpu-agpr-alloc"="0":
  // AGPRs cost occupancy); where that spills, the same code with AGPRs allowed (LLVM
  // then gives the accumulators AGPRs, 256 more registers a lane) is tried too.
  llvm::Function* kfn = m.getFunction(kernel);
  std::unique_ptr<llvm::Module> agpr_copy;
  if (kfn && kfn->getFnAttribute("amdgpu-agpr-alloc").getValueAsString() == "0") agpr_copy = llvm::CloneModule(m);
  Candidate dflt = evaluate({emit_object(m, tm), "default"}, workgroup_size, kernel);
  Candidate best = dflt;
  std::string tried = fmt::format("default {}", dflt.report.vgpr);
  for (const char* alt : kAlternatives) {
    std::unique_ptr<llvm::Module> mod = std::move(copy);
    if (alt != kAlternatives[std::size(kAlternatives) - 1]) copy = llvm::CloneModule(*mod);
    with_strategy(*mod, alt);
    Candidate c = evaluate({emit_object(*mod, tm), alt}, workgroup_size, kernel);
    bool overlap = overlaps_as_much(c.overlap, dflt.overlap);
    tried += fmt::format(", {} {}{}", alt, c.report.vgpr, overlap ? "" : " (less memory overlap)");
    bool allowed =
        overlap && spills(c.report) <= spills(dflt.report) && c.report.occupancy >= dflt.report.occupancy;
    bool saves = rank(c.report) < rank(best.report);
    if (allowed && saves) best = std::move(c);
    // The register-minimal schedule tells what can be saved at all: the next
    // alternative is worth its code generation only when it found a saving that it
    // could not keep.
    if (allowed || !saves) break;
  }
  if (agpr_copy && spills(best.report) > 0) {
    agpr_copy->getFunction(kernel)->removeFnAttr("amdgpu-agpr-alloc");
    with_strategy(*agpr_copy, best.scheduled.strategy);
    Candidate c = evaluate({emit_object(*agpr_copy, tm), best.scheduled.strategy + "+agprs"}, workgroup_size, kernel);
    tried += fmt::format(", {}+agprs {} ({} spilled)", best.scheduled.strategy, c.report.vgpr,
                         spills(c.report));
    if (rank(c.report) < rank(best.report)) best = std::move(c);
  }
  // The figures are the code object's .vgpr_count, the report's "vgpr": on gfx90a and
  // later the unified count, AGPRs included (.agpr_count says how many of them).
  best.scheduled.remark = fmt::format("schedule: {} (VGPRs: {})", best.scheduled.strategy, tried);
  return std::move(best.scheduled);
}

}  // namespace tl::amd

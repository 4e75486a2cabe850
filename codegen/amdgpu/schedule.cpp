// See schedule.hpp.
#include "codegen/amdgpu/schedule.hpp"

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/MemoryBufferRef.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/diagnostics.hpp"
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

// A code generation is LLVM IR passes (address arithmetic, control flow structurization,
// code generation preparation: 15-30 % of the time of a tutorial 03 matmul or 06
// attention, and as long again for each alternative) and then instruction selection and
// the machine passes. Only the machine scheduler reads "amdgpu-sched-strategy", so the IR
// passes give every schedule the same IR: they run once, on the kernel's module, and
// every schedule's machine part starts from their result. A legacy pass manager that
// keeps the passes of one part: the pipeline's analyses (immutable passes) in both, the
// IR part up to the instruction selector, the machine part from it (with the call-graph
// pass that nests the machine passes in call-graph order, as in the whole pipeline). The
// IR part and then the machine part on one module make the whole pipeline's code, byte
// for byte.
enum class Part { whole, ir, machine };

class PartPassManager : public llvm::legacy::PassManager {
 public:
  explicit PartPassManager(Part part) : part_(part) {}
  void add(llvm::Pass* p) override {
    if (p->getPassName() == "AMDGPU DAG->DAG Pattern Instruction Selection") selector_seen_ = true;
    const bool keep = part_ == Part::whole || p->getAsImmutablePass() != nullptr ||
                      (part_ == Part::ir ? !selector_seen_ : selector_seen_ || p->getPassName() == "DummyCGSCCPass");
    if (keep)
      llvm::legacy::PassManager::add(p);
    else
      delete p;
  }
  // False where this LLVM's pipeline has no such instruction selector: the part is then
  // not what it says, and must not be run.
  bool split() const { return selector_seen_; }

 private:
  Part part_;
  bool selector_seen_ = false;
};

std::vector<uint8_t> emit_object(llvm::Module& m, llvm::TargetMachine& tm, Part part = Part::whole) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  PartPassManager pm(part);
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw compile_error("the AMDGPU target cannot emit an object file");
  if (part != Part::whole && !pm.split()) throw compile_error("AMDGPU code generation: no instruction selector to split at");
  pm.run(m);
  return {buf.begin(), buf.end()};
}

// TL_AMDGPU_REUSE_IR_PASSES=0: every schedule's code generation whole, each alternative
// from a copy of the module taken before the default's (as before the IR passes were
// shared; in the cache key). The same choice and VGPRs on the 225 AMD kernels of
// bench/compare_builds.sh; in 8 the kept alternative's code differs (up to 7
// instructions and 2 SGPRs), from its copy's use-list order
// (bench/results/compile-time-2026-11-28b).
bool reuse_ir_passes() {
  const char* v = std::getenv("TL_AMDGPU_REUSE_IR_PASSES");
  return !(v && std::string(v) == "0");
}

// Runs the IR part of `m`'s code generation and returns `m` as bitcode that reads back
// with the same use-list order (what instruction selection walks: a copy with another
// order can compile to other code), for the machine part of the alternatives.
llvm::SmallVector<char, 0> prepare_for_alternatives(llvm::Module& m, llvm::TargetMachine& tm) {
  emit_object(m, tm, Part::ir);
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream os(bitcode);
  llvm::WriteBitcodeToFile(m, os, /*ShouldPreserveUseListOrder=*/true);
  return bitcode;
}

// Emits the module in `bitcode` with the schedule `strategy` on the calling thread, in a
// context and with a TargetMachine of its own (LLVM allows neither to be used by two
// threads at once): `like`'s target, processor, features and options. `part`: whole, or
// machine where `bitcode` is prepare_for_alternatives' (`agprs`: with the accumulators'
// AGPRs allowed).
std::vector<uint8_t> emit_on_own_context(const llvm::SmallVector<char, 0>& bitcode, const llvm::TargetMachine& like,
                                         const std::string& kernel, const std::string& strategy, Part part,
                                         bool agprs = false) {
  llvm::LLVMContext ctx;
  auto mod = llvm::parseBitcodeFile(llvm::MemoryBufferRef(llvm::StringRef(bitcode.data(), bitcode.size()), kernel), ctx);
  if (!mod) throw compile_error("AMDGPU scheduling: cannot read the kernel's bitcode back: " + llvm::toString(mod.takeError()));
  std::unique_ptr<llvm::TargetMachine> tm(like.getTarget().createTargetMachine(
      like.getTargetTriple(), like.getTargetCPU(), like.getTargetFeatureString(), like.Options,
      like.getRelocationModel(), like.getCodeModel(), like.getOptLevel()));
  if (!tm) throw compile_error("AMDGPU scheduling: cannot create a second target machine");
  llvm::Function* fn = (*mod)->getFunction(kernel);
  if (!fn) throw compile_error("AMDGPU scheduling: no kernel '" + kernel + "' in the module");
  if (agprs) fn->removeFnAttr("amdgpu-agpr-alloc");
  if (strategy != "default") fn->addFnAttr("amdgpu-sched-strategy", strategy);
  // LLVM's errors in this context (an inline assembly the assembler refuses) become a
  // compile_error as on the calling thread, not LLVM's default: print and exit the process.
  std::vector<uint8_t> object;
  codegen::with_llvm_diagnostics(ctx, kernel, ir::SrcLoc{}, [&] { object = emit_object(**mod, *tm, part); });
  return object;
}

// TL_AMDGPU_SCHEDULES: "all" (the default) compiles the alternatives for every kernel,
// "occupancy" only where they can change its spills or occupancy (alternatives_can_pay).
std::string schedules_mode() {
  const char* v = std::getenv("TL_AMDGPU_SCHEDULES");
  std::string mode = v && *v ? v : "all";
  if (mode != "all" && mode != "occupancy")
    throw compile_error("TL_AMDGPU_SCHEDULES must be 'all' or 'occupancy', not '" + mode + "'");
  return mode;
}

// ThreadSanitizer refuses a thread started in a child forked from a multi-threaded
// process (die_after_fork), which a compile worker is (codegen/compile_worker.hpp).
#if defined(__SANITIZE_THREAD__)
constexpr bool kSecondThread = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kSecondThread = false;
#else
constexpr bool kSecondThread = true;
#endif
#else
constexpr bool kSecondThread = true;
#endif

// Runs `here` on this thread while a second thread emits `bitcode` with `strategy`
// (emit_on_own_context); returns that object once both are done, or rethrows the
// first failure. (Under ThreadSanitizer one after the other: the same code.)
template <class F>
std::vector<uint8_t> beside(const llvm::SmallVector<char, 0>& bitcode, const llvm::TargetMachine& tm,
                            const std::string& kernel, const char* strategy, Part part, F&& here) {
  if (!kSecondThread) {
    here();
    return emit_on_own_context(bitcode, tm, kernel, strategy, part);
  }
  std::vector<uint8_t> object;
  std::exception_ptr error;
  std::thread other([&] {
    try {
      object = emit_on_own_context(bitcode, tm, kernel, strategy, part);
    } catch (...) {
      error = std::current_exception();
    }
  });
  try {
    here();
  } catch (...) {
    other.join();
    throw;
  }
  other.join();
  if (error) std::rethrow_exception(error);
  return object;
}

struct Candidate {
  ScheduledObject scheduled;
  ResourceReport report;
  MemoryOverlap overlap;
};

// The report, and the memory overlap where candidates are compared (a disassembly).
Candidate evaluate(ScheduledObject s, int workgroup_size, const std::string& kernel, bool with_overlap) {
  Candidate c{std::move(s), {}, {}};
  c.report = read_report(c.scheduled.object, workgroup_size, kernel);
  if (with_overlap) c.overlap = memory_overlap(disassemble(c.scheduled.object));
  return c;
}

int spills(const ResourceReport& r) { return r.spill_vgpr + r.spill_sgpr + r.scratch_bytes; }

// Fewer spills, then more waves, then fewer registers: smaller is better.
auto rank(const ResourceReport& r) { return std::make_tuple(spills(r), -r.occupancy, r.vgpr + r.agpr); }

// The most VGPRs, as a share of the default's, that a kept alternative is expected to
// save below 8 waves. On the 216 kernels of bench/compare_builds.sh (2026-11-28), the
// alternatives kept under 8 waves saved at most 11 % (a 128x128x128 GEMM on gfx90a,
// 366 -> 324); larger savings (up to 28 %) lost memory overlap and were refused. At 8
// waves they saved up to 65 %, which no occupancy can use.
constexpr double kReach = 0.2;

// Whether an alternative schedule can change what the kernel gets at run time: its
// spills, or its waves a SIMD (the VGPRs of the next step up within kReach of the
// default's, and no LDS or workgroup limit holding the waves where they are). Elsewhere
// an alternative could only save registers at the same occupancy, not worth a code
// generation (each as long as the rest of the compile): a kernel at 8 waves, or one held
// by its LDS (tutorial 03's matmul: 1 workgroup a CU whatever its VGPRs), keeps the
// default schedule. Used with TL_AMDGPU_SCHEDULES=occupancy; "all" compiles the
// alternatives everywhere (fewer VGPRs at equal occupancy: softmax_long 46 -> 32).
bool alternatives_can_pay(const ResourceReport& r, const std::string& arch, std::string* why) {
  // Occupancy 0: a processor without known limits, or a kernel that cannot be resident.
  if (spills(r) > 0 || r.occupancy == 0) return true;
  const int used = std::max(r.vgpr, r.vgpr_allocated);
  const int floor = std::max(1, int(used * (1.0 - kReach)));
  for (int v = used - 1; v >= floor; --v)
    if (occupancy(arch, v, 0, r.lds_bytes, r.waves_per_workgroup) > r.occupancy) return true;
  *why = fmt::format("no spills, and {} VGPRs would still give {} waves a SIMD", floor, r.occupancy);
  return false;
}

// Whether the LDS `lds_bytes` allows only one workgroup of `waves_per_workgroup` waves a
// CU, whatever the registers (4 SIMDs a CU on every processor occupancy() knows). False
// for a processor it does not know.
bool lds_allows_one_workgroup(const std::string& arch, int lds_bytes, int waves_per_workgroup) {
  if (lds_bytes <= 0 || waves_per_workgroup < 1) return false;
  try {
    return occupancy(arch, 1, 0, lds_bytes, waves_per_workgroup) == (waves_per_workgroup + 3) / 4;
  } catch (const compile_error&) {  // no limits known for this processor
    return false;
  }
}

// The registers of a lane that are architectural VGPRs on gfx90a and later; past them a
// kernel's unified count is AGPRs, which only MFMAs and memory instructions read
// directly (other uses copy them with v_accvgpr_read/write).
constexpr int kArchitecturalVgprs = 256;

// Whether an alternative schedule is worth comparing once the default's report is known
// (TL_AMDGPU_SCHEDULES=all): not where the kernel does not spill, its LDS allows one
// workgroup a CU, which it has, and its registers are architectural VGPRs. The LDS is the
// same whatever the schedule, so no schedule can raise that occupancy, and below 256 the
// VGPR count matters through the occupancy only: an alternative would be kept for a
// count no limit reads. (Above 256, fewer registers are fewer AGPRs and their copies:
// the 128x128x128 GEMM on gfx90a keeps iterative-minreg, 366 -> 324.) These are the large
// matrix tiles, whose alternatives cost the most: tutorial 03's matmul (64 KiB of LDS on
// gfx942, 96 KiB on gfx950) made three code generations and kept the default, as every
// such kernel of bench/compare_builds.sh did. Where the LDS allows several workgroups
// the alternatives are still compared, though none can raise the occupancy past the LDS's
// there either: one was kept for 6 VGPRs fewer at the same occupancy (the 64x64x32 matmul
// on gfx950, 50 -> 44 at 6 waves), and the VGPR records of bench/amd_quality hold such
// savings.
bool alternatives_can_change(const ResourceReport& r, const std::string& arch, std::string* why) {
  if (spills(r) > 0 || r.occupancy == 0 || r.vgpr > kArchitecturalVgprs) return true;
  if (!lds_allows_one_workgroup(arch, r.lds_bytes, r.waves_per_workgroup)) return true;
  if (r.occupancy < (r.waves_per_workgroup + 3) / 4) return true;
  *why = fmt::format("no spills, its {} VGPRs architectural, and its {} bytes of LDS allow one workgroup a CU, "
                     "which it has",
                     r.vgpr, r.lds_bytes);
  return false;
}

// Where the LDS the lowering allocated allows one workgroup a CU, alternatives_can_change
// is likely to refuse the alternatives once the default is compiled (unless it spills or
// its registers pass the architectural VGPRs): the default is then code-generated
// alone first, and the alternatives (minreg and maxocc at once) only where its report
// says they can change something. Elsewhere minreg is made at once with the default, as
// the default alone first would cost a code generation's wall time more where the
// alternatives are compared. (The order only: the choice is the same either way.)
bool default_first(const std::string& arch, int declared_lds_bytes, int waves_per_workgroup) {
  return lds_allows_one_workgroup(arch, declared_lds_bytes, waves_per_workgroup);
}

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
                               int workgroup_size, int wave_size, int declared_lds_bytes,
                               const std::string& strategy) {
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
  // The IR part of the code generation once, then the default's machine part on `m` and
  // each alternative's on a copy of the IR part's result (reuse_ir_passes). Without it,
  // each is whole: code generation rewrites the IR it runs on, so an alternative starts
  // from a copy taken before the default's (cloned again for each alternative made on
  // this thread; as bitcode for the one made on a second thread).
  const bool reuse = reuse_ir_passes();
  const Part rest = reuse ? Part::machine : Part::whole;
  std::unique_ptr<llvm::Module> pristine;
  llvm::SmallVector<char, 0> bitcode;
  if (reuse) {
    bitcode = prepare_for_alternatives(m, tm);
  } else {
    pristine = llvm::CloneModule(m);
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*pristine, os);
  }
  // A kernel with MFMAs starts with its accumulators in VGPRs ("amdgpu-agpr-alloc"="0":
  // AGPRs cost occupancy); where that spills, the same code with AGPRs allowed (LLVM
  // then gives the accumulators AGPRs, 256 more registers a lane) is tried too.
  llvm::Function* kfn = m.getFunction(kernel);
  const bool agprs_held = kfn && kfn->getFnAttribute("amdgpu-agpr-alloc").getValueAsString() == "0";
  auto alternative_here = [&](const char* alt) {
    if (reuse)
      return evaluate({emit_on_own_context(bitcode, tm, kernel, alt, Part::machine), alt}, workgroup_size, kernel,
                      /*with_overlap=*/true);
    std::unique_ptr<llvm::Module> mod = llvm::CloneModule(*pristine);
    with_strategy(*mod, alt);
    return evaluate({emit_object(*mod, tm), alt}, workgroup_size, kernel, /*with_overlap=*/true);
  };
  // The first alternative (iterative-minreg) on a second thread, beside what this thread
  // does: the default (TL_AMDGPU_SCHEDULES=all, unless default_first), or the second
  // alternative (once the default's report says the alternatives can change something:
  // alternatives_can_change, or with TL_AMDGPU_SCHEDULES=occupancy alternatives_can_pay).
  std::optional<Candidate> dflt, first, second;
  const bool every_kernel = schedules_mode() == "all";
  const std::string arch = tm.getTargetCPU().str();
  std::string skipped;
  auto keep_default = [&](const char* what) {
    dflt->scheduled.remark =
        fmt::format("schedule: default (VGPRs: default {}; {}: {})", dflt->report.vgpr, what, skipped);
    return std::move(dflt->scheduled);
  };
  if (every_kernel && !default_first(arch, declared_lds_bytes, (workgroup_size + wave_size - 1) / wave_size)) {
    std::vector<uint8_t> object = beside(bitcode, tm, kernel, kAlternatives[0], rest, [&] {
      dflt = evaluate({emit_object(m, tm, rest), "default"}, workgroup_size, kernel, /*with_overlap=*/true);
    });
    if (!alternatives_can_change(dflt->report, arch, &skipped)) return keep_default("no alternative compared");
    first = evaluate({std::move(object), kAlternatives[0]}, workgroup_size, kernel, /*with_overlap=*/true);
  } else {
    dflt = evaluate({emit_object(m, tm, rest), "default"}, workgroup_size, kernel, /*with_overlap=*/false);
    if (every_kernel ? !alternatives_can_change(dflt->report, arch, &skipped)
                     : !alternatives_can_pay(dflt->report, arch, &skipped))
      return keep_default("no alternative compiled");
    dflt->overlap = memory_overlap(disassemble(dflt->scheduled.object));
    std::vector<uint8_t> object = beside(bitcode, tm, kernel, kAlternatives[0], rest,
                                         [&] { second = alternative_here(kAlternatives[1]); });
    first = evaluate({std::move(object), kAlternatives[0]}, workgroup_size, kernel, /*with_overlap=*/true);
  }
  Candidate best = *dflt;
  std::string tried = fmt::format("default {}", dflt->report.vgpr);
  static_assert(std::size(kAlternatives) == 2);
  for (const char* alt : kAlternatives) {
    Candidate c = alt == kAlternatives[0] ? std::move(*first) : second ? std::move(*second) : alternative_here(alt);
    bool overlap = overlaps_as_much(c.overlap, dflt->overlap);
    tried += fmt::format(", {} {}{}", alt, c.report.vgpr, overlap ? "" : " (less memory overlap)");
    bool allowed =
        overlap && spills(c.report) <= spills(dflt->report) && c.report.occupancy >= dflt->report.occupancy;
    bool saves = rank(c.report) < rank(best.report);
    const bool past_architectural =
        spills(dflt->report) == 0 && spills(c.report) == 0 && c.report.vgpr > kArchitecturalVgprs;
    if (allowed && saves) best = std::move(c);
    // The register-minimal schedule tells what can be saved at all: the next
    // alternative is worth its code generation only when it found a saving that it
    // could not keep,
    if (allowed || !saves) break;
    // and not where that saving still left the kernel past the architectural VGPRs at
    // one wave, with no spill on either side: iterative-maxocc raises the occupancy
    // only by taking the register-minimal schedule of the regions that reach the next
    // step (LLVM's GCNIterativeScheduler::tryMaximizeOccupancy), which minreg just
    // showed does not; all it could still save is AGPR copies at the same wave. Not a
    // proof (the pressure LLVM tracks is not the count the allocator ends with), a
    // measured rule: of the 225 AMD kernels of bench/compare_builds.sh it applies to
    // three (the attention forward 128x64 D=128 w4 on gfx90a and gfx942, the
    // 128x128x128 GEMM on gfx942), where maxocc was never kept (refused for less memory
    // overlap, or no fewer VGPRs), and their code is unchanged
    // (bench/results/compile-time-2026-11-29). Where maxocc was made at once with minreg
    // (default_first) its result is set aside by the same rule, so that the choice does
    // not depend on the order. Tutorial 06's attention on gfx942 (default 284, minreg
    // 258): two code generations, not three.
    if (alt == kAlternatives[0] && past_architectural) {
      tried += fmt::format(", {} not compared (minreg past {} VGPRs)", kAlternatives[1], kArchitecturalVgprs);
      break;
    }
  }
  if (agprs_held && spills(best.report) > 0) {
    std::vector<uint8_t> object;
    if (reuse) {
      object = emit_on_own_context(bitcode, tm, kernel, best.scheduled.strategy, Part::machine, /*agprs=*/true);
    } else {
      std::unique_ptr<llvm::Module> agpr_copy = std::move(pristine);
      agpr_copy->getFunction(kernel)->removeFnAttr("amdgpu-agpr-alloc");
      with_strategy(*agpr_copy, best.scheduled.strategy);
      object = emit_object(*agpr_copy, tm);
    }
    Candidate c = evaluate({std::move(object), best.scheduled.strategy + "+agprs"}, workgroup_size, kernel,
                           /*with_overlap=*/false);
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

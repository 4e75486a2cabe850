// The host CPU target: lowering into the CPU kernel ABI, LLVM's O3 pipeline for the
// host's ISA, and a relocatable ELF object that runtime/cpu_device.cpp links in-process.
//
// The CPU kernel ABI (one call runs one program):
//   void @tl_<name>(ptr %args, i32 %pid_x, i32 %pid_y, i32 %pid_z,
//                   i32 %nprog_x, i32 %nprog_y, i32 %nprog_z, ptr %ctx)
// %args points at one 8-byte slot per kernel argument (runtime::ArgSlots); %ctx is the
// launch's runtime context, passed back to tl_cpu_fault / tl_cpu_print / tl_cpu_check.
#include <fmt/format.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "codegen/compile_profile.hpp"
#include "codegen/cpu/limits.hpp"
#include "codegen/cpu/lower.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace tl::codegen {
namespace {

void init_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

std::string host_features() {
  std::string s;
  for (auto& f : llvm::sys::getHostCPUFeatures()) s += fmt::format("{}{}{}", s.empty() ? "" : ",", f.second ? '+' : '-', f.first().str());
  return s;
}

llvm::CodeGenOptLevel codegen_level(int opt) {
  switch (opt) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

class CpuTarget final : public Target {
 public:
  explicit CpuTarget(const TargetDesc& d) : desc_(d) {
    init_native_target();
    // An unspecified feature list means "this machine's" when compiling for this machine.
    features_ = !desc_.features.empty() ? desc_.features
                : desc_.arch == llvm::sys::getHostCPUName() ? host_features() : std::string();
  }

  const TargetDesc& desc() const override { return desc_; }

  void lower(const ir::Function& f, llvm::Module& m, const CompileOptions& opts) override {
    llvm::TargetMachine& tm = machine(opts.opt_level);
    m.setTargetTriple(tm.getTargetTriple());
    m.setDataLayout(tm.createDataLayout());
    symbol_ = cpu::kernel_symbol(f.name);
    kernel_ = f.name;
    kernel_loc_ = f.loc;
    cpu::Lowerer lowerer(f, m, opts, symbol_, features_);
    lowerer.run();
    llvm::Function* fn = lowerer.function();
    fn->addFnAttr("target-cpu", desc_.arch);
    if (!features_.empty()) fn->addFnAttr("target-features", features_);
  }

  void emit(llvm::Module& m, const CompileOptions& opts, CodeObject& out) override {
    llvm::TargetMachine& tm = machine(opts.opt_level);
    std::string problems;
    llvm::raw_string_ostream vos(problems);
    if (llvm::verifyModule(m, &vos))
      throw compile_error("tl cpu: the lowering produced invalid LLVM IR (a tl bug):\n" + problems);

    {
      PhaseTimer t(kPhaseMiddleEnd);
      optimize(m, tm, opts.opt_level);
    }
    out.report["stack_bytes"] = int64_t(frame_bytes(m));
    check_frame(m);
    {
      llvm::raw_string_ostream os(out.llvm_ir);
      m.print(os, nullptr);
    }
    llvm::SmallVector<char, 0> object;
    llvm::raw_svector_ostream os(object);
    {
      // (The object is linked by the JIT as the device loads it, outside the compile.)
      PhaseTimer t(kPhaseCodegen);
      llvm::legacy::PassManager pm;
      if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
        throw compile_error("tl cpu: LLVM cannot emit an object file for " + desc_.arch);
      pm.run(m);
    }
    out.binary.assign(object.begin(), object.end());
    out.format = "elf";
    out.kernel_symbol = symbol_;
    out.block_threads = 1;
    out.shared_bytes = 0;
    out.report["shared_bytes"] = 0;
  }

 private:
  // The tiles the kernel keeps on its stack: its static allocas, all in the entry
  // block (cpu::Lowerer puts them there). The device runs a kernel on the launching
  // thread only when this fits its stack with room to spare (runtime/cpu_device.cpp).
  uint64_t frame_bytes(const llvm::Module& m) const {
    const llvm::Function* fn = m.getFunction(symbol_);
    if (!fn || fn->empty()) return 0;
    uint64_t bytes = 0;
    const llvm::DataLayout& dl = m.getDataLayout();
    for (const llvm::Instruction& inst : fn->getEntryBlock())
      if (auto* a = llvm::dyn_cast<llvm::AllocaInst>(&inst))
        if (auto size = a->getAllocationSize(dl)) bytes += size->getFixedValue() + a->getAlign().value();
    return bytes;
  }

  // Refuses a kernel whose frame is over what a program may take of the stack it runs on
  // (codegen/cpu/limits.hpp), naming the lines of its largest buffers: run, it would
  // overflow that stack and take the process down. The frame is the sum of the buffers
  // that are left after optimization: an upper bound of what the code generator lays out.
  void check_frame(const llvm::Module& m) const {
    const uint64_t total = frame_bytes(m);
    if (total <= uint64_t(cpu::kProgramStackBytes)) return;
    // The buffers by the line of the op each is for (the lowering's metadata), largest first.
    struct Line {
      std::string file;
      unsigned line;
      uint64_t bytes = 0;
      int buffers = 0;
    };
    std::vector<Line> lines;
    const llvm::DataLayout& dl = m.getDataLayout();
    for (const llvm::Instruction& inst : m.getFunction(symbol_)->getEntryBlock()) {
      auto* a = llvm::dyn_cast<llvm::AllocaInst>(&inst);
      auto size = a ? a->getAllocationSize(dl) : std::nullopt;
      if (!size) continue;
      std::string file = kernel_loc_.file;
      unsigned line = kernel_loc_.line;
      if (const llvm::MDNode* md = a->getMetadata(cpu::kLocMetadata); md && md->getNumOperands() == 2) {
        if (auto* f = llvm::dyn_cast<llvm::MDString>(md->getOperand(0))) file = f->getString().str();
        if (auto* l = llvm::mdconst::dyn_extract<llvm::ConstantInt>(md->getOperand(1))) line = unsigned(l->getZExtValue());
      }
      auto it = std::find_if(lines.begin(), lines.end(), [&](const Line& x) { return x.line == line && x.file == file; });
      if (it == lines.end()) it = lines.insert(lines.end(), Line{file, line});
      it->bytes += size->getFixedValue();
      it->buffers += 1;
    }
    std::stable_sort(lines.begin(), lines.end(), [](const Line& x, const Line& y) { return x.bytes > y.bytes; });
    std::string listed;
    for (size_t i = 0; i < lines.size() && i < 4; ++i)
      listed += fmt::format("{}{} bytes at line {}{}", listed.empty() ? "" : ", ", lines[i].bytes, lines[i].line,
                            lines[i].buffers > 1 ? fmt::format(" ({} tiles)", lines[i].buffers) : "");
    if (lines.size() > 4) listed += ", ...";
    const Line top = lines.empty() ? Line{kernel_loc_.file, kernel_loc_.line} : lines[0];
    throw compile_error(fmt::format("kernel '{}': a CPU program keeps its tiles and shared buffers on its stack, and "
                                    "this one needs {} bytes of them ({}), more than the {} ({} MiB) a program may "
                                    "use on the CPU; use smaller tiles, or split the work over more programs or a "
                                    "tl::range loop",
                                    kernel_, total, listed, cpu::kProgramStackBytes, cpu::kProgramStackBytes >> 20),
                        top.file, top.line);
  }

  llvm::TargetMachine& machine(int opt_level) {
    return codegen::thread_machine(fmt::format("{}|{}|{}", desc_.arch, features_, opt_level), [&] {
      llvm::Triple triple(llvm::sys::getProcessTriple());
      std::string error;
      const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
      if (!target) throw compile_error("tl cpu: no LLVM target for " + triple.str() + ": " + error);
      llvm::TargetOptions options;
      // PIC: the JIT linker places the object anywhere and reaches libm through its GOT.
      std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
          triple, desc_.arch, features_, options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
          codegen_level(opt_level)));
      if (!tm) throw compile_error("tl cpu: cannot create a target machine for " + desc_.arch);
      return tm;
    });
  }

  static void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = opt_level >= 2;
    pto.SLPVectorization = opt_level >= 2;
    llvm::PassBuilder pb(&tm, pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::ModulePassManager mpm;
    switch (opt_level) {
      case 0: mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0); break;
      case 1: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1); break;
      case 2: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2); break;
      default: mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3); break;
    }
    mpm.run(m, mam);
  }

  TargetDesc desc_;
  std::string features_;
  std::string symbol_;
  std::string kernel_;
  ir::SrcLoc kernel_loc_;
};

}  // namespace

std::unique_ptr<Target> make_cpu_target(const TargetDesc& d) { return std::make_unique<CpuTarget>(d); }

}  // namespace tl::codegen

// The AMDGPU target: tile IR -> LLVM (the shared GPU lowering with AMD hooks) -> O3 with
// the AMDGPU TargetMachine -> relocatable object -> HSACO (lld in-process, or comgr) ->
// the metadata report (registers, spills, LDS, occupancy).
//
// The linker (comgr where it lists the ISA, else lld) and the code object version are
// chosen in link_choice.cpp, from the environment and the installed comgr.
//
// The machine schedule is chosen per kernel among LLVM's GCN schedulers (schedule.hpp);
// TL_AMDGPU_SCHEDULE=default (or another "amdgpu-sched-strategy" value) forces one.
#include <fmt/format.h>
#include <llvm-c/Target.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <cstdlib>
#include <mutex>

#include "codegen/amdgpu/amdgpu_hooks.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/amdgpu/link_choice.hpp"
#include "codegen/amdgpu/schedule.hpp"
#include "codegen/compile_profile.hpp"
#include "codegen/gpu/lowering.hpp"
#include "codegen/gpu/optimize.hpp"
#include "tl/error.hpp"

namespace tl::amd {
namespace {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";

std::unique_ptr<llvm::TargetMachine> make_target_machine(const codegen::TargetDesc& d, int opt_level) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    // The object streamer assembles inline assembly (tl::inline_asm_elementwise) with it.
    LLVMInitializeAMDGPUAsmParser();
  });
  llvm::Triple triple(kTriple);
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t) throw compile_error("AMDGPU target is not available in this LLVM: " + err);
  llvm::TargetOptions options;
  auto level = opt_level <= 0 ? llvm::CodeGenOptLevel::None
               : opt_level == 1 ? llvm::CodeGenOptLevel::Less
               : opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      t->createTargetMachine(triple, d.arch, d.features, options, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw compile_error(fmt::format("cannot create an AMDGPU target machine for {}", d.str()));
  return tm;
}

class AmdgpuTarget final : public codegen::Target {
 public:
  explicit AmdgpuTarget(const codegen::TargetDesc& d) : desc_(d), hooks_(d) {
    if (d.wave_size != 64 && d.wave_size != 32) throw compile_error("AMDGPU wave size must be 32 or 64");
    link_ = choose_link(d.arch);
    if (const char* forced = std::getenv("TL_AMDGPU_SCHEDULE")) schedule_ = forced;
  }

  const codegen::TargetDesc& desc() const override { return desc_; }

  void lower(const ir::Function& f, llvm::Module& m, const codegen::CompileOptions& opts) override {
    tm_ = &machine(opts);
    m.setTargetTriple(llvm::Triple(kTriple));
    m.setDataLayout(tm_->createDataLayout());
    m.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", link_.code_object_version * 100);
    lowered_ = gpu::lower_kernel(f, m, opts, hooks_);
    gpu::verify_module(m, "AMDGPU lowering");
  }

  std::string lowering_state() const override { return gpu::lowering_result_json(lowered_); }
  void restore_lowering_state(const std::string& state, const codegen::CompileOptions& opts) override {
    tm_ = &machine(opts);
    lowered_ = gpu::lowering_result_from_json(state);
  }

  void emit(llvm::Module& m, const codegen::CompileOptions& opts, codegen::CodeObject& out) override {
    {
      codegen::PhaseTimer t(codegen::kPhaseMiddleEnd);
      gpu::optimize_module(m, *tm_, opts.opt_level);
    }
    out.llvm_ir = gpu::module_text(m);

    // The machine schedule is chosen per kernel (schedule.hpp); below -O2 the default.
    std::string strategy = opts.opt_level < 2 ? "default" : schedule_;
    std::optional<ScheduledObject> scheduled;
    {
      codegen::PhaseTimer t(codegen::kPhaseCodegen);  // (every schedule alternative compiled)
      scheduled = emit_scheduled(m, *tm_, lowered_.kernel_symbol, lowered_.block_threads, desc_.wave_size,
                                 lowered_.shared_bytes, strategy);
    }
    std::vector<uint8_t> object = std::move(scheduled->object);

    std::optional<std::vector<uint8_t>> hsaco;
    {
      codegen::PhaseTimer t(codegen::kPhaseLink);
      out.linker = "lld";
      out.linker_reason = link_.reason;
      if (link_.comgr) {
        std::string isa = std::string(kTriple) + "--" + desc_.arch;
        std::string log;
        hsaco = link_hsaco_with_comgr(object, isa, &log);
        if (!hsaco && link_.strict) throw compile_error("comgr could not link the AMDGPU object: " + log);
        if (hsaco) {
          out.linker = "comgr";
          out.linker_version = link_.comgr_version;
        } else {
          // Say why lld linked instead (the first line of comgr's log names the failure).
          out.linker_reason = link_.reason + "; comgr failed, lld linked: " + log.substr(0, log.find('\n'));
        }
      }
      if (!hsaco) hsaco = link_hsaco(object);
    }

    out.kernel_symbol = lowered_.kernel_symbol;
    out.remarks.insert(out.remarks.end(), lowered_.remarks.begin(), lowered_.remarks.end());
    out.format = "hsaco";
    out.binary = std::move(*hsaco);
    out.block_threads = lowered_.block_threads;
    ResourceReport r = read_report(out.binary, lowered_.block_threads, lowered_.kernel_symbol);
    out.shared_bytes = r.lds_bytes;
    out.report = {{"vgpr", r.vgpr},
                  {"agpr", r.agpr},
                  {"sgpr", r.sgpr},
                  {"spill_vgpr", r.spill_vgpr},
                  {"spill_sgpr", r.spill_sgpr},
                  {"lds_bytes", r.lds_bytes},
                  {"scratch_bytes", r.scratch_bytes},
                  {"occupancy", r.occupancy},
                  {"waves_per_workgroup", r.waves_per_workgroup},
                  {"code_object_version", r.code_object_version},
                  {"shared_bytes", r.lds_bytes}};
    if (!scheduled->remark.empty()) out.remarks.push_back(scheduled->remark);
  }

 private:
  llvm::TargetMachine& machine(const codegen::CompileOptions& opts) const {
    return codegen::thread_machine(fmt::format("amdgpu|{}|{}|{}", desc_.arch, desc_.features, opts.opt_level),
                                   [&] { return make_target_machine(desc_, opts.opt_level); });
  }

  codegen::TargetDesc desc_;
  AmdgpuHooks hooks_;
  llvm::TargetMachine* tm_ = nullptr;  // this thread's (codegen::thread_machine)
  gpu::LoweringResult lowered_;
  LinkChoice link_;
  std::string schedule_;  // TL_AMDGPU_SCHEDULE: "" chooses per kernel, else the strategy to force
};

}  // namespace
}  // namespace tl::amd

namespace tl::codegen {
std::unique_ptr<Target> make_amdgpu_target(const TargetDesc& d) { return std::make_unique<amd::AmdgpuTarget>(d); }
}  // namespace tl::codegen

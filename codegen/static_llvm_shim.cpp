// Only in the statically linked bundle (TL_STATIC_LLVM): lld's driver calls LLVM's
// InitializeAllTargets() for link-time optimization, which names every target LLVM was
// built with. tl links only X86, AMDGPU and NVPTX, and never gives lld bitcode, so the
// other targets' initializers are empty here; registering nothing for them is the
// honest outcome (lld would report "unknown target" if it ever needed one).
#ifdef TL_STATIC_LLVM
#define TL_EMPTY_TARGET(T)                          \
  extern "C" void LLVMInitialize##T##TargetInfo() {} \
  extern "C" void LLVMInitialize##T##Target() {}     \
  extern "C" void LLVMInitialize##T##TargetMC() {}   \
  extern "C" void LLVMInitialize##T##AsmPrinter() {} \
  extern "C" void LLVMInitialize##T##AsmParser() {}  \
  extern "C" void LLVMInitialize##T##Disassembler() {}
TL_EMPTY_TARGET(AArch64)
TL_EMPTY_TARGET(ARM)
TL_EMPTY_TARGET(AVR)
TL_EMPTY_TARGET(BPF)
TL_EMPTY_TARGET(Hexagon)
TL_EMPTY_TARGET(Lanai)
TL_EMPTY_TARGET(LoongArch)
TL_EMPTY_TARGET(M68k)
TL_EMPTY_TARGET(MSP430)
TL_EMPTY_TARGET(Mips)
TL_EMPTY_TARGET(PowerPC)
TL_EMPTY_TARGET(RISCV)
TL_EMPTY_TARGET(SPIRV)
TL_EMPTY_TARGET(Sparc)
TL_EMPTY_TARGET(SystemZ)
TL_EMPTY_TARGET(VE)
TL_EMPTY_TARGET(WebAssembly)
TL_EMPTY_TARGET(XCore)
TL_EMPTY_TARGET(Xtensa)

// Debian builds LLVM with Polly linked into its tools, so the pass builder asks for
// Polly's plugin; its archive is not packaged. An empty plugin registers no passes.
#include <llvm/Plugins/PassPlugin.h>
llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "polly (not linked)", "0", [](llvm::PassBuilder&) {}};
}
#endif

// NVIDIA's capability table by sm. Shared-memory sizes: CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability" (maximum shared memory per thread
// block, which a kernel reaches only through dynamic shared memory and
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); instructions: the PTX ISA.
#include "codegen/nvptx/nvptx_capabilities.hpp"

#include <cctype>
#include <cstdlib>

namespace tl::nvptx {
namespace {

// The compute capability of "sm_90a" as 90; 0 when the name is not sm_<digits>.
int sm_number(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 4 || !std::isdigit(static_cast<unsigned char>(arch[3]))) return 0;
  return std::atoi(arch.c_str() + 3);
}

// Shared memory one block may use after opting in, per compute capability; 0 = unknown.
int64_t optin_shared_bytes(int sm) {
  switch (sm) {
    case 80:                           // A100
    case 87: return 163 * 1024;        // Jetson Orin
    case 86:                           // consumer Ampere
    case 89: return 99 * 1024;         // Ada
    case 90:                           // H100/H200
    case 100: return 227 * 1024;       // B200
    case 120: return 99 * 1024;        // consumer Blackwell
    default: return 0;                 // not known here: stay within the static 48 KiB
  }
}

}  // namespace

gpu::TargetCapabilities capabilities(const std::string& arch) {
  gpu::TargetCapabilities c;
  c.arch = arch;
  c.wave_size = 32;
  c.max_threads_per_program = 1024;
  // 64K 32-bit registers per SM on every sm since 5.0, over its 4 x 32 lanes: 512 a lane.
  // One thread names at most 255 of them (ptxas spills the rest to local memory), but
  // tracing stops only tiles that the whole share could not hold: the RMSNorm sweep in
  // bench/gpu_bench.cpp tries up to 256 f32 a thread, which ptxas compiles.
  c.registers_per_lane = 512;
  // A statically declared __shared__ array may not exceed 48 KiB on any sm; more is
  // dynamic shared memory, sized at launch, up to the opt-in maximum.
  c.static_shared_limit = 48 * 1024;
  c.shared_bytes_per_program = 48 * 1024;
  // 32 banks of 4 bytes on every sm tl targets.
  c.shared_banks = 32;
  c.shared_bank_bytes = 4;
  c.max_global_access_bytes = 16;  // ld.global.v4.b32
  int sm = sm_number(arch);
  if (sm < 80) return c;  // unknown, or older than tl supports: the conservative default
  if (int64_t optin = optin_shared_bytes(sm)) c.shared_bytes_per_program = optin;
  // cp.async (sm_80+) copies 4, 8 or 16 bytes per thread (.ca; .cg only 16).
  c.direct_to_shared_widths = {4, 8, 16};
  // cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 and back: sm_89+ (PTX ISA 7.8). The NVPTX
  // lowering does not use them yet (it converts FP8 in software); the table says what
  // the hardware has.
  if (sm >= 89) c.hardware_fp8 = {DType::f8e4m3fn, DType::f8e5m2};
  return c;
}

}  // namespace tl::nvptx

// NVIDIA's capability table by sm. Shared-memory sizes: CUDA C++ Programming Guide,
// "Technical Specifications per Compute Capability" (maximum shared memory per thread
// block, which a kernel reaches only through dynamic shared memory and
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); instructions: the PTX ISA.
#include "codegen/nvptx/nvptx_capabilities.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>

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
  c.registers_per_thread = 255;  // ptxas's per-thread maximum
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
  c.load_matrix = true;  // ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16 (sm_75+)
  // cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 and back: sm_89+ (PTX ISA 7.8). The NVPTX
  // lowering does not use them yet (it converts FP8 in software); the table says what
  // the hardware has.
  if (sm >= 89) c.hardware_fp8 = {DType::f8e4m3fn, DType::f8e5m2};
  // mma.sync (PTX ISA, "Warp-level matrix multiply-accumulate"; LLVM 22's
  // llvm.nvvm.mma.* intrinsics, compiled with llc and ptxas, their fragments checked on an
  // H100): m16n8k16 bf16 and f16, m16n8k32 s8, m16n8k8 tf32 (f32 operands: TF32, Triton's
  // default precision), and m16n8k32 e4m3/e5m2 from sm_89 (PTX 8.4).
  auto mma = [](const char* name, const char* intrinsic, int k, DType a, DType b, DType acc) {
    gpu::MatrixInstruction mi;
    mi.name = name, mi.intrinsic = intrinsic, mi.family = gpu::MatrixFamily::nvidia_mma;
    mi.m = 16, mi.n = 8, mi.k = k, mi.a = a, mi.b = b, mi.acc = acc;
    mi.k_per_lane = 16 * k / 32;
    return mi;
  };
  using D = DType;
  c.matrix_instructions = {
      mma("mma.sync.m16n8k16.f32.bf16.bf16.f32", "llvm.nvvm.mma.m16n8k16.row.col.bf16", 16, D::bf16, D::bf16, D::f32),
      mma("mma.sync.m16n8k16.f32.f16.f16.f32", "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 16, D::f16, D::f16, D::f32),
      mma("mma.sync.m16n8k32.s32.s8.s8.s32", "llvm.nvvm.mma.m16n8k32.row.col.s8", 32, D::i8, D::i8, D::i32),
      mma("mma.sync.m16n8k8.f32.tf32.tf32.f32", "llvm.nvvm.mma.m16n8k8.row.col.tf32", 8, D::f32, D::f32, D::f32),
  };
  c.matrix_instructions.back().tf32 = true;
  // f32 dots asked with input_precision ieee: f32 FMAs on the lanes (Triton's FMA dot),
  // a warp's 32 lanes 4 rows by 8 columns of the accumulator per step of k.
  {
    gpu::MatrixInstruction fma;
    fma.name = "fma.rn.f32", fma.intrinsic = "llvm.fma.f32", fma.family = gpu::MatrixFamily::fma;
    fma.m = 4, fma.n = 8, fma.k = 1, fma.a = D::f32, fma.b = D::f32, fma.acc = D::f32;
    fma.k_per_lane = 1;
    c.matrix_instructions.push_back(fma);
  }
  if (sm >= 89)
    for (auto [an, at] : {std::pair{"e4m3", D::f8e4m3fn}, std::pair{"e5m2", D::f8e5m2}})
      for (auto [bn, bt] : {std::pair{"e4m3", D::f8e4m3fn}, std::pair{"e5m2", D::f8e5m2}}) {
        auto mi = mma("", "", 32, at, bt, D::f32);
        mi.name = std::string("mma.sync.m16n8k32.f32.") + an + "." + bn + ".f32";
        mi.intrinsic = std::string("llvm.nvvm.mma.m16n8k32.row.col.f32.") + an + "." + bn + ".f32";
        c.matrix_instructions.push_back(mi);
      }
  // wgmma.mma_async (PTX ISA 8.0, "Asynchronous Warpgroup Level Matrix Multiply-
  // Accumulate"): sm_90a only (the `a` features: Hopper, not its successors), one
  // m64nNk instruction per warpgroup for N = 8..256 (the powers of two tl's tiles take),
  // k16 bf16/f16, k8 tf32, k32 FP8 and s8, in f32 (s32) accumulators. tl emits it as
  // inline PTX (LLVM has no intrinsic for it); the names below are what the plan records.
  if (sm == 90) {
    struct Types {
      const char* ptx;
      int k;
      DType a, b, acc;
    };
    std::vector<Types> types = {{"f32.bf16.bf16", 16, D::bf16, D::bf16, D::f32},
                                {"f32.f16.f16", 16, D::f16, D::f16, D::f32},
                                {"f32.tf32.tf32", 8, D::f32, D::f32, D::f32},
                                {"s32.s8.s8", 32, D::i8, D::i8, D::i32}};
    types.push_back({"f32.e4m3.e4m3", 32, D::f8e4m3fn, D::f8e4m3fn, D::f32});
    types.push_back({"f32.e4m3.e5m2", 32, D::f8e4m3fn, D::f8e5m2, D::f32});
    types.push_back({"f32.e5m2.e4m3", 32, D::f8e5m2, D::f8e4m3fn, D::f32});
    types.push_back({"f32.e5m2.e5m2", 32, D::f8e5m2, D::f8e5m2, D::f32});
    for (const Types& t : types)
      for (int n = 8; n <= 256; n *= 2) {
        gpu::MatrixInstruction mi;
        mi.family = gpu::MatrixFamily::nvidia_wgmma;
        mi.m = 64, mi.n = n, mi.k = t.k, mi.a = t.a, mi.b = t.b, mi.acc = t.acc;
        mi.k_per_lane = 64 * t.k / 128;
        mi.ptx_types = t.ptx;
        mi.tf32 = t.a == D::f32;
        mi.transposable = bit_width(t.a) == 16;
        mi.name = fmt::format("wgmma.mma_async.m64n{}k{}.{}", n, t.k, t.ptx);
        c.matrix_instructions.push_back(mi);
      }
  }
  return c;
}

}  // namespace tl::nvptx

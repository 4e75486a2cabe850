// Per-architecture facts that the lowering and the passes both ask about: shared-memory
// budgets, which global->shared copies the chip has, buffer-resource flags, hardware
// FP8, and (later) the matrix instructions. One plain struct for every target, no LLVM
// types, so a pass can include it without seeing LLVM.
//
// Where the values live: AMD chips in their overlay files (codegen/amdgpu/arch_gfx*.cpp,
// one small file per chip), NVIDIA by sm in codegen/nvptx/nvptx_capabilities.cpp. A GPU
// lowering reads them from GpuHooks::capabilities(); a pass, which has a TargetDesc and
// no hooks, from codegen::capabilities_for(). The CPU target gets a trivial table (one
// thread per program, no shared memory, no direct-to-shared copies) so that a pass can
// ask any target the same questions without a special case.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tl/dtype.hpp"

namespace tl::codegen {
struct TargetDesc;
}

namespace tl::gpu {

// One matrix-multiply instruction (AMD MFMA, NVIDIA mma.sync): the tile one warp
// computes per instruction, [m, k] x [k, n] -> [m, n], its operand and accumulator types,
// and how many elements of A (and of B) one lane holds for it. Where each element sits
// (which lane, which register) is the family's fragment layout (codegen/gpu/
// dot_layout.cpp); how the instruction is called, the target's matrix_multiply hook.
// nvidia_wgmma: Hopper's warpgroup MMA (wgmma.mma_async, sm_90a), four warps computing
// an m64nNk tile together, B (and A, or A from registers) read from shared memory through
// matrix descriptors, asynchronously.
// fma: no matrix core, f32 fused multiply-adds on the program's lanes (Triton's FMA dot
// lowering), what an f32 dot with input_precision ieee takes where the matrix cores only
// multiply TF32 (NVIDIA): a lane holds one accumulator element per m x n "instruction",
// the A element of its row and the B element of its column (k = 1), lanes along N
// sharing A's and lanes along M sharing B's (copies in the operand layouts).
enum class MatrixFamily : uint8_t { amd_mfma, nvidia_mma, nvidia_wgmma, fma };
struct MatrixInstruction {
  std::string name;       // the ISA mnemonic: "v_mfma_f32_32x32x8_bf16", "mma.sync.m16n8k16.bf16"
  std::string intrinsic;  // the LLVM intrinsic the hook calls
  MatrixFamily family = MatrixFamily::amd_mfma;
  int m = 0, n = 0, k = 0;
  DType a = DType::f16, b = DType::f16, acc = DType::f32;
  int k_per_lane = 0;     // A elements one lane holds: m * k / wave size (B: n * k / wave size)
  // wgmma: the PTX type names after the shape ("f32.bf16.bf16", "s32.s8.s8") and whether
  // its operands may lie MN-major in shared memory (the transpose immediates: 16-bit only).
  std::string ptx_types;
  bool transposable = false;
  // f32 operands rounded to TF32 (NVIDIA's mma/wgmma .tf32): not for input_precision ieee.
  bool tf32 = false;
  // A block-scaled instruction (gfx950's v_mfma_scale_*_f8f6f4): it takes tl::dot_scaled
  // alone, with an e8m0 scale per 32 k of each row of A and column of B. k and k_per_lane
  // count the operands' bytes, so an f4e2m1 entry (two values a byte) has half the
  // instruction's k.
  bool scaled = false;
};

// A raw buffer resource's size in bytes (num_records) and the offset masked-off lanes
// are moved to. num_records is Triton's (BufferOpsEmitter): INT32_MAX - 1, below 2^31, so
// that every byte offset with bit 31 set, kBufferMaskedOffset included, is out of range
// (the hardware compares the unsigned 32-bit offset with num_records: CDNA3 ISA, buffer
// range checking) while every non-negative i32 byte offset the lowering proves below it
// is in range.
constexpr uint32_t kBufferNumRecords = 0x7FFFFFFEu;
constexpr uint32_t kBufferMaskedOffset = 0x80000000u;

struct TargetCapabilities {
  std::string arch;  // "gfx942", "sm_90", "cpu"; for messages
  // Lanes per warp/wavefront the architecture runs natively (64 on CDNA, 32 on NVIDIA).
  // The compilation's own wave size is TargetDesc::wave_size / GpuHooks::wave_size().
  int wave_size = 64;
  int max_threads_per_program = 1024;
  // 32-bit registers per lane of the register file a program's lanes share (AMD: the
  // SIMD's VGPRs, AGPRs included on gfx90a+; NVIDIA: an SM's 64K over its 128 lanes).
  // Tracing refuses a tile with more elements per lane than this (docs/language.md,
  // "Limits"): it cannot be held, and LLVM takes minutes to spill it. 0: no limit (CPU).
  int registers_per_lane = 0;
  // 32-bit registers one thread addresses before the compiler spills (NVIDIA: 255 of the
  // share; AMD: all of it, AGPRs included). What the middle end weighs a tile kept in
  // registers across a loop against. 0: no limit (CPU).
  int registers_per_thread = 0;
  // A warp-wide matrix load from shared memory into mma fragments (NVIDIA's ldmatrix.x4
  // and .trans, sm_75+): a dot operand staged in shared memory is read with it, wide,
  // where a layout conversion reads two bytes at a time.
  bool load_matrix = false;
  // Element widths (bits) with a transposing 64-bit LDS read (gfx950's
  // ds_read_b64_tr_b16 and ds_read_b64_tr_b8): a tile stored along one dim is read into
  // registers that hold consecutive elements along the other (a dot's B operand from an
  // N-contiguous V), 8 bytes a lane where the plain read takes one element.
  std::vector<int> transposed_shared_read_bits;

  // Shared memory (LDS) one program may use, static and dynamic together: the budget
  // the lowering checks and a pipeliner or a shared-memory tile would plan against.
  int64_t shared_bytes_per_program = 64 * 1024;
  // The largest statically declared shared buffer. Above it the lowering declares the
  // buffer as an external (dynamically sized) array and the launch passes its size
  // (NVIDIA: 48 KiB, more needs cuFuncSetAttribute's opt-in). Equal to the budget where
  // static allocation covers all of it (AMD).
  int64_t static_shared_limit = 64 * 1024;
  // Waves (warps) one compute unit holds at once at most, whatever their registers:
  // what says whether a program's shared memory limits its occupancy, with
  // shared_bytes_per_program taken as the compute unit's whole shared memory (AMD: the
  // CU's LDS). The allocator gives scratch a second slot only where that stays so
  // (shared_memory.cpp). 0: not known (scratch keeps one slot).
  int waves_per_compute_unit = 0;
  // Shared-memory banks, for conflict-free (swizzled) layouts.
  int shared_banks = 32;
  int shared_bank_bytes = 4;

  // The widest global load or store one lane issues (global_load_dwordx4, ld.global.v4).
  int max_global_access_bytes = 16;
  // Bytes per lane one global->shared copy can move without passing through registers
  // (AMD global_load_lds_*, NVIDIA cp.async), ascending; empty when there is none.
  std::vector<int> direct_to_shared_widths;
  // AMD: buffer_load ... lds, a buffer load that writes LDS directly (Gluon's
  // buffer_load_to_shared).
  bool buffer_load_to_shared = false;
  // AMD: the widths (bytes a lane) of buffer_load ... lds the compiler itself may issue
  // for an ordinary copy into shared memory (its offsets split into a uniform base, one
  // small non-negative offset a lane and constants; a masked-off lane's offset past the
  // bound, so no branch), whether or not the user-facing buffer_load_to_shared is offered.
  std::vector<int> buffer_copy_widths;
  // Whether the counter a copy is waited on counts memory loads (AMD's vmcnt: every
  // global_load_lds, buffer load into LDS and register load) rather than copy groups
  // (NVIDIA's cp.async.wait_group): plan_wait_counts then records the loads.
  bool copy_waits_count_loads = false;
  // AMD: word 3 ("flags": DST_SEL, NUM_FORMAT, DATA_FORMAT, ...) of the 128-bit buffer
  // resource descriptor (V#) for raw buffer loads and stores; 0 where the target has no
  // buffer instructions.
  uint32_t buffer_resource_flags = 0;
  // The rules that trade loop-invariant address registers and loop-carried registers for
  // other work, each measured against seed 002's 108-VGPR budget on AMD
  // (bench/results/ and the commits of branch amd-seed): a swizzled stage's XOR applied
  // after its base, consecutive stage elements held in non-adjacent registers read as one
  // vector, an 8-bit B read without a transposing read renumbered along N, a warp
  // shuffle's source-lane offsets counted against it in a loop, a pipelined load keeping
  // its own layout where the wanted one holds more registers. AMD only so far: NVIDIA keeps
  // the code its H100 figures were measured with until they are measured there.
  bool register_pressure_rules = false;
  // Whether an exchange through shared memory may be padded (ir::SharedEncoding::padding,
  // Triton's PaddedSharedEncoding) where that costs fewer accesses, conflicts and
  // address registers than any swizzle (exchange_encoding). AMD, as Triton pads only
  // there; NVIDIA keeps the swizzles its H100 figures were measured with.
  bool padded_shared = false;

  // FP8 formats the hardware converts to and from f32.
  std::vector<DType> hardware_fp8;
  // Matrix instructions tl::dot may use (the chip's, those tl lowers; capabilities.md
  // in codegen/gpu/README.md), for every operand type pair each takes.
  std::vector<MatrixInstruction> matrix_instructions;

  bool has_direct_to_shared(int bytes) const {
    return std::find(direct_to_shared_widths.begin(), direct_to_shared_widths.end(), bytes) !=
           direct_to_shared_widths.end();
  }
  bool has_hardware_fp8(DType fmt) const {
    return std::find(hardware_fp8.begin(), hardware_fp8.end(), fmt) != hardware_fp8.end();
  }
  bool has_buffer_ops() const { return buffer_resource_flags != 0; }
  // A copy that reads nothing and writes zeros into shared memory (AMD: a buffer load into
  // LDS through a null resource, out of range, reads 0): a masked-off chunk of a copy then
  // still issues one load, so that a wait counting loads counts right.
  bool has_zero_copy() const { return has_buffer_ops() && !buffer_copy_widths.empty(); }
  bool has_transposed_shared_read(int elem_bits) const {
    return std::find(transposed_shared_read_bits.begin(), transposed_shared_read_bits.end(), elem_bits) !=
           transposed_shared_read_bits.end();
  }
};

}  // namespace tl::gpu

namespace tl::codegen {

// The capability table of the architecture `d` names: an AMD chip's overlay, NVIDIA's
// table by sm, the CPU's trivial table. An architecture tl has no table for gets its
// family's conservative default (AMD: 64 KiB LDS, nothing direct-to-LDS, no buffer
// flags, no hardware FP8; NVIDIA: 48 KiB of static shared memory and nothing more, no
// cp.async).
gpu::TargetCapabilities capabilities_for(const TargetDesc& d);

}  // namespace tl::codegen

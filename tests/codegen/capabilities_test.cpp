// The per-architecture capability tables (codegen/gpu/capabilities.hpp): what the
// lowering and the passes will plan against, one row of facts per chip.
#include <gtest/gtest.h>

#include <vector>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/target.hpp"
#include "tl/error.hpp"

namespace {

using namespace tl;
using codegen::capabilities_for;
using codegen::parse_target;

gpu::TargetCapabilities caps(const char* name) { return capabilities_for(parse_target(name)); }

TEST(Capabilities, AmdLdsBudgets) {
  EXPECT_EQ(caps("gfx90a").shared_bytes_per_program, 65536);
  EXPECT_EQ(caps("gfx942").shared_bytes_per_program, 65536);
  EXPECT_EQ(caps("gfx950").shared_bytes_per_program, 163840);
  // All of it static: AMD needs no dynamic LDS to reach its budget.
  for (const char* a : {"gfx90a", "gfx942", "gfx950"})
    EXPECT_EQ(caps(a).static_shared_limit, caps(a).shared_bytes_per_program) << a;
  // The target-id suffix does not change the chip.
  EXPECT_EQ(caps("gfx950:sramecc+:xnack-").shared_bytes_per_program, 163840);
}

TEST(Capabilities, AmdDirectToLdsWidths) {
  EXPECT_EQ(caps("gfx90a").direct_to_shared_widths, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(caps("gfx942").direct_to_shared_widths, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(caps("gfx950").direct_to_shared_widths, (std::vector<int>{1, 2, 4, 12, 16}));
  EXPECT_TRUE(caps("gfx942").has_direct_to_shared(4));
  EXPECT_FALSE(caps("gfx942").has_direct_to_shared(16));  // global_load_lds_dwordx4 is gfx950's
  EXPECT_TRUE(caps("gfx950").has_direct_to_shared(16));
}

TEST(Capabilities, BufferLoadToSharedOnlyOnGfx950) {
  EXPECT_FALSE(caps("gfx90a").buffer_load_to_shared);
  EXPECT_FALSE(caps("gfx942").buffer_load_to_shared);
  EXPECT_TRUE(caps("gfx950").buffer_load_to_shared);
  EXPECT_FALSE(caps("sm_90").buffer_load_to_shared);
}

// ds_read_b64_tr_b16 / _b8 (FeatureGFX950Insts): gfx950 only; an unknown chip and NVIDIA
// (ldmatrix.trans is load_matrix) say no.
TEST(Capabilities, TransposedSharedReadOnlyOnGfx950) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx1100", "sm_90"})
    EXPECT_TRUE(caps(arch).transposed_shared_read_bits.empty()) << arch;
  EXPECT_TRUE(caps("gfx950").has_transposed_shared_read(16));
  EXPECT_TRUE(caps("gfx950").has_transposed_shared_read(8));
  EXPECT_FALSE(caps("gfx950").has_transposed_shared_read(32));
}

TEST(Capabilities, BufferDescriptorFlags) {
  // Word 3 of a raw-buffer V# on CDNA: DATA_FORMAT 32 bit, NUM_FORMAT float.
  for (const char* a : {"gfx90a", "gfx942", "gfx950"}) {
    EXPECT_EQ(caps(a).buffer_resource_flags, 0x00027000u) << a;
    EXPECT_TRUE(caps(a).has_buffer_ops()) << a;
  }
  EXPECT_FALSE(caps("sm_90").has_buffer_ops());
}

TEST(Capabilities, HardwareFp8) {
  EXPECT_TRUE(caps("gfx90a").hardware_fp8.empty());
  EXPECT_TRUE(caps("gfx942").has_hardware_fp8(DType::f8e4m3fnuz));
  EXPECT_TRUE(caps("gfx942").has_hardware_fp8(DType::f8e5m2fnuz));
  EXPECT_FALSE(caps("gfx942").has_hardware_fp8(DType::f8e4m3fn));
  EXPECT_TRUE(caps("gfx950").has_hardware_fp8(DType::f8e4m3fn));
  EXPECT_TRUE(caps("gfx950").has_hardware_fp8(DType::f8e5m2));
  EXPECT_FALSE(caps("gfx950").has_hardware_fp8(DType::f8e4m3fnuz));
  EXPECT_FALSE(caps("sm_80").has_hardware_fp8(DType::f8e4m3fn));
  EXPECT_TRUE(caps("sm_90").has_hardware_fp8(DType::f8e4m3fn));
}

TEST(Capabilities, NvidiaSharedBudgets) {
  EXPECT_EQ(caps("sm_80").shared_bytes_per_program, 163 * 1024);
  EXPECT_EQ(caps("sm_86").shared_bytes_per_program, 99 * 1024);
  EXPECT_EQ(caps("sm_89").shared_bytes_per_program, 99 * 1024);
  EXPECT_EQ(caps("sm_90").shared_bytes_per_program, 227 * 1024);
  EXPECT_EQ(caps("sm_90a").shared_bytes_per_program, 227 * 1024);
  for (const char* a : {"sm_80", "sm_86", "sm_89", "sm_90"}) {
    EXPECT_EQ(caps(a).static_shared_limit, 48 * 1024) << a;
    EXPECT_EQ(caps(a).direct_to_shared_widths, (std::vector<int>{4, 8, 16})) << a;  // cp.async
  }
}

TEST(Capabilities, WaveSizesAndCommonLimits) {
  for (const char* a : {"gfx90a", "gfx942", "gfx950"}) {
    EXPECT_EQ(caps(a).wave_size, 64) << a;
    EXPECT_EQ(caps(a).shared_banks, 32) << a;
    EXPECT_EQ(caps(a).shared_bank_bytes, 4) << a;
  }
  EXPECT_EQ(caps("sm_80").wave_size, 32);
  EXPECT_EQ(caps("sm_90").wave_size, 32);
  for (const char* a : {"gfx942", "sm_90"}) {
    EXPECT_EQ(caps(a).max_threads_per_program, 1024) << a;
    EXPECT_EQ(caps(a).max_global_access_bytes, 16) << a;
  }
  // Matrix instructions (tl::dot): what each chip has, per operand type.
  auto takes = [&](const char* arch, DType t) {
    int n = 0;
    for (const auto& mi : caps(arch).matrix_instructions) n += mi.a == t && mi.b == t && !mi.scaled;
    return n;
  };
  // tl::dot_scaled's block-scaled MFMAs: gfx950 alone, both sizes, e2m1 x e2m1 and FP8.
  auto scaled = [&](const char* arch, DType t) {
    int n = 0;
    for (const auto& mi : caps(arch).matrix_instructions) n += mi.a == t && mi.b == t && mi.scaled;
    return n;
  };
  EXPECT_EQ(scaled("gfx950", DType::f4e2m1), 2);
  EXPECT_EQ(scaled("gfx950", DType::f8e4m3fn), 2);
  EXPECT_EQ(scaled("gfx942", DType::f4e2m1), 0);
  EXPECT_EQ(takes("gfx90a", DType::bf16), 2);
  EXPECT_EQ(takes("gfx90a", DType::i8), 2);
  EXPECT_EQ(takes("gfx90a", DType::f8e4m3fnuz), 0);
  EXPECT_EQ(takes("gfx942", DType::f8e4m3fnuz), 2);
  EXPECT_EQ(takes("gfx942", DType::f8e4m3fn), 0);
  EXPECT_EQ(takes("gfx950", DType::f8e4m3fn), 4);  // 16x16x32, 32x32x16, and the two f8f6f4
  EXPECT_EQ(takes("gfx950", DType::bf16), 4);
  EXPECT_EQ(takes("sm_80", DType::bf16), 1);
  EXPECT_EQ(takes("sm_80", DType::f8e4m3fn), 0);
  // sm_90: mma.sync m16n8k32 and wgmma m64nNk32 for N = 8 .. 256.
  EXPECT_EQ(takes("sm_90", DType::f8e4m3fn), 1 + 6);
  EXPECT_EQ(takes("sm_90", DType::bf16), 1 + 6);
  EXPECT_EQ(takes("sm_89", DType::f8e4m3fn), 1);
  EXPECT_TRUE(caps("cpu").matrix_instructions.empty());
  EXPECT_EQ(caps("gfx942").arch, "gfx942");
  EXPECT_EQ(caps("sm_90").arch, "sm_90");
}

TEST(Capabilities, UnknownArchGetsTheConservativeDefault) {
  // An AMD chip without an overlay (RDNA here): 64 KiB, its own wave size, nothing else.
  auto rdna = caps("gfx1100");
  EXPECT_EQ(rdna.arch, "gfx1100");
  EXPECT_EQ(rdna.wave_size, 32);
  EXPECT_EQ(rdna.shared_bytes_per_program, 65536);
  EXPECT_TRUE(rdna.direct_to_shared_widths.empty());
  EXPECT_FALSE(rdna.buffer_load_to_shared);
  EXPECT_FALSE(rdna.has_buffer_ops());
  EXPECT_TRUE(rdna.hardware_fp8.empty());
  // An NVIDIA name tl has no table for: static shared memory only, nothing direct.
  codegen::TargetDesc odd;
  odd.kind = codegen::TargetDesc::nvptx;
  odd.arch = "sm_75";
  auto old = capabilities_for(odd);
  EXPECT_EQ(old.shared_bytes_per_program, 48 * 1024);
  EXPECT_TRUE(old.direct_to_shared_widths.empty());
  EXPECT_TRUE(old.hardware_fp8.empty());
}

// A name that is no NVIDIA processor (sm_1000 was taken for one, and LLVM only warned
// and emitted code for a default processor): refused, saying which names tl knows.
TEST(Capabilities, UnknownTargetNamesAreRefused) {
  for (const char* bad : {"sm_1000", "sm_91", "sm_90x", "sm_90b", "sm_080", "sm_", "sm_a", "sm_100af", "sm_99999999",
                          "sm_-90", "sm_90 "}) {
    try {
      (void)parse_target(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const tl::compile_error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown NVIDIA target"), std::string::npos) << bad << ": " << e.what();
    }
  }
  // Older than tl supports: said so.
  try {
    (void)parse_target("sm_75");
    ADD_FAILURE() << "sm_75 was accepted";
  } catch (const tl::compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("older than sm_80"), std::string::npos) << e.what();
  }
  for (const char* good : {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_103f",
                           "sm_120", "sm_121a"}) {
    EXPECT_NO_THROW({
      auto t = parse_target(good);
      EXPECT_EQ(t.kind, codegen::TargetDesc::nvptx);
      EXPECT_EQ(t.arch, good);
    }) << good;
  }
  EXPECT_THROW((void)parse_target("gfx9999"), tl::compile_error);
  EXPECT_THROW((void)parse_target("x86"), tl::compile_error);
}

TEST(Capabilities, CpuHasATrivialTable) {
  auto c = capabilities_for(codegen::host_target());
  EXPECT_EQ(c.wave_size, 1);
  EXPECT_EQ(c.max_threads_per_program, 1);
  EXPECT_EQ(c.shared_bytes_per_program, 0);
  EXPECT_TRUE(c.direct_to_shared_widths.empty());
  EXPECT_FALSE(c.buffer_load_to_shared);
}

}  // namespace

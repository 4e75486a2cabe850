// The AMDGPU lowering, checked without a GPU: kernels are traced with the DSL (or built
// from the tile IR), compiled for gfx90a/gfx942/gfx950, and the HSACO's disassembly and
// metadata are checked for what the lowering promises: fence-free relaxed atomics,
// 128-bit loads only where alignment allows, cross-wave reductions through LDS,
// occupancy controls, spill reporting, the requested ISA; plus the layout algebra the
// lowering is built on, and the RMSNorm figures (VGPRs, spills, compile time).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <regex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/gpu/layout.hpp"
#include "codegen/passes/axis_analysis.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::packed_rmsnorm_kernel;
using tltest::ptr_arg;
using tltest::row_sum_loop_kernel;
using tltest::RowWalk;
using tltest::scalar_arg;
using tltest::trace;

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx950"};



codegen::CodeObject compile_for(const std::string& arch, ir::Function& f, int num_warps = 4, int waves_per_eu = 0) {
  codegen::CompileOptions o;
  o.num_warps = num_warps;
  o.waves_per_eu = waves_per_eu;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// --- kernels ---------------------------------------------------------------------

std::unique_ptr<ir::Function> atomic_kernel(sem s) {
  return trace("atomic_add_kernel", [&](Trace& t) {
    auto p = ptr_arg<ty::f32>(t, "p", true);
    auto offs = tl::arange(0, 256);
    tl::atomic_add(p + offs, tl::full<ty::f32>({256}, 1.0), s, scope::gpu);
  });
}

// y[row] = 2 * x[row] for one bf16 row of 4096 per program; `aligned` is the launch
// specialization: pointers 16-byte aligned and the row stride divisible by 16.
std::unique_ptr<ir::Function> row_copy_kernel(bool aligned) {
  return trace("row_copy", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", aligned);
    auto y = ptr_arg<ty::bf16>(t, "y", aligned);
    auto stride = scalar_arg<ty::i32>(t, "stride", aligned);
    auto row = tl::program_id(0);
    auto offs = row * stride + tl::arange(0, 4096);
    auto v = tl::load(x + offs);
    tl::store(y + offs, (v.to<ty::f32>() * 2.0f).to<ty::bf16>());
  });
}

std::unique_ptr<ir::Function> sum_kernel(int block) {
  return trace("block_sum", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto v = tl::load(x + tl::program_id(0) * block + tl::arange(0, block));
    tl::store(out + tl::program_id(0), tl::sum(v, 0));
  });
}

// RMSNorm forward, one bf16 row of 4096 per program (Triton's tutorial kernel shape).
std::unique_ptr<ir::Function> rmsnorm_kernel(int block, bool aligned) {
  return trace("rmsnorm_fwd", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", aligned);
    auto w = ptr_arg<ty::bf16>(t, "w", aligned);
    auto y = ptr_arg<ty::bf16>(t, "y", aligned);
    auto stride = scalar_arg<ty::i32>(t, "stride", aligned);
    auto n = scalar_arg<ty::i32>(t, "n", aligned);
    auto eps = scalar_arg<ty::f32>(t, "eps", false);
    auto row = tl::program_id(0);
    auto cols = tl::arange(0, block);
    auto mask = cols < n;
    auto xv = tl::load(x + row * stride + cols, mask, 0.0).to<ty::f32>();
    auto ms = tl::sum(xv * xv, 0) / n;
    auto rstd = tl::rsqrt(ms + eps);
    auto wv = tl::load(w + cols, mask, 0.0).to<ty::f32>();
    tl::store(y + row * stride + cols, (xv * rstd * wv).to<ty::bf16>(), mask);
  });
}

// --- atomics -----------------------------------------------------------------------

TEST(AmdgpuLowering, RelaxedAtomicHasNoCacheFences) {
  for (const char* arch : kArchs) {
    auto f = atomic_kernel(sem::relaxed);
    auto co = compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_NE(dis.find("global_atomic_add_f32"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(dis.find("buffer_wbl2"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(dis.find("buffer_inv"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(dis.find("buffer_wbinvl1"), std::string::npos) << arch << "\n" << dis;
  }
}

TEST(AmdgpuLowering, AcqRelAtomicHasCacheFences) {
  for (const char* arch : kArchs) {
    auto f = atomic_kernel(sem::acq_rel);
    auto co = compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    if (std::string(arch) == "gfx90a") {
      // gfx90a's L2 is coherent for the whole agent: release needs no write-back there,
      // acquire invalidates L1 (AMDGPUUsage, memory model for GFX90A)
      EXPECT_NE(dis.find("buffer_wbinvl1_vol"), std::string::npos) << arch << "\n" << dis;
    } else {
      EXPECT_NE(dis.find("buffer_wbl2"), std::string::npos) << arch << "\n" << dis;
      EXPECT_NE(dis.find("buffer_inv"), std::string::npos) << arch << "\n" << dis;
    }
  }
}

TEST(AmdgpuLowering, ReplicatedScalarAtomicRunsOnce) {
  // A scalar atomic: every thread holds the value, one thread (tid 0) executes it, and
  // the old value it returns reaches every thread through LDS.
  auto f = trace("counter", [&](Trace& t) {
    auto p = ptr_arg<ty::i32>(t, "p", true);
    auto out = ptr_arg<ty::i32>(t, "out", true);
    auto old = tl::atomic_add(p, 1, sem::relaxed, scope::gpu);
    tl::store(out + tl::arange(0, 256), tl::broadcast_to(old, {256}));
  });
  auto co = compile_for("gfx942", *f);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_EQ(count(dis, "global_atomic_add"), 1) << dis;
  EXPECT_NE(dis.find("v_cmp_eq_u32"), std::string::npos) << dis;  // the tid == 0 guard
  EXPECT_GT(co.report.at("lds_bytes"), 0);
}

// --- vector width from axis analysis -------------------------------------------------

TEST(AmdgpuLowering, AlignedBf16RowUses128BitLoads) {
  for (const char* arch : kArchs) {
    auto f = row_copy_kernel(true);
    auto co = compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    int wide = count(dis, "global_load_dwordx4") + count(dis, "buffer_load_dwordx4");
    EXPECT_EQ(wide, 2) << arch << "\n" << dis;  // 16 bf16 per thread: two 16-byte loads
    EXPECT_EQ(count(dis, "global_store_dwordx4") + count(dis, "buffer_store_dwordx4"), 2) << arch << "\n" << dis;
  }
}

TEST(AmdgpuLowering, UnalignedBf16RowDoesNotUse128BitLoads) {
  for (const char* arch : kArchs) {
    auto f = row_copy_kernel(false);
    auto co = compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(dis.find("global_load_dwordx4"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(dis.find("global_load_dwordx2"), std::string::npos) << arch << "\n" << dis;
    EXPECT_NE(dis.find("global_load_ushort"), std::string::npos) << arch << "\n" << dis;
  }
}

// --- reductions ------------------------------------------------------------------

TEST(AmdgpuLowering, FourWaveSumGoesThroughLds) {
  for (const char* arch : kArchs) {
    auto f = sum_kernel(4096);
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_NE(dis.find("ds_write"), std::string::npos) << arch << "\n" << dis;
    EXPECT_NE(dis.find("ds_read"), std::string::npos) << arch << "\n" << dis;
    EXPECT_NE(dis.find("s_barrier"), std::string::npos) << arch << "\n" << dis;
    EXPECT_GT(co.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(co.report.at("lds_bytes"), co.shared_bytes);
    EXPECT_EQ(co.block_threads, 256);
    EXPECT_EQ(co.report.at("waves_per_workgroup"), 4);
  }
}

// A [64, 64] bf16 tile through stage S-1 of a tl::shared buffer of S stages: 128-bit LDS
// writes and reads only (the swizzle keeps each thread's 8 bf16 contiguous), the barrier
// the compiler inserted between them, and exactly the buffer's bytes of LDS.
TEST(AmdgpuLowering, SharedTileUses128BitLdsAccessesAndAnInsertedBarrier) {
  for (int stages : {1, 2, 3}) {
    auto f = trace("smem_tile", [&](Trace& t) {
      auto x = ptr_arg<ty::bf16>(t, "x", true);
      auto y = ptr_arg<ty::bf16>(t, "y", true);
      auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
      auto buf = tl::shared<ty::bf16>({stages, 64, 64});
      buf[stages - 1].store(tl::load(x + offs));
      tl::store(y + offs, buf[stages - 1].load());
    });
    for (const char* arch : kArchs) {
      SCOPED_TRACE(testing::Message() << arch << ", " << stages << " stages");
      auto co = compile_for(arch, *f, 4);
      std::string dis = amd::disassemble(co.binary);
      EXPECT_EQ(count(dis, "ds_write_b128"), 2) << dis;  // 16 bf16 per thread: 2 x 16 bytes
      EXPECT_EQ(count(dis, "ds_read_b128"), 2) << dis;
      EXPECT_EQ(count(dis, "ds_write"), count(dis, "ds_write_b128")) << "no narrower LDS writes\n" << dis;
      EXPECT_EQ(count(dis, "ds_read"), count(dis, "ds_read_b128")) << "no narrower LDS reads\n" << dis;
      EXPECT_EQ(count(dis, "s_barrier"), 1) << dis;
      EXPECT_LT(dis.rfind("ds_write_b128"), dis.find("s_barrier")) << dis;
      EXPECT_GT(dis.find("ds_read_b128"), dis.find("s_barrier")) << dis;
      EXPECT_EQ(co.report.at("lds_bytes"), 8192 * stages);
    }
  }
}

// tl::barrier() is a workgroup barrier that also orders LDS: s_barrier between the
// release and acquire fences, which on gfx90a+ the backend turns into waits for the
// outstanding LDS and memory operations before it.
TEST(AmdgpuLowering, UserBarrierIsAnSBarrier) {
  auto f = tltest::user_barrier_kernel();
  for (const char* arch : kArchs) {
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(count(dis, "s_barrier"), 1) << arch << "\n" << dis;
    size_t bar = dis.find("s_barrier");
    size_t first_store = dis.find("global_store");
    size_t last_store = dis.rfind("global_store");
    EXPECT_LT(first_store, bar) << arch;
    EXPECT_GT(last_store, bar) << arch;
  }
}

TEST(AmdgpuLowering, OneWaveSumNeedsNoLds) {
  auto f = sum_kernel(1024);
  auto co = compile_for("gfx942", *f, 1);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_EQ(co.report.at("lds_bytes"), 0);
  EXPECT_EQ(dis.find("s_barrier"), std::string::npos) << dis;
  // lanes combine with DPP / ds_swizzle / ds_bpermute, no LDS memory
  EXPECT_TRUE(dis.find("_dpp") != std::string::npos || dis.find("ds_swizzle") != std::string::npos) << dis;
}

// --- shared-memory budgets (codegen/gpu/capabilities.hpp) -------------------------

TEST(AmdgpuLowering, LdsBudgetIsPerChip) {
  // A [128, 256] f32 transpose exchanges 128 KiB through LDS: gfx950 has 160 KiB per
  // workgroup, gfx942 and gfx90a 64 KiB.
  auto f = tltest::transpose_kernel(128, 256);
  auto co = compile_for("gfx950", *f, 8);
  EXPECT_EQ(co.report.at("lds_bytes"), 128 * 256 * 4);
  EXPECT_EQ(co.shared_bytes, 128 * 256 * 4);
  EXPECT_EQ(co.report.count("dynamic_shared_bytes"), 0u);  // AMD: all of it static
  std::string meta = amd::metadata_yaml(co.binary);
  EXPECT_TRUE(std::regex_search(meta, std::regex(R"(\.group_segment_fixed_size:\s+131072)"))) << meta;
  std::string dis = amd::disassemble(co.binary);
  EXPECT_NE(dis.find("ds_write"), std::string::npos);
  EXPECT_NE(dis.find("ds_read"), std::string::npos);

  for (const char* arch : {"gfx942", "gfx90a"}) {
    auto g = tltest::transpose_kernel(128, 256);
    try {
      compile_for(arch, *g, 8);
      ADD_FAILURE() << arch << ": 128 KiB of LDS compiled";
    } catch (const compile_error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("131072 bytes of shared memory"), std::string::npos) << msg;
      EXPECT_NE(msg.find("65536"), std::string::npos) << msg;
      EXPECT_NE(msg.find(arch), std::string::npos) << msg;
      // The conversion's scratch is over the budget: the error names the line of the op
      // that needs it (the transpose's store; it had no line).
      EXPECT_TRUE(e.file().ends_with("traced_kernels.hpp")) << msg;
      EXPECT_EQ(e.line(), tltest::kTransposeStoreLine) << msg;
    }
  }
}

// User buffers (shared_alloc) and a layout conversion: the conversion's scratch region
// starts after the buffers, which stay live across it, and the code object's LDS size is
// the allocator's total. Every LDS access carries its buffer's alias scope and `noalias`
// of the others (what keeps SIInsertWaitcnts from waiting on unrelated LDS DMA later).
TEST(AmdgpuLowering, ConversionScratchFollowsLiveSharedBuffers) {
  for (const char* arch : kArchs) {
    auto f = tltest::transpose_kernel(64, 64);  // a [64, 64] f32 transpose: 16 KiB of scratch
    tltest::add_live_shared_buffers(*f, {ir::Type::shared_buffer(DType::f32, {64, 64}, 2),    // 32 KiB
                                         ir::Type::shared_buffer(DType::bf16, {64, 32}, 1)});  // 4 KiB
    auto co = compile_for(arch, *f);
    EXPECT_EQ(co.shared_bytes, 36864 + 16384) << arch;
    EXPECT_EQ(co.report.at("lds_bytes"), co.shared_bytes) << arch;
    std::string meta = amd::metadata_yaml(co.binary);
    EXPECT_TRUE(std::regex_search(meta, std::regex(R"(\.group_segment_fixed_size:\s+53248)"))) << meta;
    // The scratch accesses' constant offsets from tl_shared: past the 36864 bytes of
    // buffers (the buffers' own GEPs are unused, so optimized away).
    std::regex gep(R"(getelementptr i8, ptr addrspace\(3\) \S+, i32 (\d+)\n)");
    int geps = 0;
    for (std::sregex_iterator it(co.llvm_ir.begin(), co.llvm_ir.end(), gep), end; it != end; ++it, ++geps)
      EXPECT_GE(std::stoi((*it)[1]), 36864) << arch << " " << it->str();
    EXPECT_GT(geps, 0) << co.llvm_ir;
    // Every LDS load and store carries its scope and the others' noalias.
    std::regex access(R"((load [^\n]*|store [^\n]*), ptr addrspace\(3\)[^\n]*)");
    int accesses = 0;
    for (std::sregex_iterator it(co.llvm_ir.begin(), co.llvm_ir.end(), access), end; it != end; ++it, ++accesses) {
      EXPECT_NE(it->str().find("!alias.scope"), std::string::npos) << arch << " " << it->str();
      EXPECT_NE(it->str().find("!noalias"), std::string::npos) << arch << " " << it->str();
    }
    EXPECT_GT(accesses, 0) << co.llvm_ir;
    EXPECT_NE(co.llvm_ir.find("tl.shared.scratch"), std::string::npos);
    EXPECT_NE(co.llvm_ir.find("tl.shared.buffer1"), std::string::npos);
  }
}

TEST(AmdgpuLowering, PackedRowsNeedNoLdsForGammaOrPerRowStores) {
  // A row of 128 lies within one wave, so nothing crosses waves: gamma is loaded straight
  // into the layout its broadcast reads, and 1/rms is stored from the reduction's own
  // layout (one lane per row), neither through LDS.
  for (const char* arch : kArchs) {
    auto f = packed_rmsnorm_kernel();
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(co.report.at("lds_bytes"), 0) << arch;
    EXPECT_EQ(dis.find("s_barrier"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(dis.find("ds_write"), std::string::npos) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load_dwordx4"), 2) << arch << "\n" << dis;  // x, then gamma: 8 bf16 a lane
    EXPECT_EQ(count(dis, "global_store_dwordx4"), 1) << arch << "\n" << dis;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
  }
}

TEST(AmdgpuLowering, RowBroadcastOfReductionStaysInRegisters) {
  // x - max(x, 1)[:, None] over a [16, 256] tile: the reduced column is a slice of the
  // row layout, so broadcasting it back needs no LDS beyond the reduction itself.
  auto f = trace("softmax_like", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto rows = tl::expand_dims(tl::arange(0, 16), 1);
    auto cols = tl::expand_dims(tl::arange(0, 256), 0);
    auto offs = rows * 256 + cols;
    auto v = tl::load(x + offs);
    auto m = tl::max(v, 1);
    tl::store(y + offs, tl::exp(v - tl::expand_dims(m, 1)));
  });
  auto co = compile_for("gfx942", *f, 4);
  std::string ir = co.llvm_ir;
  // one reduction, one round of barriers at most (the cross-wave combine, if any)
  EXPECT_LE(count(ir, "@llvm.amdgcn.s.barrier()"), 2) << ir;
  EXPECT_EQ(co.report.at("spill_vgpr"), 0);
}

// --- occupancy controls and reports --------------------------------------------------

// A [256, 64] f32 tile per single-wave program, reduced over rows and then reused:
// 256 live values per lane plus their products.
std::unique_ptr<ir::Function> hungry_kernel(int rows) {
  return trace("hungry", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto r = tl::expand_dims(tl::arange(0, rows), 1);
    auto c = tl::expand_dims(tl::arange(0, 64), 0);
    auto offs = r * 64 + c;
    auto v = tl::load(x + offs);
    auto s = tl::sum(v, 0);
    auto e = tl::exp(v);
    auto s2 = tl::sum(e * v, 0);
    tl::store(y + offs, e * tl::expand_dims(s, 0) + v * tl::expand_dims(s2, 0));
  });
}

TEST(AmdgpuLowering, WavesPerEuChangesTheMetadata) {
  auto f1 = hungry_kernel(64);
  auto f2 = hungry_kernel(64);
  auto loose = compile_for("gfx942", *f1, 1, 0);
  auto tight = compile_for("gfx942", *f2, 1, 8);
  std::string y1 = amd::metadata_yaml(loose.binary), y2 = amd::metadata_yaml(tight.binary);
  EXPECT_NE(y1, y2);
  EXPECT_GT(loose.report.at("vgpr"), 64) << y1;
  EXPECT_LE(tight.report.at("vgpr"), 64) << y2;  // 8 waves per SIMD leave 64 VGPRs per lane
  EXPECT_GE(tight.report.at("occupancy"), loose.report.at("occupancy"));
}

TEST(AmdgpuLowering, RegisterHungryKernelReportsSpills) {
  // 128 f32 per lane, their exps and products live across two reductions (~270 values),
  // with the register budget of 4 waves per SIMD (128 VGPRs): it cannot fit.
  auto f = hungry_kernel(128);
  auto co = compile_for("gfx942", *f, 1, 4);
  std::printf("[hungry] vgpr=%lld agpr=%lld spill_vgpr=%lld scratch=%lld\n", (long long)co.report.at("vgpr"),
              (long long)co.report.at("agpr"), (long long)co.report.at("spill_vgpr"),
              (long long)co.report.at("scratch_bytes"));
  EXPECT_GT(co.report.at("spill_vgpr"), 0);
  EXPECT_GT(co.report.at("scratch_bytes"), 0);
}

TEST(AmdgpuLowering, HsacoNamesTheRequestedIsaAndCodeObjectVersion) {
  for (const char* arch : kArchs) {
    auto f = sum_kernel(1024);
    auto co = compile_for(arch, *f);
    amd::ElfInfo e = amd::inspect_elf(co.binary);
    EXPECT_TRUE(e.is_amdgpu);
    EXPECT_EQ(e.mach, arch);
    // v5 (ROCm 6's), but v4 where a ROCm 5 comgr links by default (Debian's, on gfx90a):
    // codegen/amdgpu/link_choice.hpp.
    int major = 0, minor = 0;
    std::sscanf(amd::comgr_version().c_str(), "%d.%d", &major, &minor);
    const bool old_comgr = co.linker == "comgr" && major * 100 + minor < 206;
    EXPECT_EQ(e.code_object_version, old_comgr ? 4 : 5) << arch << " linked by " << co.linker;
    ASSERT_EQ(e.kernels.size(), 1u);
    EXPECT_EQ(e.kernels[0], co.kernel_symbol);
    EXPECT_EQ(co.format, "hsaco");
    EXPECT_NE(co.llvm_ir.find("amdgpu_kernel"), std::string::npos);
    EXPECT_NE(co.llvm_ir.find("\"amdgpu-flat-work-group-size\"=\"256,256\""), std::string::npos);
  }
}

// --- FP8 ---------------------------------------------------------------------------

std::unique_ptr<ir::Function> fp8_kernel(DType fmt) {
  return trace("fp8_roundtrip", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto q = tile<ty::ptr<ty::u8>>(t.add_argument(ir::Type{DType::ptr, fmt, {}}, "q", true));
    auto offs = tl::arange(0, 256);
    auto v = tl::load(x + offs);
    ir::Value* enc = detail::cast(v.get(), fmt, false, std::source_location::current());
    ir::Value* dec = detail::cast(enc, DType::f32, false, std::source_location::current());
    detail::store((q + offs).get(), enc, nullptr, std::source_location::current());
    tl::store(x + offs, tile<ty::f32>(dec));
  });
}

TEST(AmdgpuLowering, Fp8UsesHardwareConvertsWhereTheyExist) {
  struct Case {
    const char* arch;
    DType fmt;
    bool hardware;
  } cases[] = {{"gfx942", DType::f8e4m3fnuz, true}, {"gfx942", DType::f8e5m2fnuz, true},
               {"gfx942", DType::f8e4m3fn, false},  {"gfx950", DType::f8e4m3fn, true},
               {"gfx950", DType::f8e5m2, true},     {"gfx950", DType::f8e4m3fnuz, false},
               {"gfx90a", DType::f8e4m3fnuz, false}};
  for (auto& c : cases) {
    auto f = fp8_kernel(c.fmt);
    auto co = compile_for(c.arch, *f);
    std::string dis = amd::disassemble(co.binary);
    bool cvt = dis.find("v_cvt_pk_fp8_f32") != std::string::npos || dis.find("v_cvt_pk_bf8_f32") != std::string::npos;
    EXPECT_EQ(cvt, c.hardware) << c.arch << " " << name(c.fmt) << "\n" << dis;
  }
}

// Every elementwise op and cast on every dtype the tracer accepts: each must lower and
// select on the target (no "cannot select", no unresolved libm call).
std::unique_ptr<ir::Function> kitchen_sink_kernel() {
  return trace("kitchen_sink", [&](Trace& t) {
    auto loc = std::source_location::current();
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto offs = tl::arange(0, 256);
    ir::Value* v = tl::load(x + offs).get();
    ir::Value* acc = v;
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
      ir::Value* a = detail::cast(v, d, false, loc);
      for (Op op : {Op::exp, Op::exp2, Op::log, Op::log2, Op::sqrt, Op::rsqrt, Op::sin, Op::cos, Op::erf,
                    Op::floor, Op::ceil, Op::abs, Op::neg})
        a = detail::unary(op, a, loc);
      for (Op op : {Op::add, Op::sub, Op::mul, Op::div, Op::rem, Op::min, Op::max}) a = detail::binary(op, a, a, loc);
      a = detail::fma(a, a, a, loc);
      a = detail::where(detail::compare(CmpPred::ne, a, a, loc), a, a, loc);
      acc = detail::binary(Op::add, acc, detail::cast(a, DType::f32, false, loc), loc);
    }
    for (DType d : {DType::i8, DType::u8, DType::i16, DType::i32, DType::u32, DType::i64, DType::u64}) {
      ir::Value* a = detail::cast(v, d, false, loc);
      // a second operand in 1..7: no division by zero, no over-wide shift (both UB)
      ir::Value* k = detail::binary(Op::add, detail::binary(Op::band, a, detail::constant(d, 0, 6, loc), loc),
                                    detail::constant(d, 0, 1, loc), loc);
      for (Op op : {Op::add, Op::sub, Op::mul, Op::div, Op::rem, Op::min, Op::max, Op::band, Op::bor, Op::bxor,
                    Op::shl, Op::shr})
        a = detail::binary(op, a, k, loc);
      a = detail::unary(Op::bnot, a, loc);
      if (is_signed(d)) a = detail::unary(Op::abs, detail::unary(Op::neg, a, loc), loc);
      acc = detail::binary(Op::add, acc, detail::cast(a, DType::f32, false, loc), loc);
    }
    for (DType d : {DType::f64, DType::i1, DType::f8e4m3fn, DType::f8e5m2, DType::f8e4m3fnuz, DType::f8e5m2fnuz}) {
      ir::Value* a = detail::cast(detail::cast(v, d, false, loc), DType::f16, false, loc);
      acc = detail::binary(Op::add, acc, detail::cast(a, DType::f32, false, loc), loc);
    }
    ir::Value* bits = detail::cast(acc, DType::i32, true, loc);
    acc = detail::cast(detail::binary(Op::bxor, bits, detail::constant(DType::i32, 0, 0x1234, loc), loc), DType::f32, true, loc);
    tl::store(x + offs, tile<ty::f32>(acc));
  });
}

TEST(AmdgpuLowering, EveryElementwiseOpAndCastSelects) {
  for (const char* arch : kArchs) {
    auto f = kitchen_sink_kernel();
    auto co = compile_for(arch, *f, 2);
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
  }
}

// Every reduction kind on every reducible dtype, along both axes of a tile spread over
// lanes and warps (shuffles of 8- to 64-bit values, LDS combines), plus scans.
std::unique_ptr<ir::Function> reduction_sink_kernel() {
  return trace("reduction_sink", [&](Trace& t) {
    auto loc = std::source_location::current();
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto r = tl::expand_dims(tl::arange(0, 8), 1);
    auto c = tl::expand_dims(tl::arange(0, 128), 0);
    auto offs = r * 128 + c;
    ir::Value* v = tl::load(x + offs).get();
    ir::Value* acc = nullptr;
    for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::i32, DType::u32, DType::i64}) {
      ir::Value* a = detail::cast(v, d, false, loc);
      for (int axis : {0, 1})
        for (ReduceKind k : {ReduceKind::sum, ReduceKind::max, ReduceKind::min, ReduceKind::argmax, ReduceKind::argmin}) {
          ir::Value* red = detail::cast(detail::reduce(k, a, axis, loc), DType::f32, false, loc);
          ir::Value* s = detail::reduce(ReduceKind::sum, red, 0, loc);
          acc = acc ? detail::binary(Op::add, acc, s, loc) : s;
        }
      ir::Value* scan = detail::cast(detail::cumsum(a, 1, loc), DType::f32, false, loc);
      acc = detail::binary(Op::add, acc, detail::reduce(ReduceKind::max, detail::reduce(ReduceKind::max, scan, 1, loc), 0, loc), loc);
    }
    tl::store(x, tile<ty::f32>(acc));
  });
}

TEST(AmdgpuLowering, EveryReductionSelects) {
  for (const char* arch : kArchs) {
    auto f = reduction_sink_kernel();
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    // 64 lanes: the xor-32 step crosses the wave's halves (gfx950: v_permlane32_swap)
    bool gfx950 = std::string(arch) == "gfx950";
    EXPECT_NE(dis.find(gfx950 ? "v_permlane32_swap" : "ds_bpermute_b32"), std::string::npos) << arch;
    if (gfx950) EXPECT_EQ(dis.find("ds_bpermute_b32"), std::string::npos);
    EXPECT_GT(co.report.at("lds_bytes"), 0) << arch;
  }
}

// --- control flow ------------------------------------------------------------------

TEST(AmdgpuLowering, LoopCarriedTileAndMaskedLoads) {
  // acc += x[k*BLOCK + offs] over k < n/BLOCK, masked tail with `other`
  auto f = trace("loop_sum", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto acc = tl::zeros<ty::f32>({512});
    for (auto k : tl::range(0, n, 512)) {
      auto offs = k + tl::arange(0, 512);
      acc += tl::load(x + offs, offs < n, 0.0f);
    }
    tl::store(out + tl::program_id(0), tl::sum(acc, 0));
  });
  auto co = compile_for("gfx942", *f, 2);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_NE(dis.find("s_cbranch"), std::string::npos) << dis;
  EXPECT_NE(dis.find("global_load_dwordx4"), std::string::npos) << dis;
  EXPECT_EQ(co.report.at("spill_vgpr"), 0);
}

TEST(AmdgpuLowering, CarriedPointerLoadsAsWideAsInductionVariableIndexing) {
  // 1024 f32 per iteration over 4 waves: 4 per lane, one 16-byte load per iteration,
  // whether the block's addresses come from the induction variable or from a pointer
  // tile carried through the loop (axis analysis' fixed point over carried values).
  for (const char* arch : kArchs) {
    auto fiv = row_sum_loop_kernel(RowWalk::induction_variable);
    std::string base = amd::disassemble(compile_for(arch, *fiv, 4).binary);
    int wide = count(base, "global_load_dwordx4");
    EXPECT_GE(wide, 1) << arch << "\n" << base;
    EXPECT_EQ(count(base, "global_load_dword "), 0) << arch << "\n" << base;
    for (RowWalk walk : {RowWalk::carried_add_assign, RowWalk::carried_reassign}) {
      auto f = row_sum_loop_kernel(walk);
      std::string dis = amd::disassemble(compile_for(arch, *f, 4).binary);
      // the only global load is the loop's
      EXPECT_EQ(count(dis, "global_load_dwordx4"), wide) << arch << " walk " << int(walk) << "\n" << dis;
      EXPECT_EQ(count(dis, "global_load_dword "), 0) << arch << " walk " << int(walk) << "\n" << dis;
    }
  }
}

TEST(AmdgpuLowering, DevicePrintIsAClearCompileError) {
  auto f = trace("printer", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    detail::device_print("x", tl::load(x + tl::arange(0, 64)).get(), std::source_location::current());
  });
  try {
    compile_for("gfx942", *f);
    FAIL() << "device_print compiled";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("device_print is not supported on gfx942 yet"), std::string::npos) << e.what();
  }
}

TEST(AmdgpuLowering, GridStrideLoopAssertAndNumPrograms) {
  auto f = trace("grid_stride", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    for (auto start : tl::range(tl::program_id(0) * 256, n, tl::num_programs(0) * 256)) {
      auto offs = start + tl::arange(0, 256);
      auto m = offs < n;
      auto v = tl::load(x + offs, m, 0.0f);
      detail::device_assert((v == v).get(), "no NaN", std::source_location::current());
      tl::store(x + offs, tl::sqrt(tl::abs(v)), m);
    }
  });
  auto co = compile_for("gfx942", *f, 2);
  std::string dis = amd::disassemble(co.binary);
  EXPECT_NE(dis.find("s_trap"), std::string::npos) << dis;
  EXPECT_NE(co.llvm_ir.find("llvm.amdgcn.dispatch.ptr"), std::string::npos);
  EXPECT_NE(co.llvm_ir.find("@tl_assert_line"), std::string::npos);
}

TEST(AmdgpuLowering, ComgrLinkUsesCodeObjectV4) {
  // Debian's comgr 5.2 links only code object v4 (and knows gfx90a, not gfx942); when it
  // is missing or refuses, lld links the same v4 object.
  setenv("TL_AMDGPU_LINKER", "comgr", 1);
  auto f = sum_kernel(1024);
  codegen::CodeObject co;
  try {
    co = compile_for("gfx90a", *f);
  } catch (...) {
    unsetenv("TL_AMDGPU_LINKER");
    throw;
  }
  unsetenv("TL_AMDGPU_LINKER");
  amd::ElfInfo e = amd::inspect_elf(co.binary);
  EXPECT_EQ(e.code_object_version, 4);
  EXPECT_EQ(e.mach, "gfx90a");
  EXPECT_EQ(co.report.at("code_object_version"), 4);
}

TEST(AxisAnalysis, RowPointerFacts) {
  auto f = trace("facts", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", false);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto odd = scalar_arg<ty::i32>(t, "odd", false);
    auto offs = tl::program_id(0) * cols + tl::arange(0, 1024);
    tl::store(x + offs, tl::load(y + offs));
    tl::store(x + (tl::program_id(0) * odd + tl::arange(0, 1024)), tl::load(y + tl::arange(0, 1024) * 2));
  });
  passes::AxisAnalysis a(*f);
  std::vector<const ir::Value*> ptrs;
  ir::walk(f->body, [&](ir::Operation& op) {
    if (op.op == Op::store || op.op == Op::load) ptrs.push_back(op.operands[0]);
  });
  ASSERT_EQ(ptrs.size(), 4u);  // load y, store x, load y*2, store x odd
  EXPECT_EQ(a.get(ptrs[1]).contiguity[0], 1024);
  EXPECT_EQ(a.get(ptrs[1]).divisibility[0], 16);
  EXPECT_EQ(a.vector_width(ptrs[1], 0), 8);   // 16 bytes of bf16
  EXPECT_EQ(a.vector_width(ptrs[0], 0), 1);   // y is only 2-byte aligned
  EXPECT_EQ(a.get(ptrs[2]).contiguity[0], 1); // stride 2
  EXPECT_EQ(a.vector_width(ptrs[3], 0), 1);   // row offset not a multiple of 8 elements
}

// --- the RMSNorm figures -------------------------------------------------------------

TEST(AmdgpuLowering, RmsNormRow4096) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = rmsnorm_kernel(4096, true);
    auto start = std::chrono::steady_clock::now();
    auto co = compile_for(arch, *f, 4);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    auto f2 = rmsnorm_kernel(4096, true);
    auto warm = compile_for(arch, *f2, 4);
    std::string dis = amd::disassemble(co.binary);
    std::printf("[rmsnorm %s B4096/4 waves] vgpr=%lld sgpr=%lld spill_vgpr=%lld lds=%lld occupancy=%lld "
                "compile=%.1f ms (first in this test), %.1f ms (again); dwordx4 loads=%d stores=%d\n",
                arch, (long long)co.report.at("vgpr"), (long long)co.report.at("sgpr"),
                (long long)co.report.at("spill_vgpr"), (long long)co.report.at("lds_bytes"),
                (long long)co.report.at("occupancy"), ms, warm.compile_ms,
                count(dis, "global_load_dwordx4"), count(dis, "global_store_dwordx4"));
    EXPECT_EQ(co.report.at("spill_vgpr"), 0);
    EXPECT_EQ(co.report.at("spill_sgpr"), 0);
    EXPECT_LE(co.report.at("vgpr"), 64);  // Triton 3.6: 38
    EXPECT_EQ(count(dis, "global_load_dwordx4") + count(dis, "buffer_load_dwordx4"), 4) << dis;   // x and w, two 16-byte loads each
    EXPECT_EQ(count(dis, "global_store_dwordx4") + count(dis, "buffer_store_dwordx4"), 2) << dis;
    // A sanity bound against pathological compile times (tiles that took tens of seconds
    // before tl::max_tile_elements), not a performance goal (those are benchmarks:
    // bench/results/compile_*): ~200 ms here normally, 350 under ASan on a loaded 2-core VM.
    EXPECT_LT(warm.compile_ms, 1000.0);
  }
}

// --- the layout algebra --------------------------------------------------------------

TEST(GpuLayout, BlockedLayoutOfABf16Row) {
  // 4096 elements, 8 per thread, 64 lanes, 4 warps: two repetitions per thread.
  gpu::Layout l = gpu::default_layout({4096}, {0}, 8, 64, 4);
  EXPECT_EQ(l.num_regs(), 16);
  EXPECT_EQ(l.reg, (std::vector<uint32_t>{1, 2, 4, 2048}));
  EXPECT_EQ(l.lane[0], 8u);
  EXPECT_EQ(l.warp, (std::vector<uint32_t>{512, 1024}));
  EXPECT_EQ(gpu::contiguous_run(l, 1), 8);
}

TEST(GpuLayout, SmallTilesReplicate) {
  gpu::Layout l = gpu::default_layout({32}, {0}, 4, 64, 4);
  EXPECT_EQ(l.num_regs(), 1);  // fewer elements than threads: one each, copies beyond
  int zero_lanes = 0;
  for (uint32_t b : l.lane) zero_lanes += b == 0;
  EXPECT_EQ(zero_lanes, 1);
  EXPECT_EQ(l.warp, (std::vector<uint32_t>{0, 0}));
}

TEST(GpuLayout, ReduceThenBroadcastIsRegisterOnly) {
  gpu::Layout p = gpu::default_layout({16, 256}, {1, 0}, 4, 64, 4);
  gpu::Layout s = gpu::reduce_layout(p, 1);
  gpu::Layout col = gpu::reshape_layout(s, {16, 1});
  gpu::Layout need = gpu::broadcast_source_layout(p, {16, 1});
  auto map = gpu::register_only_conversion(col, need);
  ASSERT_TRUE(map.has_value());
  // every register of the broadcast reads the row's reduced value in the same thread
  for (int r = 0; r < need.num_regs(); ++r) {
    uint32_t want = need.reg_part(uint32_t(r));
    EXPECT_EQ(col.reg_part(uint32_t((*map)[r])), want);
  }
  // but a transposed layout needs shared memory
  gpu::Layout t = gpu::default_layout({16, 256}, {0, 1}, 4, 64, 4);
  EXPECT_FALSE(gpu::register_only_conversion(p, t).has_value());
}

TEST(GpuLayout, TransposeRoundTrips) {
  gpu::Layout p = gpu::default_layout({32, 64}, {1, 0}, 4, 64, 2);
  gpu::Layout t = gpu::trans_layout(p, {1, 0});
  EXPECT_EQ(t.shape, (std::vector<int>{64, 32}));
  EXPECT_EQ(gpu::trans_source_layout(t, {1, 0}), p);
  // element (i, j) of p is element (j, i) of t, in the same thread and register
  for (int r = 0; r < p.num_regs(); ++r) {
    uint32_t e = p.reg_part(uint32_t(r)), f = t.reg_part(uint32_t(r));
    EXPECT_EQ(gpu::coord(p.shape, e, 0), gpu::coord(t.shape, f, 1));
    EXPECT_EQ(gpu::coord(p.shape, e, 1), gpu::coord(t.shape, f, 0));
  }
}

}  // namespace

using tltest::async_pipeline_kernel;

// The copy is the target's direct-to-LDS load (16 bytes a lane on gfx950, 4 before), the
// wait an s_waitcnt vmcnt(1), and the read after it (relaxed) carries no vmcnt(0) of
// LLVM's: its alias scope says no copy in flight writes what it reads. A plain read of
// the same stage keeps LLVM's conservative vmcnt(0) in front of it.
TEST(AmdgpuLowering, GlobalLoadToSharedAsyncWaitAndRelaxedRead) {
  struct Want {
    const char* arch;
    const char* copy;
    int per_op;  // copies per lane for a [64, 64] bf16 stage and 4 waves
  };
  for (Want w : {Want{"gfx90a", "global_load_dword", 8}, Want{"gfx942", "global_load_lds_dword ", 8},
                 Want{"gfx950", "global_load_lds_dwordx4", 2}}) {
    SCOPED_TRACE(w.arch);
    auto relaxed = compile_for(w.arch, *async_pipeline_kernel(true), 4);
    std::string dis = amd::disassemble(relaxed.binary);
    EXPECT_EQ(count(dis, w.copy), 2 * w.per_op) << dis;  // the prologue's copy and the loop's
    if (std::string(w.arch) == "gfx90a") EXPECT_EQ(count(dis, " lds\n") + count(dis, " lds "), 2 * w.per_op) << dis;
    EXPECT_EQ(count(dis, "buffer_load"), 0) << dis;
    size_t wait = dis.find("s_waitcnt vmcnt(1)");
    ASSERT_NE(wait, std::string::npos) << dis;
    size_t read = dis.find("ds_read", wait);
    ASSERT_NE(read, std::string::npos) << dis;
    EXPECT_EQ(dis.substr(wait, read - wait).find("vmcnt(0)"), std::string::npos)
        << "a wait for every copy before the relaxed read\n" << dis.substr(wait, read - wait);
    EXPECT_NE(dis.substr(wait, read - wait).find("s_barrier"), std::string::npos) << "the inserted barrier after the wait";

    auto plain = compile_for(w.arch, *async_pipeline_kernel(false), 4);
    std::string pdis = amd::disassemble(plain.binary);
    size_t pwait = pdis.find("s_waitcnt vmcnt(1)");
    ASSERT_NE(pwait, std::string::npos) << pdis;
    size_t pread = pdis.find("ds_read", pwait);
    ASSERT_NE(pread, std::string::npos) << pdis;
    EXPECT_NE(pdis.substr(pwait, pread - pwait).find("vmcnt(0)"), std::string::npos)
        << "the plain read of the same stage lost LLVM's conservative wait\n" << pdis.substr(pwait, pread - pwait);
  }
}

// async_wait(n) is vmcnt(n) in gfx9's split field (bits [3:0] and [15:14]): 20 needs
// both halves. One wave copies a [64, 64] bf16 stage with 32 dword copies on gfx942, so
// 20 may really be left in flight and LLVM keeps the wait as written.
TEST(AmdgpuLowering, AsyncWaitEncodesVmcntAboveFifteen) {
  auto f = trace("async_wait20", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
    auto buf = tl::shared<ty::bf16>({1, 64, 64});
    tl::amd::global_load_to_shared(buf[0], x + offs);
    tl::amd::async_wait(20);
    tl::store(y + offs, tl::amd::load_shared_relaxed(buf[0]));
  });
  for (const char* arch : kArchs) {
    SCOPED_TRACE(arch);
    std::string dis = amd::disassemble(compile_for(arch, *f, 1).binary);
    EXPECT_NE(dis.find("s_waitcnt vmcnt(20)"), std::string::npos) << dis;
  }
}

// Masked-off chunks: the LDS DMA writes nothing for an inactive lane, so `other` is
// written by an ordinary LDS store of the same chunk, under the opposite branch.
TEST(AmdgpuLowering, GlobalLoadToSharedWritesOtherForMaskedChunks) {
  auto f = trace("async_masked", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto rows = scalar_arg<ty::i32>(t, "rows", false);
    auto r = tl::arange(0, 64);
    auto offs = tl::expand_dims(r, 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
    auto m = tl::broadcast_to(tl::expand_dims(r < rows, 1), {64, 64});
    auto buf = tl::shared<ty::bf16>({1, 64, 64});
    tl::amd::global_load_to_shared(buf[0], x + offs, m, 7);
    tl::amd::async_wait(0);
    tl::store(y + offs, tl::amd::load_shared_relaxed(buf[0]));
  });
  for (const char* arch : {"gfx942", "gfx950"}) {
    SCOPED_TRACE(arch);
    std::string dis = amd::disassemble(compile_for(arch, *f, 4).binary);
    EXPECT_GE(count(dis, std::string(arch) == "gfx950" ? "global_load_lds_dwordx4" : "global_load_lds_dword"), 1) << dis;
    EXPECT_GE(count(dis, "ds_write"), 1) << "no store of `other`\n" << dis;
  }
}

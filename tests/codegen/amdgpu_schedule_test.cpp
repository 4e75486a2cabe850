// The per-kernel choice of the AMD machine schedule (codegen/amdgpu/schedule.hpp), no GPU:
//   - memory_overlap reads loads in flight and waits off a listing, counter by counter;
//   - a softmax row (16 exponentials a lane) gets the register-minimizing schedule and
//     fewer VGPRs than LLVM's default schedule gives it;
//   - a kernel with two independent global loads keeps both in flight: the schedule
//     that would wait for the first before issuing the second is refused, although it
//     uses fewer registers;
//   - TL_AMDGPU_SCHEDULE forces one schedule, and below -O2 only the default is made;
//   - the first alternative is made on a second thread, the same code as when forced;
//     with TL_AMDGPU_SCHEDULES=occupancy, only where spills or occupancy can change;
//   - every schedule starts from one run of the IR passes: the same choice and VGPRs;
//   - where the LDS allows one workgroup a CU, which the kernel has, within 256 VGPRs
//     (tutorial 03's matmul), no alternative is compared: one code generation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <tuple>

#include "bench/attention_tutorial.hpp"
#include "bench/matmul_tutorial.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "codegen/amdgpu/schedule.hpp"
#include "codegen/target.hpp"
#include "support/traced_kernels.hpp"

namespace {

using namespace tl;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

codegen::CodeObject compile(const std::string& arch, ir::Function& f, int opt_level = 3) {
  codegen::CompileOptions o;
  o.num_warps = 4;
  o.opt_level = opt_level;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

std::string schedule_remark(const codegen::CodeObject& co) {
  for (const auto& r : co.remarks)
    if (r.rfind("schedule: ", 0) == 0) return r;
  return "";
}

// Row softmax over 4096 f32 columns, 4 warps: 16 exponentials a lane.
std::unique_ptr<ir::Function> softmax_kernel() {
  return trace("softmax", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto c = tl::arange(0, 4096);
    auto m = c < cols;
    auto offs = tl::program_id(0) * cols + c;
    auto v = tl::load(x + offs, m, -INFINITY);
    auto e = tl::exp(v - tl::max(v, 0));
    tl::store(y + offs, e / tl::sum(e, 0), m);
  });
}

// SwiGLU over bf16: the gate and the up projection are two independent loads.
std::unique_ptr<ir::Function> swiglu_kernel() {
  return trace("swiglu", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::bf16>(t, "a", true);
    auto out = ptr_arg<ty::bf16>(t, "out", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto col = tl::program_id(1) * 1024 + tl::arange(0, 1024);
    auto m = col < n;
    auto g = tl::load(a + tl::program_id(0) * n * 2 + col, m, 0.0f).to<ty::f32>();
    auto u = tl::load(a + tl::program_id(0) * n * 2 + n + col, m, 0.0f).to<ty::f32>();
    tl::store(out + tl::program_id(0) * n + col, (g / (1.0f + tl::exp(-g)) * u).to<ty::bf16>(), m);
  });
}

TEST(AmdgpuSchedule, MemoryOverlapCountsLoadsInFlightAndWaits) {
  const std::string together =
      "\tglobal_load_dwordx4 v[0:3], v8, s[0:1]  // 0: 0\n"
      "\tglobal_load_dwordx4 v[4:7], v9, s[0:1]  // 8: 0\n"
      "\ts_load_dword s4, s[0:1], 0x10  // 10: 0\n"
      "\ts_waitcnt vmcnt(1) lgkmcnt(0)  // 18: 0\n"
      "\tds_read_b128 v[0:3], v10  // 1c: 0\n"
      "\tds_read_b128 v[4:7], v10 offset:16  // 24: 0\n"
      "\ts_waitcnt vmcnt(0)  // 2c: 0\n"
      "\ts_waitcnt lgkmcnt(0)  // 30: 0\n";
  amd::MemoryOverlap o = amd::memory_overlap(together);
  EXPECT_EQ(o.vm_in_flight, 2);
  EXPECT_EQ(o.vm_waits, 2);
  EXPECT_EQ(o.lgkm_in_flight, 2);  // the s_load was waited for before the ds_reads
  EXPECT_EQ(o.lgkm_waits, 2);

  const std::string serial =
      "\tglobal_load_dwordx4 v[0:3], v8, s[0:1]  // 0: 0\n"
      "\ts_waitcnt vmcnt(0)  // 8: 0\n"
      "\tglobal_load_dwordx4 v[4:7], v9, s[0:1]  // c: 0\n"
      "\ts_waitcnt vmcnt(0)  // 14: 0\n";
  amd::MemoryOverlap s = amd::memory_overlap(serial);
  EXPECT_EQ(s.vm_in_flight, 1);
  EXPECT_EQ(s.vm_waits, 2);
  EXPECT_FALSE(amd::overlaps_as_much(s, o));
  EXPECT_TRUE(amd::overlaps_as_much(o, o));
  // Labels, headers and comments are not instructions.
  EXPECT_EQ(amd::memory_overlap("0000 <k>:\n// global_load_dword\n").vm_in_flight, 0);
}

TEST(AmdgpuSchedule, SoftmaxRowTakesTheRegisterMinimalSchedule) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = softmax_kernel();
    auto chosen = compile(arch, *f);
    auto g = softmax_kernel();
    codegen::CodeObject dflt;
    {
      ScopedEnv e("TL_AMDGPU_SCHEDULE", "default");
      dflt = compile(arch, *g);
    }
    EXPECT_NE(schedule_remark(chosen).find("schedule: iterative-minreg"), std::string::npos)
        << arch << ": " << schedule_remark(chosen);
    EXPECT_LE(chosen.report.at("vgpr") + 8, dflt.report.at("vgpr")) << arch;  // 32 against 46 when measured
    EXPECT_EQ(chosen.report.at("spill_vgpr"), 0) << arch;
    EXPECT_GE(chosen.report.at("occupancy"), dflt.report.at("occupancy")) << arch;
    EXPECT_EQ(schedule_remark(dflt), "") << arch;  // forced: no choice to report
  }
}

TEST(AmdgpuSchedule, IndependentLoadsStayInFlight) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = swiglu_kernel();
    auto chosen = compile(arch, *f);
    auto g = swiglu_kernel();
    codegen::CodeObject minreg;
    {
      ScopedEnv e("TL_AMDGPU_SCHEDULE", "iterative-minreg");
      minreg = compile(arch, *g);
    }
    amd::MemoryOverlap c = amd::memory_overlap(amd::disassemble(chosen.binary));
    amd::MemoryOverlap m = amd::memory_overlap(amd::disassemble(minreg.binary));
    EXPECT_GE(c.vm_in_flight, 2) << arch;  // gate and up issued before either is waited for
    EXPECT_LT(m.vm_in_flight, c.vm_in_flight) << arch << ": the register-minimal schedule no longer serializes "
                                                          "the loads; this test needs another kernel";
    EXPECT_LT(minreg.report.at("vgpr"), chosen.report.at("vgpr")) << arch;
    EXPECT_NE(schedule_remark(chosen).find("iterative-minreg"), std::string::npos) << schedule_remark(chosen);
    EXPECT_NE(schedule_remark(chosen).find("(less memory overlap)"), std::string::npos) << schedule_remark(chosen);
  }
}

// TL_AMDGPU_SCHEDULES=occupancy: the alternatives are compiled only where they can
// change spills or occupancy: the softmax row at 8 waves, and tutorial 03's matmul held
// at one workgroup a CU by its LDS, get the default schedule from one code generation,
// the remark saying why.
TEST(AmdgpuSchedule, NoAlternativeWhereOccupancyCannotChange) {
  ScopedEnv mode("TL_AMDGPU_SCHEDULES", "occupancy");
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = softmax_kernel();
    auto co = compile(arch, *f);
    EXPECT_EQ(co.report.at("occupancy"), 8) << arch;
    EXPECT_EQ(schedule_remark(co).rfind("schedule: default (VGPRs: default ", 0), 0u) << schedule_remark(co);
    EXPECT_NE(schedule_remark(co).find("no alternative compiled"), std::string::npos) << schedule_remark(co);
    EXPECT_EQ(schedule_remark(co).find("iterative"), std::string::npos) << schedule_remark(co);
    auto g = softmax_kernel();
    ScopedEnv e("TL_AMDGPU_SCHEDULE", "default");
    EXPECT_EQ(compile(arch, *g).binary, co.binary) << arch;
  }
  matmul_tutorial::Config c;  // 128x128x64, 3 stages: 96 KiB of LDS
  auto f = matmul_tutorial::trace_ir<tl::bf16>(c);
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  auto co = codegen::compile(*f, codegen::parse_target("gfx942"), o);
  EXPECT_EQ(co.report.at("occupancy"), 1);
  EXPECT_NE(schedule_remark(co).find("no alternative compiled"), std::string::npos) << schedule_remark(co);
}

// Where one more wave a SIMD is within reach (the tutorial attention forward at 4 waves on
// gfx942: 284 VGPRs when measured, 256 for 2 waves), both alternatives are compiled, the
// first on a second thread in a context of its own: what it makes there is the code the
// same schedule makes when forced on this thread (in either mode).
TEST(AmdgpuSchedule, AlternativesNearAnOccupancyStepCompiledAtOnce) {
  std::optional<ScopedEnv> mode;
  mode.emplace("TL_AMDGPU_SCHEDULES", "occupancy");
  attn::Config c;
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  auto co = codegen::compile(*attn::trace_ir(c, 128, false), codegen::parse_target("gfx942"), o);
  const std::string sched = schedule_remark(co);
  ASSERT_GT(co.report.at("vgpr"), 256) << "the case no longer sits above 256 VGPRs: " << sched;
  EXPECT_NE(sched.find("iterative-minreg"), std::string::npos) << sched;
  EXPECT_EQ(sched.find("no alternative compiled"), std::string::npos) << sched;

  mode.reset();  // "all": the softmax row takes iterative-minreg, made beside the default
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = softmax_kernel();
    auto chosen = compile(arch, *f);
    ASSERT_NE(schedule_remark(chosen).find("schedule: iterative-minreg"), std::string::npos) << schedule_remark(chosen);
    auto g = softmax_kernel();
    ScopedEnv e("TL_AMDGPU_SCHEDULE", "iterative-minreg");
    EXPECT_EQ(compile(arch, *g).binary, chosen.binary) << arch;
  }
}

// Every schedule's machine part starts from one run of the code generation's IR passes
// (schedule.cpp, prepare_for_alternatives): the default chosen is the code of the whole
// pipeline forced to the default, byte for byte, and the choice and every candidate's
// VGPRs are those of whole code generations (TL_AMDGPU_REUSE_IR_PASSES=0). Tutorial
// 06's attention forward on gfx942 compiles the default and iterative-minreg and keeps
// the default (maxocc set aside: MaxoccNotComparedWhereMinregStaysPastTheArchitecturalVgprs);
// the softmax row keeps iterative-minreg.
TEST(AmdgpuSchedule, SchedulesShareOneRunOfTheIrPasses) {
  attn::Config c;
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  auto shared = codegen::compile(*attn::trace_ir(c, 128, false), codegen::parse_target("gfx942"), o);
  const std::string sched = schedule_remark(shared);
  ASSERT_EQ(sched.rfind("schedule: default (", 0), 0u) << "the case no longer keeps the default: " << sched;
  ASSERT_NE(sched.find("iterative-minreg"), std::string::npos) << "the case no longer compiles minreg: " << sched;
  {
    ScopedEnv e("TL_AMDGPU_SCHEDULE", "default");
    EXPECT_EQ(codegen::compile(*attn::trace_ir(c, 128, false), codegen::parse_target("gfx942"), o).binary,
              shared.binary);
  }
  ScopedEnv e("TL_AMDGPU_REUSE_IR_PASSES", "0");
  EXPECT_EQ(schedule_remark(codegen::compile(*attn::trace_ir(c, 128, false), codegen::parse_target("gfx942"), o)),
            sched);
  auto f = softmax_kernel();
  auto whole = compile("gfx942", *f);
  unsetenv("TL_AMDGPU_REUSE_IR_PASSES");
  auto g = softmax_kernel();
  EXPECT_EQ(schedule_remark(compile("gfx942", *g)), schedule_remark(whole));
  EXPECT_NE(schedule_remark(whole).find("schedule: iterative-minreg"), std::string::npos) << schedule_remark(whole);
}

// Where iterative-minreg, refused, still leaves the kernel past the 256 architectural
// VGPRs at one wave (no spills), iterative-maxocc is not compared (schedule.cpp): tutorial
// 06's attention forward on gfx942 (default 284, minreg 258). The rule is measured, not
// proven: so the maxocc it no longer compiles is compiled here (forced) and must be what
// the choice would have refused: less memory overlap than the default, more spills, fewer
// waves or no fewer registers. This fails where LLVM's maxocc would now have won.
TEST(AmdgpuSchedule, MaxoccNotComparedWhereMinregStaysPastTheArchitecturalVgprs) {
  attn::Config c;
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  const auto target = codegen::parse_target("gfx942");
  auto chosen = codegen::compile(*attn::trace_ir(c, 128, false), target, o);
  const std::string sched = schedule_remark(chosen);
  ASSERT_EQ(sched.rfind("schedule: default (", 0), 0u) << sched;
  ASSERT_GT(chosen.report.at("vgpr"), 256) << sched;
  EXPECT_NE(sched.find("iterative-minreg"), std::string::npos) << sched;
  EXPECT_NE(sched.find("iterative-maxocc not compared (minreg past 256 VGPRs)"), std::string::npos) << sched;

  codegen::CodeObject maxocc;
  {
    ScopedEnv e("TL_AMDGPU_SCHEDULE", "iterative-maxocc");
    maxocc = codegen::compile(*attn::trace_ir(c, 128, false), target, o);
  }
  const auto& d = chosen.report;
  const auto& m = maxocc.report;
  const int64_t d_spills = d.at("spill_vgpr") + d.at("spill_sgpr") + d.at("scratch_bytes");
  const int64_t m_spills = m.at("spill_vgpr") + m.at("spill_sgpr") + m.at("scratch_bytes");
  const bool allowed = amd::overlaps_as_much(amd::memory_overlap(amd::disassemble(maxocc.binary)),
                                             amd::memory_overlap(amd::disassemble(chosen.binary))) &&
                       m_spills <= d_spills && m.at("occupancy") >= d.at("occupancy");
  const bool saves = std::make_tuple(m_spills, -m.at("occupancy"), m.at("vgpr")) <
                     std::make_tuple(d_spills, -d.at("occupancy"), d.at("vgpr"));
  EXPECT_FALSE(allowed && saves) << "maxocc (" << m.at("vgpr") << " VGPRs) would have been kept: " << sched;
}

// Tutorial 03's matmul (128x128x64, 3 stages, 4 warps) is held at one workgroup a CU by
// its LDS (64 KiB on gfx942, 96 KiB on gfx950), with its registers all architectural
// VGPRs: no schedule can change its occupancy, so the default (what the
// alternatives left it when they were compiled: minreg had less memory overlap, maxocc
// no fewer VGPRs) is kept from one code generation, the code of the default forced.
TEST(AmdgpuSchedule, NoAlternativeWhereTheLdsHoldsTheOccupancy) {
  matmul_tutorial::Config c;
  codegen::CompileOptions o;
  o.num_warps = c.num_warps;
  o.num_stages = c.num_stages;
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto co = codegen::compile(*matmul_tutorial::trace_ir<tl::bf16>(c), codegen::parse_target(arch), o);
    const std::string sched = schedule_remark(co);
    EXPECT_EQ(co.report.at("occupancy"), 1) << arch;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
    EXPECT_LE(co.report.at("vgpr"), 256) << arch;
    EXPECT_EQ(sched.rfind("schedule: default (VGPRs: default ", 0), 0u) << sched;
    EXPECT_NE(sched.find("bytes of LDS allow one workgroup a CU, which it has"), std::string::npos) << sched;
    EXPECT_EQ(sched.find("iterative"), std::string::npos) << sched;
    ScopedEnv e("TL_AMDGPU_SCHEDULE", "default");
    EXPECT_EQ(codegen::compile(*matmul_tutorial::trace_ir<tl::bf16>(c), codegen::parse_target(arch), o).binary,
              co.binary)
        << arch;
  }
}

TEST(AmdgpuSchedule, BelowO2OnlyTheDefault) {
  auto f = softmax_kernel();
  auto co = compile("gfx942", *f, /*opt_level=*/1);
  EXPECT_EQ(schedule_remark(co), "");
}

}  // namespace

namespace {

// The remark's figure for the schedule chosen is the report's VGPRs: the code object's
// .vgpr_count, on gfx90a and later the unified count with the AGPRs in it (the remark
// once added the AGPRs again: 350 printed for a kernel of 303). A matmul whose
// accumulators do not fit the VGPRs takes AGPRs.
TEST(AmdgpuSchedule, RemarkCountsVgprsAsTheReport) {
  // 256x128x64 at 4 warps holds 331 VGPRs, 75 of them AGPRs, when measured; 128x128x64 none.
  for (matmul_tutorial::Config c : {matmul_tutorial::Config{256, 128, 64, 8, 2, 4}, matmul_tutorial::Config{128, 128, 64, 8, 2, 4}}) {
    auto f = matmul_tutorial::trace_ir<tl::bf16>(c);
    codegen::CompileOptions o;
    o.num_warps = c.num_warps;
    o.num_stages = c.num_stages;
    auto co = codegen::compile(*f, codegen::parse_target("gfx942"), o);
    std::string sched = schedule_remark(co);
    ASSERT_FALSE(sched.empty());
    const std::string strategy = sched.substr(10, sched.find(" (") - 10);
    if (c.block_m == 256) EXPECT_GT(co.report.at("agpr"), 0) << "the case no longer takes AGPRs: " << sched;
    EXPECT_NE(sched.find(strategy + " " + std::to_string(co.report.at("vgpr"))), std::string::npos) << sched;
  }
}

}  // namespace

// The NVPTX lowering, checked on the PTX text (no GPU needed here; the lead runs the
// kernels on the H100 machine): kernel entry and thread count, 128-bit loads where
// alignment allows and not otherwise, warp shuffles and CTA barriers in reductions,
// atomics' ordering and scope.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "support/traced_kernels.hpp"
#include "tl/tile.hpp"
#include "tl/math.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::packed_rmsnorm_kernel;
using tltest::ptr_arg;
using tltest::row_sum_loop_kernel;
using tltest::RowWalk;
using tltest::scalar_arg;
using tltest::trace;

codegen::CodeObject compile_for(const std::string& arch, ir::Function& f, int num_warps = 4) {
  codegen::CompileOptions o;
  o.num_warps = num_warps;
  return codegen::compile(f, codegen::parse_target(arch), o);
}

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

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
    auto rstd = tl::rsqrt(tl::sum(xv * xv, 0) / n + eps);
    auto wv = tl::load(w + cols, mask, 0.0).to<ty::f32>();
    tl::store(y + row * stride + cols, (xv * rstd * wv).to<ty::bf16>(), mask);
  });
}

TEST(NvptxLowering, RmsNormAlignedRow) {
  auto f = rmsnorm_kernel(4096, true);
  auto co = compile_for("sm_90", *f, 4);
  std::string p = ptx(co);
  EXPECT_EQ(co.format, "ptx");
  EXPECT_EQ(co.block_threads, 128);
  EXPECT_NE(p.find(".entry rmsnorm_fwd"), std::string::npos) << p;
  EXPECT_NE(p.find(".maxntid 128"), std::string::npos) << p;
  EXPECT_NE(p.find(".target sm_90"), std::string::npos) << p;
  EXPECT_EQ(count(p, "ld.global.v4"), 8) << p;  // 32 bf16 per thread of x and w: 4+4 16-byte loads
  EXPECT_EQ(count(p, "st.global.v4"), 4) << p;
  EXPECT_NE(p.find("shfl.sync.bfly"), std::string::npos) << p;
  EXPECT_NE(p.find("bar.sync"), std::string::npos) << p;
  EXPECT_NE(p.find(".shared"), std::string::npos) << p;
  EXPECT_GT(co.shared_bytes, 0);
}

TEST(NvptxLowering, ThirtyTwoWarpsMakeA1024ThreadProgram) {
  // NVIDIA's largest program: 32 warps of 32. The cross-warp sum combines 32 partials.
  auto f = rmsnorm_kernel(32768, true);
  auto co = compile_for("sm_90", *f, 32);
  std::string p = ptx(co);
  EXPECT_EQ(co.block_threads, 1024);
  EXPECT_NE(p.find(".maxntid 1024"), std::string::npos) << p;
  EXPECT_EQ(count(p, "ld.global.v4"), 8) << p;  // 32 bf16 per thread of x and w
  EXPECT_NE(p.find("bar.sync"), std::string::npos) << p;
  EXPECT_GE(co.shared_bytes, 32 * 4);
}

TEST(NvptxLowering, PackedRowsNeedNoSharedMemoryForGammaOrPerRowStores) {
  // 16 rows of 128 per program, 4 warps: each row lies within one warp. gamma (a row
  // broadcast over the rows) is loaded in the layout the broadcast reads, and the per-row
  // 1/rms is stored from the reduction's layout: no shared memory, no barrier.
  auto f = packed_rmsnorm_kernel();
  auto co = compile_for("sm_90", *f, 4);
  std::string p = ptx(co);
  EXPECT_EQ(p.find("bar.sync"), std::string::npos) << p;
  EXPECT_EQ(p.find(".shared"), std::string::npos) << p;
  EXPECT_EQ(co.shared_bytes, 0);
  EXPECT_EQ(count(p, "ld.global.v4"), 3) << p;  // gamma, then 2 rows of x: 8 bf16 each
  EXPECT_EQ(count(p, "st.global.v4"), 2) << p;
  EXPECT_EQ(count(p, "st.global.b32"), 2) << p;  // 1/rms of this thread's 2 rows, once per row
}

TEST(NvptxLowering, UnalignedRowHasNoVectorLoads) {
  auto f = rmsnorm_kernel(4096, false);
  auto co = compile_for("sm_90", *f, 4);
  std::string p = ptx(co);
  EXPECT_EQ(p.find("ld.global.v"), std::string::npos) << p;
  EXPECT_NE(p.find("ld.global.b16"), std::string::npos) << p;
}

TEST(NvptxLowering, OneWarpReductionNeedsNoBarrier) {
  auto f = trace("warp_sum", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    tl::store(out + tl::program_id(0), tl::sum(tl::load(x + tl::arange(0, 128)), 0));
  });
  auto co = compile_for("sm_80", *f, 1);
  std::string p = ptx(co);
  EXPECT_EQ(count(p, "shfl.sync.bfly"), 5) << p;  // 32 lanes: xor 1, 2, 4, 8, 16
  EXPECT_EQ(p.find("bar.sync"), std::string::npos) << p;
  EXPECT_EQ(co.shared_bytes, 0);
}

// A [64, 64] bf16 tl::shared stage: 128-bit shared stores and loads and the inserted
// bar.sync between them.
TEST(NvptxLowering, SharedTileUsesVectorSharedAccessesAndAnInsertedBarrier) {
  auto f = trace("smem_tile", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
    auto buf = tl::shared<ty::bf16>({2, 64, 64});
    buf[1].store(tl::load(x + offs));
    tl::store(y + offs, buf[1].load());
  });
  auto co = compile_for("sm_90", *f, 4);
  std::string p(co.binary.begin(), co.binary.end());
  EXPECT_GE(count(p, "st.shared.v4"), 1) << p;
  EXPECT_GE(count(p, "ld.shared.v4"), 1) << p;
  EXPECT_EQ(count(p, "st.shared."), count(p, "st.shared.v4")) << "no narrower shared stores\n" << p;
  EXPECT_EQ(count(p, "ld.shared."), count(p, "ld.shared.v4")) << "no narrower shared loads\n" << p;
  EXPECT_EQ(count(p, "bar.sync"), 1) << p;
  EXPECT_LT(p.rfind("st.shared"), p.find("bar.sync")) << p;
  EXPECT_GT(p.find("ld.shared"), p.find("bar.sync")) << p;
  EXPECT_EQ(co.shared_bytes, 16384);
}

TEST(NvptxLowering, UserBarrierIsABarSync) {
  auto f = tltest::user_barrier_kernel();
  std::string p = ptx(compile_for("sm_90", *f, 4));
  EXPECT_EQ(count(p, "bar.sync"), 1) << p;
  EXPECT_LT(p.find("st.global"), p.find("bar.sync")) << p;
  EXPECT_GT(p.rfind("st.global"), p.find("bar.sync")) << p;
}

TEST(NvptxLowering, AtomicOrderingAndScope) {
  auto make = [](sem s, scope sc) {
    return trace("atomics", [&](Trace& t) {
      auto p = ptr_arg<ty::f32>(t, "p", true);
      tl::atomic_add(p + tl::arange(0, 128), tl::full<ty::f32>({128}, 1.0), s, sc);
    });
  };
  auto relaxed = make(sem::relaxed, scope::gpu);
  std::string r = ptx(compile_for("sm_90", *relaxed));
  EXPECT_NE(r.find(".add.f32"), std::string::npos) << r;
  EXPECT_EQ(r.find("acq_rel"), std::string::npos) << r;
  EXPECT_EQ(r.find("fence"), std::string::npos) << r;
  auto ar = make(sem::acq_rel, scope::cta);
  std::string a = ptx(compile_for("sm_90", *ar));
  EXPECT_TRUE(a.find("acq_rel") != std::string::npos || a.find("fence") != std::string::npos) << a;
  EXPECT_NE(a.find(".cta"), std::string::npos) << a;
}

TEST(NvptxLowering, ProgramIdsAndLoops) {
  auto f = trace("grid_loop", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto step = tl::num_programs(0) * 256;
    for (auto start : tl::range(tl::program_id(0) * 256, n, step)) {
      auto offs = start + tl::arange(0, 256);
      auto m = offs < n;
      tl::store(x + offs, tl::fast_expf(tl::load(x + offs, m, 0.0f)), m);  // ex2.approx
    }
  });
  auto co = compile_for("sm_90", *f, 2);
  std::string p = ptx(co);
  EXPECT_NE(p.find("%nctaid.x"), std::string::npos) << p;
  EXPECT_NE(p.find("%ctaid.x"), std::string::npos) << p;
  EXPECT_NE(p.find("ex2.approx"), std::string::npos) << p;
  EXPECT_NE(p.find("ld.global.v4"), std::string::npos) << p;
}

TEST(NvptxLowering, CarriedPointerLoadsAsWideAsInductionVariableIndexing) {
  // 1024 f32 per iteration over 4 warps: 8 per thread, two 16-byte loads, whether the
  // addresses come from the induction variable or from a pointer tile carried through
  // the loop and advanced by BLOCK.
  // (LLVM unrolls the carried-pointer loop by 2 here and the other not: the number of
  // loads differs, their width does not.)
  for (RowWalk walk : {RowWalk::induction_variable, RowWalk::carried_add_assign, RowWalk::carried_reassign}) {
    auto f = row_sum_loop_kernel(walk);
    std::string p = ptx(compile_for("sm_90", *f, 4));
    EXPECT_GE(count(p, "ld.global.v4"), 2) << "walk " << int(walk) << "\n" << p;
    EXPECT_EQ(count(p, "ld.global.v4") % 2, 0) << "walk " << int(walk) << "\n" << p;
    EXPECT_EQ(count(p, "ld.global.v2") + count(p, "ld.global.b32") + count(p, "ld.global.f32"), 0)
        << "walk " << int(walk) << "\n" << p;
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

TEST(NvptxLowering, EveryElementwiseOpAndCastSelects) {
  auto f = kitchen_sink_kernel();
  auto co = compile_for("sm_80", *f, 2);
  std::string p = ptx(co);
  EXPECT_EQ(p.find(".extern"), std::string::npos) << p;  // no libm calls left
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

TEST(NvptxLowering, EveryReductionSelects) {
  auto f = reduction_sink_kernel();
  auto co = compile_for("sm_80", *f, 4);
  EXPECT_NE(ptx(co).find("shfl.sync.bfly"), std::string::npos);
}

TEST(NvptxLowering, DevicePrintIsAClearCompileError) {
  auto f = trace("printer", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    detail::device_print("x", tl::load(x + tl::arange(0, 64)).get(), std::source_location::current());
  });
  try {
    compile_for("sm_90", *f);
    FAIL() << "device_print compiled";
  } catch (const compile_error& e) {
    EXPECT_NE(std::string(e.what()).find("device_print is not supported on sm_90 yet"), std::string::npos);
  }
}

// --- shared-memory budgets (codegen/gpu/capabilities.hpp) -------------------------

// User buffers (shared_alloc) and a layout conversion: 36 KiB of buffers and the
// transpose's 16 KiB of scratch after them make 52 KiB, past the 48 KiB of static shared
// memory, so the whole array is dynamic and the launch passes the allocator's total.
TEST(NvptxLowering, SharedBuffersAndScratchMakeTheDynamicSize) {
  auto f = tltest::transpose_kernel(64, 64);
  tltest::add_live_shared_buffers(*f, {ir::Type::shared_buffer(DType::f32, {64, 64}, 2),
                                       ir::Type::shared_buffer(DType::bf16, {64, 32}, 1)});
  auto co = compile_for("sm_90", *f, 4);
  EXPECT_EQ(co.shared_bytes, 36864 + 16384);
  EXPECT_EQ(co.report.at("dynamic_shared_bytes"), 36864 + 16384);
  std::regex access(R"((load [^\n]*|store [^\n]*), ptr addrspace\(3\)[^\n]*)");
  int accesses = 0;
  for (std::sregex_iterator it(co.llvm_ir.begin(), co.llvm_ir.end(), access), end; it != end; ++it, ++accesses) {
    EXPECT_NE(it->str().find("!alias.scope"), std::string::npos) << it->str();
    EXPECT_NE(it->str().find("!noalias"), std::string::npos) << it->str();
  }
  EXPECT_GT(accesses, 0) << co.llvm_ir;
}

TEST(NvptxLowering, SmallSharedBufferStaysStatic) {
  auto f = rmsnorm_kernel(4096, true);
  auto co = compile_for("sm_90", *f, 4);
  std::string p = ptx(co);
  EXPECT_NE(p.find(".shared .align 16 .b8 tl_shared["), std::string::npos) << p;
  EXPECT_EQ(p.find(".extern .shared"), std::string::npos) << p;
  EXPECT_EQ(co.report.count("dynamic_shared_bytes"), 0u);
}

TEST(NvptxLowering, SharedBufferPast48KiBIsDynamic) {
  // A [128, 256] f32 transpose needs 128 KiB: more than a static __shared__ array may
  // hold, within sm_90's 227 KiB and sm_80's 163 KiB.
  for (const char* arch : {"sm_90", "sm_80"}) {
    auto f = tltest::transpose_kernel(128, 256);
    auto co = compile_for(arch, *f, 8);
    std::string p = ptx(co);
    EXPECT_NE(p.find(".extern .shared .align 16 .b8 tl_shared[]"), std::string::npos) << arch << "\n" << p;
    EXPECT_EQ(co.report.at("dynamic_shared_bytes"), 128 * 256 * 4) << arch;
    EXPECT_EQ(co.report.at("shared_bytes"), 128 * 256 * 4) << arch;
    EXPECT_EQ(co.shared_bytes, 128 * 256 * 4) << arch;
  }
}

TEST(NvptxLowering, SharedBudgetIsPerSm) {
  // 128 KiB is more than sm_86's 99 KiB.
  auto f = tltest::transpose_kernel(128, 256);
  try {
    compile_for("sm_86", *f, 8);
    FAIL() << "128 KiB of shared memory compiled for sm_86";
  } catch (const compile_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("131072 bytes of shared memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(99 * 1024)), std::string::npos) << msg;
    EXPECT_NE(msg.find("sm_86"), std::string::npos) << msg;
  }
}

}  // namespace

// tl::amd's copies on NVIDIA (Gluon's AMD idiom compiles on both): the copy is cp.async,
// .cg and 16 bytes for 16-byte-aligned bf16 rows, .ca and 4 bytes for an i32 tile whose
// rows are only 4-byte aligned (the column offset is odd); each copy op is one commit
// group and async_wait(n) is cp.async.wait_group n before the (barrier and) read.
TEST(NvptxLowering, GlobalLoadToSharedIsCpAsyncWithCommitAndWaitGroups) {
  auto f = tltest::async_pipeline_kernel(/*relaxed=*/true);
  auto co = compile_for("sm_90", *f, 4);
  // (PTX separates an instruction from its operands with a tab)
  std::string p = std::regex_replace(std::string(co.binary.begin(), co.binary.end()), std::regex("[ \t]+"), " ");
  EXPECT_EQ(count(p, "cp.async.cg.shared.global"), 2 * 4) << p;  // 8 KiB / (128 threads x 16 B), twice
  EXPECT_EQ(count(p, "cp.async.commit_group"), 2) << p;
  EXPECT_EQ(count(p, "cp.async.wait_group 1"), 1) << p;
  size_t wait = p.find("cp.async.wait_group 1");
  EXPECT_LT(wait, p.find("bar.sync", wait)) << p;
  EXPECT_LT(p.find("bar.sync", wait), p.find("ld.shared", wait)) << p;

  auto g = trace("async_ca", [&](Trace& t) {
    auto x = ptr_arg<ty::i32>(t, "x", true);
    auto y = ptr_arg<ty::i32>(t, "y", true);
    auto offs = tl::expand_dims(tl::arange(0, 32), 1) * 33 + tl::expand_dims(tl::arange(0, 32), 0) + 1;
    auto buf = tl::shared<ty::i32>({1, 32, 32});
    tl::amd::global_load_to_shared(buf[0], x + offs, offs < 1000, 5);
    tl::amd::async_wait(0);
    tl::store(y + tl::expand_dims(tl::arange(0, 32), 1) * 32 + tl::expand_dims(tl::arange(0, 32), 0),
              tl::amd::load_shared_relaxed(buf[0]));
  });
  auto co2 = compile_for("sm_90", *g, 4);
  std::string p2 = std::regex_replace(std::string(co2.binary.begin(), co2.binary.end()), std::regex("[ \t]+"), " ");
  EXPECT_GE(count(p2, "cp.async.ca.shared.global"), 1) << p2;
  EXPECT_NE(p2.find(", 4;"), std::string::npos) << p2;
  EXPECT_EQ(count(p2, "cp.async.cg"), 0) << p2;
  EXPECT_EQ(count(p2, "cp.async.wait_group 0"), 1) << p2;
}

// An FP8 constant is its encoding in the format, as a cast would make it (3.0 is 0x44 in
// e4m3fn, 0x4C in e4m3fnuz, 0x42 in e5m2, 0x46 in e5m2fnuz; 1000 saturates to the
// format's max finite: 0x7E, 0x7F, 0x7B, 0x7F), not the truncated integer the tracer
// also records (which made every FP8 constant on a GPU the bits 0x03).
TEST(NvptxLowering, Fp8ConstantsAreTheirEncoding) {
  auto store_const = [](auto elem, double value) {
    using E = decltype(elem);
    return trace("fp8_const", [&](Trace& t) {
      auto x = ptr_arg<E>(t, "x", true);
      tl::store(x + tl::program_id(0), tl::full<E>({}, value));
    });
  };
  struct Case {
    std::unique_ptr<ir::Function> f;
    int bits;
  };
  Case cases[] = {{store_const(ty::f8e4m3fn{}, 3.0), 0x44},     {store_const(ty::f8e4m3fnuz{}, 3.0), 0x4C},
                  {store_const(ty::f8e5m2{}, 3.0), 0x42},       {store_const(ty::f8e5m2fnuz{}, 3.0), 0x46},
                  {store_const(ty::f8e4m3fn{}, 1000.0), 0x7E},  {store_const(ty::f8e4m3fnuz{}, 1000.0), 0x7F},
                  {store_const(ty::f8e5m2{}, 1.0e6), 0x7B},     {store_const(ty::f8e5m2fnuz{}, 1.0e6), 0x7F}};
  for (auto& c : cases) {
    auto co = compile_for("sm_90", *c.f, 1);
    EXPECT_NE(co.llvm_ir.find("store i8 " + std::to_string(c.bits) + ","), std::string::npos) << c.bits << "\n" << co.llvm_ir;
  }
}

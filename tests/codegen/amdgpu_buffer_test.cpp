// Buffer loads and stores on AMD, checked in the disassembly (no GPU needed):
// tl::amd::buffer_load/buffer_store become buffer_load/store_dwordx4 where the tile is
// contiguous and aligned, masked ones with no branch around them; ordinary loads and
// stores become buffer accesses when their offsets provably fit (the RMSNorm forward,
// like Triton's), and keep global ones when they may not.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/target.hpp"
#include "support/compile.hpp"
#include "support/traced_kernels.hpp"
#include "tl/amd.hpp"

namespace {

using namespace tl;
using tl::detail::Trace;
using tltest::compile_for;
using tltest::count;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

const char* const kArchs[] = {"gfx90a", "gfx942", "gfx950"};

// Branches on the exec mask skip a masked-off block; buffer accesses need none.
int exec_branches(const std::string& dis) { return count(dis, "s_cbranch_execz") + count(dis, "s_cbranch_execnz"); }

// y[pid*BLOCK + i] = x[...] through tl::amd, optionally masked against n (divisible by 16).
// masked: against n, `offs < n` (the mask becomes the resource's num_records) or, with
// `ge`, the mask `offs >= n` (each masked-off offset is selected past the end).
template <class E> std::unique_ptr<ir::Function> user_copy_kernel(int block, bool masked, bool ge = false) {
  return trace("buffer_copy", [&](Trace& t) {
    auto x = ptr_arg<E>(t, "x", true);
    auto y = ptr_arg<E>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto offs = tl::program_id(0) * block + tl::arange(0, block);
    if (masked) {
      auto m = ge ? offs >= n : offs < n;
      auto v = tl::amd::buffer_load(x, offs, m, 1.0);
      tl::amd::buffer_store(y, offs, v, m);
    } else {
      tl::amd::buffer_store(y, offs, tl::amd::buffer_load(x, offs));
    }
  });
}

TEST(AmdgpuBuffer, UserBufferLoadOfAlignedF32AndBf16IsDwordx4) {
  for (const char* arch : kArchs) {
    // 2048 f32 over 256 lanes: 8 each, two 16-byte accesses; 2048 bf16: one.
    auto f = user_copy_kernel<ty::f32>(2048, false);
    std::string dis = amd::disassemble(compile_for(arch, *f).binary);
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 2) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "buffer_store_dwordx4"), 2) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load"), 0) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_store"), 0) << arch << "\n" << dis;
    auto g = user_copy_kernel<ty::bf16>(2048, false);
    std::string dis2 = amd::disassemble(compile_for(arch, *g).binary);
    EXPECT_EQ(count(dis2, "buffer_load_dwordx4"), 1) << arch << "\n" << dis2;
    EXPECT_EQ(count(dis2, "buffer_store_dwordx4"), 1) << arch << "\n" << dis2;
  }
}

TEST(AmdgpuBuffer, MaskedUserBufferAccessesNeedNoBranch) {
  for (const char* arch : kArchs) {
    for (bool ge : {false, true}) {
      auto f = user_copy_kernel<ty::f32>(2048, true, ge);
      std::string dis = amd::disassemble(compile_for(arch, *f).binary);
      EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 2) << arch << "\n" << dis;
      EXPECT_EQ(count(dis, "buffer_store_dwordx4"), 2) << arch << "\n" << dis;
      EXPECT_EQ(exec_branches(dis), 0) << arch << "\n" << dis;
      // `ge`: offsets selected past num_records (v_cndmask), `other` selected in after.
      if (ge) EXPECT_GE(count(dis, "v_cndmask_b32"), 4) << arch << "\n" << dis;
    }
    // The same kernel through tl::load/tl::store with a run-time-sized offset tile
    // (pid * BLOCK may pass 2^31 / 4 as far as the compiler knows) keeps the global path,
    // whose masked accesses branch around the loads.
    auto g = trace("global_copy", [&](Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto y = ptr_arg<ty::f32>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", true);
      auto offs = tl::program_id(0) * 2048 + tl::arange(0, 2048);
      auto m = offs < n;
      tl::store(y + offs, tl::load(x + offs, m, 1.0), m);
    });
    std::string gdis = amd::disassemble(compile_for(arch, *g).binary);
    EXPECT_EQ(count(gdis, "buffer_load"), 0) << arch << "\n" << gdis;
    EXPECT_EQ(count(gdis, "global_load_dwordx4"), 2) << arch << "\n" << gdis;
    EXPECT_GT(exec_branches(gdis), 0) << arch << "\n" << gdis;
  }
}

// Every element type a load supports goes through a buffer access of its width.
TEST(AmdgpuBuffer, EveryElementTypeSelects) {
  auto one = [](auto tag, const char* what) {
    using E = decltype(tag);
    auto f = trace("buffer_dtype", [&](Trace& t) {
      auto x = ptr_arg<E>(t, "x", true);
      auto y = ptr_arg<E>(t, "y", true);
      auto n = scalar_arg<ty::i32>(t, "n", false);
      auto offs = tl::arange(0, 256);
      tl::amd::buffer_store(y, offs, tl::amd::buffer_load(x, offs, offs < n, 0), offs < n);
    });
    std::string dis = amd::disassemble(compile_for("gfx942", *f).binary);
    EXPECT_GT(count(dis, "buffer_load"), 0) << what << "\n" << dis;
    EXPECT_GT(count(dis, "buffer_store"), 0) << what << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load") + count(dis, "global_store"), 0) << what << "\n" << dis;
  };
  one(ty::f32{}, "f32");
  one(ty::f64{}, "f64");
  one(ty::f16{}, "f16");
  one(ty::bf16{}, "bf16");
  one(ty::i8{}, "i8");
  one(ty::i16{}, "i16");
  one(ty::i32{}, "i32");
  one(ty::i64{}, "i64");
  one(ty::u8{}, "u8");
  one(ty::f8e4m3fnuz{}, "f8e4m3fnuz");
}

// RMSNorm forward, one bf16 row of 4096 per program, as amdgpu_lowering_test's.
std::unique_ptr<ir::Function> rmsnorm_kernel() {
  return trace("rmsnorm_fwd", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto w = ptr_arg<ty::bf16>(t, "w", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto stride = scalar_arg<ty::i32>(t, "stride", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto eps = scalar_arg<ty::f32>(t, "eps", false);
    auto row = tl::program_id(0);
    auto cols = tl::arange(0, 4096);
    auto mask = cols < n;
    // The row's base is a scalar pointer, the columns the buffer offsets: Gluon's way.
    auto xv = tl::amd::buffer_load(x + row * stride, cols, mask, 0.0).to<ty::f32>();
    auto rstd = tl::rsqrt(tl::sum(xv * xv, 0) / n + eps);
    auto wv = tl::amd::buffer_load(w, cols, mask, 0.0).to<ty::f32>();
    tl::amd::buffer_store(y + row * stride, cols, (xv * rstd * wv).to<ty::bf16>(), mask);
  });
}

// VGPRs of the same kernel written with tl::load/tl::store (amdgpu_lowering_test's
// RmsNormRow4096, global loads): 35 on gfx942 and gfx950.
constexpr long long kRmsNormVgprs = 35;

TEST(AmdgpuBuffer, RmsNormForwardWrittenWithBufferOpsIsTritonsCode) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = rmsnorm_kernel();
    auto co = compile_for(arch, *f, 4);
    std::string dis = amd::disassemble(co.binary);
    std::printf("[rmsnorm buffer %s] vgpr=%lld sgpr=%lld spill_vgpr=%lld\n", arch, (long long)co.report.at("vgpr"),
                (long long)co.report.at("sgpr"), (long long)co.report.at("spill_vgpr"));
    // Triton's B4096 forward: buffer_load_dwordx4 x4 (x and w, two each), x2 stores.
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 4) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "buffer_store_dwordx4"), 2) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load_dwordx4"), 0) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_store_dwordx4"), 0) << arch << "\n" << dis;
    EXPECT_EQ(co.report.at("spill_vgpr"), 0) << arch;
    EXPECT_LE(co.report.at("vgpr"), kRmsNormVgprs) << arch;
  }
}

// Ordinary tl::load/tl::store stay global accesses, whatever their offsets: the lowering
// does not turn them into buffer accesses by itself (Triton's ConvertToBufferOps). Tried,
// it cost VGPRs in RMSNorm's wide-row forwards (2048x16384: 62 -> 67; gfx950 16384x2048:
// 19 -> 22; codegen/gpu/README.md), so only tl::amd's explicit ops are buffer accesses.
TEST(AmdgpuBuffer, OrdinaryLoadsAndStoresStayGlobal) {
  auto unbounded = trace("unbounded", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto c = tl::arange(0, 1024);
    auto p = x + (tl::program_id(0) * cols + c);  // the product is in the offset tile
    tl::store(p, tl::load(p) * 2.0f);
  });
  auto wide = trace("wide", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto p = x + tl::arange(0, 1024).to<ty::i64>();
    tl::store(p, tl::load(p) * 2.0f);
  });
  auto big = trace("big", [&](Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    // offsets below 2^31 elements but up to 2^33 bytes
    auto p = x + (tl::arange(0, 1024) + (1 << 30));
    tl::store(p, tl::load(p) * 2.0f);
  });
  for (const char* arch : kArchs)
    for (auto* f : {unbounded.get(), wide.get(), big.get()}) {
      std::string dis = amd::disassemble(compile_for(arch, *f).binary);
      EXPECT_EQ(count(dis, "buffer_load") + count(dis, "buffer_store"), 0) << arch << " " << f->name << "\n" << dis;
      EXPECT_EQ(count(dis, "global_load_dwordx4"), 1) << arch << " " << f->name << "\n" << dis;
    }
}

// The cache key sees the difference between a buffer load and the same global load.
TEST(AmdgpuBuffer, BufferAccessIsPartOfTheKey) {
  auto as = [](bool buffer) {
    return trace("k", [&](Trace& t) {
      auto x = ptr_arg<ty::f32>(t, "x", true);
      auto offs = tl::arange(0, 64);
      auto v = buffer ? tl::amd::buffer_load(x, offs) : tl::load(x + offs);
      tl::store(x + offs, v);
    });
  };
  EXPECT_NE(ir::hash(*as(true)), ir::hash(*as(false)));
  EXPECT_NE(as(true)->str().find("load buffer"), std::string::npos) << as(true)->str();
}

}  // namespace

namespace {

// tl::amd::buffer_load_to_shared of a [32, 64] bf16 tile (4 KiB: 16 bytes a lane over 256
// lanes), rows at or past `rows` masked off with `other`, then read back relaxed.
std::unique_ptr<ir::Function> buffer_copy_kernel(bool masked, float other) {
  return trace("buffer_copy_to_lds", [&](Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto rows = scalar_arg<ty::i32>(t, "rows", true);
    auto r = tl::arange(0, 32), c = tl::arange(0, 64);
    auto offs = tl::expand_dims(r, 1) * 64 + tl::expand_dims(c, 0);
    auto buf = tl::shared<tl::bf16>({1, 32, 64});
    if (masked)
      tl::amd::buffer_load_to_shared(buf[0], x, offs, tl::broadcast_to(tl::expand_dims(r < rows, 1), {32, 64}), other);
    else
      tl::amd::buffer_load_to_shared(buf[0], x, offs);
    tl::amd::async_wait(0);
    tl::store(y + offs, tl::amd::load_shared_relaxed(buf[0]));
  });
}

}  // namespace

// gfx950: one buffer_load_dwordx4 ... lds a lane (16 bytes), no global_load_lds, no
// register load of the tile; a mask with a zero `other` moves masked-off lanes' offsets
// past the bound instead of branching (no exec-mask branch around the copy), and the
// wait is vmcnt(0). gfx942 and gfx90a have no buffer loads into LDS for tl: an error at
// the call's line.
TEST(AmdgpuBuffer, BufferLoadToSharedIsABufferLoadIntoLds) {
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "unmasked");
    auto f = buffer_copy_kernel(masked, 0.0f);
    auto co = compile_for("gfx950", *f);
    std::string dis = amd::disassemble(co.binary);
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 1) << dis;
    EXPECT_NE(dis.find(" lds"), std::string::npos) << dis;
    EXPECT_EQ(count(dis, "global_load_lds"), 0) << dis;
    EXPECT_EQ(count(dis, "global_load_dword"), 0) << dis;
    EXPECT_EQ(count(dis, "s_cbranch_execz"), 0) << dis;
    EXPECT_EQ(count(dis, "vmcnt(0)"), 1) << dis;
    EXPECT_NE(co.tile_ir.find("global_load_to_shared buffer"), std::string::npos) << co.tile_ir;
  }
  // A non-zero `other` is stored by the lanes masked off, which copy nothing.
  {
    auto f = buffer_copy_kernel(true, 7.0f);
    std::string dis = amd::disassemble(compile_for("gfx950", *f).binary);
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 1) << dis;
    EXPECT_GT(count(dis, "ds_write_b128"), 0) << dis;
  }
  for (const char* arch : {"gfx942", "gfx90a"}) {
    auto f = buffer_copy_kernel(true, 0.0f);
    try {
      (void)compile_for(arch, *f);
      ADD_FAILURE() << arch << ": compiled";
    } catch (const tl::compile_error& e) {
      EXPECT_NE(std::string(e.what()).find("has no buffer loads into LDS"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("amdgpu_buffer_test.cpp:"), std::string::npos) << e.what();
    }
  }
}

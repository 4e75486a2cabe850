// Tensor descriptors compiled for gfx942, gfx950 and sm_90 (no GPU here; tests/dsl/
// descriptor_test.cpp runs them, on a GPU with TL_DEVICE): on AMD a descriptor's block
// access is a buffer access through a resource at the block's first element, 16-byte
// (dwordx4) where the shape allows, with no exec-mask branch and the bounds compared once
// per row and column a thread holds, not per element (the mask is an `and` of broadcast
// compares, which LLVM keeps one per distinct row or column); in a K loop of tl::dot the
// loads are buffer loads too. On sm_90 they are masked ld.global.v4 (TMA is a later
// step), accepted by ptxas where it is installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <iterator>
#include <regex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/traced_kernels.hpp"
#include "tl/descriptor.hpp"

using namespace tl;
using tltest::compile_for;
using tltest::count;
using tltest::ptr_arg;
using tltest::scalar_arg;
using tltest::trace;

namespace {

int exec_branches(const std::string& dis) { return count(dis, "s_cbranch_execz") + count(dis, "s_cbranch_execnz"); }
// Integer compares (the bounds; gfx942's f32 -> bf16 rounding adds v_cmp_u_f32 NaN checks).
int vector_compares(const std::string& dis) {
  std::regex cmp(R"(v_cmp\w*_[iu](32|64))");
  return int(std::distance(std::sregex_iterator(dis.begin(), dis.end(), cmp), std::sregex_iterator()));
}
std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }

// y = x + 1 blockwise, [BM, BN] bf16 blocks at (pid0 * BM, pid1 * BN) of an M x N matrix
// (M, N and the row strides divisible by 16, as the launch specializes them).
std::unique_ptr<ir::Function> copy_kernel(int BM, int BN, padding_option padding = padding_option::zero) {
  return trace("desc_copy", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto M = scalar_arg<ty::i32>(t, "M", true);
    auto N = scalar_arg<ty::i32>(t, "N", true);
    auto ldx = scalar_arg<ty::i32>(t, "ldx", true);
    auto ldy = scalar_arg<ty::i32>(t, "ldy", true);
    auto in = tl::make_tensor_descriptor(x, {M, N}, {ldx, 1}, {BM, BN}, padding);
    auto out = tl::make_tensor_descriptor(y, {M, N}, {ldy, 1}, {BM, BN});
    tl::i32 m = tl::program_id(0) * BM, n = tl::program_id(1) * BN;
    out.store({m, n}, (in.load({m, n}).to<ty::f32>() + 1.0f).to<ty::bf16>());
  });
}

// Tutorial 09's descriptor matmul body: bf16 A [M, K] and B [K, N] through descriptors in a
// K loop of tl::dot, C stored through one.
std::unique_ptr<ir::Function> matmul_kernel(int BM, int BN, int BK) {
  return trace("desc_matmul", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::bf16>(t, "a", true);
    auto b = ptr_arg<ty::bf16>(t, "b", true);
    auto c = ptr_arg<ty::bf16>(t, "c", true);
    auto M = scalar_arg<ty::i32>(t, "M", true);
    auto N = scalar_arg<ty::i32>(t, "N", true);
    auto K = scalar_arg<ty::i32>(t, "K", true);
    auto a_desc = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
    auto b_desc = tl::make_tensor_descriptor(b, {K, N}, {N, 1}, {BK, BN});
    auto c_desc = tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN});
    tl::i32 m = tl::program_id(0) * BM, n = tl::program_id(1) * BN;
    auto acc = tl::zeros<ty::f32>({BM, BN});
    for (auto kk : tl::range(0, tl::cdiv(K, BK))) {
      tl::i32 k0 = kk * BK;
      acc = tl::dot(a_desc.load({m, k0}), b_desc.load({k0, n}), acc);
    }
    c_desc.store({m, n}, acc.to<ty::bf16>());
  });
}

}  // namespace

// A [32, 64] bf16 block over 4 waves: 8 elements a lane, one 16-byte access each way, no
// branch, no global access. Compares: the lane's one row and one 8-column group against
// the shape (the lower bounds of uniform offsets fold into scalar ops), shared by the load
// and the store: 2, where one by one the lane's 8 elements would need 8 (16 with both
// bounds).
TEST(DescriptorCodegen, AmdBlockAccessesAreBufferAccessesWithoutPerElementCompares) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = copy_kernel(32, 64);
    std::string dis = amd::disassemble(compile_for(arch, *f).binary);
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 1) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "buffer_store_dwordx4"), 1) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load") + count(dis, "global_store"), 0) << arch << "\n" << dis;
    EXPECT_EQ(exec_branches(dis), 0) << arch << "\n" << dis;
    EXPECT_LE(vector_compares(dis), 2) << arch << "\n" << dis;
    std::printf("%s desc copy [32, 64] bf16: %d v_cmp\n", arch, vector_compares(dis));
  }
}

// padding_option::nan: the same buffer load (its 0 replaced by a select of NaN, no branch)
// and the same compares as zero padding: the mask computed once serves the select too.
TEST(DescriptorCodegen, AmdNanPaddingIsTheSameBufferLoadAndASelect) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    std::string zero = amd::disassemble(compile_for(arch, *copy_kernel(32, 64)).binary);
    std::string dis = amd::disassemble(compile_for(arch, *copy_kernel(32, 64, padding_option::nan)).binary);
    EXPECT_EQ(count(dis, "buffer_load_dwordx4"), 1) << arch << "\n" << dis;
    EXPECT_EQ(count(dis, "global_load"), 0) << arch << "\n" << dis;
    EXPECT_EQ(exec_branches(dis), 0) << arch << "\n" << dis;
    EXPECT_EQ(vector_compares(dis), vector_compares(zero)) << arch << "\n" << dis;
    EXPECT_GT(count(dis, "v_cndmask"), count(zero, "v_cndmask")) << arch << "\n" << dis;
  }
}

// In tutorial 09's K loop the A and B blocks are buffer loads, the loop has no exec branch
// and compares only the K coordinates of what each lane holds (the M and N bounds do not
// change with k: hoisted out of the loop).
TEST(DescriptorCodegen, AmdMatmulKLoopLoadsAreBufferLoads) {
  for (const char* arch : {"gfx942", "gfx950"}) {
    auto f = matmul_kernel(128, 128, 64);
    auto co = compile_for(arch, *f);
    std::string dis = amd::disassemble(co.binary);
    auto split = tltest::amd_split_at_loop(dis);
    ASSERT_FALSE(split.loop.empty()) << arch << "\n" << dis;
    EXPECT_GE(count(split.loop, "buffer_load_dwordx4"), 2) << arch << "\n" << split.loop;
    EXPECT_EQ(count(split.loop, "global_load"), 0) << arch << "\n" << split.loop;
    EXPECT_EQ(exec_branches(split.loop), 0) << arch << "\n" << split.loop;
    // (each dwordx4 is 8 elements: one compare per element would be 8 per load)
    EXPECT_LE(vector_compares(split.loop), count(split.loop, "buffer_load_dwordx4")) << arch << "\n" << split.loop;
    EXPECT_GT(count(dis, "buffer_store"), 0) << arch;
    auto md = amd::read_report(co.binary, 256);
    std::printf("%s desc matmul 128x128x64 bf16: %d buffer loads, %d v_cmp in the loop; %d VGPRs, %d spills\n", arch,
                count(split.loop, "buffer_load"), vector_compares(split.loop), md.vgpr, md.spill_vgpr);
    EXPECT_EQ(md.spill_vgpr, 0) << arch;
  }
}

// sm_90: masked 16-byte global accesses (no TMA yet), accepted by ptxas where present.
TEST(DescriptorCodegen, Sm90BlockAccessesAreMaskedVectorAccesses) {
  auto f = copy_kernel(32, 64);
  std::string p = ptx(compile_for("sm_90", *f));
  EXPECT_GE(count(p, "ld.global.v4") + count(p, "ld.global.nc.v4"), 1) << p;
  EXPECT_GE(count(p, "st.global.v4"), 1) << p;
  auto m = matmul_kernel(128, 128, 64);
  std::string pm = ptx(compile_for("sm_90", *m, 8));
  auto run = tltest::run_ptxas(pm);
  if (run.ran) EXPECT_TRUE(run.ok) << run.output;
}

// Kernels traced straight into tile IR for the lowering tests (no launch, no device):
// arguments declared with the launch specialization they stand for, and the kernels
// that more than one target's lowering test compiles.
#pragma once

#include <memory>
#include <vector>

#include "codegen/ir/builder.hpp"
#include "codegen/ir/ir.hpp"
#include "dsl/src/trace.hpp"
#include "tl/amd.hpp"
#include "tl/tile.hpp"

namespace tltest {

// A pointer argument; `aligned`: 16-byte aligned, as device allocations are.
// `range32`: the launch passed a tl::buffer under 2 GiB (ir::ArgInfo::pointer_range_32).
template <class E>
tl::tile<tl::ty::ptr<E>> ptr_arg(tl::detail::Trace& t, const char* name, bool aligned, bool range32 = false) {
  return tl::tile<tl::ty::ptr<E>>(t.add_argument(tl::ir::Type{tl::DType::ptr, E::dtype, {}}, name, aligned, range32));
}
// A scalar argument; `div16`: its value is divisible by 16 (Triton's divisibility 16).
template <class E> tl::tile<E> scalar_arg(tl::detail::Trace& t, const char* name, bool div16) {
  return tl::tile<E>(t.add_argument(tl::ir::Type{E::dtype, E::dtype, {}}, name, div16));
}
template <class F> std::unique_ptr<tl::ir::Function> trace(const char* name, F&& body) {
  tl::detail::Trace t(name, tl::ir::SrcLoc{__FILE__, unsigned(__LINE__)});
  body(t);
  return t.finish();
}

// RMSNorm forward with 16 rows of 128 per program (seed 004's row packing): gamma is a
// 1-D row broadcast over the rows, and 1/rms is one value per row, stored.
inline std::unique_ptr<tl::ir::Function> packed_rmsnorm_kernel() {
  using namespace tl;
  return trace("rmsnorm_fwd_packed", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto w = ptr_arg<ty::bf16>(t, "w", true);
    auto y = ptr_arg<ty::bf16>(t, "y", true);
    auto rstd = ptr_arg<ty::f32>(t, "rstd", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto c = tl::arange(0, 128);
    auto m = c < cols;
    auto g = tl::load(w + c, m, 0.0f).to<ty::f32>() + 1.0f;
    auto rows = tl::program_id(0) * 16 + tl::arange(0, 16);
    auto offs = tl::expand_dims(rows * cols, 1) + tl::expand_dims(c, 0);
    auto m2 = tl::broadcast_to(tl::expand_dims(m, 0), {16, 128});
    auto v = tl::load(x + offs, m2, 0.0f).to<ty::f32>();
    auto inv = tl::rsqrt(tl::sum(v * v, 1) / 128.0f + 1e-6f);
    tl::store(y + offs, (v * tl::expand_dims(inv, 1) * tl::expand_dims(g, 0)).to<ty::bf16>(), m2);
    tl::store(rstd + rows, inv);
  });
}

// How row_sum_loop_kernel's loop finds its block of the row: from the induction
// variable (x + row*cols + k + c), or Triton's way, a pointer tile carried through the
// loop and advanced by BLOCK each iteration (`p += BLOCK` or `p = p + BLOCK`).
enum class RowWalk { induction_variable, carried_add_assign, carried_reassign };

// out[row] = sum of the f32 row x[row*cols .. row*cols + cols), read in masked blocks
// of `block` by a tl::range loop over the columns: GEMM's K loop in one dimension.
// x and out are 16-byte aligned and cols divisible by 16, as a launch would specialize.
inline std::unique_ptr<tl::ir::Function> row_sum_loop_kernel(RowWalk walk, int block = 1024) {
  using namespace tl;
  return trace("row_sum_loop", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto cols = scalar_arg<ty::i32>(t, "cols", true);
    auto row = tl::program_id(0);
    auto c = tl::arange(0, block);
    auto acc = tl::zeros<ty::f32>({block});
    auto p = x + row * cols + c;
    for (auto k : tl::range(0, cols, block)) {
      auto m = k + c < cols;
      if (walk == RowWalk::induction_variable) {
        acc += tl::load(x + row * cols + k + c, m, 0.0f);
        continue;
      }
      acc += tl::load(p, m, 0.0f);
      if (walk == RowWalk::carried_add_assign) p += block;
      else p = p + block;
    }
    tl::store(out + row, tl::sum(acc, 0));
  });
}

// out[c][r] = x[r][c] for an [M, N] f32 tile: the load is coalesced along N, the store
// along M, so the transpose goes through shared memory, M * N * 4 bytes of it (128 KiB
// for [128, 256]: more than 64 KiB of LDS, and than NVIDIA's 48 KiB of static shared).
inline std::unique_ptr<tl::ir::Function> transpose_kernel(int M, int N) {
  using namespace tl;
  return trace("transpose", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto r = tl::expand_dims(tl::arange(0, M), 1);
    auto c = tl::expand_dims(tl::arange(0, N), 0);
    auto v = tl::load(x + r * N + c);
    auto rt = tl::expand_dims(tl::arange(0, N), 1);
    auto ct = tl::expand_dims(tl::arange(0, M), 0);
    tl::store(y + rt * M + ct, tl::trans(v));
  });
}
inline constexpr unsigned kTransposeStoreLine = __LINE__ - 3;  // the store above

// Two stores of 256 f32 with tl::barrier() between them: the barrier's lowering, which
// must sit between the stores (s_barrier / bar.sync).
inline std::unique_ptr<tl::ir::Function> user_barrier_kernel() {
  using namespace tl;
  return trace("user_barrier", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto offs = tl::arange(0, 256);
    tl::store(x + offs, tl::full<ty::f32>({256}, 1.0));
    tl::barrier();
    tl::store(x + 256 + offs, tl::full<ty::f32>({256}, 2.0));
  });
}

// out = a + b for [64, 64] f32 tiles where a is row-major (contiguous along dim 1) and b
// is read column-major (b[r, c] at b + r + c * 64: contiguous along dim 0): two loads of
// one shape that are coalesced along different dims.
inline std::unique_ptr<tl::ir::Function> row_plus_column_major_kernel() {
  using namespace tl;
  return trace("row_plus_col", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::f32>(t, "a", true);
    auto bt = ptr_arg<ty::f32>(t, "b", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto r = tl::expand_dims(tl::arange(0, 64), 1);
    auto c = tl::expand_dims(tl::arange(0, 64), 0);
    auto va = tl::load(a + r * 64 + c);
    auto vb = tl::load(bt + r + c * 64);
    tl::store(out + r * 64 + c, va + vb);
  });
}

// out[r] = sum over k of x[r, k] for a [32, n] f32 matrix, in blocks of 64 columns: a
// loop-carried [32] accumulator updated by a row reduction each iteration, so it lives
// in the reduction's layout (a slice), not in that of the zeros it starts from.
inline std::unique_ptr<tl::ir::Function> reduction_accumulator_kernel() {
  using namespace tl;
  return trace("reduce_acc", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto out = ptr_arg<ty::f32>(t, "out", true);
    auto n = scalar_arg<ty::i32>(t, "n", true);
    auto r = tl::arange(0, 32);
    auto c = tl::arange(0, 64);
    auto acc = tl::zeros<ty::f32>({32});
    for (auto k : tl::range(0, n, 64)) {
      auto offs = tl::expand_dims(r * n, 1) + tl::expand_dims(k + c, 0);
      acc = acc + tl::sum(tl::load(x + offs), 1);
    }
    tl::store(out + r, acc);
  });
}

// Gives a traced kernel user shared-memory buffers (no DSL function makes them until
// tl::shared arrives): shared_allocs of `types` at the start of its body, live to its end
// through a one-trip loop that carries them and holds a barrier (an effect, so dead-code
// elimination keeps the loop and with it the buffers).
inline std::vector<tl::ir::Value*> add_live_shared_buffers(tl::ir::Function& f, const std::vector<tl::ir::Type>& types,
                                                           unsigned line = 1) {
  using namespace tl;
  ir::SrcLoc loc{"user.cpp", line};
  ir::Builder b(f.body);
  if (!f.body.ops.empty()) b.before(*f.body.ops.front());
  std::vector<ir::Value*> bufs;
  for (const ir::Type& t : types) bufs.push_back(b.create1(Op::shared_alloc, {}, t, loc));
  b.at_end(f.body);
  ir::Value* c0 = b.constant(DType::i32, 0, loc);
  ir::Value* c1 = b.constant(DType::i32, 1, loc);
  ir::Operation& loop = b.create_for(c0, c1, c1, bufs, loc);
  ir::Builder in(*loop.regions[0]);
  in.create(Op::barrier, {}, {}, loc);
  std::vector<ir::Value*> args;
  for (size_t i = 0; i < bufs.size(); ++i) args.push_back(loop.regions[0]->args[1 + i].get());
  in.create(Op::yield, args, {}, loc);
  return bufs;
}

// tl::amd's copies (Gluon's async_copy, seed 001), the double-buffered idiom: the next
// [64, 64] bf16 block is prefetched into stage (k+1)%2 straight into LDS, async_wait(1)
// leaves at most that copy's last load in flight, the current stage is read relaxed.
// `plain_too`: also reads the stage with a plain (conservative) load.
inline std::unique_ptr<tl::ir::Function> async_pipeline_kernel(bool relaxed, bool plain_too = false) {
  using namespace tl;
  return trace("async_pipe", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::bf16>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto n = scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::expand_dims(tl::arange(0, 64), 1) * 64 + tl::expand_dims(tl::arange(0, 64), 0);
    auto buf = tl::shared<ty::bf16>({2, 64, 64});
    tl::amd::global_load_to_shared(buf[0], x + offs);
    auto acc = tl::zeros<ty::f32>({64});
    for (auto k : tl::range(0, n)) {
      tl::i32 next = k + 1;
      tl::amd::global_load_to_shared(buf[next % 2], x + next * 4096 + offs);
      tl::amd::async_wait(1);
      auto cur = relaxed ? tl::amd::load_shared_relaxed(buf[k % 2]) : buf[k % 2].load();
      acc = acc + tl::sum(cur.to<ty::f32>(), 0);
      if (plain_too) acc = acc + tl::sum(buf[k % 2].load().to<ty::f32>(), 1);
    }
    tl::store(y + tl::arange(0, 64), acc);
  });
}

// Triton's tutorial 03 (python/tutorials/03-matrix-multiplication.py, `matmul_kernel`)
// statement for statement, f16, with its tl.assume lines when `assumes`. The unit
// strides along K (A) and N (B, C) are the constant 1, as a launch specializes them.
// `small`: the matrices were passed as tl::buffers under 2 GiB (Triton's torch tensors:
// `tt.pointer_range = 32`), not as raw pointers.
inline std::unique_ptr<tl::ir::Function> tutorial03_matmul_kernel(int bm, int bn, int bk, int group, bool assumes,
                                                                bool small = true) {
  using namespace tl;
  return trace("matmul_kernel", [&](tl::detail::Trace& t) {
    auto a_ptr = ptr_arg<ty::f16>(t, "a_ptr", true, small), b_ptr = ptr_arg<ty::f16>(t, "b_ptr", true, small);
    auto c_ptr = ptr_arg<ty::f16>(t, "c_ptr", true, small);
    auto M = scalar_arg<ty::i32>(t, "M", true), N = scalar_arg<ty::i32>(t, "N", true);
    auto K = scalar_arg<ty::i32>(t, "K", true);
    auto stride_am = scalar_arg<ty::i32>(t, "stride_am", true), stride_bk = scalar_arg<ty::i32>(t, "stride_bk", true);
    auto stride_cm = scalar_arg<ty::i32>(t, "stride_cm", true);
    const i32 stride_ak = 1, stride_bn = 1, stride_cn = 1;
    const int BLOCK_SIZE_M = bm, BLOCK_SIZE_N = bn, BLOCK_SIZE_K = bk, GROUP_SIZE_M = group;
    auto pid = tl::program_id(0);
    auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
    auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
    auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    auto group_id = pid / num_pid_in_group;
    auto first_pid_m = group_id * GROUP_SIZE_M;
    auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
    auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
    auto pid_n = (pid % num_pid_in_group) / group_size_m;
    if (assumes) {
      tl::assume(pid_m >= 0);
      tl::assume(pid_n >= 0);
      tl::assume(stride_am > 0);
      tl::assume(stride_ak > 0);
      tl::assume(stride_bn > 0);
      tl::assume(stride_bk > 0);
      tl::assume(stride_cm > 0);
      tl::assume(stride_cn > 0);
    }
    auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
    auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
    auto offs_k = tl::arange(0, BLOCK_SIZE_K);
    auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * stride_am + tl::expand_dims(offs_k, 0) * stride_ak);
    auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_bn, 0) * stride_bn);
    auto accumulator = tl::zeros<ty::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
    for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
      auto a = tl::load(a_ptrs, tl::expand_dims(offs_k, 0) < K - k * BLOCK_SIZE_K, 0.0f);
      auto b = tl::load(b_ptrs, tl::expand_dims(offs_k, 1) < K - k * BLOCK_SIZE_K, 0.0f);
      accumulator = tl::dot(a, b, accumulator);
      a_ptrs += BLOCK_SIZE_K * stride_ak;
      b_ptrs += BLOCK_SIZE_K * stride_bk;
    }
    auto cc = accumulator.to<ty::f16>();
    auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
    auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
    auto c_ptrs = c_ptr + stride_cm * tl::expand_dims(offs_cm, 1) + stride_cn * tl::expand_dims(offs_cn, 0);
    auto c_mask = tl::expand_dims(offs_cm < M, 1) & tl::expand_dims(offs_cn < N, 0);
    tl::store(c_ptrs, cc, c_mask);
  });
}

}  // namespace tltest

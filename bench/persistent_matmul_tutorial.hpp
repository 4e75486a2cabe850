// Triton's tutorial 09 (python/tutorials/09-persistent-matmul.py) transcribed into tl as
// its users write it, statement for statement: `matmul_kernel_persistent` (NUM_SMS programs
// striding over the output tiles, `_compute_pid`'s grouped order computed twice, once for
// the loads and once for the epilogue through `tile_id_c`, the tutorial's work-around;
// offsets clamped with `tl.where(offs_am < M, offs_am, 0)` and hinted with
// `tl.max_contiguous(tl.multiple_of(...))`; K-tail masks; f16 or e4m3 C) and
// `matmul_kernel_descriptor_persistent` (the same loop over tiles with A, B (given as
// [N, K], `b.T` in the dot) and C through device-side tensor descriptors; the epilogue
// with or without EPILOGUE_SUBTILE: the accumulator reshaped to [BM, 2, BN / 2], permuted,
// tl::split into two halves, each stored through a [BM, BN / 2] descriptor), and
// `matmul_kernel_tma_persistent` (the same with the descriptors made on the host).
//
// One definition for the conformance suite (tests/conformance/tutorial_09_persistent_matmul.cpp,
// against double references at ragged sizes on the CPU and, with TL_DEVICE, a GPU) and
// the benchmark beside Triton 3.6 (bench/persistent_matmul_bench.cpp,
// bench/run_persistent_matmul_bench.py). `flatten=True` on the tile loop is Triton's
// pipeliner flattening the two loops; tl pipelines the K loop (num_stages at launch).
#pragma once

#include <type_traits>
#include <utility>

#include "tl/tl.hpp"

namespace persistent_matmul {

// @triton.jit def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
inline std::pair<tl::i32, tl::i32> _compute_pid(const tl::i32& tile_id, const tl::i32& num_pid_in_group,
                                                const tl::i32& num_pid_m, int GROUP_SIZE_M, int /*NUM_SMS*/) {
  auto group_id = tile_id / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_SIZE_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
  auto pid_m = first_pid_m + (tile_id % group_size_m);
  auto pid_n = (tile_id % num_pid_in_group) / group_size_m;
  return {pid_m, pid_n};
}

template <class T> auto& matmul_kernel_persistent() {
  static auto k = tl::kernel(
    "matmul_kernel_persistent",
    [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<T> c_ptr,  //
       tl::i32 M, tl::i32 N, tl::i32 K,  //
       tl::i32 stride_am, tl::i32 stride_ak,  //
       tl::i32 stride_bk, tl::i32 stride_bn,  //
       tl::i32 stride_cm, tl::i32 stride_cn,  //
       int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int NUM_SMS) {
      auto start_pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
      auto num_tiles = num_pid_m * num_pid_n;

      // NOTE: There is currently a bug in blackwell pipelining that means it can't handle a value being
      // used in both the prologue and epilogue, so we duplicate the counters as a work-around.
      auto tile_id_c = start_pid - NUM_SMS;

      auto offs_k_for_mask = tl::arange(0, BLOCK_SIZE_K);
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

      for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS)) {  // flatten=True
        auto [pid_m, pid_n] = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto start_m = pid_m * BLOCK_SIZE_M;
        auto start_n = pid_n * BLOCK_SIZE_N;
        auto offs_am = start_m + tl::arange(0, BLOCK_SIZE_M);
        auto offs_bn = start_n + tl::arange(0, BLOCK_SIZE_N);
        offs_am = tl::where(offs_am < M, offs_am, 0);
        offs_bn = tl::where(offs_bn < N, offs_bn, 0);
        offs_am = tl::max_contiguous(tl::multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
        offs_bn = tl::max_contiguous(tl::multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);

        auto accumulator = tl::zeros<tl::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
        for (auto ki : tl::range(k_tiles)) {
          auto offs_k = ki * BLOCK_SIZE_K + tl::arange(0, BLOCK_SIZE_K);
          auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * stride_am + tl::expand_dims(offs_k, 0) * stride_ak);
          auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * stride_bk + tl::expand_dims(offs_bn, 0) * stride_bn);

          auto a = tl::load(a_ptrs, tl::expand_dims(offs_k_for_mask, 0) < K - ki * BLOCK_SIZE_K, 0.0);
          auto b = tl::load(b_ptrs, tl::expand_dims(offs_k_for_mask, 1) < K - ki * BLOCK_SIZE_K, 0.0);
          accumulator = tl::dot(a, b, accumulator);
        }

        tile_id_c += NUM_SMS;
        auto [pid_m_c, pid_n_c] = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_cm = pid_m_c * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
        auto offs_cn = pid_n_c * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
        auto c_ptrs = c_ptr + stride_cm * tl::expand_dims(offs_cm, 1) + stride_cn * tl::expand_dims(offs_cn, 0);
        auto c_mask = (tl::expand_dims(offs_cm, 1) < M) & (tl::expand_dims(offs_cn, 0) < N);
        // if (c_ptr.dtype.element_ty == tl.float8e4nv): c = accumulator.to(tl.float8e4nv) else: .to(tl.float16)
        if constexpr (std::is_same_v<T, tl::f8e4m3fn>) tl::store(c_ptrs, accumulator.template to<tl::f8e4m3fn>(), c_mask);
        else tl::store(c_ptrs, accumulator.template to<tl::f16>(), c_mask);
      }
    });
  return k;
}

// @triton.jit def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
//     BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, EPILOGUE_SUBTILE, NUM_SMS, ...)
template <class T> auto& matmul_kernel_descriptor_persistent() {
  static auto k = tl::kernel(
    "matmul_kernel_descriptor_persistent",
    [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<T> c_ptr,  //
       tl::i32 M, tl::i32 N, tl::i32 K,  //
       int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, bool EPILOGUE_SUBTILE, int NUM_SMS) {
      auto start_pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
      auto num_tiles = num_pid_m * num_pid_n;

      auto a_desc = tl::make_tensor_descriptor(a_ptr, {M, K}, {K, 1}, {BLOCK_SIZE_M, BLOCK_SIZE_K});
      auto b_desc = tl::make_tensor_descriptor(b_ptr, {N, K}, {K, 1}, {BLOCK_SIZE_N, BLOCK_SIZE_K});
      auto c_desc = tl::make_tensor_descriptor(c_ptr, {M, N}, {N, 1},
                                               {BLOCK_SIZE_M, EPILOGUE_SUBTILE ? BLOCK_SIZE_N / 2 : BLOCK_SIZE_N});

      // tile_id_c is used in the epilogue to break the dependency between
      // the prologue and the epilogue
      auto tile_id_c = start_pid - NUM_SMS;
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

      for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS)) {  // flatten=FLATTEN, warp_specialize=False
        auto [pid_m, pid_n] = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_am = pid_m * BLOCK_SIZE_M;
        auto offs_bn = pid_n * BLOCK_SIZE_N;

        auto accumulator = tl::zeros<tl::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
        for (auto ki : tl::range(k_tiles)) {
          auto offs_k = ki * BLOCK_SIZE_K;
          auto a = a_desc.load({offs_am, offs_k});
          auto b = b_desc.load({offs_bn, offs_k});
          accumulator = tl::dot(a, tl::trans(b), accumulator);
        }

        tile_id_c += NUM_SMS;
        auto [pid_m_c, pid_n_c] = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_cm = pid_m_c * BLOCK_SIZE_M;
        auto offs_cn = pid_n_c * BLOCK_SIZE_N;

        if (EPILOGUE_SUBTILE) {
          auto acc = tl::reshape(accumulator, {BLOCK_SIZE_M, 2, BLOCK_SIZE_N / 2});
          acc = tl::trans(acc, {0, 2, 1});  // tl.permute
          auto [acc0, acc1] = tl::split(acc);
          c_desc.store({offs_cm, offs_cn}, acc0.template to<T>());
          c_desc.store({offs_cm, offs_cn + BLOCK_SIZE_N / 2}, acc1.template to<T>());
        } else {
          c_desc.store({offs_cm, offs_cn}, accumulator.template to<tl::elem_t<T>>());
        }
      }
    });
  return k;
}

// @triton.jit def matmul_kernel_tma_persistent(a_desc, b_desc, c_desc, M, N, K,
//     BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, FP8_OUTPUT, EPILOGUE_SUBTILE,
//     NUM_SMS, WARP_SPECIALIZE): the descriptor kernel's loop with the three descriptors made
// on the host (triton.tools.tensor_descriptor.TensorDescriptor; here tl::TensorDescriptor,
// their block shapes set as the tutorial's grid function sets them). The output's type is
// the descriptors' (FP8_OUTPUT: T = e4m3); WARP_SPECIALIZE is off (gap "warp_specialize").
template <class T> auto& matmul_kernel_tma_persistent() {
  static auto k = tl::kernel(
    "matmul_kernel_tma_persistent",
    [](tl::tensor_descriptor<T, 2> a_desc, tl::tensor_descriptor<T, 2> b_desc, tl::tensor_descriptor<T, 2> c_desc,  //
       tl::i32 M, tl::i32 N, tl::i32 K,  //
       int BLOCK_SIZE_M, int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, bool EPILOGUE_SUBTILE, int NUM_SMS) {
      auto start_pid = tl::program_id(0);
      auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
      auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
      auto k_tiles = tl::cdiv(K, BLOCK_SIZE_K);
      auto num_tiles = num_pid_m * num_pid_n;

      auto tile_id_c = start_pid - NUM_SMS;
      auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;

      for (auto tile_id : tl::range(start_pid, num_tiles, NUM_SMS)) {  // flatten=True, warp_specialize=False
        auto [pid_m, pid_n] = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_am = pid_m * BLOCK_SIZE_M;
        auto offs_bn = pid_n * BLOCK_SIZE_N;

        auto accumulator = tl::zeros<tl::f32>({BLOCK_SIZE_M, BLOCK_SIZE_N});
        for (auto ki : tl::range(k_tiles)) {
          auto offs_k = ki * BLOCK_SIZE_K;
          auto a = a_desc.load({offs_am, offs_k});
          auto b = b_desc.load({offs_bn, offs_k});
          accumulator = tl::dot(a, tl::trans(b), accumulator);
        }

        tile_id_c += NUM_SMS;
        auto [pid_m_c, pid_n_c] = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS);
        auto offs_am_c = pid_m_c * BLOCK_SIZE_M;
        auto offs_bn_c = pid_n_c * BLOCK_SIZE_N;

        if (EPILOGUE_SUBTILE) {
          auto acc = tl::reshape(accumulator, {BLOCK_SIZE_M, 2, BLOCK_SIZE_N / 2});
          acc = tl::trans(acc, {0, 2, 1});  // tl.permute
          auto [acc0, acc1] = tl::split(acc);
          c_desc.store({offs_am_c, offs_bn_c}, acc0.template to<T>());
          c_desc.store({offs_am_c, offs_bn_c + BLOCK_SIZE_N / 2}, acc1.template to<T>());
        } else {
          c_desc.store({offs_am_c, offs_bn_c}, accumulator.template to<tl::elem_t<T>>());
        }
      }
    });
  return k;
}

// def matmul_tma_persistent(a, b, warp_specialize): the host's descriptors, block shapes
// as the tutorial's grid function sets them (b given as [N, K]).
template <class T> struct tma_descriptors {
  tl::TensorDescriptor<T> a, b, c;
};
template <class T>
tma_descriptors<T> make_tma_descriptors(const tl::buffer<tl::elem_t<T>>& a, const tl::buffer<tl::elem_t<T>>& b,
                                        const tl::buffer<tl::elem_t<T>>& c, int M, int N, int K, int BLOCK_SIZE_M,
                                        int BLOCK_SIZE_N, int BLOCK_SIZE_K, bool EPILOGUE_SUBTILE) {
  using D = tl::TensorDescriptor<T>;
  return {D::from_buffer(a, {M, K}, {BLOCK_SIZE_M, BLOCK_SIZE_K}), D::from_buffer(b, {N, K}, {BLOCK_SIZE_N, BLOCK_SIZE_K}),
          D::from_buffer(c, {M, N}, {BLOCK_SIZE_M, EPILOGUE_SUBTILE ? BLOCK_SIZE_N / 2 : BLOCK_SIZE_N})};
}

}  // namespace persistent_matmul

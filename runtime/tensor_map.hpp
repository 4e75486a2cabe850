// The CUDA tensor map (CUtensorMap) of a host tensor descriptor: what Hopper's TMA (the
// bulk tensor copies, cp.async.bulk.tensor) takes to move a descriptor's block between
// global and shared memory. Triton's launcher encodes one for each TensorDescriptor
// argument of a kernel compiled for sm_90; this is tl's encoder, in two parts:
//
//   tensor_map_request   what cuTensorMapEncodeTiled is asked for (dims innermost first,
//                        strides in bytes, the box, the fill), or why TMA cannot take the
//                        descriptor: pure, tested without a GPU against the driver's
//                        documented constraints;
//   encode_tensor_map    the 128-byte map itself, from the driver's entry point (loaded at
//                        run time as every CUDA entry point tl uses), cached per request so
//                        that repeated launches with one descriptor value do not re-encode.
//
// The driver's constraints (CUDA driver API, "Tensor Map Object Management",
// cuTensorMapEncodeTiled), with interleave none as here: rank 1 to 5; the global address 16-byte
// aligned; every dim in [1, 2^32]; the rank - 1 strides (bytes) multiples of 16 below 2^40;
// every box dim in [1, 256], the innermost box dim's bytes a multiple of 16 and, with a
// swizzle, at most its span (32, 64 or 128 bytes); element strides in [1, 8]; NaN fill
// for floating-point map types only. The layout it describes, strides[0] >= dim[0] x bytes
// and strides[i] >= strides[i - 1] x dim[i], is required too (the driver documents strides
// as the dims plus padding; a descriptor that overlaps itself takes the non-TMA path). One
// rule the documentation lacks, measured on the H200 (driver 580.159,
// tests/runtime/tensor_map_test.cpp): a box of more than 228 KiB is refused; tl takes boxes
// of at most kMaxBoxBytes, the shared memory one sm_90 program may have.
//
// Used by the kernels tl compiles under launch_options::tma (off by default): the map a
// grid-constant kernel parameter, each load one TMA copy waited for on an mbarrier
// (Op::tensor_map_load), or in a pipelined loop a copy issued iterations ahead into a
// stage waited for on the stage's mbarrier (codegen/passes/pipeline_loops.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
#include <string>

#include "runtime/cuda_api.hpp"
#include "tl/descriptor.hpp"
#include "tl/dtype.hpp"

namespace tl::cuda {

// The largest box tl asks for: 227 KiB, an sm_90 program's shared memory (opted in).
constexpr uint64_t kMaxBoxBytes = 232448;

// cuda.h's enums, as tl passes them (ints).
enum class TensorMapDataType : int {
  uint8 = 0, uint16 = 1, uint32 = 2, int32 = 3, uint64 = 4, int64 = 5,
  float16 = 6, float32 = 7, float64 = 8, bfloat16 = 9,
};
constexpr int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
// CUtensorMapSwizzle: none, 32B, 64B, 128B (the NVMMA shared layouts wgmma reads).
constexpr int CU_TENSOR_MAP_SWIZZLE_NONE = 0;
constexpr int CU_TENSOR_MAP_SWIZZLE_32B = 1;
constexpr int CU_TENSOR_MAP_SWIZZLE_64B = 2;
constexpr int CU_TENSOR_MAP_SWIZZLE_128B = 3;
constexpr int CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2;
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;                  // out of bounds reads 0
constexpr int CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1;  // reads NaN

// The map type of a tl element type: TMA moves bytes, so integers and the 8-bit floats
// go as unsigned integers of their width (as Triton's launcher does for FP8); only the
// float types it names can fill with NaN. nullopt: an element type TMA cannot move
// (i1, pointers).
std::optional<TensorMapDataType> tensor_map_data_type(DType e);

// cuTensorMapEncodeTiled's arguments, dims innermost first (the reverse of tl's order).
struct TensorMapRequest {
  TensorMapDataType data_type = TensorMapDataType::uint8;
  uint32_t rank = 0;
  uint64_t global_address = 0;
  std::array<uint64_t, 5> global_dim{};      // elements
  std::array<uint64_t, 4> global_strides{};  // bytes, of dims 1 .. rank-1
  std::array<uint32_t, 5> box_dim{};         // the block, elements
  std::array<uint32_t, 5> element_strides{}; // 1 each: every element of the box
  int interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  int swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  int l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  int oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;

  bool operator==(const TensorMapRequest&) const = default;
};

// The request for a descriptor (tl's order: dims outermost first, strides in elements,
// the block's dims) whose box the kernel writes into shared memory with `swizzle_bytes`'
// swizzle (0, 32, 64 or 128), or why TMA cannot take it: `why_not` says which constraint
// fails, in the user's terms.
struct TensorMapChoice {
  std::optional<TensorMapRequest> request;
  std::string why_not;
};
TensorMapChoice tensor_map_request(DType e, uint64_t base, std::span<const int64_t> shape,
                                   std::span<const int64_t> strides, std::span<const int> block,
                                   padding_option padding, int swizzle_bytes);
// The same where TMA was asked for: a tl::launch_error naming `loc` (the line that made
// the descriptor) when TMA cannot take it.
TensorMapRequest require_tensor_map(DType e, uint64_t base, std::span<const int64_t> shape,
                                    std::span<const int64_t> strides, std::span<const int> block,
                                    padding_option padding, int swizzle_bytes, const std::source_location& loc);

// A CUtensorMap: 128 opaque bytes, 64-byte aligned (the driver's and cp.async.bulk.tensor's
// requirement for the map's address).
struct alignas(64) TensorMap {
  std::array<uint8_t, 128> bytes{};
};
static_assert(sizeof(TensorMap) == 128);

// The map of `r` from the driver's cuTensorMapEncodeTiled (CUDA 12.0+; a device_error
// where the driver lacks it or refuses the request). Cached per request, process-wide and
// thread-safe: a request seen before is not encoded again (the map depends on the request
// alone, not on the device or context). The cache holds at most 4096 maps; past that it
// starts over.
TensorMap encode_tensor_map(const Api& api, const TensorMapRequest& r);
// How many maps encode_tensor_map has asked the driver for (cache misses), for tests.
uint64_t tensor_map_encodes();

// The request a launch encodes for a host descriptor whose kernel parameter takes its
// map (launch_options::tma on sm_90): the map's swizzle the one of the shared buffer its
// loads land in (tl::detail::tensor_map_swizzle_bytes). nullopt where tl does not load the
// descriptor through TMA: its block is not one tl takes, or a rule above refuses it (a
// descriptor TMA cannot take is loaded as on other GPUs, not refused).
std::optional<TensorMapRequest> tma_request(const detail::host_descriptor_data& d);

}  // namespace tl::cuda

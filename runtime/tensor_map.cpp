#include "runtime/tensor_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "tl/error.hpp"

namespace tl::cuda {

std::optional<TensorMapDataType> tensor_map_data_type(DType e) {
  switch (e) {
    case DType::i8: case DType::u8: case DType::f8e4m3fn: case DType::f8e5m2: case DType::f8e4m3fnuz:
    case DType::f8e5m2fnuz: case DType::f4e2m1: case DType::e8m0:
      return TensorMapDataType::uint8;
    case DType::i16: case DType::u16: return TensorMapDataType::uint16;
    case DType::i32: return TensorMapDataType::int32;
    case DType::u32: return TensorMapDataType::uint32;
    case DType::i64: return TensorMapDataType::int64;
    case DType::u64: return TensorMapDataType::uint64;
    case DType::f16: return TensorMapDataType::float16;
    case DType::bf16: return TensorMapDataType::bfloat16;
    case DType::f32: return TensorMapDataType::float32;
    case DType::f64: return TensorMapDataType::float64;
    case DType::i1: case DType::ptr: return std::nullopt;
  }
  return std::nullopt;
}

namespace {

bool float_map_type(TensorMapDataType t) {
  return t == TensorMapDataType::float16 || t == TensorMapDataType::bfloat16 || t == TensorMapDataType::float32 ||
         t == TensorMapDataType::float64;
}

std::string dims_str(std::span<const int> v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

}  // namespace

TensorMapChoice tensor_map_request(DType e, uint64_t base, std::span<const int64_t> shape,
                                   std::span<const int64_t> strides, std::span<const int> block,
                                   padding_option padding, int swizzle_bytes) {
  TensorMapChoice c;
  auto no = [&](std::string why) {
    c.why_not = std::move(why);
    return c;
  };
  const std::optional<TensorMapDataType> type = tensor_map_data_type(e);
  if (!type) return no(fmt::format("TMA does not move {} elements", name(e)));
  const size_t rank = shape.size();
  if (rank < 1 || rank > 5) return no(fmt::format("the descriptor has {} dims; TMA takes 1 to 5", rank));
  if (strides.size() != rank || block.size() != rank)
    return no(fmt::format("{} shape entries, {} strides and {} block dims", rank, strides.size(), block.size()));
  if (swizzle_bytes != 0 && swizzle_bytes != 32 && swizzle_bytes != 64 && swizzle_bytes != 128)
    return no(fmt::format("a {}-byte swizzle: TMA swizzles 32, 64 or 128 bytes", swizzle_bytes));
  const uint64_t eb = uint64_t(byte_width(e));
  if (base % 16 != 0) return no(fmt::format("the base {:#x} is not 16-byte aligned", base));
  TensorMapRequest r;
  r.data_type = *type;
  r.rank = uint32_t(rank);
  r.global_address = base;
  // TMA's dim 0 is tl's last (the contiguous one).
  for (size_t t = 0; t < rank; ++t) {
    const size_t d = rank - 1 - t;
    if (shape[d] < 1 || uint64_t(shape[d]) > (uint64_t(1) << 32))
      return no(fmt::format("shape[{}] = {}: TMA takes dims of 1 to 2^32 elements", d, shape[d]));
    if (block[d] < 1 || block[d] > 256)
      return no(fmt::format("block_shape {}: dim {} is {}; a TMA box dim is at most 256", dims_str(block), d,
                            block[d]));
    if (!std::has_single_bit(unsigned(block[d])))
      return no(fmt::format("block_shape {}: dim {} is {}, not a power of two", dims_str(block), d, block[d]));
    r.global_dim[t] = uint64_t(shape[d]);
    r.box_dim[t] = uint32_t(block[d]);
    r.element_strides[t] = 1;
  }
  if (strides[rank - 1] != 1)
    return no(fmt::format("the last stride is {}; TMA reads the last dim contiguous (stride 1)", strides[rank - 1]));
  for (size_t t = 1; t < rank; ++t) {
    const size_t d = rank - 1 - t;
    if (strides[d] < 0) return no(fmt::format("strides[{}] is {}; TMA takes non-negative strides", d, strides[d]));
    const uint64_t bytes = uint64_t(strides[d]) * eb;
    if (bytes % 16 != 0)
      return no(fmt::format("strides[{}] = {} is {} bytes, not a multiple of 16", d, strides[d], bytes));
    if (bytes >= (uint64_t(1) << 40))
      return no(fmt::format("strides[{}] = {} is {} bytes; TMA takes strides below 2^40 bytes", d, strides[d], bytes));
    // The layout the driver describes: each dim's stride spans the dims inside it.
    // (in 128 bits: a stride below 2^40 times a dim up to 2^32 may pass 2^64)
    const unsigned __int128 inner =
        t == 1 ? (unsigned __int128)r.global_dim[0] * eb : (unsigned __int128)r.global_strides[t - 2] * r.global_dim[t - 1];
    if (bytes < inner)
      return no(fmt::format("strides[{}] = {} ({} bytes) is less than the {} bytes of the dims inside it: TMA takes "
                            "no overlapping dims", d, strides[d], bytes, uint64_t(std::min<unsigned __int128>(inner, UINT64_MAX))));
    r.global_strides[t - 1] = bytes;
  }
  // Undocumented, measured (H200, driver 580.159): the driver refuses a box of more than
  // 228 KiB (233472 bytes, an SM's shared memory). tl asks for at most what one program's
  // shared memory holds on sm_90 (227 KiB), where the box has to land anyway.
  uint64_t box_bytes = eb;
  for (size_t t = 0; t < rank; ++t) box_bytes *= r.box_dim[t];
  if (box_bytes > kMaxBoxBytes)
    return no(fmt::format("block_shape {} is {} bytes; a TMA box lands in one program's shared memory, at most {} "
                          "bytes (227 KiB) on sm_90", dims_str(block), box_bytes, kMaxBoxBytes));
  const uint64_t inner_box = uint64_t(r.box_dim[0]) * eb;
  if (inner_box % 16 != 0)
    return no(fmt::format("the block's last dim is {} x {} = {} bytes; a TMA box's innermost dim is a multiple of 16 "
                          "bytes", r.box_dim[0], eb, inner_box));
  if (swizzle_bytes != 0 && inner_box > uint64_t(swizzle_bytes))
    return no(fmt::format("the block's last dim is {} bytes, more than the {}-byte swizzle's span", inner_box,
                          swizzle_bytes));
  r.swizzle = swizzle_bytes == 0 ? CU_TENSOR_MAP_SWIZZLE_NONE
              : swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
              : swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                    : CU_TENSOR_MAP_SWIZZLE_128B;
  if (padding == padding_option::nan) {
    if (!float_map_type(*type))
      return no(fmt::format("NaN padding of {} elements: TMA fills NaN for f16, bf16, f32 and f64 only", name(e)));
    r.oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  }
  c.request = r;
  return c;
}

TensorMapRequest require_tensor_map(DType e, uint64_t base, std::span<const int64_t> shape,
                                    std::span<const int64_t> strides, std::span<const int> block,
                                    padding_option padding, int swizzle_bytes, const std::source_location& loc) {
  TensorMapChoice c = tensor_map_request(e, base, shape, strides, block, padding, swizzle_bytes);
  if (!c.request)
    throw launch_error("tl::TensorDescriptor: TMA cannot take this descriptor: " + c.why_not, loc.file_name(),
                       loc.line());
  return *c.request;
}

namespace {

struct RequestHash {
  size_t operator()(const TensorMapRequest& r) const {
    // FNV-1a over the fields (the struct has padding: hash the values, not its bytes).
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](uint64_t v) {
      for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
    };
    mix(uint64_t(r.data_type)), mix(r.rank), mix(r.global_address);
    for (size_t i = 0; i < 5; ++i) mix(r.global_dim[i]), mix(r.box_dim[i]), mix(r.element_strides[i]);
    for (uint64_t s : r.global_strides) mix(s);
    mix(uint64_t(r.interleave)), mix(uint64_t(r.swizzle)), mix(uint64_t(r.l2_promotion)), mix(uint64_t(r.oob_fill));
    return size_t(h);
  }
};

std::mutex g_maps_mutex;
std::unordered_map<TensorMapRequest, TensorMap, RequestHash> g_maps;
uint64_t g_encodes = 0;
constexpr size_t kMaxMaps = 4096;

}  // namespace

TensorMap encode_tensor_map(const Api& api, const TensorMapRequest& r) {
  {
    std::lock_guard<std::mutex> lock(g_maps_mutex);
    if (auto it = g_maps.find(r); it != g_maps.end()) return it->second;
  }
  if (!api.cuTensorMapEncodeTiled)
    throw device_error("cuTensorMapEncodeTiled: the CUDA driver has no tensor maps (CUDA 12.0 or later has them)");
  TensorMap m;
  api.check(api.cuTensorMapEncodeTiled(m.bytes.data(), int(r.data_type), r.rank,
                                       reinterpret_cast<void*>(uintptr_t(r.global_address)), r.global_dim.data(),
                                       r.global_strides.data(), r.box_dim.data(), r.element_strides.data(),
                                       r.interleave, r.swizzle, r.l2_promotion, r.oob_fill),
            "cuTensorMapEncodeTiled");
  std::lock_guard<std::mutex> lock(g_maps_mutex);
  ++g_encodes;
  // Maps are cheap to make again: a process that makes descriptors of ever new buffers
  // starts the cache over rather than growing it without bound.
  if (g_maps.size() >= kMaxMaps) g_maps.clear();
  g_maps.emplace(r, m);
  return m;
}

uint64_t tensor_map_encodes() {
  std::lock_guard<std::mutex> lock(g_maps_mutex);
  return g_encodes;
}

std::optional<TensorMapRequest> tma_request(const detail::host_descriptor_data& d) {
  const int swizzle = detail::tensor_map_swizzle_bytes(d.dtype, d.block);
  if (swizzle < 0) return std::nullopt;
  return tensor_map_request(d.dtype, d.base, d.shape, d.strides, d.block, d.padding, swizzle).request;
}

}  // namespace tl::cuda

namespace tl::detail {

void choose_tensor_maps(std::span<ArgValue> args, const launch_options& o, const std::string& target) {
  // (sm_90 alone: the form of the copy the lowering emits is Triton's for sm_90)
  const bool hopper = o.tma && target.rfind("sm_90", 0) == 0;
  for (ArgValue& a : args)
    if (a.tensor_map) a.trace_time = !(hopper && cuda::tma_request(*a.tensor_map));
}

void choose_tensor_maps(std::span<ArgValue> args, const launch_options& o, const device& dev) {
  if (!o.tma || dev.kind() != device_kind::cuda) {
    for (ArgValue& a : args)
      if (a.tensor_map) a.trace_time = true;
    return;
  }
  choose_tensor_maps(args, o, dev.target());
}

}  // namespace tl::detail

// The CUDA tensor map of a host descriptor (runtime/tensor_map.hpp): the request tl makes
// of cuTensorMapEncodeTiled, checked against the driver's documented constraints without a
// GPU (the fields, each constraint's refusal, random descriptors against the constraints
// restated here), and on an NVIDIA GPU against the driver itself (what tl accepts the
// driver encodes; what the documented constraints refuse the driver refuses too; the cache).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/cuda_api.hpp"
#include "runtime/tensor_map.hpp"
#include "tl/error.hpp"

namespace {

using tl::DType;
using tl::padding_option;
namespace cuda = tl::cuda;

cuda::TensorMapChoice request(DType e, uint64_t base, std::vector<int64_t> shape, std::vector<int64_t> strides,
                              std::vector<int> block, int swizzle = 0,
                              padding_option padding = padding_option::zero) {
  return cuda::tensor_map_request(e, base, shape, strides, block, padding, swizzle);
}

// Expects a refusal whose reason contains `what`.
void refused(const cuda::TensorMapChoice& c, const std::string& what) {
  EXPECT_FALSE(c.request.has_value()) << "expected a refusal mentioning '" << what << "'";
  EXPECT_NE(c.why_not.find(what), std::string::npos) << c.why_not;
}

constexpr uint64_t kBase = 0x7f0000001000ull;

TEST(TensorMap, DataTypes) {
  using T = cuda::TensorMapDataType;
  EXPECT_EQ(cuda::tensor_map_data_type(DType::f16), T::float16);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::bf16), T::bfloat16);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::f32), T::float32);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::f64), T::float64);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::i32), T::int32);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::u32), T::uint32);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::i64), T::int64);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::u64), T::uint64);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::i16), T::uint16);
  EXPECT_EQ(cuda::tensor_map_data_type(DType::u16), T::uint16);
  for (DType e : {DType::i8, DType::u8, DType::f8e4m3fn, DType::f8e5m2, DType::f8e4m3fnuz, DType::f8e5m2fnuz,
                  DType::f4e2m1, DType::e8m0})
    EXPECT_EQ(cuda::tensor_map_data_type(e), T::uint8) << tl::name(e);
  EXPECT_FALSE(cuda::tensor_map_data_type(DType::i1));
  EXPECT_FALSE(cuda::tensor_map_data_type(DType::ptr));
  // cuda.h's values
  EXPECT_EQ(int(T::uint8), 0);
  EXPECT_EQ(int(T::int32), 3);
  EXPECT_EQ(int(T::float16), 6);
  EXPECT_EQ(int(T::bfloat16), 9);
}

// Tutorial 09's A: [M, K] f16 row-major, blocks [BLOCK_M, BLOCK_K] = [128, 64], read by
// wgmma through the 128-byte swizzle.
TEST(TensorMap, TutorialMatmulOperandIsReversedIntoTmaOrder) {
  cuda::TensorMapChoice c = request(DType::f16, kBase, {1000, 520}, {520, 1}, {128, 64}, 128);
  ASSERT_TRUE(c.request) << c.why_not;
  const cuda::TensorMapRequest& r = *c.request;
  EXPECT_EQ(r.data_type, cuda::TensorMapDataType::float16);
  EXPECT_EQ(r.rank, 2u);
  EXPECT_EQ(r.global_address, kBase);
  EXPECT_EQ(r.global_dim[0], 520u);  // the contiguous dim first
  EXPECT_EQ(r.global_dim[1], 1000u);
  EXPECT_EQ(r.global_strides[0], 520u * 2);  // bytes
  EXPECT_EQ(r.box_dim[0], 64u);
  EXPECT_EQ(r.box_dim[1], 128u);
  EXPECT_EQ(r.element_strides[0], 1u);
  EXPECT_EQ(r.element_strides[1], 1u);
  EXPECT_EQ(r.interleave, cuda::CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(r.swizzle, cuda::CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(r.oob_fill, cuda::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);

  cuda::TensorMapChoice n = request(DType::bf16, kBase, {1000, 520}, {520, 1}, {128, 64}, 128, padding_option::nan);
  ASSERT_TRUE(n.request) << n.why_not;
  EXPECT_EQ(n.request->oob_fill, cuda::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
  EXPECT_EQ(n.request->data_type, cuda::TensorMapDataType::bfloat16);

  for (auto [bytes, mode] : {std::pair{0, cuda::CU_TENSOR_MAP_SWIZZLE_NONE}, {32, cuda::CU_TENSOR_MAP_SWIZZLE_32B},
                             {64, cuda::CU_TENSOR_MAP_SWIZZLE_64B}}) {
    cuda::TensorMapChoice s = request(DType::f16, kBase, {1000, 520}, {520, 1}, {128, 16}, bytes);
    ASSERT_TRUE(s.request) << s.why_not;
    EXPECT_EQ(s.request->swizzle, mode) << bytes;
  }
}

TEST(TensorMap, FiveDimsWithPaddedStrides) {
  // [2, 3, 5, 7, 40] f32 with each dim padded: strides in elements [8192, 2048, 352, 48, 1].
  cuda::TensorMapChoice c =
      request(DType::f32, kBase, {2, 3, 5, 7, 40}, {8192, 2048, 352, 48, 1}, {1, 2, 4, 8, 32});
  ASSERT_TRUE(c.request) << c.why_not;
  const cuda::TensorMapRequest& r = *c.request;
  EXPECT_EQ(r.rank, 5u);
  EXPECT_EQ((std::vector<uint64_t>(r.global_dim.begin(), r.global_dim.end())),
            (std::vector<uint64_t>{40, 7, 5, 3, 2}));
  EXPECT_EQ((std::vector<uint64_t>(r.global_strides.begin(), r.global_strides.end())),
            (std::vector<uint64_t>{48 * 4, 352 * 4, 2048 * 4, 8192 * 4}));
  EXPECT_EQ((std::vector<uint32_t>(r.box_dim.begin(), r.box_dim.end())), (std::vector<uint32_t>{32, 8, 4, 2, 1}));
}

TEST(TensorMap, EachDocumentedConstraintRefuses) {
  refused(request(DType::f16, kBase + 8, {64, 64}, {64, 1}, {64, 64}), "not 16-byte aligned");
  refused(request(DType::f16, kBase, {64, 64}, {20, 1}, {64, 16}), "not a multiple of 16");
  refused(request(DType::f16, kBase, {1024, 64}, {64, 1}, {512, 64}), "at most 256");
  refused(request(DType::f16, kBase, {1024, 512}, {512, 1}, {64, 512}), "at most 256");
  refused(request(DType::f16, kBase, {96, 64}, {64, 1}, {96, 64}), "not a power of two");
  refused(request(DType::f32, kBase, {64, 64}, {64, 1}, {64, 2}), "multiple of 16 bytes");
  refused(request(DType::f16, kBase, {64, 256}, {256, 1}, {64, 128}, 128), "swizzle's span");
  refused(request(DType::f16, kBase, {64, 64}, {64, 1}, {64, 16}, 16), "swizzles 32, 64 or 128");
  refused(request(DType::f16, kBase, {0, 64}, {64, 1}, {64, 64}), "1 to 2^32");
  refused(request(DType::u8, kBase, {4, 64}, {int64_t(1) << 40, 1}, {4, 64}), "below 2^40");
  refused(request(DType::f16, kBase, {4, 64}, {32, 1}, {4, 64}), "overlapping");
  // 2^36 bytes x 2^28 rows is 2^64: the bytes inside dim 0 counted without wrapping to 0
  refused(request(DType::u8, kBase, {4, int64_t(1) << 28, 16}, {int64_t(1) << 39, int64_t(1) << 36, 1}, {1, 1, 16}),
          "overlapping");
  refused(request(DType::f16, kBase, {4, 64}, {-64, 1}, {4, 64}), "non-negative");
  // 229 x 8 x 64 f16 = 229 KiB: over a program's 227 KiB (the driver refuses over 228 KiB)
  refused(request(DType::f16, kBase, {256, 8, 64}, {512, 64, 1}, {256, 8, 64}), "at most 232448 bytes");
  EXPECT_TRUE(request(DType::f16, kBase, {256, 8, 64}, {512, 64, 1}, {128, 8, 64}).request);
  refused(request(DType::f16, kBase, {4, 64}, {64, 2}, {4, 64}), "last stride");
  refused(request(DType::i8, kBase, {4, 64}, {64, 1}, {4, 64}, 0, padding_option::nan), "NaN for f16");
  refused(request(DType::f8e4m3fn, kBase, {4, 64}, {64, 1}, {4, 64}, 0, padding_option::nan), "NaN for f16");
  refused(request(DType::i1, kBase, {4, 64}, {64, 1}, {4, 64}), "does not move i1");
  refused(request(DType::f16, kBase, {}, {}, {}), "1 to 5");
  refused(request(DType::u8, kBase, {1, 1, 1, 1, 1, 16}, {16, 16, 16, 16, 16, 1}, {1, 1, 1, 1, 1, 16}), "1 to 5");
}

TEST(TensorMap, TmaAskedForNamesTheLineThatMadeTheDescriptor) {
  const std::vector<int64_t> shape{1024, 64}, strides{64, 1};
  const std::vector<int> block{512, 64};
  const std::source_location here = std::source_location::current();
  try {
    cuda::require_tensor_map(DType::f16, kBase, shape, strides, block, padding_option::zero, 128, here);
    FAIL() << "a 512-row box was taken";
  } catch (const tl::launch_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("TMA cannot take this descriptor"), std::string::npos) << m;
    EXPECT_NE(m.find("at most 256"), std::string::npos) << m;
    EXPECT_NE(m.find("tensor_map_test.cpp"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(here.line())), std::string::npos) << m;
  }
  const std::vector<int> ok{128, 64};
  EXPECT_EQ(cuda::require_tensor_map(DType::f16, kBase, shape, strides, ok, padding_option::zero, 128, here).box_dim[1],
            128u);
}

// The documented constraints, restated from the driver's documentation one by one (not
// from tensor_map.cpp), over random descriptors: tl takes exactly those that meet them, and
// what it takes it encodes field by field.
TEST(TensorMap, RandomDescriptorsAgainstTheDocumentedConstraints) {
  std::mt19937_64 rng(20261128);
  const DType types[] = {DType::u8, DType::f16, DType::bf16, DType::f32, DType::i32, DType::f64, DType::i64};
  int taken = 0, refusals = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const DType e = types[rng() % 7];
    const int64_t eb = tl::byte_width(e);
    const int rank = 1 + int(rng() % 5);
    std::vector<int64_t> shape(rank), strides(rank);
    std::vector<int> block(rank);
    for (int d = 0; d < rank; ++d) {
      shape[d] = rng() % 8 == 0 ? 0 : 1 + int64_t(rng() % 300);
      block[d] = rng() % 10 == 0 ? 3 * (1 + int(rng() % 40)) : 1 << (rng() % 10);  // up to 512
    }
    // Strides: row-major with each dim padded by 0-3 x 16 bytes, sometimes off by an
    // element (unaligned) or too small (overlapping).
    strides[rank - 1] = 1;
    for (int d = rank - 2; d >= 0; --d) {
      int64_t s = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
      s = (s * eb + 15) / 16 * 16 / eb + int64_t(rng() % 4) * (16 / std::min<int64_t>(eb, 16));
      if (rng() % 12 == 0) s += 1;
      if (rng() % 12 == 0) s /= 2;
      strides[d] = s;
    }
    const int swizzles[] = {0, 32, 64, 128};
    const int swizzle = swizzles[rng() % 4];
    const uint64_t base = kBase + (rng() % 10 == 0 ? 8 : 0);
    const padding_option pad = rng() % 4 == 0 ? padding_option::nan : padding_option::zero;

    bool ok = base % 16 == 0;
    for (int d = 0; d < rank; ++d) {
      ok = ok && shape[d] >= 1 && shape[d] <= (int64_t(1) << 32);                       // globalDim
      ok = ok && block[d] >= 1 && block[d] <= 256 && (block[d] & (block[d] - 1)) == 0;  // boxDim (tl: powers of two)
    }
    int64_t box_bytes = eb;
    for (int d = 0; d < rank; ++d) box_bytes *= block[d];
    ok = ok && box_bytes <= 227 * 1024;                                // one program's shared memory (sm_90)
    ok = ok && (block[rank - 1] * eb) % 16 == 0;                       // the box's inner bytes
    ok = ok && (swizzle == 0 || block[rank - 1] * eb <= swizzle);      // the swizzle's span
    int64_t inner = shape[rank - 1] * eb;
    for (int d = rank - 2; d >= 0; --d) {                              // globalStrides
      const int64_t bytes = strides[d] * eb;
      ok = ok && bytes % 16 == 0 && bytes < (int64_t(1) << 40) && bytes >= inner;
      inner = bytes * shape[d];
    }
    ok = ok && (pad == padding_option::zero || tl::is_float(e) && eb >= 2);  // NaN fill: float map types

    cuda::TensorMapChoice c = cuda::tensor_map_request(e, base, shape, strides, block, pad, swizzle);
    ASSERT_EQ(c.request.has_value(), ok) << "iteration " << iter << ": " << c.why_not;
    if (!ok) {
      ++refusals;
      EXPECT_FALSE(c.why_not.empty());
      continue;
    }
    ++taken;
    const cuda::TensorMapRequest& r = *c.request;
    ASSERT_EQ(r.rank, uint32_t(rank));
    for (int t = 0; t < rank; ++t) {
      EXPECT_EQ(r.global_dim[t], uint64_t(shape[rank - 1 - t]));
      EXPECT_EQ(r.box_dim[t], uint32_t(block[rank - 1 - t]));
      EXPECT_EQ(r.element_strides[t], 1u);
      if (t > 0) EXPECT_EQ(r.global_strides[t - 1], uint64_t(strides[rank - 1 - t] * eb));
    }
  }
  // Both sides of every rule were drawn.
  EXPECT_GT(taken, 500);
  EXPECT_GT(refusals, 5000);
}

// ---------------------------------------------------------------- on an NVIDIA GPU

const cuda::Api* driver_with_tensor_maps() {
  const cuda::Api* api = cuda::Api::get();
  if (!api || !api->cuTensorMapEncodeTiled) return nullptr;
  api->bind(0);
  if (api->device_info(0).cc_major < 9) return nullptr;
  return api;
}

TEST(TensorMapDevice, TheDriverEncodesWhatTlTakesAndTheCacheKeepsIt) {
  const cuda::Api* api = driver_with_tensor_maps();
  if (!api) GTEST_SKIP() << "no CUDA driver with tensor maps and an sm_90 or later GPU here";
  cuda::CUdeviceptr p = 0;
  api->check(api->cuMemAlloc(&p, 1 << 20), "cuMemAlloc");
  cuda::TensorMapChoice c = request(DType::f16, p, {1000, 520}, {520, 1}, {128, 64}, 128);
  ASSERT_TRUE(c.request) << c.why_not;
  const uint64_t before = cuda::tensor_map_encodes();
  cuda::TensorMap m = cuda::encode_tensor_map(*api, *c.request);
  EXPECT_EQ(cuda::tensor_map_encodes(), before + 1);
  bool nonzero = false;
  for (uint8_t b : m.bytes) nonzero = nonzero || b != 0;
  EXPECT_TRUE(nonzero);
  cuda::TensorMap again = cuda::encode_tensor_map(*api, *c.request);
  EXPECT_EQ(cuda::tensor_map_encodes(), before + 1);  // cached
  EXPECT_EQ(again.bytes, m.bytes);
  cuda::TensorMapRequest other = *c.request;
  other.global_dim[1] = 999;
  cuda::encode_tensor_map(*api, other);
  EXPECT_EQ(cuda::tensor_map_encodes(), before + 2);
  api->check(api->cuMemFree(p), "cuMemFree");
}

// tl's refusals for the documented rules are the driver's: the same random descriptors,
// each also passed to the driver unchecked (the raw request), where every request tl takes
// encodes and every one refused for a rule the driver documents is refused by it too.
TEST(TensorMapDevice, TheDriverAgreesWithTheDocumentedRules) {
  const cuda::Api* api = driver_with_tensor_maps();
  if (!api) GTEST_SKIP() << "no CUDA driver with tensor maps and an sm_90 or later GPU here";
  cuda::CUdeviceptr p = 0;
  api->check(api->cuMemAlloc(&p, 1 << 20), "cuMemAlloc");
  auto raw = [&](const cuda::TensorMapRequest& r) {
    cuda::TensorMap m;
    return api->cuTensorMapEncodeTiled(m.bytes.data(), int(r.data_type), r.rank,
                                       reinterpret_cast<void*>(uintptr_t(r.global_address)), r.global_dim.data(),
                                       r.global_strides.data(), r.box_dim.data(), r.element_strides.data(),
                                       r.interleave, r.swizzle, r.l2_promotion, r.oob_fill);
  };
  cuda::TensorMapChoice c = request(DType::f16, p, {1000, 520}, {520, 1}, {128, 64}, 128);
  ASSERT_TRUE(c.request);
  EXPECT_EQ(raw(*c.request), cuda::CUDA_SUCCESS);
  // One documented rule broken at a time on a request tl takes.
  auto broken = [&](auto&& edit) {
    cuda::TensorMapRequest r = *c.request;
    edit(r);
    return raw(r);
  };
  EXPECT_NE(broken([](auto& r) { r.box_dim[1] = 512; }), cuda::CUDA_SUCCESS);           // box > 256
  EXPECT_NE(broken([](auto& r) { r.global_strides[0] = 1048; }), cuda::CUDA_SUCCESS);   // not a multiple of 16
  EXPECT_NE(broken([](auto& r) { r.global_address += 8; }), cuda::CUDA_SUCCESS);        // not 16-byte aligned
  EXPECT_NE(broken([](auto& r) { r.box_dim[0] = 4; r.swizzle = 0; }), cuda::CUDA_SUCCESS);  // 8-byte inner box
  EXPECT_NE(broken([](auto& r) { r.box_dim[0] = 128; }), cuda::CUDA_SUCCESS);           // 256 bytes > 128B swizzle
  EXPECT_NE(broken([](auto& r) { r.global_dim[0] = 0; }), cuda::CUDA_SUCCESS);          // an empty dim
  // The rule the documentation lacks (measured here, driver 580.159): 228 KiB boxes encode,
  // 229 KiB ones do not; tl takes up to 227 KiB.
  {
    cuda::TensorMapChoice big = request(DType::f16, p, {256, 8, 64}, {512, 64, 1}, {128, 8, 64}, 128);
    ASSERT_TRUE(big.request) << big.why_not;
    cuda::TensorMapRequest r = *big.request;
    r.box_dim[2] = 228;  // 228 x 8 x 64 x 2 bytes = 228 KiB
    EXPECT_EQ(raw(r), cuda::CUDA_SUCCESS);
    r.box_dim[2] = 229;
    EXPECT_NE(raw(r), cuda::CUDA_SUCCESS);
  }
  // Random descriptors tl takes all encode.
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 500; ++iter) {
    const int rank = 1 + int(rng() % 5);
    std::vector<int64_t> shape(rank), strides(rank, 1);
    std::vector<int> block(rank);
    for (int d = 0; d < rank; ++d) shape[d] = 1 + int64_t(rng() % 40), block[d] = 1 << (rng() % 9);
    block[rank - 1] = std::max(block[rank - 1], 8);
    for (int d = rank - 2; d >= 0; --d) strides[d] = (strides[d + 1] * shape[d + 1] + 7) / 8 * 8;
    const int swizzle = block[rank - 1] * 2 <= 128 ? 128 : 0;
    cuda::TensorMapChoice r = request(DType::f16, p, shape, strides, block, swizzle);
    if (!r.request) {  // only a box over a program's shared memory
      EXPECT_NE(r.why_not.find("at most 232448 bytes"), std::string::npos) << r.why_not;
      continue;
    }
    EXPECT_EQ(raw(*r.request), cuda::CUDA_SUCCESS)
        << "iteration " << iter << ": shape " << ::testing::PrintToString(shape) << " strides "
        << ::testing::PrintToString(strides) << " block " << ::testing::PrintToString(block) << " swizzle " << swizzle;
  }
  api->check(api->cuMemFree(p), "cuMemFree");
}

}  // namespace

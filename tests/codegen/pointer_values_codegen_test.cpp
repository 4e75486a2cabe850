// Pointers as values on the GPU targets, checked without a GPU on the code each target's
// lowering makes (tests/dsl/pointer_values_test.cpp runs the same kernels): a pointer
// loaded from an array of pointers, or made from an i64 address, is a global pointer
// (LLVM address space 1 on AMDGPU and NVPTX), so every access through it is a global
// access: `global_load`/`global_store` on AMD, never the flat ones that must also
// handle LDS and scratch addresses (slower, and they count against both the vector and
// the LDS counters), `ld.global`/`st.global` on NVIDIA, never generic `ld`/`st`.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/ir/ir.hpp"
#include "support/compile.hpp"
#include "tl/tl.hpp"

namespace {

using tltest::count;
using tltest::isa_of_compiled;

// Program g: array g's pointer and length from device arrays, a masked block of it
// scaled and stored through the pointer loaded from `ys`.
auto& ragged_rows() {
  static auto k = tl::kernel("codegen_ragged_rows", [](tl::ptr<tl::ptr<tl::f32>> xs, tl::ptr<tl::ptr<tl::f32>> ys,
                                                       tl::ptr<tl::i32> sizes) {
    auto g = tl::program_id(0);
    auto n = tl::load(sizes + g);
    tl::ptr<tl::f32> x = tl::load(xs + g);
    tl::ptr<tl::f32> y = tl::load(ys + g);
    auto offs = tl::arange(0, 256);
    tl::store(y + offs, tl::load(x + offs, offs < n, 0.0f) * 2.0f, offs < n);
  });
  return k;
}

// Addresses as i64, Triton's `tl.load(ptrs + g).to(tl.pointer_type(tl.float32))`, and a
// tile of pointers stored into an array of pointers.
auto& int_addresses() {
  static auto k = tl::kernel("codegen_int_addresses", [](tl::ptr<tl::i64> addrs, tl::ptr<tl::ptr<tl::f32>> out_ptrs,
                                                         tl::ptr<tl::f32> out) {
    auto g = tl::program_id(0);
    auto x = tl::load(addrs + g).to<tl::ptr<tl::f32>>();
    auto offs = tl::arange(0, 256);
    tl::store(out + offs, tl::load(x + offs) + 1.0f);
    tl::store(out_ptrs + offs, x + offs);
  });
  return k;
}

// A masked load of a tile of pointers with a pointer tile as `other`, a [lanes, cols]
// tile of pointers made from it (a layout of its own), pointers three levels deep.
auto& gather_rows() {
  static auto k = tl::kernel("codegen_gather_rows", [](tl::ptr<tl::ptr<tl::f32>> rows, tl::ptr<tl::f32> fallback,
                                                       tl::i32 count, tl::ptr<tl::ptr<tl::ptr<tl::f32>>> deep,
                                                       tl::ptr<tl::f32> out) {
    constexpr int L = 64, C = 32;
    auto lane = tl::arange(0, L);
    auto p = tl::load(rows + lane, lane < count, tl::broadcast_to(fallback, {L}));
    auto grid = tl::expand_dims(p, 1) + tl::expand_dims(tl::arange(0, C), 0);
    auto q = tl::load(tl::load(deep + lane % 4));
    auto o = tl::expand_dims(lane, 1) * C + tl::expand_dims(tl::arange(0, C), 0);
    tl::store(out + o, tl::load(grid) + tl::expand_dims(tl::load(q + lane), 1));
  });
  return k;
}

// Triton's tutorial 08 as tests/dsl/pointer_values_test.cpp runs it (int64 addresses
// converted, sizes and leading dimensions loaded, a tl::while_ over a group's tiles).
auto& grouped_gemm() {
  static auto k = tl::kernel("codegen_grouped_gemm", [](tl::ptr<tl::i64> a_ptrs, tl::ptr<tl::i64> b_ptrs,
                                                        tl::ptr<tl::i64> c_ptrs, tl::ptr<tl::i32> sizes,
                                                        tl::ptr<tl::i32> lds, int groups, int NUM_SM) {
    constexpr int BM = 64, BN = 64, BK = 32;
    auto tile_idx = tl::program_id(0);
    tl::i32 last_problem_end = 0;
    for (auto g : tl::range(groups)) {
      auto gn = tl::load(sizes + g * 3 + 1), gk = tl::load(sizes + g * 3 + 2);
      auto num_n_tiles = tl::cdiv(gn, BN);
      auto num_tiles = tl::cdiv(tl::load(sizes + g * 3), BM) * num_n_tiles;
      tl::while_([&] { return (tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles); }, [&] {
        auto lda = tl::load(lds + g * 3), ldb = tl::load(lds + g * 3 + 1), ldc = tl::load(lds + g * 3 + 2);
        auto a = tl::load(a_ptrs + g).to<tl::ptr<tl::f16>>(), b = tl::load(b_ptrs + g).to<tl::ptr<tl::f16>>();
        auto c = tl::load(c_ptrs + g).to<tl::ptr<tl::f16>>();
        auto tm = (tile_idx - last_problem_end) / num_n_tiles, tn = (tile_idx - last_problem_end) % num_n_tiles;
        auto rm = tm * BM + tl::arange(0, BM), rn = tn * BN + tl::arange(0, BN), rk = tl::arange(0, BK);
        auto pa = a + tl::expand_dims(rm, 1) * lda + tl::expand_dims(rk, 0);
        auto pb = b + tl::expand_dims(rk, 1) * ldb + tl::expand_dims(rn, 0);
        auto acc = tl::zeros<tl::f32>({BM, BN});
        for (auto kk : tl::range(0, tl::cdiv(gk, BK))) {
          (void)kk;
          acc += tl::dot(tl::load(pa), tl::load(pb));
          pa += BK;
          pb += BK * ldb;
        }
        tl::store(c + ldc * tl::expand_dims(rm, 1) + tl::expand_dims(rn, 0), acc.to<tl::f16>());
        tile_idx += NUM_SM;
      });
      last_problem_end = last_problem_end + num_tiles;
    }
  });
  return k;
}

// Conversions of pointer tiles both ways, tl::where between pointer tiles, comparisons
// of pointers (every lane's own pointer, through the tile path of each lowering).
auto& casts_and_selects() {
  static auto k = tl::kernel("codegen_casts_and_selects", [](tl::ptr<tl::i64> addrs, tl::ptr<tl::f32> x,
                                                             tl::ptr<tl::f32> out, tl::ptr<tl::i64> back) {
    auto i = tl::arange(0, 256);
    auto p = tl::load(addrs + i).to<tl::ptr<tl::f32>>();
    auto q = tl::where(i % 2 == 0, p, x + i);
    tl::store(out + i, tl::load(q, q != x + i, 1.0f));
    tl::store(back + i, (q + 1).to<tl::i64>());
  });
  return k;
}

// What a launch would pass: 16-byte aligned device addresses (never read here).
template <class T> T* fake_device_pointer() { return reinterpret_cast<T*>(uintptr_t(1) << 20); }

const char* const kKernels[] = {"ragged_rows", "int_addresses", "gather_rows", "grouped_gemm", "casts_and_selects"};

// The ISA (AMD disassembly, PTX) of kernel `kernel` (an index of kKernels) for `arch`.
std::string isa(const std::string& arch, int kernel) {
  tl::launch_options o{.num_warps = 4, .num_stages = 2};
  std::string meta;
  switch (kernel) {
    case 0:
      meta = ragged_rows().compile(arch, o, fake_device_pointer<float*>(), fake_device_pointer<float*>(),
                                   fake_device_pointer<int32_t>());
      break;
    case 1:
      meta = int_addresses().compile(arch, o, fake_device_pointer<int64_t>(), fake_device_pointer<float*>(),
                                     fake_device_pointer<float>());
      break;
    case 2:
      meta = gather_rows().compile(arch, o, fake_device_pointer<float*>(), fake_device_pointer<float>(), 5,
                                   fake_device_pointer<float**>(), fake_device_pointer<float>());
      break;
    case 4:
      meta = casts_and_selects().compile(arch, o, fake_device_pointer<int64_t>(), fake_device_pointer<float>(),
                                         fake_device_pointer<float>(), fake_device_pointer<int64_t>());
      break;
    default:
      meta = grouped_gemm().compile(arch, o, fake_device_pointer<int64_t>(), fake_device_pointer<int64_t>(),
                                    fake_device_pointer<int64_t>(), fake_device_pointer<int32_t>(),
                                    fake_device_pointer<int32_t>(), 4, 7);
  }
  return isa_of_compiled(meta);
}
std::string amd_isa(const std::string& arch, int kernel) { return isa(arch, kernel); }

// Memory instructions of the disassembly whose mnemonic starts with `prefix`.
int memory_ops(const std::string& dis, const std::string& prefix) {
  std::regex op("\\b" + prefix + "_(load|store)\\w*");
  return int(std::distance(std::sregex_iterator(dis.begin(), dis.end(), op), std::sregex_iterator()));
}

// The IR's pointer types: what a load of a pointer to pointers gives, and types that
// differ only below the first pointee differ (the cache key is the printed IR: a kernel
// over arrays of f16 pointers must not find the code of one over arrays of f32 pointers).
TEST(PointerValuesIr, PointersToPointersCompareAndPrintWhole) {
  using tl::DType;
  using tl::ir::Type;
  const Type f16{DType::f16, DType::f16, {}}, f32{DType::f32, DType::f32, {}};
  const Type p16 = Type::pointer_to(f16), pp16 = Type::pointer_to(p16), ppp16 = Type::pointer_to(pp16);
  const Type pp32 = Type::pointer_to(Type::pointer_to(f32));
  EXPECT_EQ(p16.str(), "ptr<f16>");
  EXPECT_EQ(pp16.str(), "ptr<ptr<f16>>");
  EXPECT_EQ(ppp16.with_shape({4, 8}).str(), "tile<4x8xptr<ptr<ptr<f16>>>>");
  EXPECT_EQ(pp16.pointee_type(), p16);
  EXPECT_EQ(ppp16.pointee_type(), pp16);
  EXPECT_EQ(p16.pointee_type(), f16);
  EXPECT_NE(pp16, pp32);
  EXPECT_NE(pp16, ppp16);
  EXPECT_NE(pp16, p16);
  EXPECT_EQ(pp16.pointee, DType::ptr);  // what every pass reads as "what a load gives"
  EXPECT_FALSE(pp16.same_pointee(pp32));
  EXPECT_TRUE(pp16.with_shape({8}).same_pointee(pp16));
}

TEST(PointerValuesCodegen, KernelsOverArraysOfDifferentPointeesAreDifferentCode) {
  auto body = [](auto pp, auto out) { tl::store(out, tl::load(tl::load(pp))); };
  auto k16 = tl::kernel("pointee_in_key", [&](tl::ptr<tl::ptr<tl::f16>> pp, tl::ptr<tl::f16> out) { body(pp, out); });
  auto k32 = tl::kernel("pointee_in_key", [&](tl::ptr<tl::ptr<tl::f32>> pp, tl::ptr<tl::f32> out) { body(pp, out); });
  auto key = [](const std::string& meta) { return nlohmann::json::parse(meta).at("key").get<std::string>(); };
  std::string a = k16.compile("cpu", {}, fake_device_pointer<tl::half*>(), fake_device_pointer<tl::half>());
  std::string b = k32.compile("cpu", {}, fake_device_pointer<float*>(), fake_device_pointer<float>());
  EXPECT_NE(key(a), key(b));
}

TEST(PointerValuesCodegen, AmdAccessesThroughLoadedPointersAreGlobal) {
  for (const char* arch : {"gfx942", "gfx950", "gfx90a"}) {
    for (int kernel : {0, 1, 2, 3, 4}) {
      std::string dis = amd_isa(arch, kernel);
      SCOPED_TRACE(std::string(arch) + " " + kKernels[kernel]);
      EXPECT_EQ(memory_ops(dis, "flat"), 0) << dis;
      // the elements read and written through loaded (or converted) pointers
      EXPECT_GT(count(dis, "global_load"), 0) << dis;
      EXPECT_GT(count(dis, "global_store"), 0) << dis;
    }
  }
}

// An i64 argument converted to a pointer keeps the launch's facts about the address: a
// multiple of 16 reads 16 bytes a lane, an address 4 bytes off reads 4 (the int-to-pointer
// rule of axis analysis keeps divisibility, which both count in bytes). Checked on the
// PTX, whose vector loads need their natural alignment (AMD's backend merges dword-aligned
// loads into dwordx4 by itself, which the hardware allows).
TEST(PointerValuesCodegen, ConvertedAddressesAreAsAlignedAsTheLaunchSays) {
  auto k = tl::kernel("codegen_address_argument", [](tl::i64 addr, tl::ptr<tl::f32> out) {
    auto x = addr.to<tl::ptr<tl::f32>>();
    auto i = tl::arange(0, 1024);
    tl::store(out + i, tl::load(x + i) * 2.0f);
  });
  for (int64_t offset : {0, 4}) {
    std::string dis = isa_of_compiled(k.compile("sm_90", {.num_warps = 4}, int64_t(1 << 20) + offset,
                                                fake_device_pointer<float>()));
    int wide = count(dis, "ld.global.v4");
    if (offset == 0) EXPECT_GT(wide, 0) << dis;
    else EXPECT_EQ(wide, 0) << dis;
  }
}

TEST(PointerValuesCodegen, AmdStoresOfPointersAre64BitGlobalStores) {
  std::string dis = amd_isa("gfx942", 1);
  // 256 pointers over 256 lanes of 4 waves: one 64-bit store each (or wider, vectorized)
  EXPECT_GT(count(dis, "global_store_dwordx2") + count(dis, "global_store_dwordx4"), 0) << dis;
}

TEST(PointerValuesCodegen, NvptxAccessesThroughLoadedPointersAreGlobal) {
  for (int kernel : {0, 1, 2, 3, 4}) {
    std::string ptx = isa("sm_90", kernel);
    SCOPED_TRACE(kKernels[kernel]);
    // generic accesses: `ld.` or `st.` followed by a type or a vector, not a state space
    std::regex generic(R"(\b(ld|st)(\.volatile)?\.(v[248]\.)?[usbf]\d+\b)");
    EXPECT_FALSE(std::regex_search(ptx, generic)) << ptx;
    EXPECT_GT(count(ptx, "ld.global"), 0) << ptx;
    EXPECT_GT(count(ptx, "st.global"), 0) << ptx;
    EXPECT_EQ(count(ptx, "cvta"), 0) << ptx;  // no conversion to a generic address either
  }
}

}  // namespace

// CPU bounds checking (`.with({.bounds_check = true})`, TL_BOUNDS_CHECK=1) on a set of
// deliberately broken kernels. Each kernel takes a trace-time `bool buggy`: with the bug
// the launch must throw tl::kernel_fault naming the kernel, the faulting program and the
// line of the access in this file, and no byte outside the buffers may change; with the
// bug fixed the same kernel must run clean and compute the right thing.
//
// Every bug is written so that its first out-of-bounds access is the element just past
// the end of a buffer or just before its start. That address belongs to no allocation,
// so the checker must refuse it. (An access that lands inside *another* live allocation
// is not detectable by an address-range checker, and is not what this file tests.)
//
// "Outside the buffers" is checked where a stray write would land first: the padding the
// CPU device adds to round an allocation up to 64 bytes (filled with a canary here) and
// the 8 bytes before the allocation (the allocator's chunk header: glibc's size word, or
// ASan's allocation context).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

const tl::launch_options kChecked{.bounds_check = true};

tl::device cpu() { return tl::cpu_device(); }

template <class E> tl::buffer<E> cpu_upload(const std::vector<typename tl::buffer<E>::host_t>& h) {
  auto b = cpu().alloc<E>(h.size());
  b.upload(h);
  return b;
}

// Reads bytes that may lie outside any object (an allocator's header) without sanitizer
// instrumentation: reading them is fine, the test only compares them.
__attribute__((noinline, no_sanitize("address", "thread"))) void read_raw(const uint8_t* p, uint8_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<const volatile uint8_t*>(p)[i];
}

constexpr uint8_t kCanary = 0x5A;
constexpr size_t kHeaderBytes = 8;
// glibc and ASan keep a chunk header right before every block; TSan's allocator does not
// (the bytes before a block may be another block, or unmapped), so there only the
// padding is watched.
#if defined(__SANITIZE_THREAD__)
constexpr bool kWatchHeader = false;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kWatchHeader = false;
#else
constexpr bool kWatchHeader = true;
#endif
#else
constexpr bool kWatchHeader = true;
#endif

// The bytes next to a set of CPU buffers that a kernel must not write.
class Guards {
 public:
  template <class E> void add(const tl::buffer<E>& b) {
    Region r;
    r.name = fmt::format("buffer {} ({} bytes)", regions_.size(), b.bytes());
    r.base = reinterpret_cast<uint8_t*>(b.data());
    r.bytes = b.bytes();
    // The CPU device rounds every allocation up to a multiple of 64 bytes
    // (runtime/cpu_device.cpp): the tail is ours to fill, but no kernel may touch it.
    r.padding = std::max<size_t>(64, (r.bytes + 63) / 64 * 64) - r.bytes;
    std::memset(r.base + r.bytes, kCanary, r.padding);
    if (kWatchHeader) read_raw(r.base - kHeaderBytes, r.header, kHeaderBytes);
    regions_.push_back(r);
  }

  ::testing::AssertionResult intact() const {
    for (const Region& r : regions_) {
      for (size_t i = 0; i < r.padding; ++i)
        if (r.base[r.bytes + i] != kCanary)
          return ::testing::AssertionFailure() << r.name << ": byte " << i << " past the end was written";
      uint8_t now[kHeaderBytes] = {};
      if (kWatchHeader) read_raw(r.base - kHeaderBytes, now, kHeaderBytes);
      // glibc keeps flags in the low 3 bits of the size word, and one of them (the
      // previous chunk is in use) flips when the block before is freed: ignore those.
      if (std::memcmp(now + 1, r.header + 1, kHeaderBytes - 1) != 0 || ((now[0] ^ r.header[0]) & ~7) != 0)
        return ::testing::AssertionFailure() << r.name << ": the bytes before the start were written";
    }
    return ::testing::AssertionSuccess();
  }

 private:
  struct Region {
    std::string name;
    uint8_t* base = nullptr;
    size_t bytes = 0, padding = 0;
    uint8_t header[kHeaderBytes] = {};
  };
  std::vector<Region> regions_;
};

// Runs `launch`, which must throw tl::kernel_fault for an out-of-bounds `access` ("load",
// "store", "atomic") in `kernel`, program `program` ("(3, 0, 0)"), at `line` of this file.
// `line` is set while the kernel is traced, inside the launch: read it afterwards.
void expect_fault(const std::function<void()>& launch, const std::string& access, const std::string& kernel,
                  const std::string& program, const int& line) {
  SCOPED_TRACE(kernel);
  try {
    launch();
  } catch (const tl::kernel_fault& e) {
    const std::string what = e.what();
    EXPECT_GT(line, 0);
    EXPECT_EQ(e.line(), unsigned(line)) << what;
    EXPECT_TRUE(e.file().ends_with("bounds_check_test.cpp")) << e.file();
    EXPECT_NE(what.find(fmt::format("bounds_check_test.cpp:{}: ", line)), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("out-of-bounds {} in kernel {}, program {}", access, kernel, program)),
              std::string::npos)
        << what;
    return;
  }
  ADD_FAILURE() << kernel << ": the launch did not throw tl::kernel_fault";
}

}  // namespace

// 1. An unmasked load in the ragged last block reads past the end of x.
TEST(BoundsCheck, UnmaskedLoadPastTheEnd) {
  int line = 0;
  auto k = tl::kernel("load_past_end", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, bool buggy) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto m = i < n;
    auto v = buggy ? tl::load(x + i) : tl::load(x + i, m, 0.0f); line = __LINE__;
    tl::store(y + i, v * 2.0f, m);
  });
  const int n = 1000;
  auto h = random_floats(n);
  auto X = cpu_upload<ty::f32>(h);
  auto Y = cpu().alloc<tl::f32>(n);
  Guards g;
  g.add(X);
  g.add(Y);
  expect_fault([&] { k[tl::grid(4)].on(cpu()).with(kChecked)(X, Y, n, true); }, "load", "load_past_end", "(3, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(4)].on(cpu()).with(kChecked)(X, Y, n, false);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.0 * h[i];
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(g.intact());
}

// 2. An unmasked store in the ragged last block writes past the end of y.
TEST(BoundsCheck, UnmaskedStorePastTheEnd) {
  int line = 0;
  auto k = tl::kernel("store_past_end", [&](tl::ptr<tl::i32> y, tl::i32 n, bool buggy) {
    auto i = tl::program_id(0) * 64 + tl::arange(0, 64);
    if (buggy) tl::store(y + i, i * 3); else tl::store(y + i, i * 3, i < n); line = __LINE__;
  });
  const int n = 300;  // 5 programs; the last one has 44 lanes past the end
  auto Y = cpu().alloc<tl::i32>(n);
  Guards g;
  g.add(Y);
  expect_fault([&] { k[tl::grid(5)].on(cpu()).with(kChecked)(Y, n, true); }, "store", "store_past_end", "(4, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(5)].on(cpu()).with(kChecked)(Y, n, false);
  auto got = Y.download();
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], 3 * i) << i;
  EXPECT_TRUE(g.intact());
}

// 3. A negative offset: y[i - 1] = x[i], with the mask missing its lower bound, so
//    program 0 stores to y[-1].
TEST(BoundsCheck, NegativeOffsetStore) {
  int line = 0;
  auto k = tl::kernel("shift_left", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, bool buggy) {
    auto i = tl::program_id(0) * 128 + tl::arange(0, 128);
    auto m = buggy ? (i < n) : (i >= 1) & (i < n);
    auto v = tl::load(x + i, m, 0.0f);
    tl::store(y + (i - 1), v, m); line = __LINE__;
  });
  const int n = 1000;
  auto h = random_floats(n);
  auto X = cpu_upload<ty::f32>(h);
  auto Y = cpu().alloc<tl::f32>(n - 1);
  Guards g;
  g.add(X);
  g.add(Y);
  expect_fault([&] { k[tl::grid(8)].on(cpu()).with(kChecked)(X, Y, n, true); }, "store", "shift_left", "(0, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(8)].on(cpu()).with(kChecked)(X, Y, n, false);
  EXPECT_TRUE(near(Y.download(), std::vector<double>(h.begin() + 1, h.end()), 0, 0));
  EXPECT_TRUE(g.intact());
}

// 4. An off-by-one in a 2-D tile: the column mask says c <= cols. Rows but the last only
//    read the next row's first element (wrong, but in bounds); the last row reads x[rows * cols].
TEST(BoundsCheck, OffByOneIn2DTile) {
  int line = 0;
  auto k = tl::kernel("copy2d_off_by_one", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 rows, tl::i32 cols,
                                               bool buggy) {
    auto r = tl::program_id(0) * 16 + tl::arange(0, 16);
    auto c = tl::program_id(1) * 32 + tl::arange(0, 32);
    auto cm = buggy ? (c <= cols) : (c < cols);
    auto m = tl::expand_dims(r < rows, 1) & tl::expand_dims(cm, 0);
    auto offs = tl::expand_dims(r, 1) * cols + tl::expand_dims(c, 0);
    auto v = tl::load(x + offs, m, 0.0f); line = __LINE__;
    tl::store(y + offs, v + 1.0f, m);
  });
  const int rows = 20, cols = 23;
  auto h = random_floats(rows * cols);
  auto X = cpu_upload<ty::f32>(h);
  auto Y = cpu().alloc<tl::f32>(rows * cols);
  Guards g;
  g.add(X);
  g.add(Y);
  expect_fault([&] { k[tl::grid(2, 1)].on(cpu()).with(kChecked)(X, Y, rows, cols, true); }, "load",
               "copy2d_off_by_one", "(1, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(2, 1)].on(cpu()).with(kChecked)(X, Y, rows, cols, false);
  std::vector<double> want(h.size());
  for (size_t i = 0; i < h.size(); ++i) want[i] = double(h[i] + 1.0f);
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(g.intact());
}

// 5. A wrong row stride passed by the host (cols + 1 instead of cols) for a batch of
//    [8, 29] matrices: each program's last row overruns into the next matrix, and the
//    last program's overruns the buffer. The access is masked (columns), and still out of bounds.
TEST(BoundsCheck, WrongRowStride) {
  int line = 0;
  constexpr int R = 8, C = 29;
  auto k = tl::kernel("row_sums", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 ld) {
    auto b = tl::program_id(0);
    auto r = tl::arange(0, R);
    auto c = tl::arange(0, 32);
    auto m = tl::broadcast_to(tl::expand_dims(c < C, 0), {R, 32});
    auto ptrs = x + b * (R * C) + tl::expand_dims(r, 1) * ld + tl::expand_dims(c, 0);
    auto v = tl::load(ptrs, m, 0.0f); line = __LINE__;
    tl::store(out + b * R + r, tl::sum(v, 1));
  });
  const int B = 3;
  auto h = random_floats(B * R * C);
  auto X = cpu_upload<ty::f32>(h);
  auto O = cpu().alloc<tl::f32>(B * R);
  Guards g;
  g.add(X);
  g.add(O);
  expect_fault([&] { k[tl::grid(B)].on(cpu()).with(kChecked)(X, O, C + 1); }, "load", "row_sums", "(2, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(B)].on(cpu()).with(kChecked)(X, O, C);
  std::vector<double> want(B * R, 0.0);
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) want[b * R + r] += h[(b * R + r) * C + c];
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-5));
  EXPECT_TRUE(g.intact());
}

// 6. An atomic out of bounds: a histogram of values in [0, 12] with one bin too few
//    (v % 13 into 12 bins). Only program 2 holds a 12.
TEST(BoundsCheck, AtomicAddOutOfBounds) {
  int line = 0;
  constexpr int NB = 12;
  auto k = tl::kernel("histogram", [&](tl::ptr<tl::i32> x, tl::ptr<tl::i32> bins, tl::i32 n, bool buggy) {
    auto i = tl::program_id(0) * 128 + tl::arange(0, 128);
    auto m = i < n;
    auto v = tl::load(x + i, m, 0);
    auto bin = buggy ? v % (NB + 1) : v % NB;
    tl::atomic_add(bins + bin, tl::full<tl::i32>({128}, 1), m, tl::sem::relaxed); line = __LINE__;
  });
  const int n = 500;
  auto h = random_ints(n, 0, NB - 1);
  h[2 * 128 + 77] = NB;  // program 2
  auto X = cpu_upload<ty::i32>(h);
  auto Bn = cpu_upload<ty::i32>(std::vector<int32_t>(NB, 0));
  Guards g;
  g.add(X);
  g.add(Bn);
  expect_fault([&] { k[tl::grid(4)].on(cpu()).with(kChecked)(X, Bn, n, true); }, "atomic", "histogram", "(2, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  Bn.upload(std::vector<int32_t>(NB, 0));
  k[tl::grid(4)].on(cpu()).with(kChecked)(X, Bn, n, false);
  std::vector<double> want(NB, 0.0);
  for (int v : h) want[v % NB] += 1;
  EXPECT_TRUE(near(Bn.download(), want, 0, 0));
  EXPECT_TRUE(g.intact());
}

// 7. A compare-and-swap one slot to the right: the last program claims slots[P].
TEST(BoundsCheck, AtomicCasOutOfBounds) {
  int line = 0;
  auto k = tl::kernel("claim_slots", [&](tl::ptr<tl::i32> slots, bool buggy) {
    auto pid = tl::program_id(0);
    tl::atomic_cas(slots + pid + (buggy ? 1 : 0), tl::i32(0), pid + 1); line = __LINE__;
  });
  const int P = 6;
  auto S = cpu_upload<ty::i32>(std::vector<int32_t>(P, 0));
  Guards g;
  g.add(S);
  expect_fault([&] { k[tl::grid(P)].on(cpu()).with(kChecked)(S, true); }, "atomic", "claim_slots", "(5, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  S.upload(std::vector<int32_t>(P, 0));
  k[tl::grid(P)].on(cpu()).with(kChecked)(S, false);
  auto got = S.download();
  for (int p = 0; p < P; ++p) EXPECT_EQ(got[p], p + 1);
  EXPECT_TRUE(g.intact());
}

// 8. A scalar load past the end: each block adds the first element of the next block (a
//    halo), and the last block reads x[n].
TEST(BoundsCheck, ScalarLoadPastTheEnd) {
  int line = 0;
  auto k = tl::kernel("sum_with_halo", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 blocks, bool buggy) {
    auto pid = tl::program_id(0);
    auto v = tl::load(x + pid * 64 + tl::arange(0, 64));
    auto next = x + (pid + 1) * 64;
    auto halo = buggy ? tl::load(next) : tl::load(next, pid + 1 < blocks, 0.0f); line = __LINE__;
    tl::store(out + pid, tl::sum(v, 0) + halo);
  });
  const int P = 5;
  auto h = random_floats(P * 64);
  auto X = cpu_upload<ty::f32>(h);
  auto O = cpu().alloc<tl::f32>(P);
  Guards g;
  g.add(X);
  g.add(O);
  expect_fault([&] { k[tl::grid(P)].on(cpu()).with(kChecked)(X, O, P, true); }, "load", "sum_with_halo", "(4, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(P)].on(cpu()).with(kChecked)(X, O, P, false);
  std::vector<double> want(P, 0.0);
  for (int p = 0; p < P; ++p) {
    for (int j = 0; j < 64; ++j) want[p] += h[p * 64 + j];
    if (p + 1 < P) want[p] += h[(p + 1) * 64];
  }
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-5));
  EXPECT_TRUE(g.intact());
}

// 9. Out of bounds inside a tl::range loop: column sums of a batch of [rows, 64]
//    matrices in blocks of 8 rows, with the row mask forgotten. rows = 37, so the last
//    iteration reads 3 rows too many: into the next matrix, or, for the last, past the end.
TEST(BoundsCheck, InsideRangeLoop) {
  int line = 0;
  auto k = tl::kernel("batched_colsum", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> out, tl::i32 rows, bool buggy) {
    auto b = tl::program_id(0);
    auto c = tl::arange(0, 64);
    auto r = tl::arange(0, 8);
    auto acc = tl::zeros<tl::f32>({64});
    for (auto i : tl::range(0, rows, 8)) {
      auto ptrs = x + b * rows * 64 + tl::expand_dims(r + i, 1) * 64 + tl::expand_dims(c, 0);
      auto m = tl::broadcast_to(tl::expand_dims(r + i < rows, 1), {8, 64});
      auto v = buggy ? tl::load(ptrs) : tl::load(ptrs, m, 0.0f); line = __LINE__;
      acc += tl::sum(v, 0);
    }
    tl::store(out + b * 64 + c, acc);
  });
  const int B = 2, rows = 37;
  auto h = random_floats(B * rows * 64);
  auto X = cpu_upload<ty::f32>(h);
  auto O = cpu().alloc<tl::f32>(B * 64);
  Guards g;
  g.add(X);
  g.add(O);
  expect_fault([&] { k[tl::grid(B)].on(cpu()).with(kChecked)(X, O, rows, true); }, "load", "batched_colsum", "(1, 0, 0)",
               line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(B)].on(cpu()).with(kChecked)(X, O, rows, false);
  std::vector<double> want(B * 64, 0.0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < 64; ++j) want[b * 64 + j] += h[(b * rows + i) * 64 + j];
  EXPECT_TRUE(near(O.download(), want, 1e-5, 1e-4));
  EXPECT_TRUE(g.intact());
}

// 10. Out of bounds inside a tl::if_ branch: full blocks store unmasked, and the branch
//     for the ragged last block forgets its mask.
TEST(BoundsCheck, InsideIfBranch) {
  int line = 0;
  auto k = tl::kernel("tail_branch", [&](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, bool buggy) {
    auto pid = tl::program_id(0);
    auto i = pid * 128 + tl::arange(0, 128);
    tl::if_((pid + 1) * 128 <= n, [&] {
      tl::store(y + i, tl::load(x + i) * 3.0f);
    }).else_([&] {
      auto m = i < n;
      auto v = tl::load(x + i, m, 0.0f) * 3.0f;
      if (buggy) tl::store(y + i, v); else tl::store(y + i, v, m); line = __LINE__;
    });
  });
  const int n = 700;  // 6 programs, the last one ragged
  auto h = random_floats(n);
  auto X = cpu_upload<ty::f32>(h);
  auto Y = cpu().alloc<tl::f32>(n);
  Guards g;
  g.add(X);
  g.add(Y);
  expect_fault([&] { k[tl::grid(6)].on(cpu()).with(kChecked)(X, Y, n, true); }, "store", "tail_branch", "(5, 0, 0)", line);
  EXPECT_TRUE(g.intact());
  k[tl::grid(6)].on(cpu()).with(kChecked)(X, Y, n, false);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = double(h[i] * 3.0f);
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(g.intact());
}

// Masked accesses whose masked-off lanes point out of bounds (just past the end, before
// the start, far away) touch nothing and must not fault: loads, stores, atomics, a scalar
// load, in 1-D and 2-D, inside a loop and a branch.
TEST(BoundsCheck, MaskedAccessesBeyondTheEdgesDoNotFault) {
  auto k = tl::kernel("masked_edges", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::ptr<tl::i32> cnt,
                                         tl::ptr<tl::f32> z, tl::i32 n, tl::i32 rows, tl::i32 cols) {
    auto pid = tl::program_id(0);
    auto i = pid * 256 + tl::arange(0, 256);
    auto m = i < n;
    // Past the end, before the start, and a million elements away.
    auto a = tl::load(x + i, m, 0.0f);
    auto before = tl::load(x + (i - 1), (i >= 1) & m, 0.0f);
    auto far = tl::load(x + i * 1000000, i == 0, 0.0f);
    tl::store(y + i, a + before + far, m);
    tl::atomic_add(cnt + (i % 4), tl::full<tl::i32>({256}, 1), m, tl::sem::relaxed);
    tl::atomic_add(cnt + 4 + i, tl::full<tl::i32>({256}, 1), i < 0, tl::sem::relaxed);  // all lanes off
    // A scalar masked load past the end.
    auto last = tl::load(x + n, pid < 0, 7.0f);
    // 2-D: a [rows, cols] matrix through [16, 32] tiles; the loop steps over row blocks.
    auto c = tl::arange(0, 32);
    auto r = tl::arange(0, 16);
    for (auto r0 : tl::range(0, rows, 16)) {
      auto rr = r + r0;
      auto m2 = tl::expand_dims(rr < rows, 1) & tl::expand_dims(c < cols, 0);
      auto offs = tl::expand_dims(rr, 1) * cols + tl::expand_dims(c, 0);
      tl::if_(pid == 0, [&] { tl::store(z + offs, tl::load(z + offs, m2, 0.0f) + last, m2); });
    }
  });
  const int n = 1000, rows = 21, cols = 27;
  auto h = random_floats(n);
  auto hz = random_floats(rows * cols);
  auto X = cpu_upload<ty::f32>(h);
  auto Y = cpu().alloc<tl::f32>(n);
  auto Cn = cpu_upload<ty::i32>(std::vector<int32_t>(4, 0));
  auto Z = cpu_upload<ty::f32>(hz);
  Guards g;
  g.add(X);
  g.add(Y);
  g.add(Cn);
  g.add(Z);
  EXPECT_NO_THROW(k[tl::grid(4)].on(cpu()).with(kChecked)(X, Y, Cn, Z, n, rows, cols));
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = double(h[i] + (i >= 1 ? h[i - 1] : 0.0f) + (i == 0 ? h[0] : 0.0f));
  EXPECT_TRUE(near(Y.download(), want, 0, 0));
  EXPECT_TRUE(near(Cn.download(), std::vector<double>(4, n / 4), 0, 0));
  std::vector<double> wz(hz.size());
  for (size_t i = 0; i < hz.size(); ++i) wz[i] = double(hz[i] + 7.0f);
  EXPECT_TRUE(near(Z.download(), wz, 0, 0));
  EXPECT_TRUE(g.intact());
}

// The cache key leaves source locations out, so that edits elsewhere reuse compiled code;
// but checked code has its lines compiled in. Two kernels with the same name and the same
// program on different lines (like one kernel before and after an edit above it) must
// each report their own line, not the line of whichever reached the disk cache first.
TEST(BoundsCheck, FaultNamesTheLineOfThisVersionOfTheSource) {
  int line1 = 0, line2 = 0;
  auto k1 = tl::kernel("same_program", [&](tl::ptr<tl::i32> y) {
    tl::store(y + tl::arange(0, 32), tl::arange(0, 32)); line1 = __LINE__;
  });

  auto k2 = tl::kernel("same_program", [&](tl::ptr<tl::i32> y) {
    tl::store(y + tl::arange(0, 32), tl::arange(0, 32)); line2 = __LINE__;
  });
  auto Y = cpu().alloc<tl::i32>(20);
  expect_fault([&] { k1[tl::grid(1)].on(cpu()).with(kChecked)(Y); }, "store", "same_program", "(0, 0, 0)", line1);
  expect_fault([&] { k2[tl::grid(1)].on(cpu()).with(kChecked)(Y); }, "store", "same_program", "(0, 0, 0)", line2);
  EXPECT_NE(line1, line2);
}

// TL_BOUNDS_CHECK=1 turns the check on without touching the launch.
TEST(BoundsCheck, EnvironmentVariableEnablesIt) {
  int line = 0;
  auto k = tl::kernel("env_checked", [&](tl::ptr<tl::i32> y, tl::i32 n) {
    auto i = tl::program_id(0) * 32 + tl::arange(0, 32);
    tl::store(y + i, i); line = __LINE__;
  });
  auto Y = cpu().alloc<tl::i32>(40);
  Guards g;
  g.add(Y);
  ::setenv("TL_BOUNDS_CHECK", "1", 1);
  expect_fault([&] { k[tl::grid(2)].on(cpu())(Y, 40); }, "store", "env_checked", "(1, 0, 0)", line);
  ::unsetenv("TL_BOUNDS_CHECK");
  EXPECT_TRUE(g.intact());
}

// A freed buffer's pointer: the launch would write memory that is no longer the
// buffer's. Refused at the launch's line, with TL_BOUNDS_CHECK=1 and without it, and not
// one byte of the freed block changes (the CPU device keeps freed blocks in a quarantine,
// so that no other object can be there: runtime/cpu_device.cpp).
TEST(BoundsCheck, FreedBufferPointerIsRefused) {
  auto k = tl::kernel("write_freed", [](tl::ptr<tl::i32> y) { tl::store(y + tl::arange(0, 64), tl::arange(0, 64)); });
  int32_t* stale = nullptr;
  {
    auto Y = cpu().alloc<tl::i32>(64);
    std::memset(Y.data(), kCanary, Y.bytes());
    stale = Y.data();
  }  // freed here
  for (bool env : {true, false}) {
    SCOPED_TRACE(env ? "TL_BOUNDS_CHECK=1" : "unchecked");
    if (env) ::setenv("TL_BOUNDS_CHECK", "1", 1);
    const unsigned line = __LINE__ + 2;
    try {
      k[tl::grid(1)].on(cpu())(stale);
      ADD_FAILURE() << "the launch with a freed buffer's pointer ran";
    } catch (const tl::launch_error& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_NE(std::string(e.what()).find("pointer argument 0 points into a buffer that was freed"),
                std::string::npos)
          << e.what();
    }
    ::unsetenv("TL_BOUNDS_CHECK");
    uint8_t now[64 * 4];
    read_raw(reinterpret_cast<const uint8_t*>(stale), now, sizeof(now));
    for (size_t i = 0; i < sizeof(now); ++i) ASSERT_EQ(now[i], kCanary) << "byte " << i << " of the freed buffer was written";
  }
}

// With bounds checking, an access computed from a live buffer that lands in a freed one
// faults, and says so.
TEST(BoundsCheck, AccessIntoAFreedBufferFaults) {
  int line = 0;
  auto k = tl::kernel("reach_freed", [&](tl::ptr<tl::i32> live, tl::i64 delta) {
    tl::store(live + delta + tl::arange(0, 16), tl::arange(0, 16)); line = __LINE__;
  });
  auto Live = cpu().alloc<tl::i32>(16);
  int64_t delta = 0;
  {
    auto Gone = cpu().alloc<tl::i32>(16);
    delta = (reinterpret_cast<intptr_t>(Gone.data()) - reinterpret_cast<intptr_t>(Live.data())) / 4;
  }
  expect_fault([&] { k[tl::grid(1)].on(cpu()).with(kChecked)(Live, delta); }, "store", "reach_freed", "(0, 0, 0)", line);
  try {
    k[tl::grid(1)].on(cpu()).with(kChecked)(Live, delta);
  } catch (const tl::kernel_fault& e) {
    EXPECT_NE(std::string(e.what()).find("inside a buffer that was freed"), std::string::npos) << e.what();
  }
}

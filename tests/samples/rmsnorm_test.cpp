// The RMSNorm sample's kernels (samples/rmsnorm/rmsnorm.hpp), forward and backward,
// run on the test device against a double-precision reference on random inputs, with
// every output poisoned before each launch; and its launch heuristic (rmsnorm::choose)
// checked directly: row packing, the packing caps, 32- versus 64-bit offsets.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "samples/rmsnorm/rmsnorm.hpp"
#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

constexpr float kEps = 1e-6f;
constexpr int64_t k2p31 = int64_t(1) << 31;

// The shapes below are run with the heuristic evaluated for this many compute units
// (whatever the test device has), so that the packing factors they exercise are the
// same on every machine.
constexpr int kCUs = 2;

template <class E> using host_t = typename tl::buffer<tl::elem_t<E>>::host_t;

template <class E> host_t<E> narrow(double v) {
  if constexpr (std::is_same_v<tl::elem_t<E>, ty::bf16>) return tl::to_bf16(v);
  else return tl::to_f16(v);
}

// All-ones bytes: a NaN in f32, bf16 and f16 alike, which near() never accepts, so an
// element a kernel failed to write cannot pass by being close to a small reference.
template <class E> void poison_nan(const tl::buffer<E>& b) {
  std::vector<typename tl::buffer<E>::host_t> h(b.size());
  std::memset(static_cast<void*>(h.data()), 0xFF, h.size() * sizeof(h[0]));
  b.upload(h);
}

template <class T> std::vector<double> as_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = to_double(v[i]);
  return d;
}

// The inputs of one problem, already rounded to the element type, and the reference.
template <class E> struct Problem {
  int64_t rows, cols;
  bool zero_centered;
  std::vector<host_t<E>> x, dy, w;
  // Reference (double): y, rstd, dx, and dgamma.
  std::vector<double> y, rstd, dx, dw;

  Problem(int64_t rows, int64_t cols, bool zc) : rows(rows), cols(cols), zero_centered(zc) {
    size_t n = size_t(rows * cols);
    auto fx = random_floats(n, -2.0f, 2.0f), fdy = random_floats(n, -2.0f, 2.0f);
    // Zero-centered gamma stores w with g = 1 + w, so w is small around 0; else around 1.
    auto fw = zc ? random_floats(size_t(cols), -0.5f, 0.5f) : random_floats(size_t(cols), 0.5f, 1.5f);
    x.resize(n), dy.resize(n), w.resize(size_t(cols));
    for (size_t i = 0; i < n; ++i) x[i] = narrow<E>(fx[i]), dy[i] = narrow<E>(fdy[i]);
    for (size_t i = 0; i < size_t(cols); ++i) w[i] = narrow<E>(fw[i]);
    y.resize(n), dx.resize(n), rstd.resize(size_t(rows)), dw.assign(size_t(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0, dot = 0;
      for (int64_t c = 0; c < cols; ++c) ss += X(r, c) * X(r, c);
      double inv = 1.0 / std::sqrt(ss / double(cols) + double(kEps));
      rstd[r] = inv;
      for (int64_t c = 0; c < cols; ++c) {
        y[r * cols + c] = X(r, c) * inv * G(c);
        dot += DY(r, c) * G(c) * X(r, c);
        dw[c] += DY(r, c) * X(r, c) * inv;
      }
      dot /= double(cols);
      for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = inv * G(c) * DY(r, c) - X(r, c) * inv * inv * inv * dot;
    }
  }
  double X(int64_t r, int64_t c) const { return to_double(x[r * cols + c]); }
  double DY(int64_t r, int64_t c) const { return to_double(dy[r * cols + c]); }
  double G(int64_t c) const { return to_double(w[c]) + (zero_centered ? 1.0 : 0.0); }

  // The reference partial dgamma of each of the backward's `programs` persistent
  // programs: program p takes the blocks of `rows_per_pid` rows numbered p, p + programs, ...
  std::vector<double> partials(int rows_per_pid, int64_t programs) const {
    std::vector<double> p(size_t(programs * cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) p[((r / rows_per_pid) % programs) * cols + c] += DY(r, c) * X(r, c) * rstd[r];
    return p;
  }
};

// What the kernels wrote.
template <class E> struct Outputs {
  std::vector<host_t<E>> y, dx;
  std::vector<float> rstd, partial, dw;
};

// Runs forward (cfg f) then backward (cfg b: partials, then the dgamma kernel) on the
// test device through the sample's launch functions, every output poisoned first; the
// backward reads the forward's rstd.
template <class E>
Outputs<E> run(const Problem<E>& p, const rmsnorm::Config& f, const rmsnorm::Config& b) {
  auto dev = test_device();
  const int64_t n = p.rows * p.cols;
  // The forward has no row mask: its grid must cover the rows exactly.
  EXPECT_EQ(p.rows % f.rows_per_pid, 0);
  EXPECT_EQ(f.programs * f.rows_per_pid, p.rows);
  // The backward is persistent: any grid of at most ceil(rows / rows_per_pid) programs.
  EXPECT_GE(b.programs, 1);
  // (The chunked backward also accepts more programs than rows.)
  if (b.chunk == 0) EXPECT_LE(b.programs, (p.rows + b.rows_per_pid - 1) / b.rows_per_pid);
  auto X = upload<tl::elem_t<E>>(p.x), DY = upload<tl::elem_t<E>>(p.dy), W = upload<tl::elem_t<E>>(p.w);
  auto Y = dev.alloc<E>(size_t(n)), DX = dev.alloc<E>(size_t(n));
  auto R = dev.alloc<tl::f32>(size_t(p.rows)), DW = dev.alloc<tl::f32>(size_t(p.cols));
  auto DWP = dev.alloc<tl::f32>(size_t(b.programs * p.cols));
  poison_nan(Y), poison_nan(DX), poison_nan(R), poison_nan(DW), poison_nan(DWP);
  rmsnorm::forward<E>(f, X, Y, W, R, p.cols, kEps, p.zero_centered);
  rmsnorm::backward<E>(b, X, DY, W, R, DX, DWP, DW, p.rows, p.cols, p.zero_centered);
  dev.synchronize();
  return {Y.download(), DX.download(), R.download(), DWP.download(), DW.download()};
}

template <class E>
void check(const Problem<E>& p, const Outputs<E>& o, const rmsnorm::Config& b, const std::string& what) {
  // bf16 keeps 8 significant bits, f16 11: the outputs are rounded once from f32.
  const double rtol = std::is_same_v<tl::elem_t<E>, ty::bf16> ? 8e-3 : 2e-3;
  EXPECT_TRUE(near(o.y, p.y, rtol, 1e-4)) << what << ": y";
  EXPECT_TRUE(near(o.rstd, p.rstd, 1e-5, 0)) << what << ": rstd";
  // dx subtracts two terms of order 1: allow the f32 cancellation an absolute margin.
  EXPECT_TRUE(near(o.dx, p.dx, rtol, 2e-3)) << what << ": dx";
  // f32 sums over the rows: partials over each program's rows, dgamma over the programs.
  EXPECT_TRUE(near(o.partial, p.partials(b.rows_per_pid, b.programs), 1e-5, 1e-4)) << what << ": dgamma partials";
  EXPECT_TRUE(near(o.dw, p.dw, 1e-5, 1e-4 + 1e-6 * double(p.rows))) << what << ": dgamma";
}

std::string describe(int64_t rows, int64_t cols, const char* dtype, bool zc, const rmsnorm::Config& f,
                     const rmsnorm::Config& b) {
  return std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype + (zc ? " zero-centered" : "") +
         " fwd B" + std::to_string(f.block) + " R" + std::to_string(f.rows_per_pid) + " w" +
         std::to_string(f.num_warps) + (f.offsets64 ? " off64" : "") + ", bwd R" + std::to_string(b.rows_per_pid) +
         " w" + std::to_string(b.num_warps) + " P" + std::to_string(b.programs) + (b.num_stages > 1 ? " num_stages=" + std::to_string(b.num_stages) : "") +
         (b.chunk ? " chunk" + std::to_string(b.chunk) : "");
}

// One shape, both element types, zero-centered gamma off and on, with the heuristic's
// configurations for kCUs compute units. Returns the configurations for the caller.
std::pair<rmsnorm::Config, rmsnorm::Config> run_shape(int64_t rows, int64_t cols) {
  auto f = rmsnorm::choose(rows, cols, kCUs, false), b = rmsnorm::choose(rows, cols, kCUs, true);
  for (bool zc : {false, true}) {
    {
      Problem<tl::bf16> p(rows, cols, zc);
      check(p, run(p, f, b), b, describe(rows, cols, "bf16", zc, f, b));
    }
    {
      Problem<tl::f16> p(rows, cols, zc);
      check(p, run(p, f, b), b, describe(rows, cols, "f16", zc, f, b));
    }
  }
  return {f, b};
}

}  // namespace

// ---------------------------------------------------------------------------------
// Forward and backward against the reference.

TEST(RMSNormSample, RaggedWideRows) {
  // BLOCK 1024 > 512: one row per program, the last 24 columns masked off; the backward's
  // 8 persistent programs (4 per compute unit) take 4 or 5 rows each.
  auto [f, b] = run_shape(37, 1000);
  EXPECT_EQ(f.block, 1024);
  EXPECT_EQ(f.rows_per_pid, 1);
  EXPECT_EQ(f.programs, 37);
  EXPECT_EQ(b.rows_per_pid, 1);
  EXPECT_EQ(b.programs, 4 * kCUs);
}

TEST(RMSNormSample, RaggedNarrowRowsWithOddRowCount) {
  // 129 rows: no forward packing factor divides them, so one row per program; the
  // backward packs 16 and masks the 15 missing rows of its last block.
  auto [f, b] = run_shape(129, 77);
  EXPECT_EQ(f.block, 128);
  EXPECT_EQ(f.rows_per_pid, 1);
  EXPECT_EQ(b.rows_per_pid, 16);
  EXPECT_EQ(b.programs, 4 * kCUs);
}

TEST(RMSNormSample, PowerOfTwoNarrowRowsPacked) {
  // 64x128 with 2 compute units: 16 rows per program forward (4 programs) and backward.
  auto [f, b] = run_shape(64, 128);
  EXPECT_EQ(f.rows_per_pid, 16);
  EXPECT_EQ(f.programs, 4);
  EXPECT_EQ(f.num_warps, 4);  // 16 rows of 128: 2048 elements a program
  EXPECT_EQ(b.rows_per_pid, 16);
  EXPECT_EQ(b.num_warps, 2);
}

TEST(RMSNormSample, PowerOfTwoWideRows) {
  auto [f, b] = run_shape(16, 4096);
  EXPECT_EQ(f.block, 4096);
  EXPECT_EQ(f.rows_per_pid, 1);
  EXPECT_EQ(f.num_warps, 4);
  EXPECT_EQ(b.rows_per_pid, 1);
}

TEST(RMSNormSample, RaggedColumnsPacked) {
  // 96x77: BLOCK 128 with 51 masked columns in each of 16 packed rows.
  auto [f, b] = run_shape(96, 77);
  EXPECT_EQ(f.rows_per_pid, 16);
  EXPECT_EQ(b.rows_per_pid, 16);
}

TEST(RMSNormSample, RowCountNotDivisibleByTheLargestPackingFactor) {
  // 36 rows of 128: the forward cap is 32 but 36 is divisible by none of 32, 16, 8;
  // the heuristic must take 4 (9 programs >= 2 per compute unit), never 16 or 8. The
  // backward masks its last block: 16 would leave 3 blocks (< 4), 8 leaves 5.
  auto f = rmsnorm::choose(36, 128, kCUs, false), b = rmsnorm::choose(36, 128, kCUs, true);
  EXPECT_EQ(f.rows_per_pid, 4);
  EXPECT_EQ(f.programs, 9);
  EXPECT_EQ(b.rows_per_pid, 8);
  // 200 rows of 256 (cap 4096/256 = 16): 8 divides 200, 16 does not -> 8; 20 rows -> 4;
  // 6 rows, 1 CU -> 2.
  EXPECT_EQ(rmsnorm::choose(200, 256, kCUs, false).rows_per_pid, 8);
  EXPECT_EQ(rmsnorm::choose(20, 256, kCUs, false).rows_per_pid, 4);
  EXPECT_EQ(rmsnorm::choose(6, 256, 1, false).rows_per_pid, 2);
  // 6 rows with 2 compute units: packing by 2 would leave 3 programs < 4: none.
  EXPECT_EQ(rmsnorm::choose(6, 256, kCUs, false).rows_per_pid, 1);
  // 38 rows of 128: 2 divides, 4 does not; the backward (masked) takes 8.
  EXPECT_EQ(rmsnorm::choose(38, 128, kCUs, false).rows_per_pid, 2);
  EXPECT_EQ(rmsnorm::choose(38, 128, kCUs, true).rows_per_pid, 8);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{36, 128}, {20, 200}, {38, 128}, {6, 256}}) {
    auto [rf, rb] = run_shape(rows, cols);
    EXPECT_EQ(rf.rows_per_pid, rmsnorm::choose(rows, cols, kCUs, false).rows_per_pid);
    EXPECT_EQ(rows % rf.rows_per_pid, 0);
  }
}

TEST(RMSNormSample, PipelinedBackwardOnRaggedRowsAndGrids) {
  // The two-stage backward (num_stages 2): every program's last load ahead lies past the
  // rows (masked);
  // 129 rows in blocks of 4 leave a ragged last block; 37 rows over 8 programs leave
  // programs with 4 and 5 blocks; a grid of 1 walks every block itself.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{129, 77}, {37, 1000}, {64, 128}})
    for (int64_t programs : {int64_t(1), int64_t(3), int64_t(0)}) {
      auto f = rmsnorm::choose(rows, cols, kCUs, false), b = rmsnorm::choose(rows, cols, kCUs, true);
      b.num_stages = 2;
      if (programs > 0) b.programs = programs;
      for (bool wide : {false, true}) {
        auto bw = b;
        bw.offsets64 = wide;
        Problem<tl::bf16> pb(rows, cols, true);
        check(pb, run(pb, f, bw), bw, describe(rows, cols, "bf16", true, f, bw));
        Problem<tl::f16> ph(rows, cols, false);
        check(ph, run(ph, f, bw), bw, describe(rows, cols, "f16", false, f, bw));
      }
    }
}

TEST(RMSNormSample, ChunkedBackwardOnWideAndRaggedRows) {
  // The backward of very wide rows, forced onto small shapes: a ragged last chunk
  // (1000 = 3 * 256 + 232), several chunks per row, a chunk wider than the row; grids of
  // one program, of three, and of more programs than rows (idle programs still write a
  // zero partial row).
  struct Case {
    int64_t rows, cols;
    int chunk;
  };
  for (Case k : {Case{37, 1000, 256}, Case{5, 3000, 1024}, Case{16, 4096, 8192}})
    for (int64_t programs : {int64_t(1), int64_t(3), int64_t(40)}) {
      auto f = rmsnorm::choose(k.rows, k.cols, kCUs, false), b = rmsnorm::choose(k.rows, k.cols, kCUs, true);
      b.chunk = k.chunk;
      b.rows_per_pid = 1;
      b.num_stages = 1;
      b.programs = programs;
      for (bool wide : {false, true}) {
        auto bw = b;
        bw.offsets64 = wide;
        Problem<tl::bf16> pb(k.rows, k.cols, true);
        check(pb, run(pb, f, bw), bw, describe(k.rows, k.cols, "bf16", true, f, bw));
        Problem<tl::f16> ph(k.rows, k.cols, false);
        check(ph, run(ph, f, bw), bw, describe(k.rows, k.cols, "f16", false, f, bw));
      }
    }
}

TEST(RMSNormSample, Offsets64GivesTheSameResultsAsOffsets32) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 128}, {129, 77}, {37, 1000}}) {
    auto f = rmsnorm::choose(rows, cols, kCUs, false), b = rmsnorm::choose(rows, cols, kCUs, true);
    ASSERT_FALSE(f.offsets64);
    ASSERT_FALSE(b.offsets64);
    auto f64 = f, b64 = b;
    f64.offsets64 = b64.offsets64 = true;
    Problem<tl::bf16> p(rows, cols, true);
    auto o32 = run(p, f, b), o64 = run(p, f64, b64);
    check(p, o64, b64, describe(rows, cols, "bf16", true, f64, b64));
    // Same arithmetic, only the address width differs: bit for bit the same.
    auto same = [](const auto& a, const auto& c) {
      return a.size() == c.size() && std::memcmp(a.data(), c.data(), a.size() * sizeof(a[0])) == 0;
    };
    EXPECT_TRUE(same(o32.y, o64.y)) << rows << "x" << cols;
    EXPECT_TRUE(same(o32.rstd, o64.rstd)) << rows << "x" << cols;
    EXPECT_TRUE(same(o32.dx, o64.dx)) << rows << "x" << cols;
    EXPECT_TRUE(same(o32.partial, o64.partial)) << rows << "x" << cols;
    EXPECT_TRUE(same(o32.dw, o64.dw)) << rows << "x" << cols;
  }
}

// ---------------------------------------------------------------------------------
// The heuristic.

TEST(RMSNormChoose, Offsets64ExactlyWhenThe32BitOffsetsWouldOverflow) {
  const std::pair<int64_t, int64_t> shapes[] = {
      {65536, 32768},  {65536, 32767},    {65535, 32768},   {65536 + 16, 32768}, {k2p31, 1},
      {k2p31 - 1, 1},  {2, 1 << 30},      {46341, 46341},   {46340, 46340},      {1, 1 << 30},
      {32768, 128},    {65536, 128},      {8192, 4096},     {4096, 8192},        {16384, 2048},
      {2048, 16384},   {1024, 32768},     {16777216, 128},  {16777215, 128},     {16777217, 128},
      {131072, 16384}, {4194303, 512},    {4194304, 512},   {(k2p31 / 4096) + 1, 4096}};
  for (auto [rows, cols] : shapes)
    for (bool bwd : {false, true})
      for (int cus : {2, 132, 256, 304}) {
        auto c = rmsnorm::choose(rows, cols, cus, bwd);
        EXPECT_EQ(c.offsets64, rows * cols >= k2p31) << rows << "x" << cols << (bwd ? " bwd" : " fwd");
      }
  EXPECT_TRUE(rmsnorm::choose(65536, 32768, 304, false).offsets64);   // exactly 2^31
  EXPECT_FALSE(rmsnorm::choose(65536, 32767, 304, false).offsets64);  // 2^31 - 65536
  EXPECT_TRUE(rmsnorm::choose(65536 + 16, 32768, 304, true).offsets64);
}

TEST(RMSNormChoose, PackingOnlyForNarrowRowsAndNeverBelowTwoProgramsPerCU) {
  int packed[2] = {0, 0};
  for (int64_t cols : {1, 7, 64, 77, 96, 128, 200, 256, 300, 512, 513, 777, 1000, 1024, 2048, 4096, 8192, 32768})
    for (int64_t rows : {1, 2, 3, 6, 8, 36, 37, 64, 100, 129, 200, 512, 1000, 1024, 2047, 4096, 4104, 32768, 65536,
                         1 << 20})
      for (int cus : {1, 2, 8, 132, 256, 304})
        for (bool bwd : {false, true}) {
          auto c = rmsnorm::choose(rows, cols, cus, bwd);
          std::string at = std::to_string(rows) + "x" + std::to_string(cols) + " cus " + std::to_string(cus) +
                           (bwd ? " bwd" : " fwd");
          // Rows a program at most: forward 32 rows and 4096 elements, backward 16 and 2048.
          const int cap = bwd ? 16 : 32, cap_elems = bwd ? 2048 : 4096;
          const int64_t blocks = (rows + c.rows_per_pid - 1) / c.rows_per_pid;
          // Backward programs per compute unit: 4 up to 2048 columns, 2 at 4096, then 1.
          const int64_t per_cu = c.block <= 2048 ? 4 : c.block <= 4096 ? 2 : 1;
          ASSERT_EQ(c.block, rmsnorm::next_pow2(cols)) << at;
          ASSERT_GE(c.block, cols) << at;
          ASSERT_GE(c.rows_per_pid, 1) << at;
          ASSERT_EQ(c.rows_per_pid & (c.rows_per_pid - 1), 0) << at;  // a power of two
          // The grid: the forward one program per block of rows, the backward persistent.
          if (bwd) {
            ASSERT_EQ(c.programs, std::min<int64_t>(blocks, per_cu * cus)) << at;
            ASSERT_EQ(c.num_stages, c.block <= 8192 ? 2 : 1) << at;
            ASSERT_EQ(c.chunk, c.block > 16384 ? 8192 : 0) << at;
          } else {
            ASSERT_EQ(c.programs, blocks) << at;
            ASSERT_EQ(c.num_stages, 1) << at;
            ASSERT_EQ(c.chunk, 0) << at;
          }
          if (c.block > 512) ASSERT_EQ(c.rows_per_pid, 1) << at << ": packed a wide row";
          if (c.rows_per_pid == 1) continue;
          ++packed[bwd];
          if (!bwd) ASSERT_EQ(rows % c.rows_per_pid, 0) << at << ": packing factor does not divide the rows";
          ASSERT_GE(blocks, 2 * int64_t(cus)) << at << ": packing left fewer than 2 programs per CU";
          ASSERT_GE(c.programs, 2 * int64_t(cus)) << at << ": packing left fewer than 2 programs per CU";
          ASSERT_LE(c.rows_per_pid, cap) << at;
          ASSERT_LE(c.rows_per_pid * c.block, cap_elems) << at;
          // The largest factor that qualifies: twice it would not.
          int64_t r2 = 2 * c.rows_per_pid;
          bool r2_ok = r2 <= cap && r2 * c.block <= cap_elems && (bwd || rows % r2 == 0) &&
                       (rows + r2 - 1) / r2 >= 2 * int64_t(cus);
          ASSERT_FALSE(r2_ok) << at << ": " << r2 << " rows a program would also qualify";
        }
  EXPECT_GT(packed[0], 100);  // the sweep does exercise packing, in both directions
  EXPECT_GT(packed[1], 100);
  // Wide rows never pack, whatever the rows and compute units.
  for (int64_t cols : {513, 1000, 2048, 4096, 8192, 16384, 32768})
    for (bool bwd : {false, true}) EXPECT_EQ(rmsnorm::choose(1 << 20, cols, 1, bwd).rows_per_pid, 1) << cols;
  // Rows too few for two programs per compute unit do not pack at all.
  EXPECT_EQ(rmsnorm::choose(1024, 128, 304, false).rows_per_pid, 1);
  EXPECT_EQ(rmsnorm::choose(1024, 128, 304, true).rows_per_pid, 1);
}

TEST(RMSNormChoose, DesignShapesOnMI300XAndMI355X) {
  // The seed-004 shapes: narrow rows pack (32 rows a program forward, 16 backward); wide
  // rows never.
  for (int cus : {304, 256}) {
    for (int64_t rows : {32768, 65536}) {
      auto f = rmsnorm::choose(rows, 128, cus, false), b = rmsnorm::choose(rows, 128, cus, true);
      EXPECT_EQ(f.rows_per_pid, 32);
      EXPECT_EQ(f.programs, rows / 32);
      EXPECT_EQ(f.num_warps, 4);
      EXPECT_EQ(b.rows_per_pid, 16);
      EXPECT_EQ(b.programs, 4 * cus);
      EXPECT_EQ(b.num_warps, 2);
      EXPECT_EQ(b.num_stages, 2);
    }
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8192, 4096}, {4096, 8192}, {16384, 2048}, {2048, 16384},
                              {1024, 32768}})
      for (bool bwd : {false, true}) {
        auto c = rmsnorm::choose(rows, cols, cus, bwd);
        EXPECT_EQ(c.rows_per_pid, 1) << rows << "x" << cols;
        int64_t per_cu = cols <= 2048 ? 4 : cols <= 4096 ? 2 : 1;
        EXPECT_EQ(c.programs, bwd ? std::min<int64_t>(rows, per_cu * cus) : rows) << rows << "x" << cols;
        EXPECT_EQ(c.num_warps, bwd ? (cols <= 2048 ? 4 : cols <= 4096 ? 8 : 16) : cols <= 4096 ? 4 : cols <= 16384 ? 8 : 16)
            << rows << "x" << cols;
        EXPECT_FALSE(c.offsets64) << rows << "x" << cols;
      }
  }
}

// The tile limits (docs/language.md, "Limits") refuse none of the configurations the
// benchmarks run: the widest, bench/gpu_bench.cpp's forward sweep at 32768 columns with
// 4 warps, holds 256 elements a thread on NVIDIA (128 a lane on AMD's wave64).
TEST(RMSNormChoose, WidestBenchConfigurationsTraceOnEveryGpuTarget) {
  for (const char* target : {"sm_90", "gfx942"}) {
    SCOPED_TRACE(target);
    auto f = rmsnorm::choose(1024, 32768, 132, false);
    f.num_warps = 4;
    EXPECT_NO_THROW((void)rmsnorm::compile<ty::bf16>(f, target, 1024, 32768, false, false));
    auto b = rmsnorm::choose(1024, 32768, 132, true);
    EXPECT_NO_THROW((void)rmsnorm::compile<ty::bf16>(b, target, 1024, 32768, false, true));
  }
}

// ---------------------------------------------------------------------------------
// More than 2^31 elements: 64-bit offsets for real. ~4.3 GB per bf16 buffer, so it
// runs only on a GPU (TL_DEVICE=hip or cuda); forward only: y of a sample of rows
// (the last 16 lie past 2^31 elements), rstd of every row. ~25 s on an H100 machine.

TEST(RMSNormSample, ForwardBeyond2To31ElementsOnGpu) {
  if (!on_gpu()) GTEST_SKIP() << "needs a GPU with ~9 GB free (two 4.3 GB bf16 buffers)";
  auto dev = test_device();
  const int64_t rows = 65536 + 16, cols = 32768, n = rows * cols;
  auto f = rmsnorm::choose(rows, cols, dev.compute_units(), false);
  ASSERT_TRUE(f.offsets64);
  ASSERT_EQ(f.rows_per_pid, 1);
  // Random inputs, cheaply: each row is a window of a random pool whose length (a prime)
  // is no multiple of the row, so every row differs. 2^31 draws would take a minute.
  const size_t pool_n = 1000003;
  std::vector<tl::bfloat16> pool(2 * pool_n), hx(static_cast<size_t>(n)), hw(static_cast<size_t>(cols));
  auto fp = random_floats(pool_n, -2.0f, 2.0f);
  for (size_t i = 0; i < pool_n; ++i) pool[i] = pool[i + pool_n] = tl::to_bf16(fp[i]);
  for (int64_t r = 0, start = 0; r < rows; ++r, start = (start + cols) % int64_t(pool_n))
    std::memcpy(&hx[size_t(r * cols)], &pool[size_t(start)], size_t(cols) * sizeof(tl::bfloat16));
  auto fw = random_floats(size_t(cols), 0.5f, 1.5f);
  for (int64_t c = 0; c < cols; ++c) hw[size_t(c)] = tl::to_bf16(fw[size_t(c)]);
  auto X = dev.alloc<tl::bf16>(size_t(n)), Y = dev.alloc<tl::bf16>(size_t(n)), W = dev.alloc<tl::bf16>(size_t(cols));
  auto R = dev.alloc<tl::f32>(size_t(rows));
  X.upload(hx), W.upload(hw);
  poison_nan(Y), poison_nan(R);
  rmsnorm::forward<tl::bf16>(f, X, Y, W, R, cols, kEps, false);
  dev.synchronize();
  auto got_r = R.download();
  // Rows past the 2^31-element mark (65536 and up) are the ones 32-bit offsets would break.
  std::vector<int64_t> sample = {0, 1, 2, 4095, 32767, 32768, 65534, 65535};
  for (int64_t r = 65536; r < rows; ++r) sample.push_back(r);
  std::vector<tl::bfloat16> got(static_cast<size_t>(cols));
  for (int64_t r : sample) {
    dev.copy_to_host(got.data(), Y.data() + r * cols, size_t(cols) * sizeof(tl::bfloat16));
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += std::pow(tl::to_float(hx[size_t(r * cols + c)]), 2);
    double inv = 1.0 / std::sqrt(ss / double(cols) + double(kEps));
    std::vector<double> want(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c)
      want[size_t(c)] = tl::to_float(hx[size_t(r * cols + c)]) * inv * tl::to_float(hw[size_t(c)]);
    EXPECT_TRUE(near(got, want, 8e-3, 1e-4)) << "row " << r;
    EXPECT_TRUE(near(std::vector<float>{got_r[size_t(r)]}, {inv}, 1e-5, 0)) << "rstd of row " << r;
  }
  // rstd of every row against the reference (a row never written keeps its NaN).
  std::vector<double> want_r(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double v = tl::to_float(hx[size_t(r * cols + c)]);
      ss += v * v;
    }
    want_r[size_t(r)] = 1.0 / std::sqrt(ss / double(cols) + double(kEps));
  }
  EXPECT_TRUE(near(got_r, want_r, 1e-5, 0)) << "rstd";
}

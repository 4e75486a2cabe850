// The RMSNorm forward through tl::autotune (samples/rmsnorm/tune.hpp): the tuned launch
// matches a double-precision reference, the configurations a shape cannot run are
// skipped before they are compiled (never launched), and rmsnorm::choose's hand-picked
// configuration is one of the space's.
#include <cmath>
#include <cstring>

#include "samples/rmsnorm/tune.hpp"
#include "support/reference.hpp"

namespace {

struct Shape {
  int64_t rows, cols;
};

// y = x * rsqrt(mean(x^2) + eps) * w and rstd, in double.
void reference(const std::vector<tl::bfloat16>& x, const std::vector<tl::bfloat16>& w, Shape s, float eps,
               std::vector<double>& y, std::vector<double>& rstd) {
  y.assign(size_t(s.rows * s.cols), 0);
  rstd.assign(size_t(s.rows), 0);
  for (int64_t r = 0; r < s.rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < s.cols; ++c) ss += std::pow(tl::to_float(x[size_t(r * s.cols + c)]), 2);
    double inv = 1.0 / std::sqrt(ss / double(s.cols) + eps);
    rstd[size_t(r)] = inv;
    for (int64_t c = 0; c < s.cols; ++c)
      y[size_t(r * s.cols + c)] = tl::to_float(x[size_t(r * s.cols + c)]) * inv * tl::to_float(w[size_t(c)]);
  }
}

}  // namespace

TEST(RmsnormTune, TunedForwardMatchesTheReferenceAndSkipsWhatTheShapeCannotRun) {
  auto dev = tltest::test_device();
  const float eps = 1e-6f;
  // 200 rows: 16 and 32 rows a program do not divide them. 1000 columns: no packing.
  for (Shape s : {Shape{200, 128}, Shape{24, 1000}}) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.cols);
    const size_t n = size_t(s.rows * s.cols);
    std::vector<tl::bfloat16> hx(n), hw(size_t(s.cols));
    auto fx = tltest::random_floats(n), fw = tltest::random_floats(size_t(s.cols), 0.5f, 1.5f);
    for (size_t i = 0; i < n; ++i) hx[i] = tl::to_bf16(fx[i]);
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = tl::to_bf16(fw[i]);
    auto X = tltest::upload<tl::ty::bf16>(hx), W = tltest::upload<tl::ty::bf16>(hw);
    auto Y = dev.alloc<tl::bf16>(n);
    auto R = dev.alloc<tl::f32>(size_t(s.rows));
    tltest::poison(Y);
    tltest::poison(R);
    rmsnorm::forward_tuned<tl::bf16>(X, Y, W, R, s.rows, s.cols, eps, false);
    std::vector<double> y, rstd;
    reference(hx, hw, s, eps, y, rstd);
    EXPECT_TRUE(tltest::near(Y.download(), y, 1.0 / 128, 1e-2));
    EXPECT_TRUE(tltest::near(R.download(), rstd, 1e-4, 1e-6));

    tl::tune_table t = rmsnorm::forward_tuner<tl::bf16>().table_on(dev, X, Y, W, R, s.rows, s.cols, eps, false);
    auto space = rmsnorm::forward_space();
    ASSERT_EQ(t.rows.size(), space.size());
    ASSERT_GE(t.best, 0);
    const auto& best = space[size_t(t.best)];
    EXPECT_EQ(s.rows % best.rows_per_pid, 0);
    for (size_t i = 0; i < space.size(); ++i) {
      const auto& c = space[i];
      SCOPED_TRACE(t.rows[i].config);
      if (c.rows_per_pid > 1 && s.cols > 512) {
        EXPECT_EQ(t.rows[i].dropped, "skipped: rows are packed only up to 512 columns");
      } else if (s.rows % c.rows_per_pid) {
        EXPECT_EQ(t.rows[i].dropped, "skipped: rows_per_pid must divide the rows");
      }
      // A skipped configuration was never compiled: it has no report.
      if (!t.rows[i].dropped.empty()) EXPECT_TRUE(t.rows[i].reports.empty());
      else EXPECT_GT(t.rows[i].ms, 0);
    }
    // The hand-picked configuration is in the space and the shape keeps it.
    auto hand = rmsnorm::choose(s.rows, s.cols, dev.compute_units(), false);
    bool found = false;
    for (size_t i = 0; i < space.size(); ++i)
      if (space[i].rows_per_pid == hand.rows_per_pid && space[i].num_warps == hand.num_warps) {
        found = true;
        EXPECT_TRUE(t.rows[i].dropped.empty()) << t.str();
      }
    EXPECT_TRUE(found);
  }
}

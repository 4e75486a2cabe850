// Triton's language tests (test_core.py) for tl.sort, tl.topk and tl.histogram,
// transcribed: test_sort (an M x N tile sorted along its rows, both directions, int32 /
// float16 / float32, against torch.sort: here std::stable_sort), test_topk (the k largest
// of each row, largest first, against torch.topk) and test_histogram (x = randint(0, N),
// tl.histogram(x, N) against torch.histc: here a count).
#include <algorithm>
#include <functional>

#include "conformance/common.hpp"

namespace {
using namespace conformance;
namespace ty = tl::ty;

template <class T> void test_sort(int M, int N, bool descending) {
  static auto k = tl::kernel(std::string("sort_kernel_") + std::string(tl::name(T::dtype)),
                             [](tl::ptr<T> X, tl::ptr<T> Z, int M, int N, bool descending) {
    auto offx = tl::expand_dims(tl::arange(0, M), 1) * N + tl::expand_dims(tl::arange(0, N), 0);
    auto x = tl::load(X + offx);
    tl::store(Z + offx, tl::sort(x, -1, descending));
  });
  auto hx = random_values<T>(size_t(M * N), -100, 100);
  auto X = upload<T>(hx);
  auto Z = output<T>(size_t(M * N));
  k[tl::grid(1)](X, Z, M, N, descending);
  auto want = doubles(hx);
  for (int r = 0; r < M; ++r) {
    auto first = want.begin() + r * N;
    if (descending) std::stable_sort(first, first + N, std::greater<>());
    else std::stable_sort(first, first + N);
  }
  EXPECT_EQ(doubles(Z.download()), want) << tl::name(T::dtype) << " " << M << "x" << N << (descending ? " descending" : "");
}

TEST(Core, Sort) {
  for (auto [M, N] : {std::pair{1, 512}, {8, 64}, {256, 16}, {512, 8}})
    for (bool descending : {false, true}) {
      test_sort<ty::i32>(M, N, descending);
      test_sort<ty::f16>(M, N, descending);
      test_sort<ty::f32>(M, N, descending);
    }
}

TEST(Core, Topk) {
  static auto k = tl::kernel("topk_kernel", [](tl::ptr<tl::f32> X, tl::ptr<tl::f32> Z, int M, int N, int K) {
    auto x = tl::load(X + tl::expand_dims(tl::arange(0, M), 1) * N + tl::expand_dims(tl::arange(0, N), 0));
    tl::store(Z + tl::expand_dims(tl::arange(0, M), 1) * K + tl::expand_dims(tl::arange(0, K), 0), tl::topk(x, K));
  });
  for (auto [M, N, K] : {std::tuple{1, 16, 4}, {8, 128, 8}, {32, 32, 32}}) {
    auto hx = random_values<tl::f32>(size_t(M * N), -1, 1);
    auto X = upload<tl::f32>(hx);
    auto Z = output<tl::f32>(size_t(M * K));
    k[tl::grid(1)](X, Z, M, N, K);
    std::vector<double> want;
    for (int r = 0; r < M; ++r) {
      std::vector<double> row(hx.begin() + r * N, hx.begin() + (r + 1) * N);
      std::stable_sort(row.begin(), row.end(), std::greater<>());
      want.insert(want.end(), row.begin(), row.begin() + K);
    }
    EXPECT_EQ(doubles(Z.download()), want) << M << "x" << N << " k=" << K;
  }
}

TEST(Core, Histogram) {
  static auto k = tl::kernel("histogram_kernel", [](tl::ptr<tl::i32> x_ptr, tl::ptr<tl::i32> z_ptr, int M, int N) {
    auto x = tl::load(x_ptr + tl::arange(0, M));
    tl::store(z_ptr + tl::arange(0, N), tl::histogram(x, N));
  });
  for (auto [M, N] : {std::pair{2048, 2}, {1024, 8}, {1024, 32}, {32, 32}, {8, 64}}) {
    auto hx = random_values<tl::i32>(size_t(M), 0, N - 1);
    auto X = upload<tl::i32>(hx);
    auto Z = output<tl::i32>(size_t(N));
    k[tl::grid(1)](X, Z, M, N);
    std::vector<int32_t> want(size_t(N), 0);
    for (int32_t v : hx) ++want[size_t(v)];
    EXPECT_EQ(Z.download(), want) << M << " values, " << N << " bins";
  }
}

}  // namespace

#include "tasks/Kernels.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace treefarm::tasks {
namespace {

std::vector<double> random_matrix(std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> m(static_cast<std::size_t>(n) * n);
  for (double& x : m) x = dist(rng);
  return m;
}

std::vector<double> naive_matmul(const std::vector<double>& a, const std::vector<double>& b,
                                 std::uint32_t n) {
  std::vector<double> c(static_cast<std::size_t>(n) * n, 0.0);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t k = 0; k < n; ++k) {
      for (std::uint32_t j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
    }
  }
  return c;
}

/// Entries in [-1,1): each C_ij is a sum of n products of magnitude < 1.
void expect_close(const std::vector<double>& expected, const std::vector<double>& got,
                  std::uint32_t n) {
  ASSERT_EQ(expected.size(), got.size());
  const double tolerance = 1e-13 * n;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(expected[i], got[i], tolerance) << "element " << i / n << "," << i % n;
  }
}

class MatmulTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(MatmulTest, MatchesNaiveReference) {
  const std::uint32_t n = GetParam();
  const auto a = random_matrix(n, 1);
  const auto b = random_matrix(n, 2);
  std::vector<double> c(static_cast<std::size_t>(n) * n, 42.0);  // must be overwritten
  matmul(a.data(), b.data(), c.data(), n);
  expect_close(naive_matmul(a, b, n), c, n);
}

TEST_P(MatmulTest, BlockedMatchesNaiveReferenceInArenaOfTwo) {
  const std::uint32_t n = GetParam();
  const auto a = random_matrix(n, 3);
  const auto b = random_matrix(n, 4);
  std::vector<double> c(static_cast<std::size_t>(n) * n, -7.0);
  tbb::task_arena arena(2);
  matmul_blocked(a.data(), b.data(), c.data(), n, arena);
  expect_close(naive_matmul(a, b, n), c, n);
}

TEST_P(MatmulTest, BlockedMatchesNaiveReferenceInArenaOfOneAndThree) {
  const std::uint32_t n = GetParam();
  const auto a = random_matrix(n, 5);
  const auto b = random_matrix(n, 6);
  const auto reference = naive_matmul(a, b, n);
  for (int slots : {1, 3}) {
    std::vector<double> c(static_cast<std::size_t>(n) * n, 1e300);
    tbb::task_arena arena(slots);
    matmul_blocked(a.data(), b.data(), c.data(), n, arena);
    SCOPED_TRACE(slots);
    expect_close(reference, c, n);
  }
}

// 1 and 2: degenerate; 7, 17, 33, 129: not multiples of the 8-row blocks or BLAS tiles;
// 64: exact multiple.
INSTANTIATE_TEST_SUITE_P(Sizes, MatmulTest, ::testing::Values(1u, 2u, 7u, 17u, 33u, 64u, 129u));

TEST(MatmulTest, NotTransposed) {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]]: A·B = [[19,22],[43,50]], (A·B)^T differs.
  const std::vector<double> a{1, 2, 3, 4};
  const std::vector<double> b{5, 6, 7, 8};
  std::vector<double> c(4);
  matmul(a.data(), b.data(), c.data(), 2);
  EXPECT_EQ(c, (std::vector<double>{19, 22, 43, 50}));
}

TEST(MatmulTest, OrderZeroDoesNothing) {
  // n = 0: no element may be read or written (the buffers are sentinels, not matrices).
  tbb::task_arena arena(2);
  const std::vector<double> a{1.0}, b{2.0};
  std::vector<double> c{7.0};
  matmul(a.data(), b.data(), c.data(), 0);
  EXPECT_EQ(c[0], 7.0);
  matmul_blocked(a.data(), b.data(), c.data(), 0, arena);
  EXPECT_EQ(c[0], 7.0);
  matmul(nullptr, nullptr, nullptr, 0);  // and null pointers are fine
  matmul_blocked(nullptr, nullptr, nullptr, 0, arena);
}

TEST(MataddTest, MatchesElementwiseSum) {
  for (std::uint32_t n : {1u, 3u, 17u, 100u}) {
    const auto a = random_matrix(n, 7);
    const auto b = random_matrix(n, 8);
    std::vector<double> c(a.size(), 99.0);
    matadd(a.data(), b.data(), c.data(), c.size());
    for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], a[i] + b[i]) << n << " " << i;
  }
}

TEST(MataddTest, TouchesExactlyCountElements) {
  const std::vector<double> a{1, 2, 3};
  const std::vector<double> b{10, 20, 30};
  std::vector<double> c{0, 0, 0, -1};
  matadd(a.data(), b.data(), c.data(), 3);
  EXPECT_EQ(c, (std::vector<double>{11, 22, 33, -1}));
}

TEST(BlasTest, InitIsIdempotent) {
  init_blas();
  init_blas();
  const std::vector<double> a{2};
  const std::vector<double> b{3};
  std::vector<double> c{0};
  matmul(a.data(), b.data(), c.data(), 1);
  EXPECT_EQ(c[0], 6.0);
}

}  // namespace
}  // namespace treefarm::tasks

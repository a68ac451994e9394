#include "tasks/TaskRunner.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/Kernels.hpp"
#include "tasks/Payload.hpp"
#include "tests/support/TestApps.hpp"

namespace treefarm::tasks {
namespace {

using test_support::make_app;

/// C = A·B for a pooled input, computed outside run_task.
std::vector<double> product_of(const InputPool& pool, std::size_t index) {
  const std::uint32_t n = pool.app().n;
  const auto* a = reinterpret_cast<const double*>(pool.input(index)->data());
  std::vector<double> c(static_cast<std::size_t>(n) * n);
  matmul(a, a + c.size(), c.data(), n);
  return c;
}

TEST(ChecksumTest, RunTaskIsChecksumOfTheProduct) {
  const auto app = make_app(model::Kernel::matmul, 48);
  const InputPool pool(app, 3, 0);
  const auto c = product_of(pool, 0);
  EXPECT_EQ(run_task(app, *pool.input(0), nullptr), checksum_product(c.data(), 48));
}

TEST(ChecksumTest, DetectsASingleWrongElement) {
  const std::uint32_t n = 64;
  const auto app = make_app(model::Kernel::matmul, n);
  const InputPool pool(app, 3, 0);
  const auto c = product_of(pool, 0);
  const double expected = checksum_product(c.data(), n);
  // Elements are ≈ n/4 = 16; an error of 1e-3 (6e-5 relative to the element) is caught.
  for (std::size_t index : {std::size_t{0}, std::size_t{n - 1}, std::size_t{n * 17 + 5},
                            std::size_t{n * n - 1}}) {
    for (double delta : {1e-3, -1e-3, 1.0}) {
      auto wrong = c;
      wrong[index] += delta;
      EXPECT_FALSE(checksum_matches(expected, checksum_product(wrong.data(), n), app))
          << "index " << index << " delta " << delta;
    }
  }
}

TEST(ChecksumTest, DetectsATransposedResult) {
  for (std::uint32_t n : {2u, 3u, 31u, 64u}) {
    const auto app = make_app(model::Kernel::matmul, n);
    const InputPool pool(app, 8, 0);
    const auto c = product_of(pool, 0);
    std::vector<double> transposed(c.size());
    for (std::uint32_t i = 0; i < n; ++i) {
      for (std::uint32_t j = 0; j < n; ++j) transposed[j * n + i] = c[i * n + j];
    }
    EXPECT_FALSE(checksum_matches(checksum_product(c.data(), n),
                                  checksum_product(transposed.data(), n), app))
        << n;
  }
}

TEST(ChecksumTest, DetectsSwappedRowsAndAPartialResult) {
  const std::uint32_t n = 32;
  const auto app = make_app(model::Kernel::matmul, n);
  const InputPool pool(app, 8, 0);
  const auto c = product_of(pool, 0);
  const double expected = checksum_product(c.data(), n);
  auto swapped = c;
  std::swap_ranges(swapped.begin(), swapped.begin() + n, swapped.begin() + n);
  EXPECT_FALSE(checksum_matches(expected, checksum_product(swapped.data(), n), app));
  auto partial = c;
  std::fill(partial.begin() + n * n / 2, partial.end(), 0.0);  // last half never written
  EXPECT_FALSE(checksum_matches(expected, checksum_product(partial.data(), n), app));
}

TEST(ChecksumTest, MatchesWithinRelativeToleranceOnly) {
  const auto app = make_app(model::Kernel::matmul, 8);
  EXPECT_TRUE(checksum_matches(1000.0, 1000.0 * (1 + 1e-12), app));
  EXPECT_TRUE(checksum_matches(1000.0, 1000.0 * (1 - 0.5e-9), app));
  EXPECT_FALSE(checksum_matches(1000.0, 1000.0 * (1 + 2e-9), app));
  EXPECT_FALSE(checksum_matches(1000.0, -1000.0, app));
  EXPECT_TRUE(checksum_matches(0.0, 0.0, app));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(checksum_matches(nan, nan, app));
  EXPECT_FALSE(checksum_matches(1.0, nan, app));
}

TEST(ChecksumTest, NoopChecksumsMustBeEqual) {
  const auto app = make_app(model::Kernel::noop, 0, 16);
  EXPECT_TRUE(checksum_matches(12345.0, 12345.0, app));
  EXPECT_FALSE(checksum_matches(12345.0, 12346.0, app));
}

TEST(ChecksumTest, NoopChecksumCatchesTruncationEvenOfZeroBytes) {
  std::vector<std::byte> payload(100, std::byte{0});
  payload[3] = std::byte{7};
  const double full = checksum_bytes(payload);
  EXPECT_EQ(full, std::floor(full));
  EXPECT_LT(full, 0x1.0p53);
  const std::span<const std::byte> all(payload);
  for (std::size_t cut : {1u, 4u, 8u, 9u, 50u, 96u, 100u}) {
    EXPECT_NE(checksum_bytes(all.first(payload.size() - cut)), full) << cut;
  }
}

TEST(ChecksumTest, NoopChecksumCatchesReorderedAndChangedWords) {
  const InputPool pool(make_app(model::Kernel::noop, 0, 64), 2, 0);
  const auto& payload = *pool.input(0);
  const double full = checksum_bytes(payload);
  auto reordered = payload;
  std::swap_ranges(reordered.begin(), reordered.begin() + 8, reordered.begin() + 8);
  EXPECT_NE(checksum_bytes(reordered), full);
  auto changed = payload;
  changed[63] ^= std::byte{1};
  EXPECT_NE(checksum_bytes(changed), full);
}

TEST(RunTaskTest, WrongInputSizeThrows) {
  const auto matmul_app = make_app(model::Kernel::matmul, 8);
  std::vector<std::byte> input(matmul_app.input_bytes());
  EXPECT_NO_THROW(run_task(matmul_app, input, nullptr));
  EXPECT_THROW(run_task(matmul_app, std::span(input).first(input.size() - 8), nullptr),
               std::invalid_argument);
  input.resize(input.size() + 1);
  EXPECT_THROW(run_task(matmul_app, input, nullptr), std::invalid_argument);
  EXPECT_THROW(run_task(make_app(model::Kernel::matadd, 9), input, nullptr),
               std::invalid_argument);

  const auto noop_app = make_app(model::Kernel::noop, 0, 100);
  std::vector<std::byte> payload(99);
  EXPECT_THROW(run_task(noop_app, payload, nullptr), std::invalid_argument);
}

TEST(RunTaskTest, WrongSizeMessageSaysWhatWasExpected) {
  const auto app = make_app(model::Kernel::matadd, 2);
  std::vector<std::byte> input(10);
  try {
    run_task(app, input, nullptr);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("10 bytes, expected 64"), std::string::npos)
        << e.what();
  }
}

TEST(RunTaskTest, AbstractKernelThrows) {
  auto app = make_app(model::Kernel::abstract, 0, 16);
  app.flops = 1e6;
  std::vector<std::byte> input(16);
  EXPECT_THROW(run_task(app, input, nullptr), std::invalid_argument);
}

TEST(RunTaskTest, MataddChecksumIsChecksumOfTheSum) {
  const std::uint32_t n = 21;
  const auto app = make_app(model::Kernel::matadd, n);
  const InputPool pool(app, 6, 0);
  const auto* a = reinterpret_cast<const double*>(pool.input(0)->data());
  std::vector<double> c(n * n);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = a[i] + a[c.size() + i];
  EXPECT_EQ(run_task(app, *pool.input(0), nullptr), checksum_matrix(c.data(), n));
}

TEST(RunTaskTest, MisalignedInputGivesTheSameChecksum) {
  for (const auto& app : {make_app(model::Kernel::matmul, 19), make_app(model::Kernel::matadd, 19)}) {
    const InputPool pool(app, 6, 0);
    const auto& input = *pool.input(0);
    std::vector<std::byte> shifted(input.size() + 3);
    std::memcpy(shifted.data() + 3, input.data(), input.size());
    EXPECT_EQ(run_task(app, std::span(shifted).subspan(3), nullptr), pool.expected_checksum(0));
  }
}

TEST(RunTaskTest, SmallerTaskAfterLargerReusesScratchCorrectly) {
  const auto big = make_app(model::Kernel::matmul, 50);
  const auto small = make_app(model::Kernel::matmul, 10);
  const InputPool big_pool(big, 1, 0);
  const InputPool small_pool(small, 1, 1);
  run_task(big, *big_pool.input(0), nullptr);
  EXPECT_EQ(run_task(small, *small_pool.input(0), nullptr), small_pool.expected_checksum(0));
  EXPECT_EQ(run_task(big, *big_pool.input(1), nullptr), big_pool.expected_checksum(1));
}

TEST(RunTaskTest, MultiCoreMatmulMatchesSingleCoreExpectation) {
  const auto app = make_app(model::Kernel::matmul, 200);
  const InputPool pool(app, 11, 0);
  tbb::task_arena two(2);
  tbb::task_arena one(1);
  for (std::size_t i = 0; i < pool.size(); ++i) {
    EXPECT_TRUE(checksum_matches(pool.expected_checksum(i), run_task(app, *pool.input(i), &two), app));
    EXPECT_TRUE(checksum_matches(pool.expected_checksum(i), run_task(app, *pool.input(i), &one), app));
  }
}

}  // namespace
}  // namespace treefarm::tasks

// The master's per-run secret and the matmul checksum that cannot be computed without C.
#include "tasks/RunSecret.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "tasks/Checksum.hpp"
#include "tasks/Kernels.hpp"

namespace treefarm::tasks {
namespace {

std::array<std::uint8_t, RunSecret::key_bytes> key(std::uint8_t fill) {
  std::array<std::uint8_t, RunSecret::key_bytes> k{};
  k.fill(fill);
  return k;
}

TEST(RunSecret, SeedsDependOnKeyAppAndIndexAndRepeatForTheSameKey) {
  const RunSecret a(key(1)), b(key(2));
  EXPECT_EQ(a.input_seed(0, 5), RunSecret(key(1)).input_seed(0, 5));
  EXPECT_NE(a.input_seed(0, 5), b.input_seed(0, 5));
  EXPECT_NE(a.input_seed(0, 5), a.input_seed(1, 5));
  EXPECT_NE(a.input_seed(0, 5), a.input_seed(0, 6));
  EXPECT_NE(RunSecret::random().input_seed(0, 0), RunSecret::random().input_seed(0, 0));
}

TEST(RunSecret, SpotChecksHitTheFractionAsked) {
  const RunSecret s(key(7));
  for (double f : {0.01, 0.1, 0.5}) {
    int hits = 0;
    const int n = 100000;
    for (int i = 0; i < n; ++i) hits += s.spot_checked(0, static_cast<std::uint64_t>(i), f) ? 1 : 0;
    const double expected = f * n, sd = std::sqrt(n * f * (1 - f));
    EXPECT_NEAR(hits, expected, 5 * sd) << "fraction " << f;
  }
  EXPECT_FALSE(s.spot_checked(0, 1, 0));
  EXPECT_TRUE(s.spot_checked(0, 1, 1));
}

TEST(ChecksumProduct, SeesAnyChangedElementAndIsNotTheRankTwoChecksum) {
  const std::uint32_t n = 24;
  std::vector<double> a(n * n), b(n * n), c(n * n);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<double>((i * 7) % 11) / 11.0;
    b[i] = static_cast<double>((i * 5) % 13) / 13.0;
  }
  matmul(a.data(), b.data(), c.data(), n);
  const double base = checksum_product(c.data(), n);
  EXPECT_NE(base, checksum_matrix(c.data(), n));
  for (std::size_t e : {std::size_t{0}, std::size_t{n * n / 2}, std::size_t{n * n - 1}}) {
    auto changed = c;
    changed[e] += 1e-3;
    EXPECT_GT(std::abs(checksum_product(changed.data(), n) - base), 4e-4) << "element " << e;
  }
  // The shortcut that forged the rank-2 checksum, r·A(B·1) + (1·A)(B·s), does not give this
  // one: two matrices with the same row and column sums have different checksums.
  std::vector<double> d(n * n, 0.0), e2(n * n, 0.0);
  d[0] = d[n + 1] = 1;  // a 2x2 identity block
  e2[1] = e2[n] = 1;    // its swap: the same row sums and column sums
  EXPECT_NEAR(checksum_matrix(d.data(), n), checksum_matrix(e2.data(), n), 1e-12);
  EXPECT_GT(std::abs(checksum_product(d.data(), n) - checksum_product(e2.data(), n)), 1e-6);
}

}  // namespace
}  // namespace treefarm::tasks

// LoadBalancer1D: the 1D load-balancing mechanism of papers/beaumont2006 §4.1.
#include "runtime/core/LoadBalancer1D.hpp"

#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace treefarm::core {
namespace {

// Over every prefix of n choices, choice i was made within one of n·f(i)/Σf times.
void expect_prefix_fair(const std::vector<double>& f, std::size_t choices) {
  LoadBalancer1D lb(f);
  const double total = std::accumulate(f.begin(), f.end(), 0.0);
  std::vector<std::uint64_t> made(f.size(), 0);
  for (std::size_t n = 1; n <= choices; ++n) {
    auto i = lb.next();
    ASSERT_TRUE(i.has_value());
    ++made[*i];
    for (std::size_t k = 0; k < f.size(); ++k) {
      const double ideal = static_cast<double>(n) * f[k] / total;
      ASSERT_LE(std::abs(static_cast<double>(made[k]) - ideal), 1.0 + 1e-9)
          << "choice " << k << " after " << n << " choices";
      ASSERT_EQ(lb.count(k), made[k]);
    }
  }
}

TEST(LoadBalancer1D, EveryPrefixIsWithinOneForTheWeightsOfTheExperiments) {
  expect_prefix_fair({1, 3}, 400);
  expect_prefix_fair({1, 2, 5}, 400);
  expect_prefix_fair({1, 1, 1}, 400);
  expect_prefix_fair({2, 3, 5}, 400);
}

TEST(LoadBalancer1D, TwoChoicesAreAlwaysWithinOne) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> f(0.01, 10.0);
  for (int t = 0; t < 50; ++t) expect_prefix_fair({f(rng), f(rng)}, 300);
}

// The guarantee for any K (D'Hondt): more than n·f/Σf − 1, at most (n+K)·f/Σf.
TEST(LoadBalancer1D, EveryPrefixIsWithinTheDhondtBounds) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> f(0.05, 10.0);
  std::uniform_int_distribution<int> k_dist(2, 6);
  for (int t = 0; t < 200; ++t) {
    std::vector<double> freq(static_cast<std::size_t>(k_dist(rng)));
    for (auto& x : freq) x = f(rng);
    const double total = std::accumulate(freq.begin(), freq.end(), 0.0);
    const double k = static_cast<double>(freq.size());
    LoadBalancer1D lb(freq);
    for (std::size_t n = 1; n <= 300; ++n) {
      lb.next();
      for (std::size_t i = 0; i < freq.size(); ++i) {
        const double made = static_cast<double>(lb.count(i));
        ASSERT_GT(made, static_cast<double>(n) * freq[i] / total - 1.0 - 1e-9) << "choice " << i << " after " << n;
        ASSERT_LE(made, (static_cast<double>(n) + k) * freq[i] / total + 1e-9) << "choice " << i << " after " << n;
      }
    }
  }
}

TEST(LoadBalancer1D, WithThreeChoicesOneCanRunAheadByMoreThanOne) {
  // The documented limit of the mechanism: 0.7, 0.2, 0.1 gives choice 0 seven of the
  // first eight choices (ideal 5.6).
  LoadBalancer1D lb({0.7, 0.2, 0.1});
  for (int i = 0; i < 8; ++i) lb.next();
  EXPECT_EQ(lb.count(0), 7u);
  EXPECT_EQ(lb.count(1), 1u);
  EXPECT_EQ(lb.count(2), 0u);
}

TEST(LoadBalancer1D, ExactSequenceForOneToThree) {
  // Keys (g+1)/f start at 1 for choice 0 and 1/3 for choice 1; at a tie (after 1,1 the
  // keys are 1 and 1) choice 0 wins.
  LoadBalancer1D lb({1, 3});
  std::vector<std::size_t> seq;
  for (int i = 0; i < 8; ++i) seq.push_back(*lb.next());
  EXPECT_EQ(seq, (std::vector<std::size_t>{1, 1, 0, 1, 1, 1, 0, 1}));
  EXPECT_EQ(lb.count(0), 2u);
  EXPECT_EQ(lb.count(1), 6u);
}

TEST(LoadBalancer1D, ZeroFrequencyIsNeverChosen) {
  LoadBalancer1D lb({0, 2, 0, 1});
  for (int i = 0; i < 300; ++i) {
    auto c = lb.next();
    ASSERT_TRUE(c.has_value());
    EXPECT_NE(*c, 0u);
    EXPECT_NE(*c, 2u);
  }
  EXPECT_EQ(lb.count(1), 200u);
  EXPECT_EQ(lb.count(3), 100u);
  // Only zero frequencies allowed: nothing to choose.
  EXPECT_FALSE(lb.next([](std::size_t i) { return i == 0 || i == 2; }).has_value());
  EXPECT_FALSE(LoadBalancer1D({0, 0}).peek().has_value());
  EXPECT_FALSE(LoadBalancer1D().peek().has_value());
}

TEST(LoadBalancer1D, AllowedFilterRestrictsTheChoice) {
  LoadBalancer1D lb({1, 3});
  // 1 would be chosen, but only 0 is allowed.
  EXPECT_EQ(lb.peek(), std::optional<std::size_t>(1));
  EXPECT_EQ(lb.next([](std::size_t i) { return i == 0; }), std::optional<std::size_t>(0));
  EXPECT_EQ(lb.count(0), 1u);
  EXPECT_FALSE(lb.next([](std::size_t) { return false; }).has_value());
  EXPECT_EQ(lb.count(0) + lb.count(1), 1u) << "a refused choice must not be recorded";
  // Once 0 is no longer allowed, 1 takes every turn and catches up.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lb.next([](std::size_t k) { return k == 1; }), std::optional<std::size_t>(1));
}

TEST(LoadBalancer1D, PeekDoesNotRecord) {
  LoadBalancer1D lb({1, 1});
  EXPECT_EQ(lb.peek(), std::optional<std::size_t>(0));
  EXPECT_EQ(lb.peek(), std::optional<std::size_t>(0));
  EXPECT_EQ(lb.count(0), 0u);
  lb.record(0);
  EXPECT_EQ(lb.peek(), std::optional<std::size_t>(1));
}

TEST(LoadBalancer1D, TiesGoToTheLowestIndex) {
  LoadBalancer1D lb({2, 2, 2});
  std::vector<std::size_t> seq;
  for (int i = 0; i < 6; ++i) seq.push_back(*lb.next());
  EXPECT_EQ(seq, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
  // 1:2: after choice 1 the keys tie, (0+1)/1 = (1+1)/2 = 1, and choice 0 wins.
  LoadBalancer1D lb2({1, 2});
  std::vector<std::size_t> seq2;
  for (int i = 0; i < 6; ++i) seq2.push_back(*lb2.next());
  EXPECT_EQ(seq2, (std::vector<std::size_t>{1, 0, 1, 1, 0, 1}));
}

TEST(LoadBalancer1D, SetFrequenciesKeepsCountsAndResetClearsThem) {
  LoadBalancer1D lb({1, 1});
  lb.next();
  lb.next();
  lb.next();  // counts 2, 1
  lb.set_frequencies({1, 3});
  EXPECT_EQ(lb.count(0), 2u);
  EXPECT_EQ(lb.count(1), 1u);
  EXPECT_EQ(lb.frequency(1), 3.0);
  lb.reset_counts();
  EXPECT_EQ(lb.count(0), 0u);
  EXPECT_EQ(lb.count(1), 0u);
  EXPECT_EQ(lb.peek(), std::optional<std::size_t>(1));
}

TEST(LoadBalancer1D, RejectsNegativeOrNanFrequencies) {
  EXPECT_THROW(LoadBalancer1D({1, -1}), std::invalid_argument);
  EXPECT_THROW(LoadBalancer1D({std::nan("")}), std::invalid_argument);
  LoadBalancer1D lb({1});
  EXPECT_THROW(lb.set_frequencies({-0.5}), std::invalid_argument);
  EXPECT_EQ(lb.frequency(0), 1.0) << "a rejected update leaves the frequencies unchanged";
}

}  // namespace
}  // namespace treefarm::core

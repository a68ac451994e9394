#include "runtime/plan/TreeSearch.hpp"

#include <chrono>
#include <set>

#include <gtest/gtest.h>

#include "tests/runtime/plan/PlanTestSupport.hpp"

namespace treefarm::plan {
namespace {

TEST(TreeSearch, ExhaustiveEnumeratesEveryRootedTreeOnce) {
  for (std::uint32_t n : {1u, 2u, 3u, 4u, 5u}) {
    TreeEvaluator ev(test::generated(n, 1, 3), test::two_apps(), {});
    const auto r = exhaustive(ev);
    std::size_t expected = 1;
    for (std::uint32_t i = 1; i < n; ++i) expected *= n;  // n^(n-1) (Cayley × roots)
    EXPECT_EQ(r.trees_seen, expected) << n;
    EXPECT_EQ(r.evaluations, expected);
    EXPECT_TRUE(is_valid(r.tree));
  }
}

TEST(TreeSearch, NeighboursAreValidDistinctTrees) {
  const auto set = test::generated(6, 2, 5);
  const auto start = lan_gateway_tree(set);
  ASSERT_TRUE(is_valid(start));
  const auto all = neighbours(start);
  std::set<std::vector<int>> distinct;
  for (const auto& t : all) {
    EXPECT_TRUE(is_valid(t));
    EXPECT_NE(t.parent, start.parent);
    distinct.insert(t.parent);
  }
  // Re-parent moves and swaps may meet (swapping a leaf with its parent's sibling...), but
  // most are distinct; every re-parent target outside the subtree is present.
  EXPECT_GT(distinct.size(), all.size() / 2);
}

TEST(TreeSearch, LpEvaluationTime) {
  TreeEvaluator ev(test::generated(8, 2, 1), test::two_apps(), {});
  const auto t = lan_gateway_tree(ev.machines());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) ev.fair_throughput_uncached(t);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 200;
  std::printf("one LP evaluation of an 8-machine tree: %.1f us\n", s * 1e6);
  EXPECT_LT(s, 0.05);
}

}  // namespace
}  // namespace treefarm::plan

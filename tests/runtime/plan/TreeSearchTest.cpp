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
    const auto r = exhaustive(ev, /*prune=*/false);
    std::size_t expected = 1;
    for (std::uint32_t i = 1; i < n; ++i) expected *= n;  // n^(n-1) (Cayley × roots)
    EXPECT_EQ(r.trees_seen, expected) << n;
    EXPECT_EQ(r.evaluations, expected);
    EXPECT_TRUE(is_valid(r.tree));
  }
}

TEST(TreeSearch, UpperBoundIsNeverBelowTheLp) {
  for (auto comm : {model::CommModel::one_port, model::CommModel::multi_port}) {
    model::RunSpec run;
    run.comm_model = comm;
    if (comm == model::CommModel::multi_port) run.max_out_bandwidth = 40e6;
    TreeEvaluator ev(test::generated(7, 3, 11), test::two_apps(), run);
    std::mt19937_64 rng(3);
    PlanTree t = lan_gateway_tree(ev.machines());
    double tightest = 0.0;
    for (int i = 0; i < 300; ++i) {
      t = random_neighbour(t, rng);
      const double lp = ev.fair_throughput_uncached(t), ub = ev.upper_bound(t);
      EXPECT_GE(ub, lp * (1 - 1e-9)) << i;
      tightest = std::max(tightest, lp / ub);
    }
    EXPECT_GT(tightest, 0.3);  // a bound that is always far above prunes nothing
  }
}

TEST(TreeSearch, PrunedExhaustiveFindsTheSameOptimum) {
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    TreeEvaluator ev(test::generated(6, seed % 2 ? 2 : 3, seed), test::two_apps(), {});
    const auto all = exhaustive(ev, false);
    const auto pruned = exhaustive(ev, true);
    EXPECT_NEAR(pruned.fair_throughput, all.fair_throughput, 1e-9 * all.fair_throughput) << seed;
    EXPECT_NEAR(ev.fair_throughput_uncached(pruned.tree), all.fair_throughput, 1e-9 * all.fair_throughput);
    EXPECT_GT(pruned.trees_pruned, 0u);
    EXPECT_EQ(pruned.trees_pruned + pruned.evaluations, all.evaluations + 1);  // +1: the first incumbent
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

TEST(TreeSearch, LpEvaluationIsFast) {
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

namespace treefarm::plan {
namespace {

TEST(TreeSearch, RmshcFindsTheExhaustiveOptimumOnSmallGeneratedSets) {
  int hits = 0, cases = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto set = test::generated(5, seed % 2 ? 2 : 3, seed);
    TreeEvaluator ev(set, test::two_apps(), {});
    const auto opt = exhaustive(ev);
    RmshcOptions o;
    o.seed = seed;
    const auto r = rmshc(ev, lan_gateway_tree(set), o);
    EXPECT_LE(r.fair_throughput, opt.fair_throughput * (1 + 1e-9));
    EXPECT_TRUE(is_valid(r.tree));
    EXPECT_NEAR(ev.fair_throughput(r.tree), r.fair_throughput, 1e-12 * r.fair_throughput);
    hits += r.fair_throughput >= opt.fair_throughput * (1 - 1e-6) ? 1 : 0;
    ++cases;
  }
  EXPECT_EQ(hits, cases);
}

/// Three LANs: the master's LAN "a" reaches "b" only through a thin link, "c" is well
/// linked to both. The best tree feeds b's machines through a machine of c.
TEST(TreeSearch, RmshcRelaysAroundAThinLink) {
  MachineSet s;
  s.lans = {{"a", 100e6, 0}, {"b", 100e6, 0}, {"c", 100e6, 0}};
  s.lan_bandwidth = {{0, 0.1e6, 50e6}, {0.1e6, 0, 50e6}, {50e6, 50e6, 0}};
  s.lan_latency.assign(3, std::vector<double>(3, 0.0));
  s.machines = {{"a0", 0, 8, 4e9, 0, 0}, {"b0", 1, 8, 2e9, 0, 0}, {"b1", 1, 8, 2e9, 0, 0}, {"c0", 2, 1, 1e9, 0, 0}};
  TreeEvaluator ev(s, test::two_apps(), {});
  RmshcOptions o;
  o.starts = 4;
  const auto r = rmshc(ev, PlanTree::star(4, 0), o);
  const auto opt = exhaustive(ev);
  EXPECT_NEAR(r.fair_throughput, opt.fair_throughput, 1e-9 * opt.fair_throughput);
  EXPECT_GT(r.fair_throughput, 1.5 * ev.fair_throughput(PlanTree::star(4, 0)));
  // b0 and b1 do not hang from a0 over the thin link.
  for (std::size_t b : {1u, 2u}) EXPECT_NE(r.tree.parent[b], 0) << b;
}

TEST(TreeSearch, BudgetInEvaluationsIsRespected) {
  const auto set = test::generated(12, 3, 4);
  TreeEvaluator ev(set, test::two_apps(), {});
  RmshcOptions o;
  o.max_evaluations = 40;
  const auto r = rmshc(ev, lan_gateway_tree(set), o);
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_LE(r.evaluations, 41u);
  EXPECT_GE(r.fair_throughput, ev.fair_throughput(lan_gateway_tree(set)));
}

TEST(TreeSearch, ExhaustiveRefusesLargeSets) {
  TreeEvaluator ev(test::generated(9, 2, 1), test::two_apps(), {});
  EXPECT_THROW(exhaustive(ev), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::plan

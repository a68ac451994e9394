#include "runtime/plan/ParentChooser.hpp"

#include <limits>

#include <gtest/gtest.h>

#include "runtime/lp/SteadyState.hpp"

namespace treefarm::plan {
namespace {

/// A chain master -> w1 -> w2 -> w3 with fast links; one application of 10 MB tasks.
lp::PlatformModel chain() {
  lp::PlatformModel m;
  m.apps = {{"a", 10e6, 1.0, 1}};
  const double inf = std::numeric_limits<double>::infinity();
  m.nodes.push_back({"master", -1, 0, inf, {inf}, inf});
  m.nodes.push_back({"w1", 0, 1, 100e6, {1.0}, inf});
  m.nodes.push_back({"w2", 1, 1, 100e6, {1.0}, inf});
  m.nodes.push_back({"w3", 2, 1, 100e6, {1.0}, inf});
  return m;
}

TEST(ParentChooser, ClimbsToTheCandidateWithTheBestPrediction) {
  const auto live = chain();
  JoiningNode j;
  j.cores = 4;
  j.task_seconds = {0.25};
  // The joiner measured a fast link from w3 only, slow ones elsewhere.
  const std::vector<ParentCandidate> candidates{{0, 1e6}, {1, 2e6}, {2, 1e6}, {3, 80e6}};
  double best = -1;
  std::size_t arg = 0;
  for (const auto& c : candidates) {
    const double v = lp::solve(with_joiner(live, j, c.node, c.bandwidth)).fair_throughput;
    if (v > best) best = v, arg = c.node;
  }
  ASSERT_EQ(arg, 3u);
  // One start (a walk of one step: w1) climbs to a local optimum, w1 (w0 and w2 are worse).
  ParentChoiceOptions one;
  one.starts = 1;
  EXPECT_EQ(choose_parent(live, j, 0, candidates, one).parent, 1u);
  // Eight starts, walks of up to 128 steps: some start lands in w3's basin.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    ParentChoiceOptions o;
    o.seed = seed;
    o.starts = 8;
    const auto c = choose_parent(live, j, 0, candidates, o);  // the walk starts at the master
    EXPECT_EQ(c.parent, 3u) << seed;
    EXPECT_NEAR(c.fair_throughput, best, 1e-9 * best);
    EXPECT_LE(c.evaluations, candidates.size());
  }
}

TEST(ParentChooser, OnlyMeasuredNodesCanBeChosen) {
  const auto live = chain();
  JoiningNode j;
  j.task_seconds = {1.0};
  const auto c = choose_parent(live, j, 3, {{1, 5e6}});
  EXPECT_EQ(c.parent, 1u);
  EXPECT_GT(c.fair_throughput, 0);
  EXPECT_THROW(choose_parent(live, j, 0, {}), std::invalid_argument);
  EXPECT_THROW(choose_parent(live, j, 0, {{9, 1e6}}), std::invalid_argument);
  EXPECT_THROW(choose_parent(live, j, 0, {{1, 0}}), std::invalid_argument);
  j.task_seconds = {};
  EXPECT_THROW(choose_parent(live, j, 0, {{1, 1e6}}), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::plan

#include "runtime/plan/LiveTree.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace treefarm::plan {
namespace {

using net::msg::TreeInfo;

/// m (no cores) ─ a (4 cores, 1 s/task) ─ b (4 cores, unknown task time); c below m,
/// listed by m but never reached.
std::vector<TreeInfo> three_levels() {
  const std::vector<TreeInfo::App> apps{{"mm", 8ull << 20, 2e9, 1.0, 1}};
  TreeInfo m{"m", "tcp://m:1", "", 0, 0, {0.0}, apps, {{"a", "tcp://a:1", 4, 100e6}, {"c", "", 2, 0}}};
  TreeInfo a{"a", "tcp://a:1", "tcp://m:1", 4, 0, {1.0}, apps, {{"b", "tcp://b:1", 4, 0}}};
  TreeInfo b{"b", "tcp://b:1", "tcp://a:1", 4, 0, {0.0}, apps, {}};
  return {b, a, m};  // in any order
}

TEST(LiveTree, BuildsTheModelFromTheRootAndFillsUnknowns) {
  const auto t = live_tree(three_levels(), {{"m", 50e6}, {"a", 20e6}, {"b", 30e6}});
  const auto& m = t.model;
  ASSERT_EQ(m.nodes.size(), 4u);
  EXPECT_EQ(m.nodes[0].name, "m");
  EXPECT_TRUE(std::isinf(m.nodes[0].link_bandwidth));
  EXPECT_EQ(m.nodes[1].name, "a");
  EXPECT_EQ(m.nodes[1].parent, 0);
  EXPECT_DOUBLE_EQ(m.nodes[1].link_bandwidth, 100e6);  // from the parent's child entry
  EXPECT_EQ(m.nodes[2].name, "c");                       // listed, not reached
  EXPECT_EQ(m.nodes[2].cores, 2u);
  EXPECT_EQ(t.endpoints[2], "");
  EXPECT_EQ(m.nodes[3].name, "b");
  EXPECT_EQ(m.nodes[3].parent, 1);
  EXPECT_DOUBLE_EQ(m.nodes[3].task_seconds[0], 1.0);  // the median of the known ones
  // unknown links: median of {100e6 (known), 50e6, 20e6, 30e6 (measured)} = 40e6
  EXPECT_DOUBLE_EQ(m.nodes[3].link_bandwidth, 40e6);
  EXPECT_EQ(t.guessed_bandwidths, 2u);
  EXPECT_EQ(t.guessed_task_seconds, 2u);  // b and c compute; m has no cores
}

TEST(LiveTree, RefusesATreeWithoutRootOrApplications) {
  auto infos = three_levels();
  infos.pop_back();  // m
  EXPECT_THROW(live_tree(infos, {}), std::invalid_argument);
  auto no_apps = three_levels();
  no_apps[2].apps.clear();
  no_apps[2].task_seconds.clear();
  EXPECT_THROW(live_tree(no_apps, {}), std::invalid_argument);
}

TEST(LiveTree, TheJoinerGoesWhereItsMeasuredLinkIsFast) {
  const auto t = live_tree(three_levels(), {});
  // Tasks of 8 MiB: a 100 MB/s link from b feeds 12 tasks/s, 1 MB/s from m or a only 0.125.
  const std::map<std::string, double> measured{{"m", 1e6}, {"a", 1e6}, {"b", 100e6}};
  const auto p = choose_live_parent(t, measured, "new", 8, 0, "a");
  EXPECT_EQ(p.name, "b");
  EXPECT_EQ(p.endpoint, "tcp://b:1");
  const auto q = choose_live_parent(t, {{"m", 100e6}, {"a", 1e6}, {"b", 1e6}}, "new", 8, 0, "b");
  EXPECT_EQ(q.name, "m");
  EXPECT_THROW(choose_live_parent(t, {{"c", 100e6}}, "new", 8, 0, "m"), std::invalid_argument);  // c: no endpoint
}

TEST(LiveTree, ReparentingMovesOnlyForTheGainAsked) {
  const auto t = live_tree(three_levels(), {});
  // Under a (1 MB/s measured) now; b offers 100 MB/s: far more than 10 % better.
  const std::map<std::string, double> measured{{"m", 1e6}, {"a", 1e6}, {"b", 100e6}};
  const auto r = reparent_choice(t, measured, "new", 8, 0, "a", 0.1);
  ASSERT_TRUE(r.current.has_value());
  EXPECT_EQ(t.model.nodes[*r.current].name, "a");
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(t.model.nodes[*r.best].name, "b");
  EXPECT_GT(r.best_throughput, 1.1 * r.current_throughput);
  EXPECT_TRUE(r.move);
  EXPECT_EQ(r.evaluations, 3u);
  // Under b already: the others are slower, it stays; a gain threshold it cannot reach keeps it too.
  EXPECT_FALSE(reparent_choice(t, measured, "new", 8, 0, "b", 0.1).move);
  const auto huge = reparent_choice(t, measured, "new", 8, 0, "a", 1e6);
  EXPECT_FALSE(huge.move);
  // A negative threshold moves it to the best other node even when that is worse.
  const auto forced = reparent_choice(t, measured, "new", 8, 0, "b", -1);
  EXPECT_TRUE(forced.move);
  EXPECT_LT(forced.best_throughput, forced.current_throughput);
  // Its parent was not measured (or is gone): any measured node is better than none.
  const auto orphan = reparent_choice(t, {{"m", 1e6}}, "new", 8, 0, "a", 0.1);
  EXPECT_FALSE(orphan.current.has_value());
  EXPECT_TRUE(orphan.move);
}

TEST(LiveTree, ReparentingCountsTheMovingNodesSubtree) {
  const auto t = live_tree(three_levels(), {});
  // The moving node "new" (8 cores) has a child "kid" of 16 cores behind 1 GB/s: both move.
  const std::vector<TreeInfo::App> apps{{"mm", 8ull << 20, 2e9, 1.0, 1}};
  TreeInfo self{"new", "tcp://new:1", "", 8, 0, {1.0}, apps, {{"kid", "tcp://kid:1", 16, 1e9}}};
  TreeInfo kid{"kid", "tcp://kid:1", "tcp://new:1", 16, 0, {1.0}, apps, {}};
  const auto sub = live_tree({self, kid}, {});
  const std::map<std::string, double> measured{{"m", 1e9}, {"a", 100e6}, {"b", 100e6}};
  const auto alone = reparent_choice(t, measured, "new", 8, 0, "a", 0.1);
  const auto with_kid = reparent_choice(t, measured, "new", 8, 0, "a", 0.1, &sub);
  ASSERT_TRUE(with_kid.best.has_value());
  EXPECT_EQ(t.model.nodes[*with_kid.best].name, "m");
  // Under m over 1 GB/s (119 tasks/s of 8 MiB) the kid's 16 cores add to the prediction (at
  // most its 16 tasks/s; the root's port is shared).
  EXPECT_GT(with_kid.best_throughput - alone.best_throughput, 1.0);
  EXPECT_LE(with_kid.best_throughput - alone.best_throughput, 16.0 + 1e-6);
  EXPECT_GT(with_kid.current_throughput, 0.0);
  EXPECT_EQ(with_kid.evaluations, alone.evaluations);
  // The appended model: kid below the moving node, its own durations.
  const auto model = with_subtree(with_joiner(t.model, live_joiner(t, "new", 8, 0), 0, 1e9), sub);
  ASSERT_EQ(model.nodes.size(), t.model.nodes.size() + 2);
  EXPECT_EQ(model.nodes.back().name, "kid");
  EXPECT_EQ(model.nodes.back().parent, static_cast<int>(t.model.nodes.size()));
  EXPECT_EQ(model.nodes.back().cores, 16u);
  EXPECT_DOUBLE_EQ(model.nodes.back().link_bandwidth, 1e9);
}

}  // namespace
}  // namespace treefarm::plan

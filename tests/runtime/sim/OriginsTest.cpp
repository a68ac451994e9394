// Applications from several masters in SimGrid (papers/bertin2008 §2.2, Figure 2): one
// tree of node drivers per origin, each the platform re-rooted at that origin
// (docs/simulation.md, "Applications from several masters").
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <set>
#include <string>

#include "runtime/model/Experiment.hpp"
#include "runtime/sim/SimPlatform.hpp"
#include "runtime/sim/Simulation.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"

namespace treefarm::sim {
namespace {

using test::every_task_once;
using test::experiment;

// A forwards only; B forwards only and is app1's master; C computes (10 tasks/s of
// either application) and is app2's master. app1's tasks climb B -> A (1 MB/s: 1 task/s)
// and go down A -> C (4 MB/s). Max-min: app1 = 1 task/s (B's link), app2 = the rest of
// C, 9 tasks/s. Had app1 come from the root A, it would get 5 (half of C).
constexpr const char* two_origins = R"(
[run]
comm_model = "multi-port"
[[node]]
name = "A"
cores = 0
[[node]]
name = "B"
parent = "A"
cores = 0
bandwidth = "1MBps"
latency = "1us"
[[node]]
name = "C"
parent = "A"
cores = 1
speed = "100Mf"
bandwidth = "4MBps"
latency = "1us"
[[app]]
name = "app1"
origin = "B"
bytes = "1MB"
flops = "10Mf"
tasks = 40
[[app]]
name = "app2"
origin = "C"
bytes = "1MB"
flops = "10Mf"
tasks = 360
)";

TEST(SimOrigins, TreesAreThePlatformReRootedAtEachOrigin) {
  const auto p = make_sim_platform(experiment(two_origins));
  const auto trees = origin_trees(p);
  ASSERT_EQ(trees.size(), 2u);
  // app1 from B: B is the root, A below it (over B's own link, crossed upwards), C below A.
  EXPECT_EQ(trees[0].origin, 1u);
  EXPECT_EQ(trees[0].apps, std::vector<std::size_t>{0});
  const auto& b = trees[0].view.nodes;
  EXPECT_EQ(b[1].parent, -1);
  EXPECT_EQ(b[0].parent, 1);
  EXPECT_EQ(b[2].parent, 0);
  EXPECT_EQ(b[1].children, std::vector<std::size_t>{0});
  EXPECT_EQ(b[0].children, std::vector<std::size_t>{2});
  EXPECT_DOUBLE_EQ(b[0].bandwidth, 1e6);  // A hears from B over B's link
  EXPECT_DOUBLE_EQ(b[2].bandwidth, 4e6);
  ASSERT_EQ(trees[0].view.experiment.apps.size(), 1u);
  EXPECT_EQ(trees[0].view.experiment.apps[0].name, "app1");
  EXPECT_TRUE(trees[0].view.experiment.apps[0].origin.empty());
  ASSERT_EQ(b[2].work.size(), 1u);
  // app2 from C: C over A over B.
  EXPECT_EQ(trees[1].origin, 2u);
  const auto& c = trees[1].view.nodes;
  EXPECT_EQ(c[2].parent, -1);
  EXPECT_EQ(c[0].parent, 2);
  EXPECT_EQ(c[1].parent, 0);
  EXPECT_DOUBLE_EQ(c[0].bandwidth, 4e6);

  // Every application from the root: one tree, the platform itself.
  auto from_root = experiment(two_origins);
  for (auto& a : from_root.apps) a.origin.clear();
  const auto q = make_sim_platform(from_root);
  const auto one = origin_trees(q);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].origin, 0u);
  for (std::size_t u = 0; u < q.nodes.size(); ++u) {
    EXPECT_EQ(one[0].view.nodes[u].parent, q.nodes[u].parent);
    EXPECT_EQ(one[0].view.nodes[u].children, q.nodes[u].children);
    EXPECT_EQ(one[0].view.nodes[u].bandwidth, q.nodes[u].bandwidth);
  }
}

TEST(SimOrigins, TwoOriginsEveryTaskOnceAtTheMaxMinLp) {
  const auto ex = experiment(two_origins);
  const auto p = make_sim_platform(ex);
  const auto o = simulate(p);
  ASSERT_TRUE(o.completed) << o.error;
  EXPECT_TRUE(every_task_once(ex, o.results));
  for (const auto& t : o.results.tasks) EXPECT_EQ(t.node, "C");  // the only node that computes
  // The LP with origins: app1 is held to B's link.
  ASSERT_TRUE(o.results.apps[0].predicted);
  EXPECT_NEAR(*o.results.apps[0].predicted, 1.0, 1e-6);
  ASSERT_TRUE(o.results.predicted_fair_throughput);
  EXPECT_NEAR(*o.results.predicted_fair_throughput, 1.0, 1e-6);
  // Measured: app1 at the LP's 1 task/s (not the 5 it would get from the root), app2 the
  // rest of C's 10 tasks/s.
  EXPECT_NEAR(o.results.apps[0].throughput, 1.0, 0.1);
  EXPECT_NEAR(o.results.apps[1].throughput, 9.0, 0.9);
  EXPECT_NEAR(o.results.fair_throughput, *o.results.predicted_fair_throughput, 0.1);
}

// The paper's Figure 2 (examples/bertin2008-origins.toml, fewer tasks): every policy
// completes every task once, and each task runs on a node that can run its application.
TEST(SimOrigins, Figure2EveryPolicyCompletesEveryTaskOnce) {
  auto ex = model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/bertin2008-origins.toml");
  for (auto& a : ex.apps) a.tasks = 150;
  for (const char* policy : {"fcfs", "lp", "price"}) {
    SCOPED_TRACE(policy);
    ex.run.policy = policy;
    const auto p = make_sim_platform(ex);
    const auto o = simulate(p);
    ASSERT_TRUE(o.completed) << o.error;
    EXPECT_TRUE(every_task_once(ex, o.results));
    for (const auto& t : o.results.tasks) {
      const auto u = ex.node_index(t.node);
      ASSERT_TRUE(u) << t.node;
      EXPECT_TRUE(p.model.can_run(*u, t.app)) << t.node;
    }
  }
}

// One-port: a node's port is shared by every transfer, but each origin tree has its own
// driver and port: refused, naming the application's origin.
TEST(SimOrigins, OnePortWithOriginsIsRefusedNamingTheOrigin) {
  auto ex = experiment(two_origins);
  ex.run.comm_model = model::CommModel::one_port;
  const auto p = make_sim_platform(ex);
  try {
    simulate(p);
    FAIL() << "one-port with origins accepted";
  } catch (const model::FileError& e) {
    EXPECT_EQ(e.field(), "app[0].origin");
    EXPECT_THAT(e.what(), testing::HasSubstr("one-port"));
  }
}

}  // namespace
}  // namespace treefarm::sim

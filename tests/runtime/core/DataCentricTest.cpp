// DATA-CENTRIC (papers/beaumont2006 §4.5): the trading on a view (DataCentricPlanner),
// and the policy that assembles the view from reports, plans at the root and follows the
// plan everywhere.
#include "runtime/core/DataCentricPolicy.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <gtest/gtest.h>

#include "tests/runtime/core/CoreTestUtil.hpp"

namespace treefarm::core::testing {
namespace {

// A star: a root that does not compute, and children of bandwidths 40, 20, 4, 2 bytes/s,
// each computing 1 task/s of either application. A: 10 bytes per task (high CCR), B: 1.
std::vector<ViewNode> star(std::size_t apps = 2) {
  std::vector<ViewNode> v;
  v.push_back(ViewNode{"root", -1, 0, std::vector<double>(apps, 0.0)});
  for (double b : {40.0, 20.0, 4.0, 2.0})
    v.push_back(ViewNode{"b" + std::to_string(static_cast<int>(b)), 0, b, std::vector<double>(apps, 1.0)});
  return v;
}
const std::vector<PlannerApp> two_apps{{1, 10, 1}, {1, 1, 1}};

TEST(DataCentricPlanner, StartsFromTheBandwidthCentricSolution) {
  // One application: the executor-less root feeds 40 (0.25 of its port per task/s), then
  // 20 (0.5), then 4 gets the last 0.25 of the port: 0.1 task/s; 2 gets nothing.
  const auto r = DataCentricPlanner::plan(star(1), {two_apps[0]}, true);
  ASSERT_EQ(r.alpha.size(), 5u);
  EXPECT_NEAR(r.alpha[1][0], 1.0, 1e-9);
  EXPECT_NEAR(r.alpha[2][0], 1.0, 1e-9);
  EXPECT_NEAR(r.alpha[3][0], 0.1, 1e-9);
  EXPECT_NEAR(r.alpha[4][0], 0.0, 1e-9);
  EXPECT_NEAR(r.sent[3][0], 0.1, 1e-9);
  EXPECT_TRUE(r.balanced);
}

TEST(DataCentricPlanner, OrdersApplicationsByCommunicationToComputationRatio) {
  EXPECT_EQ(DataCentricPlanner::by_ccr({{1, 1, 10}, {1, 10, 1}, {1, 5, 5}}), (std::vector<std::size_t>{1, 2, 0}));
}

// Proposition 1 (§3.3): on a star, the fast links get the high-CCR application, the slow
// ones the low-CCR one, in two slices that overlap on at most one node; and the trading
// stops within the 5% balance.
TEST(DataCentricPlanner, ReachesTheSliceStructureOfProposition1OnAStar) {
  const auto view = star();
  const auto r = DataCentricPlanner::plan(view, two_apps, true);
  SCOPED_TRACE("iterations " + std::to_string(r.iterations) + ", trades " + std::to_string(r.trades) + ", gap fills " +
               std::to_string(r.gap_fills) + ", de-saturations " + std::to_string(r.desaturations) + ", root trades " +
               std::to_string(r.root_trades));
  EXPECT_TRUE(r.balanced) << "imbalance " << r.imbalance;
  EXPECT_LT(r.imbalance, 0.05);
  EXPECT_GT(r.totals[0], 1.0);  // better than feeding one fast child only
  // Children are already sorted by decreasing bandwidth (1..4).
  int last_a = 0, first_b = 5;
  for (int u = 1; u <= 4; ++u) {
    if (r.alpha[u][0] > 1e-9) last_a = u;
    if (r.alpha[u][1] > 1e-9) first_b = std::min(first_b, u);
  }
  EXPECT_GE(last_a + 1, first_b) << "no node between the slices may be idle";
  EXPECT_LE(first_b, last_a + 1);
  EXPECT_GE(first_b, last_a) << "A slice [1," << last_a << "], B slice [" << first_b << ",4]: overlap of more than one node";
  EXPECT_NEAR(r.alpha[1][1], 0.0, 1e-9) << "the fastest link computes only the high-CCR application";
  EXPECT_GT(r.alpha[1][0], 0.5);
  EXPECT_NEAR(r.alpha[4][0], 0.0, 1e-9) << "the slowest link computes only the low-CCR application";
  // Every constraint of LP (3) holds: CPU, the one-port root, conservation.
  double port = 0;
  for (int u = 1; u <= 4; ++u) {
    EXPECT_LE(r.alpha[u][0] + r.alpha[u][1], 1.0 + 1e-9);
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(r.sent[u][k], r.alpha[u][k], 1e-9);
    port += (r.sent[u][0] * 10 + r.sent[u][1] * 1) / view[u].bandwidth;
  }
  EXPECT_LE(port, 1.0 + 1e-9);
}

TEST(DataCentricPlanner, PathResidualIsTheMinimumAlongThePath) {
  // root -> mid (fast link, no CPU) -> leaf (slow link, fast CPU): the leaf's B is bounded
  // by the slow link below mid, not by the fast one.
  std::vector<ViewNode> v{{"root", -1, 0, {0}}, {"mid", 0, 100, {0}}, {"leaf", 1, 2, {10}}};
  const auto r = DataCentricPlanner::plan(v, {{1, 1, 1}}, true);
  EXPECT_NEAR(r.alpha[2][0], 2.0, 1e-9);
  EXPECT_NEAR(r.sent[1][0], 2.0, 1e-9);
}

TEST(DataCentricPlanner, RejectsAnInconsistentView) {
  std::vector<ViewNode> v{{"root", -1, 0, {1}}, {"x", 2, 1, {1}}, {"y", 0, 1, {1}}};
  EXPECT_THROW(DataCentricPlanner::plan(v, {{1, 1, 1}}, true), std::invalid_argument);
  std::vector<ViewNode> w{{"root", -1, 0, {1, 1}}};
  EXPECT_THROW(DataCentricPlanner::plan(w, {{1, 1, 1}}, true), std::invalid_argument);
}

TEST(DataCentricPolicy, RejectsMalformedOrMisdirectedMessages) {
  auto node = make_node(node_config(false, 4, {app("a", 1, 10)}), "data-centric");
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"c", 1, 1}}, 0);
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, {9, 9}}, 1), ProtocolError);
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, {1, 1, 0, 0, 0}}, 1), ProtocolError);
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{7}, {}}, 1), ProtocolError);
  // A plan (kind 2) for 1 app and 0 nodes is fine from the parent, not from a child.
  const std::vector<std::uint8_t> empty_plan{2, 1, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, empty_plan}, 1), ProtocolError);
  EXPECT_NO_THROW(node->handle(event::PolicyMessage{true, ChildId{}, empty_plan}, 1));
}

// End to end on the star above, calibrated (§5.1.4): the children report, the root plans
// and sends the rates down; the fast child is told to compute only A, the slowest only B.
TEST(DataCentricPolicy, StarGetsTheSlicePlanThroughReportsAndComputesAccordingly) {
  TreeSpec spec;
  spec.policy = "data-centric";
  spec.calibrated = true;
  spec.apps = {app("A", 1, 300), app("B", 1, 300)};
  spec.apps[0].bytes = 10;
  spec.apps[0].flops = 1;
  spec.apps[1].bytes = 1;
  spec.apps[1].flops = 1;
  spec.nodes.resize(5);
  spec.nodes[0].cores = 0;
  spec.nodes[0].buffer = 8;
  const double bw[] = {40, 20, 4, 2};
  for (std::size_t v = 1; v <= 4; ++v) {
    spec.nodes[v].cores = 1;
    spec.nodes[v].link_bandwidth = bw[v - 1];
    spec.nodes[v].buffer = 3;
  }
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  const auto& root = dynamic_cast<const DataCentricPolicy&>(h.node(0).policy());
  ASSERT_TRUE(root.last_result().has_value());
  EXPECT_EQ(root.view().size(), 5u);
  EXPECT_TRUE(root.last_result()->balanced) << root.last_result()->imbalance;
  const auto& fast = dynamic_cast<const DataCentricPolicy&>(h.node(1).policy());
  const auto& slow = dynamic_cast<const DataCentricPolicy&>(h.node(4).policy());
  ASSERT_TRUE(fast.follower().plan().has_value());
  ASSERT_TRUE(slow.follower().plan().has_value());
  EXPECT_GT(fast.follower().plan()->local[0], 0.5);
  EXPECT_NEAR(fast.follower().plan()->local[1], 0.0, 1e-9);
  EXPECT_NEAR(slow.follower().plan()->local[0], 0.0, 1e-9);
  EXPECT_GT(slow.follower().plan()->local[1], 0.0);
  // After the plan arrived (it needs one report round trip), the fast child computes A
  // and the slowest B, with few exceptions (the work-conserving fallback).
  std::vector<std::array<int, 2>> computed(5, {0, 0});
  for (const auto& r : h.log())
    if (r.time > 5.0)
      if (const auto* a = std::get_if<Action>(&r.what))
        if (const auto* s = std::get_if<action::StartTask>(a)) ++computed[r.node][s->task.app().value];
  EXPECT_GT(computed[1][0], 5 * computed[1][1]) << computed[1][0] << " A, " << computed[1][1] << " B";
  EXPECT_GT(computed[4][1], 5 * computed[4][0]) << computed[4][1] << " B, " << computed[4][0] << " A";
}

}  // namespace
}  // namespace treefarm::core::testing

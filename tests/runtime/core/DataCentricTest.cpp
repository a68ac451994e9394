// DATA-CENTRIC (papers/beaumont2006 §4.5): the trading on a view (DataCentricPlanner),
// and the decentralized policy: O(K) summaries up, per-child rates down, each node
// planning on its local star from its children's summaries.
#include "runtime/core/policies/DataCentricPolicy.hpp"

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
  // Rates (kind 2) for 1 app are fine from the parent, not from a child.
  const auto rates = DataCentricPolicy::encode_rates({0.5});
  ASSERT_EQ(rates.size(), 13u);
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, rates}, 1), ProtocolError);
  EXPECT_NO_THROW(node->handle(event::PolicyMessage{true, ChildId{}, rates}, 1));
  // A summary (kind 1) is fine from a child, not from the parent; a negative rate, an
  // efficiency outside (0, 1], unknown flags or a wrong K are rejected.
  SubtreeSummary s{{2}, {1}, {0.5}, 1, false, false};
  EXPECT_NO_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, DataCentricPolicy::encode_summary(s)}, 2));
  EXPECT_THROW(node->handle(event::PolicyMessage{true, ChildId{}, DataCentricPolicy::encode_summary(s)}, 2), ProtocolError);
  auto bad = s;
  bad.capacity = {-1};
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, DataCentricPolicy::encode_summary(bad)}, 2), ProtocolError);
  bad = s;
  bad.efficiency = 0;
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, DataCentricPolicy::encode_summary(bad)}, 2), ProtocolError);
  auto trailing = DataCentricPolicy::encode_summary(s);
  trailing.push_back(0);
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, trailing}, 2), ProtocolError);
  auto flags = DataCentricPolicy::encode_summary(s);
  flags.back() = 7;
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, flags}, 2), ProtocolError);
  bad = SubtreeSummary{{2, 2}, {1, 1}, {0, 0}, 1, false, false};
  EXPECT_THROW(node->handle(event::PolicyMessage{false, ChildId{1}, DataCentricPolicy::encode_summary(bad)}, 2), ProtocolError);
}

// Propagation: a node knows its grandchildren only through its child's summary, and bounds
// it by its own link. Here the child claims 10 tasks/s, but the link to it carries 2 tasks/s:
// the node's summary says 2, and asked for 5 it gives the child 2 and says it cannot keep up.
TEST(DataCentricPolicy, SummaryIsTheChildSummaryBoundedByTheLink) {
  auto apps = std::vector<AppParams>{app("a", 1, 10)};
  apps[0].bytes = 1;
  apps[0].flops = 1;
  auto config = node_config(false, 4, apps);
  config.name = "mid";
  auto node = make_node(config, "data-centric");
  node->start(0);
  node->handle(event::ChildJoined{ChildId{1}, ChildInfo{"c", 1, 2.0}}, 0);
  const SubtreeSummary child{{10}, {10}, {0}, 1, true, false};
  auto out = node->handle(event::PolicyMessage{false, ChildId{1}, DataCentricPolicy::encode_summary(child)}, 1);
  const auto& policy = dynamic_cast<const DataCentricPolicy&>(node->policy());
  EXPECT_NEAR(policy.summary().capacity[0], 2.0, 1e-9);
  EXPECT_NEAR(policy.summary().absorbable[0], 2.0, 1e-9);
  EXPECT_TRUE(policy.summary().under_utilized);
  const action::SendPolicyMessage* up = nullptr;
  for (const auto& a : out)
    if (const auto* m = std::get_if<action::SendPolicyMessage>(&a); m && m->to_parent) up = m;
  ASSERT_NE(up, nullptr) << "the changed summary goes to the parent";
  EXPECT_EQ(up->payload, DataCentricPolicy::encode_summary(policy.summary()));

  out = node->handle(event::PolicyMessage{true, ChildId{}, DataCentricPolicy::encode_rates({5.0})}, 2);
  ASSERT_TRUE(policy.follower().plan().has_value());
  EXPECT_NEAR(policy.follower().plan()->children.at("c")[0], 2.0, 1e-9);
  EXPECT_NEAR(policy.follower().plan()->local[0], 0.0, 1e-9);
  EXPECT_TRUE(policy.summary().cannot_keep_up);
  EXPECT_NEAR(policy.summary().load[0], 2.0, 1e-9);
  EXPECT_NEAR(policy.summary().absorbable[0], 0.0, 1e-9) << "the link is full";
  bool down = false;
  for (const auto& a : out)
    if (const auto* m = std::get_if<action::SendPolicyMessage>(&a); m && !m->to_parent) {
      EXPECT_EQ(m->child, ChildId{1});
      EXPECT_EQ(m->payload, DataCentricPolicy::encode_rates({2.0}));
      down = true;
    }
  EXPECT_TRUE(down) << "the child is told its rates";
}

TreeSpec calibrated_spec(std::uint64_t tasks) {
  TreeSpec spec;
  spec.policy = "data-centric";
  spec.calibrated = true;
  spec.apps = {app("A", 1, tasks), app("B", 1, tasks)};
  spec.apps[0].bytes = 10;
  spec.apps[0].flops = 1;
  spec.apps[1].bytes = 1;
  spec.apps[1].flops = 1;
  return spec;
}

// End to end, root -> mid (fast link, relays only) -> leaf (slow link, fast CPU): the root
// learns the leaf's capacity only through mid's summary, bounded by the slow link below mid.
TEST(DataCentricPolicy, SlowGrandchildLinkLimitsTheSummaryTheRootSees) {
  auto spec = calibrated_spec(100);
  spec.nodes.resize(3);
  spec.nodes[0].cores = 0;
  spec.nodes[1].cores = 0;
  spec.nodes[1].link_bandwidth = 1000;
  spec.nodes[2].parent = 1;
  spec.nodes[2].link_bandwidth = 20;          // 2 tasks/s of A, 20 of B
  spec.nodes[2].task_seconds = {0.1};         // 10 tasks/s of either
  TreeHarness h(spec);
  h.start();
  h.run();
  ASSERT_TRUE(h.emptiness_check());
  const auto& root = dynamic_cast<const DataCentricPolicy&>(h.node(0).policy());
  const auto& leaf = dynamic_cast<const DataCentricPolicy&>(h.node(2).policy());
  EXPECT_NEAR(leaf.summary().capacity[0], 10.0, 1e-6);
  const auto* mid = root.child_summary(ChildId{1});
  ASSERT_NE(mid, nullptr);
  EXPECT_NEAR(mid->capacity[0], 2.0, 1e-6) << "A: bounded by the grandchild's link";
  EXPECT_NEAR(mid->capacity[1], 10.0, 1e-6) << "B: bounded by the grandchild's CPU";
  ASSERT_EQ(root.view().size(), 2u) << "the root plans on itself and its child only";
  ASSERT_TRUE(root.last_result().has_value());
  EXPECT_LE(root.last_result()->sent[1][0], 2.0 + 1e-6);
}

// Messages are O(K): on a deep chain and on a wide star, every payload is a Summary
// (14 + 24K bytes) or Rates (5 + 8K bytes), whatever the subtree below.
std::size_t largest_policy_message(const TreeHarness& h, std::size_t& count) {
  std::size_t largest = 0;
  count = 0;
  for (const auto& r : h.log())
    if (const auto* a = std::get_if<Action>(&r.what))
      if (const auto* m = std::get_if<action::SendPolicyMessage>(a)) {
        largest = std::max(largest, m->payload.size());
        ++count;
      }
  return largest;
}

TEST(DataCentricPolicy, MessageSizeDoesNotGrowWithTheSubtree) {
  const std::size_t k = 2;
  auto chain = calibrated_spec(60);
  chain.nodes.resize(12);
  for (std::size_t v = 1; v < chain.nodes.size(); ++v) {
    chain.nodes[v].parent = v - 1;
    chain.nodes[v].link_bandwidth = 100.0 / static_cast<double>(v);
  }
  auto wide = calibrated_spec(60);
  wide.nodes.resize(24);
  for (std::size_t v = 1; v < wide.nodes.size(); ++v) wide.nodes[v].link_bandwidth = 5.0 * static_cast<double>(v);
  for (const auto* spec : {&chain, &wide}) {
    TreeHarness h(*spec);
    h.start();
    h.run();
    ASSERT_TRUE(h.emptiness_check());
    std::size_t count = 0;
    const auto largest = largest_policy_message(h, count);
    EXPECT_GE(count, spec->nodes.size() - 1) << "every worker reports at least once";
    EXPECT_EQ(largest, 14 + 24 * k);
  }
}

// End to end on the star above, calibrated (§5.1.4): the children send summaries, the root
// plans and sends the rates down; the fast child is told to compute only A, the slowest only B.
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

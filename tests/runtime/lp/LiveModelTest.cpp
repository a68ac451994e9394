// The root's live model (docs/live-model.md): a node's shifted task time makes one
// re-plan with the LP solved again; repeated reports, small moves and moves too soon
// after the last re-plan make none.
#include <gtest/gtest.h>

#include "TestPlatforms.hpp"
#include "runtime/lp/LiveModel.hpp"

namespace treefarm::lp {
namespace {

using net::msg::Estimate;

// A forwarding master and three one-core workers of 1 s tasks behind fast links.
PlatformModel star() {
  testing::Builder b;
  b.app("job", 1e6).comm(model::CommModel::multi_port);
  b.node("master", -1, 0, testing::inf, {testing::inf});
  for (const char* w : {"w1", "w2", "w3"}) b.node(w, 0, 1, 1e8, {1.0});
  return b.m;
}

Estimate seconds_of(const char* node, double mean, std::uint32_t shifts) {
  return Estimate{node, Estimate::What::task_seconds, 0, mean, 0.1, 40, shifts};
}

TEST(LiveModel, AShiftedTaskTimeReplansOnceWithTheNewOptimum) {
  const auto m = star();
  LiveModel live(m, solve(m));
  EXPECT_NEAR(live.solution().fair_throughput, 3.0, 1e-6);
  // Steady reports: no re-plan.
  EXPECT_FALSE(live.update({seconds_of("w1", 1.02, 0), seconds_of("w2", 0.98, 0)}, 10));
  // w1 at a quarter speed, declared by its shift test.
  const auto r = live.update({seconds_of("w1", 4.0, 1), seconds_of("w2", 1.0, 0)}, 34);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->node, "w1");
  EXPECT_EQ(r->figure, "task_seconds of 'job'");
  EXPECT_DOUBLE_EQ(r->old_value, 1.0);
  EXPECT_DOUBLE_EQ(r->new_value, 4.0);
  EXPECT_NEAR(r->old_optimum, 3.0, 1e-6);
  EXPECT_NEAR(r->new_optimum, 2.25, 1e-6);
  EXPECT_DOUBLE_EQ(r->at, 34);
  // The hints carry the new rates: w1 gets a quarter task/s, the others one each.
  const auto hints = live.hints();
  ASSERT_EQ(hints.size(), 4u);
  EXPECT_NEAR(hints[1].received[0], 0.25, 1e-6);
  EXPECT_NEAR(hints[2].received[0], 1.0, 1e-6);
  // The same report again (same shift count): nothing new.
  EXPECT_FALSE(live.update({seconds_of("w1", 4.0, 1)}, 40));
  EXPECT_EQ(live.replans().size(), 1u);
  EXPECT_EQ(to_json(*r).at("new_optimum").get<double>(), r->new_optimum);
}

TEST(LiveModel, SmallMovesAndMovesTooSoonDoNotReplan) {
  const auto m = star();
  LiveModelOptions o;
  o.min_change = 0.2;
  o.min_gap = 5;
  LiveModel live(m, solve(m), o);
  EXPECT_FALSE(live.update({seconds_of("w1", 1.15, 1)}, 10)) << "15% is within min_change";
  ASSERT_TRUE(live.update({seconds_of("w2", 2.0, 1)}, 20));
  EXPECT_FALSE(live.update({seconds_of("w3", 2.0, 1)}, 22)) << "2 s after a re-plan";
  EXPECT_TRUE(live.update({seconds_of("w3", 2.0, 1)}, 26)) << "looked at again once the gap passed";
  EXPECT_EQ(live.replans().size(), 2u);
  EXPECT_FALSE(live.update({seconds_of("nobody", 9.0, 3)}, 40));
}

Estimate counted(const char* node, double mean, std::uint32_t samples, std::uint32_t shifts) {
  return Estimate{node, Estimate::What::task_seconds, 0, mean, 0.1, samples, shifts};
}

TEST(LiveModel, AShiftIsFollowedOnceAsItsEstimateSettles) {
  const auto m = star();
  LiveModel live(m, solve(m));
  // The shift took a level that straddled the change (2 s); the estimate settles at 4 s.
  ASSERT_TRUE(live.update({counted("w1", 2.0, 40, 1)}, 34));
  EXPECT_FALSE(live.update({counted("w1", 4.0, 42, 1)}, 40)) << "2 samples after the shift: not settled yet";
  const auto r = live.update({counted("w1", 4.0, 45, 1)}, 46);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->cause, "estimate settled");
  EXPECT_DOUBLE_EQ(r->old_value, 2.0);
  EXPECT_NEAR(r->new_optimum, 2.25, 1e-6);
  // Its estimate jitters on (a loaded machine): no more re-plans until the next shift.
  for (int i = 0; i < 60; ++i)
    EXPECT_FALSE(live.update({counted("w1", i % 2 ? 2.5 : 6.0, 46 + static_cast<std::uint32_t>(i), 1)}, 52 + 6.0 * i))
        << "report " << i;
  EXPECT_EQ(live.replans().size(), 2u);
  // A new shift (back to full speed) re-plans again.
  EXPECT_TRUE(live.update({counted("w1", 1.0, 120, 2)}, 500));
}

TEST(LiveModel, ASteadyFiguresJitterWithoutAShiftNeverReplans) {
  const auto m = star();
  LiveModel live(m, solve(m));
  for (int i = 0; i < 300; ++i)
    EXPECT_FALSE(live.update({counted("w1", i % 3 ? 0.6 : 1.7, 10 + static_cast<std::uint32_t>(i), 0)}, 1.0 * i));
  EXPECT_TRUE(live.replans().empty());
}

TEST(LiveModel, ObservedModelTakesTheRunsFiguresAndKeepsASharedHostsOnes) {
  auto m = star();
  m.nodes[2].link_bandwidth = testing::inf;  // unconstrained links stay so
  // w2 and w3 share a calibrated host: their figures are not kernel times, they stay.
  m.hosts.push_back(PlatformModel::Host{"shared", 1.0, 0, 0, 0, {}});
  m.nodes[2].host = m.nodes[3].host = 0;
  // w1 alone on its host (an emulated LAN): its figure is taken, its whole cost follows.
  m.hosts.push_back(PlatformModel::Host{"own", 1.0, 0, 0, 0, {0.5}});
  m.nodes[1].host = 1;
  const auto o = observed_model(m, {{"w1", {{"job", 2.0}}}, {"w3", {{"job", 9.0}}}}, {{"w1", 5e7}, {"w2", 1e3}});
  EXPECT_DOUBLE_EQ(o.nodes[1].task_seconds[0], 2.0);
  EXPECT_DOUBLE_EQ(o.hosts[1].task_cpu_seconds[0], 1.0) << "0.5 s of CPU per task, twice as slow";
  EXPECT_DOUBLE_EQ(o.nodes[2].task_seconds[0], 1.0);
  EXPECT_DOUBLE_EQ(o.nodes[3].task_seconds[0], 1.0);
  EXPECT_DOUBLE_EQ(o.nodes[1].link_bandwidth, 5e7);
  EXPECT_TRUE(std::isinf(o.nodes[2].link_bandwidth));
  m.hosts.clear();
  m.nodes[1].host = m.nodes[2].host = m.nodes[3].host = -1;
  EXPECT_NEAR(solve(observed_model(m, {{"w1", {{"job", 2.0}}}}, {})).fair_throughput, 2.5, 1e-6);
}

}  // namespace
}  // namespace treefarm::lp

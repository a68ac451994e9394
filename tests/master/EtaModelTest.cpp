// The run's predicted completion (master/EtaModel.hpp; docs/command-tasks.md, "Progress and ETA").
#include <gtest/gtest.h>

#include "master/EtaModel.hpp"

namespace treefarm::master {
namespace {

TEST(EtaModel, TheRateIsEachNodesCoresOverItsTimePerTask) {
  EtaModel m(1000);
  EXPECT_FALSE(m.eta(0)) << "no node's time known yet";
  m.node_cores("master", 0);
  m.node_cores("w1", 1);
  m.node_cores("w2", 4);
  m.completed("w1", 0.5, 1);
  m.completed("w1", 0.5, 1);
  EXPECT_NEAR(m.eta(2)->rate, 2.0, 1e-9) << "w2 has reported nothing: only w1 counts";
  m.completed("w2", 2.0, 2);  // 4 core-seconds a task on 4 cores: 1 task/s
  const auto e = m.eta(3);
  ASSERT_TRUE(e);
  EXPECT_NEAR(e->rate, 3.0, 1e-9);
  EXPECT_EQ(e->remaining, 997u);
  EXPECT_NEAR(e->seconds_left, 997.0 / 3.0, 1e-9);
  EXPECT_EQ(EtaModel::text(*e), "997 tasks, 5 min 32 s left at 3.00 tasks/s predicted");
  EXPECT_EQ(EtaModel::text({1000, 2.03, 492}), "1,000 tasks, 8 min 12 s left at 2.03 tasks/s predicted");
}

TEST(EtaModel, AFirstSlowTaskDoesNotSkewANodesTime) {
  EtaModel m(100);
  m.node_cores("w1", 1);
  m.completed("w1", 2.0, 1);  // warming up
  m.completed("w1", 0.5, 1);
  m.completed("w1", 0.5, 1);
  EXPECT_NEAR(m.eta(3)->rate, 2.0, 1e-9) << "the median, not the mean (1 s)";
  for (int i = 0; i < 100; ++i) m.completed("w1", 0.25, 1);
  EXPECT_NEAR(m.eta(103)->rate, 4.0, 1e-9) << "its recent tasks only";
}

TEST(EtaModel, ThePredictionAtATenthIsKeptAgainstTheEnd) {
  EtaModel m(100);
  m.node_cores("w1", 2);
  m.completed("w1", 1.0, 1);  // 2 tasks/s
  m.observe(1.0, 2);
  EXPECT_TRUE(m.versus_actual(50).is_null()) << "before a tenth of the tasks";
  m.observe(5.0, 10);  // 90 left at 2/s (the task times, and 8 done in 4 s): end at 50 s
  m.completed("w1", 3.0, 1);
  m.observe(20.0, 40);  // a later prediction does not replace it
  const auto j = m.versus_actual(40.0);
  ASSERT_FALSE(j.is_null());
  EXPECT_DOUBLE_EQ(j["predicted_end"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(j["made_at"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 1.25);
}

// Tiny tasks (a matmul of order 32: a few µs of compute on one core) run at the rate the tree
// dispatches them, far below what their compute alone allows: the prediction follows the rate
// achieved, or it said 3.6 s for a run of 11.9 s.
TEST(EtaModel, TheRateAchievedBoundsTheNodesRateWhenDispatchLimitsTheRun) {
  EtaModel m(1500000);
  m.node_cores("w1", 1);
  m.node_cores("w2", 1);
  m.completed("w1", 4e-6, 1);
  m.completed("w2", 4e-6, 1);
  EXPECT_NEAR(m.eta(0)->rate, 500000.0, 1e-6) << "compute alone";
  m.observe(1.0, 120000);  // the first results seen: no rate yet
  EXPECT_NEAR(m.eta(120000)->rate, 500000.0, 1e-6);
  m.observe(2.0, 255000);  // 135,000 more in the next second
  EXPECT_NEAR(m.eta(255000)->rate, 135000.0, 1e-6);
  const auto j = m.versus_actual(11.2);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["predicted_end"].get<double>(), 2.0 + 1245000.0 / 135000.0, 1e-9);
}

// One-second tasks finish in waves: the first wave is not a rate, so the prediction at a
// tenth comes from the task times (the count done lags the start by a task's duration).
TEST(EtaModel, TheFirstWaveOfResultsIsNotTakenForTheRate) {
  EtaModel m(40);
  m.node_cores("w1", 4);
  m.observe(1.0, 0);
  m.completed("w1", 1.0, 1);  // 4 tasks/s
  m.observe(2.2, 4);          // a tenth, but no rate achieved yet: nothing kept
  EXPECT_NEAR(m.eta(4)->rate, 4.0, 1e-9) << "the first wave alone is no rate";
  EXPECT_TRUE(m.versus_actual(11.2).is_null());
  m.observe(3.2, 8);  // 4 more in a second: 32 left at 4/s
  const auto j = m.versus_actual(11.2);
  ASSERT_FALSE(j.is_null());
  EXPECT_NEAR(j["predicted_end"].get<double>(), 11.2, 1e-9);
}

TEST(EtaModel, TheLpRateBoundsTheNodesRateWhenTheLinksLimitTheRun) {
  EtaModel m(1000);
  m.node_cores("w1", 2);
  m.completed("w1", 0.01, 1);  // 200 tasks/s from compute alone
  EXPECT_NEAR(m.eta(0)->rate, 200.0, 1e-9);
  m.plan_rate(50.0);  // the plan, which counts the links, says 50
  EXPECT_NEAR(m.eta(0)->rate, 50.0, 1e-9);
  EXPECT_NEAR(m.eta(0)->seconds_left, 20.0, 1e-9);
  m.plan_rate(500.0);  // a plan above what the nodes do is not taken
  EXPECT_NEAR(m.eta(0)->rate, 200.0, 1e-9);
  m.plan_rate(0);  // no plan
  EXPECT_NEAR(m.eta(0)->rate, 200.0, 1e-9);
}

}  // namespace
}  // namespace treefarm::master

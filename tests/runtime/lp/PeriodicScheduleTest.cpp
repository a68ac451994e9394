// Tests of runtime/lp/PeriodicSchedule.hpp (beaumont2006 §3.2).
#include <gtest/gtest.h>

#include <sstream>

#include "runtime/lp/RandomTree.hpp"
#include "runtime/lp/PeriodicSchedule.hpp"
#include "TestPlatforms.hpp"

namespace treefarm::lp {
namespace {

using testing::Builder;
using testing::inf;
using model::CommModel;

void expect_good(const PlatformModel& m, const PeriodicSchedule& p) {
  const ScheduleCheck check = check_schedule(m, p);
  EXPECT_TRUE(check.feasible) << (check.violations.empty() ? "" : check.violations.front());
  EXPECT_TRUE(p.within_tolerance) << "period " << p.period << " loss " << p.relative_loss;
  EXPECT_GE(p.fair_throughput, 0.99 * p.lp_fair_throughput);
  EXPECT_LE(p.fair_throughput, p.lp_fair_throughput * (1 + 1e-9));
  EXPECT_LE(p.period, 1e4);
}

TEST(PeriodicSchedule, ExactPeriodForRationalOptimum) {
  // Weights 1:3 on 6 cores (SteadyStateTest): α_X = 1.2, α_Y = 3.6 tasks/s. Counts are
  // integral from P = 5/6 s on; the first candidate on the 0.1 s grid is 2.5 s: 3 and 9
  // tasks. Shorter candidates lose more than 1% (floor(1.2·P) < 0.99·1.2·P).
  Builder b;
  b.app("X", 10, 1.0).app("Y", 10, 3.0);
  b.node("root", -1, 6, inf, {2.0, 1.0});
  const Solution s = solve(b.m);
  const PeriodicSchedule p = periodic_schedule(b.m, s);
  expect_good(b.m, p);
  EXPECT_NEAR(p.period, 2.5, 1e-12);
  EXPECT_EQ(p.computed[0][0], 3u);
  EXPECT_EQ(p.computed[0][1], 9u);
  EXPECT_NEAR(p.relative_loss, 0.0, 1e-9);
}

TEST(PeriodicSchedule, TwoLevelTreeConservesTasks) {
  Builder b;
  b.app("a", 10);
  b.node("root", -1, 0, inf, {inf});
  b.node("I", 0, 1, 100, {1.0});
  b.node("L1", 1, 1, 10, {1.0});
  b.node("L2", 1, 1, 20, {1.0});
  const PeriodicSchedule p = periodic_schedule(b.m, solve(b.m));
  expect_good(b.m, p);
  // α = (0, 1, 0.5, 1): P = 2 s is the first period with integral counts.
  EXPECT_NEAR(p.period, 2.0, 1e-12);
  EXPECT_EQ(p.received[1][0], 5u);
  EXPECT_EQ(p.received[2][0], 1u);
  EXPECT_EQ(p.received[0][0], 0u);
  EXPECT_EQ(p.app_tasks[0], 5u);
}

TEST(PeriodicSchedule, RandomTreesFeasibleAndWithinOnePercent) {
  for (const CommModel comm : {CommModel::one_port, CommModel::multi_port}) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
      const PlatformModel m = random_tree(20, 3, seed, comm);
      const PeriodicSchedule p = periodic_schedule(m, solve(m));
      SCOPED_TRACE("seed " + std::to_string(seed));
      expect_good(m, p);
    }
  }
}

TEST(PeriodicSchedule, ReportsWhenBoundTooShort) {
  // α = 1/3 task/s; with periods of at most 1 s no task fits: not within tolerance, but
  // still feasible (rounded down).
  Builder b;
  b.app("a", 1);
  b.node("root", -1, 1, inf, {3.0});
  const Solution s = solve(b.m);
  const PeriodicSchedule p = periodic_schedule(b.m, s, {.max_period = 1.0, .tolerance = 0.01});
  EXPECT_FALSE(p.within_tolerance);
  EXPECT_TRUE(check_schedule(b.m, p).feasible);
  EXPECT_LE(p.period, 1.0);
  std::ostringstream text;
  print_schedule(text, b.m, p);
  EXPECT_NE(text.str().find("warning"), std::string::npos) << text.str();
  // With the default bound: P = 3 s, one task.
  const PeriodicSchedule q = periodic_schedule(b.m, s);
  expect_good(b.m, q);
  EXPECT_NEAR(q.period, 3.0, 1e-12);
}

TEST(PeriodicSchedule, CheckCatchesViolations) {
  Builder b;
  b.app("a", 10);
  b.node("root", -1, 0, inf, {inf});
  b.node("A", 0, 1, 10, {1.0});
  PeriodicSchedule p = periodic_schedule(b.m, solve(b.m));
  ASSERT_TRUE(check_schedule(b.m, p).feasible);
  p.computed[1][0] += 1;  // breaks conservation and the cpu limit
  const ScheduleCheck bad = check_schedule(b.m, p);
  EXPECT_FALSE(bad.feasible);
  EXPECT_GE(bad.violations.size(), 2u);
  p.computed[1][0] -= 1;
  p.received[1][0] += 1;  // conservation and the link
  EXPECT_FALSE(check_schedule(b.m, p).feasible);
}

TEST(PeriodicSchedule, PrinterShowsPeriodAndCounts) {
  Builder b;
  b.app("a", 10);
  b.node("root", -1, 2, inf, {1.0});
  const PeriodicSchedule p = periodic_schedule(b.m, solve(b.m));
  std::ostringstream text;
  print_schedule(text, b.m, p);
  // 2 tasks/s: the unit is 0.1 s and P = 0.5 s holds one task exactly.
  EXPECT_NE(text.str().find("period 0.5 s"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("a: 1 per period (2 tasks/s)"), std::string::npos) << text.str();
  EXPECT_EQ(text.str().find("warning"), std::string::npos);
}

}  // namespace
}  // namespace treefarm::lp

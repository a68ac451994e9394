// runtime/node/CalibrationWindow on scripted runs: interleaved measurement reports the
// runs' mean; under a CPU quota, whose stop falls between runs, the applications are
// measured one at a time and report the sustained time per task over their window.
#include "runtime/node/CalibrationWindow.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using treefarm::node::CalibrationWindow;

namespace {

CalibrationWindow::Limits limits(bool sustained, double window = 0.5) {
  CalibrationWindow::Limits l;
  l.reps = 5;
  l.min_window = window;
  l.min_kernel_seconds = 1.0;
  l.max_runs = 1000;
  l.sustained = sustained;
  return l;
}

/// Feeds runs of `run` seconds of application k on one core under a quota of `quota`
/// cores per 100 ms period: runs go at full speed until the period's budget is spent,
/// then the node is stopped, between two runs, until the next period. Returns the figure
/// reported and the time it was reported.
std::pair<double, double> quota_runs(CalibrationWindow& w, std::size_t k, double run, double quota, double now) {
  double budget_used = 0;
  double period_start = now;
  for (int i = 0; i < 100000; ++i) {
    if (budget_used + run > quota * 0.1 + 1e-12) {  // stopped until the next period
      period_start += 0.1;
      now = period_start;
      budget_used = 0;
    }
    now += run;
    budget_used += run;
    if (const auto s = w.record(k, run, now)) return {*s, now};
  }
  ADD_FAILURE() << "never done";
  return {0, now};
}

}  // namespace

// Quota 0.3 core: 2 ms runs go at full speed 15 at a time, then the node is stopped for
// 70 ms. It sustains one task per 2 ms / 0.3 = 6.7 ms though every run took 2 ms.
TEST(CalibrationWindow, UnderAQuotaTheStopsBetweenRunsCountInTheTimePerTask) {
  CalibrationWindow w({1}, {true}, 1, 0.0, limits(true));
  const auto [seconds, at] = quota_runs(w, 0, 0.002, 0.3, 0.0);
  EXPECT_NEAR(w.mean_run_seconds(0), 0.002, 1e-12);
  EXPECT_NEAR(w.median_run_seconds(0), 0.002, 1e-12);
  EXPECT_NEAR(seconds, 0.002 / 0.3, 0.002 / 0.3 * 0.05) << "reported at " << at << " s after " << w.runs(0) << " runs";
  EXPECT_TRUE(w.done(0));
  EXPECT_FALSE(w.next().has_value());
}

// A tiny kernel reaches its thousand runs inside the first period's budget; it is not
// done before the window spans the minimum, so the stops are in its figure.
TEST(CalibrationWindow, AThousandTinyRunsInOneBudgetDoNotEndTheWindow) {
  CalibrationWindow w({1}, {true}, 1, 0.0, limits(true, 0.5));
  const auto [seconds, at] = quota_runs(w, 0, 1e-5, 0.25, 0.0);
  EXPECT_GE(at, 0.5);
  EXPECT_NEAR(seconds, 1e-5 / 0.25, 1e-5 / 0.25 * 0.05);
}

// Under a quota one application runs at a time, in order; the next one's window starts
// when the previous is done, and runs of the previous still under way then do not count.
TEST(CalibrationWindow, UnderAQuotaApplicationsAreMeasuredOneAfterAnother) {
  CalibrationWindow w({1, 1}, {true, true}, 2, 0.0, limits(true));
  EXPECT_EQ(w.next(), 0u);
  std::optional<double> first;
  double now = 0;
  while (!first) {  // two cores, 10 ms runs of app 0, both back to back
    now += 0.01;
    first = w.record(0, 0.01, now);
    if (!first) first = w.record(0, 0.01, now);
  }
  EXPECT_NEAR(*first, 0.01, 1e-9);
  EXPECT_EQ(w.next(), 1u);
  EXPECT_FALSE(w.record(0, 0.01, now + 0.005).has_value()) << "app 0 is done";
  // App 1: 40 ms runs on two cores, but one core still finishing app 0 for the first 5 ms.
  double t = now;
  std::optional<double> second;
  while (!second) {
    t += 0.04;
    second = w.record(1, 0.04, t);
    if (!second) second = w.record(1, 0.04, t + 0.005);
  }
  EXPECT_NEAR(*second, 0.04, 0.04 * 0.05);
  EXPECT_FALSE(w.next().has_value());
}

// Without a quota the applications take turns (least kernel time first) and each
// reports the mean of its runs.
TEST(CalibrationWindow, WithoutAQuotaApplicationsInterleaveAndReportTheMean) {
  CalibrationWindow w({1, 1}, {true, true}, 1, 0.0, limits(false, 0.3));
  EXPECT_EQ(w.next(), 0u);
  w.record(0, 0.02, 0.02);
  EXPECT_EQ(w.next(), 1u) << "app 1 has less kernel time";
  w.record(1, 0.01, 0.03);
  w.record(1, 0.03, 0.06);
  EXPECT_EQ(w.next(), 0u);
  EXPECT_NEAR(w.mean_run_seconds(1), 0.02, 1e-12);
  EXPECT_NEAR(w.kernel_seconds(1), 0.04, 1e-12);
}

// Done needs reps runs, the window, and (a second of kernel time or a thousand runs or a
// window of three seconds); an application not measured or abandoned is never asked for.
TEST(CalibrationWindow, EnoughNeedsRepsTheWindowAndKernelTime) {
  CalibrationWindow w({1}, {true}, 1, 0.0, limits(false, 0.5));
  for (int r = 1; r <= 4; ++r) EXPECT_FALSE(w.record(0, 0.4, 0.4 * r).has_value()) << "run " << r << " of 5";
  const auto s = w.record(0, 0.4, 2.0);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(*s, 0.4, 1e-12);

  CalibrationWindow slow({1}, {true}, 1, 0.0, limits(false, 0.5));
  for (int r = 1; r <= 5; ++r) EXPECT_FALSE(slow.record(0, 0.01, 0.01 * r).has_value());
  EXPECT_FALSE(slow.record(0, 0.01, 2.9).has_value());
  EXPECT_TRUE(slow.record(0, 0.01, 3.0).has_value()) << "three seconds of trying";

  CalibrationWindow some({1, 2, 1}, {true, false, true}, 1, 0.0, limits(true));
  EXPECT_EQ(some.next(), 0u);
  some.abandon(0);
  EXPECT_EQ(some.next(), 2u) << "app 1 is not measured (2 cores per task on 1)";
  EXPECT_FALSE(some.record(0, 0.1, 0.1).has_value());
  EXPECT_THROW(some.record(3, 0.1, 0.1), std::out_of_range);
  EXPECT_THROW(CalibrationWindow({1}, {true, true}, 1, 0.0, limits(true)), std::invalid_argument);
}

// Tasks of 2 cores on 3 cores: one slot; the idle core is not charged to the tasks.
TEST(CalibrationWindow, SlotsAreWholeTasks) {
  CalibrationWindow w({2}, {true}, 3, 0.0, limits(true, 0.5));
  std::optional<double> s;
  for (int r = 1; !s && r < 100; ++r) s = w.record(0, 0.1, 0.1 * r);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(*s, 0.1, 1e-9);
}

// Online estimates (docs/live-model.md): the running mean and spread, and the shift test
// that must see a real change within a few samples and never flap on jitter.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "runtime/node/Estimates.hpp"
#include "runtime/node/RunningEstimate.hpp"

namespace treefarm::node {
namespace {

// Deterministic jitter in [-amplitude, +amplitude] (a linear congruential sequence).
struct Jitter {
  std::uint64_t x = 12345;
  double operator()(double amplitude) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return amplitude * (2.0 * static_cast<double>(x >> 11) / 9007199254740992.0 - 1.0);
  }
};

TEST(RunningEstimate, MeanAndSpreadOfASteadyFigure) {
  RunningEstimate e;
  Jitter j;
  for (int i = 0; i < 500; ++i) e.add(1.0 + j(0.1));
  EXPECT_NEAR(e.mean(), 1.0, 0.03);
  EXPECT_GT(e.spread(), 0.02);  // uniform ±0.1: sd 0.058
  EXPECT_LT(e.spread(), 0.1);
  EXPECT_EQ(e.samples(), 500u);
}

TEST(RunningEstimate, SteadyJitterNeverShifts) {
  // ±12% jitter, 20,000 samples (hours of one-second tasks): no change declared.
  RunningEstimate e;
  Jitter j;
  for (int i = 0; i < 20000; ++i) EXPECT_FALSE(e.add(1.0 + j(0.12))) << "at sample " << i;
  EXPECT_EQ(e.shifts(), 0u);
}

TEST(RunningEstimate, AQuarterSpeedIsSeenWithinTwoSamplesAndTheMeanFollows) {
  RunningEstimate e;
  Jitter j;
  for (int i = 0; i < 30; ++i) e.add(1.0 + j(0.05));
  int seen_after = -1;
  for (int i = 0; i < 10 && seen_after < 0; ++i)
    if (e.add(4.0 + j(0.2))) seen_after = i + 1;
  EXPECT_EQ(seen_after, 2) << "a sequential test: not one sample, not many";
  EXPECT_NEAR(e.mean(), 4.0, 0.3);
  EXPECT_EQ(e.shifts(), 1u);
  // And back to full speed later: seen too.
  for (int i = 0; i < 10; ++i) e.add(4.0 + j(0.2));
  bool back = false;
  for (int i = 0; i < 20 && !back; ++i) back = e.add(1.0 + j(0.05));
  EXPECT_TRUE(back);
  EXPECT_NEAR(e.mean(), 1.0, 0.1);
}

TEST(RunningEstimate, TheNewLevelIsTheSamplesAfterTheChangeNotTheJitterBeforeIt) {
  // A loaded machine: three fast tasks and a slow one, around 1 s, so that one side of
  // the test or the other always holds a little (never both zero), without tripping it.
  RunningEstimate e;
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(e.add(i % 4 == 3 ? 1.9 : 0.7)) << "at sample " << i;
  // The node drops to a quarter of its speed; its first slow task began before the
  // change (2.5 s), the next ones take 4 s.
  EXPECT_FALSE(e.add(2.5));
  int seen_after = 1;
  while (!e.add(4.0) && seen_after < 10) ++seen_after;
  EXPECT_LE(seen_after, 2);
  EXPECT_EQ(e.shifts(), 1u);
  EXPECT_NEAR(e.mean(), 4.0, 0.05) << "the level the re-plan takes: after the change, not the run since the test last held nothing";
}

TEST(RunningEstimate, OneSampleOfTheOldLevelInTheRunDoesNotPullTheNewLevel) {
  RunningEstimate e;
  for (int i = 0; i < 30; ++i) e.add(1.0);
  EXPECT_FALSE(e.add(1.6));  // slow once: the rising side holds it
  EXPECT_FALSE(e.add(1.0));  // still held (not yet back to zero): in the run
  EXPECT_FALSE(e.add(4.0));  // the change
  EXPECT_TRUE(e.add(4.0));
  EXPECT_DOUBLE_EQ(e.mean(), 4.0) << "the latest half of 1.6, 1.0, 4.0, 4.0 (their mean would be 2.65)";
}

TEST(RunningEstimate, OneOutlierIsNotAChange) {
  RunningEstimate e;
  for (int i = 0; i < 20; ++i) e.add(1.0);
  EXPECT_FALSE(e.add(4.5));  // a task preempted once
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(e.add(1.0));
  EXPECT_EQ(e.shifts(), 0u);
}

TEST(RunningEstimate, NoShiftBeforeMinSamples) {
  RunningEstimate e(0.1, ShiftTestParams{0.15, 4.0, 5});
  e.set_prior(1.0);
  EXPECT_FALSE(e.add(10));
  EXPECT_FALSE(e.add(10));
  EXPECT_FALSE(e.add(10));
  EXPECT_FALSE(e.add(10));
  EXPECT_TRUE(e.add(10));  // the fifth sample
}

TEST(RunningEstimate, ThePriorCountsUntilTheRunsOwnSamplesReplaceIt) {
  RunningEstimate e;
  e.set_prior(2.0);
  EXPECT_TRUE(e.known());
  EXPECT_DOUBLE_EQ(e.mean(), 2.0);
  e.add(1.0);
  EXPECT_GT(e.mean(), 1.0);
  EXPECT_LT(e.mean(), 2.0);
  for (int i = 0; i < 100; ++i) e.add(1.0);
  EXPECT_NEAR(e.mean(), 1.0, 0.01);
  EXPECT_FALSE(e.add(std::nan("")));
  EXPECT_FALSE(e.add(-1));
  EXPECT_THROW(RunningEstimate(0), std::invalid_argument);
}

// Every node keeps one estimate per application and per link, most of which never see a
// shift: one that has seen no sample takes no heap (an empty std::deque took ~600 bytes, two
// per estimate: 1.3 GB of a 100,000-node simulation). After a long run of deviations its
// rings hold at most 64 samples each.
TEST(RunningEstimate, AnEstimateWithoutSamplesTakesNoHeapAndItsRunsStayBounded) {
  constexpr std::size_t n = 1000;
  const auto before = mallinfo2().uordblks;
  auto estimates = std::make_unique<RunningEstimate[]>(n);
  const auto idle = mallinfo2().uordblks - before;
  EXPECT_LE(idle, n * sizeof(RunningEstimate) + 64) << "heap bytes for " << n << " estimates without samples";
  for (std::size_t i = 0; i < n; ++i) estimates[i].set_prior(1.0);
  EXPECT_LE(mallinfo2().uordblks - before, n * sizeof(RunningEstimate) + 64);
  RunningEstimate e(0.1, {.drift = 0.15, .threshold = 1e9, .min_samples = 5});
  e.add(1.0);
  const auto one = mallinfo2().uordblks;
  for (int i = 1; i <= 10'000; ++i) e.add(1.0 + 0.01 * i);  // ever above its mean: the up side's run grows, no shift
  EXPECT_EQ(e.shifts(), 0u);
  EXPECT_LE(mallinfo2().uordblks - one, 2 * 64 * sizeof(double) + 128);
}

TEST(Estimates, ReportsOwnTaskTimesChildLinksAndWhatChildrenSaid) {
  Estimates e;
  e.configure("w1", 2, {0.5, 0}, {});
  EXPECT_TRUE(e.report().empty()) << "nothing measured yet";
  e.task_ran(0, 0.5);
  e.transfer("w1a", 1e6, 0.01);
  e.from_child("w1a", {net::msg::Estimate{"w1a", net::msg::Estimate::What::task_seconds, 1, 2.0, 0.1, 4, 0}});
  const auto r = e.report();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].node, "w1");
  EXPECT_EQ(r[0].what, net::msg::Estimate::What::task_seconds);
  EXPECT_EQ(r[1].node, "w1a");
  EXPECT_EQ(r[1].what, net::msg::Estimate::What::link_bandwidth);
  EXPECT_NEAR(r[1].mean, 1e8, 1);
  EXPECT_EQ(r[2].app, 1u);
  e.forget("w1a");
  EXPECT_EQ(e.report().size(), 1u);
}

TEST(Estimates, TheProcessCpuIsReportedFirstAsARunningTotal) {
  Estimates e;
  e.configure("w1", 1, {}, {});
  e.process_cpu(0);
  EXPECT_TRUE(e.report().empty()) << "no CPU figure yet";
  e.task_ran(0, 0.5);
  e.process_cpu(3.5);
  e.process_cpu(4.25);  // the latest figure, not a sum
  const auto r = e.report();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].node, "w1");
  EXPECT_EQ(r[0].what, net::msg::Estimate::What::process_cpu_seconds);
  EXPECT_DOUBLE_EQ(r[0].mean, 4.25);
  EXPECT_EQ(r[0].samples, 1u);
  EXPECT_EQ(r[1].what, net::msg::Estimate::What::task_seconds);
}

TEST(Estimates, TheKernelsCpuIsASumPerApplicationReportedAsARunningTotal) {
  Estimates e;
  e.configure("w1", 2, {}, {});
  e.task_cpu(1, 0.25);
  e.task_cpu(1, 0.5);
  e.task_cpu(1, -1.0);  // not measured: not counted
  e.task_cpu(7, 1.0);   // no such application
  const auto r = e.report();
  ASSERT_EQ(r.size(), 1u) << "nothing of application 0, whose kernels used no CPU yet";
  EXPECT_EQ(r[0].what, net::msg::Estimate::What::compute_cpu_seconds);
  EXPECT_EQ(r[0].app, 1u);
  EXPECT_DOUBLE_EQ(r[0].mean, 0.75);
  EXPECT_EQ(r[0].samples, 2u);
  e.configure("w1", 2, {}, {});  // a new run starts its totals again
  EXPECT_TRUE(e.report().empty());
}

}  // namespace
}  // namespace treefarm::node

// The prediction interval from a run's own estimates (docs/live-model.md, "The prediction
// interval"): every figure at the ends of the 95 % confidence interval of its mean, the LP
// solved at both ends, each optimum computed by hand.
#include <cmath>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "TestPlatforms.hpp"
#include "runtime/lp/RunInterval.hpp"
#include "runtime/lp/SteadyState.hpp"

namespace treefarm::lp {
namespace {

using net::msg::Estimate;

// Student's t quantiles from Boost.Math, against the printed tables (to their 3 decimals),
// beyond df = 10 too (where a hand approximation was 0.1 % off).
TEST(RunInterval, StudentsQuantileForATwoSidedNinetyFivePercentInterval) {
  EXPECT_NEAR(t975(1), 12.706, 5e-4);
  EXPECT_NEAR(t975(3), 3.182, 5e-4);
  EXPECT_NEAR(t975(7), 2.365, 5e-4);
  EXPECT_NEAR(t975(30), 2.042, 5e-4);
  EXPECT_NEAR(t975(100000), 1.960, 5e-4);
  EXPECT_TRUE(std::isinf(t975(0)));
}

TEST(RunInterval, TheMeanAndTheStudentHalfWidthOfItsSamples) {
  // mean 2.5, sd √(5/3) = 1.290994; t(0.975, 3) = 3.182: 3.182·1.290994 / (2·2.5).
  const auto f = mean_interval("x", {1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(f.mean, 2.5);
  EXPECT_NEAR(f.half, 3.182446305284263 * std::sqrt(5.0 / 3.0) / 5.0, 1e-12);
  EXPECT_TRUE(std::isinf(mean_interval("one", {3}).half));
}

// A forwarding master and one worker alone on its machine, 10 ms tasks, a free link:
// the optimum is 1 / task time.
PlatformModel one_worker() {
  testing::Builder b;
  b.app("job", 1e6);
  b.node("master", -1, 0, testing::inf, {testing::inf});
  b.node("w1", 0, 1, testing::inf, {0.01});
  return b.m;
}

TEST(RunInterval, ANodesTaskTimeAtTheEndsOfItsConfidenceInterval) {
  const auto m = one_worker();
  // 19 samples (what the estimate's mean is worth at most), spread such that
  // 1.96·spread / (mean·√19) = 10 %.
  Estimate e{"w1", Estimate::What::task_seconds, 0, 0.012, 0.1 * 0.012 * std::sqrt(19.0) / 1.96, 40, 0};
  RunIntervalOptions o;
  o.max_half_width = 0.15;
  o.max_interval = 0.2;
  const auto i = run_interval(m, {e}, std::nullopt, o);
  ASSERT_TRUE(i.tight()) << i.loose.front();
  // The estimate, not the model's 10 ms: 1/0.012, 1/0.0132, 1/0.0108 tasks/s.
  EXPECT_NEAR(i.median, 1 / 0.012, 1e-6);
  EXPECT_NEAR(i.low, 1 / (0.012 * 1.1), 1e-6);
  EXPECT_NEAR(i.high, 1 / (0.012 * 0.9), 1e-6);
  // By default the interval must be within ±10 %: +11.1 % is not; the interval line says by
  // how much, and the figure wider than ±5 % is named as the reason.
  const auto loose = run_interval(m, {e}, std::nullopt);
  ASSERT_EQ(loose.loose.size(), 2u);
  EXPECT_EQ(loose.loose[0], "the interval: -9.1 % to +11.1 % > ±10.0 %");
  EXPECT_NE(loose.loose[1].find("w1: task time of 'job': ±10.0 % > ±5.0 %"), std::string::npos) << loose.loose[1];
  EXPECT_NEAR(loose.median, 1 / 0.012, 1e-6);
  // Every figure within ±plan_ci makes it, however wide the LP makes it (+11.1 % here).
  o.max_interval = 0.1;
  EXPECT_TRUE(run_interval(m, {e}, std::nullopt, o).tight());
  // Too few samples; and no estimate at all is not tight either.
  e.samples = 4;
  EXPECT_NE(run_interval(m, {e}, std::nullopt).loose.at(0).find("4 of 10 samples"), std::string::npos);
  EXPECT_FALSE(run_interval(m, {}, std::nullopt).tight());
}

// A forwarding master and two one-core workers of 1 s tasks on one 2-core host: optimum 2
// tasks/s.
using testing::shared_host;

/// 8 s seen in 4 windows of 2 s; each worker ran 2 tasks a window; `available` and w2's
/// CPU per window as given, w1 2 CPU-s a window.
HostWindows windows(const std::vector<double>& available, const std::vector<double>& w2_cpu) {
  HostWindows h;
  h.whole = HostObservation{0, 8.0, 0, {{"master", 0.0}, {"w1", 0.0}, {"w2", 0.0}}, {{"w1", {{"job", 8}}}, {"w2", {{"job", 8}}}}};
  for (std::size_t i = 0; i < available.size(); ++i) {
    h.parts.push_back(HostObservation{0, 2.0, available[i], {{"master", 0.0}, {"w1", 2.0}, {"w2", w2_cpu[i]}},
                                      {{"w1", {{"job", 2}}}, {"w2", {{"job", 2}}}}});
    h.whole.available_cpu_seconds += available[i];
    h.whole.node_cpu_seconds["w1"] += 2.0;
    h.whole.node_cpu_seconds["w2"] += w2_cpu[i];
  }
  return h;
}

TEST(RunInterval, TheCpusTheMachineLeftTheTreeAtTheEndsOfTheirInterval) {
  // Available CPUs per window 1.8, 2.2, 2.0, 2.0: mean 2, sd 0.163299, half-width
  // 3.182·0.163299 / (2·2) = 12.99 %. The tasks cost what was calibrated (1 CPU-s).
  RunIntervalOptions o;
  o.max_half_width = 0.2;
  o.max_interval = 0.2;
  const auto i = run_interval(shared_host(), {}, windows({3.6, 4.4, 4.0, 4.0}, {2, 2, 2, 2}), o);
  ASSERT_TRUE(i.tight()) << i.loose.front();
  const double h = 3.182446305284263 * std::sqrt(0.08 / 3) / 4;
  EXPECT_NEAR(i.median, 2.0, 1e-6);
  // Pessimistic: 2·(1 − h) CPUs, the host row binds; optimistic: more than the machine's
  // 2 CPUs is never assumed.
  EXPECT_NEAR(i.low, 2 * (1 - h), 1e-6);
  EXPECT_NEAR(i.high, 2.0, 1e-6);
  // By default (an interval within ±10 %): -13 % is too wide, the figure named as why.
  const auto loose = run_interval(shared_host(), {}, windows({3.6, 4.4, 4.0, 4.0}, {2, 2, 2, 2}));
  ASSERT_FALSE(loose.tight());
  EXPECT_EQ(loose.loose[0], "the interval: -13.0 % to +0.0 % > ±10.0 %");
  ASSERT_GE(loose.loose.size(), 2u);
  EXPECT_NE(loose.loose[1].find("host: CPUs available to the tree: ±13.0 % > ±5.0 %"), std::string::npos) << loose.loose[1];
  // Three windows are not enough, whatever their figures.
  const auto few = run_interval(shared_host(), {}, windows({4, 4, 4}, {2, 2, 2}));
  ASSERT_FALSE(few.tight());
  EXPECT_EQ(few.loose[0], "host: 3 of 4 windows");
}

/// The windows of w2's CPU per task 0.9, 1.1, 1, 1 (w1's 1 in every window; the machine's
/// CPUs all the tree's), as windows() makes them.
HostWindows w2s_cpu_per_task_moves() { return windows({4, 4, 4, 4}, {1.8, 2.2, 2, 2}); }

TEST(RunInterval, ItIsMadeOnceTheIntervalIsWithinTenPercentThoughAFigureIsWiderThanFive) {
  // w2's CPU per task ±13 % (wider than plan_ci's ±5 %, which used to hold the interval
  // back to the end of the run) moves the optimum by -5.7 % to +7.5 % only: w1 holds its
  // half. Made with the defaults, the wide figure is no reason.
  const auto i = run_interval(shared_host(), {}, w2s_cpu_per_task_moves());
  ASSERT_TRUE(i.tight()) << i.loose.front();
  const double h = 3.182446305284263 * std::sqrt(0.02 / 3) / 2;
  EXPECT_NEAR(i.low, 1 + 1 / (1 + h), 1e-6);
  EXPECT_NEAR(i.high, 1 + 1 / (1 - h), 1e-6);
  EXPECT_LT(1 - i.low / i.median, 0.1);
  EXPECT_LT(i.high / i.median - 1, 0.1);
  // One window is too few, whatever it says: nothing is made.
  auto one = w2s_cpu_per_task_moves();
  one.parts.resize(1);
  EXPECT_FALSE(run_interval(shared_host(), {}, one).tight());
}

/// The interval of `w` (w2s_cpu_per_task_moves() with or without its kernels' CPU) within
/// ±20 %: w2's CPU per task at its ends. Its half-width h = 3.182·0.0816497 / 2 = 12.99 %
/// (w1's 0): w2's task costs 1 ± h CPU-s, its node row gives 1/(1 ± h) tasks/s, w1 1
/// task/s, and the host row (1 + (1 ± h)·α2 <= 2) allows as much.
void expect_w2s_cpu_per_task_at_the_ends(const HostWindows& w) {
  RunIntervalOptions o;
  o.max_half_width = 0.2;
  const auto i = run_interval(shared_host(), {}, w, o);
  ASSERT_TRUE(i.tight()) << i.loose.front();
  const double h = 3.182446305284263 * std::sqrt(0.02 / 3) / 2;
  EXPECT_NEAR(i.median, 2.0, 1e-6);
  EXPECT_NEAR(i.low, 1 + 1 / (1 + h), 1e-6);
  EXPECT_NEAR(i.high, 1 + 1 / (1 - h), 1e-6);
}

TEST(RunInterval, ANodesCpuPerTaskAtTheEndsOfItsInterval) {
  expect_w2s_cpu_per_task_at_the_ends(w2s_cpu_per_task_moves());
}

TEST(RunInterval, ANodesKernelsCpuMovesWithItsProcesssCpuAtTheEnds) {
  // As above, with each node's kernels' own CPU reported (all of its process's CPU): the
  // node rows charge the kernels, which take the same ends.
  auto w = w2s_cpu_per_task_moves();
  std::vector<HostObservation*> observations{&w.whole};
  for (auto& p : w.parts) observations.push_back(&p);
  for (auto* obs : observations)
    for (const char* node : {"w1", "w2"}) obs->kernel_cpu_seconds[node]["job"] = obs->node_cpu_seconds[node];
  expect_w2s_cpu_per_task_at_the_ends(w);
}

TEST(RunInterval, NodesMovingAgainstOneAnotherLeaveTheHostRowAtTheTreesFigure) {
  // w1's CPU per task 1.1, 0.9, 1, 1 and w2's 0.9, 1.1, 1, 1 over the windows (which node
  // ran which tasks moves from window to window): each ±12.99 %, the tree's 1 in every
  // window (±0). Half of each process's CPU is its kernels' (0.5 CPU-s a task), the
  // other half its task's move (0.5e-6 CPU-s a byte × 1 MB), so the node rows (one core
  // each) allow 2 tasks/s each and the host row (2 CPUs, 1 CPU-s a task of the tree's)
  // binds: 2 tasks/s. The host row takes the tree's figure (the move's cost × f falls as
  // the kernels rise), the node rows their kernels at their own ends (1/(0.5·(1 ± h))
  // tasks/s, still not binding): the interval is 2 to 2. Each node's process CPU at its
  // own end would have given 2/(1 + h) = 1.77 at the low end.
  HostWindows w;
  w.whole = HostObservation{0, 8.0, 16.0, {{"master", 0.0}, {"w1", 0.0}, {"w2", 0.0}}, {{"w1", {{"job", 8}}}, {"w2", {{"job", 8}}}}};
  const std::vector<double> w1{2.2, 1.8, 2, 2}, w2{1.8, 2.2, 2, 2};
  for (std::size_t i = 0; i < w1.size(); ++i) {
    w.parts.push_back(HostObservation{0, 2.0, 4.0, {{"master", 0.0}, {"w1", w1[i]}, {"w2", w2[i]}},
                                      {{"w1", {{"job", 2}}}, {"w2", {{"job", 2}}}}});
    w.whole.node_cpu_seconds["w1"] += w1[i];
    w.whole.node_cpu_seconds["w2"] += w2[i];
  }
  for (const char* node : {"w1", "w2"}) w.whole.kernel_cpu_seconds[node]["job"] = w.whole.node_cpu_seconds[node] / 2;
  const auto i = run_interval(shared_host(0.5e-6), {}, w);
  ASSERT_TRUE(i.tight()) << i.loose.front();
  EXPECT_NEAR(i.median, 2.0, 1e-6);
  EXPECT_NEAR(i.low, 2.0, 1e-6);
  EXPECT_NEAR(i.high, 2.0, 1e-6);
  // The nodes' own figures are there, each at ±12.99 %.
  const double h = 3.182446305284263 * std::sqrt(0.02 / 3) / 2;
  int nodes = 0;
  for (const auto& f : i.figures)
    if (f.name == "w1: CPU per task of its own" || f.name == "w2: CPU per task of its own") {
      ++nodes;
      EXPECT_NEAR(f.half, h, 1e-9) << f.name;
    }
  EXPECT_EQ(nodes, 2);
}

}  // namespace
}  // namespace treefarm::lp

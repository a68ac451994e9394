// The busy share of a saturated tree (tools/TreeBusyShare.hpp; docs/calibration-file.md,
// hosts[i].busy_share): tree / (tree + idle) over a span from running totals, its
// windows' median, the span moved from the journal's clock to the sampler's, and the
// sampler's reading of a child's CPU.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include <gtest/gtest.h>

#include "tools/TreeBusyShare.hpp"

namespace treefarm::tools {
namespace {

// Every second from 0 to 10: the tree used 1.8 CPU-s and the machine left 0.2 idle
// (0.9), except in [4, 5], where it used 1 and left 1 (a stall, 0.5).
std::vector<TreeCpuSample> samples() {
  std::vector<TreeCpuSample> s{{0, 0, 0}};
  for (int i = 1; i <= 10; ++i) {
    const bool stall = i == 5;
    s.push_back({static_cast<double>(i), s.back().tree_cpu_seconds + (stall ? 1.0 : 1.8),
                 s.back().idle_seconds + (stall ? 1.0 : 0.2)});
  }
  return s;
}

TEST(TreeBusyShare, TheTreesCpuOverItsCpuAndTheIdleTimeInterpolatedAtTheEnds) {
  const auto s = samples();
  EXPECT_NEAR(*busy_share(s, 0, 4), 0.9, 1e-12);
  // [0, 10]: 17.2 / (17.2 + 2.8).
  EXPECT_NEAR(*busy_share(s, 0, 10), 17.2 / 20.0, 1e-12);
  // [4.5, 5.5]: half of the stall (0.5 tree, 0.5 idle) and half a normal second (0.9, 0.1).
  EXPECT_NEAR(*busy_share(s, 4.5, 5.5), 1.4 / 2.0, 1e-12);
  EXPECT_FALSE(busy_share(s, -1, 4));   // before the first sample
  EXPECT_FALSE(busy_share(s, 5, 10.5));  // after the last
  EXPECT_FALSE(busy_share(s, 5, 5));
}

// A span in which the tree's CPU counters did not move (a calibration of sub-millisecond
// tasks that ran 0.7 s) gives no share, not 0: the host then records none (1), and its
// calibration file stays loadable.
TEST(TreeBusyShare, ASpanWhereTheTreesCpuDidNotMoveGivesNoShare) {
  const std::vector<TreeCpuSample> still{{0.0, 1.0, 0.0}, {0.2, 1.0, 0.3}, {0.4, 1.0, 0.6}};
  EXPECT_FALSE(busy_share(still, 0.05, 0.35));
  EXPECT_FALSE(median_busy_share(still, 0.0, 0.4, 8));
}

TEST(TreeBusyShare, TheMedianWindowIsNotPulledDownByAStall) {
  const auto s = samples();
  // Four windows of [2, 10]: the stall makes [4, 6] 2.8 / 4 = 0.7, the others are 0.9:
  // median 0.9 (the span's share is 13.6 / 16 = 0.85).
  EXPECT_NEAR(*median_busy_share(s, 2, 10, 4), 0.9, 1e-12);
  EXPECT_NEAR(*busy_share(s, 2, 10), 13.6 / 16.0, 1e-12);
  EXPECT_FALSE(median_busy_share(s, 2, 10, 0));
}

TEST(TreeBusyShare, TheJournalsSpanIsMovedToTheSamplersClock) {
  // The journal's clock started 3 s after the sampler: its last completion at 6 s is the
  // samples' 9 s (the tree ended at 10, 1 s after its last task; the span moves by 4).
  // Its steady span [0, 2] is the samples' [4, 6], holding the stall: median of two
  // windows 0.5 and 0.9 = 0.7. Samples that do not reach the span: none (not measured).
  SteadyRate steady;
  steady.start = 0;
  steady.end = 2;
  steady.windows = {1.0, 1.0};
  EXPECT_NEAR(*run_busy_share(samples(), steady, 6.0), 0.7, 1e-12);
  steady.end = 20;
  EXPECT_FALSE(run_busy_share(samples(), steady, 6.0));
  EXPECT_FALSE(run_busy_share({}, steady, 6.0));
}

TEST(TreeBusyShare, TheSamplerReadsAChildsCpu) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Spin 0.3 CPU-s, then wait to be ended.
    while (static_cast<double>(std::clock()) / CLOCKS_PER_SEC < 0.3) {
    }
    ::pause();
    ::_exit(0);
  }
  TreeCpuSampler sampler(0.05);
  const double before = children_cpu_now();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (children_cpu_now() < 0.25 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto s = sampler.stop();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_LT(before, 0.3);
  ASSERT_GE(s.size(), 2u);
  EXPECT_GE(s.back().tree_cpu_seconds, 0.25);  // the child's spin, read from /proc
  EXPECT_LE(s.back().tree_cpu_seconds, 1.0);   // and not the test's own CPU or others'
  EXPECT_GE(s.back().at, s.front().at);
  EXPECT_GE(s.back().idle_seconds, s.front().idle_seconds);
  EXPECT_NEAR(children_cpu_now(), 0.0, 1e-9);  // ended and waited for: no live child
}

}  // namespace
}  // namespace treefarm::tools

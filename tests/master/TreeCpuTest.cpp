// The tree's CPU time as the root samples it (master/TreeCpu): the CPU a node used over a
// window from its heartbeats' running totals, interpolated between samples; repeated
// reports are not new samples; a window the samples do not reach gives none.
#include <gtest/gtest.h>

#include "master/TreeCpu.hpp"

namespace treefarm::master {
namespace {

using net::msg::Estimate;

Estimate cpu(const char* node, double seconds) { return Estimate{node, Estimate::What::process_cpu_seconds, 0, seconds, 0, 1, 0}; }

TEST(TreeCpu, TheCpuOverAWindowIsInterpolatedFromTheRunningTotals) {
  TreeCpu t;
  // w1 uses half a CPU: 0.5 s per second, reported every 2 s; a task time is no CPU figure.
  for (int i = 0; i <= 10; ++i)
    t.estimates({cpu("w1", 1.0 + 1.0 * i), Estimate{"w1", Estimate::What::task_seconds, 0, 9.0, 0, 3, 0}}, 2.0 * i);
  ASSERT_TRUE(t.node_seconds("w1", 3.0, 15.0).has_value());
  EXPECT_DOUBLE_EQ(*t.node_seconds("w1", 3.0, 15.0), 6.0);
  EXPECT_DOUBLE_EQ(*t.node_seconds("w1", 0.0, 20.0), 10.0);
  // Up to `reach` beyond the samples, the last segment is extended; further, none.
  EXPECT_DOUBLE_EQ(*t.node_seconds("w1", 1.0, 21.0), 10.0);
  EXPECT_FALSE(t.node_seconds("w1", 1.0, 25.0).has_value());
  EXPECT_FALSE(t.node_seconds("w2", 1.0, 5.0).has_value());
}

TEST(TreeCpu, ARepeatedReportIsNotANewSample) {
  TreeCpu t;
  // The root hands on w1's last report at every heartbeat: 4.0 reported at 1, 2 and 3 s
  // was measured at 1 s; the next figure, 6.0, came at 5 s.
  t.estimates({cpu("w1", 4.0)}, 1.0);
  t.estimates({cpu("w1", 4.0)}, 2.0);
  t.estimates({cpu("w1", 4.0)}, 3.0);
  t.estimates({cpu("w1", 6.0)}, 5.0);
  EXPECT_DOUBLE_EQ(*t.node_seconds("w1", 1.0, 3.0), 1.0) << "0.5 CPU-s per s from 1 s to 5 s";
}

TEST(TreeCpu, AKernelsCpuThatStaysStillStillReachesTheWindowsEnd) {
  TreeCpu t;
  const auto kernel = [](double seconds) { return Estimate{"w1", Estimate::What::compute_cpu_seconds, 1, seconds, 0, 9, 0}; };
  // w1's kernels of application 1 used 1 CPU-s per second up to 4 s, then none (it ran
  // other work); its process CPU moves on, so each heartbeat is a new report.
  for (int i = 0; i <= 10; ++i) t.estimates({cpu("w1", 1.0 + i), kernel(i <= 4 ? i : 4.0)}, i);
  ASSERT_TRUE(t.compute_seconds("w1", 1, 2.0, 10.0).has_value());
  EXPECT_DOUBLE_EQ(*t.compute_seconds("w1", 1, 2.0, 10.0), 2.0);
  EXPECT_FALSE(t.compute_seconds("w1", 0, 2.0, 10.0).has_value()) << "another application";
  // A repeated report (the root handing on w1's last one) is not a new sample.
  TreeCpu r;
  r.estimates({cpu("w1", 1.0), kernel(1.0)}, 1.0);
  r.estimates({cpu("w1", 1.0), kernel(1.0)}, 2.0);
  r.estimates({cpu("w1", 3.0), kernel(3.0)}, 3.0);
  EXPECT_DOUBLE_EQ(*r.compute_seconds("w1", 1, 1.0, 2.0), 1.0) << "1 CPU-s per s from 1 s to 3 s";
}

TEST(TreeCpu, TheMachinesIdleTimeAndARestartedProcess) {
  TreeCpu t;
  t.machine(0.0, 100.0);
  t.machine(10.0, 115.0);
  EXPECT_DOUBLE_EQ(*t.idle_seconds(0.0, 10.0), 15.0);
  EXPECT_FALSE(TreeCpu{}.idle_seconds(0.0, 1.0).has_value());
  // A process restarted under the same name starts its series again.
  t.node("w1", 0.0, 50.0);
  t.node("w1", 1.0, 51.0);
  t.node("w1", 2.0, 0.5);
  t.node("w1", 3.0, 1.5);
  EXPECT_DOUBLE_EQ(*t.node_seconds("w1", 2.0, 3.0), 1.0);
  EXPECT_FALSE(t.node_seconds("w1", -1.0, 3.0).has_value()) << "before the restart: not this process";
}

}  // namespace
}  // namespace treefarm::master

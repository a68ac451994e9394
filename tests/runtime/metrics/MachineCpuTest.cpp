// The machine's CPU time from /proc/stat and a cgroup's CPU limit from cpu.max
// (runtime/metrics/MachineCpu): parsed from texts as the kernel writes them.
#include <gtest/gtest.h>

#include "runtime/metrics/MachineCpu.hpp"

namespace treefarm::metrics {
namespace {

TEST(MachineCpu, TheAggregateLineGivesIdleAndTotalSeconds) {
  const std::string text =
      "cpu  100 10 50 700 40 0 5 20 0 0\n"
      "cpu0 50 5 25 350 20 0 3 10 0 0\n"
      "intr 12345\n";
  const auto m = parse_proc_stat(text, 100.0);
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->idle_seconds, 7.4);    // (700 + 40) / 100
  EXPECT_DOUBLE_EQ(m->total_seconds, 9.25);  // (100+10+50+700+40+0+5+20) / 100
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4\n", 100.0).has_value()) << "no aggregate line";
  EXPECT_FALSE(parse_proc_stat("cpu 1 2\n", 100.0).has_value());
  EXPECT_FALSE(parse_proc_stat(text, 0.0).has_value());
}

TEST(MachineCpu, ThisMachineIsReadable) {
  const auto a = machine_cpu();
  ASSERT_TRUE(a.has_value()) << "/proc/stat";
  EXPECT_GT(a->total_seconds, 0.0);
  EXPECT_LE(a->idle_seconds, a->total_seconds);
}

TEST(MachineCpu, CpuMaxGivesTheQuotaInCpus) {
  EXPECT_DOUBLE_EQ(*parse_cpu_max("50000 100000\n"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("300000 100000"), 3.0);
  EXPECT_FALSE(parse_cpu_max("max 100000\n").has_value());
  EXPECT_FALSE(parse_cpu_max("").has_value());
  EXPECT_FALSE(parse_cpu_max("abc 100000").has_value());
}

}  // namespace
}  // namespace treefarm::metrics

// Tests of tools/HostCalibration.hpp and tools/CommCost.hpp (issue 21: the host-aware model).
#include "tools/HostCalibration.hpp"

#include <gtest/gtest.h>

#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {
namespace {

TEST(HostCalibration, SharesOfCpusBusyAtOnce) {
  // The quickstart on 2 CPUs: master forwards, four 1-core workers, two per CPU.
  const auto s = cpu_shares({0, 1, 1, 1, 1}, {{}, {0}, {1}, {0}, {1}});
  ASSERT_EQ(s.size(), 5u);
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  for (std::size_t u = 1; u < 5; ++u) EXPECT_DOUBLE_EQ(s[u], 0.5) << u;
  // A 2-core node on CPUs 0-1 beside a 1-core node on CPU 1: CPU 0 carries one thread,
  // CPU 1 two: the 2-core node has (1 + 1/2)/2, the other 1/2.
  const auto t = cpu_shares({2, 1}, {{0, 1}, {1}});
  EXPECT_DOUBLE_EQ(t[0], 0.75);
  EXPECT_DOUBLE_EQ(t[1], 0.5);
  // Alone on its CPU: the whole of it.
  EXPECT_DOUBLE_EQ(cpu_shares({1}, {{3}})[0], 1.0);
}

TEST(HostCalibration, AddLocalHostRecordsEveryNode) {
  const auto ex = model::parse_experiment(
      "[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"a\"\nparent = \"m\"\ncores = 1\n"
      "[[node]]\nname = \"b\"\nparent = \"m\"\ncores = 1\n"
      "[[app]]\nname = \"x\"\nkernel = \"matadd\"\nn = 64\ntasks = 1\n",
      "e.toml");
  model::Calibration cal;
  CommCost cost;
  cost.cpu_seconds_per_byte = 2e-10;
  cost.spread = 0.1;
  add_local_host(cal, ex, {"", "0", "0"}, 2.0, "box", cost);
  ASSERT_EQ(cal.hosts.count("box"), 1u);
  EXPECT_EQ(cal.hosts.at("box").cores, 2.0);
  EXPECT_EQ(cal.hosts.at("box").comm_cpu_seconds_per_byte, 2e-10);
  EXPECT_EQ(cal.nodes.at("m").host, "box");
  EXPECT_TRUE(cal.nodes.at("m").cpus.empty());
  EXPECT_EQ(cal.nodes.at("a").cpus, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(cal.nodes.at("a").cpu_share, 0.5);  // a and b share CPU 0
  // And it survives the file.
  EXPECT_EQ(model::parse_calibration(model::to_json(cal), "c.json"), cal);
}

TEST(CommCost, MovingBytesOverLoopbackCostsCpu) {
  const auto c = measure_comm_cost(1 << 20, false, 2, 0.02);
  EXPECT_EQ(c.repetitions, 2);
  // At least the two copies through the kernel, at most a microsecond per byte.
  EXPECT_GT(c.cpu_seconds_per_byte, 1e-12);
  EXPECT_LT(c.cpu_seconds_per_byte, 1e-6);
  EXPECT_GT(c.bytes_per_second, 1e6);
}

}  // namespace
}  // namespace treefarm::tools

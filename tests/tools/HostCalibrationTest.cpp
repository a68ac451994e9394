// Tests of tools/HostCalibration.hpp and tools/CommCost.hpp (the host-aware model).
#include "tools/HostCalibration.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

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

// Whole tasks (docs/lp.md, "Whole tasks measured through the runtime"): real
// treefarm-master and treefarm-worker processes run the experiment's applications one hop
// down, alone and together; every figure comes from their own results.json.
TEST(HostCalibration, EachApplicationsWholeCostIsMeasuredThroughTheRuntime) {
  const test_support::TempDir scratch("taskcpu-test");  // removed on every exit, a failure's included
  const auto& dir = scratch.path();
  const auto file = dir / "e.toml";
  // A depth-2 tree under lp: the measuring tree is one hop under FCFS, whatever the file's.
  std::ofstream(file) << "[[node]]\nname = \"root\"\ncores = 0\n[[node]]\nname = \"mid\"\nparent = \"root\"\ncores = 1\n"
                         "[[node]]\nname = \"leaf\"\nparent = \"mid\"\ncores = 1\n"
                         "[[app]]\nname = \"small\"\nkernel = \"matadd\"\nn = 64\nweight = 2\ntasks = 100000\n"
                         "[[app]]\nname = \"big\"\nkernel = \"matmul\"\nn = 96\nweight = 1\ntasks = 100000\n"
                         "[run]\nbuffer = 10\npolicy = \"lp\"\n";
  const auto ex = model::load_experiment(file.string());
  // Estimates of 20 ms per task keep the runs at their floor of 40 tasks alone; the run
  // together is sized from what the runs alone measured (~8 s of 2 CPUs).
  const auto c = measure_task_cpu(ex, {{"small", 0.02}, {"big", 0.02}}, 2, 2.0, false, TREEFARM_BIN_DIR);
  ASSERT_EQ(c.seconds.size(), 2u);
  ASSERT_EQ(c.alone.size(), 2u);
  EXPECT_EQ(c.workers, 2u);
  for (const char* app : {"small", "big"}) {
    // A task costs at least its kernel (96³·2 flop at < 1 Tflop/s: > 1.7 µs) and, on 2 CPUs
    // running tasks of a few microseconds, far less than a second.
    EXPECT_GT(c.alone.at(app), 1e-6) << app;
    EXPECT_LT(c.alone.at(app), 0.5) << app;
    EXPECT_NEAR(c.seconds.at(app), c.alone.at(app) * c.mix_scale, 1e-12) << "the ratios alone are kept";
  }
  EXPECT_GT(c.mix_scale, 0.0);
  EXPECT_GE(c.spread, 0.0);
  // The level comes from one run's steady span, in four windows (not the master's window
  // of a run of a few tasks).
  EXPECT_EQ(c.repeats.size(), 4u);
  EXPECT_LT(c.steady_start, c.steady_end);
  EXPECT_GE(c.steady_start, 0.0);
  EXPECT_GT(c.busy, 0.0);
  // A run that cannot start (no binaries there) is an error naming the applications.
  try {
    measure_task_cpu(ex, {{"small", 0.02}}, 1, 2.0, false, (dir / "nowhere").string());
    ADD_FAILURE() << "no error without binaries";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("small"), std::string::npos) << e.what();
  }
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

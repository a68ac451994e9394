// The scaling benchmarks (tools/bench/Scaling, TasksBench, WorkersBench): the fitted exponent,
// and `treefarm bench tasks` / `bench workers` as a user runs them, tiny: their JSON has its
// fields and every run completed each task exactly once with the right result (the
// benchmarks exit 4 otherwise). No speed is asserted.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tools/bench/Scaling.hpp"

namespace treefarm::testing {
namespace {

std::optional<nlohmann::json> bench_json(const std::string& args) {
  TempDir dir("scaling");
  const auto out = dir.path() / "out";
  const auto r = run_command(treefarm_bin + " " + args + " >" + out.string());
  if (r.exit_code != 0) {
    ADD_FAILURE() << args << ": exit code " << r.exit_code << "\n" << r.output;
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(read_file(out));
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << args << ": stdout is not JSON:\n" << read_file(out);
    return std::nullopt;
  }
}

TEST(Scaling, FittedExponentIsTheSlopeOnLogLogAxes) {
  EXPECT_NEAR(bench::fitted_exponent({10, 100, 1000}, {3 * std::pow(10, 1.5), 3 * std::pow(100, 1.5), 3 * std::pow(1000, 1.5)}),
              1.5, 1e-9);
  EXPECT_NEAR(bench::fitted_exponent({1, 4, 16, 64}, {2, 2, 2, 2}), 0.0, 1e-12);
  EXPECT_NEAR(bench::fitted_exponent({1, 2, 0}, {1, 2, 5}), 1.0, 1e-12);  // a point of size 0 is left out
  EXPECT_THROW(bench::fitted_exponent({1}, {1}), std::invalid_argument);
  EXPECT_THROW(bench::fitted_exponent({3, 3}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(bench::fitted_exponent({1, 2}, {1}), std::invalid_argument);
}

TEST(Scaling, BenchTasksJsonHasTheKernelBesideTheNoopOfTheSameTree) {
  const auto j = bench_json("bench tasks --kernel matmul --n 32 --tasks 1000,3000 --buffer 50 --json");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->at("kernel"), "matmul");
  EXPECT_EQ(j->at("workers").get<int>(), 2);
  ASSERT_EQ(j->at("sizes").size(), 2u);
  for (const auto& row : j->at("sizes")) {
    EXPECT_GT(row.at("tasks_per_s").get<double>(), 0);
    EXPECT_GT(row.at("noop_tasks_per_s").get<double>(), 0);
    EXPECT_DOUBLE_EQ(row.at("ratio_to_noop").get<double>(),
                     row.at("tasks_per_s").get<double>() / row.at("noop_tasks_per_s").get<double>());
    EXPECT_TRUE(row.contains("loadavg_1min"));
    // The raw ZeroMQ reference moved the same tasks (it throws, failing the run, if a worker answered wrongly).
    EXPECT_GT(row.at("transport_ceiling_tasks_per_s").get<double>(), 0);
    EXPECT_GT(row.at("ipc_ceiling_tasks_per_s").get<double>(), 0);
    EXPECT_DOUBLE_EQ(row.at("ipc_ceiling_ratio_to_noop").get<double>(),
                     row.at("ipc_ceiling_tasks_per_s").get<double>() / row.at("noop_tasks_per_s").get<double>());
    EXPECT_DOUBLE_EQ(row.at("ceiling_ratio_to_noop").get<double>(),
                     row.at("transport_ceiling_tasks_per_s").get<double>() / row.at("noop_tasks_per_s").get<double>());
  }
  EXPECT_EQ(j->at("ceiling_frames"), "batch");
  EXPECT_GT(j->at("kernel_alone_tasks_per_s").get<double>(), 0);
  EXPECT_TRUE(j->contains("exponent_seconds_vs_tasks"));
}

TEST(Scaling, BenchWorkersJsonHasEveryFigurePerSize) {
  const auto j = bench_json("bench workers --workers 1,3 --buffers 20 --depth 2 --forwarders 2 --tasks 600 --json");
  ASSERT_TRUE(j);
  ASSERT_EQ(j->at("series").size(), 1u);
  const auto& s = j->at("series").at(0);
  ASSERT_EQ(s.at("sizes").size(), 2u);
  EXPECT_EQ(s.at("sizes").at(0).at("forwarders").get<int>(), 1);
  EXPECT_EQ(s.at("sizes").at(1).at("forwarders").get<int>(), 2);
  for (const auto& row : s.at("sizes")) {
    EXPECT_GT(row.at("join_seconds").get<double>(), 0);
    EXPECT_GT(row.at("tasks_per_s").get<double>(), 0);
    EXPECT_GT(row.at("master_cpu_seconds_per_1000_tasks").get<double>(), 0);
    EXPECT_GT(row.at("heartbeat_bytes_per_s_in").get<double>(), row.at("heartbeat_bytes_per_s_out").get<double>());
    EXPECT_TRUE(row.contains("master_bytes_per_worker"));
    EXPECT_TRUE(row.contains("master_shared_input_bytes_per_worker"));
  }
  EXPECT_TRUE(s.contains("exponent_cpu_per_task_vs_workers"));
}

}  // namespace
}  // namespace treefarm::testing

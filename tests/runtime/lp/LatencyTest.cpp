// Latency in the steady-state LP (docs/lp.md "Latency"): a finite buffer
// against the request round trip (Little's law), and the one-port busy per task beyond
// its bytes. Optima derived by hand in each test.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "runtime/model/Experiment.hpp"
#include "TestPlatforms.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::lp {
namespace {

using testing::Builder;
using testing::inf;
using test_support::small_star_toml;
using test_support::StarWorker;
using test_support::synthetic_app_toml;

bool is_saturated(const Solution& s, std::size_t node, Resource r) {
  return std::any_of(s.saturated.begin(), s.saturated.end(),
                     [&](const Saturation& x) { return x.node == node && x.resource == r; });
}

// A multi-port star: two workers of 10 tasks/s each (0.1 s per task), 1 MB tasks over
// 100 MB/s links (0.01 s). Without latency: 20 tasks/s. With a 2 s request round trip
// and B = 10, each link carries at most 10 / (2 + 0.01) tasks/s.
Builder star(double round_trip, std::uint32_t buffer) {
  Builder b;
  b.m.comm_model = model::CommModel::multi_port;
  b.m.buffer = buffer;
  b.app("a", 1e6);
  b.node("m", -1, 0, inf, {inf});
  b.node("w1", 0, 1, 1e8, {0.1});
  b.node("w2", 0, 1, 1e8, {0.1});
  for (std::size_t v = 1; v < 3; ++v) b.m.nodes[v].request_round_trip = round_trip;
  return b;
}

TEST(LpLatency, ABufferBoundsTheRateToBOverTheRoundTrip) {
  const Solution s = solve(star(2.0, 10).m);
  EXPECT_NEAR(s.fair_throughput, 2 * 10 / 2.01, 1e-6);
  EXPECT_TRUE(is_saturated(s, 1, Resource::buffer));
  EXPECT_NEAR(s.buffer_utilisation[1], 1.0, 1e-6);
  EXPECT_FALSE(is_saturated(s, 1, Resource::cpu));
}

TEST(LpLatency, ABufferThatCoversTheBandwidthDelayProductDoesNotBind) {
  // 10 tasks/s × 2.01 s = 20.1 tasks in flight: B = 21 covers it, the cores bind.
  const Solution s = solve(star(2.0, 21).m);
  EXPECT_NEAR(s.fair_throughput, 20.0, 1e-6);
  EXPECT_FALSE(is_saturated(s, 1, Resource::buffer));
  // No round trip, or no buffer bound: the paper's LP (3).
  EXPECT_NEAR(solve(star(0.0, 10).m).fair_throughput, 20.0, 1e-6);
  EXPECT_NEAR(solve(star(2.0, 0).m).fair_throughput, 20.0, 1e-6);
}

TEST(LpLatency, TheOnePortIsBusyForTheHoldOfEveryTask) {
  // One-port star, 1 MB over 1 MB/s links: 1 s per task on the port; a hold of 0.25 s
  // per task (the simulator's latency) makes it 1.25 s: 0.8 tasks/s in all.
  Builder b;
  b.app("a", 1e6);
  b.node("m", -1, 0, inf, {inf});
  b.node("w1", 0, 1, 1e6, {0.001});
  b.node("w2", 0, 1, 1e6, {0.001});
  EXPECT_NEAR(solve(b.m).fair_throughput, 1.0, 1e-6);
  for (std::size_t v = 1; v < 3; ++v) b.m.nodes[v].port_hold = 0.25;
  const Solution s = solve(b.m);
  EXPECT_NEAR(s.fair_throughput, 0.8, 1e-6);
  EXPECT_NEAR(s.port_utilisation[0], 1.0, 1e-6);
  EXPECT_TRUE(is_saturated(s, 0, Resource::port));
}

TEST(LpLatency, SmallTasksShareTheHoldWithinTheOnePortWindow) {
  // One worker behind an unconstrained link (loopback), 1 ms round trip, tasks computed in
  // 1 µs: without a window the port holds 1 ms per task (1,000 tasks/s). With a window of
  // 64 KiB, 1 KiB tasks are 64 in flight per round trip (64,000 tasks/s, the node's 1e6
  // tasks/s not binding); a 100 KiB task is above the window and holds the port for the
  // whole round trip. The default window (1 MiB) has 1,024 such tasks in flight, and still
  // holds the port for the 100 KiB task: above the 64 KiB a transfer may have to free it.
  Builder b;
  b.app("small", 1024);
  b.app("big", 100 * 1024);
  b.node("m", -1, 0, inf, {inf, inf});
  b.node("w", 0, 1, inf, {1e-6, 1e-6});
  b.m.nodes[1].port_hold = 1e-3;
  EXPECT_NEAR(b.m.port_hold_per_task(1, 0), 1e-3, 1e-12);
  b.m.one_port_window = 64 * 1024;
  EXPECT_NEAR(b.m.port_hold_per_task(1, 0), 1e-3 / 64, 1e-12);
  EXPECT_NEAR(b.m.port_hold_per_task(1, 1), 1e-3, 1e-12);
  b.m.one_port_window = model::default_one_port_window;
  EXPECT_NEAR(b.m.port_hold_per_task(1, 0), 1e-3 / 1024, 1e-12);
  EXPECT_NEAR(b.m.port_hold_per_task(1, 1), 1e-3, 1e-12) << "a 100 KiB transfer freed the port";
  b.m.one_port_window = 64 * 1024;
  // The LP on the small application alone.
  b.m.one_port_window = 0;
  b.m.apps.pop_back();
  for (auto& n : b.m.nodes) n.task_seconds.pop_back();
  EXPECT_NEAR(solve(b.m).fair_throughput, 1000.0, 1e-3);
  b.m.one_port_window = 64 * 1024;
  EXPECT_NEAR(solve(b.m).fair_throughput, 64000.0, 1e-2);
}

TEST(LpLatency, ModelFromExperimentTakesLatencyAndBuffer) {
  const auto ex = model::parse_experiment(
      small_star_toml({{"w", "1Gf", "100MBps", "1s"}}) +
          synthetic_app_toml("a", "1MB", "100Mf", 10) + test_support::multiport_run_toml(4),
      "t.toml");
  const auto m = model_from_experiment(ex);
  EXPECT_EQ(m.buffer, 4u);
  EXPECT_DOUBLE_EQ(m.nodes[1].request_round_trip, 2.0);
  EXPECT_DOUBLE_EQ(m.nodes[1].port_hold, 1.0);
  // 4 / (2 + 0.01) = 1.99 tasks/s, not the core's 10.
  const Solution s = solve(m);
  EXPECT_NEAR(s.fair_throughput, 4 / 2.01, 1e-6);
  std::ostringstream out;
  print_report(out, m, s);
  EXPECT_NE(out.str().find("buffer"), std::string::npos) << out.str();
}

/// A master "m" (0 cores) and one 1-core worker "w" under it, with `app_and_run` (TOML: the
/// [[app]] "a" and any [run] table), and a calibration of w: seconds per task of "a",
/// link bytes/s and the measured round trip in seconds.
struct CalibratedPair {
  model::Experiment ex;
  model::Calibration cal;
};
CalibratedPair calibrated_pair(const std::string& app_and_run, double task_seconds, double bandwidth,
                               double round_trip) {
  CalibratedPair p{model::parse_experiment(small_star_toml({StarWorker{}}) + app_and_run, "t.toml"), {}};
  p.cal.experiment = "t.toml";
  p.cal.nodes["m"].cores = 0;
  auto& w = p.cal.nodes["w"];
  w.cores = 1;
  w.task_seconds["a"] = task_seconds;
  w.link_bandwidth = bandwidth;
  w.link_round_trip = round_trip;
  return p;
}

TEST(LpLatency, ACalibratedRoundTripReplacesTheDeclaredLatency) {
  const auto p = calibrated_pair(synthetic_app_toml("a", "1MB", "100Mf", 10) + test_support::multiport_run_toml(2),
                                 0.1, 1e8, 0.5);
  const auto m = model_from_calibration(p.ex, p.cal);
  EXPECT_DOUBLE_EQ(m.nodes[1].request_round_trip, 0.5);
  EXPECT_DOUBLE_EQ(m.nodes[1].port_hold, 0.5);
  EXPECT_NEAR(solve(m).fair_throughput, 2 / 0.51, 1e-6);
}

// `--one-port-window` (run, treefarm-master, predict) reaches the prediction through
// RunSpec::one_port_window: 1 KiB tasks behind a calibrated 1 ms round trip share the hold
// among floor(W / 1 KiB) tasks in flight; W = 0 is a whole round trip per task.
TEST(LpLatency, TheCalibratedModelTakesTheRunsOnePortWindow) {
  auto p = calibrated_pair(synthetic_app_toml("a", "1KiB", "1Mf", 10), 1e-6, 1e9, 1e-3);
  EXPECT_EQ(p.ex.run.one_port_window, model::default_one_port_window);
  EXPECT_NEAR(model_from_calibration(p.ex, p.cal).port_hold_per_task(1, 0), 1e-3 / 1024, 1e-12);
  p.ex.run.one_port_window = 4096;
  EXPECT_NEAR(model_from_calibration(p.ex, p.cal).port_hold_per_task(1, 0), 1e-3 / 4, 1e-12);
  p.ex.run.one_port_window = 0;
  const auto off = model_from_calibration(p.ex, p.cal);
  EXPECT_NEAR(off.port_hold_per_task(1, 0), 1e-3, 1e-12);
  EXPECT_NEAR(solve(off).fair_throughput, 1000.0, 5.0);  // 1 ms per task; 1 KiB / 1 GB/s and 1 µs beside it
}

}  // namespace
}  // namespace treefarm::lp

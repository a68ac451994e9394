// The prediction interval of a calibrated LP: the optimum at both ends of
// the calibration's spread.
#include "runtime/lp/PredictionInterval.hpp"

#include <gtest/gtest.h>

#include "tests/support/TreeToml.hpp"

namespace treefarm::lp {
namespace {

// One worker behind a link, 1 MB tasks computed in 0.001 s: the link binds.
model::Experiment link_bound() {
  using namespace test_support;
  return model::parse_experiment(small_star_toml({StarWorker{}}) + synthetic_app_toml("a", "1MB", "1Mf", 10), "t.toml");
}

model::Calibration calibrated(double median, std::optional<double> lo, std::optional<double> hi) {
  model::Calibration cal;
  cal.experiment = "t.toml";
  cal.nodes["m"].cores = 0;
  auto& w = cal.nodes["w"];
  w.cores = 1;
  w.task_seconds["a"] = 0.001;
  w.link_bandwidth = median;
  w.link_bandwidth_min = lo;
  w.link_bandwidth_max = hi;
  return cal;
}

TEST(PredictionInterval, LinksAtTheirSlowestAndFastestRounds) {
  const auto i = prediction_interval(link_bound(), calibrated(2e6, 1e6, 4e6));
  EXPECT_TRUE(i.has_spread);
  EXPECT_NEAR(i.median, 2.0, 1e-6);
  EXPECT_NEAR(i.low, 1.0, 1e-6);
  EXPECT_NEAR(i.high, 4.0, 1e-6);
}

// Master and worker on one host: the prediction takes the link's fastest round (4 tasks/s
// where the median gives 2), the low end still its slowest (1), so the probes' spread
// stays in the interval.
TEST(PredictionInterval, ALinkWithinOneHostTakesItsFastestRoundButItsSlowestAtTheLowEnd) {
  auto cal = calibrated(2e6, 1e6, 4e6);
  cal.hosts["h"] = model::HostCalibration{2.0, 0.0, 0.0};
  cal.nodes["m"].host = "h";
  cal.nodes["w"].host = "h";
  const auto i = prediction_interval(link_bound(), cal);
  EXPECT_NEAR(i.median, 4.0, 1e-6);
  EXPECT_NEAR(i.high, 4.0, 1e-6);
  EXPECT_NEAR(i.low, 1.0, 1e-6);
}

// The same link on a host whose tree moved its inputs through shared memory: the socket's
// slowest probe describes no transfer of the run, so the low end leaves it at its fastest.
TEST(PredictionInterval, ALinkWithinOneHostOfSharedInputsKeepsItsFastestRoundAtTheLowEnd) {
  auto cal = calibrated(2e6, 1e6, 4e6);
  cal.hosts["h"] = model::HostCalibration{2.0, 0.0, 0.0};
  cal.hosts["h"].shared_inputs = true;
  cal.nodes["m"].host = "h";
  cal.nodes["w"].host = "h";
  const auto i = prediction_interval(link_bound(), cal);
  EXPECT_NEAR(i.median, 4.0, 1e-6);
  EXPECT_NEAR(i.low, 4.0, 1e-6);
}

TEST(PredictionInterval, AnUnresolvedFastestRoundLeavesTheLinkUnconstrained) {
  // The fastest round too fast to measure: the link no longer binds, the core does
  // (1 / 0.001 s = 1000 tasks/s).
  const auto i = prediction_interval(link_bound(), calibrated(2e6, 1e6, std::nullopt));
  EXPECT_NEAR(i.high, 1000.0, 1e-3);
  EXPECT_NEAR(i.low, 1.0, 1e-6);
}

TEST(PredictionInterval, AnUnresolvedMedianWithAResolvedSlowestRoundBoundsTheLowEnd) {
  auto cal = calibrated(2e6, 1e6, std::nullopt);
  cal.nodes["w"].link_bandwidth.reset();  // three of five rounds too fast to resolve
  const auto i = prediction_interval(link_bound(), cal);
  EXPECT_NEAR(i.median, 1000.0, 1e-3);
  EXPECT_NEAR(i.low, 1.0, 1e-6);
}

TEST(PredictionInterval, NoSpreadRecordedSaysSo) {
  const auto i = prediction_interval(link_bound(), calibrated(2e6, std::nullopt, std::nullopt));
  EXPECT_FALSE(i.has_spread);
  EXPECT_NEAR(i.low, i.high, 1e-9);
}

TEST(PredictionInterval, TheHostsByteCostMovesByHalfItsSpread) {
  auto cal = calibrated(2e6, std::nullopt, std::nullopt);
  cal.hosts["h"] = model::HostCalibration{2.0, 1e-9, 0.5};
  const auto dear = calibration_at_end(cal, false);
  const auto cheap = calibration_at_end(cal, true);
  EXPECT_DOUBLE_EQ(dear.hosts.at("h").comm_cpu_seconds_per_byte, 1.25e-9);
  EXPECT_DOUBLE_EQ(cheap.hosts.at("h").comm_cpu_seconds_per_byte, 0.75e-9);
}

TEST(PredictionInterval, AWholeTaskCostMovesByHalfItsSpreadAndItsDipsWidenTheLowEndOnly) {
  auto cal = calibrated(2e6, std::nullopt, std::nullopt);
  cal.hosts["h"] = model::HostCalibration{2.0, 1e-9, 0.0};
  cal.hosts["h"].task_cpu_seconds = {{"a", 0.002}, {"b", 0.004}};
  cal.hosts["h"].task_cpu_spread = {{"a", 0.1}, {"b", 0.1}};
  cal.hosts["h"].task_cpu_dip = {{"a", 0.2}};
  const auto dear = calibration_at_end(cal, false);
  const auto cheap = calibration_at_end(cal, true);
  // a: 0.002 × 1.05 / (1 − 0.2) at the pessimistic end, 0.002 × 0.95 at the optimistic one.
  EXPECT_DOUBLE_EQ(dear.hosts.at("h").task_cpu_seconds.at("a"), 0.002 * 1.05 / 0.8);
  EXPECT_DOUBLE_EQ(cheap.hosts.at("h").task_cpu_seconds.at("a"), 0.002 * 0.95);
  // b: no dip recorded, the band alone.
  EXPECT_DOUBLE_EQ(dear.hosts.at("h").task_cpu_seconds.at("b"), 0.004 * 1.05);
  EXPECT_DOUBLE_EQ(cheap.hosts.at("h").task_cpu_seconds.at("b"), 0.004 * 0.95);
}

}  // namespace
}  // namespace treefarm::lp

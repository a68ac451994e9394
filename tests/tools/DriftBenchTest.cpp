// tools/bench/DriftBench and CopyDrift: the analysis of a machine's speed samples and their stalls, on series
// whose answer is known, and `bench drift --json` measuring for real for a few seconds.
#include "tools/bench/DriftBench.hpp"
#include "tools/bench/CopyDrift.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

using treefarm::bench::analyse_drift;
using treefarm::bench::bench_drift;
using treefarm::bench::DriftBenchOptions;

namespace {

DriftBenchOptions windows(double calibration, double gap, double run) {
  DriftBenchOptions o;
  o.calibration_window = calibration;
  o.gap = gap;
  o.run_window = run;
  o.tolerance = 0.05;
  o.runs = 5;
  return o;
}

/// A short real measurement: `seconds`, samples of `chunk` s, windows of `window` s, no gap, JSON.
DriftBenchOptions short_run(double seconds, double chunk, double window) {
  DriftBenchOptions o = windows(window, 0, window);
  o.seconds = seconds;
  o.chunk = chunk;
  o.json = true;
  return o;
}

}  // namespace

TEST(DriftAnalysis, ASteadyMachineIsPredictedExactlyEveryTime) {
  const std::vector<double> samples(100, 40.0);
  const auto a = analyse_drift(samples, 1.0, windows(25, 3, 31));
  EXPECT_DOUBLE_EQ(a.mean, 40.0);
  EXPECT_DOUBLE_EQ(a.chunk_cv, 0.0);
  EXPECT_EQ(a.pairs, 100u - 25u - 3u - 31u + 1u);  // t from 25 to 66
  EXPECT_DOUBLE_EQ(a.ratio_sd, 0.0);
  EXPECT_DOUBLE_EQ(a.inside, 1.0);
  EXPECT_DOUBLE_EQ(a.all_inside, 1.0);
  ASSERT_FALSE(a.windows.empty());
  for (const auto& w : a.windows) EXPECT_DOUBLE_EQ(w.cv, 0.0);
}

TEST(DriftAnalysis, AStepInTheMachinesSpeedPutsExactlyThePairsAcrossItOutside) {
  // 40 samples at 100 then 40 at 90 (a 10 % slower machine), windows of 10 s, gap 0:
  // a pair at t compares [t-10, t) with [t, t+10); t runs from 10 to 70 (61 pairs).
  // Ratios: 1 for t <= 30 (21 pairs) and t >= 50 (21 pairs); between, the windows mix the
  // two speeds, down to 0.9 at t = 40, and the pairs whose ratio is below 0.95 are outside.
  std::vector<double> samples(40, 100.0);
  samples.insert(samples.end(), 40, 90.0);
  const auto a = analyse_drift(samples, 1.0, windows(10, 0, 10));
  ASSERT_EQ(a.pairs, 61u);
  std::size_t inside = 0;
  for (std::size_t t = 10; t <= 70; ++t) {
    auto mean = [&](std::size_t from) {
      double s = 0;
      for (std::size_t i = from; i < from + 10; ++i) s += samples[i];
      return s / 10;
    };
    if (std::abs(mean(t) / mean(t - 10) - 1) <= 0.05) ++inside;
  }
  EXPECT_LT(inside, 61u);
  EXPECT_GT(inside, 42u);  // the 42 pairs away from the step are exact
  EXPECT_DOUBLE_EQ(a.inside, static_cast<double>(inside) / 61.0);
  EXPECT_NEAR(a.all_inside, std::pow(a.inside, 5), 1e-12);
  EXPECT_NEAR(a.ratio_min, 0.9, 1e-12);
  EXPECT_NEAR(a.ratio_max, 1.0, 1e-12);
}

TEST(DriftAnalysis, WindowsThatDoNotFitGiveNoPairsAndBadValuesAreRefused) {
  const std::vector<double> samples(20, 1.0);
  const auto a = analyse_drift(samples, 1.0, windows(25, 3, 31));
  EXPECT_EQ(a.pairs, 0u);
  EXPECT_DOUBLE_EQ(a.inside, 0.0);
  EXPECT_THROW(analyse_drift(samples, 0.0, windows(25, 3, 31)), std::invalid_argument);
  EXPECT_THROW(analyse_drift(samples, 1.0, windows(0, 3, 31)), std::invalid_argument);
  DriftBenchOptions bad;
  bad.tolerance = 0;
  std::ostringstream out;
  EXPECT_THROW(bench_drift(out, bad), std::invalid_argument);
}

TEST(DriftBench, MeasuresEveryCoreForRealAndReportsJson) {
  DriftBenchOptions o = short_run(3, 0.25, 1);
  o.n = 96;
  std::ostringstream out;
  ASSERT_EQ(bench_drift(out, o), 0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("benchmark"), "drift");
  EXPECT_EQ(j.at("samples_gflops").size(), 12u);
  EXPECT_GT(j.at("gflops").get<double>(), 0.0);  // real matmuls ran
  EXPECT_GT(j.at("peak_gflops_per_core").get<double>(), 0.0);
  EXPECT_LT(j.at("gflops_per_core").get<double>(), j.at("peak_gflops_per_core").get<double>() * 1.2);
  EXPECT_EQ(j.at("analysis").at("pairs").get<std::size_t>(), 12u - 4u - 4u + 1u);
}

TEST(DriftStalls, SamplesBelowHalfTheMedianAreStallsCountedInEpisodes) {
  // 20 samples at 10, with two stalls: one sample at 1, then three in a row at 2, 4.9, 3;
  // a dip to 6 is no stall (above half the median).
  std::vector<double> samples(20, 10.0);
  samples[3] = 1;
  samples[10] = 2;
  samples[11] = 4.9;
  samples[12] = 3;
  samples[15] = 6;
  const auto s = treefarm::bench::find_stalls(samples, 0.2);
  EXPECT_EQ(s.samples, 20u);
  EXPECT_DOUBLE_EQ(s.median, 10.0);
  EXPECT_EQ(s.stalled, 4u);
  EXPECT_EQ(s.episodes, 2u);
  EXPECT_NEAR(s.longest_seconds, 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(s.stalled_share, 4.0 / 20.0);
  EXPECT_NEAR(s.lost_share, (9 + 8 + 5.1 + 7 + 4) / (10.0 * 20), 1e-12);
  const auto none = treefarm::bench::find_stalls({}, 1.0);
  EXPECT_EQ(none.samples, 0u);
  EXPECT_EQ(none.episodes, 0u);
  EXPECT_THROW(treefarm::bench::find_stalls(samples, 0), std::invalid_argument);
}

TEST(DriftBench, TheCopyProbeMovesRealBytesThroughTheKernelAndReportsJson) {
  DriftBenchOptions o = short_run(1, 0.1, 0.3);
  o.probe = treefarm::bench::DriftProbe::copy;
  std::ostringstream out;
  ASSERT_EQ(bench_drift(out, o), 0);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j.at("probe"), "copy");
  EXPECT_FALSE(j.contains("samples_gflops"));  // the compute probe did not run
  const auto& c = j.at("copy");
  EXPECT_EQ(c.at("message_bytes").get<std::size_t>(), 4194304u);
  ASSERT_EQ(c.at("samples_bytes_per_s").size(), 10u);
  // Real copies: at least one 4 MiB message a tenth of a second on any machine.
  EXPECT_GT(c.at("bytes_per_s").get<double>(), 4194304.0 / 0.1);
  EXPECT_EQ(c.at("stalls").at("samples").get<std::size_t>(), 10u);
  EXPECT_EQ(c.at("analysis").at("pairs").get<std::size_t>(), 10u - 3u - 3u + 1u);
}

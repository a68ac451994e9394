/// Tests of runtime/metrics/Results: the steady-state throughput of papers/beaumont2006
/// §5.1.1 on hand-computed cases, RunResults::compute/ok, and the results.json format.

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/metrics/Results.hpp"

namespace treefarm::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

/// n completions at t = step, 2·step, …, n·step (a uniform rate of 1/step tasks/s).
std::vector<double> uniform(std::size_t n, double step) {
  std::vector<double> t;
  for (std::size_t i = 1; i <= n; ++i) t.push_back(static_cast<double>(i) * step);
  return t;
}

TEST(SteadyThroughput, UniformCompletionsGiveTheRate) {
  // 100 tasks at 1, 2, …, 100 s: T = 100, window [10, 90]; N(90) − N(10) = 90 − 10 = 80
  // over 80 s: ρ = 1 task/s.
  const auto [rho, t_end] = steady_throughput({uniform(100, 1.0)}, {100}, 0.1);
  EXPECT_DOUBLE_EQ(t_end, 100.0);
  ASSERT_EQ(rho.size(), 1u);
  EXPECT_DOUBLE_EQ(rho[0], 1.0);
}

TEST(SteadyThroughput, TIsTheFirstApplicationToFinish) {
  // A: 20 tasks every 0.5 s, done at 10 s. B: 30 tasks every 1 s, done at 30 s.
  // T = 10, window [1, 9] (8 s): A has N(9) − N(1) = 18 − 2 = 16 → 2/s; B 9 − 1 = 8 → 1/s.
  const auto [rho, t_end] = steady_throughput({uniform(20, 0.5), uniform(30, 1.0)}, {20, 30}, 0.1);
  EXPECT_DOUBLE_EQ(t_end, 10.0);
  ASSERT_EQ(rho.size(), 2u);
  EXPECT_DOUBLE_EQ(rho[0], 2.0);
  EXPECT_DOUBLE_EQ(rho[1], 1.0);
  // The order of completions does not matter, only their times.
  auto shuffled = uniform(20, 0.5);
  std::swap(shuffled.front(), shuffled.back());
  EXPECT_DOUBLE_EQ(steady_throughput({shuffled, uniform(30, 1.0)}, {20, 30}, 0.1).second, 10.0);
}

TEST(SteadyThroughput, UnfinishedApplicationsDoNotSetT) {
  // B has completed 30 of 40 tasks: it has not finished, so T comes from A alone even
  // though B's last completion is later.
  const auto [rho, t_end] = steady_throughput({uniform(20, 0.5), uniform(30, 1.0)}, {20, 40}, 0.1);
  EXPECT_DOUBLE_EQ(t_end, 10.0);
  EXPECT_DOUBLE_EQ(rho[1], 1.0);
}

TEST(SteadyThroughput, WindowBoundsAreNOfEpsilonTAndOneMinusEpsilonT) {
  // ε = 0.25, T = 10: window [2.5, 7.5], 5 s. N(x) counts completions at or before x, so
  // a completion exactly at εT is outside the window and one exactly at (1−ε)T inside.
  const std::vector<double> a = {1.0, 2.5, 2.5000001, 5.0, 7.5, 7.5000001, 10.0};
  const auto [rho, t_end] = steady_throughput({a}, {7}, 0.25);
  EXPECT_DOUBLE_EQ(t_end, 10.0);
  // N(7.5) = 5, N(2.5) = 2 → 3 / 5 s.
  EXPECT_DOUBLE_EQ(rho[0], 3.0 / 5.0);
  // With ε = 0 the window is the whole [0, T]: all 7 tasks over 10 s.
  EXPECT_DOUBLE_EQ(steady_throughput({a}, {7}, 0.0).first[0], 0.7);
}

TEST(SteadyThroughput, NothingFinishedUsesTheLastCompletion) {
  // No application completed all its tasks: T = the last completion seen (4 s).
  // ε = 0.25: window [1, 3]; N(3) − N(1) = 3 − 1 = 2 over 2 s.
  const auto [rho, t_end] = steady_throughput({{1.0, 2.0, 3.0, 4.0}}, {10}, 0.25);
  EXPECT_DOUBLE_EQ(t_end, 4.0);
  EXPECT_DOUBLE_EQ(rho[0], 1.0);
}

TEST(SteadyThroughput, EmptyOrDegenerateWindowsGiveZero) {
  const auto [rho, t_end] = steady_throughput({{}, {}}, {5, 5}, 0.1);
  EXPECT_EQ(t_end, 0.0);
  EXPECT_EQ(rho, (std::vector<double>{0.0, 0.0}));
  // ε = 0.5 leaves no window at all.
  EXPECT_EQ(steady_throughput({uniform(10, 1.0)}, {10}, 0.5).first[0], 0.0);
  // Applications with no tasks are ignored when looking for T.
  EXPECT_DOUBLE_EQ(steady_throughput({{}, uniform(10, 1.0)}, {0, 10}, 0.1).second, 10.0);
}

// ---- RunResults ---------------------------------------------------------------------

/// Two applications (weights 1 and 2) on a master and two workers; every task completed.
RunResults sample_run() {
  RunResults r;
  r.experiment = "two-apps";
  r.policy = "fcfs";
  r.epsilon = 0.1;
  r.apps = {AppResult{"mm", "matmul", 1.0, 20, 0, 0, 0, 0, 1.9},
            AppResult{"add", "add", 2.0, 30, 0, 0, 0, 0, std::nullopt}};
  r.nodes = {NodeResult{"master", "", 4, 0}, NodeResult{"w1", "master", 8, 0}, NodeResult{"w2", "w1", 2, 0}};
  const auto a = uniform(20, 0.5), b = uniform(30, 1.0);
  for (std::size_t i = 0; i < a.size(); ++i)
    r.tasks.push_back(TaskRecord{0, i, i % 2 ? "w1" : "master", a[i], 0.25});
  for (std::size_t i = 0; i < b.size(); ++i) r.tasks.push_back(TaskRecord{1, i, i % 3 ? "w1" : "w2", b[i], 0.125});
  r.predicted_fair_throughput = 0.6;
  r.compute();
  return r;
}

TEST(RunResults, ComputeFillsCountsThroughputAndFairness) {
  const auto r = sample_run();
  EXPECT_EQ(r.apps[0].completed, 20u);
  EXPECT_EQ(r.apps[1].completed, 30u);
  EXPECT_DOUBLE_EQ(r.apps[0].throughput, 2.0);
  EXPECT_DOUBLE_EQ(r.apps[1].throughput, 1.0);
  EXPECT_DOUBLE_EQ(r.steady_end, 10.0);
  EXPECT_DOUBLE_EQ(r.duration, 30.0);
  EXPECT_EQ(r.lost, 0u);
  // min(2/1, 1/2) = 0.5 tasks/s.
  EXPECT_DOUBLE_EQ(r.fair_throughput, 0.5);
  // master: even indices of mm (10); w1: odd mm (10) + add with i % 3 != 0 (20); w2: 10.
  EXPECT_EQ(r.nodes[0].tasks_computed, 10u);
  EXPECT_EQ(r.nodes[1].tasks_computed, 30u);
  EXPECT_EQ(r.nodes[2].tasks_computed, 10u);
  EXPECT_TRUE(r.ok());
}

TEST(RunResults, LostTasksAreCountedAndNotOk) {
  auto r = sample_run();
  // Drop three of add's tasks: they were never completed.
  r.tasks.resize(r.tasks.size() - 3);
  r.compute();
  EXPECT_EQ(r.apps[1].completed, 27u);
  EXPECT_EQ(r.lost, 3u);
  EXPECT_FALSE(r.ok());
}

TEST(RunResults, WrongOrFailedResultsAreNotOk) {
  auto wrong = sample_run();
  wrong.apps[0].wrong = 1;
  EXPECT_FALSE(wrong.ok());
  auto failed = sample_run();
  failed.apps[1].failed = 2;
  EXPECT_FALSE(failed.ok());
}

TEST(RunResults, NoApplicationsMeansZeroFairThroughput) {
  RunResults r;
  r.compute();
  EXPECT_EQ(r.fair_throughput, 0.0);
  EXPECT_EQ(r.lost, 0u);
  EXPECT_TRUE(r.ok());
}

// ---- results.json ---------------------------------------------------------------------

TEST(ResultsJson, HasTheDocumentedKeys) {
  const auto j = to_json(sample_run());
  for (const char* key : {"experiment", "policy", "epsilon", "duration", "steady_end", "fair_throughput",
                          "predicted_fair_throughput", "fair_ratio", "lost", "duplicates", "ok", "apps", "tasks", "nodes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_DOUBLE_EQ(j["fair_throughput"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["fair_ratio"].get<double>(), 0.5 / 0.6);
  EXPECT_TRUE(j["ok"].get<bool>());

  ASSERT_EQ(j["apps"].size(), 2u);
  for (const char* key : {"name", "kernel", "weight", "tasks", "completed", "wrong", "throughput"})
    EXPECT_TRUE(j["apps"][0].contains(key)) << "apps[]." << key;
  EXPECT_EQ(j["apps"][0]["name"], "mm");
  EXPECT_EQ(j["apps"][0]["kernel"], "matmul");
  EXPECT_EQ(j["apps"][1]["weight"], 2.0);
  EXPECT_EQ(j["apps"][1]["tasks"], 30u);
  EXPECT_EQ(j["apps"][1]["completed"], 30u);
  EXPECT_EQ(j["apps"][0]["wrong"], 0u);
  EXPECT_DOUBLE_EQ(j["apps"][0]["throughput"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["apps"][0]["predicted"].get<double>(), 1.9);
  EXPECT_FALSE(j["apps"][1].contains("predicted"));

  ASSERT_EQ(j["tasks"].size(), 50u);
  for (const char* key : {"app", "id", "node", "completed_at"})
    EXPECT_TRUE(j["tasks"][0].contains(key)) << "tasks[]." << key;
  EXPECT_EQ(j["tasks"][0]["app"], "mm");  // by name, not index
  EXPECT_EQ(j["tasks"][21]["app"], "add");
  EXPECT_EQ(j["tasks"][21]["id"], 1u);
  EXPECT_EQ(j["tasks"][21]["node"], "w1");
  EXPECT_DOUBLE_EQ(j["tasks"][21]["completed_at"].get<double>(), 2.0);

  ASSERT_EQ(j["nodes"].size(), 3u);
  for (const char* key : {"name", "parent", "tasks_computed"})
    EXPECT_TRUE(j["nodes"][1].contains(key)) << "nodes[]." << key;
  EXPECT_TRUE(j["nodes"][0]["parent"].is_null());  // the master has no parent
  EXPECT_EQ(j["nodes"][2]["parent"], "w1");
  EXPECT_EQ(j["nodes"][1]["tasks_computed"], 30u);
}

/// `r` written to results.json text and read back.
RunResults round_trip(const RunResults& r) { return results_from_json(nlohmann::json::parse(to_json(r).dump())); }

/// The table `treefarm` prints for `r`.
std::string table(const RunResults& r) {
  std::ostringstream out;
  print_table(out, r);
  return out.str();
}

TEST(ResultsJson, RoundTripKeepsTheFields) {
  auto in = sample_run();
  in.apps[0].wrong = 2;
  in.apps[1].failed = 1;
  in.duplicates = 4;
  in.compute();
  const auto out = round_trip(in);
  EXPECT_EQ(out.experiment, "two-apps");
  EXPECT_EQ(out.policy, "fcfs");
  EXPECT_EQ(out.epsilon, in.epsilon);
  EXPECT_EQ(out.duplicates, 4u);
  ASSERT_TRUE(out.predicted_fair_throughput.has_value());
  EXPECT_EQ(*out.predicted_fair_throughput, 0.6);
  EXPECT_DOUBLE_EQ(out.fair_throughput, in.fair_throughput);
  EXPECT_DOUBLE_EQ(out.steady_end, in.steady_end);
  EXPECT_DOUBLE_EQ(out.duration, in.duration);
  EXPECT_EQ(out.lost, in.lost);
  EXPECT_FALSE(out.ok());
  ASSERT_EQ(out.apps.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(out.apps[k].name, in.apps[k].name);
    EXPECT_EQ(out.apps[k].kernel, in.apps[k].kernel);
    EXPECT_EQ(out.apps[k].weight, in.apps[k].weight);
    EXPECT_EQ(out.apps[k].tasks, in.apps[k].tasks);
    EXPECT_EQ(out.apps[k].completed, in.apps[k].completed);
    EXPECT_EQ(out.apps[k].wrong, in.apps[k].wrong);
    EXPECT_EQ(out.apps[k].failed, in.apps[k].failed);
    EXPECT_DOUBLE_EQ(out.apps[k].throughput, in.apps[k].throughput);
    EXPECT_EQ(out.apps[k].predicted, in.apps[k].predicted);
  }
  ASSERT_EQ(out.nodes.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.nodes[i].name, in.nodes[i].name);
    EXPECT_EQ(out.nodes[i].parent, in.nodes[i].parent);
    EXPECT_EQ(out.nodes[i].cores, in.nodes[i].cores);
    EXPECT_EQ(out.nodes[i].tasks_computed, in.nodes[i].tasks_computed);
  }
  ASSERT_EQ(out.tasks.size(), in.tasks.size());
  for (std::size_t i = 0; i < in.tasks.size(); ++i) {
    EXPECT_EQ(out.tasks[i].app, in.tasks[i].app);
    EXPECT_EQ(out.tasks[i].id, in.tasks[i].id);
    EXPECT_EQ(out.tasks[i].node, in.tasks[i].node);
    EXPECT_EQ(out.tasks[i].completed_at, in.tasks[i].completed_at);
    EXPECT_EQ(out.tasks[i].compute_seconds, in.tasks[i].compute_seconds);
  }
}

// The interval from the run's own estimates: results.json
// "fair_throughput_interval_estimates" {at, low, median, high} and
// "fair_inside_interval_estimates", read back, and the table line judging the measurement.
TEST(ResultsJson, TheIntervalFromTheRunsEstimatesIsKeptAndJudged) {
  auto r = sample_run();
  ASSERT_GT(r.fair_throughput, 0.0);
  const double f = r.fair_throughput;
  EXPECT_FALSE(to_json(r).contains("fair_throughput_interval_estimates"));
  r.estimate_interval = RunResults::EstimateInterval{4.5, 1.02 * f, 1.05 * f, 1.10 * f};
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["fair_throughput_interval_estimates"]["at"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(j["fair_throughput_interval_estimates"]["median"].get<double>(), 1.05 * f);
  EXPECT_FALSE(j["fair_inside_interval_estimates"].get<bool>());
  const auto back = round_trip(r);
  ASSERT_TRUE(back.estimate_interval.has_value());
  EXPECT_DOUBLE_EQ(back.estimate_interval->low, 1.02 * f);
  EXPECT_DOUBLE_EQ(back.estimate_interval->high, 1.10 * f);
  EXPECT_THAT(table(r), HasSubstr("prediction interval from this run's estimates at 4.5 s:"));
  EXPECT_THAT(table(r), HasSubstr("(-2.9 % to +4.8 %): measured below it"));
  r.estimate_interval = RunResults::EstimateInterval{4.5, 0.97 * f, f, 1.03 * f};
  EXPECT_TRUE(to_json(r)["fair_inside_interval_estimates"].get<bool>());
  EXPECT_THAT(table(r), HasSubstr("(-3.0 % to +3.0 %): measured inside"));
}

// The a-priori prediction's interval: results.json "fair_throughput_interval" {low, high}
// and "fair_inside_interval", read back, and the table line that says where the measured
// figure fell and whether the interval is wider than ±10 %.
TEST(ResultsJson, ThePredictionIntervalIsKeptAndTheTableSaysWhereTheMeasurementFell) {
  auto r = sample_run();
  ASSERT_GT(r.fair_throughput, 0.0);
  const double f = r.fair_throughput;
  r.predicted_fair_throughput = f;
  EXPECT_FALSE(to_json(r).contains("fair_throughput_interval"));
  r.predicted_fair_interval = RunResults::Interval{0.95 * f, 1.04 * f};
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j["fair_throughput_interval"]["low"].get<double>(), 0.95 * f);
  EXPECT_DOUBLE_EQ(j["fair_throughput_interval"]["high"].get<double>(), 1.04 * f);
  EXPECT_TRUE(j["fair_inside_interval"].get<bool>());
  const auto back = round_trip(r);
  ASSERT_TRUE(back.predicted_fair_interval.has_value());
  EXPECT_DOUBLE_EQ(back.predicted_fair_interval->low, 0.95 * f);
  EXPECT_DOUBLE_EQ(back.predicted_fair_interval->high, 1.04 * f);
  EXPECT_THAT(table(r), HasSubstr("-5.0 % to +4.0 %): measured inside"));
  EXPECT_THAT(table(r), Not(HasSubstr("wider")));
  // Measured above an interval wider than ±10 % on its low side: said, not clipped.
  r.predicted_fair_throughput = 0.8 * f;
  r.predicted_fair_interval = RunResults::Interval{0.6 * f, 0.9 * f};
  EXPECT_FALSE(to_json(r)["fair_inside_interval"].get<bool>());
  EXPECT_THAT(table(r), HasSubstr("-25.0 % to +12.5 %, wider than +-10 %): measured above it"));
}

// the header and the per-task dispatch and start times survive a round trip.
TEST(ResultsJson, HeaderAndTaskTimesRoundTrip) {
  auto in = sample_run();
  in.started_utc = "2026-11-23T10:50:02Z";
  in.treefarm_version = "0.1.0";
  in.host = {{"hostname", "h"}, {"cores", {0, 1}}};
  in.settings = {{"buffer", 10}, {"seed", 1}};
  in.experiment_text = "[[node]]\nname = \"m\"\n";
  in.tasks[0].dispatched_at = 0.125;
  in.tasks[0].queued_seconds = 0.5;
  const auto j = to_json(in);
  EXPECT_EQ(j.at("format_version"), results_format_version);
  EXPECT_EQ(j.at("tasks")[0].at("started_at").get<double>(), in.tasks[0].completed_at - in.tasks[0].compute_seconds);
  const auto out = results_from_json(j);
  EXPECT_EQ(out.started_utc, in.started_utc);
  EXPECT_EQ(out.treefarm_version, in.treefarm_version);
  EXPECT_EQ(out.host, in.host);
  EXPECT_EQ(out.settings, in.settings);
  EXPECT_EQ(out.experiment_text, in.experiment_text);
  EXPECT_EQ(out.tasks[0].dispatched_at, 0.125);
  EXPECT_EQ(out.tasks[0].queued_seconds, 0.5);
  EXPECT_EQ(out.tasks[1].dispatched_at, -1.0);  // not recorded
}

TEST(ResultsJson, ATaskOfAnUnknownApplicationIsAnError) {
  auto j = to_json(sample_run());
  j["tasks"][0]["app"] = "no-such-app";
  EXPECT_THROW((void)results_from_json(j), std::out_of_range);
}

}  // namespace
}  // namespace treefarm::metrics

// treefarm simulate (tools/simulate/Simulate.hpp) and every policy on generated trees.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/core/Policy.hpp"
#include "runtime/metrics/Results.hpp"
#include "tests/runtime/sim/SimTestUtil.hpp"
#include "tools/simulate/GenPlatform.hpp"
#include "tools/bench/SimBench.hpp"
#include "tools/simulate/Simulate.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::simulate {
namespace {

namespace fs = std::filesystem;

using test_support::TempDir;

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.insert(it.key());
  return out;
}

// What a real run writes (master, with a calibration): the reference schema.
nlohmann::json reference_results() {
  metrics::RunResults r;
  r.experiment = "x.toml";
  r.policy = "fcfs";
  metrics::AppResult a;
  a.name = "a";
  a.kernel = "matmul";
  a.tasks = 1;
  a.predicted = 1.0;
  r.apps.push_back(a);
  r.nodes.push_back(metrics::NodeResult{"m", "", 1, 0});
  r.nodes.push_back(metrics::NodeResult{"w", "m", 1, 0});
  r.tasks.push_back(metrics::TaskRecord{0, 0, "w", 1.0, 0.5});
  r.predicted_fair_throughput = 1.0;
  r.prediction_source = "calibration";  // a real run with a prediction says where it came from
  r.compute();
  return metrics::to_json(r);
}

TEST(SimulateCommand, WritesResultsJsonWithTheKeysOfARealRun) {
  TempDir dir("sim-test");
  GenOptions g;
  g.nodes = 6;
  g.apps = 2;
  g.tasks = 20;
  g.ccr_max = 0.01;
  const auto exp = dir.path() / "exp.toml";
  std::ofstream(exp) << generate_platform(g);
  SimulateOptions o;
  o.out_dir = (dir.path() / "out").string();
  std::ostringstream text;
  ASSERT_EQ(simulate_command(exp.string(), o, text), 0) << text.str();
  EXPECT_THAT(text.str(), testing::HasSubstr("fair throughput"));
  EXPECT_THAT(text.str(), testing::HasSubstr("simulated 6 nodes, 40 tasks"));

  std::ifstream f(dir.path() / "out" / "results.json");
  ASSERT_TRUE(f.good());
  const auto j = nlohmann::json::parse(f);
  const auto ref = reference_results();
  EXPECT_EQ(keys(j), keys(ref));
  EXPECT_EQ(keys(j["apps"][0]), keys(ref["apps"][0]));
  EXPECT_EQ(keys(j["nodes"][0]), keys(ref["nodes"][0]));
  EXPECT_EQ(keys(j["tasks"][0]), keys(ref["tasks"][0]));
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["tasks"].size(), 40u);
  EXPECT_GT(j["predicted_fair_throughput"].get<double>(), 0.0);
  // It reads back with the results reader of real runs.
  const auto back = metrics::results_from_json(j);
  EXPECT_TRUE(back.ok());
}

TEST(SimulateCommand, PolicyOverrideAndUnknownPolicy) {
  TempDir dir("sim-test");
  GenOptions g;
  g.nodes = 4;
  g.apps = 1;
  g.tasks = 10;
  g.ccr_max = 0.01;
  const auto exp = dir.path() / "exp.toml";
  std::ofstream(exp) << generate_platform(g);
  SimulateOptions o;
  o.policy = "no-such-policy";
  std::ostringstream text;
  EXPECT_THAT([&] { simulate_command(exp.string(), o, text); },
              testing::ThrowsMessage<std::invalid_argument>(testing::HasSubstr("fcfs")));
}

// Every policy finishes random trees with each task recorded exactly once.
class EveryPolicy : public testing::TestWithParam<std::string> {};

TEST_P(EveryPolicy, CompletesRandomTreesWithEveryTaskOnce) {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    GenOptions g;
    g.nodes = 25;
    g.max_degree = seed == 1 ? 2 : 5;
    g.apps = 3;
    g.tasks = 40;
    g.seed = seed;
    g.ccr_max = seed == 3 ? 1.0 : 0.01;
    g.policy = GetParam();
    const auto ex = model::parse_experiment(generate_platform(g), "gen.toml");
    const auto o = sim::simulate(sim::make_sim_platform(ex));
    ASSERT_TRUE(o.completed) << GetParam() << " seed " << seed << ": " << o.error;
    EXPECT_TRUE(sim::test::every_task_once(ex, o.results)) << GetParam() << " seed " << seed;
    EXPECT_TRUE(o.results.ok());
    EXPECT_EQ(o.results.policy, GetParam());
    // No policy beats the optimum (beyond the measurement window's noise).
    EXPECT_LE(o.results.fair_throughput, *o.results.predicted_fair_throughput * 1.1) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, EveryPolicy, testing::ValuesIn(core::policy_names()),
                         [](const testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param;
                           for (auto& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(SimBench, SmallTreesReportEveryColumn) {
  bench::SimBenchOptions o;
  o.sizes = {30};
  o.apps = 2;
  std::ostringstream text;
  bench::bench_simulate(text, o);
  EXPECT_THAT(text.str(), testing::HasSubstr("peak_MiB"));
  EXPECT_THAT(text.str(), testing::HasSubstr("completed"));
}

}  // namespace
}  // namespace treefarm::simulate

// Tests of tools/Sweep.hpp: the experiment as the sweep writes it for each size.
#include "tools/Sweep.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "runtime/model/Experiment.hpp"

namespace treefarm::tools {
namespace {

const char* const base =
    "# a comment\n[[node]]\nname = \"m\"\ncores = 0\n[[node]]\nname = \"a\"\nparent = \"m\"\ncores = 1\n"
    "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 384\nweight = 1\ntasks = 5000\n"
    "[[app]]\nname = \"ma\"\nkernel = \"matadd\"\nn = 512\nweight = 2\ntasks = 10000\n"
    "[run]\nbuffer = 7\npolicy = \"cgbc\"\ncomm_model = \"multi-port\"\n";

TEST(Sweep, ExperimentWithSizeChangesOnlyThatApplication) {
  const auto text = experiment_with_size(base, "q.toml", "ma", 128, std::nullopt);
  const auto ex = model::parse_experiment(text, "q-128.toml");
  ASSERT_EQ(ex.apps.size(), 2u);
  EXPECT_EQ(ex.apps[0].n, 384u);
  EXPECT_EQ(ex.apps[1].n, 128u);
  EXPECT_EQ(ex.apps[1].tasks, 10000u);
  EXPECT_EQ(ex.apps[1].weight, 2.0);
  EXPECT_EQ(ex.run.buffer, 7u);
  EXPECT_EQ(ex.run.policy, "cgbc");
  EXPECT_EQ(ex.run.comm_model, model::CommModel::multi_port);
  ASSERT_EQ(ex.nodes.size(), 2u);
  EXPECT_EQ(*ex.nodes[1].parent, "m");
}

TEST(Sweep, TasksOverrideEveryApplication) {
  const auto ex = model::parse_experiment(experiment_with_size(base, "q.toml", "mm", 64, 300), "x.toml");
  EXPECT_EQ(ex.apps[0].n, 64u);
  EXPECT_EQ(ex.apps[0].tasks, 300u);
  EXPECT_EQ(ex.apps[1].tasks, 300u);
}

TEST(Sweep, ShortRunsAreStretchedToTheMinimumDurationKeepingTheRatios) {
  // mm: 5000 tasks at weight 1, ma: 10000 at weight 2. At 1000 tasks/s per unit of weight
  // both end at 5 s: for 10 s every application's tasks double.
  const auto ex = model::parse_experiment(base, "q.toml");
  const auto scaled = tasks_for_duration(ex, 1000.0, 10.0);
  ASSERT_EQ(scaled.size(), 2u);
  EXPECT_EQ(scaled.at("mm"), 10000u);
  EXPECT_EQ(scaled.at("ma"), 20000u);
  EXPECT_TRUE(tasks_for_duration(ex, 1000.0, 5.0).empty());   // long enough already
  EXPECT_TRUE(tasks_for_duration(ex, 100.0, 10.0).empty());   // 50 s
  EXPECT_TRUE(tasks_for_duration(ex, 0.0, 10.0).empty());     // no prediction: as given
  // Written back: only the tasks change.
  const auto again = model::parse_experiment(experiment_with_tasks(base, "q.toml", scaled), "q2.toml");
  EXPECT_EQ(again.apps[0].tasks, 10000u);
  EXPECT_EQ(again.apps[1].tasks, 20000u);
  EXPECT_EQ(again.apps[1].n, 512u);
  EXPECT_EQ(again.run.buffer, 7u);
}

TEST(Sweep, UnknownApplicationIsNamed) {
  try {
    experiment_with_size(base, "q.toml", "nope", 64, std::nullopt);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no application named 'nope'"), std::string::npos) << e.what();
  }
}

TEST(Sweep, TableShowsTheRatio) {
  nlohmann::json doc{{"experiment", "q.toml"}, {"app", "ma"}, {"points", nlohmann::json::array()}};
  doc["points"].push_back({{"n", 128}, {"ccr", 128.0}, {"measured", 90.0}, {"predicted", 100.0}, {"exit_code", 0}});
  std::ostringstream out;
  print_sweep_table(out, doc);
  EXPECT_NE(out.str().find("0.900"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace treefarm::tools

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

// `treefarm predict --objective` in the treefarm binary itself, which links SimGrid: Ipopt's
// MUMPS must call its own MPI stubs, not SimGrid's (it aborted in MPI_Bcast when SimGrid's
// library came first in the binary's link order; runtime/lp/CMakeLists.txt).

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/Shell.hpp"

namespace {

const std::string treefarm = std::string(TREEFARM_BIN_DIR) + "/treefarm";
const std::string example = std::string(TREEFARM_SOURCE_DIR) + "/examples/bertin2008.toml";

TEST(PredictCommand, ProportionalObjectiveSolvesInTheTreefarmBinary) {
  const auto r = treefarm::test_support::run_shell(treefarm + " predict " + example + " --objective proportional --json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("fairness"), "proportional");
  // bertin2008's three applications at their proportional-fair rates (5, 12.5, 10 tasks/s:
  // the closed form for this platform, also in docs/results/price.md).
  ASSERT_EQ(j.at("apps").size(), 3u);
  double sum_log = 0;
  for (const auto& a : j.at("apps")) sum_log += std::log(a.at("throughput").get<double>());
  EXPECT_NEAR(j.at("objective").get<double>(), sum_log, 1e-3);
  EXPECT_NEAR(j.at("apps")[0].at("throughput").get<double>(), 5.0, 0.05);
  EXPECT_NEAR(j.at("apps")[1].at("throughput").get<double>(), 12.5, 0.1);
  EXPECT_NEAR(j.at("apps")[2].at("throughput").get<double>(), 10.0, 0.1);
}

}  // namespace

namespace {
// An experiment with neither a calibration nor declared speeds (the quickstart): exit 3 (a
// figure the input file lacks), naming the file and field, and the two ways to a figure.
TEST(PredictCommand, AnUncalibratedExperimentSaysHowToGetAFigure) {
  const std::string quickstart = std::string(TREEFARM_SOURCE_DIR) + "/examples/quickstart.toml";
  const auto r = treefarm::test_support::run_shell(treefarm + " predict " + quickstart + " 2>&1");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("quickstart.toml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(".speed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("treefarm calibrate " + quickstart + " --out CAL.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--calibration CAL.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("treefarm run " + quickstart + " --policy lp"), std::string::npos) << r.output;
}
}  // namespace

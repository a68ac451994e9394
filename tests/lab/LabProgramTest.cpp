// `treefarm-lab` as a user runs it: the studies and the peer benchmark are its
// subcommands and no longer `treefarm`'s; a campaign runs end to end and its report
// names the command that reproduces it.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/Shell.hpp"
#include "tests/support/TempDir.hpp"

namespace {

const std::string lab = std::string(TREEFARM_BIN_DIR) + "/treefarm-lab";
const std::string treefarm = std::string(TREEFARM_BIN_DIR) + "/treefarm";

treefarm::test_support::ShellResult run(const std::string& cmd) { return treefarm::test_support::run_shell(cmd + " 2>&1"); }

TEST(LabProgram, OffersTheStudiesAndThePeerBenchmark) {
  const auto top = run(lab + " --help");
  ASSERT_EQ(top.exit_code, 0) << top.output;
  EXPECT_NE(top.output.find("campaign"), std::string::npos) << top.output;
  EXPECT_NE(top.output.find("peers"), std::string::npos) << top.output;
  const auto campaign = run(lab + " campaign --help");
  ASSERT_EQ(campaign.exit_code, 0) << campaign.output;
  for (const char* study : {"paper", "lee2010", "price", "plan"})
    EXPECT_NE(campaign.output.find(study), std::string::npos) << study << "\n" << campaign.output;
  const auto version = run(lab + " --version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.output.rfind("treefarm-lab ", 0), 0u) << version.output;
}

TEST(LabProgram, TheUsersCommandNoLongerCarriesThem) {
  const auto top = run(treefarm + " --help");
  ASSERT_EQ(top.exit_code, 0) << top.output;
  EXPECT_EQ(top.output.find("\n  experiment "), std::string::npos) << top.output;  // no such subcommand listed
  EXPECT_EQ(run(treefarm + " experiment paper --quick").exit_code, 2);  // exit_usage: no such subcommand
  EXPECT_EQ(run(treefarm + " bench peers").exit_code, 2);
  // The user-facing benchmarks stay.
  const auto bench = run(treefarm + " bench --help");
  ASSERT_EQ(bench.exit_code, 0) << bench.output;
  for (const char* b : {"dispatch", "drift", "kernel"}) EXPECT_NE(bench.output.find(b), std::string::npos) << b;
}

TEST(LabProgram, RefusesABadOptionWithExitCodeTwo) {
  const auto r = run(lab + " campaign lee2010 --ratios 0.5,2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ratios"), std::string::npos) << r.output;
}

TEST(LabProgram, ThePriceCampaignRunsAndNamesItsCommand) {
  const treefarm::test_support::TempDir dir("lab-price");
  const auto out = (dir.path() / "out").string();
  const auto r = run(lab + " campaign price --trees 2 --min-nodes 3 --max-nodes 4 --iterations 30 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream md(dir.path() / "out" / "price-campaign.md");
  std::stringstream text;
  text << md.rdbuf();
  EXPECT_NE(text.str().find("Command: `treefarm-lab campaign price --trees 2"), std::string::npos) << text.str();
  std::ifstream csv(dir.path() / "out" / "price-campaign.csv");
  std::string line;
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 3) << "a header and one row per tree";
}

}  // namespace

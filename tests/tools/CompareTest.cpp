// tools/Compare: compare.png's y-axis includes 1.0 and it has per-application bars;
// cumulative.png is drawn with pngcairo, which draws the dashed LP lines.
#include "tools/Compare.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/model/Experiment.hpp"
#include "tests/support/TempDir.hpp"

namespace treefarm::tools {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

nlohmann::json run_json(double fair, double ratio) {
  nlohmann::json r{{"ok", true}, {"fair_throughput", fair}, {"duration", 2.0}, {"predicted_fair_throughput", fair / ratio},
                   {"fair_ratio", ratio}};
  r["apps"] = {{{"name", "mm"}, {"throughput", fair}, {"completed", 4}, {"wrong", 0}, {"predicted", fair / ratio}},
               {{"name", "ma"}, {"throughput", 2 * fair}, {"completed", 4}, {"wrong", 0}, {"predicted", 2 * fair / ratio}}};
  r["tasks"] = nlohmann::json::array();
  for (int i = 0; i < 4; ++i) {
    r["tasks"].push_back({{"app", "mm"}, {"completed_at", 0.5 * (i + 1)}});
    r["tasks"].push_back({{"app", "ma"}, {"completed_at", 0.25 * (i + 1)}});
  }
  return r;
}

TEST(Compare, PlotsKeepOneInViewPerApplicationBarsAndDashes) {
  test_support::TempDir dir("compare");
  std::vector<std::pair<std::string, nlohmann::json>> results{{"fcfs", run_json(10, 0.5)}, {"pbc", run_json(12, 0.6)}};
  for (const auto& [name, r] : results) fs::create_directories(dir.path() / name);
  const auto cmp = compare_json(results);
  std::ostringstream out;
  const bool plotted = plot_compare(dir.path().string(), cmp, results, out);
  const auto gp = slurp(dir.path() / "compare.gp");
  if (!plotted) GTEST_SKIP() << "gnuplot not installed: " << out.str();
  // Ratios 0.5 and 0.6: the axis still reaches past 1.0, where the optimum is drawn.
  EXPECT_NE(gp.find("set yrange [0:1.15]"), std::string::npos) << gp;
  EXPECT_NE(gp.find("1 with lines dt 2"), std::string::npos) << gp;
  EXPECT_NE(gp.find("columnheader"), std::string::npos) << gp;  // one bar per application
  EXPECT_EQ(slurp(dir.path() / "compare-apps.dat"), "policy mm ma\nfcfs 10 20\npbc 12 24\n");
  const auto cumulative = slurp(dir.path() / "fcfs" / "cumulative.gp");
  EXPECT_NE(cumulative.find("set terminal pngcairo dashed"), std::string::npos) << cumulative;
  EXPECT_NE(cumulative.find("dt 2"), std::string::npos) << cumulative;
  EXPECT_GT(fs::file_size(dir.path() / "compare.png"), 1000u);
  EXPECT_GT(fs::file_size(dir.path() / "fcfs" / "cumulative.png"), 1000u);
}

}  // namespace
}  // namespace treefarm::tools

namespace treefarm::tools {
namespace {

// `compare --repeat N`: every policy runs N times into DIR/POLICY/run-R/; the
// table, compare.json and compare.png give the mean and the sample standard deviation.
// The runner is a stand-in that writes a results.json whose fair throughput depends on
// the run, so the expected mean and spread are known.
TEST(Compare, RepeatRunsEachPolicyAndReportsMeanAndSpread) {
  test_support::TempDir dir("compare-repeat");
  const auto ex = model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/quickstart.toml");
  CompareOptions co;
  co.policies = {"fcfs", "pbc"};
  co.no_calibrate = true;
  co.repeat = 3;
  co.out_dir = dir.path().string();
  std::map<std::string, int> calls;
  std::vector<std::string> dirs;
  const TreeRunner runner = [&](const LaunchOptions& lo) {
    const int n = ++calls[lo.policy];  // fcfs: 10, 12, 14; pbc: 20, 24, 28 tasks/s
    const double f = lo.policy == "fcfs" ? 8.0 + 2.0 * n : 16.0 + 4.0 * n;
    dirs.push_back(lo.out_dir);
    fs::create_directories(lo.out_dir);
    std::ofstream(fs::path(lo.out_dir) / "results.json") << run_json(f, f / 20).dump();
    return 0;
  };
  std::ostringstream out;
  ASSERT_EQ(compare_policies(ex, co, runner, out), 0) << out.str();
  EXPECT_EQ(calls["fcfs"], 3);
  EXPECT_EQ(calls["pbc"], 3);
  ASSERT_EQ(dirs.size(), 6u);
  EXPECT_EQ(fs::path(dirs[0]), dir.path() / "fcfs" / "run-1");
  EXPECT_EQ(fs::path(dirs[5]), dir.path() / "pbc" / "run-3");

  std::ifstream f(dir.path() / "compare.json");
  const auto cmp = nlohmann::json::parse(f);
  EXPECT_EQ(cmp.at("repeat"), 3);
  const auto& fcfs = cmp.at("policies")[0];
  EXPECT_EQ(fcfs.at("name"), "fcfs");
  EXPECT_EQ(fcfs.at("runs"), 3);
  EXPECT_DOUBLE_EQ(fcfs.at("fair_throughput").get<double>(), 12.0);         // mean of 10, 12, 14
  EXPECT_DOUBLE_EQ(fcfs.at("fair_throughput_stddev").get<double>(), 2.0);   // sample sd
  EXPECT_DOUBLE_EQ(fcfs.at("fair_throughput_min").get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(fcfs.at("fair_throughput_max").get<double>(), 14.0);
  EXPECT_NEAR(fcfs.at("fair_ratio").get<double>(), 0.6, 1e-12);
  EXPECT_NEAR(fcfs.at("fair_ratio_stddev").get<double>(), 0.1, 1e-12);
  EXPECT_EQ(fcfs.at("repeats").size(), 3u);
  EXPECT_DOUBLE_EQ(fcfs.at("apps")[1].at("throughput").get<double>(), 24.0);  // ma: 2 × fair
  EXPECT_DOUBLE_EQ(fcfs.at("apps")[1].at("throughput_stddev").get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(cmp.at("policies")[1].at("fair_throughput_stddev").get<double>(), 4.0);
  EXPECT_NE(out.str().find("12.0000 ±2.0000"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[10.0000, 14.0000]"), std::string::npos) << out.str();

  const auto gp = slurp(dir.path() / "compare.gp");
  if (gp.empty()) GTEST_SKIP() << "gnuplot not installed: " << out.str();
  EXPECT_NE(gp.find("histogram errorbars"), std::string::npos) << gp;
  EXPECT_NE(gp.find("using 2:4:xtic(1)"), std::string::npos) << gp;
  EXPECT_EQ(slurp(dir.path() / "compare-apps.dat").substr(0, 26), "policy mm mm_sd ma ma_sd\nf");
  EXPECT_GT(fs::file_size(dir.path() / "compare.png"), 1000u);
}

TEST(Compare, RepeatZeroIsRefused) {
  test_support::TempDir dir("compare-repeat0");
  const auto ex = model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/quickstart.toml");
  CompareOptions co;
  co.policies = {"fcfs"};
  co.no_calibrate = true;
  co.repeat = 0;
  co.out_dir = dir.path().string();
  std::ostringstream out;
  EXPECT_THROW((void)compare_policies(ex, co, [](const LaunchOptions&) { return 0; }, out), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::tools

// tools/Compare: compare.png's y-axis includes 1.0 and it has per-application bars;
// cumulative.png is drawn with pngcairo, which draws the dashed LP lines (issue 18).
#include "tools/Compare.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

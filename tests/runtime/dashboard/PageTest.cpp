#include "runtime/dashboard/Page.hpp"

#include <gtest/gtest.h>


using namespace treefarm::dashboard;
using nlohmann::json;
namespace metrics = treefarm::metrics;

namespace {
/// A finished run: master m (no cores) and w1 under it; "mm" 4 tasks on w1, "a</script>b" 2.
metrics::RunResults run() {
  metrics::RunResults r;
  r.experiment = "exp.toml";
  r.policy = "lp";
  r.duration = 4;
  r.apps = {{"mm", "matmul", 1, 4, 4, 0, 0, 1.0, 1.1}, {"a</script>b", "matadd", 2, 2, 2, 0, 0, 0.5, std::nullopt}};
  r.nodes = {{"m", "", 0, 0}, {"w1", "m", 2, 6}};
  for (std::uint64_t i = 0; i < 4; ++i) r.tasks.push_back({0, i, "w1", 0.9 + static_cast<double>(i), 0.5, 0.1, 0});
  for (std::uint64_t i = 0; i < 2; ++i) r.tasks.push_back({1, i, "w1", 1.5 + static_cast<double>(i), 0.25, 0.1, 0});
  r.plan = {{"nodes", json::array({json{{"name", "w1"}, {"apps", {{"mm", 1.1}, {"a</script>b", 0.6}}},
                                        {"saturated", json::array({"cpu"})}}})}};
  r.predicted_fair_throughput = 0.3;
  return r;
}
}  // namespace

TEST(Page, TheReportViewHasTheTreeTheAppsTheHistoryAndEveryTask) {
  const auto v = report_view(run(), 1.0);
  ASSERT_EQ(v["tree"].size(), 2u);
  EXPECT_EQ(v["tree"][1]["name"], "w1");
  EXPECT_EQ(v["tree"][1]["done"], 6);
  EXPECT_DOUBLE_EQ(v["tree"][1]["rate"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(v["tree"][1]["planned_rate"].get<double>(), 1.7);
  EXPECT_EQ(v["tree"][1]["saturated"], json::array({"cpu"}));
  EXPECT_EQ(v["running"]["apps"][0]["predicted"], 1.1);
  EXPECT_TRUE(v["running"]["apps"][1]["predicted"].is_null());
  EXPECT_EQ(v["history"]["t"], json::array({1.0, 2.0, 3.0, 4.0}));
  EXPECT_EQ(v["history"]["apps"]["mm"], json::array({1.0, 1.0, 1.0, 1.0}));
  EXPECT_EQ(v["history"]["apps"]["a</script>b"], json::array({0.0, 1.0, 1.0, 0.0}));
  ASSERT_EQ(v["tasks"]["rows"].size(), 6u);
  EXPECT_EQ(v["tasks"]["rows"][0], json::array({1, 0, 0.4, 0.9}));
  EXPECT_EQ(v["report"]["tasks_recorded"], 6);
  EXPECT_EQ(v["report"]["experiment"], "exp.toml");
}

TEST(Page, ManyTasksAreSpreadEvenlyUnderTheLimit) {
  auto r = run();
  r.tasks.clear();
  for (std::uint64_t i = 0; i < 3 * report_tasks_max; ++i)
    r.tasks.push_back({0, i, "w1", static_cast<double>(i) * 1e-3, 1e-4, -1, 0});
  r.duration = static_cast<double>(3 * report_tasks_max) * 1e-3;
  const auto v = report_view(r, 1.0);
  EXPECT_EQ(v["tasks"]["rows"].size(), report_tasks_max);
  EXPECT_GT(v["tasks"]["rows"].back()[3].get<double>(), 0.99 * r.duration);
}

TEST(Page, TheReportIsOneFileWithNothingFromElsewhere) {
  const auto html = report_html(report_view(run()));
  EXPECT_EQ(html.find("<script src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  for (const char* external : {"src=\"http", "src='http", "href=\"http", "href='http", "src=\"//", "href=\"//", "url(http",
                               "url(//", "@import"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_NE(html.find("window.TREEFARM_REPORT = "), std::string::npos);
  EXPECT_NE(html.find("Chart.js v3"), std::string::npos);
  // An application named to close the script element cannot: it is written "<\/script>".
  EXPECT_EQ(html.find("a</script>b"), std::string::npos);
  EXPECT_NE(html.find("a<\\/script>b"), std::string::npos);
  // One </script> per script element: Chart.js, the data, the page's script.
  std::size_t closes = 0;
  for (auto at = html.find("</script>"); at != std::string::npos; at = html.find("</script>", at + 1)) ++closes;
  EXPECT_EQ(closes, 3u);
}

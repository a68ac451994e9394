#include "runtime/dashboard/Feed.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "runtime/metrics/TaskLog.hpp"
#include "tests/support/TempDir.hpp"

using namespace treefarm::dashboard;
using nlohmann::json;

namespace {
/// A root's status as MasterOptions::on_status gives it: master m with w1 and w2 under it.
json status(double elapsed, std::uint64_t mm_done, std::uint64_t w1_reports, bool w2_reported, std::uint64_t w1_busy = 1) {
  json nodes = json::array();
  nodes.push_back({{"name", "m"}, {"parent", ""}, {"cores", 0}, {"done", 0}, {"busy_cores", 0}, {"queued", 0},
                   {"load1", nullptr}, {"reports", w1_reports}});
  nodes.push_back({{"name", "w1"}, {"parent", "m"}, {"cores", 2}, {"done", mm_done}, {"busy_cores", w1_busy},
                   {"queued", 3}, {"load1", 0.5}, {"reports", w1_reports}});
  json w2{{"name", "w2"}, {"parent", "m"}, {"cores", 1}, {"done", 0}};
  if (w2_reported) {
    w2["busy_cores"] = 0;
    w2["queued"] = 0;
    w2["reports"] = 1;
  }
  nodes.push_back(w2);
  return {{"elapsed", elapsed},
          {"apps", json::array({json{{"name", "mm"}, {"tasks", 100}, {"done", mm_done}, {"throughput", 1.0}, {"predicted", 4.0}}})},
          {"nodes", nodes}};
}

json plan() {
  return {{"nodes", json::array({json{{"name", "m"}, {"apps", {{"mm", 0.0}}}, {"saturated", json::array({"port"})},
                                      {"cpu_utilisation", 0.0}, {"link_utilisation", 0.0}, {"port_utilisation", 1.0}},
                                 json{{"name", "w1"}, {"apps", {{"mm", 3.0}}}, {"saturated", json::array({"cpu"})},
                                      {"cpu_utilisation", 1.0}, {"link_utilisation", 0.2}, {"port_utilisation", 0.0}}})}};
}

const json& node(const json& view, const std::string& name) {
  for (const auto& n : view.at("tree"))
    if (n.at("name") == name) return n;
  throw std::runtime_error("no node " + name);
}
}  // namespace

TEST(Feed, BeforeAnyPublishTheViewHasEveryKeyAndNoRun) {
  Feed feed;
  const auto v = json::parse(*feed.view().text);
  for (const char* key : {"serving", "tree", "waiting", "running", "queue", "finished", "plan", "history", "tasks"})
    EXPECT_TRUE(v.contains(key)) << key;
  EXPECT_TRUE(v["running"].is_null());
  EXPECT_TRUE(v["tree"].empty());
}

TEST(Feed, NodesGetTheirStateAndThePlansRatesAndSaturatedResources) {
  FeedOptions o;
  o.lost_after = 0.3;
  Feed feed(o);
  feed.publish(status(1, 10, 1, false), plan(), nullptr);
  auto v = json::parse(*feed.view().text);
  EXPECT_EQ(node(v, "w1")["state"], "busy");
  EXPECT_EQ(node(v, "w2")["state"], "joining");  // no report came up yet
  EXPECT_EQ(node(v, "m")["state"], "idle");
  EXPECT_DOUBLE_EQ(node(v, "w1")["planned_rate"].get<double>(), 3.0);
  EXPECT_EQ(node(v, "w1")["saturated"], json::array({"cpu"}));
  EXPECT_EQ(node(v, "m")["saturated"], json::array({"port"}));
  EXPECT_FALSE(node(v, "w2").contains("planned_rate"));  // not in the plan
  EXPECT_EQ(v["running"]["apps"][0]["name"], "mm");
  EXPECT_EQ(v["plan"], plan());
  // w1's reports stop growing: lost once lost_after has passed; w2 reports: idle.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  feed.publish(status(2, 10, 1, true, 0), plan(), nullptr);
  v = json::parse(*feed.view().text);
  EXPECT_EQ(node(v, "w1")["state"], "lost");
  EXPECT_EQ(node(v, "w2")["state"], "idle");
  // Reports again (it rejoined): busy.
  feed.publish(status(3, 12, 5, true), plan(), nullptr);
  v = json::parse(*feed.view().text);
  EXPECT_EQ(node(v, "w1")["state"], "busy");
}

TEST(Feed, MeasuredRateAndHistoryFollowTheDoneCounts) {
  Feed feed;
  feed.publish(status(0, 0, 1, true), json(), nullptr);  // waiting for the nodes: no point
  feed.publish(status(1, 10, 2, true), json(), nullptr);
  feed.publish(status(2, 40, 3, true), json(), nullptr);
  const auto v = json::parse(*feed.view().text);
  EXPECT_EQ(v["history"]["t"], json::array({1.0, 2.0}));
  EXPECT_EQ(v["history"]["apps"]["mm"], json::array({10.0, 30.0}));
  EXPECT_GT(node(v, "w1")["rate"].get<double>(), 0.0);
  EXPECT_TRUE(v["plan"].is_null());
}

TEST(Feed, AFullHistoryKeepsTheWholeRunAtHalfTheResolution) {
  FeedOptions o;
  o.history_points = 8;
  Feed feed(o);
  for (int t = 1; t <= 9; ++t) feed.publish(status(t, static_cast<std::uint64_t>(10 * t), 1, true), json(), nullptr);
  const auto v = json::parse(*feed.view().text);
  const auto& t = v["history"]["t"];
  ASSERT_EQ(t.size(), 5u);  // 9 points merged pairwise, the last kept
  EXPECT_EQ(t.back(), 9.0);
  EXPECT_EQ(t.front(), 2.0);
  for (const auto& r : v["history"]["apps"]["mm"]) EXPECT_DOUBLE_EQ(r.get<double>(), 10.0);
}

TEST(Feed, ANewRunClearsTheHistory) {
  Feed feed;
  feed.publish(status(1, 10, 1, true), json(), nullptr);
  feed.publish(status(2, 20, 2, true), json(), nullptr);
  feed.publish(status(0.5, 3, 1, true), json(), nullptr);  // elapsed went back: the next experiment
  feed.publish(status(1.5, 8, 2, true), json(), nullptr);
  const auto v = json::parse(*feed.view().text);
  EXPECT_EQ(v["history"]["t"], json::array({0.5, 1.5}));
  EXPECT_EQ(v["history"]["apps"]["mm"], json::array({6.0, 5.0}));
}

TEST(Feed, TheTaskStreamIsTheLogsLastTasksOnTheirNodes) {
  treefarm::test_support::TempDir dir("feed");
  treefarm::metrics::TaskLog log(dir.path());
  const auto w1 = log.intern("w1"), gone = log.intern("not-in-the-tree");
  for (std::uint64_t i = 0; i < 10000; ++i)  // more than one spill buffer: some are read back from the file
    log.add({i, 0, i % 7 == 0 ? gone : w1, static_cast<double>(i) + 1.0, 0.5, -1.0, 0.0f,
             treefarm::metrics::PackedTaskRecord::no_via});
  FeedOptions o;
  o.tasks_kept = 5000;
  Feed feed(o);
  feed.publish(status(1, 10, 1, true), json(), &log);
  const auto v = json::parse(*feed.view().text);
  const auto& rows = v["tasks"]["rows"];
  EXPECT_EQ(v["tasks"]["nodes"], json::array({"m", "w1", "w2"}));
  EXPECT_EQ(v["tasks"]["apps"], json::array({"mm"}));
  std::size_t expected = 0;
  for (std::uint64_t i = 5000; i < 10000; ++i) expected += i % 7 != 0;
  ASSERT_EQ(rows.size(), expected);
  EXPECT_EQ(rows.back(), json::array({1, 0, 9999.5, 10000.0}));
  EXPECT_EQ(rows.front()[2].get<double>(), 5000.5);  // 5000 % 7 != 0: the oldest kept
}

TEST(Feed, AServedMastersStateJoinsTheRunWhileOneRuns) {
  Feed feed;
  json served{{"serving", "m"}, {"tree", json::array()}, {"waiting", json::array({"w9"})}, {"running", nullptr},
              {"queue", json::array({json{{"id", 2}}})}, {"finished", json::array()}};
  feed.set_serve_status([&served] { return served; });
  feed.publish(status(1, 10, 1, true), json(), nullptr);
  auto v = json::parse(*feed.view().text);
  EXPECT_EQ(v["serving"], "m");
  EXPECT_TRUE(v["running"].is_null());  // between experiments: the run's last snapshot is not shown
  EXPECT_EQ(v["queue"].size(), 1u);
  served["running"] = {{"id", 1}, {"name", "x.toml"}, {"elapsed", 0.5}};
  feed.set_serve_status([&served] { return served; });
  feed.publish(status(2, 20, 2, true), json(), nullptr);
  v = json::parse(*feed.view().text);
  EXPECT_EQ(v["running"]["id"], 1);
  EXPECT_EQ(v["running"]["elapsed"], 2.0);  // the run's own figures
  EXPECT_EQ(v["tree"].size(), 3u);
  feed.set_serve_status({});
  v = json::parse(*feed.view().text);
  EXPECT_TRUE(v["serving"].is_null());
}

TEST(Feed, TheViewChangesVersionOnlyWhenItsTextChanges) {
  Feed feed;
  const auto a = feed.view();
  const auto b = feed.view();
  EXPECT_EQ(a.version, b.version);
  feed.publish(status(1, 10, 1, true), json(), nullptr);
  const auto c = feed.view();
  EXPECT_NE(c.version, b.version);
  EXPECT_EQ(c.text, feed.view().text);  // built once, shared
}

TEST(Feed, ALostNodeIsShownWithinTheHeartbeatTimeoutAndOneSecond) {
  EXPECT_DOUBLE_EQ(lost_after_for(1.0, 6.0), 3.0);   // the defaults: 3 heartbeats
  EXPECT_DOUBLE_EQ(lost_after_for(2.0, 5.0), 3.0);   // 3 heartbeats would be 6 s: timeout - 2
  EXPECT_DOUBLE_EQ(lost_after_for(0.3, 4.0), 2.0);
  EXPECT_DOUBLE_EQ(lost_after_for(0.3, 3.0), 1.5);
  EXPECT_DOUBLE_EQ(lost_after_for(0.1, 1.0), 1.5);   // never under 1.5 s
  for (const double interval : {0.1, 0.3, 1.0, 2.0, 5.0})
    for (const double timeout : {3.0, 6.0, 10.0, 30.0}) {
      if (timeout > 2 * interval) {
        EXPECT_LE(lost_after_for(interval, timeout), timeout - 1.5) << interval << " " << timeout;
      }
    }
}

// The page in a real browser: headless Chromium (Debian `chromium`) loads the one-file
// report and the live page, runs their scripts, and the test reads the DOM it ends with and
// the browser's console. Skipped when Chromium is not installed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "runtime/dashboard/DashboardServer.hpp"
#include "runtime/dashboard/Page.hpp"
#include "tests/support/Shell.hpp"
#include "tests/support/TempDir.hpp"

using namespace treefarm::dashboard;
using nlohmann::json;
namespace metrics = treefarm::metrics;

namespace {
std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    const auto r = treefarm::test_support::run_shell(std::string("command -v ") + name);
    if (r.exit_code == 0 && !r.output.empty()) return r.output.substr(0, r.output.find('\n'));
  }
  return {};
}

struct Loaded {
  int exit_code = -1;
  std::string dom, console;  ///< the DOM after the scripts ran; the console's lines
};

/// Chromium loads `url`, lets its scripts run for `budget_ms` of virtual time and prints the DOM.
Loaded load(const std::string& browser, const std::filesystem::path& dir, const std::string& url, int budget_ms) {
  const auto dom = dir / "dom.html", log = dir / "chromium.log";
  const std::string cmd = "timeout 60 " + browser +
                          " --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking "
                          "--no-first-run --enable-logging=stderr --v=0 --user-data-dir=" + (dir / "profile").string() +
                          " --virtual-time-budget=" + std::to_string(budget_ms) + " --dump-dom '" + url + "' > " +
                          dom.string() + " 2> " + log.string();
  Loaded out;
  out.exit_code = treefarm::test_support::run_shell(cmd).exit_code;
  std::ifstream d(dom), l(log);
  std::stringstream ds, ls;
  ds << d.rdbuf();
  out.dom = ds.str();
  std::string line;
  while (std::getline(l, line))
    if (line.find(":CONSOLE") != std::string::npos) out.console += line + "\n";
  return out;
}

metrics::RunResults run() {
  metrics::RunResults r;
  r.experiment = "exp.toml";
  r.policy = "fcfs";
  r.duration = 3;
  r.apps = {{"mm", "matmul", 1, 30, 30, 0, 0, 10.0, 11.0}};
  r.nodes = {{"master", "", 0, 0}, {"w1", "master", 2, 20}, {"w1a", "w1", 1, 10}};
  for (std::uint64_t i = 0; i < 30; ++i)
    r.tasks.push_back({0, i, i % 3 == 0 ? "w1a" : "w1", 0.1 * static_cast<double>(i) + 0.2, 0.15, -1, 0});
  return r;
}
}  // namespace

TEST(Browser, TheReportRendersEveryNodeWithNoConsoleMessage) {
  const auto browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  treefarm::test_support::TempDir dir("browser");
  const auto file = dir.path() / "report.html";
  std::ofstream(file) << report_html(report_view(run()));
  const auto page = load(browser, dir.path(), "file://" + file.string(), 2000);
  ASSERT_EQ(page.exit_code, 0) << page.dom;
  EXPECT_EQ(page.console, "") << "the browser's console";
  EXPECT_NE(page.dom.find("data-rendered=\"1\""), std::string::npos) << page.dom.substr(0, 2000);
  for (const char* node : {"master", "w1", "w1a"})
    EXPECT_NE(page.dom.find(std::string("<tr data-node=\"") + node + "\">"), std::string::npos) << node;
  EXPECT_NE(page.dom.find("<tr data-app=\"mm\">"), std::string::npos);
  EXPECT_NE(page.dom.find("<canvas id=\"throughput\""), std::string::npos);
}

TEST(Browser, TheLivePageShowsThePublishedTreeWithNoConsoleMessage) {
  const auto browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  treefarm::test_support::TempDir dir("browser");
  Feed feed;
  ServerOptions o;
  o.address = parse_address("127.0.0.1:0");
  DashboardServer server(feed, o);
  const json nodes = json::array({json{{"name", "master"}, {"parent", ""}, {"cores", 0}, {"done", 0}},
                                  json{{"name", "w1"}, {"parent", "master"}, {"cores", 2}, {"done", 12}, {"busy_cores", 2},
                                       {"queued", 1}, {"reports", 3}}});
  feed.publish({{"elapsed", 2.0},
                {"apps", json::array({json{{"name", "mm"}, {"tasks", 50}, {"done", 12}, {"throughput", 6.0}, {"predicted", 7.0}}})},
                {"nodes", nodes}},
               json(), nullptr);
  // Less virtual time than the page waits before opening its event stream, which never
  // goes idle: the DOM is the one the first /api/status gave.
  const auto page = load(browser, dir.path(), server.url(), 500);
  ASSERT_EQ(page.exit_code, 0) << page.dom;
  EXPECT_EQ(page.console, "") << "the browser's console";
  EXPECT_NE(page.dom.find("<tr data-node=\"w1\">"), std::string::npos) << page.dom.substr(0, 4000);
  EXPECT_NE(page.dom.find("state-busy\">busy"), std::string::npos) << page.dom.substr(0, 4000);
}

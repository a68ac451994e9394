// The live dashboard (docs/dashboard.md) in a real browser: headless Chromium, driven by
// chromedriver over the W3C WebDriver protocol (tests/support/WebDriver.hpp), follows the
// page of a real `treefarm run --dashboard` (a master and three workers on loopback) and
// the test reads what the page shows: every node of the tree by name with its state,
// numbers that change while the run goes on, the measured and the predicted throughput, a
// worker killed with SIGKILL shown as lost, and a browser console with no error or
// warning. Skipped, saying why, when chromium or chromedriver is not installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/WebDriver.hpp"

using namespace treefarm::testing;
using treefarm::test_support::WebDriver;
using nlohmann::json;

namespace {
/// A master that only forwards and three one-core workers; both applications' tasks sleep
/// 50 ms (the run outlasts the test on any machine: the test ends it).
std::string experiment() {
  std::string t = "[[node]]\nname = \"master\"\ncores = 0\n\n";
  for (const char* w : {"w1", "w2", "w3"}) t += std::string("[[node]]\nname = \"") + w + "\"\nparent = \"master\"\ncores = 1\n\n";
  for (const char* a : {"sa", "sb"})
    t += std::string("[[app]]\nname = \"") + a + "\"\nkind = \"command\"\nargv = [\"sleep\", \"0.05\"]\nbytes = 16\ntasks = 5000\n\n";
  return t + "[run]\nbuffer = 2\npolicy = \"fcfs\"\ncomm_model = \"multi-port\"\n";
}

/// A calibration written by hand (docs/calibration-file.md): 0.1 s a task everywhere, so
/// the LP predicts each application's throughput and each node's planned rate.
std::string calibration() {
  std::string nodes = R"({"name": "master", "cores": 0, "task_seconds": {}})";
  for (const char* w : {"w1", "w2", "w3"})
    nodes += std::string(R"(, {"name": ")") + w +
             R"(", "cores": 1, "link_bandwidth": 1e9, "task_seconds": {"sa": 0.1, "sb": 0.1}})";
  return R"({"format": "treefarm-calibration", "version": 1, "nodes": [)" + nodes + "]}";
}

/// What the page shows, read from its DOM (the text of its tables and summary) and its
/// throughput chart's series.
constexpr const char* read_page = R"JS(
const text = (id) => { const e = document.getElementById(id); return e ? e.textContent.trim() : ''; };
const rows = (id) => Array.from(document.querySelectorAll('#' + id + ' tbody tr'))
  .map((tr) => Array.from(tr.cells).map((td) => td.textContent.trim()));
let series = null;
if (window.Chart && Chart.getChart(document.getElementById('throughput')))
  series = Chart.getChart(document.getElementById('throughput')).data.datasets
    .map((d) => ({ label: d.label, points: d.data.length, dashed: Array.isArray(d.borderDash) && d.borderDash.length > 0 }));
return { rendered: Number(document.body.dataset.rendered || 0), connection: text('connection'),
         summary: text('summary'), tree: rows('tree'), apps: rows('apps'), series: series };
)JS";

struct Shown {
  int rendered = 0;
  std::string connection, summary;
  std::map<std::string, std::vector<std::string>> tree, apps;  ///< name → the row's cells
  json series;
  std::string dump;
  std::string state(const std::string& node) const {
    const auto it = tree.find(node);
    return it == tree.end() || it->second.size() < 2 ? "" : it->second[1];
  }
  /// Tasks done of every application (the "done / tasks" column).
  std::uint64_t done() const {
    std::uint64_t sum = 0;
    for (const auto& [name, cells] : apps)
      if (cells.size() > 1) sum += std::strtoull(cells[1].c_str(), nullptr, 10);
    return sum;
  }
};

Shown shown(WebDriver& browser) {
  const json v = browser.execute(read_page);
  Shown s;
  s.dump = v.dump();
  s.rendered = v.value("rendered", 0);
  s.connection = v.value("connection", "");
  s.summary = v.value("summary", "");
  for (const auto& row : v["tree"])
    if (!row.empty()) s.tree[row[0].get<std::string>()] = row.get<std::vector<std::string>>();
  for (const auto& row : v["apps"])
    if (!row.empty()) s.apps[row[0].get<std::string>()] = row.get<std::vector<std::string>>();
  s.series = v["series"];
  return s;
}

bool is_number(const std::string& cell) {
  char* end = nullptr;
  std::strtod(cell.c_str(), &end);
  return !cell.empty() && end != cell.c_str() && *end == '\0';
}

/// The process `parent` started whose command line has `--name NAME` (a worker of `treefarm run`).
pid_t child_named(pid_t parent, const std::string& name) {
  for (const pid_t pid : processes_mentioning("--name " + name + " ")) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: the comm may hold spaces, the last ')' ends it.
    const auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 > line.size()) continue;  // it has just ended
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) return pid;
  }
  return -1;
}

std::string load_average() { return read_file("/proc/loadavg").substr(0, 14); }
}  // namespace

TEST(DashboardBrowser, ThePageShowsTheTreeLiveNumbersBothThroughputsAndAKilledWorkerAsLostWithACleanConsole) {
  if (const auto why = WebDriver::missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  const auto exp = write_file(dir.path() / "sleepy.toml", experiment());
  const auto cal = write_file(dir.path() / "calibration.json", calibration());
  const auto address = dir.path() / "dashboard.url";
  Child run({treefarm_bin, "run", exp, "--calibration", cal, "--out", (dir.path() / "out").string(), "--quiet", "--timeout",
             "300", "--heartbeat-interval", "0.5", "--heartbeat-timeout", "3", "--dashboard", "127.0.0.1:0",
             "--dashboard-file", address.string()},
            dir.path() / "run.log");
  const std::string url = wait_for_line(address, 60);
  ASSERT_FALSE(url.empty()) << run.output();
  std::vector<pid_t> workers;
  ASSERT_TRUE(wait_until(
      [&] {
        workers.clear();
        for (const char* w : {"w1", "w2", "w3"})
          if (const pid_t pid = child_named(run.pid(), w); pid > 0) workers.push_back(pid);
        return workers.size() == 3;
      },
      60))
      << run.output();

  const auto started = std::chrono::steady_clock::now();
  {
    WebDriver browser(dir.path() / "browser");
    browser.navigate(url);

    // Every node by name with its state, once the page follows the event stream and the
    // workers compute.
    Shown first;
    ASSERT_TRUE(wait_until(
        [&] {
          first = shown(browser);
          return first.connection == "live" && first.tree.size() == 4 && first.state("w1") == "busy" &&
                 first.state("w2") == "busy" && first.state("w3") == "busy" && first.done() > 0;
        },
        60))
        << first.dump << "\n" << run.output();
    EXPECT_EQ(first.state("master"), "idle") << first.dump;  // cores = 0: it only forwards
    for (const char* w : {"w1", "w2", "w3"}) {
      const auto& cells = first.tree.at(w);
      ASSERT_EQ(cells.size(), 8u) << first.dump;
      EXPECT_EQ(cells[2], "1 / 1") << w << ": busy cores of its cores";
      EXPECT_TRUE(is_number(cells[5])) << w << ": measured tasks/s '" << cells[5] << "'";
      EXPECT_TRUE(is_number(cells[6])) << w << ": planned tasks/s '" << cells[6] << "'";
    }

    // Measured and predicted throughput, in the table and as the chart's series.
    ASSERT_EQ(first.apps.size(), 2u) << first.dump;
    for (const char* a : {"sa", "sb"}) {
      const auto& cells = first.apps.at(a);
      ASSERT_EQ(cells.size(), 5u) << first.dump;
      EXPECT_TRUE(is_number(cells[2])) << a << ": measured tasks/s '" << cells[2] << "'";
      EXPECT_TRUE(is_number(cells[3])) << a << ": predicted tasks/s '" << cells[3] << "'";
      EXPECT_GT(std::strtod(cells[3].c_str(), nullptr), 0) << a;
    }

    // The numbers move: read again some seconds later, after more events.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    Shown later;
    ASSERT_TRUE(wait_until(
        [&] {
          later = shown(browser);
          return later.rendered > first.rendered && later.done() > first.done() && later.summary != first.summary;
        },
        30))
        << "first: " << first.dump << "\nlater: " << later.dump;
    std::set<std::string> series;
    for (const auto& s : later.series) {
      const std::string label = s.value("label", "");
      if (s.value("points", 0) > 0) series.insert(label);
      if (label.ends_with(" predicted")) {
        EXPECT_TRUE(s.value("dashed", false)) << label;
      }
    }
    EXPECT_EQ(series, (std::set<std::string>{"sa measured", "sa predicted", "sb measured", "sb predicted"}))
        << later.series.dump();

    // A worker killed with SIGKILL is shown as lost; the others are not.
    ASSERT_EQ(::kill(workers[1], SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    Shown after;
    ASSERT_TRUE(wait_until(
        [&] {
          after = shown(browser);
          return after.state("w2") == "lost";
        },
        30))
        << after.dump << "\n" << run.output();
    EXPECT_NE(after.state("w1"), "lost") << after.dump;
    EXPECT_NE(after.state("w3"), "lost") << after.dump;
    EXPECT_EQ(after.tree.size(), 4u) << after.dump;
    std::printf("w2 shown lost on the page %.1f s after SIGKILL (--heartbeat-timeout 3 s); load average %s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(), load_average().c_str());

    // The console: no error and no warning (uncaught exceptions, failed loads, console.error).
    const json console = browser.console();
    std::string bad;
    for (const auto& e : console)
      if (e.value("level", "") == "SEVERE" || e.value("level", "") == "WARNING") bad += e.dump() + "\n";
    EXPECT_EQ(bad, "") << "the browser's console";
    std::printf("console: %zu messages\n", console.size());
  }
  std::printf("browser session %.1f s; load average %s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), load_average().c_str());
  // Every process started here ends: the browser's with the WebDriver object, the run's with
  // SIGTERM to `treefarm run` (it ends its master and workers).
  EXPECT_TRUE(processes_mentioning((dir.path() / "browser").string() + "/").empty());
  ::kill(run.pid(), SIGTERM);
  EXPECT_TRUE(run.wait(30).has_value()) << run.output();
  EXPECT_TRUE(wait_until(
      [&] {
        for (const pid_t w : workers)
          if (::kill(w, 0) == 0) return false;
        return true;
      },
      10))
      << "a worker outlived its run";
}

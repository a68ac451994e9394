// The live dashboard (docs/dashboard.md) of real runs on loopback: `treefarm run
// --dashboard` serves /api/status (the tree and the applications) and /api/events (a
// snapshot at a time) while the run goes on; `treefarm report --html` writes one file with
// the run's data and nothing fetched from elsewhere; a non-loopback address is refused; a
// served master shows its own state.
#include <gtest/gtest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "runtime/dashboard/EventsClient.hpp"
#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"

using namespace treefarm::testing;
using nlohmann::json;

namespace {
/// Two one-core workers under a master that only forwards; "sl" tasks sleep 40 ms each
/// (the run lasts several seconds whatever the machine's speed), "nop" tasks do nothing.
std::string slow_experiment() {
  std::string t = "[[node]]\nname = \"master\"\ncores = 0\n\n";
  for (const char* w : {"w1", "w2"}) t += std::string("[[node]]\nname = \"") + w + "\"\nparent = \"master\"\ncores = 1\n\n";
  t += "[[app]]\nname = \"sl\"\nkind = \"command\"\nargv = [\"sleep\", \"0.04\"]\nbytes = 16\ntasks = 200\n\n"
       "[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 16\ntasks = 100\n\n"
       "[run]\nbuffer = 2\npolicy = \"fcfs\"\ncomm_model = \"multi-port\"\n";
  return t;
}

bool eventually(const std::function<bool()>& condition, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::set<std::string> names_of(const json& list) {
  std::set<std::string> out;
  for (const auto& x : list) out.insert(x.value("name", ""));
  return out;
}
}  // namespace

TEST(Dashboard, RunServesStatusAndEventsAndTheReportIsOneFileWithTheRunsData) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "slow.toml", slow_experiment());
  const auto out = dir.path() / "out", address = dir.path() / "dashboard.url";
  Child run({treefarm_bin, "run", exp, "--out", out.string(), "--quiet", "--timeout", "120", "--dashboard", "127.0.0.1:0",
             "--dashboard-file", address.string()},
            dir.path() / "run.log");
  const std::string url = wait_for_line(address, 60);
  ASSERT_FALSE(url.empty()) << run.output();
  EXPECT_TRUE(url.starts_with("http://127.0.0.1:")) << url;
  EXPECT_NE(run.output().find("dashboard at " + url), std::string::npos) << run.output();
  treefarm::dashboard::EventsClient events(url);

  // The status while the run goes on: the tree and the applications.
  json status;
  ASSERT_TRUE(eventually(
      [&] {
        const auto [code, body] = treefarm::dashboard::http_get(url, "/api/status");
        if (code != 200) return false;
        status = json::parse(body);
        return status["running"].is_object() && status["tree"].size() == 3;
      },
      60))
      << status.dump() << run.output();
  EXPECT_EQ(names_of(status["tree"]), (std::set<std::string>{"master", "w1", "w2"}));
  EXPECT_EQ(names_of(status["running"]["apps"]), (std::set<std::string>{"sl", "nop"}));
  for (const auto& n : status["tree"]) {
    EXPECT_TRUE(n.contains("state")) << n.dump();
    EXPECT_TRUE(n.contains("cores")) << n.dump();
  }
  const auto [page_code, page] = treefarm::dashboard::http_get(url, "/");
  EXPECT_EQ(page_code, 200);
  EXPECT_NE(page.find("dashboard.js"), std::string::npos);

  // Two snapshots or more by Server-Sent Events, each the same JSON.
  ASSERT_TRUE(eventually([&] { return events.events() >= 2; }, 60)) << events.events() << " events";
  const auto last = json::parse(events.last());
  EXPECT_EQ(names_of(last["tree"]), (std::set<std::string>{"master", "w1", "w2"}));

  ASSERT_EQ(run.wait(120), 0) << run.output();

  const auto html = dir.path() / "report.html";
  const auto r = run_command(treefarm_bin + " report " + (out / "results.json").string() + " --html " + html.string() +
                             " --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = read_file(html);
  ASSERT_FALSE(text.empty());
  for (const char* external : {"src=\"http", "href=\"http", "src='http", "href='http", "<script src", "<link"})
    EXPECT_EQ(text.find(external), std::string::npos) << external;
  const auto at = text.find("window.TREEFARM_REPORT = ");
  ASSERT_NE(at, std::string::npos);
  const auto data = json::parse(text.substr(at + 25, text.find(";\n</script>", at) - at - 25));
  EXPECT_EQ(names_of(data["tree"]), (std::set<std::string>{"master", "w1", "w2"}));
  EXPECT_EQ(data["report"]["tasks_recorded"], 300);
  EXPECT_EQ(data["tasks"]["rows"].size(), 300u);
  std::uint64_t done = 0;
  for (const auto& a : data["running"]["apps"]) done += a["done"].get<std::uint64_t>();
  EXPECT_EQ(done, 300u);
}

TEST(Dashboard, ANonLoopbackAddressIsRefusedBeforeAnythingStarts) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "slow.toml", slow_experiment());
  const auto r = run_command(treefarm_bin + " run " + exp + " --quiet --dashboard 0.0.0.0:8787");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--dashboard-remote"), std::string::npos) << r.output;
  const auto m = run_command(master_bin + " " + exp + " --dashboard 0.0.0.0:0");
  EXPECT_EQ(m.exit_code, 2) << m.output;
  const auto bad = run_command(treefarm_bin + " run " + exp + " --quiet --dashboard 127.0.0.1:notaport");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("notaport"), std::string::npos) << bad.output;
}

TEST(Dashboard, AServedMasterShowsItsOwnState) {
  TempDir dir;
  const auto address = dir.path() / "dashboard.url";
  Child master(served_master_args(dir, {.extra = {"--dashboard", "127.0.0.1:0", "--dashboard-file", address.string()}}),
               dir.path() / "master.log");
  const std::string url = wait_for_line(address, 60);
  ASSERT_FALSE(url.empty()) << master.output();
  // The dashboard listens before the served tree is up: its state comes a moment later.
  json v;
  ASSERT_TRUE(eventually(
      [&] {
        const auto [code, body] = treefarm::dashboard::http_get(url, "/api/status");
        if (code != 200) return false;
        v = json::parse(body);
        return v["serving"] == "m";
      },
      60))
      << v.dump() << master.output();
  EXPECT_TRUE(v["running"].is_null());
  EXPECT_TRUE(v["queue"].empty());
  kill(master.pid(), SIGTERM);
  EXPECT_TRUE(master.wait(20).has_value()) << master.output();
}

// Each finished experiment of a served master links to its report page, served under the
// dashboard's own policy (page and data from the server, nothing inline); an experiment
// without results has none.
TEST(Dashboard, AServedMasterLinksEachFinishedExperimentToItsReport) {
  TempDir dir;
  const auto address = dir.path() / "dashboard.url";
  const std::string w = "dr" + std::to_string(getpid());
  Child master(served_master_args(dir, {.extra = {"--dashboard", "127.0.0.1:0", "--dashboard-file", address.string()}}),
               dir.path() / "master.log");
  const auto mep = wait_for_line(dir.path() / "m.ep"), sep = wait_for_line(dir.path() / "submit.ep");
  const std::string url = wait_for_line(address, 60);
  ASSERT_FALSE(mep.empty() || sep.empty() || url.empty()) << master.output();
  Child worker({worker_bin, "--parent", mep, "--name", w, "--cores", "1", "--listen", ""}, dir.path() / "w.log");
  const auto file = write_file(dir.path() / "job.toml", "[[node]]\nname = \"m\"\ncores = 0\n\n[[node]]\nname = \"" + w +
                                                            "\"\nparent = \"m\"\ncores = 1\n\n[[app]]\nname = \"nop\"\n"
                                                            "kernel = \"noop\"\nbytes = 64\ntasks = 40\n");
  const auto r = run_command(treefarm_bin + " submit " + file + " --to " + sep + " --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << r.output << master.output();
  json v;
  ASSERT_TRUE(eventually(
      [&] {
        const auto [code, body] = treefarm::dashboard::http_get(url, "/api/status");
        if (code != 200) return false;
        v = json::parse(body);
        return v["finished"].size() == 1;
      },
      30))
      << v.dump();
  const auto& done = v["finished"][0];
  ASSERT_TRUE(done.contains("report")) << done.dump();
  const std::string link = done["report"];
  EXPECT_EQ(link, "jobs/" + std::to_string(done["id"].get<std::uint64_t>()) + "/report.html");
  const auto [page_code, page] = treefarm::dashboard::http_get(url, "/" + link);
  ASSERT_EQ(page_code, 200) << page;
  const std::string data_path = "/jobs/" + std::to_string(done["id"].get<std::uint64_t>()) + "/data.js";
  EXPECT_NE(page.find("<script src=\"" + data_path + "\">"), std::string::npos) << page;
  EXPECT_EQ(page.find("<script>"), std::string::npos) << "no inline script: the server's policy would block it";
  const auto [data_code, data] = treefarm::dashboard::http_get(url, data_path);
  ASSERT_EQ(data_code, 200);
  ASSERT_TRUE(data.starts_with("window.TREEFARM_REPORT = ")) << data.substr(0, 200);
  const json view = json::parse(data.substr(std::string("window.TREEFARM_REPORT = ").size(),
                                            data.rfind(';') - std::string("window.TREEFARM_REPORT = ").size()));
  EXPECT_EQ(view["tasks"]["rows"].size(), 40u) << view.dump().substr(0, 500);
  EXPECT_NE(view.dump().find(w), std::string::npos) << "the worker is in the report's tree";
  EXPECT_EQ(treefarm::dashboard::http_get(url, "/jobs/999/report.html").first, 404);
  EXPECT_EQ(treefarm::dashboard::http_get(url, "/jobs/999/data.js").first, 404);
  kill(master.pid(), SIGTERM);
  EXPECT_TRUE(master.wait(20).has_value()) << master.output();
}

// A worker killed mid-run shows as lost within --heartbeat-timeout + 1 s (docs/dashboard.md).
TEST(Dashboard, AKilledWorkerShowsAsLostWithinTheHeartbeatTimeoutAndOneSecond) {
  TempDir dir;
  std::string text = slow_experiment();
  text.replace(text.find("tasks = 200"), 11, "tasks = 2000");  // runs for longer than the test watches
  const auto exp = write_file(dir.path() / "slow.toml", text);
  const auto address = dir.path() / "dashboard.url", ready = dir.path() / "m.ep";
  const double timeout = 3;
  const std::vector<std::string> beats{"--heartbeat-interval", "0.3", "--heartbeat-timeout", "3"};
  std::vector<std::string> m{master_bin, exp, "--listen", "tcp://127.0.0.1:0", "--ready-file", ready.string(), "--quiet",
                             "--dashboard", "127.0.0.1:0", "--dashboard-file", address.string()};
  m.insert(m.end(), beats.begin(), beats.end());
  Child master(m, dir.path() / "master.log");
  const std::string endpoint = wait_for_line(ready, 60), url = wait_for_line(address, 60);
  ASSERT_FALSE(endpoint.empty() || url.empty()) << master.output();
  std::vector<std::unique_ptr<Child>> workers;
  for (const char* w : {"w1", "w2"}) {
    std::vector<std::string> a{worker_bin, "--parent", endpoint, "--name", w, "--cores", "1", "--listen", ""};
    a.insert(a.end(), beats.begin(), beats.end());
    workers.push_back(std::make_unique<Child>(a, dir.path() / (std::string(w) + ".log")));
  }
  const auto state_of = [&](const std::string& name) -> std::string {
    const auto [code, body] = treefarm::dashboard::http_get(url, "/api/status");
    if (code != 200) return "HTTP " + std::to_string(code) + " " + body;
    const json status = json::parse(body);  // kept: a loop over json::parse(body)["tree"] would read a dead temporary
    for (const auto& n : status.at("tree"))
      if (n.value("name", "") == name) return n.value("state", "");
    return "";
  };
  std::string seen;
  ASSERT_TRUE(eventually(
      [&] {
        const auto s1 = state_of("w1"), s2 = state_of("w2");
        seen = "w1 '" + s1 + "', w2 '" + s2 + "'";
        return s1 == "busy" && s2 == "busy";
      },
      60))
      << seen << "\n" << master.output();
  ASSERT_EQ(::kill(workers[1]->pid(), SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return state_of("w2") == "lost"; }, 30)) << master.output();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  // The bound is the documented one; the 20 ms polling and the HTTP request are inside it.
  EXPECT_LE(seconds, timeout + 1) << "w2 shown lost " << seconds << " s after it was killed";
  EXPECT_NE(state_of("w1"), "lost");
  std::printf("w2 shown lost %.2f s after SIGKILL (--heartbeat-timeout %.0f s)\n", seconds, timeout);
}

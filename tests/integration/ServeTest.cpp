// A served tree (docs/serve.md), with real processes on loopback: one
// `treefarm-master --serve`, a worker w1 under it and w2 under w1 (depth 2). Three
// experiments without [[node]] tables are submitted at once (two wait in the queue) and run
// one after another on the same workers: no worker restarts (the same processes on the
// same TCP connections, each says it stays connected after every run) and each results.json counts every task exactly once. Then a
// worker w3 joins between two experiments, waits connected, and the next submission uses it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"
#include "tests/support/EveryTaskOnce.hpp"

using namespace treefarm::testing;

namespace {

std::string live_experiment(std::uint64_t tasks) {
  return "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 160\ntasks = " + std::to_string(tasks) +
         "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\nweight = 2\ntasks = " + std::to_string(2 * tasks) +
         "\n[run]\nbuffer = 4\n";
}

/// The established TCP connections of process `pid`, as "LOCAL REMOTE" (/proc's hex
/// address:port): its socket descriptors matched against /proc/PID/net/tcp and tcp6. A
/// worker that reconnected to its parent, or whose child reconnected, shows a new local
/// or remote port.
std::set<std::string> tcp_connections(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(e.path(), link_ec).string();
    if (!link_ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<std::string> out;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream f(proc + table);
    std::string line;
    std::getline(f, line);  // the header
    while (std::getline(f, line)) {
      std::istringstream in(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "01" && inodes.count(inode)) out.insert(local + " " + remote);  // 01: ESTABLISHED
    }
  }
  return out;
}

/// A one-core worker under `parent`: listening for children (its endpoint in DIR/NAME.ep)
/// or a leaf.
std::unique_ptr<Child> start_worker(const TempDir& dir, const std::string& name, const std::string& parent, bool listen) {
  std::vector<std::string> a{worker_bin, "--parent", parent, "--name", name, "--cores", "1"};
  if (listen) a.insert(a.end(), {"--ready-file", (dir.path() / (name + ".ep")).string()});
  else a.insert(a.end(), {"--listen", ""});
  a.insert(a.end(), fast_heartbeats.begin(), fast_heartbeats.end());
  return std::make_unique<Child>(a, dir.path() / (name + ".log"));
}

/// A served master m with w1 under it and w2 under w1 (depth 2).
struct DepthTwoTree {
  std::unique_ptr<Child> master, inner, leaf;
  std::string mep, sep;  ///< the master's tree and submit endpoints
};

/// Starts a DepthTwoTree in `dir`; `leaf` stays empty if a process did not come up.
DepthTwoTree start_depth_two(const TempDir& dir, const std::string& w1, const std::string& w2) {
  DepthTwoTree t;
  t.master = std::make_unique<Child>(served_master_args(dir, {.live_wait = "20", .fast_heartbeats = true}), dir.path() / "master.log");
  t.mep = wait_for_line(dir.path() / "m.ep");
  t.sep = wait_for_line(dir.path() / "submit.ep");
  if (t.mep.empty() || t.sep.empty()) return t;
  t.inner = start_worker(dir, w1, t.mep, true);
  const auto w1ep = wait_for_line(dir.path() / (w1 + ".ep"));
  if (!w1ep.empty()) t.leaf = start_worker(dir, w2, w1ep, false);
  return t;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

TEST(Serve, ThreeSubmissionsRunOnOneTreeWithoutRestartingAWorkerAndALateJoinerIsUsed) {
  TempDir dir;
  const std::string tag = "sv" + std::to_string(getpid());
  const std::string w1 = tag + "w1", w2 = tag + "w2", w3 = tag + "w3";
  auto [served, inner, leaf, mep, sep] = start_depth_two(dir, w1, w2);
  ASSERT_TRUE(leaf) << served->output() << (inner ? inner->output() : "");
  Child& master = *served;

  // Both wait, connected, before anything is submitted (w2 through w1).
  auto status = [&] {
    const auto r = run_command(treefarm_bin + " status --json --to " + sep);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output.substr(r.output.find('{')));
  };
  ASSERT_TRUE(wait_until([&] { return status().at("waiting").size() == 1; }, 30)) << master.output();
  ASSERT_TRUE(wait_until([&] { return leaf->output().find("no run now; waiting") != std::string::npos; }, 30))
      << inner->output() << leaf->output();
  // The connections of the tree as it waits: w1's to m and from w2, w2's to w1.
  const auto links1 = tcp_connections(inner->pid()), links2 = tcp_connections(leaf->pid());
  ASSERT_EQ(links1.size(), 2u) << "w1: to its parent and from its child";
  ASSERT_EQ(links2.size(), 1u) << "w2: to its parent";

  const auto exp = write_file(dir.path() / "live.toml", live_experiment(150));
  std::vector<std::unique_ptr<Child>> submits;
  for (int k = 1; k <= 3; ++k) {
    submits.push_back(std::make_unique<Child>(
        std::vector<std::string>{treefarm_bin, "submit", exp, "--to", sep, "--out", (dir.path() / ("out" + std::to_string(k))).string(),
                                 "--timeout", "150"},
        dir.path() / ("submit" + std::to_string(k) + ".log")));
    // In submission order (the queue is first come, first served).
    ASSERT_TRUE(wait_until([&] { return submits.back()->output().find("queued") != std::string::npos; }, 30))
        << submits.back()->output() << master.output();
  }
  // The queue is first come, first served: the experiments start in submission order (how
  // many wait at a time depends on how fast each runs, so it is not asserted).
  ASSERT_TRUE(wait_until([&] { return master.output().find("experiment 3 (live.toml) starts") != std::string::npos; }, 120))
      << master.output();
  {
    const std::string log = master.output();
    const auto first = log.find("experiment 1 (live.toml) starts");
    const auto second = log.find("experiment 2 (live.toml) starts");
    const auto third = log.find("experiment 3 (live.toml) starts");
    EXPECT_TRUE(first < second && second < third) << log;
  }

  for (int k = 0; k < 3; ++k) {
    const auto rc = submits[static_cast<std::size_t>(k)]->wait(150);
    ASSERT_TRUE(rc.has_value()) << submits[static_cast<std::size_t>(k)]->output() << master.output();
    ASSERT_EQ(*rc, 0) << submits[static_cast<std::size_t>(k)]->output() << master.output();
    const auto r = nlohmann::json::parse(read_file(dir.path() / ("out" + std::to_string(k + 1)) / "results.json"));
    const auto per_node = treefarm::test_support::every_task_once(r);
    // From the second run on the master knows the whole tree and waits for w2 (depth 2).
    if (k > 0) {
      EXPECT_GT(per_node.count(w2) ? per_node.at(w2) : 0, 0u) << "the depth-2 worker computed nothing in run " << k + 1;
    }
  }
  // No worker restarted: the same processes, each stayed connected after every run, on
  // the very connections it had before the first (none was closed and made again).
  EXPECT_FALSE(inner->wait(0).has_value()) << inner->output();
  EXPECT_FALSE(leaf->wait(0).has_value()) << leaf->output();
  EXPECT_EQ(tcp_connections(inner->pid()), links1) << inner->output();
  EXPECT_EQ(tcp_connections(leaf->pid()), links2) << leaf->output();
  EXPECT_EQ(count_of(inner->output(), "staying connected for the next one"), 3u) << inner->output();
  EXPECT_EQ(count_of(leaf->output(), "staying connected for the next one"), 3u) << leaf->output();

  // A worker that joins between two experiments waits connected and is used by the next.
  auto late = start_worker(dir, w3, mep, false);
  ASSERT_TRUE(wait_until([&] { return status().at("waiting").size() == 2; }, 30)) << late->output();
  const auto r4 = run_command(treefarm_bin + " submit " + exp + " --to " + sep + " --out " + (dir.path() / "out4").string() +
                              " --timeout 150");
  ASSERT_EQ(r4.exit_code, 0) << r4.output << master.output();
  const auto per_node = treefarm::test_support::every_task_once(nlohmann::json::parse(read_file(dir.path() / "out4" / "results.json")));
  EXPECT_GT(per_node.count(w3) ? per_node.at(w3) : 0, 0u) << "the late worker was not used";
  EXPECT_FALSE(inner->wait(0).has_value());
  EXPECT_FALSE(leaf->wait(0).has_value());

  // compare --to: every policy asked for runs on the same live tree, nothing restarts.
  const auto cmp = run_command(treefarm_bin + " compare " + exp + " --to " + sep + " --no-calibrate --policies fcfs,cgbc --out " +
                               (dir.path() / "cmp").string());
  ASSERT_EQ(cmp.exit_code, 0) << cmp.output << master.output();
  const auto doc = nlohmann::json::parse(read_file(dir.path() / "cmp" / "compare.json"));
  ASSERT_EQ(doc.at("policies").size(), 2u) << doc.dump();
  for (const auto* policy : {"fcfs", "cgbc"}) {
    const auto r = nlohmann::json::parse(read_file(dir.path() / "cmp" / policy / "results.json"));
    EXPECT_EQ(r.at("policy").get<std::string>(), policy);
    treefarm::test_support::every_task_once(r);
  }
  for (auto* w : {inner.get(), leaf.get(), late.get()}) EXPECT_FALSE(w->wait(0).has_value()) << w->output();
  EXPECT_EQ(count_of(inner->output(), "staying connected for the next one"), 6u) << inner->output();

  // The served master stops on SIGTERM and sends its waiting workers away.
  kill(master.pid(), SIGTERM);
  const auto mrc = master.wait(20);
  ASSERT_TRUE(mrc.has_value()) << master.output();
  EXPECT_EQ(*mrc, 0) << master.output();
  for (auto* w : {inner.get(), leaf.get(), late.get()}) {
    const auto rc = w->wait(20);
    EXPECT_TRUE(rc.has_value()) << w->output();
  }
}

TEST(Serve, ABadSubmissionIsRefusedWithFileLineAndField) {
  TempDir dir;
  Child master(served_master_args(dir), dir.path() / "master.log");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(sep.empty()) << master.output();
  const auto bad = write_file(dir.path() / "bad.toml", "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = -3\ntasks = 5\n");
  const auto r = run_command(treefarm_bin + " submit " + bad + " --to " + sep);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bad.toml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("app[0].n"), std::string::npos) << r.output;
  const auto p = run_command(treefarm_bin + " submit " + write_file(dir.path() / "ok.toml", live_experiment(5)) +
                             " --to " + sep + " --policy nosuch");
  EXPECT_NE(p.exit_code, 0) << p.output;
  EXPECT_NE(p.output.find("nosuch"), std::string::npos) << p.output;
  kill(master.pid(), SIGTERM);
  EXPECT_TRUE(master.wait(20).has_value());
}

// `treefarm cancel` (docs/serve.md): a running experiment ends with the tree kept (the same
// worker runs the next one), its results.json says cancelled with what completed; a queued
// one leaves the queue and its submitter hears so; Ctrl-C on `submit` cancels its own
// experiment. Then a command application's output files come back through `submit --out`.
TEST(Serve, CancelEndsARunningOrQueuedExperimentAndTheTreeStaysAndOutputsComeBackToSubmit) {
  TempDir dir;
  const std::string w1 = "sc" + std::to_string(getpid()) + "w1";
  // Command applications and `treefarm cancel` from another process: an ipc:// channel of
  // this user and --allow-commands (docs/security.md).
  Child master(served_master_args(dir, {.ipc = true, .allow_commands = true, .live_wait = "20", .fast_heartbeats = true}),
               dir.path() / "master.log");
  const auto mep = wait_for_line(dir.path() / "m.ep");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(mep.empty() || sep.empty()) << master.output();
  Child worker({worker_bin, "--parent", mep, "--name", w1, "--cores", "1", "--listen", "", "--heartbeat-timeout", "2",
                "--heartbeat-interval", "0.3"},
               dir.path() / "w1.log");
  const pid_t wpid = worker.pid();
  auto status = [&] {
    const auto r = run_command(treefarm_bin + " status --json --to " + sep);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output.substr(r.output.find('{')));
  };
  ASSERT_TRUE(wait_until([&] { return status().at("waiting").size() == 1; }, 30)) << master.output();

  // 300 tasks of 0.1 s: about 30 s unless cancelled.
  const auto slow = write_file(dir.path() / "slow.toml",
                               "[[app]]\nname = \"nap\"\nkind = \"command\"\nargv = [\"sleep\", \"0.1\"]\nbytes = 10\n"
                               "tasks = 300\n[run]\nbuffer = 2\n");
  Child first({treefarm_bin, "submit", slow, "--to", sep, "--out", (dir.path() / "out1").string(), "--timeout", "120"},
              dir.path() / "submit1.log");
  ASSERT_TRUE(wait_until([&] { return first.output().find("experiment 1 started") != std::string::npos; }, 30))
      << first.output() << master.output();
  Child second({treefarm_bin, "submit", slow, "--to", sep, "--out", (dir.path() / "out2").string(), "--timeout", "120"},
               dir.path() / "submit2.log");
  ASSERT_TRUE(wait_until([&] { return second.output().find("queued") != std::string::npos; }, 30)) << second.output();

  // The queued one leaves the queue; its submitter ends with 130 and no results.json.
  const auto q = run_command(treefarm_bin + " cancel 2 --to " + sep);
  EXPECT_EQ(q.exit_code, 0) << q.output;
  EXPECT_NE(q.output.find("removed from the queue"), std::string::npos) << q.output;
  const auto rc2 = second.wait(30);
  ASSERT_TRUE(rc2.has_value()) << second.output();
  EXPECT_EQ(*rc2, 130) << second.output();
  EXPECT_NE(second.output().find("was cancelled"), std::string::npos) << second.output();
  EXPECT_FALSE(fs::exists(dir.path() / "out2" / "results.json"));

  // An unknown id is refused with the master's message.
  const auto none = run_command(treefarm_bin + " cancel 99 --to " + sep);
  EXPECT_NE(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("no queued or running experiment 99"), std::string::npos) << none.output;

  // The running one, once it computed something, by Ctrl-C on its own submit.
  ASSERT_TRUE(wait_until([&] {
    const auto s = status();
    return s.at("running").is_object() && !s.at("running").value("apps", nlohmann::json::array()).empty() &&
           s.at("running").at("apps")[0].value("done", 0u) >= 5u;
  }, 60)) << master.output();
  kill(first.pid(), SIGINT);
  const auto rc1 = first.wait(90);
  ASSERT_TRUE(rc1.has_value()) << first.output() << master.output();
  EXPECT_EQ(*rc1, 130) << first.output();
  EXPECT_NE(first.output().find("cancelling experiment 1"), std::string::npos) << first.output();
  const auto r1 = nlohmann::json::parse(read_file(dir.path() / "out1" / "results.json"));
  EXPECT_TRUE(r1.value("cancelled", false)) << r1.dump().substr(0, 400);
  const auto done1 = r1.at("apps")[0].at("completed").get<std::uint64_t>();
  EXPECT_GE(done1, 5u);
  EXPECT_LT(done1, 300u);
  std::set<std::uint64_t> ids;
  for (const auto& t : r1.at("tasks")) EXPECT_TRUE(ids.insert(t.at("id").get<std::uint64_t>()).second) << "a task twice";
  EXPECT_EQ(ids.size(), done1);

  // The tree stayed: the same worker runs the next experiment, whose outputs come back.
  const auto inputs = dir.path() / "inputs";
  fs::create_directories(inputs);
  fs::permissions(dir.path(), fs::perms::others_exec, fs::perm_options::add);  // the tasks run as nobody
  fs::permissions(inputs, fs::perms::all);
  const auto gz = write_file(dir.path() / "gz.toml",
                             "[[app]]\nname = \"gz\"\nkind = \"command\"\nargv = [\"sh\", \"-c\", \"cp {input} " +
                                 inputs.string() + "/{index}; exec gzip -n -c {input}\"]\nbytes = \"24KiB\"\ntasks = 20\n"
                                 "output_file = \"{index}.gz\"\n[run]\nbuffer = 2\n");
  const auto r3 = run_command(treefarm_bin + " submit " + gz + " --to " + sep + " --out " + (dir.path() / "out3").string() +
                              " --timeout 120");
  ASSERT_EQ(r3.exit_code, 0) << r3.output << master.output();
  for (int i = 0; i < 20; ++i) {
    const auto file = dir.path() / "out3" / "outputs" / "gz" / (std::to_string(i) + ".gz");
    ASSERT_TRUE(fs::exists(file)) << file << "\n" << r3.output;
    const auto unpacked = run_command("gzip -d -c " + file.string());
    ASSERT_EQ(unpacked.exit_code, 0);
    EXPECT_TRUE(unpacked.output == read_file(inputs / std::to_string(i))) << "output " << i;
  }
  EXPECT_FALSE(worker.wait(0).has_value()) << worker.output();
  EXPECT_EQ(worker.pid(), wpid);

  // A command's input_file relative to the experiment travels with the submission: the
  // master resolves it in the job's directory, and each output (cat of it) is that file.
  const auto sub = dir.path() / "elsewhere";
  fs::create_directories(sub / "data");
  const std::string text = "line one\nline two\n";
  write_file(sub / "data" / "in.txt", text);
  const auto cat = write_file(sub / "cat.toml", "[[app]]\nname = \"cat\"\nkind = \"command\"\nargv = [\"cat\"]\n"
                                                "input_file = \"data/in.txt\"\ntasks = 4\noutput_file = \"{index}.txt\"\n");
  const auto r4 = run_command("cd / && " + treefarm_bin + " submit " + cat + " --to " + sep + " --out " +
                              (dir.path() / "out4").string() + " --timeout 120");
  ASSERT_EQ(r4.exit_code, 0) << r4.output << master.output();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(read_file(dir.path() / "out4" / "outputs" / "cat" / (std::to_string(i) + ".txt")), text) << i;

  kill(master.pid(), SIGTERM);
  EXPECT_TRUE(master.wait(20).has_value()) << master.output();
  EXPECT_TRUE(worker.wait(20).has_value()) << worker.output();
}

}  // namespace

// `lp` on a live tree (docs/serve.md, "Calibration and the lp policy"): the served master
// calibrates the tree as it is — the nodes that joined, each one's parent recorded — and a
// node-less experiment sent with that calibration runs on that tree with the LP beside it.
// `compare --to` without --calibration does the same once, then runs all six policies,
// lp included, on the same workers: none restarts.
TEST(Serve, CompareOnALiveTreeCalibratesItInPlaceAndRunsEveryPolicyLpIncluded) {
  TempDir dir;
  const std::string tag = "sc" + std::to_string(getpid());
  const std::string w1 = tag + "w1", w2 = tag + "w2";
  auto [served, inner, leaf, mep, sep] = start_depth_two(dir, w1, w2);
  ASSERT_TRUE(leaf) << served->output() << (inner ? inner->output() : "");
  Child& master = *served;
  // w2 reached w1, which keeps its Hello for the next run (docs/serve.md, "How it works").
  ASSERT_TRUE(wait_until([&] { return leaf->output().find("no run now; waiting") != std::string::npos; }, 30))
      << inner->output() << leaf->output();
  const auto links1 = tcp_connections(inner->pid()), links2 = tcp_connections(leaf->pid());
  ASSERT_EQ(links1.size(), 2u) << "w1: to its parent and from its child";
  ASSERT_EQ(links2.size(), 1u) << "w2: to its parent";
  const auto exp = write_file(dir.path() / "live.toml", live_experiment(100));

  // The tree as it is, measured in place: both workers, each with its parent and kernels.
  const auto cal_file = (dir.path() / "cal.json").string();
  const auto cal = run_command(treefarm_bin + " calibrate " + exp + " --to " + sep + " --out " + cal_file);
  ASSERT_EQ(cal.exit_code, 0) << cal.output << master.output();
  const auto c = nlohmann::json::parse(read_file(cal_file));
  std::map<std::string, nlohmann::json> nodes;
  for (const auto& n : c.at("nodes")) nodes[n.at("name").get<std::string>()] = n;
  ASSERT_EQ(nodes.size(), 3u) << c.dump(1);
  EXPECT_EQ(nodes.at(w1).value("parent", ""), "m") << c.dump(1);
  EXPECT_EQ(nodes.at(w2).value("parent", ""), w1) << c.dump(1);
  EXPECT_FALSE(nodes.at("m").contains("parent")) << c.dump(1);
  for (const auto& w : {w1, w2}) {
    EXPECT_GT(nodes.at(w).at("task_seconds").value("mm", 0.0), 0.0) << c.dump(1);
    EXPECT_GT(nodes.at(w).at("task_seconds").value("nop", 0.0), 0.0) << c.dump(1);
    EXPECT_GT(nodes.at(w).value("link_bandwidth", 0.0), 0.0) << c.dump(1);
  }

  // lp with that calibration: every task once, the LP's prediction beside each application.
  const auto lp = run_command(treefarm_bin + " submit " + exp + " --to " + sep + " --calibration " + cal_file +
                              " --policy lp --timeout 150 --out " + (dir.path() / "lp").string());
  ASSERT_EQ(lp.exit_code, 0) << lp.output << master.output();
  {
    const auto r = nlohmann::json::parse(read_file(dir.path() / "lp" / "results.json"));
    EXPECT_EQ(r.at("policy").get<std::string>(), "lp");
    const auto per_node = treefarm::test_support::every_task_once(r);
    // The depth-2 worker computes unless the LP's plan leaves it idle, which it then says
    // (under lp a node the plan gives nothing stays idle, docs/policies.md).
    const bool planned_idle = leaf->output().find("the LP's plan gives this node no tasks") != std::string::npos;
    const auto by_w2 = per_node.count(w2) ? per_node.at(w2) : 0;
    if (planned_idle)
      EXPECT_EQ(by_w2, 0u) << "idle by its plan, yet computed" << leaf->output();
    else
      EXPECT_GT(by_w2, 0u) << "the depth-2 worker computed nothing" << leaf->output();
    for (const auto& a : r.at("apps")) EXPECT_GT(a.value("predicted", 0.0), 0.0) << a.dump();
  }

  // A calibration without parents (an older file) cannot give the tree's shape: refused at
  // submission, saying what to do.
  auto old = c;
  for (auto& n : old.at("nodes")) n.erase("parent");
  const auto old_file = write_file(dir.path() / "old-cal.json", old.dump());
  const auto refused = run_command(treefarm_bin + " submit " + exp + " --to " + sep + " --calibration " + old_file +
                                   " --policy lp --timeout 60");
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("does not record its nodes' parents"), std::string::npos) << refused.output;

  // compare --to, no --calibration: calibrated in place once, then every policy.
  const auto cmp = run_command(treefarm_bin + " compare " + exp + " --to " + sep + " --timeout 150 --out " +
                               (dir.path() / "cmp").string());
  ASSERT_EQ(cmp.exit_code, 0) << cmp.output << master.output();
  EXPECT_NE(cmp.output.find("calibrating in place"), std::string::npos) << cmp.output;
  const auto doc = nlohmann::json::parse(read_file(dir.path() / "cmp" / "compare.json"));
  std::set<std::string> ran;
  for (const auto& p : doc.at("policies")) ran.insert(p.at("name").get<std::string>());
  EXPECT_EQ(ran, (std::set<std::string>{"fcfs", "cgbc", "pbc", "lp", "data-centric", "price"})) << doc.dump(1);
  for (const auto& policy : ran) {
    const auto r = nlohmann::json::parse(read_file(dir.path() / "cmp" / policy / "results.json"));
    EXPECT_EQ(r.at("policy").get<std::string>(), policy);
    treefarm::test_support::every_task_once(r);
    for (const auto& a : r.at("apps")) EXPECT_GT(a.value("predicted", 0.0), 0.0) << policy << ": " << a.dump();
  }

  // Nine runs (two calibrations, lp, six policies): the same two workers throughout.
  EXPECT_FALSE(inner->wait(0).has_value()) << inner->output();
  EXPECT_FALSE(leaf->wait(0).has_value()) << leaf->output();
  EXPECT_EQ(tcp_connections(inner->pid()), links1) << inner->output();
  EXPECT_EQ(tcp_connections(leaf->pid()), links2) << leaf->output();
  EXPECT_EQ(count_of(inner->output(), "staying connected for the next one"), 9u) << inner->output();

  kill(master.pid(), SIGTERM);
  const auto mrc = master.wait(20);
  ASSERT_TRUE(mrc.has_value()) << master.output();
  EXPECT_EQ(*mrc, 0) << master.output();
  for (auto* w : {inner.get(), leaf.get()}) EXPECT_TRUE(w->wait(20).has_value()) << w->output();
}

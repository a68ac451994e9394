// The served tree's robustness (docs/serve.md), with real processes on loopback: a run that
// is cancelled — while queued, right after it started, in the middle — or that fails to
// start leaves the tree whole (a depth-2 tree m → w1 → w2: the next experiment is computed
// by both workers, no worker restarts or loses its parent); the client's errors: a closed
// port is answered within 2 s, HOST:PORT without tcp:// is accepted, a bad endpoint is a
// usage error (2), a bad experiment file gets exit code 3 naming the user's own file, and
// a failed run's reason reaches the submitter.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/integration/ServedMaster.hpp"
#include "tests/support/EveryTaskOnce.hpp"

using namespace treefarm::testing;

namespace {


/// A served master m, w1 under it, w2 under w1.
struct ServedChain {
  std::unique_ptr<Child> master, w1, w2;
  std::string sep;  ///< the submit channel
  std::string w1_name, w2_name;

  /// Empty once the three are up and both workers wait; else what went wrong.
  std::string start(const TempDir& dir, const std::vector<std::string>& master_extra = {}) {
    const std::string tag = "ch" + std::to_string(getpid());
    w1_name = tag + "w1";
    w2_name = tag + "w2";
    // An ipc:// channel: `treefarm cancel` from another process is the same user's (docs/security.md).
    master = std::make_unique<Child>(
        served_master_args(dir, {.ipc = true, .live_wait = "20", .fast_heartbeats = true, .extra = master_extra}),
        dir.path() / "master.log");
    const auto mep = wait_for_line(dir.path() / "m.ep");
    sep = wait_for_line(dir.path() / "submit.ep");
    if (mep.empty() || sep.empty()) return "master not ready: " + master->output();
    std::vector<std::string> b{worker_bin, "--parent", mep, "--name", w1_name, "--cores", "1", "--ready-file",
                               (dir.path() / "w1.ep").string()};
    b.insert(b.end(), fast_heartbeats.begin(), fast_heartbeats.end());
    w1 = std::make_unique<Child>(b, dir.path() / "w1.log");
    const auto w1ep = wait_for_line(dir.path() / "w1.ep");
    if (w1ep.empty()) return "w1 not ready: " + w1->output();
    std::vector<std::string> c{worker_bin, "--parent", w1ep, "--name", w2_name, "--cores", "1", "--listen", ""};
    c.insert(c.end(), fast_heartbeats.begin(), fast_heartbeats.end());
    w2 = std::make_unique<Child>(c, dir.path() / "w2.log");
    if (!wait_until([&] { return w2->output().find("no run now; waiting") != std::string::npos; }, 30))
      return "w2 does not wait under w1: " + w1->output() + w2->output();
    return {};
  }
  std::string logs() const { return "--- master\n" + master->output() + "--- w1\n" + w1->output() + "--- w2\n" + w2->output(); }
};

std::string live_experiment(std::uint64_t tasks) {
  return "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 128\ntasks = " + std::to_string(tasks) +
         "\n[[app]]\nname = \"nop\"\nkernel = \"noop\"\nbytes = 4096\ntasks = " + std::to_string(tasks) +
         "\n[run]\nbuffer = 4\n";
}

nlohmann::json status_of(const std::string& sep) {
  const auto r = run_command(treefarm_bin + " status --json --to " + sep);
  if (r.exit_code != 0 || r.output.find('{') == std::string::npos) return nlohmann::json::object();
  return nlohmann::json::parse(r.output.substr(r.output.find('{')), nullptr, false);
}

/// Tasks done so far in the running experiment (0 if none runs).
std::uint64_t running_done(const std::string& sep) {
  const auto s = status_of(sep);
  if (!s.is_object() || !s.contains("running") || !s["running"].is_object()) return 0;
  std::uint64_t done = 0;
  for (const auto& a : s["running"].value("apps", nlohmann::json::array())) done += a.value("done", std::uint64_t{0});
  return done;
}

/// Submits a small experiment and checks that both workers computed some of its tasks.
void next_experiment_uses_both(const TempDir& dir, const ServedChain& t, const std::string& label) {
  const auto exp = write_file(dir.path() / (label + ".toml"), live_experiment(300));
  const auto out = dir.path() / label;
  const auto r = run_command(treefarm_bin + " submit " + exp + " --to " + t.sep + " --out " + out.string() + " --timeout 120");
  ASSERT_EQ(r.exit_code, 0) << label << "\n" << r.output << t.logs();
  const auto per_node = treefarm::test_support::every_task_once(nlohmann::json::parse(read_file(out / "results.json")));
  for (const auto& w : {t.w1_name, t.w2_name})
    EXPECT_GT(per_node.count(w) ? per_node.at(w) : 0u, 0u) << label << ": " << w << " computed nothing\n" << t.logs();
}

void expect_no_lost_parent(const ServedChain& t) {
  for (auto* w : {t.w1.get(), t.w2.get()}) {
    EXPECT_FALSE(w->wait(0).has_value()) << t.logs();
    EXPECT_EQ(w->output().find("lost the parent"), std::string::npos) << t.logs();
  }
}

TEST(ServeChannel, CancelWhileQueuedRightAfterStartAndMidRunThenTheNextExperimentUsesEveryWorker) {
  TempDir dir;
  ServedChain t;
  const auto why = t.start(dir);
  ASSERT_TRUE(why.empty()) << why;
  const auto long_exp = write_file(dir.path() / "long.toml", live_experiment(20000));

  // Experiment 1 runs; experiment 2 waits in the queue and is cancelled there.
  Child first({treefarm_bin, "submit", long_exp, "--to", t.sep, "--timeout", "120"}, dir.path() / "submit1.log");
  ASSERT_TRUE(wait_until([&] { return first.output().find("experiment 1 started") != std::string::npos; }, 30)) << first.output();
  Child second({treefarm_bin, "submit", long_exp, "--to", t.sep, "--timeout", "120"}, dir.path() / "submit2.log");
  ASSERT_TRUE(wait_until([&] { return second.output().find("queued") != std::string::npos; }, 30)) << second.output();
  const auto q = run_command(treefarm_bin + " cancel 2 --to " + t.sep);
  EXPECT_EQ(q.exit_code, 0) << q.output;
  EXPECT_EQ(second.wait(30), std::optional<int>(130)) << second.output();

  // Experiment 1, in the middle of its run (tasks done on the workers).
  ASSERT_TRUE(wait_until([&] { return running_done(t.sep) >= 50; }, 60)) << t.logs();
  const auto mid = run_command(treefarm_bin + " cancel 1 --to " + t.sep);
  EXPECT_EQ(mid.exit_code, 0) << mid.output;
  EXPECT_EQ(first.wait(60), std::optional<int>(130)) << first.output() << t.logs();
  next_experiment_uses_both(dir, t, "after-mid-run");

  // Experiment 4, cancelled as soon as its submitter hears it started.
  Child fourth({treefarm_bin, "submit", long_exp, "--to", t.sep, "--timeout", "120"}, dir.path() / "submit4.log");
  ASSERT_TRUE(wait_until([&] { return fourth.output().find("started") != std::string::npos; }, 30)) << fourth.output();
  const auto early = run_command(treefarm_bin + " cancel 4 --to " + t.sep);
  EXPECT_EQ(early.exit_code, 0) << early.output;
  EXPECT_EQ(fourth.wait(60), std::optional<int>(130)) << fourth.output() << t.logs();
  next_experiment_uses_both(dir, t, "after-start");

  expect_no_lost_parent(t);
  // SIGTERM of the served master ends the workers promptly (told, not a rejoin loop).
  kill(t.master->pid(), SIGTERM);
  EXPECT_EQ(t.master->wait(20), std::optional<int>(0)) << t.logs();
  EXPECT_TRUE(t.w1->wait(15).has_value()) << t.logs();
  EXPECT_TRUE(t.w2->wait(15).has_value()) << t.logs();
}

TEST(ServeChannel, ASubmissionThatFailsToStartLeavesTheTreeWholeAndItsSubmitterHearsWhy) {
  TempDir dir;
  ServedChain t;
  std::vector<std::string> extra;  // command applications, where the master must allow them
  if (run_command(master_bin + " --help").output.find("--allow-commands") != std::string::npos)
    extra.push_back("--allow-commands");
  const auto why = t.start(dir, extra);
  ASSERT_TRUE(why.empty()) << why;
  // An argument too long for the wire's Welcome: refused at submission or failed at start,
  // either way with its reason printed by the submitter, and nothing else harmed.
  const auto huge = write_file(dir.path() / "huge.toml", "[[app]]\nname = \"x\"\nkind = \"command\"\nargv = [\"echo\", \"" +
                                                             std::string(5000, 'a') + "\"]\nbytes = 10\ntasks = 3\n");
  const auto r = run_command(treefarm_bin + " submit " + huge + " --to " + t.sep + " --timeout 60");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("too long"), std::string::npos) << r.output << t.logs();
  next_experiment_uses_both(dir, t, "after-failed-start");
  next_experiment_uses_both(dir, t, "and-again");
  expect_no_lost_parent(t);
}

/// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ServeChannel, AClosedPortFailsWithinTwoSecondsAndTheEndpointFormIsChecked) {
  TempDir dir;
  const auto exp = write_file(dir.path() / "x.toml", live_experiment(5));
  const std::string port = std::to_string(closed_port());
  for (const std::string& to : {"tcp://127.0.0.1:" + port, "127.0.0.1:" + port}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_command(treefarm_bin + " submit " + exp + " --to " + to);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("connection refused"), std::string::npos) << r.output;
    // The bound is 2 s (docs/serve.md); 3 s here leaves room for a loaded machine.
    EXPECT_LT(took, 3.0) << to << ": " << r.output;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto st = run_command(treefarm_bin + " status --to 127.0.0.1:" + port);
  EXPECT_EQ(st.exit_code, 1) << st.output;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0) << st.output;
  // Not an endpoint: a usage error saying the form expected.
  const auto bad = run_command(treefarm_bin + " submit " + exp + " --to localhost");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("tcp://HOST:PORT"), std::string::npos) << bad.output;
}

TEST(ServeChannel, ABadFileGetsExitThreeNamingTheUsersFileAndAFailedRunItsReason) {
  TempDir dir;
  Child master(served_master_args(dir, {.live_wait = "1"}), dir.path() / "master.log");
  const auto sep = wait_for_line(dir.path() / "submit.ep");
  ASSERT_FALSE(sep.empty()) << master.output();
  // Submitted without tcp:// (HOST:PORT is accepted).
  const std::string host_port = sep.substr(sep.find("://") + 3);
  const auto bad = write_file(dir.path() / "bad.toml", "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = -3\ntasks = 5\n");
  const auto r = run_command(treefarm_bin + " submit " + bad + " --to " + host_port);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find(bad + ":4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("app[0].n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("job-"), std::string::npos) << "names the master's copy: " << r.output;
  // Too large for a served master: refused before it is sent, naming the file.
  const auto big = write_file(dir.path() / "big.toml", "# " + std::string(5u << 20, 'x') + "\n" + live_experiment(5));
  const auto b = run_command(treefarm_bin + " submit " + big + " --to " + sep);
  EXPECT_EQ(b.exit_code, 3) << b.output;
  EXPECT_NE(b.output.find(big), std::string::npos) << b.output;
  // No worker joins: the run fails and its submitter hears why.
  const auto ok = write_file(dir.path() / "ok.toml", live_experiment(5));
  const auto n = run_command(treefarm_bin + " submit " + ok + " --to " + sep + " --timeout 60");
  EXPECT_EQ(n.exit_code, 1) << n.output;
  EXPECT_NE(n.output.find("no node joined within 1 s"), std::string::npos) << n.output << master.output();
  kill(master.pid(), SIGTERM);
  EXPECT_TRUE(master.wait(20).has_value()) << master.output();
}

}  // namespace

namespace {
/// True once `pid` catches SIGTERM (its handler is installed: /proc/PID/status SigCgt).
bool catches_sigterm(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(f, line);)
    if (line.starts_with("SigCgt:")) {
      const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGTERM - 1)) & 1u;
    }
  return false;
}
}  // namespace

// A SIGTERM that arrives as soon as the served master can catch it, before its tree and
// channel are set up (the dashboard starts first and widens that window), still ends it.
TEST(ServeChannel, ASigtermBeforeTheServedTreeIsUpEndsTheMaster) {
  TempDir dir;
  for (int round = 0; round < 3; ++round) {
    Child master({master_bin, "--serve", "--name", "m", "--listen", "tcp://127.0.0.1:0", "--bind",
                  "ipc://" + (dir.path() / ("submit" + std::to_string(round) + ".sock")).string(), "--state-dir",
                  (dir.path() / ("state" + std::to_string(round))).string(), "--dashboard", "127.0.0.1:0"},
                 dir.path() / ("m" + std::to_string(round) + ".log"));
    ASSERT_TRUE(wait_until([&] { return catches_sigterm(master.pid()) || master.wait(0); }, 30)) << master.output();
    ASSERT_EQ(::kill(master.pid(), SIGTERM), 0);
    const auto rc = master.wait(15);
    ASSERT_TRUE(rc.has_value()) << "round " << round << ": still serving 15 s after a SIGTERM that came early\n"
                                << master.output();
    EXPECT_EQ(*rc, 0) << master.output();
  }
}

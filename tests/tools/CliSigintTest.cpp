// Ctrl-C at every phase of every long-running command of the three executables: each
// command is started, the test waits for a marker of the phase in its output (or for the
// child process the phase starts), sends SIGINT and checks that the command ends with the
// documented code (runtime/node/ExitCode.hpp: 130) and a one-line message, leaves no
// process of its own running, nothing in its TMPDIR, and no output file as if complete.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/node/ExitCode.hpp"
#include "tests/integration/ProcessTestUtil.hpp"
#include "tests/support/TreeToml.hpp"

namespace treefarm::testing {
namespace {

/// One phase of one command.
struct Phase {
  std::string name;               ///< "run: running tasks"
  std::vector<std::string> argv;  ///< program (in the build's bin folder) and arguments; "{dir}": the test's folder
  /// The phase has begun: this text is in the output, or (starting "child:") a process the
  /// command started whose command line holds the rest runs.
  std::string marker;
  std::string message;                          ///< a line of the output starts with this
  std::vector<std::string> absent = {};         ///< files under {dir} that must not exist after
  std::function<void(const fs::path&)> after = {};  ///< further checks on {dir}
  int code = node::exit_interrupted;
};

/// Processes whose environment holds `mark` (a command's children inherit it).
std::vector<pid_t> processes_marked(const std::string& mark, const std::string& in_cmdline = "") {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env = read_file(entry.path() / "environ");
    std::replace(env.begin(), env.end(), '\0', '\n');
    if (("\n" + env).find("\nTREEFARM_TEST_MARK=" + mark + "\n") == std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(in_cmdline) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

class CliSigint : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string long_app = "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 100000000\n";
    write_file(dir_.path() / "long.toml", test_support::star_nodes_toml(2) + long_app);
    write_file(dir_.path() / "one.toml", test_support::star_nodes_toml(1) + long_app);
    write_file(dir_.path() / "sim.toml",
               "[[node]]\nname = \"master\"\ncores = 0\n[[node]]\nname = \"w1\"\nparent = \"master\"\ncores = 1\n"
               "speed = \"1Gf\"\nbandwidth = \"1Gbps\"\n[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 16\n"
               "tasks = 100000000\n");
  }
  std::string at(std::string text) const {
    for (std::size_t p; (p = text.find("{dir}")) != std::string::npos;) text.replace(p, 5, dir_.path().string());
    return text;
  }

  /// Starts `p`, waits for its phase, interrupts it and checks what it leaves.
  void interrupt(const Phase& p) {
    SCOPED_TRACE(p.name);
    const std::string mark = "sigint-" + std::to_string(::getpid()) + "-" + std::to_string(++started_);
    const fs::path tmp = dir_.path() / ("tmp-" + std::to_string(started_));
    fs::create_directories(tmp);
    const fs::path log = dir_.path() / ("log-" + std::to_string(started_));
    std::vector<std::string> argv = {"/usr/bin/env", "TMPDIR=" + tmp.string(), "TREEFARM_TEST_MARK=" + mark,
                                     bin_dir + "/" + p.argv.front()};
    for (std::size_t i = 1; i < p.argv.size(); ++i) argv.push_back(at(p.argv[i]));
    Child c(argv, log);
    const bool child_marker = p.marker.rfind("child:", 0) == 0;
    const bool began = wait_until(
        [&] {
          if (c.wait(0)) return true;
          return child_marker ? !processes_marked(mark, p.marker.substr(6)).empty()
                              : read_file(log).find(p.marker) != std::string::npos;
        },
        120);
    ASSERT_TRUE(began && !c.wait(0)) << "the phase never came (marker '" << p.marker << "'):\n" << read_file(log);
    ::kill(c.pid(), SIGINT);
    const auto start = std::chrono::steady_clock::now();
    const auto rc = c.wait(60);  // a hang detector, not a speed figure: the machine may be loaded
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string output = read_file(log);
    std::printf("[ sigint ] %-48s exit %3d after %.2f s\n", p.name.c_str(), rc.value_or(-1), took);
    ASSERT_TRUE(rc.has_value()) << "still running 60 s after SIGINT:\n" << output;
    EXPECT_EQ(*rc, p.code) << output;
    EXPECT_TRUE(std::regex_search(output, std::regex("(^|\n)" + std::regex_replace(p.message, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"))))
        << "no line starting '" << p.message << "':\n" << output;
    for (const char* crash : {"terminate called", "Aborted", "what():", "Segmentation", "killed by signal"})
      EXPECT_EQ(output.find(crash), std::string::npos) << crash << "\n" << output;
    // Nothing it started outlives it (children may take a moment to be reaped).
    EXPECT_TRUE(wait_until([&] { return processes_marked(mark).empty(); }, 10))
        << "left running: " << processes_marked(mark).size() << " process(es)\n" << output;
    for (pid_t pid : processes_marked(mark)) ::kill(pid, SIGKILL);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left in TMPDIR: " << left.front();
    for (const auto& f : p.absent) EXPECT_FALSE(fs::exists(at(f))) << f << " exists after an interruption";
    if (p.after) p.after(dir_.path());
  }

  TempDir dir_{"cli-sigint"};
  int started_ = 0;
};

TEST_F(CliSigint, TreefarmCommandsAtEveryPhase) {
  const std::string interrupted = "treefarm: error: interrupted";
  const std::vector<Phase> phases = {
      {"run: waiting for the workers", {"treefarm", "run", "{dir}/long.toml", "--quiet", "--out", "{dir}/r1"},
       "listening on", interrupted, {"{dir}/r1/results.json"}},
      {"run: running tasks", {"treefarm", "run", "{dir}/long.toml", "--quiet", "--out", "{dir}/r2"},
       "starting 100000000 tasks", interrupted, {"{dir}/r2/results.json"}},
      {"compare: running a policy",
       {"treefarm", "compare", "{dir}/one.toml", "--no-calibrate", "--policies", "fcfs", "--quiet", "--out", "{dir}/c1"},
       "starting 100000000 tasks", interrupted, {"{dir}/c1/compare.json", "{dir}/c1/fcfs/results.json"}},
      {"sweep: calibrating a size",
       {"treefarm", "sweep", "{dir}/one.toml", "--app", "mm", "--n", "64", "--quiet", "--out", "{dir}/s1"},
       "): calibrating", interrupted, {"{dir}/s1/sweep.png", "{dir}/s1/n-64/calibration.json"},
       [](const fs::path& dir) {  // the sizes done (none) are kept, marked interrupted
         const auto j = nlohmann::json::parse(read_file(dir / "s1" / "sweep.json"));
         EXPECT_TRUE(j.value("interrupted", false)) << j.dump();
         EXPECT_TRUE(j.at("points").empty()) << j.dump();
       }},
      {"simulate: simulating", {"treefarm", "simulate", "{dir}/sim.toml", "--quiet", "--out", "{dir}/sim"},
       "joined", interrupted, {"{dir}/sim/results.json"}},
      {"bench dispatch: its tree running", {"treefarm", "bench", "dispatch", "--tasks", "100000000"},
       "child:treefarm-worker", interrupted},
  };
  for (const auto& p : phases) interrupt(p);
}

TEST_F(CliSigint, MasterAndWorkerAtEveryPhase) {
  // A master and a worker started by the test: the other end of each phase.
  const auto ep = dir_.path() / "m.ep";
  const std::vector<Phase> alone = {
      {"treefarm-master: waiting for its workers", {"treefarm-master", "{dir}/long.toml", "--out", "{dir}/m1", "--quiet"},
       "listening on", "treefarm-master: error: interrupted", {"{dir}/m1/results.json"}},
      {"treefarm-worker: waiting for its parent",
       {"treefarm-worker", "--parent", "tcp://127.0.0.1:1", "--name", "lone", "--rejoin-timeout", "60"}, "listening on",
       "treefarm-worker: error: interrupted"},
  };
  for (const auto& p : alone) interrupt(p);

  // The master running and calibrating, interrupted: its worker is told and ends too.
  for (const auto& [what, extra, marker, absent] :
       std::vector<std::tuple<std::string, std::vector<std::string>, std::string, std::string>>{
           {"running tasks", {"--out", "{dir}/m2"}, "starting 100000000 tasks", "{dir}/m2/results.json"},
           {"calibrating", {"--calibrate-out", "{dir}/cal.json"}, "child 'w1' joined", "{dir}/cal.json"}}) {
    fs::remove(ep);
    const fs::path wlog = dir_.path() / ("w-" + what);
    std::unique_ptr<Child> worker;
    std::thread start_worker([&] {
      const std::string endpoint = wait_for_line(ep, 60);
      if (!endpoint.empty())
        worker = std::make_unique<Child>(std::vector<std::string>{worker_bin, "--parent", endpoint, "--name", "w1",
                                                                  "--cores", "1", "--rejoin-timeout", "1"},
                                         wlog);
    });
    Phase p{"treefarm-master: " + what, {"treefarm-master", "{dir}/one.toml", "--quiet", "--ready-file", ep.string()},
            marker, "treefarm-master: error: interrupted", {absent}};
    p.argv.insert(p.argv.end(), extra.begin(), extra.end());
    interrupt(p);
    start_worker.join();
    ASSERT_TRUE(worker) << "the worker never started";
    EXPECT_TRUE(worker->wait(30).has_value()) << "the worker outlived its master:\n" << worker->output();
  }

  // The worker running tasks, interrupted: 130, and its master goes on.
  fs::remove(ep);
  Child master({master_bin, at("{dir}/one.toml"), "--quiet", "--ready-file", ep.string(), "--out", at("{dir}/m3")},
               dir_.path() / "master.log");
  const std::string endpoint = wait_for_line(ep, 60);
  ASSERT_FALSE(endpoint.empty()) << master.output();
  interrupt({"treefarm-worker: running tasks",
             {"treefarm-worker", "--parent", endpoint, "--name", "w1", "--cores", "1"},
             "joined",
             "treefarm-worker: error: interrupted"});
}

TEST_F(CliSigint, AServedTreeAndItsClients) {
  const fs::path tmp = dir_.path() / "serve-tmp";
  fs::create_directories(tmp);
  Child master({"/usr/bin/env", "TMPDIR=" + tmp.string(), master_bin, "--serve", "--ready-file",
                (dir_.path() / "s.ep").string(), "--bind-file", (dir_.path() / "b.ep").string()},
               dir_.path() / "serve.log");
  const std::string tree = wait_for_line(dir_.path() / "s.ep", 60);
  const std::string submit = wait_for_line(dir_.path() / "b.ep", 60);
  ASSERT_FALSE(tree.empty() || submit.empty()) << master.output();
  Child worker({worker_bin, "--parent", tree, "--name", "w1", "--cores", "1"}, dir_.path() / "w1.log");
  write_file(dir_.path() / "served.toml", "[[app]]\nname = \"mm\"\nkernel = \"matmul\"\nn = 64\ntasks = 100000000\n");

  interrupt({"status --watch: watching", {"treefarm", "status", "--to", submit, "--watch", "--interval", "0.2"},
             "queue:", "treefarm: error: interrupted; stopped watching"});
  // Ctrl-C on submit cancels its experiment and waits for its end (docs/serve.md): the
  // results.json that comes back says "cancelled".
  interrupt({"submit: its experiment running",
             {"treefarm", "submit", "{dir}/served.toml", "--to", submit, "--out", "{dir}/sub"},
             "started",
             "submit: interrupted: cancelling experiment",
             {},
             [](const fs::path& dir) {
               const auto j = nlohmann::json::parse(read_file(dir / "sub" / "results.json"));
               EXPECT_TRUE(j.value("cancelled", false)) << j.dump().substr(0, 300);
             }});

  // The served master itself: 130, its temporary state folder removed, its worker sent away.
  ::kill(master.pid(), SIGINT);
  const auto rc = master.wait(60);
  ASSERT_TRUE(rc.has_value()) << master.output();
  EXPECT_EQ(*rc, node::exit_interrupted) << master.output();
  EXPECT_NE(master.output().find("treefarm-master: error: interrupted; the served tree stopped"), std::string::npos)
      << master.output();
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "left in TMPDIR: " << left.front();
  EXPECT_TRUE(worker.wait(30).has_value()) << worker.output();
}

}  // namespace
}  // namespace treefarm::testing

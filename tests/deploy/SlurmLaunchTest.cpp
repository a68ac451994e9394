// `treefarm launch --slurm` inside a real Slurm allocation: the test starts munged,
// slurmctld and slurmd (Debian slurm-wlm, munge) for this one host, with a configuration,
// key, ports and state of its own in a temporary directory, runs `salloc ... treefarm
// launch --slurm`, and stops the daemons. Needs root and the Slurm binaries; skips with
// the reason otherwise (and fails if, with both, its daemons do not come up).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "tests/support/TreeToml.hpp"
#include "tests/support/TempDir.hpp"
#include "tools/deploy/ChildProcess.hpp"

namespace treefarm::deploy {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string why_not() {
  if (geteuid() != 0) return "needs root (slurmd and munged run as root)";
  for (const char* p : {"/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/srun", "/usr/bin/salloc"})
    if (!fs::exists(p)) return std::string(p) + " missing (apt-get install slurm-wlm munge)";
  return "";
}

// A one-host Slurm cluster in `dir`, for the lifetime of the object.
class MiniSlurm {
 public:
  explicit MiniSlurm(const fs::path& dir) : dir_(dir) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string name = host;
    name = name.substr(0, name.find('.'));
    std::random_device rd;
    const int port = 20000 + static_cast<int>(rd() % 20000);
    for (const char* d : {"state", "spool", "munge"}) fs::create_directories(dir_ / d);
    fs::permissions(dir_ / "munge", fs::perms::owner_all, fs::perm_options::replace);
    {
      std::ofstream key(dir_ / "munge" / "key", std::ios::binary);
      std::mt19937_64 rng(rd());
      for (int i = 0; i < 128; ++i) {
        const auto v = rng();
        key.write(reinterpret_cast<const char*>(&v), sizeof v);
      }
    }
    fs::permissions(dir_ / "munge" / "key", fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    const auto d = dir_.string();
    std::ofstream(dir_ / "slurm.conf")
        << "ClusterName=tftest\nSlurmctldHost=" << name << "(127.0.0.1)\nSlurmctldPort=" << port << "\nSlurmdPort=" << port + 1
        << "\nAuthType=auth/munge\nAuthInfo=socket=" << d << "/munge/sock\nCredType=cred/munge\nStateSaveLocation=" << d
        << "/state\nSlurmdSpoolDir=" << d << "/spool\nSlurmctldPidFile=" << d << "/ctld.pid\nSlurmdPidFile=" << d
        << "/d.pid\nSlurmctldLogFile=" << d << "/ctld.log\nSlurmdLogFile=" << d << "/d.log\n"
        << "SlurmUser=root\nSlurmdUser=root\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
        << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nReturnToService=2\nMpiDefault=none\n"
        << "SchedulerType=sched/builtin\nNodeName=" << name << " NodeAddr=127.0.0.1 CPUs=" << sysconf(_SC_NPROCESSORS_ONLN)
        << " State=UNKNOWN\nPartitionName=tf Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n";
    setenv("SLURM_CONF", (dir_ / "slurm.conf").c_str(), 1);
    munged_ = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/sbin/munged", "-F", "--force", "--socket=" + d + "/munge/sock", "--key-file=" + d + "/munge/key",
        "--pid-file=" + d + "/munge/pid", "--log-file=" + d + "/munge/log", "--seed-file=" + d + "/munge/seed"});
    for (int k = 0; k < 100 && !fs::exists(dir_ / "munge" / "sock"); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ctld_ = std::make_unique<ChildProcess>(std::vector<std::string>{"/usr/sbin/slurmctld", "-D", "-i", "-f", d + "/slurm.conf"});
    slurmd_ = std::make_unique<ChildProcess>(std::vector<std::string>{"/usr/sbin/slurmd", "-D", "-f", d + "/slurm.conf"});
    for (int k = 0; k < 200; ++k) {
      const auto [rc, state] = run_with_input({"sinfo", "-h", "-o", "%T"}, "", 5);
      if (rc == 0 && state.find("idle") != std::string::npos) {
        ready_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    problem_ = "the test's slurmctld/slurmd did not come up: " + ctld_->read_output() + slurmd_->read_output() +
               slurp(dir_ / "ctld.log").substr(0, 2000);
  }
  ~MiniSlurm() {
    for (auto* p : {&slurmd_, &ctld_, &munged_})
      if (*p) (*p)->terminate(5.0);
    unsetenv("SLURM_CONF");
  }
  bool ready() const { return ready_; }
  const std::string& problem() const { return problem_; }

 private:
  fs::path dir_;
  std::unique_ptr<ChildProcess> munged_, ctld_, slurmd_;
  bool ready_ = false;
  std::string problem_;
};

// The quickstart's tree and applications, fewer tasks.
const std::string quickstart = test_support::quickstart_nodes_toml() + test_support::quickstart_apps_toml(300, 600) +
                               test_support::multiport_run_toml(4);

// Processes whose command line mentions `needle` (the run's work directory).
std::vector<std::string> processes_mentioning(const std::string& needle) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const auto cmd = slurp(e.path() / "cmdline");
    if (cmd.find(needle) != std::string::npos) out.push_back(e.path().filename().string() + " " + cmd);
  }
  return out;
}

TEST(SlurmLaunch, QuickstartInAnAllocationCompletesEveryTaskExactlyOnce) {
  if (const auto why = why_not(); !why.empty()) GTEST_SKIP() << "Slurm launch test skipped: " << why;
  test_support::TempDir dir("slurm-launch");
  MiniSlurm slurm(dir.path());
  // Root and the binaries are here: daemons of the test's own that do not come up are a
  // failure of the test, not a reason to skip it.
  ASSERT_TRUE(slurm.ready()) << slurm.problem();
  std::ofstream(dir.path() / "experiment.toml") << quickstart;
  const auto work = dir.path() / "work";
  fs::create_directories(work);
  const auto out = dir.path() / "out";
  const auto [rc, output] = run_with_input(
      {"salloc", "--nodes=1", "--ntasks=1", "--overcommit", "--quiet", "--time=5", std::string(TREEFARM_BIN_DIR) + "/treefarm",
       "launch", (dir.path() / "experiment.toml").string(), "--slurm", "--out", out.string(), "--work-dir", work.string(),
       "--timeout", "100"},
      "", 150);
  ASSERT_EQ(rc, 0) << output;
  const auto results = nlohmann::json::parse(slurp(out / "results.json"));
  std::map<std::string, std::set<std::uint64_t>> ids;
  for (const auto& t : results.at("tasks"))
    EXPECT_TRUE(ids[t.at("app").get<std::string>()].insert(t.at("id").get<std::uint64_t>()).second) << t.dump();
  for (const auto& a : results.at("apps")) {
    EXPECT_EQ(a.at("completed"), a.at("tasks")) << a.dump();
    EXPECT_EQ(a.at("wrong"), 0) << a.dump();
    EXPECT_EQ(ids[a.at("name").get<std::string>()].size(), a.at("tasks").get<std::size_t>());
  }
  const auto summary = nlohmann::json::parse(slurp(out / "launch.json"));
  EXPECT_EQ(summary.at("outcome"), "completed");
  EXPECT_EQ(summary.at("transport"), "srun");
  EXPECT_EQ(summary.at("nodes").size(), 5u);
  // The job is gone, and so is every process and file of the run.
  // A job may still be completing (state CG) for a moment after the launch returns.
  int qrc = -1;
  std::string queue;
  for (int k = 0; k < 100; ++k) {
    std::tie(qrc, queue) = run_with_input({"squeue", "-h"}, "", 10);
    if (qrc != 0 || queue.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(qrc, 0);
  EXPECT_EQ(queue, "");
  EXPECT_TRUE(fs::is_empty(work)) << work;
  std::vector<std::string> left;
  for (int k = 0; k < 20 && !(left = processes_mentioning(work.string())).empty(); ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(left, std::vector<std::string>{});
}

}  // namespace
}  // namespace treefarm::deploy

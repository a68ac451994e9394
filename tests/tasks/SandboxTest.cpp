// Containment of command tasks (tasks/Sandbox, tasks/Cgroup; docs/command-tasks.md,
// "Containment"): real programs that try to outlive their task, widen their cores, flood
// their output or read the worker's files. They need root (to run tasks as another user
// and to make cgroups) and skip without it. CTest label `adversarial`.
#include "tasks/Sandbox.hpp"

#include <gtest/gtest.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tasks/Cgroup.hpp"
#include "tasks/CommandTask.hpp"
#include "tasks/SandboxOptions.hpp"
#include "tests/support/Affinity.hpp"
#include "tests/support/TestApps.hpp"

extern char** environ;

namespace treefarm::tasks {
namespace {

namespace fs = std::filesystem;

model::AppSpec command(std::vector<std::string> argv) {
  model::AppSpec a = test_support::command(std::move(argv));
  a.send_output = true;  // the tests read what the program printed
  return a;
}

std::string text_of(const CommandOutcome& o) {
  return o.output ? std::string(reinterpret_cast<const char*>(o.output->data()), o.output->size()) : std::string();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// A number no other process on the machine has in its command line: sleep takes it as
/// its duration (1000.N seconds), the tests look for it in /proc/PID/cmdline.
std::string unique_marker() {
  std::random_device rd;
  return "1000." + std::to_string(::getpid()) + std::to_string(rd() % 1000000);
}

/// Processes whose command line holds `marker` (zombies have none: they are dead).
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(marker) != std::string::npos) found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

/// Kills what a failed test left behind, so that one failure does not leave sleepers.
struct KillLeftovers {
  std::string marker;
  ~KillLeftovers() {
    for (pid_t p : processes_with(marker)) ::kill(p, SIGKILL);
  }
};

class Sandboxed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: runs tasks as another user and makes cgroups";
    configure_sandbox(SandboxOptions{});  // as a worker started as root without options
  }
  void TearDown() override {
    if (::geteuid() == 0) configure_sandbox(SandboxOptions{});
  }
  /// Needs the cgroups of this machine (v1 or v2); skips the test if they are not there.
  void need_cgroups() {
    if (CgroupHost::get() == nullptr) GTEST_SKIP() << "cgroups unavailable: " << CgroupHost::unavailable_reason();
  }
};

TEST_F(Sandboxed, RunsAsNobodyInItsOwnFolderWithACleanEnvironment) {
  const std::string marker_name = "TREEFARM_TEST_LEAK_" + std::to_string(::getpid());
  ::setenv(marker_name.c_str(), "secret-of-the-worker", 1);
  const auto o = run_command(command({"sh", "-c", "id -u; id -G; pwd; env"}), {}, 7, {});
  ::unsetenv(marker_name.c_str());
  ASSERT_FALSE(o.failed) << o.error;
  const auto lines = lines_of(text_of(o));
  ASSERT_GE(lines.size(), 3u) << text_of(o);
  EXPECT_EQ(lines[0], "65534") << "uid of the task";
  EXPECT_EQ(lines[1], "65534") << "groups of the task: nogroup only, the worker's supplementary groups dropped";
  const std::string work = lines[2];
  EXPECT_NE(work, fs::current_path().string()) << "not the worker's working folder";
  EXPECT_NE(work.find("/treefarm-task-"), std::string::npos) << work;
  EXPECT_FALSE(fs::exists(work)) << "the task's folder is removed after the task";

  const std::string env = text_of(o);
  EXPECT_EQ(env.find(marker_name), std::string::npos) << env;
  EXPECT_NE(env.find("\nPATH=/usr/local/bin:/usr/bin:/bin\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nHOME=" + work + "\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nLANG=C.UTF-8\n"), std::string::npos) << env;
  EXPECT_NE(env.find("\nTREEFARM_TASK_INDEX=7\n"), std::string::npos) << env;
  // No variable of the worker's environment reached it (but PATH and the two BLAS tuning
  // variables, which the task has by design).
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    if (var.rfind("PATH=", 0) == 0 || var.rfind("OPENBLAS_", 0) == 0 || var.rfind("LANG=", 0) == 0) continue;
    EXPECT_EQ(env.find("\n" + var + "\n"), std::string::npos) << "leaked: " << var;
  }
}

TEST_F(Sandboxed, RunAsRootOnlyWhenNamedAndAnotherUserOnlyByRoot) {
  SandboxOptions as_root;
  as_root.run_as = "root";
  configure_sandbox(as_root);
  const auto o = run_command(command({"id", "-u"}), {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(text_of(o), "0\n");
  SandboxOptions unknown;
  unknown.run_as = "treefarm-no-such-user";
  EXPECT_THROW(configure_sandbox(unknown), std::invalid_argument);

  // A worker that is not root runs tasks as itself and refuses to name another user.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
    try {
      resolve_run_as("root");
      ::_exit(1);
    } catch (const std::invalid_argument& e) {
      if (std::string(e.what()).find("only a worker running as root can run tasks as another user") == std::string::npos)
        ::_exit(2);
    }
    ::_exit(resolve_run_as("").uid == 65534 && !resolve_run_as("nobody").switch_user ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST_F(Sandboxed, AScratchFolderTheTaskUserCannotReachFailsTheTaskWithTheReason) {
  const fs::path closed = fs::temp_directory_path() / ("treefarm-closed-" + std::to_string(::getpid()));
  fs::create_directories(closed);
  fs::permissions(closed, fs::perms::owner_all);  // 0700, root's: nobody cannot enter
  SandboxOptions opt;
  opt.scratch = closed.string();
  configure_sandbox(opt);
  const auto o = run_command(command({"true"}), {}, 0, {});
  configure_sandbox(SandboxOptions{});
  std::error_code ec;
  const bool left = !fs::is_empty(closed, ec);
  fs::remove_all(closed, ec);
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("'true' cannot enter its folder (can the run-as user reach the scratch folder?): Permission denied"),
            std::string::npos)
      << o.error;
  EXPECT_FALSE(left) << "the task's folder was not removed";
}

TEST_F(Sandboxed, ABackgroundProcessDoesNotOutliveItsTask) {
  need_cgroups();
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  const auto o = run_command(command({"sh", "-c", "sleep " + marker + " & echo started"}), {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(text_of(o), "started\n");
  EXPECT_TRUE(processes_with(marker).empty()) << "sleep " << marker << " outlived its task";
}

TEST_F(Sandboxed, SetsidAndDoubleForkDoNotEscapeTheEndOrTheTimeout) {
  need_cgroups();
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  // Each leaves its session and process group, as daemons do.
  const std::string escape = "setsid sleep " + marker + " & setsid sh -c 'sleep " + marker + " &' ; ";
  const auto ended = run_command(command({"sh", "-c", escape + "sleep 0.5; echo done"}), {}, 0, {});
  ASSERT_FALSE(ended.failed) << ended.error;
  EXPECT_TRUE(processes_with(marker).empty()) << "a detached sleep outlived its task";

  auto app = command({"sh", "-c", escape + "setsid sleep " + marker});
  app.timeout = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const auto timed = run_command(app, {}, 0, {});
  EXPECT_TRUE(timed.failed);
  EXPECT_NE(timed.error.find("timed out after"), std::string::npos) << timed.error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
  EXPECT_TRUE(processes_with(marker).empty()) << "a detached sleep survived the timeout";
}

TEST_F(Sandboxed, WithoutCgroupsTheProcessGroupIsKilledButSetsidEscapes) {
  // The fallback's limit, as docs/command-tasks.md states it: this is what the cgroup is for.
  SandboxOptions no_cgroups;
  no_cgroups.cgroups = CgroupChoice::none;
  configure_sandbox(no_cgroups);
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  const auto o = run_command(command({"sh", "-c", "sleep " + marker + " &"}), {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_TRUE(processes_with(marker).empty()) << "the process group is killed at the end";
  // (The pause lets setsid leave the group before the task ends.)
  const auto escaped = run_command(command({"sh", "-c", "setsid sleep " + marker + " & sleep 0.5"}), {}, 0, {});
  ASSERT_FALSE(escaped.failed) << escaped.error;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(processes_with(marker).size(), 1u) << "without a cgroup a setsid process escapes";
}

TEST_F(Sandboxed, TheUnifiedHierarchyKillsWhatLeftTheSessionToo) {
  // cgroup v2 (here, or beside v1 on a hybrid machine, where it has no controllers but can
  // still kill a whole group: cgroup.kill).
  if (CgroupHost::get(CgroupChoice::v2) == nullptr)
    GTEST_SKIP() << "no usable cgroup v2 hierarchy: " << CgroupHost::unavailable_reason(CgroupChoice::v2);
  SandboxOptions v2;
  v2.cgroups = CgroupChoice::v2;
  configure_sandbox(v2);
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  const auto o = run_command(command({"sh", "-c", "setsid sleep " + marker + " & setsid sh -c 'sleep " + marker +
                                                      " &'; sleep 0.3; grep '^0::' /proc/self/cgroup"}),
                             {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_TRUE(processes_with(marker).empty()) << "a detached sleep outlived its task";
  const std::string line = text_of(o);  // "0::/.../treefarm-NS-PID/task-N"
  ASSERT_NE(line.find("/task-"), std::string::npos) << line;
  const auto* host = CgroupHost::get(CgroupChoice::v2);
  const std::string task = line.substr(line.rfind('/'), line.find('\n') - line.rfind('/'));
  EXPECT_TRUE(fs::exists(host->roots().front()));
  EXPECT_FALSE(fs::exists(host->roots().front() + task)) << host->roots().front() + task << " still exists";
}

TEST_F(Sandboxed, TasksetCannotWidenTheCoresOfTheTask) {
  need_cgroups();
  if (CgroupHost::get()->controllers().find("cpuset") == std::string::npos)
    GTEST_SKIP() << "the cgroups here have no cpuset controller for tasks";
  const auto cpus = test_support::affinity_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  const int mine = cpus.back();
  const auto o = run_command(command({"sh", "-c", "taskset -a -p -c " + std::to_string(cpus.front()) + "-" +
                                                      std::to_string(mine) + " $$ >/dev/null 2>&1; "
                                                      "grep Cpus_allowed_list /proc/self/status"}),
                             {}, 0, std::vector<int>{mine});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(text_of(o), "Cpus_allowed_list:\t" + std::to_string(mine) + "\n");
}

TEST_F(Sandboxed, OutputFloodIsStoppedWhileTheProgramRuns) {
  auto app = command({"sh", "-c", "yes; sleep 1000"});  // never ends by itself
  app.max_output_bytes = 1 << 20;
  app.timeout = 60;  // a safety net: the limit stops it long before
  const auto t0 = std::chrono::steady_clock::now();
  const auto o = run_command(app, {}, 0, {});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30);
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.output, nullptr);
  EXPECT_NE(o.error.find("output over max_output_bytes 1048576 (stopped while running)"), std::string::npos) << o.error;

  SandboxOptions small;
  small.file_bytes = 1 << 20;
  configure_sandbox(small);
  auto err = command({"sh", "-c", "yes >&2; sleep 1000"});
  err.timeout = 60;
  const auto e = run_command(err, {}, 0, {});
  EXPECT_TRUE(e.failed);
  EXPECT_NE(e.error.find("standard error over 1048576 bytes (stopped while running)"), std::string::npos) << e.error;
  const auto f = run_command(command({"dd", "if=/dev/zero", "of=big", "bs=65536", "count=32"}), {}, 0, {});
  EXPECT_TRUE(f.failed);
  EXPECT_NE(f.error.find("a file over 1048576 bytes (RLIMIT_FSIZE)"), std::string::npos) << f.error;
}

TEST_F(Sandboxed, AnOutputFileThatIsALinkToTheWorkersFilesIsRefused) {
  auto app = command({"ln", "-s", "/etc/shadow", "{output}"});
  const auto o = run_command(app, {}, 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_EQ(o.output, nullptr);
  EXPECT_NE(o.error.find("symbolic link"), std::string::npos) << o.error;
  const auto fifo = run_command(command({"mkfifo", "{output}"}), {}, 0, {});
  EXPECT_TRUE(fifo.failed);
  EXPECT_NE(fifo.error.find("not a regular file"), std::string::npos) << fifo.error;
}

TEST_F(Sandboxed, TheTaskCgroupHasItsLimitsAndIsRemovedAfterTheTask) {
  need_cgroups();
  SandboxOptions opt;
  opt.pids = 77;
  configure_sandbox(opt);
  auto app = command({"cat", "/proc/self/cgroup"});
  app.memory_per_task = 96u << 20;
  const auto o = run_command(app, {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  const auto* host = CgroupHost::get();
  ASSERT_NE(host, nullptr);
  // Its group in each hierarchy: ".../treefarm-NS-PID/task-N", gone now.
  int found = 0;
  for (const auto& line : lines_of(text_of(o))) {
    const auto at = line.find("-" + std::to_string(::getpid()) + "/task-");
    if (at == std::string::npos) continue;
    const std::string task = line.substr(line.rfind('/'));  // "/task-N"
    for (const auto& root : host->roots()) {
      EXPECT_TRUE(fs::exists(root)) << root;
      if (fs::exists(root + task)) ADD_FAILURE() << root + task << " still exists";
    }
    ++found;
  }
  EXPECT_GE(found, 1) << text_of(o);

  if (host->version() == CgroupHost::Version::v1) {
    // The task reads its own limits: the pids hierarchy's pids.max, the memory one's limit.
    const auto limits = run_command(
        [&] {
          auto a = command({"sh", "-c",
                            "cg() { echo /sys/fs/cgroup/$1$(grep \":$1:\" /proc/self/cgroup | cut -d: -f3); }; "
                            "cat $(cg pids)/pids.max $(cg memory)/memory.limit_in_bytes"});
          a.memory_per_task = 96u << 20;
          return a;
        }(),
        {}, 0, {});
    ASSERT_FALSE(limits.failed) << limits.error;
    EXPECT_EQ(text_of(limits), "77\n" + std::to_string(96u << 20) + "\n");
  }
}

TEST_F(Sandboxed, MemoryOverTheLimitKillsTheTaskAndSaysSo) {
  need_cgroups();
  if (CgroupHost::get()->controllers().find("memory") == std::string::npos) GTEST_SKIP() << "no memory controller";
  auto app = command({"dd", "if=/dev/zero", "of=/dev/null", "bs=256M", "count=1"});  // a 256 MiB buffer, filled
  app.memory_per_task = 32u << 20;
  const auto o = run_command(app, {}, 0, {});
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("memory over 33554432 bytes (killed by the kernel)"), std::string::npos) << o.error;
  app.memory_per_task = 512u << 20;  // the same program within its limit
  const auto p = run_command(app, {}, 0, {});
  EXPECT_FALSE(p.failed) << p.error;
}

TEST_F(Sandboxed, GroupsOfAWorkerThatIsGoneAreRemovedWithTheirProcesses) {
  need_cgroups();
  const auto* host = CgroupHost::get();
  // A worker killed with SIGKILL: its pid is free, its task's group still holds a sleeper.
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string own = fs::path(host->roots().front()).filename().string();  // treefarm-NS-PID
  const std::string stale = own.substr(0, own.rfind('-') + 1) + std::to_string(dead);
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  const pid_t sleeper = ::fork();
  ASSERT_GE(sleeper, 0);
  if (sleeper == 0) {
    ::execlp("sleep", "sleep", marker.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const std::string group = host->parents().front() + "/" + stale + "/task-0";
  ASSERT_TRUE(fs::create_directories(group)) << group;
  std::ofstream(group + "/cgroup.procs") << sleeper << std::flush;
  // At least this one: a test process that ran beside this one (ctest -j) may have left its own folder
  // too, and it is just as stale once that process is gone.
  EXPECT_GE(host->remove_stale(), 1);
  EXPECT_FALSE(fs::exists(host->parents().front() + "/" + stale));
  int status = 0;
  ASSERT_EQ(::waitpid(sleeper, &status, 0), sleeper);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  EXPECT_TRUE(fs::exists(host->roots().front())) << "this process's own folder stays";
}

TEST_F(Sandboxed, ShutdownKillsARunningTaskAndRefusesNewOnes) {
  need_cgroups();
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  CommandOutcome o;
  std::thread runner([&] { o = run_command(command({"sh", "-c", "setsid sleep " + marker + " & sleep " + marker}), {}, 0, {}); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (processes_with(marker).size() < 2 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(stop_all_commands(), 1u);
  runner.join();
  EXPECT_TRUE(o.failed);
  EXPECT_NE(o.error.find("the worker is shutting down"), std::string::npos) << o.error;
  EXPECT_TRUE(processes_with(marker).empty());
  const auto refused = run_command(command({"true"}), {}, 0, {});
  EXPECT_TRUE(refused.failed);
  EXPECT_NE(refused.error.find("the worker is shutting down"), std::string::npos) << refused.error;
  allow_commands();
  EXPECT_FALSE(run_command(command({"true"}), {}, 0, {}).failed);
}

}  // namespace
}  // namespace treefarm::tasks

namespace treefarm::tasks {
namespace {

// A worker that is not root: its tasks run as its own user, and without a cgroup it may
// make they are still killed with their process group. As root, the test runs itself
// again as nobody (and skips if nobody cannot execute the test binary).
TEST(NotRoot, AWorkerThatIsNotRootRunsTasksAsItselfAndKillsTheirProcessGroup) {
  if (::geteuid() == 0) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
        ::_exit(126);
      ::execl("/proc/self/exe", "tasks_sandbox_tests", "--gtest_filter=NotRoot.*", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    if (WEXITSTATUS(status) == 127) GTEST_SKIP() << "nobody cannot execute the test binary here";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the test failed as nobody (its output is above)";
    return;
  }
  configure_sandbox(SandboxOptions{});
  const std::string marker = unique_marker();
  KillLeftovers cleanup{marker};
  const auto o = run_command(command({"sh", "-c", "id -u; sleep " + marker + " &"}), {}, 0, {});
  ASSERT_FALSE(o.failed) << o.error;
  EXPECT_EQ(text_of(o), std::to_string(::geteuid()) + "\n");
  EXPECT_TRUE(processes_with(marker).empty()) << "the background sleep outlived its task";
  if (CgroupHost::get() == nullptr) {
    EXPECT_FALSE(CgroupHost::unavailable_reason().empty());
  }
  SandboxOptions other;
  other.run_as = "root";
  try {
    configure_sandbox(other);
    ADD_FAILURE() << "a worker that is not root accepted --run-as root";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("only a worker running as root can run tasks as another user"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace treefarm::tasks

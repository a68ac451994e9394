// runtime/zmq/GenerationRunner: what the node drivers of a ZeroMQ node see of its
// executor — jobs tagged by generation, and the executor's CPU quota period (a node's
// calibration measures over whole periods of it: runtime/node/CalibrationRuns.cpp).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/exec/ExecutorRunner.hpp"
#include "runtime/zmq/GenerationRunner.hpp"

namespace treefarm::zmq_node {
namespace {

exec::ExecutorConfig one_core() {
  exec::ExecutorConfig c;
  c.cores = {0};
  c.pin = false;
  return c;
}

// First in the file: it forks, before any test of this process started executor threads.
TEST(GenerationRunner, PassesOnTheExecutorsCpuQuotaPeriod) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (creates a cgroup with a CPU quota)";
  std::string root;
  for (const char* d : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"})
    if (std::filesystem::exists(std::string(d) + "/cpu.cfs_quota_us")) root = d;
  if (root.empty()) GTEST_SKIP() << "needs the cgroup v1 cpu controller (cpu.cfs_quota_us)";
  const std::string dir = root + "/treefarm-generation-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  std::ofstream(dir + "/cpu.cfs_period_us") << 50000;  // 0.05 s, not the default 0.1 s
  std::ofstream(dir + "/cpu.cfs_quota_us") << 40000;
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(dir + "/cgroup.procs") << ::getpid();
    exec::ExecutorRunner executor(one_core());
    GenerationRunner g(executor, {});
    const auto period = g.cpu_quota_period();
    // 0: passed on; 1: no period seen; 2: another one.
    ::_exit(!period ? 1 : (*period > 0.049 && *period < 0.051) ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: GenerationRunner reported no CPU quota period; 2: another period than 0.05 s";
}

TEST(GenerationRunner, JobsOfAnEarlierGenerationAreNotTakenForCurrentOnes) {
  exec::ExecutorRunner executor(one_core());
  GenerationRunner g(executor, {});
  const std::uint64_t first = 7;  // the tag of job 7 in generation 0 is 7
  EXPECT_EQ(g.current(first), std::optional<std::uint64_t>(7));
  g.next_generation();
  EXPECT_EQ(g.current(first), std::nullopt);
  EXPECT_EQ(g.current((std::uint64_t{1} << 48) | 7), std::optional<std::uint64_t>(7));
}

}  // namespace
}  // namespace treefarm::zmq_node

// tools/emulate/Platform: namespaces, shaped veth links, control groups, teardown and
// the cleanup of a crashed run.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <sys/resource.h>

#include "runtime/process/KernelFile.hpp"
#include "tests/emulate/EmulationTestSupport.hpp"
#include "tools/Process.hpp"
#include "tools/emulate/Program.hpp"
#include "tools/emulate/Emulate.hpp"
#include "tools/emulate/Platform.hpp"

namespace fs = std::filesystem;
using namespace treefarm::emulate;
using namespace treefarm::emulate::testing;

namespace {

// master -> a (16 Mbit/s, half a core on CPU 0) -> b (unshaped, no limits).
const char* const chain = R"(
[[node]]
name = "master"
cores = 0
cpu_quota = 0.25
[[node]]
name = "a"
parent = "master"
bandwidth = "16Mbps"
cpu_quota = 0.5
cpuset = "0"
[[node]]
name = "b"
parent = "a"
[[app]]
name = "ma"
kernel = "matadd"
n = 8
tasks = 1
)";

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST(TbfShape, RateIsInBitsAndBurstHoldsTenMilliseconds) {
  EXPECT_EQ(TbfShape::for_rate(1e6).tc_args(),
            (std::vector<std::string>{"tbf", "rate", "8000000bit", "burst", "32768", "latency", "50000us"}));
  const auto gigabit = TbfShape::for_rate(125e6);
  EXPECT_EQ(gigabit.burst, 1250000u);
  EXPECT_EQ(gigabit.tc_args()[2], "1000000000bit");
  EXPECT_THROW(TbfShape::for_rate(0), std::invalid_argument);
}

TEST(Platform, AddressPlanGivesEachEdgeItsOwnSlash30) {
  EXPECT_EQ(Platform::edge_address(1, true), "10.213.0.1");
  EXPECT_EQ(Platform::edge_address(1, false), "10.213.0.2");
  EXPECT_EQ(Platform::edge_address(2, true), "10.213.0.5");
  EXPECT_EQ(Platform::edge_address(65, false), "10.213.1.2");
  EXPECT_EQ(Platform::edge_address(16384, false), "10.213.255.254");
  EXPECT_THROW(Platform::edge_address(0, true), std::invalid_argument);
  EXPECT_THROW(Platform::edge_address(16385, true), std::invalid_argument);
  EXPECT_TRUE(Platform::is_emulation_name("tf1a2b-n0"));
  EXPECT_TRUE(Platform::is_emulation_name("tf1a2b-e12p"));
  EXPECT_FALSE(Platform::is_emulation_name("tf1a2b-e12"));
  EXPECT_FALSE(Platform::is_emulation_name("tf1A2b-n0"));
  EXPECT_FALSE(Platform::is_emulation_name("eth0"));
}

TEST(Platform, BuildsNamespacesShapedLinksAndCgroupsThenRemovesThem) {
  SKIP_UNLESS_EMULATION();
  const auto ex = experiment(chain);
  const auto prefix = fresh_prefix();
  PlatformOptions po;
  po.prefix = prefix;
  Platform p(ex, po);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(fs::exists(p.state_file()));

  const auto netns = run_checked({"ip", "netns", "list"});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(has(netns, prefix + "-n" + std::to_string(i))) << netns;

  // Both ends of the shaped link carry the token bucket; the unshaped one does not.
  const auto down = run_checked({"tc", "-n", p.netns(0), "qdisc", "show", "dev", p.parent_device(1)});
  const auto up = run_checked({"tc", "-n", p.netns(1), "qdisc", "show", "dev", p.device(1)});
  EXPECT_TRUE(has(down, "tbf") && has(down, "rate 16Mbit")) << down;
  EXPECT_TRUE(has(up, "tbf") && has(up, "rate 16Mbit")) << up;
  const auto free_link = run_checked({"tc", "-n", p.netns(2), "qdisc", "show", "dev", p.device(2)});
  EXPECT_FALSE(has(free_link, "tbf")) << free_link;

  // A program run as node a is in a's cgroups and namespace and reaches its parent.
  ASSERT_FALSE(p.cgroups(1).empty());
  auto cmd = p.wrap(1);
  for (const char* a : {"/bin/sh", "-c", "cat /proc/self/cgroup; ip -o -4 addr show; ip -o link show"}) cmd.push_back(a);
  const auto inside = run_checked(cmd);
  EXPECT_TRUE(has(inside, prefix + "-n1")) << inside;
  EXPECT_TRUE(has(inside, "10.213.0.2/30")) << inside;
  EXPECT_TRUE(has(inside, "10.213.0.5/30")) << inside;  // a is b's parent
  EXPECT_FALSE(has(inside, "10.213.0.1/30")) << inside;  // the master's end is elsewhere
  // a's limits are in force: a quota file (cgroup v1 cpu.cfs_quota_us or v2 cpu.max) and
  // a cpuset file exist among its groups, each with a's values.
  int quota_files = 0, cpuset_files = 0;
  for (const auto& dir : p.cgroups(1)) {
    if (fs::exists(dir + "/cpu.cfs_quota_us")) {
      ++quota_files;
      EXPECT_EQ(treefarm::process::read_kernel_file(dir + "/cpu.cfs_quota_us"), "50000");
    }
    if (fs::exists(dir + "/cpu.max")) {
      ++quota_files;
      EXPECT_EQ(treefarm::process::read_kernel_file(dir + "/cpu.max"), "50000 100000");
    }
    if (fs::exists(dir + "/cpuset.cpus")) {
      ++cpuset_files;
      EXPECT_EQ(treefarm::process::read_kernel_file(dir + "/cpuset.cpus"), "0");
    }
  }
  std::string groups;
  for (const auto& dir : p.cgroups(1)) groups += " " + dir;
  EXPECT_GE(quota_files, 1) << "no CPU quota file in a's groups:" << groups;
  EXPECT_GE(cpuset_files, 1) << "no cpuset file in a's groups:" << groups;
  // b has no limits: at most the group that counts its CPU time, which limits nothing.
  for (const auto& dir : p.cgroups(2)) {
    if (fs::exists(dir + "/cpu.cfs_quota_us")) {
      EXPECT_EQ(treefarm::process::read_kernel_file(dir + "/cpu.cfs_quota_us"), "-1");
    }
    if (fs::exists(dir + "/cpu.max")) {
      EXPECT_EQ(treefarm::process::read_kernel_file(dir + "/cpu.max").substr(0, 4), "max ");
    }
    if (fs::exists(dir + "/cpuset.cpus")) {
      EXPECT_NE(treefarm::process::read_kernel_file(dir + "/cpuset.cpus"), "0") << dir;
    }
  }
  // Each node's CPU time is counted (a node's whole cost per task): a busy
  // loop run as b adds to b's count what the kernel charged the child, and nothing to a's.
  if (const auto before = p.cpu_seconds(2)) {
    const auto a_before = p.cpu_seconds(1);
    struct rusage r0{}, r1{};
    getrusage(RUSAGE_CHILDREN, &r0);
    auto busy = p.wrap(2);
    for (const char* a : {"/bin/sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"}) busy.push_back(a);
    run_checked(busy);
    getrusage(RUSAGE_CHILDREN, &r1);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    const double charged = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
    const auto after = p.cpu_seconds(2);
    ASSERT_TRUE(after.has_value());
    EXPECT_GT(charged, 0.05);
    EXPECT_NEAR(*after - *before, charged, 0.1 * charged + 0.02);
    if (a_before) {
      EXPECT_NEAR(*p.cpu_seconds(1), *a_before, 0.005);
    }
  } else {
    std::cout << "note: no cpuacct controller on this machine; a node's CPU time is not counted\n";
  }
  EXPECT_EQ(p.parent_endpoint(1, "tcp://0.0.0.0:5555"), "tcp://10.213.0.1:5555");
  EXPECT_EQ(p.parent_endpoint(2, "tcp://0.0.0.0:6000"), "tcp://10.213.0.5:6000");

  EXPECT_TRUE(p.teardown().empty());
  EXPECT_EQ(leftovers(prefix), std::vector<std::string>{});
  EXPECT_TRUE(p.teardown().empty());  // idempotent
}

TEST(Platform, DestructorEndsProcessesAndRemovesEverything) {
  SKIP_UNLESS_EMULATION();
  const auto prefix = fresh_prefix();
  treefarm::tools::ProcessSet procs;
  {
    PlatformOptions po;
    po.prefix = prefix;
    Platform p(experiment(chain), po);
    auto cmd = p.wrap(1);
    cmd.insert(cmd.end(), {"sleep", "600"});
    procs.spawn("sleeper", cmd);
    EXPECT_FALSE(procs.wait(0, 0.3));  // still running inside the platform
  }
  EXPECT_TRUE(procs.wait(0, 5.0)) << "teardown left a process running in the namespace";
  EXPECT_EQ(leftovers(prefix), std::vector<std::string>{});
}

TEST(Platform, FailedSetupReportsTheStepAndRemovesWhatItCreated) {
  SKIP_UNLESS_EMULATION();
  const auto prefix = fresh_prefix();
  std::string bad = chain;
  bad.replace(bad.find("cpuset = \"0\""), 12, "cpuset = \"4000\"");
  PlatformOptions po;
  po.prefix = prefix;
  try {
    Platform p(experiment(bad), po);
    FAIL() << "a cpuset of a CPU that does not exist was accepted";
  } catch (const PlatformError& e) {
    EXPECT_TRUE(has(e.what(), "node 'a'")) << e.what();
    EXPECT_TRUE(has(e.what(), "cpuset.cpus")) << e.what();
  }
  EXPECT_EQ(leftovers(prefix), std::vector<std::string>{});
}

TEST(Platform, InterruptedSetupRemovesWhatItCreated) {
  SKIP_UNLESS_EMULATION();
  const auto prefix = fresh_prefix();
  std::atomic<bool> interrupted{true};
  PlatformOptions po;
  po.prefix = prefix;
  EXPECT_THROW(Platform(experiment(chain), po, &interrupted), SetupInterrupted);
  EXPECT_EQ(leftovers(prefix), std::vector<std::string>{});
}

TEST(Platform, CleanupRemovesWhatACrashedRunLeftButNotALiveRun) {
  SKIP_UNLESS_EMULATION();
  const auto crashed = fresh_prefix();
  {
    PlatformOptions po;
    po.prefix = crashed;
    Platform p(experiment(chain), po);
    p.leak_for_test();
  }
  ASSERT_GE(leftovers(crashed).size(), 4u);  // 3 namespaces, cgroups, the state file

  const auto live_prefix = fresh_prefix();
  PlatformOptions lo;
  lo.prefix = live_prefix;
  Platform live(experiment(chain), lo);

  // A namespace named like ours with no state file at all (crash before the file was read).
  const auto stray = fresh_prefix();
  run_checked({"ip", "netns", "add", stray + "-n0"});

  std::ostringstream out;
  EXPECT_EQ(emulate_cleanup(out), 0) << out.str();
  EXPECT_EQ(leftovers(crashed), std::vector<std::string>{}) << out.str();
  EXPECT_EQ(leftovers(stray), std::vector<std::string>{}) << out.str();
  EXPECT_TRUE(has(out.str(), "removed network namespace " + crashed + "-n0")) << out.str();
  const auto netns = run_checked({"ip", "netns", "list"});
  EXPECT_TRUE(has(netns, live_prefix + "-n0")) << "cleanup removed a running platform\n" << out.str();
  EXPECT_TRUE(live.teardown().empty());
  EXPECT_EQ(leftovers(live_prefix), std::vector<std::string>{});
}

// `treefarm hwdetect --json` reports the cores this process may use: exactly one under
// `taskset -c <cpu>`, and the CPUs of sched_getaffinity without it.

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/Affinity.hpp"
#include "tests/support/Shell.hpp"

namespace {

const std::string treefarm = std::string(TREEFARM_BIN_DIR) + "/treefarm";

using treefarm::test_support::affinity_cpus;

/// Runs a shell command; returns its exit status and stdout.
std::pair<int, std::string> run(const std::string& cmd) {
  auto r = treefarm::test_support::run_shell(cmd);
  return {r.exit_code, std::move(r.output)};
}

bool have_taskset() { return run("command -v taskset >/dev/null 2>&1").first == 0; }

/// Physical cores among `cpus`, from sysfs (package id, core id); falls back to one core
/// per CPU where sysfs does not say.
std::size_t physical_cores(const std::vector<int>& cpus) {
  std::set<std::pair<long, long>> cores;
  for (int cpu : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    long package = -1;
    long core = -1;
    std::ifstream(dir + "physical_package_id") >> package;
    std::ifstream(dir + "core_id") >> core;
    if (core < 0) {
      cores.insert({-2, cpu});
    } else {
      cores.insert({package, core});
    }
  }
  return cores.size();
}

nlohmann::json hwdetect(const std::string& prefix) {
  auto [status, out] = run(prefix + treefarm + " hwdetect --json");
  EXPECT_EQ(status, 0) << out;
  return nlohmann::json::parse(out);
}

}  // namespace

TEST(Hwdetect, UnderTasksetReportsExactlyOneCore) {
  if (!have_taskset()) GTEST_SKIP() << "taskset is not installed";
  const std::vector<int> cpus = affinity_cpus();
  ASSERT_FALSE(cpus.empty());
  // The first CPU we may use (CPU 0 unless this test itself runs under a narrower mask).
  const int cpu = cpus.front();
  const auto j = hwdetect("taskset -c " + std::to_string(cpu) + " ");
  ASSERT_EQ(j.at("cores").size(), 1u) << j.dump();
  EXPECT_EQ(j.at("cores")[0].get<int>(), cpu);
  EXPECT_EQ(j.at("pus").get<std::vector<int>>(), std::vector<int>{cpu});
}

TEST(Hwdetect, WithoutTasksetReportsTheAffinityMask) {
  const std::vector<int> cpus = affinity_cpus();
  const auto j = hwdetect("");
  std::vector<int> pus = j.at("pus").get<std::vector<int>>();
  std::sort(pus.begin(), pus.end());
  EXPECT_EQ(pus, cpus);
  EXPECT_EQ(j.at("cores").size(), physical_cores(cpus)) << j.dump();
}

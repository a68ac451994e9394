#include "runtime/exec/Topology.hpp"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "tests/support/Affinity.hpp"

using treefarm::exec::Topology;
using treefarm::exec::discover_topology;
using treefarm::exec::restrict_cores;

using treefarm::test_support::affinity_cpus;

TEST(Topology, UsablePusAreTheAffinityMask) {
  Topology t = discover_topology();
  std::vector<int> pus = t.pus;
  std::sort(pus.begin(), pus.end());
  EXPECT_EQ(pus, affinity_cpus());
  ASSERT_FALSE(t.cores.empty());
  EXPECT_LE(t.cores.size(), t.pus.size());
  std::set<int> unique(t.cores.begin(), t.cores.end());
  EXPECT_EQ(unique.size(), t.cores.size());
  for (int c : t.cores) EXPECT_NE(std::find(t.pus.begin(), t.pus.end(), c), t.pus.end()) << c;
  EXPECT_GE(t.numa_nodes, 1u);
}

TEST(Topology, RespectsANarrowerProcessBinding) {
  std::vector<int> cpus = affinity_cpus();
  ASSERT_FALSE(cpus.empty());
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // child: one thread, bound to the last allowed CPU only
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus.back(), &one);
    int result[2] = {-1, -1};
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
      try {
        Topology t = discover_topology();
        result[0] = static_cast<int>(t.cores.size());
        result[1] = t.cores.empty() ? -1 : t.cores.front();
      } catch (...) {
      }
    }
    [[maybe_unused]] ssize_t w = write(pipefd[1], result, sizeof result);
    _exit(0);
  }
  close(pipefd[1]);
  int result[2] = {-2, -2};
  ASSERT_EQ(read(pipefd[0], result, sizeof result), static_cast<ssize_t>(sizeof result));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(result[0], 1);
  EXPECT_EQ(result[1], cpus.back());
}

TEST(Topology, MemoryFiguresAndNote) {
  Topology t = discover_topology();
  EXPECT_GT(t.hwloc_memory_bytes, 0u);
  EXPECT_GT(t.os_memory_bytes, 0u);
  EXPECT_EQ(t.memory_bytes, t.os_memory_bytes);  // the OS figure wins when known
  double a = static_cast<double>(t.hwloc_memory_bytes);
  double b = static_cast<double>(t.os_memory_bytes);
  bool differ = std::abs(a - b) > 0.10 * std::max(a, b);
  if (differ) {
    EXPECT_NE(t.memory_note.find("using the OS figure"), std::string::npos) << t.memory_note;
  }
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  EXPECT_LE(t.os_memory_bytes, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page));
}

TEST(Topology, CachesAreDataOrUnifiedWithCounts) {
  Topology t = discover_topology();
  for (const auto& c : t.caches) {
    EXPECT_GE(c.level, 1);
    EXPECT_LE(c.level, 5);
    EXPECT_GT(c.size_bytes, 0u);
    EXPECT_GE(c.count, 1u);
  }
}

TEST(Topology, RestrictCores) {
  Topology t;
  t.cores = {4, 6, 8};
  EXPECT_EQ(restrict_cores(t, 2), (std::vector<int>{4, 6}));
  EXPECT_EQ(restrict_cores(t, 3), t.cores);
  EXPECT_THROW(restrict_cores(t, 0), std::invalid_argument);
  EXPECT_THROW(restrict_cores(t, 4), std::invalid_argument);
}

TEST(Topology, JsonAndText) {
  Topology t;
  t.cores = {0, 2};
  t.pus = {0, 1, 2, 3};
  t.numa_nodes = 1;
  t.caches = {{2, 1048576, 2}};
  t.memory_bytes = 3ull << 30;
  t.hwloc_memory_bytes = 1ull << 30;
  t.os_memory_bytes = 3ull << 30;
  t.memory_note = "hwloc reports 1.0 GiB, the OS reports 3.0 GiB: using the OS figure";
  auto j = treefarm::exec::to_json(t);
  EXPECT_EQ(j.at("cores"), nlohmann::json({0, 2}));
  EXPECT_EQ(j.at("pus").size(), 4u);
  EXPECT_EQ(j.at("numa_nodes"), 1);
  EXPECT_EQ(j.at("caches").at(0).at("level"), 2);
  EXPECT_EQ(j.at("caches").at(0).at("size_bytes"), 1048576);
  EXPECT_EQ(j.at("caches").at(0).at("count"), 2);
  EXPECT_EQ(j.at("memory_bytes").get<std::uint64_t>(), 3ull << 30);
  EXPECT_EQ(j.at("hwloc_memory_bytes").get<std::uint64_t>(), 1ull << 30);
  EXPECT_EQ(j.at("os_memory_bytes").get<std::uint64_t>(), 3ull << 30);
  EXPECT_EQ(j.at("memory_note"), t.memory_note);
  std::string text = treefarm::exec::to_text(t);
  EXPECT_NE(text.find("cores:      2 (PU 0,2)"), std::string::npos) << text;
  EXPECT_NE(text.find("L2 cache:   2 x 1.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("memory:     3.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find(t.memory_note), std::string::npos) << text;
}

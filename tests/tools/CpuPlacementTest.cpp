// tools/CpuPlacement: where the nodes of a tree on one machine compute. Asks that fit the
// usable CPUs get disjoint pinned sets; asks that would wrap (two pinned nodes on one CPU
// while another idles) make the workers share the usable set, unpinned, each with its cores;
// a node's cpuset is kept.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "runtime/exec/CpuList.hpp"
#include "tools/CpuPlacement.hpp"

namespace treefarm::tools {
namespace {

model::Experiment tree(const std::vector<std::uint32_t>& cores, const std::vector<std::string>& cpusets = {}) {
  model::Experiment ex;
  for (std::size_t i = 0; i < cores.size(); ++i) {
    model::NodeSpec n;
    n.name = i == 0 ? "master" : "w" + std::to_string(i);
    if (i > 0) n.parent = "master";
    n.cores = cores[i];
    if (i < cpusets.size()) n.cpuset = cpusets[i];
    ex.nodes.push_back(n);
  }
  return ex;
}

TEST(CpuPlacement, AsksThatFitArePinnedToDisjointCpus) {
  const auto p = assign_cpus(tree({0, 1, 2, 1}), {0, 1, 2, 3});
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].cpus, "");
  EXPECT_EQ(p[0].worker_args(), (std::vector<std::string>{"--cores", "0"}));
  std::set<int> seen;
  for (std::size_t i = 1; i < p.size(); ++i) {
    EXPECT_FALSE(p[i].shared) << i;
    const auto cpus = exec::parse_cpu_list(p[i].cpus);
    EXPECT_EQ(cpus.size(), p[i].cores) << i;
    for (int c : cpus) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " given twice";
    EXPECT_EQ(p[i].worker_args(), (std::vector<std::string>{"--cpus", p[i].cpus})) << i;
  }
  EXPECT_EQ(p[2].cores, 2u);
  EXPECT_TRUE(shared_cpus_note(tree({0, 1, 2, 1}), p, 4).empty());
}

TEST(CpuPlacement, OversubscribedWorkersShareTheUsableCpusUnpinned) {
  // The quickstart's shape: four one-core workers on two CPUs.
  const auto ex = tree({0, 1, 1, 1, 1});
  const auto p = assign_cpus(ex, {0, 1});
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].cpus, "");
  for (std::size_t i = 1; i < p.size(); ++i) {
    EXPECT_TRUE(p[i].shared) << i;
    EXPECT_EQ(p[i].cpus, "0-1") << i;
    EXPECT_EQ(p[i].cores, 1u) << i;
    EXPECT_EQ(p[i].worker_args(), (std::vector<std::string>{"--cpus", "0-1", "--cores", "1"})) << i;
  }
  const auto note = shared_cpus_note(ex, p, 2);
  EXPECT_NE(note.find("w1, w2, w3, w4"), std::string::npos) << note;
  EXPECT_NE(note.find("4 cores"), std::string::npos) << note;
  EXPECT_NE(note.find("0-1"), std::string::npos) << note;
}

TEST(CpuPlacement, ACpusetIsKeptAndACoreAskBeyondTheMachineIsCut) {
  // w1 keeps its cpuset; w2 and w3 ask 1 each beside it: they fit in 2 CPUs, pinned apart.
  const auto p = assign_cpus(tree({0, 2, 1, 1}, {"", "0-1"}), {0, 1});
  EXPECT_EQ(p[1].cpus, "0-1");
  EXPECT_FALSE(p[1].shared);
  EXPECT_EQ(p[1].worker_args(), (std::vector<std::string>{"--cpus", "0-1"}));
  EXPECT_FALSE(p[2].shared);
  EXPECT_FALSE(p[3].shared);
  EXPECT_NE(p[2].cpus, p[3].cpus);
  // One node asking more cores than the machine has computes on all of them, pinned.
  const auto big = assign_cpus(tree({0, 8}), {0, 1});
  EXPECT_EQ(big[1].cpus, "0-1");
  EXPECT_EQ(big[1].cores, 2u);
  EXPECT_FALSE(big[1].shared);
}

TEST(CpuPlacement, AComputingMasterKeepsItsFirstCpusWhenTheWorkersShare) {
  const auto p = assign_cpus(tree({1, 1, 1}), {0, 1});
  EXPECT_EQ(p[0].cpus, "0");
  EXPECT_FALSE(p[0].shared);
  EXPECT_TRUE(p[1].shared);
  EXPECT_TRUE(p[2].shared);
  EXPECT_EQ(p[1].cpus, "0-1");
}

}  // namespace
}  // namespace treefarm::tools

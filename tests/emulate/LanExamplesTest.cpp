// examples/lan-*.toml: they load, fit this 2-core machine, and have the shapes their
// names promise.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "runtime/model/Experiment.hpp"

namespace fs = std::filesystem;
using treefarm::model::Experiment;
using treefarm::model::Kernel;

namespace {
Experiment load(const std::string& name) {
  return treefarm::model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/" + name);
}

std::size_t max_depth(const Experiment& ex) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < ex.nodes.size(); ++i) d = std::max(d, ex.depth(i));
  return d;
}
}  // namespace

TEST(LanExamples, AllLoadAndFitTwoCores) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(std::string(TREEFARM_SOURCE_DIR) + "/examples")) {
    const auto name = e.path().filename().string();
    if (name.rfind("lan-", 0) != 0 || e.path().extension() != ".toml") continue;
    names.insert(name);
    SCOPED_TRACE(name);
    const auto ex = load(name);
    double quota = 0;
    std::set<double> rates;
    for (std::size_t i = 0; i < ex.nodes.size(); ++i) {
      const auto& n = ex.nodes[i];
      ASSERT_TRUE(n.cpu_quota.has_value()) << n.name << ": every node needs a cpu_quota so the sum fits";
      quota += *n.cpu_quota;
      if (i > 0) {
        ASSERT_TRUE(n.bandwidth.has_value()) << n.name;
        rates.insert(*n.bandwidth);
      }
      if (!n.cpuset.empty()) {
        EXPECT_TRUE(n.cpuset == "0" || n.cpuset == "1" || n.cpuset == "0-1") << n.cpuset;
      }
    }
    EXPECT_LE(quota, 2.0 + 1e-9) << "the cpu quotas add up to more than this machine's 2 cores";
    EXPECT_GE(rates.size(), 2u) << "a heterogeneous LAN has links of different rates";
    for (const auto& a : ex.apps) EXPECT_TRUE(a.kernel == Kernel::matmul || a.kernel == Kernel::matadd) << a.name;
  }
  for (const char* required : {"lan-star.toml", "lan-two-level.toml", "lan-deep.toml", "lan-slices.toml"})
    EXPECT_TRUE(names.count(required)) << required << " is missing";
}

TEST(LanExamples, ShapesMatchTheirNames) {
  const auto star = load("lan-star.toml");
  EXPECT_EQ(max_depth(star), 1u);
  EXPECT_GE(star.nodes.size(), 4u);
  EXPECT_EQ(max_depth(load("lan-two-level.toml")), 2u);
  const auto deep = load("lan-deep.toml");
  EXPECT_GE(max_depth(deep), 4u);
  for (std::size_t i = 0; i < deep.nodes.size(); ++i) EXPECT_LE(deep.children(i).size(), 2u) << "a thin tree";

  // Proposition 1 (beaumont2006 §3.3): the high-CCR app belongs on the wide link, the
  // low-CCR one on the narrow link with the big CPU share.
  const auto slices = load("lan-slices.toml");
  std::set<Kernel> kernels;
  for (const auto& a : slices.apps) kernels.insert(a.kernel);
  EXPECT_TRUE(kernels.count(Kernel::matmul) && kernels.count(Kernel::matadd));
  EXPECT_EQ(max_depth(slices), 1u);
  std::size_t wide = 0, narrow = 0;
  for (std::size_t i = 1; i < slices.nodes.size(); ++i) {
    if (!wide || *slices.nodes[i].bandwidth > *slices.nodes[wide].bandwidth) wide = i;
    if (!narrow || *slices.nodes[i].bandwidth < *slices.nodes[narrow].bandwidth) narrow = i;
  }
  EXPECT_GT(*slices.nodes[narrow].cpu_quota, *slices.nodes[wide].cpu_quota);
}

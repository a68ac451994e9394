// gen-platform (tools/simulate/GenPlatform.hpp): beaumont2006 §5.1.2 and §5.1.3.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "runtime/model/Experiment.hpp"
#include "tools/simulate/GenPlatform.hpp"

namespace treefarm::simulate {
namespace {

model::Experiment generate(const GenOptions& o) { return model::parse_experiment(generate_platform(o), "gen.toml"); }

TEST(GenPlatform, HasTheRequestedNodesDegreeAndRanges) {
  for (std::uint32_t degree : {1u, 2u, 5u, 15u}) {
    GenOptions o;
    o.nodes = 100;
    o.max_degree = degree;
    o.seed = degree;
    const auto ex = generate(o);
    ASSERT_EQ(ex.nodes.size(), 100u);
    std::map<std::size_t, std::size_t> children;
    std::size_t deepest = 0;
    for (std::size_t u = 0; u < ex.nodes.size(); ++u) {
      const auto& n = ex.nodes[u];
      EXPECT_EQ(n.cores, 1u);
      ASSERT_TRUE(n.speed);
      EXPECT_GE(*n.speed, 22.151e6 * (1 - 1e-6));
      EXPECT_LE(*n.speed, 171.667e6 * (1 + 1e-6));
      if (u == 0) continue;
      ASSERT_TRUE(n.bandwidth);
      EXPECT_GE(*n.bandwidth, 110e3 / 8 * (1 - 1e-6));  // bits/s in the paper, bytes/s here
      EXPECT_LE(*n.bandwidth, 7e6 / 8 * (1 + 1e-6));
      EXPECT_GE(n.latency, 0.006 * (1 - 1e-6));
      EXPECT_LE(n.latency, 10.0 * (1 + 1e-6));
      ++children[*ex.parent_index(u)];
      deepest = std::max(deepest, ex.depth(u));
    }
    std::size_t widest = 0;
    for (auto [p, c] : children) widest = std::max(widest, c);
    EXPECT_LE(widest, degree);
    if (degree > 1) {
      EXPECT_GE(widest, 2u);
      // Breadth-first: every node gets >= 1 child, so depth <= nodes / 1 only for chains;
      // with degree >= 2 the tree is far shallower than the 99 of a chain.
      EXPECT_LT(deepest, 40u);
    } else {
      EXPECT_EQ(deepest, 99u);  // degree 1 is a chain
    }
  }
}

TEST(GenPlatform, CcrsAreEvenlySpacedUpToCcrMax) {
  GenOptions o;
  o.apps = 5;
  o.ccr_max = 2.001;
  const auto ex = generate(o);
  ASSERT_EQ(ex.apps.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    const auto& a = ex.apps[k];
    EXPECT_EQ(a.kernel, model::Kernel::abstract);
    EXPECT_EQ(a.tasks, 200u);
    EXPECT_EQ(a.weight, 1.0);
    EXPECT_NEAR(a.ccr(), 0.001 + 0.5 * static_cast<double>(k), 1e-9);
  }
  o.apps = 1;
  EXPECT_NEAR(generate(o).apps[0].ccr(), 2.001, 1e-9);
}

// §5.1.3: every task carries one 3500 × 3500 matrix of doubles; the CCR sets the work, from
// about the product of two such matrices (CCR 0.001) to about their sum (CCR 4.6).
TEST(GenPlatform, PaperTaskSizesAreTheMatricesAndTheCcrSetsTheirWork) {
  GenOptions o;
  o.apps = 2;
  EXPECT_EQ(generate(o).apps[0].task_flops(), 1e9);  // the default: the same work, the CCR sets the bytes
  EXPECT_EQ(generate(o).apps[1].bytes, 4600000000u);
  o.task_sizes = GenOptions::TaskSizes::paper_matrices;
  const auto ex = generate(o);
  for (const auto& a : ex.apps) EXPECT_EQ(a.bytes, 98000000u) << a.name;
  EXPECT_NEAR(ex.apps[0].task_flops(), 9.8e10, 1);
  EXPECT_NEAR(ex.apps[1].task_flops(), 98e6 / 4.6, 1e-3);
  EXPECT_GT(ex.apps[0].task_flops(), 2.0 * 3500 * 3500 * 3500 / 2);  // within 2x of the product's 2n^3
  EXPECT_LT(ex.apps[1].task_flops(), 2.0 * 3500 * 3500);             // within 2x of the sum's n^2
}

TEST(GenPlatform, SameSeedSameFileOtherSeedOtherFile) {
  GenOptions o;
  o.nodes = 30;
  const auto a = generate_platform(o);
  EXPECT_EQ(a, generate_platform(o));
  o.seed = 2;
  EXPECT_NE(a, generate_platform(o));
}

TEST(GenPlatform, RejectsOptionsOutOfRange) {
  GenOptions o;
  o.nodes = 0;
  EXPECT_THROW(generate_platform(o), std::invalid_argument);
  o = GenOptions{};
  o.max_degree = 0;
  EXPECT_THROW(generate_platform(o), std::invalid_argument);
  o = GenOptions{};
  o.ccr_max = 0.0005;
  EXPECT_THROW(generate_platform(o), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::simulate

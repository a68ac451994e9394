// Fair optima (bertin2008 §2.4) solved with Ipopt, checked against closed forms, against
// the max-min LP (α → ∞) and against feasible points found by a second method (Clp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "runtime/lp/FairnessOptimum.hpp"
#include "runtime/lp/SteadyState.hpp"
#include "tests/runtime/lp/TestPlatforms.hpp"

namespace treefarm::lp {
namespace {

using testing::Builder;
using testing::inf;

FairnessObjective objective(std::string_view s) { return FairnessObjective::parse(s); }

TEST(FairnessObjective, ParsesNames) {
  EXPECT_EQ(objective("maxmin").kind, FairnessObjective::Kind::max_min);
  EXPECT_EQ(objective("proportional").kind, FairnessObjective::Kind::proportional);
  EXPECT_EQ(objective("alpha:1").kind, FairnessObjective::Kind::proportional);
  const auto a = objective("alpha:2.5");
  EXPECT_EQ(a.kind, FairnessObjective::Kind::alpha_fair);
  EXPECT_DOUBLE_EQ(a.alpha, 2.5);
  EXPECT_EQ(a.name(), "alpha:2.5");
  EXPECT_THROW(objective("alpha:-1"), std::invalid_argument);
  EXPECT_THROW(objective("alpha:"), std::invalid_argument);
  EXPECT_THROW(objective("alpha:2x"), std::invalid_argument);
  EXPECT_THROW(objective("fair"), std::invalid_argument);
}

// One node, c = 2 cores, task durations 1 s and 4 s: Σ t_k ϱ_k <= c.
// Proportional: ϱ_k = w_k·c / (W·t_k). α = 2: ϱ_k = (c / Σ_j sqrt(t_j)) / sqrt(t_k).
PlatformModel one_node(double wa = 1.0, double wb = 1.0) {
  Builder b;
  b.app("a", 100, wa).app("b", 100, wb);
  b.node("root", -1, 2, inf, {1.0, 4.0});
  return b.m;
}

TEST(FairnessOptimum, ProportionalOnOneNodeMatchesClosedForm) {
  const auto s = solve_fairness(one_node(), objective("proportional"));
  EXPECT_EQ(s.solver, "ipopt");
  EXPECT_NEAR(s.app_throughput[0], 1.0, 1e-6);
  EXPECT_NEAR(s.app_throughput[1], 0.25, 1e-6);
  EXPECT_NEAR(s.value, std::log(1.0) + std::log(0.25), 1e-6);
}

TEST(FairnessOptimum, WeightedProportionalMatchesClosedForm) {
  const auto s = solve_fairness(one_node(3.0, 1.0), objective("proportional"));
  EXPECT_NEAR(s.app_throughput[0], 3.0 * 2.0 / (4.0 * 1.0), 1e-6);
  EXPECT_NEAR(s.app_throughput[1], 1.0 * 2.0 / (4.0 * 4.0), 1e-6);
}

TEST(FairnessOptimum, AlphaTwoOnOneNodeMatchesClosedForm) {
  const auto s = solve_fairness(one_node(), objective("alpha:2"));
  EXPECT_NEAR(s.app_throughput[0], 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(s.app_throughput[1], 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(s.value, -1.5 - 3.0, 1e-5);  // U(ϱ) = −1/ϱ
}

TEST(FairnessOptimum, AlphaZeroMaximisesTotalThroughput) {
  // α = 0: Σ ϱ_k, all of the node to the shorter tasks: 2 tasks/s of a.
  const auto s = solve_fairness(one_node(), objective("alpha:0"));
  EXPECT_NEAR(s.app_throughput[0] + s.app_throughput[1], 2.0, 1e-5);
  EXPECT_NEAR(s.app_throughput[1], 0.0, 1e-4);
}

// A forwarding root and one fast worker behind a 1000 bytes/s link: the link is the
// bottleneck, Σ b_k ϱ_k <= 1000, so proportional gives ϱ_k = 1000 / (K·b_k).
TEST(FairnessOptimum, ProportionalLinkBoundMatchesClosedFormInBothPortModels) {
  for (auto comm : {model::CommModel::one_port, model::CommModel::multi_port}) {
    Builder b;
    b.app("a", 100).app("b", 400).comm(comm);
    b.node("root", -1, 0, inf, {inf, inf});
    b.node("w", 0, 64, 1000.0, {1e-3, 1e-3});
    const auto s = solve_fairness(b.m, objective("proportional"));
    EXPECT_NEAR(s.app_throughput[0], 5.0, 1e-5);
    EXPECT_NEAR(s.app_throughput[1], 1.25, 1e-5);
    EXPECT_NEAR(s.sent[1][0], 5.0, 1e-5);
  }
}

// A heterogeneous tree where CPU, link and port constraints compete.
PlatformModel tree(model::CommModel comm) {
  Builder b;
  b.app("a", 1000, 1.0).app("b", 2000, 2.0).app("c", 1500, 1.0).comm(comm);
  b.node("root", -1, 1, inf, {5.0, 0.8, 1.5}, 2500.0);
  b.node("A", 0, 2, 2000.0, {5.0, 0.8, 1.5}, 1500.0);
  b.node("B", 0, 1, 1000.0, {2.5, 1.6, 0.75});
  b.node("C", 1, 4, 800.0, {10.0, 1.0, 3.0});
  b.node("D", 1, 1, 1200.0, {1.0, 0.4, 1.0});
  return b.m;
}

// Second method: Clp solves the max-min LP for random weight vectors; each solution is
// a feasible point (and so are their convex combinations). None may beat Ipopt's
// optimum of the concave objective, and Ipopt's point must be feasible.
TEST(FairnessOptimum, NoFeasiblePointFromClpBeatsIpopt) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> weight(0.1, 5.0);
  for (auto comm : {model::CommModel::one_port, model::CommModel::multi_port}) {
    const PlatformModel m = tree(comm);
    for (const char* name : {"proportional", "alpha:0.5", "alpha:2", "alpha:4"}) {
      const auto o = objective(name);
      const auto best = solve_fairness(m, o);
      std::vector<std::vector<double>> points;
      for (int i = 0; i < 40; ++i) {
        PlatformModel r = m;
        for (auto& a : r.apps) a.weight = weight(rng);
        points.push_back(solve(r).app_throughput);
      }
      for (std::size_t i = 0; i < points.size(); ++i) {
        for (std::size_t j = i; j < points.size(); j += 7) {
          std::vector<double> mix(m.apps.size());
          for (std::size_t k = 0; k < mix.size(); ++k) mix[k] = 0.5 * (points[i][k] + points[j][k]);
          EXPECT_LE(fairness_value(m, o, mix), best.value + 1e-6 * std::abs(best.value))
              << name << " point " << i << "," << j;
        }
      }
      // Feasibility of the Ipopt point: its rates, fed back as max-min weights, are
      // reachable (the LP's fair throughput is >= 1 up to solver tolerance).
      PlatformModel check = m;
      for (std::size_t k = 0; k < m.apps.size(); ++k) check.apps[k].weight = best.app_throughput[k];
      EXPECT_GE(solve(check).fair_throughput, 1.0 - 1e-6) << name;
      // And optimal among them: the LP scaled by the same weights cannot go above 1.
      EXPECT_LE(solve(check).fair_throughput, 1.0 + 1e-4) << name;
    }
  }
}

// α → ∞ tends to max-min fairness: at α = 40 the smallest ϱ_k/w_k is within 2% of the
// max-min LP optimum.
TEST(FairnessOptimum, LargeAlphaApproachesMaxMin) {
  const PlatformModel m = tree(model::CommModel::multi_port);
  const auto maxmin = solve_fairness(m, objective("maxmin"));
  EXPECT_EQ(maxmin.solver, "clp");
  const auto s = solve_fairness(m, objective("alpha:40"));
  double worst = inf;
  for (std::size_t k = 0; k < m.apps.size(); ++k) worst = std::min(worst, s.app_throughput[k] / m.apps[k].weight);
  EXPECT_NEAR(worst, maxmin.value, 0.02 * maxmin.value);
}

TEST(FairnessOptimum, JsonHasObjectiveAndThroughputs) {
  const PlatformModel m = one_node();
  const auto j = to_json(m, solve_fairness(m, objective("proportional")));
  EXPECT_EQ(j["fairness"], "proportional");
  EXPECT_NEAR(j["objective"].get<double>(), std::log(0.25), 1e-6);
  ASSERT_EQ(j["apps"].size(), 2u);
  EXPECT_NEAR(j["apps"][1]["throughput"].get<double>(), 0.25, 1e-6);
}

}  // namespace
}  // namespace treefarm::lp

// The convergence study of the price policy (tools/simulate/PriceTrace, papers/bertin2008 §5).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "runtime/lp/PlatformModel.hpp"
#include "runtime/model/Experiment.hpp"
#include "tools/simulate/PriceNetwork.hpp"
#include "tools/simulate/PriceTrace.hpp"

namespace treefarm::simulate {
namespace {

model::Experiment paper_platform() {
  return model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/bertin2008.toml");
}

// On the paper's 5-node platform, with the example's options (relative steps, the
// default), the feasible allocation stays within 1% of the Ipopt proportional optimum from
// iteration <= 100, the bound (docs/results/price.md: 76; the paper's 83).
TEST(PriceStudy, PaperPlatformReachesTheIpoptOptimum) {
  const auto ex = paper_platform();
  const auto model = lp::model_from_experiment(ex);
  const auto trace = run_price_trace(model, ex, ex.run.policy_options.at("price"), 400, true);
  ASSERT_EQ(trace.rows.size(), 400u);
  const auto at = trace.settled_at(0.99);
  ASSERT_TRUE(at.has_value()) << "last efficiency " << trace.rows.back().efficiency;
  EXPECT_LE(*at, 100u);
  EXPECT_LE(trace.rows.back().efficiency, 1.0 + 1e-9) << "a feasible allocation cannot beat the optimum";
  for (std::size_t k = 0; k < model.apps.size(); ++k)
    EXPECT_NEAR(trace.rows.back().rates[k], trace.optimum.app_throughput[k], 0.01 * trace.optimum.app_throughput[k]) << k;
}

// Table 1's steps (relative = 0, rate_unit 0.001) still converge, later (settled within 5%
// at 375, docs/results/price.md).
TEST(PriceStudy, Table1StepsConvergeLater) {
  const auto ex = paper_platform();
  const auto model = lp::model_from_experiment(ex);
  const auto trace = run_price_trace(model, ex, {{"relative", 0}, {"rate_unit", 0.001}}, 600, true);
  const auto at = trace.settled_at(0.95);
  ASSERT_TRUE(at.has_value()) << "last efficiency " << trace.rows.back().efficiency;
  EXPECT_LE(*at, 450u);
  EXPECT_GT(*at, 100u) << "Table 1's steps are not expected to beat the relative ones";
}

// bertin2008 §2.2 and Figure 2: applications 1, 2, 3 from D, A and C. The agents route
// each application along the tree re-rooted at its origin (prices η flow away from the
// origin, σ towards it, a link priced per direction) and reach the Ipopt optimum of the
// same routing (docs/results/price.md, "Applications from several masters").
TEST(PriceStudy, Figure2OriginsReachTheIpoptOptimum) {
  const auto ex = model::load_experiment(std::string(TREEFARM_SOURCE_DIR) + "/examples/bertin2008-origins.toml");
  const auto model = lp::model_from_experiment(ex);
  ASSERT_EQ(model.apps[0].origin, *ex.node_index("D"));
  const auto single = lp::model_from_experiment(paper_platform());
  const auto trace = run_price_trace(model, ex, ex.run.policy_options.at("price"), 400, true);
  EXPECT_GT(std::abs(trace.optimum.value - lp::solve_fairness(single, trace.optimum.objective).value), 1e-3)
      << "the origins change the optimum";
  const auto at = trace.settled_at(0.99);
  ASSERT_TRUE(at.has_value()) << "last efficiency " << trace.rows.back().efficiency;
  EXPECT_LE(*at, 100u) << "docs/results/price.md: 79";
  EXPECT_LE(trace.rows.back().efficiency, 1.0 + 1e-9);
  EXPECT_LE(trace.rows.back().overload, 1e-3);
  for (std::size_t k = 0; k < model.apps.size(); ++k)
    EXPECT_NEAR(trace.rows.back().rates[k], trace.optimum.app_throughput[k], 0.01 * trace.optimum.app_throughput[k]) << k;
  std::ostringstream csv;
  write_price_csv(csv, trace);
  EXPECT_NE(csv.str().find("mu_up:D"), std::string::npos) << "app1 climbs from D to C";
}

TEST(PriceStudy, TraceCsvHasTheHeaderAndOneRowPerIteration) {
  const auto ex = paper_platform();
  const auto model = lp::model_from_experiment(ex);
  const auto trace = run_price_trace(model, ex, {{"scaled", 0}}, 5);
  std::ostringstream csv;
  write_price_csv(csv, trace);
  std::istringstream in(csv.str());
  std::string comment, header, line;
  std::getline(in, comment);
  std::getline(in, header);
  EXPECT_EQ(comment.rfind("# optimum", 0), 0u) << comment;
  EXPECT_EQ(header.rfind("iteration,utility,feasible_utility,efficiency,overload,rho:app1,rho:app2,rho:app3,lambda:A", 0), 0u)
      << header;
  EXPECT_NE(header.find("mu:D"), std::string::npos) << header;
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, 5);
}

}  // namespace
}  // namespace treefarm::simulate

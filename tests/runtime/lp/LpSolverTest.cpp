// Tests of runtime/lp/LpSolver.hpp and ClpSolver.hpp.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/lp/ClpSolver.hpp"
#include "runtime/lp/LpSolver.hpp"

namespace treefarm::lp {
namespace {

TEST(LpSolver, MaximizesSmallLp) {
  // max 3x + 2y, x + y <= 4, x + 3y <= 6, x <= 3  ->  x = 3, y = 1, objective 11.
  LpProblem lp;
  const auto x = lp.add_variable(0, 3, 3);
  const auto y = lp.add_variable(0, lp_infinity, 2);
  const std::vector<LpTerm> r1{{x, 1}, {y, 1}};
  const std::vector<LpTerm> r2{{x, 1}, {y, 3}};
  lp.add_row(r1, -lp_infinity, 4);
  lp.add_row(r2, -lp_infinity, 6);
  ClpSolver solver;
  const LpResult r = solver.solve(lp);
  ASSERT_EQ(r.status, LpStatus::optimal);
  EXPECT_NEAR(r.objective, 11.0, 1e-9);
  EXPECT_NEAR(r.values[x], 3.0, 1e-9);
  EXPECT_NEAR(r.values[y], 1.0, 1e-9);
  EXPECT_NEAR(r.row_activity[0], 4.0, 1e-9);
}

TEST(LpSolver, MinimizesWithEqualityAndLowerBounds) {
  // min x + 2y, x + y = 5, y >= 1  ->  x = 4, y = 1, objective 6.
  LpProblem lp;
  lp.set_sense(Sense::minimize);
  const auto x = lp.add_variable(0, lp_infinity, 1);
  const auto y = lp.add_variable(1, lp_infinity, 2);
  const std::vector<LpTerm> r{{x, 1}, {y, 1}};
  lp.add_row(r, 5, 5);
  const LpResult res = make_default_solver()->solve(lp);
  ASSERT_EQ(res.status, LpStatus::optimal);
  EXPECT_NEAR(res.objective, 6.0, 1e-9);
  EXPECT_NEAR(res.values[x], 4.0, 1e-9);
}

TEST(LpSolver, ReportsInfeasibleAndUnbounded) {
  LpProblem infeasible;
  const auto x = infeasible.add_variable(0, 1, 1);
  const std::vector<LpTerm> r{{x, 1}};
  infeasible.add_row(r, 2, lp_infinity);
  EXPECT_EQ(ClpSolver().solve(infeasible).status, LpStatus::infeasible);

  LpProblem unbounded;
  unbounded.add_variable(0, lp_infinity, 1);
  EXPECT_EQ(ClpSolver().solve(unbounded).status, LpStatus::unbounded);
}

TEST(LpSolver, RejectsBadRowsAndBounds) {
  LpProblem lp;
  lp.add_variable(0, 1);
  const std::vector<LpTerm> bad{{3, 1.0}};
  EXPECT_THROW(lp.add_row(bad, 0, 1), std::invalid_argument);
  EXPECT_THROW(lp.add_variable(2, 1), std::invalid_argument);
  const std::vector<LpTerm> ok{{0, 1.0}};
  EXPECT_THROW(lp.add_row(ok, 1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace treefarm::lp
